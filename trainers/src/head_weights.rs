//! Learning the (layer, head) weights alone over fixed attention: SproutRAG's aggregation (Section 2.2,
//! w = softmax(alpha), M = sym(sum w A)) trained with its attention-structure loss (Section 4.2),
//!
//! ```text
//! L_attn = -(1/|G|) sum_{(i,j) in G} log M_ij
//! ```
//!
//! on the attention source the public reference code uses: the frozen encoder's token attention pooled
//! into unit blocks. M never feeds the embeddings, so L_attn is the only term of the joint objective that
//! reaches alpha; with a frozen encoder, training alpha on L_attn alone is that objective's alpha part.
//! One document per step, documents shuffled each epoch; AdamW at `lr_aggregation` with warmup, decay
//! and clipping; checkpoints, `--resume`, log.jsonl and TensorBoard as in the joint trainer; the held-back
//! documents' L_attn is logged every epoch.

use std::path::Path;

use anyhow::bail;
use arbor_losses::attention_structure_at_pairs;
use arbor_models::DefaultBackend;
use arbor_models::aggregator::{AggregationInit, HeadAggregator};
use burn::backend::Autodiff;
use burn::module::{AutodiffModule, Module};
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamWConfig, GradientsParams, Optimizer};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use rand::SeedableRng;
use rand::seq::SliceRandom;

use crate::checkpoint;
use crate::config::TrainConfig;
use crate::logger::Logger;

type A = Autodiff<DefaultBackend>;

/// One document's gold merge pairs and, at each, the symmetrised attention of every (layer, head):
/// `[pairs, layers * heads]` row-major (`SentenceEncoder::pair_attention`). L_attn reads nothing else of
/// the document's attention (`arbor_losses::attention_structure_at_pairs`).
pub struct AttentionDoc {
    pub pair_attention: Vec<f32>,
    pub pairs: usize,
}

/// Trains alpha over `train` (documents without gold pairs are skipped); returns the trained aggregator.
#[allow(clippy::too_many_arguments)]
pub fn train(
    config: &TrainConfig,
    (layers, heads): (usize, usize),
    init: AggregationInit,
    train: &[AttentionDoc],
    holdout: &[AttentionDoc],
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<HeadAggregator<DefaultBackend>> {
    config.check().map_err(anyhow::Error::msg)?;
    let docs: Vec<&AttentionDoc> = train.iter().filter(|d| d.pairs > 0).collect();
    anyhow::ensure!(!docs.is_empty(), "no training document has a gold merge pair: check training.split and merge_pairs");
    let device = Default::default();
    let mut model = HeadAggregator::<A>::new(layers, heads, init, &device);
    let mut optim = AdamWConfig::new()
        .with_weight_decay(config.weight_decay)
        .with_grad_clipping(Some(GradientClippingConfig::Norm(config.grad_clip)))
        .init::<A, HeadAggregator<A>>();
    let ckpt_dir = run_dir.join("checkpoints");
    let mut start = 0;
    if let Some(state) = checkpoint::state(&ckpt_dir)? {
        model = model.load_record(checkpoint::load(&ckpt_dir, &state, "model", &device)?);
        optim = optim.load_record(checkpoint::load(&ckpt_dir, &state, "optim-aggregation", &device)?);
        start = state.step;
    }
    let total = docs.len() * config.epochs;
    let mut logger = Logger::open(run_dir, Some(start))?;
    for step in start..total {
        let (epoch, at) = (step / docs.len(), step % docs.len());
        let doc = docs[epoch_order(docs.len(), config.seed, epoch)[at]];
        let loss = loss(&model, doc, layers * heads, config.eps, &device);
        let value: f32 = loss.clone().into_scalar();
        if !value.is_finite() {
            bail!("step {}: loss term loss/attn is {value}", step + 1);
        }
        let factor = config.schedule(step, total);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(config.lr_aggregation * factor, model, grads);
        let done = step + 1;
        let entropy = entropy(&model.valid());
        logger.log(
            done,
            &[
                ("loss/attn", f64::from(value)),
                ("lr/aggregation", config.lr_aggregation * factor),
                ("head_weight_entropy", entropy),
                ("epoch", epoch as f64),
            ],
        )?;
        if done % docs.len() == 0 && !holdout.is_empty() {
            logger.log(done, &[("eval/attn", holdout_loss(&model.valid(), config, holdout, (layers, heads)))])?;
        }
        if done % config.checkpoint_every == 0 || done == total {
            logger.flush()?;
            let files = vec![
                checkpoint::write_item::<A, _>(&ckpt_dir, "model", done, model.clone().into_record())?,
                checkpoint::write_item::<A, _>(&ckpt_dir, "optim-aggregation", done, optim.to_record())?,
            ];
            checkpoint::commit(&ckpt_dir, done, files, done == total)?;
        }
        progress(done, total);
    }
    logger.flush()?;
    Ok(model.valid())
}

/// The aggregator of a finished run in `run_dir`, if it has finished.
pub fn finished((layers, heads): (usize, usize), run_dir: &Path) -> anyhow::Result<Option<HeadAggregator<DefaultBackend>>> {
    let ckpt_dir = run_dir.join("checkpoints");
    let Some(state) = checkpoint::state(&ckpt_dir)?.filter(|s| s.complete) else { return Ok(None) };
    let device = Default::default();
    let model = HeadAggregator::<DefaultBackend>::new(layers, heads, AggregationInit::Uniform, &device);
    Ok(Some(model.load_record(checkpoint::load(&ckpt_dir, &state, "model", &device)?)))
}

/// The order documents are visited in during `epoch` (a function of the seed and the epoch only, so a
/// resumed run replays it).
fn epoch_order(n: usize, seed: u64, epoch: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(epoch as u64)));
    order
}

