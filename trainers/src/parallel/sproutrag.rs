//! SproutRAG's joint training ([`crate::sproutrag`], Section 4: L = L_ret + lambda L_attn (+ VAE) (+ mu
//! L_node)) on burn-train's Learner, data parallel over `schedule.devices`. One item is one of the
//! skeleton's batches (a document and up to `batch_size` of its queries), and its loss is the skeleton's
//! sum of terms for that batch (the same function): with a fine-tuned encoder the window of
//! `step_tokens` runs through it with gradients and the SLLM still reads the whole document. The three
//! parameter groups keep their learning rates ([`super::Grouped`]: the aggregation weights at
//! `lr_aggregation`, the encoder at `lr_encoder`, the new modules at `lr_new`), each times the shared
//! schedule's factor, which is what the Learner's scheduler (and so `train/lr` in the log) gives. Every
//! epoch's model is scored on validation IE after training and the best one kept, as the skeleton keeps
//! it.
//!
//! What differs from the skeleton: the items are the first epoch's batches, their order shuffled by
//! burn-train's data loader every epoch; the log holds the summed loss, not each term; a run resumes at
//! epoch granularity.

use std::path::Path;
use std::sync::Arc;

use arbor_datasets::Corpus;
use arbor_models::sproutrag::SproutRagModel;
use burn::module::Module;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Tensor};
use burn_train::{InferenceStep, TrainOutput, TrainStep};

use super::{AsTheyAre, Grouped, Items, LossOutput, Take, take};
use crate::config::TrainConfig;
use crate::data::{TrainDoc, epoch_batches};
use crate::encoder::{StepEncoder, Vectors};
use crate::learner::{self, Fit, NanStop};
use crate::skeleton::SelectBy;
use crate::sproutrag::{held_out_figures, losses};

/// One step's batch: a document and its queries (by index).
#[derive(Clone)]
pub struct DocItem {
    doc: Arc<TrainDoc>,
    at: usize,
    queries: Vec<usize>,
}

impl std::fmt::Debug for DocItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "document {}, {} queries", self.at, self.queries.len())
    }
}

/// The first epoch's batches of `docs` ([`epoch_batches`]).
pub fn items(docs: &[TrainDoc], config: &TrainConfig) -> Vec<DocItem> {
    let shared: Vec<Arc<TrainDoc>> = docs.iter().cloned().map(Arc::new).collect();
    epoch_batches(docs, config.batch_size, config.schedule.seed, 0)
        .into_iter()
        .map(|b| DocItem { doc: shared[b.doc].clone(), at: b.doc, queries: b.queries })
        .collect()
}

/// SproutRAG as burn-train trains it: the mean over a batch's items of the skeleton's summed loss terms
/// is its training and held-out step.
#[derive(Module, Debug)]
pub struct SproutStep<B: Backend> {
    pub model: SproutRagModel<B>,
    #[module(skip)]
    encoder: Option<StepEncoder>,
    #[module(skip)]
    config: TrainConfig,
    #[module(skip)]
    max_tokens: usize,
    #[module(skip)]
    guard: NanStop,
}

impl<B: Backend> SproutStep<B> {
    /// `model` (its encoder fine-tuned through `encoder`, or frozen: `None`) under `config`; `max_tokens`:
    /// the VAE's reconstruction length.
    pub fn new(model: SproutRagModel<B>, encoder: Option<StepEncoder>, config: TrainConfig, max_tokens: usize) -> Self {
        SproutStep { model, encoder, config, max_tokens, guard: NanStop::default() }
    }

    /// The mean over `items` of each one's summed loss terms, `[1]`.
    pub fn loss(&self, items: &[DocItem]) -> Tensor<B, 1> {
        let vectors = Vectors::step(self.encoder.as_ref(), self.model.encoder.as_ref());
        let sum = items
            .iter()
            .flat_map(|item| losses(&self.model, &vectors, &self.config, &item.doc, &item.queries, self.max_tokens))
            .map(|(_, term)| term)
            .reduce(|a, b| a + b)
            .expect("every batch has its retrieval term");
        sum / items.len() as f32
    }
}

impl<B: AutodiffBackend> TrainStep for SproutStep<B> {
    type Input = Items<DocItem>;
    type Output = LossOutput<B>;

    fn step(&self, Items(items): Items<DocItem>) -> TrainOutput<LossOutput<B>> {
        let loss = self.loss(&items);
        self.guard.check(loss.clone().into_scalar().elem(), || format!("{items:?}"));
        TrainOutput::new(self, loss.backward(), LossOutput::new(loss))
    }
}

impl<B: Backend> InferenceStep for SproutStep<B> {
    type Input = Items<DocItem>;
    type Output = LossOutput<B>;

    fn step(&self, Items(items): Items<DocItem>) -> LossOutput<B> {
        LossOutput::new(self.loss(&items))
    }
}

/// What the joint training reads besides the model.
pub struct Joint<'a> {
    pub config: &'a TrainConfig,
    pub max_tokens: usize,
    pub corpus: &'a Corpus,
    pub train: &'a [TrainDoc],
    pub holdout: &'a [TrainDoc],
    pub run_dir: &'a Path,
}

