//! The reranker's matched control: the same training as the cross-encoder's ([`crate::reranker`]) with a
//! bi-encoder in its place. Every step takes the reranker's batch of queries and each query's group (its
//! positive of the epoch and the negatives drawn from its pool, by the same function of the seed and the
//! step), under the same schedule and epochs; the encoder's top `trainable_layers` blocks learn at the
//! reranker's `lr_encoder` (the embeddings and the blocks below stay pretrained, as the reranker's do),
//! and the loss is the reranker's L_rank over the group's scores, here the cosines of the query's and the
//! texts' pooled vectors over a temperature:
//!
//! ```text
//! s(q, t) = cos(e(q), e(t)) / tau          L = L_rank(s) = -mean_q log softmax_t s(q, t)[positive]
//! ```
//!
//! The epoch kept is the one with the lowest held-out L_rank on the reranker's fixed held-out groups. What
//! the reranker adds over it is the cross-encoder: reading query and text together, and its score head.
//!
//! Distillation (`Objective::MarginMse`) trains the same bi-encoder on the same steps, groups, schedule,
//! rate and blocks, with the trained cross-encoder's scores of every pair (`Candidate::teacher`) as the
//! target in place of the positive's label: MarginMSE (arbor_losses::margin_mse, Hofstätter et al., 2020)
//! between the student's margins s(q, p) - s(q, n) and the teacher's. The plain control above is then its
//! matched control: the fine-tune on the same triples without the teacher. The epoch is chosen as the
//! control's is, by held-out L_rank.

use std::path::Path;

use arbor_losses::{listwise_softmax, margin_mse};
use arbor_models::bert::Bert;
use arbor_models::dense::DenseModel;
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use burn::tensor::backend::{AutodiffBackend, Backend};

use crate::encoder::{FineTune, StepEncoder};
use crate::reranker::{PairFormat, QueryGroup, RerankExample, RerankerTraining, held_out, hit_at_1, step_groups, steps_per_epoch};
use crate::skeleton::{self, SelectBy, Step, Task};

/// The token rows a bi-encoder reads of a group: the query (its first `max_query` word pieces) and each
/// text (what fits `max_len`), each between `[CLS]` and `[SEP]`.
fn rows(format: PairFormat, groups: &[QueryGroup]) -> Vec<Vec<u32>> {
    let (cls, sep) = format.special;
    let wrap = |ids: &[u32], max: usize| std::iter::once(cls).chain(ids.iter().take(max).copied()).chain([sep]).collect::<Vec<u32>>();
    let queries = groups.iter().map(|(q, _)| wrap(q, format.max_query));
    let texts = groups.iter().flat_map(|(_, texts)| texts.iter().map(|t| wrap(&t.ids, format.max_len.saturating_sub(2))));
    queries.chain(texts).collect()
}

/// The groups' scores, `[groups, size]`: cos(query, text) / tau through `bert` (with gradients above the
/// frozen blocks).
fn scores<B: Backend>(encoder: &StepEncoder, bert: &Bert<B>, format: PairFormat, tau: f64, groups: &[QueryGroup]) -> Tensor<B, 2> {
    let (g, size) = (groups.len(), groups[0].1.len());
    let rows = rows(format, groups);
    let refs: Vec<&[u32]> = rows.iter().map(Vec::as_slice).collect();
    let device = bert.embeddings.word_embeddings.weight.device();
    let pooled = encoder.pool(bert, &refs, &device);
    let hidden = pooled.dims()[1];
    let queries = pooled.clone().slice([0..g, 0..hidden]).reshape([g, 1, hidden]);
    let texts = pooled.slice([g..g + g * size, 0..hidden]).reshape([g, size, hidden]);
    (texts * queries).sum_dim(2).reshape([g, size]) / tau
}

/// What the bi-encoder learns from a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Objective {
    /// L_rank over the group's scores, the positive the target: the reranker's control.
    Listwise,
    /// MarginMSE to the teacher's scores of the group's pairs (every candidate must carry one).
    MarginMse,
}

