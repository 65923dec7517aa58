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
//! One document per step, documents shuffled each epoch, on the trainer skeleton ([`crate::skeleton`]:
//! AdamW at `lr_aggregation`, warmup, decay, clipping, checkpoints and resume, log.jsonl and TensorBoard);
//! the held-back documents' L_attn is logged every epoch.

use std::path::Path;

use arbor_losses::attention_structure_at_pairs;
use arbor_models::aggregator::{AggregationInit, HeadAggregator};
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Tensor, TensorData};

use crate::config::TrainConfig;
use crate::data::epoch_order;
use crate::skeleton::{self, Group, SelectBy, Step, Task};

/// One document's gold merge pairs and, at each, the symmetrised attention of every (layer, head):
/// `[pairs, layers * heads]` row-major (`SentenceEncoder::pair_attention`). L_attn reads nothing else of
/// the document's attention (`arbor_losses::attention_structure_at_pairs`).
pub struct AttentionDoc {
    pub pair_attention: Vec<f32>,
    pub pairs: usize,
}

/// Trains alpha over `train` (documents without gold pairs are skipped); returns the trained aggregator.
pub fn train<B: AutodiffBackend>(
    config: &TrainConfig,
    (layers, heads): (usize, usize),
    init: AggregationInit,
    train: &[AttentionDoc],
    holdout: &[AttentionDoc],
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<HeadAggregator<B::InnerBackend>> {
    config.check().map_err(anyhow::Error::msg)?;
    let docs: Vec<&AttentionDoc> = train.iter().filter(|d| d.pairs > 0).collect();
    anyhow::ensure!(!docs.is_empty(), "no training document has a gold merge pair: check training.split and merge_pairs");
    let model = HeadAggregator::<B>::new(layers, heads, init, &Default::default());
    let groups = [Group { name: "aggregation", lr: config.lr_aggregation, params: |grads, model| GradientsParams::from_module(grads, model) }];
    let mut task = HeadWeights { docs, holdout, planes: layers * heads, eps: config.eps, seed: config.schedule.seed };
    let schedule = config.schedule_over(Task::<B>::steps_per_epoch(&task));
    Ok(skeleton::train(&mut task, model, &groups, &schedule, run_dir, progress)?.valid())
}

struct HeadWeights<'a> {
    docs: Vec<&'a AttentionDoc>,
    holdout: &'a [AttentionDoc],
    planes: usize,
    eps: f64,
    seed: u64,
}

impl<B: AutodiffBackend> Task<B> for HeadWeights<'_> {
    type Model = HeadAggregator<B>;

    fn steps_per_epoch(&self) -> usize {
        self.docs.len()
    }

    fn step(&mut self, model: &HeadAggregator<B>, step: usize) -> anyhow::Result<Step<B>> {
        let (epoch, at) = (step / self.docs.len(), step % self.docs.len());
        let doc = self.docs[epoch_order(self.docs.len(), self.seed, epoch)[at]];
        let terms = vec![("loss/attn", loss(model, doc, self.planes, self.eps))];
        Ok(Step { terms, scalars: Vec::new(), context: format!("{} gold pairs", doc.pairs) })
    }

    fn monitor(&self, model: &HeadAggregator<B>) -> Vec<(&'static str, f64)> {
        vec![("head_weight_entropy", entropy(model))]
    }

    /// Mean L_attn over the held-back documents that have gold pairs.
    fn evaluate(&self, model: &HeadAggregator<B::InnerBackend>) -> Vec<(&'static str, f64)> {
        let losses: Vec<f64> = self
            .holdout
            .iter()
            .filter(|d| d.pairs > 0)
            .map(|d| f64::from(loss(model, d, self.planes, self.eps).into_scalar().elem::<f32>()))
            .collect();
        if losses.is_empty() {
            return Vec::new();
        }
        vec![("eval/attn", losses.iter().sum::<f64>() / losses.len() as f64)]
    }

    fn select_by(&self) -> Option<SelectBy> {
        Some(SelectBy { figure: "eval/attn", higher_is_better: false })
    }
}

/// The aggregator of a finished run in `run_dir`, if it has finished.
pub fn finished<B: Backend>((layers, heads): (usize, usize), run_dir: &Path) -> anyhow::Result<Option<HeadAggregator<B>>> {
    skeleton::finished(HeadAggregator::<B>::new(layers, heads, AggregationInit::Uniform, &Default::default()), run_dir)
}

/// L_attn of one document under the model's head weights.
fn loss<B: Backend>(model: &HeadAggregator<B>, doc: &AttentionDoc, planes: usize, eps: f64) -> Tensor<B, 1> {
    let w = model.head_weights();
    let s = Tensor::from_data(TensorData::new(doc.pair_attention.clone(), [doc.pairs, planes]), &w.device());
    attention_structure_at_pairs(w.reshape([planes]), s, eps)
}

/// Entropy of the (layer, head) weights, in nats: log(L H) when uniform, 0 when one head has all.
pub fn entropy<B: Backend>(model: &HeadAggregator<B>) -> f64 {
    let w = model.head_weights().into_data().convert::<f32>().to_vec::<f32>().expect("f32");
    -w.iter().filter(|&&x| x > 0.0).map(|&x| f64::from(x) * f64::from(x).ln()).sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Schedule;
    use arbor_models::DefaultBackend;
    use burn::backend::Autodiff;

    type A = Autodiff<DefaultBackend>;

    /// Two heads; at the one gold pair, head 0 attends 0.9 and head 1 0.1.
    fn doc() -> AttentionDoc {
        AttentionDoc { pair_attention: vec![0.9, 0.1], pairs: 1 }
    }

    #[test]
    fn training_moves_the_weight_to_the_head_that_links_gold_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let config = TrainConfig {
            schedule: Schedule { epochs: 40, checkpoint_every: 7, warmup_fraction: 0.0, ..Schedule::default() },
            lr_aggregation: 0.1,
            ..TrainConfig::default()
        };
        let docs = [doc(), doc()];
        let model = train::<A>(&config, (1, 2), AggregationInit::Uniform, &docs, &[doc()], dir.path(), &mut |_, _| {}).unwrap();
        let w = model.head_weights().into_data().to_vec::<f32>().unwrap();
        assert!(w[0] > 0.8, "{w:?}");
        assert!(entropy(&model) < 2f64.ln());
        let log = std::fs::read_to_string(dir.path().join("log.jsonl")).unwrap();
        assert_eq!(log.lines().filter(|l| l.contains("loss/attn")).count(), 80);
        assert_eq!(log.lines().filter(|l| l.contains("eval/attn")).count(), 40);
        // A finished run is read back as it was.
        let back = finished::<DefaultBackend>((1, 2), dir.path()).unwrap().expect("finished");
        assert_eq!(back.head_weights().into_data(), model.head_weights().into_data());
        // Without gold pairs there is nothing to learn from.
        let none = [AttentionDoc { pair_attention: vec![], pairs: 0 }];
        assert!(train::<A>(&config, (1, 2), AggregationInit::Uniform, &none, &[], tempfile::tempdir().unwrap().path(), &mut |_, _| {}).is_err());
    }
}
