//! The fine-tuning step on a fixed batch, timed: what `arbor bench-step` measures against PyTorch on the
//! same batch (`scripts/bench_step.sh`).
//!
//! The step is the dense trainer's ([`crate::dense`], one document's batch of queries): the encoder run
//! with gradients over the batch's queries and the window of the document's units (`step_tokens`; the
//! whole document without it), the other units by their frozen vectors, L_ret (InfoNCE, SproutRAG
//! Section 4.1) over every unit, one backward pass, one AdamW update with the skeleton's optimizer
//! ([`crate::adamw`]). [`FixedBatch`] is that batch written out as token ids and frozen
//! vectors, with the loss's candidate rows, so that another framework can run exactly the same step.

pub mod joint;
pub mod pairs;
pub mod rerank;

use std::time::Instant;

use anyhow::Context as _;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::ElementConversion;
use burn::tensor::backend::{AutodiffBackend, Backend};
use serde::{Deserialize, Serialize};

use crate::config::TrainConfig;
use crate::data::{Part, StepRows, TrainDoc, TrainQuery};
use crate::dense::step::plain_loss;
use crate::encoder::{FineTune, StepEncoder, Vectors, window_rows};
use crate::objective::step_false_negatives;
use crate::window::window;

/// One step's inputs as another framework needs them. The encoder reads `queries` and `window` (token ids,
/// each row padded to its side's longest, one forward pass a side); the unit matrix is
/// `[encoded window; frozen]`; the loss is InfoNCE of query i against the rows `positives ++ negatives`
/// of that matrix, its target `i` (the batch's positives are in-batch negatives of the other queries,
/// every other unit of the document a hard negative).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixedBatch {
    pub queries: Vec<Vec<u32>>,
    pub window: Vec<Vec<u32>>,
    /// The frozen encoder's vectors of the document's units outside the window, in document order.
    pub frozen: Vec<Vec<f32>>,
    /// Each query's positive unit, as a row of `[window; frozen]`.
    pub positives: Vec<usize>,
    /// The document's other units (not a positive of the batch), rows of `[window; frozen]`, in document order.
    pub negatives: Vec<usize>,
    /// `(query, candidate)` pairs out of the loss's denominator, candidates indexing `positives ++
    /// negatives`: every unit other than a query's own positive that overlaps its gold
    /// ([`step_false_negatives`], as the trainer leaves them out).
    #[serde(default)]
    pub excluded: Vec<(usize, usize)>,
}

impl FixedBatch {
    /// The batch of `doc`'s `queries` (indices into `doc.queries`) under `step_tokens`, as the dense step reads it.
    pub fn new(doc: &TrainDoc, queries: &[usize], step_tokens: Option<usize>) -> FixedBatch {
        FixedBatch::with_rows(doc, queries, step_tokens).0
    }

    /// [`FixedBatch::new`], with each document unit's row of `[window; frozen]` (what a step that reads the
    /// units in document order needs: [`joint::FixedJointBatch`]).
    pub(crate) fn with_rows(doc: &TrainDoc, queries: &[usize], step_tokens: Option<usize>) -> (FixedBatch, Vec<usize>) {
        let picked: Vec<&TrainQuery> = queries.iter().map(|&q| &doc.queries[q]).collect();
        let kept = window(doc, &picked, step_tokens);
        let (others, rows) = window_rows(doc.units.len(), &kept);
        let positives: Vec<usize> = picked.iter().map(|q| q.positive).collect();
        let batch = FixedBatch {
            queries: picked.iter().map(|q| q.ids.clone()).collect(),
            window: kept.iter().map(|&u| doc.ids[u].clone()).collect(),
            frozen: others.iter().map(|&u| doc.pooled[u].clone()).collect(),
            positives: positives.iter().map(|&u| rows[u]).collect(),
            negatives: (0..doc.units.len()).filter(|u| !positives.contains(u)).map(|u| rows[u]).collect(),
            // The candidates named (`positives ++ negatives`) are the trainer's with hard negatives, which
            // the benchmark's steps require.
            excluded: step_false_negatives(
                &StepRows::of(&[Part { doc, queries }]),
                &[],
                &TrainConfig { hard_negatives: true, ..TrainConfig::default() },
            ),
        };
        (batch, rows)
    }

    /// Word pieces the encoder reads with gradients: queries and window, padding not counted.
    pub fn tokens(&self) -> usize {
        self.queries.iter().chain(&self.window).map(Vec::len).sum()
    }
}

/// The encoder's shape, for the step's FLOPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub layers: usize,
    pub hidden: usize,
    /// The feed-forward's inner width.
    pub ffn: usize,
}

