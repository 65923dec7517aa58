//! SproutRAG's joint step on a fixed batch, timed (SproutRAG, Section 4: L = L_ret + lambda L_attn): what
//! `arbor bench-step` measures against PyTorch for the trained SproutRAG (`scripts/bench_torch_step.py`,
//! `run_joint`). One step over one or more documents (issue 62's `docs_per_step`): per document, the
//! encoder with gradients over the window of its units, the other units by their frozen vectors, the
//! SLLM over the whole document in document order (its attention aggregated into M by the learned head
//! weights); the queries through the SLLM as one-unit documents; L_ret (InfoNCE at tau, the step's
//! positives and every other unit of the step's documents as candidates, a query's false negatives left
//! out) plus lambda times the mean of the documents' L_attn at their gold merge pairs, and over several
//! documents `doc_loss` times the document term; one backward pass, one AdamW update a group (the
//! aggregation weights, the encoder, the new modules, each at its rate).
//! [`JointStart`] writes out the model's initial weights (the SLLM's and the aggregation's, drawn by the
//! seed as the trainer draws them), so that another framework starts from the same point.

use burn::module::Param;
use burn::nn::{LayerNorm, Linear};
use burn::optim::Optimizer;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Tensor};
use serde::{Deserialize, Serialize};

use arbor_models::aggregator::AggregationInit;
use arbor_models::sproutrag::{SproutRagModel, SproutRagModelConfig};

use super::{FixedBatch, StepTiming, measure};
use crate::config::TrainConfig;
use crate::data::{Part, StepRows, TrainDoc};
use crate::encoder::{FineTune, StepEncoder, Vectors};
use crate::objective::step_false_negatives;
use crate::sproutrag::step::losses;
use crate::sproutrag::{groups, initial};

/// The joint step's batch: the dense step's ([`FixedBatch`]: token ids of the queries and the window,
/// frozen vectors of the other units), each document unit's row of `[window; frozen]` (the SLLM reads
/// the units in document order), each query's positive unit and the document's gold merge pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixedJointBatch {
    pub batch: FixedBatch,
    /// Unit `u` of the document is row `rows[u]` of `[window; frozen]`.
    pub rows: Vec<usize>,
    /// Each query's positive, a unit of the document.
    pub positives: Vec<usize>,
    /// The gold merge pairs L_attn reads, units of the document.
    pub pairs: Vec<(usize, usize)>,
}

impl FixedJointBatch {
    /// `doc`'s `queries` under `step_tokens`, as the joint step reads them.
    pub fn new(doc: &TrainDoc, queries: &[usize], step_tokens: Option<usize>) -> FixedJointBatch {
        let (batch, rows) = FixedBatch::with_rows(doc, queries, step_tokens);
        let positives = queries.iter().map(|&q| doc.queries[q].positive).collect();
        FixedJointBatch { batch, rows, positives, pairs: doc.pairs.clone() }
    }
}

/// A joint step over one or more documents as another framework runs it: each document's batch, in the
/// step's order, and the loss's false negatives over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixedJointStep {
    /// One batch a document; L_ret's units are the documents' units one after another (each document's
    /// in unit order), its queries the batches' queries in that order.
    pub documents: Vec<FixedJointBatch>,
    /// `(query, candidate)` pairs taken out of L_ret's denominator ([`step_false_negatives`]): the
    /// candidates are the step's positives, then (with hard negatives) every other unit in that order.
    pub excluded: Vec<(usize, usize)>,
}

