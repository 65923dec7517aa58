//! Training the cross-encoder reranker (arbor_models::reranker, the reranking stage of SproutRAG, Section
//! 3) on L_rank (arbor_losses::listwise_softmax). An example is a training query with its positive units
//! (those mostly inside its gold evidence) and its hard negatives (units of its document that share no
//! character with the gold: BM25's best and the dense first stage's best in turn), each with the dense
//! cosine the reranker adds to its score. Each step takes `batch_size` queries; each brings one positive
//! (the next one each epoch) and `negatives` negatives drawn from its pool, a function of the seed and
//! the step only, so a resumed run sees the same groups. Two AdamW groups (the skeleton's): the new score
//! head and gamma at `lr_head`, the trunk's top `trainable_layers` blocks at `lr_encoder`. The held-back
//! queries' L_rank and hit@1 (the positive first in its group) are logged every epoch, beside the hit@1
//! of the dense cosine alone.

use std::path::Path;

use arbor_losses::listwise_softmax;
use arbor_models::bert::Bert;
use arbor_models::encoder::TokenIds;
use arbor_models::host::{Host, init_on_host};
use arbor_models::reranker::{CrossEncoder, pair_ids};
use burn::module::AutodiffModule;
use burn::nn::LinearConfig;
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Tensor};
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use serde::{Deserialize, Serialize};

use crate::config::Removed;

use crate::data::step_batch;
use crate::schedule::Schedule;
use crate::skeleton::{self, Group, SelectBy, Step, Task};

/// One training query: word pieces (no special tokens) of the query, its positive units and its
/// negative units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RerankExample {
    pub query: TokenIds,
    pub positives: Vec<Candidate>,
    pub negatives: Vec<Candidate>,
}

/// A unit beside a query: its word pieces and the first stage's cosine with the query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub ids: TokenIds,
    pub prior: f32,
    /// The trained cross-encoder's score of the pair, where a student is distilled from it
    /// ([`crate::rerank_control`], MarginMSE); `None` elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teacher: Option<f32>,
}

/// The reranker's training settings (experiment file: `Rerank((training: ...))`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RerankerTraining {
    /// Queries of this split train; the validation split's are held out.
    pub split: String,
    /// Replaced by the validation split: kept only to say so when an old experiment file sets it.
    #[serde(default, deserialize_with = "crate::config::removed", skip_serializing)]
    pub holdout_fraction: Option<Removed>,
    /// Train on a sample of this many of the split's queries, drawn by `schedule.seed` as every trainer
    /// draws it, so the matched control trains on the same sample; `None`: every query of the split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub train_queries: Option<usize>,
    /// Replaced by `train_queries` (an evenly spaced subset its control did not share).
    #[serde(default, deserialize_with = "crate::config::removed", skip_serializing)]
    pub max_queries: Option<Removed>,
    pub schedule: Schedule,
    /// Queries per step.
    pub batch_size: usize,
    /// Negatives beside the positive in each query's group.
    pub negatives: usize,
    /// The pool negatives are drawn from: this many of the document's units, best by BM25 first.
    pub hard_negatives: usize,
    /// The trunk's top blocks that learn (the others and the embeddings stay as pretrained).
    pub trainable_layers: usize,
    pub lr_head: f64,
    pub lr_encoder: f64,
    /// Query word pieces kept in a pair.
    pub max_query_tokens: usize,
    /// A pair's length, special tokens included (at most the encoder's limit).
    pub max_pair_tokens: usize,
}

impl Default for RerankerTraining {
    fn default() -> Self {
        RerankerTraining {
            split: "train".into(),
            holdout_fraction: None,
            train_queries: None,
            max_queries: None,
            schedule: Schedule { epochs: 4, warmup_fraction: 0.1, checkpoint_every: 100, ..Schedule::default() },
            batch_size: 4,
            negatives: 7,
            hard_negatives: 30,
            trainable_layers: 2,
            lr_head: 2e-3,
            lr_encoder: 1e-4,
            max_query_tokens: 64,
            max_pair_tokens: 256,
        }
    }
}