/// L_attn of one document under the model's head weights.
fn loss<B: Backend>(model: &HeadAggregator<B>, doc: &AttentionDoc, planes: usize, eps: f64, device: &B::Device) -> Tensor<B, 1> {
    let s = Tensor::from_data(TensorData::new(doc.pair_attention.clone(), [doc.pairs, planes]), device);
    attention_structure_at_pairs(model.head_weights().reshape([planes]), s, eps)
}

/// Mean L_attn over the held-back documents that have gold pairs.
fn holdout_loss(model: &HeadAggregator<DefaultBackend>, config: &TrainConfig, docs: &[AttentionDoc], (layers, heads): (usize, usize)) -> f64 {
    let device = Default::default();
    let losses: Vec<f64> =
        docs.iter().filter(|d| d.pairs > 0).map(|d| f64::from(loss(model, d, layers * heads, config.eps, &device).into_scalar())).collect();
    losses.iter().sum::<f64>() / losses.len().max(1) as f64
}

/// Entropy of the (layer, head) weights, in nats: log(L H) when uniform, 0 when one head has all.
pub fn entropy(model: &HeadAggregator<DefaultBackend>) -> f64 {
    let w = model.head_weights().into_data().to_vec::<f32>().expect("f32");
    -w.iter().filter(|&&x| x > 0.0).map(|&x| f64::from(x) * f64::from(x).ln()).sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two heads; at the one gold pair, head 0 attends 0.9 and head 1 0.1.
    fn doc() -> AttentionDoc {
        AttentionDoc { pair_attention: vec![0.9, 0.1], pairs: 1 }
    }

    #[test]
    fn training_moves_the_weight_to_the_head_that_links_gold_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let config = TrainConfig { epochs: 40, lr_aggregation: 0.1, checkpoint_every: 7, warmup_fraction: 0.0, ..TrainConfig::default() };
        let docs = [doc(), doc()];
        let model = train(&config, (1, 2), AggregationInit::Uniform, &docs, &[doc()], dir.path(), &mut |_, _| {}).unwrap();
        let w = model.head_weights().into_data().to_vec::<f32>().unwrap();
        assert!(w[0] > 0.8, "{w:?}");
        assert!(entropy(&model) < 2f64.ln());
        let log = std::fs::read_to_string(dir.path().join("log.jsonl")).unwrap();
        assert_eq!(log.lines().filter(|l| l.contains("loss/attn")).count(), 80);
        assert_eq!(log.lines().filter(|l| l.contains("eval/attn")).count(), 40);
        // A finished run is read back as it was.
        let back = finished((1, 2), dir.path()).unwrap().expect("finished");
        assert_eq!(back.head_weights().into_data(), model.head_weights().into_data());
        // Without gold pairs there is nothing to learn from.
        let none = [AttentionDoc { pair_attention: vec![], pairs: 0 }];
        assert!(train(&config, (1, 2), AggregationInit::Uniform, &none, &[], tempfile::tempdir().unwrap().path(), &mut |_, _| {}).is_err());
    }
}