impl Shape {
    pub fn of<B: burn::tensor::backend::Backend>(bert: &arbor_models::bert::Bert<B>) -> Shape {
        let hidden = bert.embeddings.word_embeddings.weight.dims()[1];
        Shape { layers: bert.layers.len(), hidden, ffn: bert.layers.first().map_or(0, |l| l.intermediate.weight.dims()[1]) }
    }
}

/// The model FLOPs of one step whose encoder reads `sides` (a multiply-add counts two), on padded shapes
/// (each side padded to its longest row, as PyTorch and the GPU build compute it; the CPU build packs the
/// rows and computes less): per block and row of `L` tokens, the four attention
/// projections `8 L h^2`, the feed-forward `4 L h f`, the attention scores and their weighting `4 L^2 h`.
/// A trained block costs three times its forward (the backward computes the gradients of its inputs and
/// of its weights), a frozen one (the lower `frozen_layers`) its forward alone. The embeddings, pooling
/// and loss are left out (well under 1 %).
pub fn step_flops(shape: Shape, frozen_layers: usize, sides: &[&[Vec<u32>]]) -> f64 {
    let Shape { layers, hidden, ffn } = shape;
    let (h, f) = (hidden as f64, ffn as f64);
    let side = |rows: &[Vec<u32>]| {
        let l = rows.iter().map(Vec::len).max().unwrap_or(0) as f64;
        rows.len() as f64 * (8.0 * l * h * h + 4.0 * l * h * f + 4.0 * l * l * h)
    };
    let block: f64 = sides.iter().map(|rows| side(rows)).sum();
    let frozen = frozen_layers.min(layers) as f64;
    block * (frozen + 3.0 * (layers as f64 - frozen))
}

/// What timing a step found.
#[derive(Debug, Clone, Serialize)]
pub struct StepTiming {
    /// Milliseconds of each timed step (after one untimed warm-up step).
    pub ms: Vec<f64>,
    /// The loss of the first step (at the pretrained weights): the same batch gives the same loss elsewhere.
    pub first_loss: f32,
    /// The process's peak resident memory during the steps, in MiB (Linux; `None` elsewhere).
    pub peak_rss_mib: Option<f64>,
}

impl StepTiming {
    pub fn median_ms(&self) -> f64 {
        let mut ms = self.ms.clone();
        ms.sort_by(f64::total_cmp);
        match ms.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => ms[n / 2],
            n => (ms[n / 2 - 1] + ms[n / 2]) / 2.0,
        }
    }
}

/// Times `steps` fine-tuning steps (after one warm-up) of the dense trainer on `doc`'s `queries`, from the
/// pretrained `tune`, with `config`'s window, frozen blocks, tau, learning rate and optimizer.
pub fn time_steps<B: AutodiffBackend>(
    config: &TrainConfig,
    tune: &FineTune<B>,
    doc: &TrainDoc,
    queries: &[usize],
    steps: usize,
) -> anyhow::Result<StepTiming> {
    anyhow::ensure!(!config.freeze_encoder, "the step benchmark fine-tunes the encoder: training.freeze_encoder must be false");
    anyhow::ensure!(config.hard_negatives, "the step benchmark reads the document's other units as negatives: training.hard_negatives must be true");
    anyhow::ensure!(!doc.ids.is_empty() && queries.iter().all(|&q| q < doc.queries.len()), "the document holds no token ids or those queries");
    let device = Default::default();
    let encoder = StepEncoder::of(tune, config)?;
    let dim = tune.bert.embeddings.word_embeddings.weight.dims()[1];
    let model = arbor_models::dense::DenseModel::new(dim, Some(tune.bert.clone()), &device);
    let mut optim = crate::adamw::init(&config.schedule);
    let mut model = Some(model);
    measure::<B>(steps, &device, |first| {
        let now = model.take().expect("each step puts the model back");
        let vectors = Vectors::step(Some(&encoder), now.encoder.as_ref());
        let (loss, _) = plain_loss(&now, &vectors, config, &[Part { doc, queries }], None, &device);
        let value = first.then(|| loss.clone().into_scalar().elem::<f32>());
        let mut grads = loss.backward();
        let params = GradientsParams::from_module(&mut grads, &now);
        model = Some(optim.step(config.lr_encoder, now, params));
        Ok(value)
    })
}