impl RerankerTraining {
    pub fn check(&self) -> Result<(), String> {
        self.schedule.check()?;
        if self.batch_size == 0 || self.negatives == 0 {
            return Err("rerank training: batch_size and negatives must be at least 1".into());
        }
        if self.hard_negatives < self.negatives {
            return Err(format!("rerank training: hard_negatives ({}) must be at least negatives ({})", self.hard_negatives, self.negatives));
        }
        if self.train_queries == Some(0) {
            return Err("rerank training: train_queries must be at least 1 (or None: every query of the split)".into());
        }
        if self.max_queries.is_some() {
            return Err("rerank training: max_queries is now train_queries, a sample drawn by the schedule's seed that the \
                        matched control trains on too: rename it"
                .into());
        }
        if self.holdout_fraction.is_some() {
            return Err("rerank training: holdout_fraction is gone: the reranker holds out the validation split (`data: (..., \
                        validation: Some((fraction: 0.2, seed: 0)))`, the default): delete it"
                .into());
        }
        Ok(())
    }
}

/// What the pairs are made with: the tokenizer's `[CLS]` and `[SEP]`.
#[derive(Debug, Clone, Copy)]
pub struct PairFormat {
    pub special: (u32, u32),
    pub max_query: usize,
    pub max_len: usize,
    /// The trunk's layer-norm epsilon (the hand-written fine-tuning passes need it; Burn's keeps its own).
    pub layer_norm_eps: f64,
}

/// A query's group: its word pieces and its texts, the positive first.
pub(crate) type QueryGroup<'e> = (&'e TokenIds, Vec<&'e Candidate>);

/// Example `e`'s group at `step` of `epoch`: its positive of the epoch and `negatives` drawn from its pool,
/// a function of the seed and the step only (a resumed run, and the matched control, draw the same).
pub(crate) fn group<'e>(config: &RerankerTraining, train: &'e [RerankExample], e: usize, epoch: usize, step: usize) -> QueryGroup<'e> {
    let ex = &train[e];
    let mut rng = rand::rngs::StdRng::seed_from_u64(config.schedule.seed ^ ((step as u64) << 20) ^ e as u64);
    let mut texts = vec![&ex.positives[epoch % ex.positives.len()]];
    texts.extend(ex.negatives.choose_multiple(&mut rng, config.negatives));
    (&ex.query, texts)
}

/// The examples of training step `step` and their groups.
pub(crate) fn step_groups<'e>(config: &RerankerTraining, train: &'e [RerankExample], step: usize) -> (Vec<usize>, Vec<QueryGroup<'e>>) {
    let (epoch, _, batch) = step_batch(train.len(), config.batch_size, config.schedule.seed, step);
    let groups = batch.iter().map(|&e| group(config, train, e, epoch, step)).collect();
    (batch, groups)
}

/// Steps in an epoch over `n` examples.
pub(crate) fn steps_per_epoch(config: &RerankerTraining, n: usize) -> usize {
    n.div_ceil(config.batch_size)
}