/// The teacher's scores of groups, `[groups, size]`.
fn teacher_scores<B: Backend>(groups: &[QueryGroup], device: &B::Device) -> anyhow::Result<Tensor<B, 2>> {
    let size = groups[0].1.len();
    let scores: Option<Vec<f32>> = groups.iter().flat_map(|(_, texts)| texts.iter().map(|t| t.teacher)).collect();
    let scores = scores.ok_or_else(|| anyhow::anyhow!("distillation: a training pair has no teacher score"))?;
    Ok(Tensor::<B, 1>::from_floats(scores.as_slice(), device).reshape([groups.len(), size]))
}

struct ControlTask<'a> {
    config: &'a RerankerTraining,
    objective: Objective,
    format: PairFormat,
    tau: f64,
    encoder: StepEncoder,
    train: &'a [RerankExample],
    holdout: &'a [RerankExample],
}

impl<B: AutodiffBackend> Task<B> for ControlTask<'_> {
    type Model = DenseModel<B>;

    fn steps_per_epoch(&self) -> usize {
        steps_per_epoch(self.config, self.train.len())
    }

    fn step(&mut self, model: &DenseModel<B>, step: usize) -> anyhow::Result<Step<B>> {
        let (batch, groups) = step_groups(self.config, self.train, step);
        let bert = model.encoder.as_ref().expect("the control fine-tunes the encoder");
        let scores = scores(&self.encoder, bert, self.format, self.tau, &groups);
        let hit = hit_at_1(scores.clone().detach());
        let term = match self.objective {
            Objective::Listwise => ("loss/rank", listwise_softmax(scores)),
            Objective::MarginMse => ("loss/margin_mse", margin_mse(scores.clone(), teacher_scores(&groups, &scores.device())?)),
        };
        Ok(Step { terms: vec![term], scalars: vec![("train/hit1", hit)], context: format!("queries {batch:?}") })
    }

    fn evaluate(&self, model: &DenseModel<B::InnerBackend>) -> Vec<(&'static str, f64)> {
        let bert = model.encoder.as_ref().expect("the control fine-tunes the encoder");
        let device = bert.embeddings.word_embeddings.weight.device();
        held_out(self.config, self.holdout, &device, |groups| scores(&self.encoder, bert, self.format, self.tau, groups))
    }

    fn select_by(&self) -> Option<SelectBy> {
        Some(SelectBy { figure: "eval/loss", higher_is_better: false })
    }
}

/// The blocks kept at their pretrained weights under the reranker's `trainable_layers`.
pub fn frozen_layers(config: &RerankerTraining, layers: usize) -> usize {
    layers.saturating_sub(config.trainable_layers)
}

