//! Training SmartChunk's Chunk Compression Encoder (Section 4.3) on `L_comp = ||e_comp - e_gt||^2`: each
//! example is a chunk of the multi-level hierarchy, its parts' embeddings and the encoder's embedding of
//! its summary. Batches of `batch_size` chunks, shuffled each epoch; on the trainer skeleton
//! ([`crate::skeleton`]: AdamW, warmup and decay, clipping, checkpoints and resume, log.jsonl and
//! TensorBoard); the held-back chunks' L_comp is logged every epoch beside that of mean pooling, the
//! untrained compressor.

use std::path::Path;

use arbor_losses::compression_mse;
use arbor_models::compressor::{Compressor, CompressorConfig};
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Bool, ElementConversion, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::data::step_batch;
use crate::skeleton::{self, Group, Settings, Step, Task};

/// One chunk: its parts' embeddings (its leaf units', in text order) and its summary's embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressionExample {
    pub parts: Vec<Vec<f32>>,
    pub target: Vec<f32>,
}

/// The compressor's training settings (experiment file: `compressor.training`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressorTraining {
    pub epochs: usize,
    /// Chunks per step.
    pub batch_size: usize,
    pub lr: f64,
    pub seed: u64,
    pub warmup_fraction: f64,
    pub weight_decay: f32,
    pub grad_clip: f32,
    pub checkpoint_every: usize,
    /// The share of training chunks held back for the per-epoch evaluation.
    pub holdout_fraction: f64,
}

impl Default for CompressorTraining {
    fn default() -> Self {
        CompressorTraining {
            epochs: 3,
            batch_size: 32,
            lr: 1e-3,
            seed: 42,
            warmup_fraction: 0.05,
            weight_decay: 0.01,
            grad_clip: 1.0,
            checkpoint_every: 200,
            holdout_fraction: 0.1,
        }
    }
}

impl CompressorTraining {
    pub fn settings(&self) -> Settings {
        let s = self;
        Settings {
            epochs: s.epochs,
            checkpoint_every: s.checkpoint_every,
            warmup_fraction: s.warmup_fraction,
            weight_decay: s.weight_decay,
            grad_clip: s.grad_clip,
        }
    }
}

/// Trains a compressor on `train`; returns it without autodiff.
pub fn train<B: AutodiffBackend>(
    config: &CompressorTraining,
    model_config: &CompressorConfig,
    d_input: usize,
    train: &[CompressionExample],
    holdout: &[CompressionExample],
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<Compressor<B::InnerBackend>> {
    anyhow::ensure!(config.batch_size > 0, "compressor.training.batch_size must be at least 1");
    anyhow::ensure!(!train.is_empty(), "no chunk to train the compressor on");
    anyhow::ensure!(train.iter().chain(holdout).all(|e| !e.parts.is_empty()), "a compression example has no part");
    let device = Default::default();
    B::seed(&device, config.seed);
    let model = model_config.init::<B>(d_input, &device);
    let groups = [Group { name: "compressor", lr: config.lr, params: |g, m: &Compressor<B>| GradientsParams::from_module(g, m) }];
    let mut task = Compression { train, holdout, batch_size: config.batch_size, seed: config.seed };
    Ok(skeleton::train(&mut task, model, &groups, &config.settings(), run_dir, progress)?.valid())
}

/// The compressor of a finished run in `run_dir`, if it has finished.
pub fn finished<B: Backend>(model_config: &CompressorConfig, d_input: usize, run_dir: &Path) -> anyhow::Result<Option<Compressor<B>>> {
    skeleton::finished(model_config.init::<B>(d_input, &Default::default()), run_dir)
}

/// The compressed embeddings of chunks given by their parts, in order; `batch` chunks of similar part
/// counts at a time (little padding).
pub fn compress<B: Backend>(model: &Compressor<B>, chunks: &[&[Vec<f32>]], batch: usize) -> Vec<Vec<f32>> {
    let mut order: Vec<usize> = (0..chunks.len()).collect();
    order.sort_by_key(|&c| chunks[c].len());
    let mut out = vec![Vec::new(); chunks.len()];
    for group in order.chunks(batch.max(1)) {
        let parts: Vec<&[Vec<f32>]> = group.iter().map(|&c| chunks[c]).collect();
        let (parts, mask) = padded::<B>(&parts, &model.input.weight.device());
        let e = model.forward(parts, mask);
        let d = e.dims()[1];
        for (&c, v) in group.iter().zip(e.into_data().convert::<f32>().to_vec::<f32>().expect("f32").chunks(d)) {
            out[c] = v.to_vec();
        }
    }
    out
}

struct Compression<'a> {
    train: &'a [CompressionExample],
    holdout: &'a [CompressionExample],
    batch_size: usize,
    seed: u64,
}