/// The held-out figures of a scorer of groups: L_rank and hit@1 over fixed groups (each example's first
/// positive and the best `negatives` of its pool), and hit@1 of the first stage's cosine alone on them.
pub(crate) fn held_out<B: Backend>(
    config: &RerankerTraining,
    holdout: &[RerankExample],
    device: &B::Device,
    score: impl Fn(&[QueryGroup]) -> Tensor<B, 2>,
) -> Vec<(&'static str, f64)> {
    if holdout.is_empty() {
        return Vec::new();
    }
    let groups: Vec<QueryGroup> =
        holdout.iter().map(|ex| (&ex.query, std::iter::once(&ex.positives[0]).chain(ex.negatives.iter().take(config.negatives)).collect())).collect();
    let (mut loss, mut hit) = (0.0, 0.0);
    for chunk in groups.chunks(config.batch_size) {
        let scores = score(chunk);
        hit += hit_at_1(scores.clone()) * chunk.len() as f64;
        loss += listwise_softmax(scores).into_scalar().elem::<f64>() * chunk.len() as f64;
    }
    // The reference: the same groups ordered by the first stage's cosine alone (the reranker untrained).
    let dense: Vec<f32> = groups.iter().flat_map(|(_, texts)| texts.iter().map(|t| t.prior)).collect();
    let size = groups[0].1.len();
    let dense = Tensor::<B, 1>::from_floats(dense.as_slice(), device).reshape([groups.len(), size]);
    let n = groups.len() as f64;
    vec![("eval/loss", loss / n), ("eval/hit1", hit / n), ("eval/dense_hit1", hit_at_1(dense))]
}

/// The scores of groups of one size, `[groups, size]`: each a query and its texts (the positive first).
fn group_scores<B: Backend>(model: &CrossEncoder<B>, format: PairFormat, groups: &[QueryGroup]) -> Tensor<B, 2> {
    let size = groups[0].1.len();
    let pairs: Vec<TokenIds> = groups
        .iter()
        .flat_map(|(query, texts)| texts.iter().map(|t| pair_ids(query, &t.ids, format.special, format.max_query, format.max_len)))
        .collect();
    let priors: Vec<f32> = groups.iter().flat_map(|(_, texts)| texts.iter().map(|t| t.prior)).collect();
    let refs: Vec<&[u32]> = pairs.iter().map(Vec::as_slice).collect();
    let device = model.head.weight.device();
    let prior = Tensor::<B, 1>::from_floats(priors.as_slice(), &device);
    model.forward_rows(&refs, prior, format.layer_norm_eps).reshape([groups.len(), size])
}

/// The share of groups whose positive (column 0) scores above every negative.
pub(crate) fn hit_at_1<B: Backend>(scores: Tensor<B, 2>) -> f64 {
    let [q, g] = scores.dims();
    let s = scores.into_data().to_vec::<f32>().expect("f32");
    s.chunks_exact(g).filter(|row| row[1..].iter().all(|&x| x < row[0])).count() as f64 / q.max(1) as f64
}

pub(crate) struct RerankTask<'a, B: AutodiffBackend> {
    pub(crate) config: &'a RerankerTraining,
    pub(crate) format: PairFormat,
    pub(crate) train: &'a [RerankExample],
    pub(crate) holdout: &'a [RerankExample],
    pub(crate) _b: std::marker::PhantomData<B>,
}

impl<B: AutodiffBackend> Task<B> for RerankTask<'_, B> {
    type Model = CrossEncoder<B>;

    fn steps_per_epoch(&self) -> usize {
        steps_per_epoch(self.config, self.train.len())
    }

    fn step(&mut self, model: &CrossEncoder<B>, step: usize) -> anyhow::Result<Step<B>> {
        let (batch, groups) = step_groups(self.config, self.train, step);
        let scores = group_scores(model, self.format, &groups);
        let hit = hit_at_1(scores.clone().detach());
        Ok(Step { terms: vec![("loss/rank", listwise_softmax(scores))], scalars: vec![("train/hit1", hit)], context: format!("queries {batch:?}") })
    }

    fn monitor(&self, model: &CrossEncoder<B>) -> Vec<(&'static str, f64)> {
        vec![("train/gamma", model.prior_scale.val().into_scalar().elem::<f64>())]
    }

    fn evaluate(&self, model: &CrossEncoder<B::InnerBackend>) -> Vec<(&'static str, f64)> {
        held_out(self.config, self.holdout, &model.head.weight.device(), |groups| group_scores(model, self.format, groups))
    }

    fn select_by(&self) -> Option<SelectBy> {
        Some(SelectBy { figure: "eval/loss", higher_is_better: false })
    }
}