/// Trains `model` on `how.train`'s batches, one a step on each device of `schedule.devices`; the held-out
/// loss on `how.holdout`'s batches after every epoch, and the epoch of the best validation IE kept.
pub fn fit<B: AutodiffBackend>(
    model: SproutRagModel<B>,
    encoder: Option<StepEncoder>,
    how: &Joint,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<SproutRagModel<B::InnerBackend>> {
    fit_items(model, encoder, how, 1, progress)
}

/// [`fit`] with `per_device` items a step on each device.
pub(crate) fn fit_items<B: AutodiffBackend>(
    model: SproutRagModel<B>,
    encoder: Option<StepEncoder>,
    how: &Joint,
    per_device: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<SproutRagModel<B::InnerBackend>> {
    let config = how.config;
    anyhow::ensure!(
        how.holdout.iter().any(|d| !d.queries.is_empty()),
        "schedule.devices: the data-parallel training chooses its epoch on validation, and no validation document has a query"
    );
    // Learning rates as scales of the scheduler's 1.0 (its factor): aggregation, encoder, the rest.
    let aggregation: Take<SproutStep<B>> = |s, g| take(g, &s.model.aggregator);
    let mut groups = vec![(config.lr_aggregation, Some(aggregation))];
    if encoder.is_some() {
        let fine_tuned: Take<SproutStep<B>> = |s, g| take(g, s.model.encoder.as_ref().expect("fine-tuned"));
        groups.push((config.lr_encoder, Some(fine_tuned)));
    }
    groups.push((config.lr_new, None));
    let fit = Fit {
        schedule: &config.schedule,
        lr: 1.0,
        batch_size: per_device,
        run_dir: how.run_dir,
        reference: Vec::new(),
        select: Some(SelectBy { figure: "eval/ie_mean", higher_is_better: true }),
    };
    let validate = |s: &SproutStep<B::InnerBackend>| held_out_figures(how.corpus, how.holdout, s.encoder.as_ref(), &s.model);
    let optim = Grouped::new(&config.schedule, groups);
    let make = |guard| (SproutStep { guard, ..SproutStep::new(model, encoder, config.clone(), how.max_tokens) }, optim);
    let (train, valid) = (items(how.train, config), items(how.holdout, config));
    Ok(learner::fit(make, AsTheyAre, train, valid, &fit, &validate, progress)?.model)
}

#[cfg(test)]
mod tests {
    use arbor_models::DefaultBackend;
    use arbor_models::aggregator::AggregationInit;
    use arbor_models::sllm::SllmConfig;
    use arbor_models::sproutrag::SproutRagModelConfig;
    use burn::backend::Autodiff;
    use burn::module::AutodiffModule;

    use super::*;
    use crate::schedule::Schedule;

    type A = Autodiff<DefaultBackend>;

    /// SproutRAG with its encoder fine-tuned on the lease's two questions, one batch each, for three
    /// epochs: one device taking both batches a step, against two devices (the CPU's one twice) taking one
    /// each, their gradients summed; the same seed, so the same SLLM to start from. As for the dense
    /// control (`super::super::dense`), AdamW makes nearly the same steps from the summed gradient: the
    /// held-out loss within 1 % every epoch, the unit embeddings apart by under 5 % of how far training
    /// moved them (measured: 0.19 % and 0.8 %). The best epoch on validation is kept.
    #[test]
    fn two_devices_take_the_joint_step_one_device_takes_over_both_batches() {
        let crate::fixtures::Lease { corpus, docs, tune, dim, .. } = crate::fixtures::lease();
        let device = Default::default();
        let model_config = SproutRagModelConfig { sllm: SllmConfig { layers: 1, heads: 2, d_model: 16, d_ff: 32 }, vae: None };
        let fresh = || {
            <A as Backend>::seed(&device, 7);
            model_config.init::<A>(dim, 0, AggregationInit::Uniform, &device).with_encoder(tune.bert.clone())
        };
        let encoder = StepEncoder::new(&tune, Some(4)).unwrap();
        let embeddings = |m: &SproutRagModel<DefaultBackend>| {
            let units = Vectors::validation(Some(&encoder), m.encoder.as_ref()).all_units(&docs[0], &device);
            m.document(units, false).embeddings.into_data().to_vec::<f32>().unwrap()
        };
        let run = |devices: Vec<u16>, per_device: usize| {
            let dir = tempfile::tempdir().unwrap();
            let schedule = Schedule { epochs: 3, checkpoint_every: 100, warmup_fraction: 0.0, devices: Some(devices), ..Schedule::default() };
            let config = TrainConfig {
                schedule,
                batch_size: 1,
                tau: 1.0,
                freeze_encoder: false,
                frozen_layers: Some(4),
                lr_encoder: 1e-4,
                lr_new: 1e-3,
                ..TrainConfig::default()
            };
            let how = Joint { config: &config, max_tokens: 0, corpus: &corpus, train: &docs, holdout: &docs, run_dir: dir.path() };
            let trained = fit_items(fresh(), Some(encoder.clone()), &how, per_device, &mut |_, _| {}).unwrap();
            let log = std::fs::read_to_string(dir.path().join("log.jsonl")).unwrap();
            let rows: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            let held: Vec<f64> = rows.iter().filter_map(|r| r["eval/loss"].as_f64()).collect();
            let state = crate::checkpoint::state(&dir.path().join("checkpoints")).unwrap().unwrap();
            assert!(state.best.is_some(), "the epoch is chosen on validation");
            (held, embeddings(&trained))
        };
        let (one, e_one) = run(vec![0], 2);
        let (two, e_two) = run(vec![0, 0], 1);
        assert_eq!((one.len(), two.len()), (3, 3), "a held-out loss per epoch");
        let start = embeddings(&fresh().valid());
        let gap = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        let (moved, apart) = (gap(&e_one, &start), gap(&e_one, &e_two));
        assert!(moved > 1e-2 && apart < 0.05 * moved, "training moved the unit embeddings by {moved}; one and two devices differ by {apart}");
        for (a, b) in one.iter().zip(&two) {
            assert!((a - b).abs() < 0.01 * a, "held-out loss per epoch: one device {one:?}, two {two:?}");
        }
    }
}