impl<B: AutodiffBackend> Task<B> for Compression<'_> {
    type Model = Compressor<B>;

    fn steps_per_epoch(&self) -> usize {
        self.train.len().div_ceil(self.batch_size)
    }

    fn step(&mut self, model: &Compressor<B>, step: usize) -> anyhow::Result<Step<B>> {
        let (epoch, at, batch) = step_batch(self.train.len(), self.batch_size, self.seed, step);
        let batch: Vec<&CompressionExample> = batch.into_iter().map(|i| &self.train[i]).collect();
        let terms = vec![("loss/comp", loss(model, &batch))];
        Ok(Step { terms, scalars: Vec::new(), context: format!("batch {at} of epoch {epoch}") })
    }

    fn evaluate(&self, model: &Compressor<B::InnerBackend>) -> Vec<(&'static str, f64)> {
        if self.holdout.is_empty() {
            return Vec::new();
        }
        let batch: Vec<&CompressionExample> = self.holdout.iter().collect();
        let mse = loss(model, &batch).into_scalar().elem::<f64>();
        vec![("eval/comp", mse), ("eval/comp_mean_pooling", mean_pooling_mse(self.holdout))]
    }
}

/// L_comp of a batch of examples.
fn loss<B: Backend>(model: &Compressor<B>, batch: &[&CompressionExample]) -> Tensor<B, 1> {
    let device = model.input.weight.device();
    let parts: Vec<&[Vec<f32>]> = batch.iter().map(|e| e.parts.as_slice()).collect();
    let (x, mask) = padded::<B>(&parts, &device);
    let d = batch[0].target.len();
    let target =
        Tensor::from_data(TensorData::new(batch.iter().flat_map(|e| e.target.iter().copied()).collect::<Vec<_>>(), [batch.len(), d]), &device);
    compression_mse(model.forward(x, mask), target)
}

/// L_comp of mean pooling (the normalised mean of the parts: the untrained compressor), in plain f64.
pub fn mean_pooling_mse(examples: &[CompressionExample]) -> f64 {
    let total: f64 = examples
        .iter()
        .map(|e| {
            let mut mean = vec![0.0f64; e.target.len()];
            for p in &e.parts {
                mean.iter_mut().zip(p).for_each(|(m, &x)| *m += f64::from(x));
            }
            let norm = mean.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
            mean.iter().zip(&e.target).map(|(m, &t)| (m / norm - f64::from(t)).powi(2)).sum::<f64>()
        })
        .sum();
    total / examples.len().max(1) as f64
}

/// Chunks' parts padded to the longest: `[chunks, parts, d]` and the mask of real parts.
fn padded<B: Backend>(chunks: &[&[Vec<f32>]], device: &B::Device) -> (Tensor<B, 3>, Tensor<B, 2, Bool>) {
    let n = chunks.iter().map(|c| c.len()).max().unwrap_or(1);
    let d = chunks[0][0].len();
    let (mut x, mut mask) = (vec![0.0f32; chunks.len() * n * d], vec![false; chunks.len() * n]);
    for (b, parts) in chunks.iter().enumerate() {
        for (p, v) in parts.iter().enumerate() {
            x[(b * n + p) * d..(b * n + p + 1) * d].copy_from_slice(v);
            mask[b * n + p] = true;
        }
    }
    (Tensor::from_data(TensorData::new(x, [chunks.len(), n, d]), device), Tensor::from_data(TensorData::new(mask, [chunks.len(), n]), device))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_models::DefaultBackend;
    use burn::backend::Autodiff;
    use rand::{Rng, SeedableRng};

    /// Chunks of 2-5 random parts whose target is the part with the largest first coordinate: a
    /// selection mean pooling cannot make.
    fn examples(n: usize, seed: u64) -> Vec<CompressionExample> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let parts: Vec<Vec<f32>> = (0..rng.random_range(2..6))
                    .map(|_| {
                        let v: Vec<f32> = (0..8).map(|_| rng.random_range(-1.0f32..1.0)).collect();
                        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                        v.iter().map(|x| x / norm).collect()
                    })
                    .collect();
                let target = parts.iter().max_by(|a, b| a[0].total_cmp(&b[0])).unwrap().clone();
                CompressionExample { parts, target }
            })
            .collect()
    }

    #[test]
    fn training_lowers_the_held_out_loss_below_mean_pooling() {
        let dir = tempfile::tempdir().unwrap();
        let (train_set, holdout) = (examples(256, 1), examples(64, 2));
        let config = CompressorTraining { epochs: 30, batch_size: 32, lr: 3e-3, checkpoint_every: 100, ..CompressorTraining::default() };
        let model_config = CompressorConfig { layers: 1, heads: 2, d_model: 32, d_ff: 64 };
        let model = train::<Autodiff<DefaultBackend>>(&config, &model_config, 8, &train_set, &holdout, dir.path(), &mut |_, _| {}).unwrap();
        let before = mean_pooling_mse(&holdout);
        let parts: Vec<&[Vec<f32>]> = holdout.iter().map(|e| e.parts.as_slice()).collect();
        let after = compress(&model, &parts, 16)
            .iter()
            .zip(&holdout)
            .map(|(e, x)| e.iter().zip(&x.target).map(|(a, b)| f64::from(a - b).powi(2)).sum::<f64>())
            .sum::<f64>()
            / holdout.len() as f64;
        assert!(after < 0.6 * before, "held-out L_comp {after} vs mean pooling {before}");
        let log = std::fs::read_to_string(dir.path().join("log.jsonl")).unwrap();
        assert_eq!(log.lines().filter(|l| l.contains("eval/comp_mean_pooling")).count(), 30);
        let back = finished::<DefaultBackend>(&model_config, 8, dir.path()).unwrap().expect("finished");
        assert_eq!(compress(&back, &parts[..1], 1), compress(&model, &parts[..1], 1));
    }
}
