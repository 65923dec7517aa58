//! The matched control's training ([`arbor_models::dense::DenseModel`]): per step, one document and a
//! batch of its queries (`docs_per_step` of them with that setting, issue 62), exactly the batches,
//! epochs, seed and schedule of SproutRAG's joint training
//! ([`crate::sproutrag`]) on the same documents, with its retrieval term alone,
//!
//! ```text
//! L = L_ret = InfoNCE(queries, positive units; in-batch and in-document negatives, tau)
//! ```
//!
//! and no SLLM, tree, L_attn or L_node: what the training queries give plain dense retrieval. The encoder
//! is fine-tuned at `lr_encoder` when the method it controls fine-tunes it; else a linear map over the
//! frozen vectors trains at `lr_new`. The checkpoint kept is the epoch with the best validation IE. With
//! `step_tokens`, a fine-tuning step encodes only a window of its document ([`crate::window`]: the
//! positives and the units nearest the queries) and scores every unit of the document, the others by
//! their frozen vectors, exactly as SproutRAG's joint step does ([`crate::encoder::Vectors::units_within`]):
//! the method and its control see the same negatives, and at the pretrained weights the loss is the
//! whole document's.
//! With `frozen_layers`, the step's gradient reaches the encoder's upper blocks only ([`crate::encoder`]).
//! With `negatives: Corpus(..)` ([`crate::negatives`]) a step draws its queries from every training
//! document and scores them against the batch's positives and their mined negatives, false negatives
//! left out (the field's fine-tuning: sentence-transformers' MultipleNegativesRankingLoss over mined hard
//! negatives); the fine-tuned encoder then runs over those units only, no window.
//! With `schedule.devices`, the fine-tuning runs on burn-train's Learner, data parallel over those
//! devices ([`crate::parallel`]).

pub(crate) mod step;

use std::cell::Cell;
use std::path::Path;

use arbor_datasets::Corpus;
use arbor_models::bert::Bert;
use arbor_models::dense::DenseModel;
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};

use crate::config::TrainConfig;
use crate::data::{EpochBatches, Part, TrainDoc, describe, step_batch};
use crate::encoder::{FineTune, StepEncoder, Vectors};
use crate::grad_cache;
use crate::negatives::{self, CorpusBatch, Mined, Negatives, StepMined, step_mined};
use crate::objective::start;
use crate::parallel;
use crate::skeleton::{self, Group, SelectBy, Step, Task, Terms};
use step::{corpus_loss, held_out_figures, plain_loss};