/// Only examples with a positive and a full pool of negatives make groups of one size.
pub fn usable(config: &RerankerTraining, examples: Vec<RerankExample>) -> Vec<RerankExample> {
    examples.into_iter().filter(|e| !e.positives.is_empty() && e.negatives.len() >= config.negatives).collect()
}

/// Trains the reranker from the pretrained trunk `bert` in `run_dir` (resuming a checkpoint there);
/// returns it without autodiff.
#[allow(clippy::too_many_arguments)]
pub fn train<B: AutodiffBackend>(
    config: &RerankerTraining,
    bert: Bert<B>,
    format: PairFormat,
    train: &[RerankExample],
    holdout: &[RerankExample],
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<CrossEncoder<B::InnerBackend>> {
    config.check().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(!train.is_empty(), "the reranker has no training query with a positive unit and {} negatives", config.negatives);
    let device = bert.embeddings.word_embeddings.weight.device();
    B::seed(&device, config.schedule.seed);
    let hidden = bert.embeddings.layer_norm.gamma.dims()[0];
    let mut model = CrossEncoder::new(bert, hidden, &device).freeze_below(config.trainable_layers);
    // The head's initial weights drawn on the host (arbor_models::host): the same on every backend.
    model.head = init_on_host(config.schedule.seed, |cpu| LinearConfig::new(hidden, 1).init::<Host>(cpu), model.head, &device)?;
    // The trunk's group first; the head's takes what is left (the head and gamma).
    let groups = [
        Group { name: "encoder", lr: config.lr_encoder, params: |g, m: &CrossEncoder<B>| GradientsParams::from_module(g, &m.bert) },
        Group { name: "head", lr: config.lr_head, params: |g, m: &CrossEncoder<B>| GradientsParams::from_module(g, m) },
    ];
    let mut task = RerankTask { config, format, train, holdout, _b: std::marker::PhantomData };
    let model = skeleton::train(&mut task, model, &groups, &config.schedule, run_dir, progress)?;
    Ok(model.valid())
}

/// The reranker of the finished run in `run_dir`, if it has finished; `bert` gives its shape.
pub fn finished<B: Backend>(bert: Bert<B>, run_dir: &Path) -> anyhow::Result<Option<CrossEncoder<B>>> {
    let device = bert.embeddings.word_embeddings.weight.device();
    let hidden = bert.embeddings.layer_norm.gamma.dims()[0];
    skeleton::finished(CrossEncoder::new(bert, hidden, &device), run_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(positives: usize, negatives: usize) -> RerankExample {
        let c = |id| Candidate { ids: vec![id], prior: 0.0, teacher: None };
        RerankExample { query: vec![1], positives: vec![c(2); positives], negatives: vec![c(3); negatives] }
    }

    #[test]
    fn only_examples_with_a_positive_and_enough_negatives_train() {
        let config = RerankerTraining { negatives: 2, hard_negatives: 4, ..Default::default() };
        let kept = usable(&config, vec![example(1, 2), example(0, 5), example(2, 1), example(3, 4)]);
        assert_eq!(kept, vec![example(1, 2), example(3, 4)]);
    }

    #[test]
    fn hit_at_1_counts_groups_whose_positive_leads() {
        use arbor_models::DefaultBackend as B;
        let s = Tensor::<B, 2>::from_data(burn::tensor::TensorData::new(vec![0.9f32, 0.1, 0.2, 0.5, 0.7, 0.1], [2, 3]), &Default::default());
        assert_eq!(hit_at_1(s), 0.5);
    }

    #[test]
    fn settings_that_cannot_make_groups_are_rejected() {
        assert!(RerankerTraining { hard_negatives: 3, negatives: 7, ..Default::default() }.check().unwrap_err().contains("hard_negatives"));
        assert!(RerankerTraining { holdout_fraction: Some(Removed), ..Default::default() }.check().is_err());
        assert!(RerankerTraining::default().check().is_ok());
    }
}