impl FixedJointStep {
    /// The step over `parts` under `config` (its `step_tokens` and `hard_negatives`), as the trainer reads it.
    pub fn new(parts: &[Part<'_>], config: &TrainConfig) -> FixedJointStep {
        let documents = parts.iter().map(|p| FixedJointBatch::new(p.doc, p.queries, config.step_tokens)).collect();
        FixedJointStep { documents, excluded: step_false_negatives(&StepRows::of(parts), &[], config) }
    }

    /// Word pieces the encoder reads with gradients, over every document.
    pub fn tokens(&self) -> usize {
        self.documents.iter().map(|d| d.batch.tokens()).sum()
    }
}

/// A linear layer's weights as Burn holds them: `weight` `[inputs][outputs]` (`y = x weight + bias`).
#[derive(Debug, Clone, Serialize)]
pub struct LinearWeights {
    pub weight: Vec<Vec<f32>>,
    pub bias: Vec<f32>,
}

/// A layer norm's scale and shift.
#[derive(Debug, Clone, Serialize)]
pub struct NormWeights {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
}

/// One post-norm block of the SLLM (arbor_models::bert::model::BertLayer).
#[derive(Debug, Clone, Serialize)]
pub struct BlockWeights {
    pub query: LinearWeights,
    pub key: LinearWeights,
    pub value: LinearWeights,
    pub attention_output: LinearWeights,
    pub attention_norm: NormWeights,
    pub intermediate: LinearWeights,
    pub output: LinearWeights,
    pub output_norm: NormWeights,
}

/// Where the joint step's new modules start: the SLLM (`input`, its blocks, `output`: e = x + output(h))
/// and the aggregation's `alpha` `[layers][heads]`.
#[derive(Debug, Clone, Serialize)]
pub struct JointStart {
    pub heads: usize,
    pub layer_norm_eps: f64,
    pub input: LinearWeights,
    pub blocks: Vec<BlockWeights>,
    pub output: LinearWeights,
    pub alpha: Vec<Vec<f32>>,
}

fn values<B: Backend, const D: usize>(t: &Param<Tensor<B, D>>) -> Vec<f32> {
    t.val().into_data().convert::<f32>().to_vec::<f32>().expect("f32")
}

fn linear<B: Backend>(l: &Linear<B>) -> LinearWeights {
    let [_, outputs] = l.weight.dims();
    let weight = values(&l.weight).chunks(outputs).map(<[f32]>::to_vec).collect();
    LinearWeights { weight, bias: l.bias.as_ref().map_or_else(|| vec![0.0; outputs], values) }
}

fn norm<B: Backend>(n: &LayerNorm<B>) -> NormWeights {
    let gamma = values(&n.gamma);
    NormWeights { beta: n.beta.as_ref().map_or_else(|| vec![0.0; gamma.len()], values), gamma }
}

impl JointStart {
    pub fn of<B: Backend>(model: &SproutRagModel<B>) -> JointStart {
        let sllm = &model.sllm;
        let blocks = sllm
            .layers
            .iter()
            .map(|b| BlockWeights {
                query: linear(&b.query),
                key: linear(&b.key),
                value: linear(&b.value),
                attention_output: linear(&b.attention_output),
                attention_norm: norm(&b.attention_norm),
                intermediate: linear(&b.intermediate),
                output: linear(&b.output),
                output_norm: norm(&b.output_norm),
            })
            .collect();
        let [_, heads] = model.aggregator.alpha.dims();
        JointStart {
            heads,
            layer_norm_eps: arbor_models::sllm::LAYER_NORM_EPS,
            input: linear(&sllm.input),
            blocks,
            output: linear(&sllm.output),
            alpha: values(&model.aggregator.alpha).chunks(heads).map(<[f32]>::to_vec).collect(),
        }
    }
}

/// Times `steps` joint steps (after one warm-up) on `parts` (each a document's queries) from the pretrained
/// `tune` and the new modules drawn by `config`'s seed, as the joint trainer takes them (its groups, rates,
/// window, lambda, tau, document term and optimizer; no learning-rate schedule); returns the timing and the
/// weights it started from.
pub fn time_joint_steps<B: AutodiffBackend>(
    config: &TrainConfig,
    model_config: &SproutRagModelConfig,
    aggregation: AggregationInit,
    (tune, vocab): (&FineTune<B>, usize),
    parts: &[Part<'_>],
    steps: usize,
) -> anyhow::Result<(StepTiming, JointStart)> {
    anyhow::ensure!(!config.freeze_encoder, "the step benchmark fine-tunes the encoder: training.freeze_encoder must be false");
    anyhow::ensure!(model_config.vae.is_none(), "the joint step's benchmark runs the SLLM without a SentenceVAE: set model.vae: None");
    anyhow::ensure!(config.node_loss == 0.0, "the joint step's benchmark leaves L_node out: set node_loss: 0");
    anyhow::ensure!(
        config.grad_cache.is_none(),
        "the joint step's benchmark times the plain step (PyTorch's side has no cached joint step): set grad_cache: None"
    );
    anyhow::ensure!(config.hard_negatives, "the step benchmark reads the documents' other units as negatives: training.hard_negatives must be true");
    anyhow::ensure!(!parts.is_empty(), "a step reads at least one document");
    for Part { doc, queries } in parts {
        anyhow::ensure!(!doc.ids.is_empty() && queries.iter().all(|&q| q < doc.queries.len()), "a document holds no token ids or those queries");
    }
    let device = Default::default();
    let encoder = StepEncoder::of(tune, config)?;
    let dim = tune.bert.embeddings.word_embeddings.weight.dims()[1];
    let model = initial(config, model_config, aggregation, (dim, vocab), Some(tune.bert.clone()), &device)?;
    let start = JointStart::of(&model);
    let groups = groups::<B>(config, true);
    let mut optims: Vec<_> = groups.iter().map(|_| crate::adamw::init(&config.schedule)).collect();
    let mut model = Some(model);
    let timing = measure::<B>(steps, &device, |first| {
        let now = model.take().expect("each step puts the model back");
        let vectors = Vectors::step(Some(&encoder), now.encoder.as_ref());
        let terms = losses(&now, &vectors, config, parts, None, 0);
        let loss = terms.into_iter().map(|(_, t)| t).reduce(|a, b| a + b).expect("L_ret is always a term");
        let value = first.then(|| loss.clone().into_scalar().elem::<f32>());
        let mut grads = loss.backward();
        let params: Vec<_> = groups.iter().map(|g| (g.params)(&mut grads, &now)).collect();
        let mut next = now;
        for ((group, optim), params) in groups.iter().zip(&mut optims).zip(params) {
            next = optim.step(group.lr, next, params);
        }
        model = Some(next);
        Ok(value)
    })?;
    Ok((timing, start))
}

#[cfg(test)]
mod tests {
    use burn::backend::Autodiff;

    use super::*;
    use arbor_models::DefaultBackend;
    use arbor_models::sllm::SllmConfig;

    /// The fixed batch is the joint step's own (every unit a row once, the positives and the gold pairs the
    /// document's), the weights written are those the model starts from, and the first timed step's loss is
    /// the joint trainer's L_ret + lambda L_attn on that batch at those weights.
    #[test]
    fn the_joint_batch_and_start_are_the_trainers_and_so_is_its_first_loss() {
        let crate::fixtures::Lease { docs, tune, ids, dim, .. } = crate::fixtures::lease();
        let doc = &docs[0];
        let step_tokens = Some(ids[0].len() + ids[1].len() + ids[2].len());
        let queries: Vec<usize> = (0..doc.queries.len()).collect();
        let batch = FixedJointBatch::new(doc, &queries, step_tokens);
        let mut rows = batch.rows.clone();
        rows.sort();
        assert_eq!(rows, (0..doc.units.len()).collect::<Vec<_>>());
        assert!(batch.batch.window.len() < doc.units.len(), "a window, not the document");
        assert!(batch.positives.iter().all(|&p| batch.rows[p] < batch.batch.window.len()), "positives are always encoded");
        assert_eq!((batch.positives.clone(), batch.pairs.clone()), (vec![0, 1], vec![(0, 1), (3, 4)]));
        let config = TrainConfig { step_tokens, freeze_encoder: false, lambda: 0.5, ..TrainConfig::default() };
        let model_config = SproutRagModelConfig { sllm: SllmConfig { layers: 1, heads: 2, d_model: 16, d_ff: 32 }, vae: None };
        let (timing, start) = time_joint_steps::<Autodiff<DefaultBackend>>(
            &config,
            &model_config,
            AggregationInit::Uniform,
            (&tune, 30522),
            &[Part { doc, queries: &queries }],
            1,
        )
        .unwrap();
        let device = Default::default();
        let model = initial(&config, &model_config, AggregationInit::Uniform, (dim, 30522), Some(tune.bert.clone()), &device).unwrap();
        let again = JointStart::of(&model);
        assert_eq!((start.input.weight.len(), start.input.weight[0].len(), start.blocks.len(), start.heads), (dim, 16, 1, 2));
        assert_eq!(serde_json::to_string(&start).unwrap(), serde_json::to_string(&again).unwrap(), "the seed draws the same start");
        assert!(start.output.weight.iter().flatten().all(|&w| w == 0.0), "the SLLM's output starts at zero");
        let encoder = StepEncoder::new(&tune, None).unwrap();
        let vectors = Vectors::step(Some(&encoder), model.encoder.as_ref());
        let terms = losses(&model, &vectors, &config, &[Part { doc, queries: &queries }], None, 0);
        assert_eq!(terms.iter().map(|(n, _)| *n).collect::<Vec<_>>(), ["loss/ret", "loss/attn_weighted"]);
        let loss: f32 = terms.into_iter().map(|(_, t)| t.into_scalar().elem::<f32>()).sum();
        assert!((timing.first_loss - loss).abs() < 1e-5, "{} against {loss}", timing.first_loss);
        assert_eq!(timing.ms.len(), 1);
    }

    /// Over two documents (the fixture's and a copy of it as another document): both batches, in order, the
    /// copy's units after the first's in L_ret (no false negative across documents), and the first timed
    /// step's loss is the trainer's L_ret + lambda L_attn + the document term over both.
    #[test]
    fn a_step_over_two_documents_reads_both_and_its_first_loss_is_the_trainers() {
        let crate::fixtures::Lease { docs, tune, ids, .. } = crate::fixtures::lease();
        let mut other = docs[0].clone();
        other.units.iter_mut().for_each(|u| u.doc = 1);
        other.queries.iter_mut().flat_map(|q| q.gold.iter_mut()).for_each(|g| g.doc = 1);
        let step_tokens = Some(ids[0].len() + ids[1].len() + ids[2].len());
        let config = TrainConfig { step_tokens, freeze_encoder: false, lambda: 0.5, docs_per_step: 2, doc_loss: 1.0, ..TrainConfig::default() };
        let (first, second) = (vec![0, 1], vec![1]);
        let parts = [Part { doc: &docs[0], queries: &first }, Part { doc: &other, queries: &second }];
        let step = FixedJointStep::new(&parts, &config);
        assert_eq!(step.documents, vec![FixedJointBatch::new(&docs[0], &first, step_tokens), FixedJointBatch::new(&other, &second, step_tokens)]);
        assert!(step.excluded.is_empty(), "{:?}", step.excluded);
        assert_eq!(step.tokens(), step.documents[0].batch.tokens() + step.documents[1].batch.tokens());
        let model_config = SproutRagModelConfig { sllm: SllmConfig { layers: 1, heads: 2, d_model: 16, d_ff: 32 }, vae: None };
        let (timing, _) =
            time_joint_steps::<Autodiff<DefaultBackend>>(&config, &model_config, AggregationInit::Uniform, (&tune, 30522), &parts, 1).unwrap();
        let device = Default::default();
        let model = initial(&config, &model_config, AggregationInit::Uniform, (384, 30522), Some(tune.bert.clone()), &device).unwrap();
        let encoder = StepEncoder::new(&tune, None).unwrap();
        let terms = losses(&model, &Vectors::step(Some(&encoder), model.encoder.as_ref()), &config, &parts, None, 0);
        assert_eq!(terms.iter().map(|(n, _)| *n).collect::<Vec<_>>(), ["loss/ret", "loss/attn_weighted", "loss/doc_weighted"]);
        let loss: f32 = terms.into_iter().map(|(_, t)| t.into_scalar().elem::<f32>()).sum();
        assert!((timing.first_loss - loss).abs() < 1e-5, "{} against {loss}", timing.first_loss);
        let one =
            time_joint_steps::<Autodiff<DefaultBackend>>(&config, &model_config, AggregationInit::Uniform, (&tune, 30522), &parts[..1], 1).unwrap();
        assert!((one.0.first_loss - timing.first_loss).abs() > 1e-3, "the other document's units and the document term count");
    }
}