/// Trains the control; `encoder`: the pretrained encoder when it is fine-tuned (else the frozen vectors
/// in `train` and `holdout` are read, `dim` wide).
#[allow(clippy::too_many_arguments)]
pub fn train<B: AutodiffBackend>(
    config: &TrainConfig,
    dim: usize,
    encoder: Option<FineTune<B>>,
    corpus: &Corpus,
    train: &[TrainDoc],
    holdout: &[TrainDoc],
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<DenseModel<B::InnerBackend>> {
    let device = start::<B>(config, train)?;
    let group = match encoder.is_some() {
        true => Group { name: "encoder", lr: config.lr_encoder, params: |g, m: &DenseModel<B>| GradientsParams::from_module(g, m) },
        false => Group { name: "adapter", lr: config.lr_new, params: |g, m: &DenseModel<B>| GradientsParams::from_module(g, m) },
    };
    let step_encoder = encoder.as_ref().map(|tune| StepEncoder::of(tune, config)).transpose()?;
    let model = DenseModel::new(dim, encoder.map(|tune| tune.bert), &device);
    if config.schedule.devices.is_some() {
        let how = parallel::Data { config, corpus, train, holdout, run_dir };
        return parallel::dense::fit(model, step_encoder, &how, 1, progress);
    }
    let mined = negatives::prepare(&config.negatives, corpus, train, config.schedule.seed, run_dir)?.map(|(m, how)| (m, how.per_query));
    let batches = match (mined, &config.negatives) {
        (Some((mined, per_query)), Negatives::Corpus(_)) => Batches::Corpus { queries: negatives::all_queries(train), mined, per_query },
        (mined, _) => Batches::InDocument(EpochBatches::with_docs(train, config.batch_size, config.docs_per_step, config.schedule.seed), mined),
    };
    let schedule = config.schedule_over(batches.per_epoch(config.batch_size));
    let mut task = PlainRetrieval { config, corpus, train, holdout, batches, encoder: step_encoder };
    Ok(skeleton::train(&mut task, model, &[group], &schedule, run_dir, progress)?.valid())
}

/// The trainer's corpus-wide task on `train` under `config` (`negatives: Corpus(..)`), its negatives mined
/// as a training run mines them, the encoder fine-tuned by `encoder`, and step 0's batch: the step the
/// large-batch benchmark times ([`crate::bench::pairs`]).
pub(crate) fn corpus_task<'a>(
    config: &'a TrainConfig,
    corpus: &'a Corpus,
    train: &'a [TrainDoc],
    encoder: StepEncoder,
) -> anyhow::Result<(PlainRetrieval<'a>, CorpusBatch)> {
    let Some((mined, how)) = config.negatives.mine(corpus, train, config.schedule.seed).filter(|_| config.negatives.corpus().is_some()) else {
        anyhow::bail!("a corpus-wide step needs training.negatives: Corpus(..)");
    };
    let queries = negatives::all_queries(train);
    let batch = corpus_batch(train, config, &queries, &mined, how.per_query, 0);
    let batches = Batches::Corpus { queries, mined, per_query: how.per_query };
    Ok((PlainRetrieval { config, corpus, train, holdout: &[], batches, encoder: Some(encoder) }, batch))
}

/// The control of a finished run in `run_dir`, if it has finished.
pub fn finished<B: Backend>(dim: usize, encoder: Option<Bert<B>>, run_dir: &Path) -> anyhow::Result<Option<DenseModel<B>>> {
    skeleton::finished(DenseModel::new(dim, encoder, &Default::default()), run_dir)
}

/// How a run's steps are drawn: one document's queries each (with `negatives: Mined`, and their mined
/// negatives with how many a query brings), or queries from the whole split.
enum Batches {
    InDocument(EpochBatches, Option<(Mined, usize)>),
    Corpus { queries: Vec<(usize, usize)>, mined: Mined, per_query: usize },
}

impl Batches {
    fn per_epoch(&self, batch_size: usize) -> usize {
        match self {
            Batches::InDocument(b, _) => b.per_epoch(),
            Batches::Corpus { queries, .. } => queries.len().div_ceil(batch_size),
        }
    }
}

pub(crate) struct PlainRetrieval<'a> {
    config: &'a TrainConfig,
    corpus: &'a Corpus,
    train: &'a [TrainDoc],
    holdout: &'a [TrainDoc],
    batches: Batches,
    /// How a step runs the fine-tuned encoder (`None`: the adapter over frozen vectors).
    encoder: Option<StepEncoder>,
}

impl<B: AutodiffBackend> Task<B> for PlainRetrieval<'_> {
    type Model = DenseModel<B>;

    fn steps_per_epoch(&self) -> usize {
        self.batches.per_epoch(self.config.batch_size)
    }

    fn step(&mut self, model: &DenseModel<B>, step: usize) -> anyhow::Result<Step<B>> {
        let vectors = Vectors::step(self.encoder.as_ref(), model.encoder.as_ref());
        Ok(run_step(&mut self.batches, self.config, self.train, model, step, |loss| loss(&vectors)))
    }

    fn cached_step(&mut self, model: &DenseModel<B>, step: usize, add: &mut dyn FnMut(B::Gradients)) -> Option<anyhow::Result<Step<B>>> {
        let chunk = self.config.grad_cache?;
        let (encoder, bert) = (self.encoder.as_ref()?, model.encoder.as_ref()?);
        let cached = |loss: &dyn Fn(&Vectors<B>) -> Terms<B>| grad_cache::cached_step(chunk, encoder, bert, loss, add);
        Some(Ok(run_step(&mut self.batches, self.config, self.train, model, step, cached)))
    }

    fn evaluate(&self, model: &DenseModel<B::InnerBackend>) -> Vec<(&'static str, f64)> {
        held_out_figures(self.corpus, self.holdout, self.config.validation, self.encoder.as_ref(), model)
    }

    fn select_by(&self) -> Option<SelectBy> {
        Some(SelectBy { figure: "eval/ie_mean", higher_is_better: true })
    }
}