/// Times `steps` steps after one untimed warm-up: `step(first)` runs one (its loss returned when `first`,
/// the step at the pretrained weights), the device waited for after each (the CPU backends compute
/// eagerly; a GPU's queue is waited for); the peak memory is counted from the first step on.
pub(crate) fn measure<B: Backend>(
    steps: usize,
    device: &B::Device,
    mut step: impl FnMut(bool) -> anyhow::Result<Option<f32>>,
) -> anyhow::Result<StepTiming> {
    let mut first_loss = None;
    let mut ms = Vec::with_capacity(steps);
    reset_peak_rss();
    for n in 0..=steps {
        let start = Instant::now();
        let loss = step(first_loss.is_none())?;
        first_loss = first_loss.or(loss);
        B::sync(device).map_err(|e| anyhow::anyhow!("the device failed: {e:?}"))?;
        if n > 0 {
            ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok(StepTiming { ms, first_loss: first_loss.context("the first step gave no loss")?, peak_rss_mib: peak_rss_mib() })
}

/// Lets the kernel count the peak resident memory afresh (Linux's `clear_refs`; nothing elsewhere).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident memory (since the last reset, if any), in MiB (Linux's `VmHWM`; `None`
/// elsewhere).
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

#[cfg(test)]
mod tests {
    use burn::backend::Autodiff;

    use super::*;
    use arbor_models::DefaultBackend;

    /// The fixed batch is the step's own: a window of two of the fixture document's five units, the other
    /// three frozen; positives and negatives name every unit once, and the first timed step's loss is the
    /// dense trainer's loss on that batch.
    #[test]
    fn the_fixed_batch_is_the_steps_batch_and_its_loss_the_trainers() {
        let crate::fixtures::Lease { docs, tune, ids, .. } = crate::fixtures::lease();
        let doc = &docs[0];
        let step_tokens = Some(ids[0].len() + ids[1].len());
        let queries: Vec<usize> = (0..doc.queries.len().min(2)).collect();
        let batch = FixedBatch::new(doc, &queries, step_tokens);
        assert_eq!(batch.window.len() + batch.frozen.len(), doc.units.len());
        assert!(batch.window.len() < doc.units.len(), "a window, not the document");
        let mut rows: Vec<usize> = batch.positives.iter().chain(&batch.negatives).copied().collect();
        rows.sort();
        rows.dedup();
        assert_eq!(rows, (0..doc.units.len()).collect::<Vec<_>>(), "every unit a candidate once (positives may repeat)");
        assert!(batch.positives.iter().all(|&p| p < batch.window.len()), "positives are always encoded");
        assert_eq!(batch.tokens(), batch.queries.iter().map(Vec::len).sum::<usize>() + batch.window.iter().map(Vec::len).sum::<usize>());
        let config = TrainConfig { batch_size: 2, step_tokens, freeze_encoder: false, ..TrainConfig::default() };
        let timing = time_steps::<Autodiff<DefaultBackend>>(&config, &tune, doc, &queries, 1).unwrap();
        let model =
            arbor_models::dense::DenseModel::new(tune.bert.embeddings.word_embeddings.weight.dims()[1], Some(tune.bert.clone()), &Default::default());
        let encoder = StepEncoder::new(&tune, None).unwrap();
        let vectors = Vectors::step(Some(&encoder), model.encoder.as_ref());
        let (loss, kept) = plain_loss(&model, &vectors, &config, &[Part { doc, queries: &queries }], None, &Default::default());
        assert_eq!(kept, batch.window.len());
        let loss: f32 = loss.into_scalar();
        assert!((timing.first_loss - loss).abs() < 1e-5, "{} against {loss}", timing.first_loss);
        assert_eq!(timing.ms.len(), 1);
        assert!(timing.ms[0] > 0.0);
    }

    /// One block of hidden 2 and feed-forward 4 over one row of 3 tokens: 8*3*4 + 4*3*2*4 + 4*9*2 = 264
    /// FLOPs forward; trained, three times that; two rows of 3 twice that; a frozen block once.
    #[test]
    fn step_flops_hand_checked() {
        let shape = Shape { layers: 1, hidden: 2, ffn: 4 };
        assert_eq!(step_flops(shape, 0, &[&[vec![0; 3]]]), 3.0 * 264.0);
        assert_eq!(step_flops(shape, 1, &[&[vec![0; 3]]]), 264.0);
        // Padded: a row of 1 beside a row of 3 costs as much as a row of 3.
        assert_eq!(step_flops(shape, 0, &[&[vec![0; 3], vec![0; 1]]]), 6.0 * 264.0);
        let two = Shape { layers: 2, ..shape };
        assert_eq!(step_flops(two, 1, &[&[vec![0; 3]]]), 4.0 * 264.0);
    }

    #[test]
    fn the_median_of_even_and_odd_counts() {
        let t = |ms: Vec<f64>| StepTiming { ms, first_loss: 0.0, peak_rss_mib: None }.median_ms();
        assert_eq!(t(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(t(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(t(vec![]).is_nan());
    }
}