/// Trains the control (or, with `Objective::MarginMse`, the distilled student) from the pretrained encoder
/// `tune` in `run_dir` (resuming a checkpoint there), on the reranker's examples with the reranker's
/// settings `config` and the temperature `tau`.
#[allow(clippy::too_many_arguments)]
pub fn train<B: AutodiffBackend>(
    config: &RerankerTraining,
    objective: Objective,
    tau: f64,
    tune: FineTune<B>,
    format: PairFormat,
    train: &[RerankExample],
    holdout: &[RerankExample],
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<DenseModel<B::InnerBackend>> {
    config.check().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(!train.is_empty(), "the reranker's control has no training query with a positive unit and {} negatives", config.negatives);
    let device = tune.bert.embeddings.word_embeddings.weight.device();
    B::seed(&device, config.schedule.seed);
    let encoder = StepEncoder::new(&tune, Some(frozen_layers(config, tune.bert.layers.len())))?;
    let dim = tune.bert.embeddings.layer_norm.gamma.dims()[0];
    let model = DenseModel::new(dim, Some(tune.bert), &device);
    let group = skeleton::Group { name: "encoder", lr: config.lr_encoder, params: |g, m: &DenseModel<B>| GradientsParams::from_module(g, m) };
    if objective == Objective::MarginMse {
        let scored = train.iter().flat_map(|e| e.positives.iter().chain(&e.negatives)).all(|c| c.teacher.is_some());
        anyhow::ensure!(scored, "distillation: every training pair needs the teacher's score");
    }
    let mut task = ControlTask { config, objective, format, tau, encoder, train, holdout };
    Ok(skeleton::train(&mut task, model, &[group], &config.schedule, run_dir, progress)?.valid())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reranker::Candidate;
    use arbor_models::DefaultBackend;
    use arbor_models::reranker::CrossEncoder;
    use burn::backend::Autodiff;

    type A = Autodiff<DefaultBackend>;

    /// Examples over the fixture's units: example `i` has unit `i` as its positive and the other units as
    /// its pool.
    fn examples(ids: &[Vec<u32>]) -> Vec<RerankExample> {
        let strip = |u: &Vec<u32>| u[1..u.len() - 1].to_vec();
        let candidate = |u: usize| Candidate { ids: strip(&ids[u]), prior: 0.1 * u as f32, teacher: None };
        (0..ids.len())
            .map(|i| RerankExample {
                query: strip(&ids[i])[..2].to_vec(),
                positives: vec![candidate(i)],
                negatives: (0..ids.len()).filter(|&u| u != i).map(candidate).collect(),
            })
            .collect()
    }

    /// The control's steps take the reranker's batches and groups, its encoder group the reranker's
    /// trunk rate, and its gradient the reranker's trainable blocks alone.
    #[test]
    fn the_control_trains_on_the_rerankers_batches_groups_rate_and_blocks() {
        let crate::fixtures::Lease { tune, ids, .. } = crate::fixtures::lease();
        let config = RerankerTraining { batch_size: 2, negatives: 2, hard_negatives: 4, trainable_layers: 2, ..RerankerTraining::default() };
        let train = examples(&ids);
        let format = PairFormat { special: (ids[0][0], *ids[0].last().unwrap()), max_query: 64, max_len: 256, layer_norm_eps: tune.layer_norm_eps };
        let encoder = StepEncoder::new(&tune, Some(frozen_layers(&config, tune.bert.layers.len()))).unwrap();
        let mut control = ControlTask { config: &config, objective: Objective::Listwise, format, tau: 0.05, encoder, train: &train, holdout: &[] };
        let device = Default::default();
        let dense = DenseModel::new(tune.bert.embeddings.layer_norm.gamma.dims()[0], Some(tune.bert.clone()), &device);
        let hidden = tune.bert.embeddings.layer_norm.gamma.dims()[0];
        let cross = CrossEncoder::<A>::new(tune.bert.clone(), hidden, &device).freeze_below(config.trainable_layers);
        let mut reranker = crate::reranker::RerankTask { config: &config, format, train: &train, holdout: &[], _b: std::marker::PhantomData };
        for step in 0..6 {
            let (a, b) = (Task::<A>::step(&mut control, &dense, step).unwrap(), Task::<A>::step(&mut reranker, &cross, step).unwrap());
            assert_eq!(a.context, b.context, "step {step}: the same queries");
            let (_, groups) = step_groups(&config, &train, step);
            assert!(groups.iter().all(|(_, texts)| texts.len() == 3), "a positive and two negatives each");
        }
        assert_eq!(Task::<A>::steps_per_epoch(&control), Task::<A>::steps_per_epoch(&reranker));
        // The gradient reaches the top two blocks, not the four below nor the embeddings.
        let step = Task::<A>::step(&mut control, &dense, 0).unwrap();
        let grads = step.terms[0].1.clone().backward();
        let bert = dense.encoder.as_ref().unwrap();
        let layers = bert.layers.len();
        assert!(bert.layers[layers - 1].query.weight.grad(&grads).is_some() && bert.layers[layers - 2].query.weight.grad(&grads).is_some());
        assert!(bert.layers[layers - 3].query.weight.grad(&grads).is_none() && bert.embeddings.word_embeddings.weight.grad(&grads).is_none());
    }

    /// Distillation takes the control's steps and groups, and its loss is MarginMSE to the teacher's scores:
    /// zero when the teacher scores every pair as the student does, shifted per query (the margins agree), and
    /// 1 when every negative's teacher score is one higher (each margin off by one).
    #[test]
    fn distillation_matches_the_teachers_margins_on_the_controls_groups() {
        let crate::fixtures::Lease { tune, ids, .. } = crate::fixtures::lease();
        let config = RerankerTraining { batch_size: 2, negatives: 2, hard_negatives: 4, ..RerankerTraining::default() };
        let format = PairFormat { special: (ids[0][0], *ids[0].last().unwrap()), max_query: 64, max_len: 256, layer_norm_eps: tune.layer_norm_eps };
        let tau = 0.05;
        let teach = |bump: f32| -> Vec<RerankExample> {
            let mut train = examples(&ids);
            let encoder = StepEncoder::new(&tune, None).unwrap();
            for (e, ex) in train.iter_mut().enumerate() {
                let all: Vec<&Candidate> = ex.positives.iter().chain(&ex.negatives).collect();
                let s = scores(&encoder, &tune.bert, format, tau, &[(&ex.query, all)]).into_data().to_vec::<f32>().unwrap();
                let shift = 3.0 + e as f32;
                for (c, v) in ex.positives.iter_mut().chain(ex.negatives.iter_mut()).zip(&s) {
                    c.teacher = Some(v + shift);
                }
                ex.negatives.iter_mut().for_each(|c| c.teacher = c.teacher.map(|t| t + bump));
            }
            train
        };
        let device = Default::default();
        let dense = DenseModel::<A>::new(tune.bert.embeddings.layer_norm.gamma.dims()[0], Some(tune.bert.clone()), &device);
        let step = |train: &[RerankExample], objective| {
            let encoder = StepEncoder::new(&tune, None).unwrap();
            let mut task = ControlTask { config: &config, objective, format, tau, encoder, train, holdout: &[] };
            Task::<A>::step(&mut task, &dense, 1).unwrap()
        };
        let (agree, off) = (teach(0.0), teach(1.0));
        let (plain, distilled) = (step(&agree, Objective::Listwise), step(&agree, Objective::MarginMse));
        assert_eq!(plain.context, distilled.context, "the same queries");
        assert_eq!(distilled.terms[0].0, "loss/margin_mse");
        let loss = |s: &Step<A>| f64::from(s.terms[0].1.clone().into_scalar());
        assert!(loss(&distilled) < 1e-6, "margins agree: {}", loss(&distilled));
        assert!((loss(&step(&off, Objective::MarginMse)) - 1.0).abs() < 1e-3, "{}", loss(&step(&off, Objective::MarginMse)));
        // Pairs without a teacher's score are refused.
        let unscored = examples(&ids);
        let encoder = StepEncoder::new(&tune, None).unwrap();
        let mut task = ControlTask { config: &config, objective: Objective::MarginMse, format, tau, encoder, train: &unscored, holdout: &[] };
        assert!(Task::<A>::step(&mut task, &dense, 0).is_err());
    }

    /// At the pretrained weights the scores are the encoder's cosines over tau, query against each text.
    #[test]
    fn a_groups_scores_are_cosines_over_tau() {
        let crate::fixtures::Lease { tune, ids, .. } = crate::fixtures::lease();
        let train = examples(&ids);
        let format = PairFormat { special: (ids[0][0], *ids[0].last().unwrap()), max_query: 64, max_len: 256, layer_norm_eps: tune.layer_norm_eps };
        let encoder = StepEncoder::new(&tune, None).unwrap();
        let groups: Vec<QueryGroup> = train.iter().take(2).map(|e| (&e.query, vec![&e.positives[0], &e.negatives[0]])).collect();
        let s = scores(&encoder, &tune.bert, format, 0.5, &groups).into_data().to_vec::<f32>().unwrap();
        let rows = rows(format, &groups);
        let refs: Vec<&[u32]> = rows.iter().map(Vec::as_slice).collect();
        let pooled = encoder.pool(&tune.bert, &refs, &Default::default()).into_data().to_vec::<f32>().unwrap();
        let h = pooled.len() / rows.len();
        let cos = |a: usize, b: usize| (0..h).map(|i| pooled[a * h + i] * pooled[b * h + i]).sum::<f32>();
        // Rows: the two queries, then each group's two texts.
        for (at, (q, t)) in [(0, 2), (0, 3), (1, 4), (1, 5)].into_iter().enumerate() {
            assert!((s[at] - cos(q, t) / 0.5).abs() < 1e-4, "score {at}: {} against {}", s[at], cos(q, t) / 0.5);
        }
    }
}