/// Step `step`: its batch drawn from `batches`, then `terms` given its loss as a function of the vectors it
/// reads, which `terms` runs over the step's vectors (the plain step) or hands to GradCache.
fn run_step<B: AutodiffBackend>(
    batches: &mut Batches,
    config: &TrainConfig,
    docs: &[TrainDoc],
    model: &DenseModel<B>,
    step: usize,
    terms: impl FnOnce(&dyn Fn(&Vectors<B>) -> Terms<B>) -> Terms<B>,
) -> Step<B> {
    let device = Default::default();
    match batches {
        Batches::Corpus { queries, mined, per_query } => {
            let batch = corpus_batch(docs, config, queries, mined, *per_query, step);
            corpus_step(terms(&|v| vec![("loss/ret", corpus_loss(model, v, config, docs, &batch, &device))]), &batch)
        }
        Batches::InDocument(batches, mined) => {
            let (epoch, batches) = (step / batches.per_epoch(), batches.at(docs, step));
            let mined = step_mined(mined.as_ref(), batches, config.schedule.seed, epoch, config.hard_negatives);
            let step_mined = mined.as_ref().map(|units| StepMined { docs, units });
            let parts: Vec<Part<'_>> = batches.iter().map(|b| b.part(docs)).collect();
            let kept = Cell::new(0);
            let terms = terms(&|v| {
                let (loss, units) = plain_loss(model, v, config, &parts, step_mined, &device);
                kept.set(units);
                vec![("loss/ret", loss)]
            });
            let mut scalars = vec![("step/units", kept.get() as f64)];
            scalars.extend(mined.as_ref().map(|m| ("negatives/mined", m.len() as f64)));
            let units: usize = parts.iter().map(|p| p.doc.units.len()).sum();
            Step { terms, scalars, context: format!("{}, {} of {units} units", describe(batches), kept.get()) }
        }
    }
}

/// Step `step`'s batch when batches run across documents (`negatives: Corpus`): `batch_size` of the
/// training `queries` in an order drawn by the seed each epoch, each with `per_query` of its mined negatives.
fn corpus_batch(train: &[TrainDoc], config: &TrainConfig, queries: &[(usize, usize)], mined: &Mined, per_query: usize, step: usize) -> CorpusBatch {
    let (seed, size) = (config.schedule.seed, config.batch_size);
    let (epoch, _, items) = step_batch(queries.len(), size, seed, step);
    CorpusBatch::new(train, mined, per_query, items.iter().map(|&i| queries[i]).collect(), seed, epoch)
}

/// A corpus-wide step's loss with what it logs: its candidates, the documents they came from, the
/// (query, candidate) pairs left out as false negatives.
fn corpus_step<B: Backend>(terms: Terms<B>, batch: &CorpusBatch) -> Step<B> {
    let documents = batch.documents();
    Step {
        terms,
        scalars: vec![
            ("negatives/candidates", batch.candidates.len() as f64),
            ("negatives/documents", documents as f64),
            ("negatives/excluded", batch.excluded.len() as f64),
        ],
        context: format!("{} queries against {} units of {documents} documents", batch.queries.len(), batch.candidates.len()),
    }
}

#[cfg(test)]
mod tests;
