//! Training settings of SproutRAG (and of its matched dense control), in the experiment file: the shared
//! [`Schedule`] and SproutRAG's own rates and terms. Defaults are the public SproutRAG reference
//! implementation's: 3 epochs, batch 32, lr 1e-3 for the aggregation weights, warmup 5 %, clipping 1.0,
//! tau 0.05, lambda 0.1. The held-out documents are the run's
//! validation split (`data.validation` in the experiment), never a test document.

use arbor_datasets::merge_pairs::MergePairs;
use arbor_models::bert::Precision;
use serde::{Deserialize, Serialize};

pub use crate::negatives::Negatives;
pub use crate::schedule::Schedule;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Documents of this split train; the validation split's are held out, scored after every epoch, and
    /// choose the epoch whose model is kept.
    pub split: String,
    /// Replaced by the validation split: kept only to say so when an old experiment file sets it.
    #[serde(default, deserialize_with = "removed", skip_serializing)]
    pub holdout_docs: Option<Removed>,
    /// Epochs, seed, warmup, weight decay, clipping, checkpoints, early stopping.
    pub schedule: Schedule,
    /// Queries per step and document (one document a step by default: the others' units are its negatives).
    pub batch_size: usize,
    /// Documents a step of SproutRAG's joint training (and its dense control) reads (issue 62): that many
    /// batches of one document each ([`crate::data::epoch_steps`]), the SLLM over each document, L_ret
    /// over the units of them all (every other document's units are in-batch negatives), L_attn and
    /// L_node per document. 1: one document a step, the paper's step.
    #[serde(skip_serializing_if = "is_one")]
    pub docs_per_step: usize,
    /// Weight of the document term (issue 62's document level, trained): each query of a step against the
    /// step's documents, each a document vector (the mean of its SLLM unit embeddings), its own document
    /// the positive; needs `docs_per_step` of at least 2. 0 is off.
    #[serde(skip_serializing_if = "is_zero")]
    pub doc_loss: f64,
    /// AdamW learning rate of the HeadAggregator's alpha.
    pub lr_aggregation: f64,
    /// AdamW learning rate of the modules trained from scratch (SentenceVAE, SLLM).
    pub lr_new: f64,
    /// The pretrained encoder stays frozen and its unit vectors are computed once (the CPU mode);
    /// `false` fine-tunes it with the rest at `lr_encoder` (every step runs it over a whole document:
    /// meant for a GPU).
    pub freeze_encoder: bool,
    /// AdamW learning rate of the pretrained encoder when it is fine-tuned (the reference: 2e-5).
    pub lr_encoder: f64,
    /// InfoNCE temperature.
    pub tau: f64,
    /// Weight of L_attn.
    pub lambda: f64,
    /// Weight of L_node (`arbor_losses::node_contrastive`: per query, the smallest tree node covering its
    /// gold against that node's ancestors and the siblings on its path; needs `attention: Sllm`); 0 is off.
    #[serde(skip_serializing_if = "is_zero")]
    pub node_loss: f64,
    /// Weight of the VAE's KL term (reconstruction is always on when there is a VAE).
    pub beta: f64,
    /// Clamp inside L_attn's log.
    pub eps: f64,
    /// The pairs L_attn pulls together: `SameParagraph` or `SameSection` (adjacent units), or `Evidence`
    /// (consecutive units sharing a gold snippet of a training query).
    pub merge_pairs: MergePairs,
    /// Other units of the query's document are InfoNCE negatives besides the in-batch ones (`negatives:
    /// InDocument`).
    pub hard_negatives: bool,
    /// Where negatives come from: `InDocument` (one document a step, its units the negatives),
    /// `Corpus((mine: Bm25 | Encoder | Random, per_query, skip, top, margin))`, batches across documents
    /// with negatives mined from the whole training split (the dense trainer), or `Mined((..))`, one
    /// document a step with negatives mined from the other training documents besides its units (the
    /// dense trainer and SproutRAG's joint step) ([`crate::negatives`]).
    #[serde(default, skip_serializing_if = "Negatives::is_in_document")]
    pub negatives: Negatives,
    /// How the held-out queries are read to choose the epoch: `Documents` (the default), each among its
    /// own document's units; `Corpus`, each among every unit of the validation documents, as a corpus-scope
    /// evaluation ranks them ([`HeldOut`], read by [`crate::objective::flat_on_held_out`]).
    #[serde(default, skip_serializing_if = "HeldOut::is_documents")]
    pub validation: HeldOut,
    /// GradCache ([`crate::grad_cache`]): with the encoder fine-tuned, a step embeds every query and unit
    /// it reads this many at a time without a graph, takes the loss's gradient with respect to those
    /// vectors, then replays each chunk with it: the plain step's gradient, in the memory of one chunk, so
    /// `batch_size` (and `docs_per_step`, SproutRAG's whole documents) is bounded by time, not memory. The
    /// dense trainer's steps (across documents or within them) and SproutRAG's joint step, on arbor's own
    /// loop. `None`: the plain step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grad_cache: Option<usize>,
    /// With the encoder fine-tuned, a step runs it over at most this many word pieces of its document:
    /// the batch's positives, then the units nearest its queries by the frozen vectors (`crate::window`).
    /// Both SproutRAG's SLLM and the dense control still score the whole document, its other units by their
    /// frozen vectors, with no gradient. `None`: every unit (the whole-document step).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_tokens: Option<usize>,
    /// With the encoder fine-tuned, its embeddings and first this many transformer blocks keep their
    /// pretrained weights: a step runs them forward only in the CPU kernel and back-propagates through
    /// the blocks above (`arbor_models::bert::FrozenLayers`). `None`: every block and the embeddings train.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frozen_layers: Option<usize>,
    /// Train on a sample of this many of the split's queries, drawn by `schedule.seed` (a point of a
    /// learning curve; samples of one seed are nested). `None`: every query of the split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub train_queries: Option<usize>,
    /// Each training runs at least this many steps (more epochs than `schedule.epochs` on a small split):
    /// what the control of a trainer with such a floor reads (SmartChunk's planner's `min_steps`). `None`:
    /// `schedule.epochs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_steps: Option<usize>,
    /// The fine-tuned encoder's arithmetic in a step: `F32` (the default) or `Bf16`, bf16 autocast with
    /// float32 master weights and loss (`arbor_models::bert::Precision`; the CUDA build only).
    #[serde(default, skip_serializing_if = "Precision::is_f32")]
    pub precision: Precision,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            split: "train".into(),
            holdout_docs: None,
            schedule: Schedule::default(),
            batch_size: 32,
            docs_per_step: 1,
            doc_loss: 0.0,
            lr_aggregation: 1e-3,
            lr_new: 1e-4,
            freeze_encoder: true,
            lr_encoder: 2e-5,
            tau: 0.05,
            lambda: 0.1,
            node_loss: 0.0,
            beta: 0.0,
            eps: 1e-6,
            merge_pairs: MergePairs::SameParagraph,
            hard_negatives: true,
            negatives: Negatives::InDocument,
            validation: HeldOut::Documents,
            grad_cache: None,
            step_tokens: None,
            frozen_layers: None,
            train_queries: None,
            min_steps: None,
            precision: Precision::F32,
        }
    }
}

impl TrainConfig {
    pub fn check(&self) -> Result<(), String> {
        if self.holdout_docs.is_some() {
            return Err("training.holdout_docs is gone: the held-out documents are now the validation split, carved from \
                 `train` by document and collection: delete holdout_docs and set `data: (..., validation: Some((fraction: 0.2, \
                 seed: 0)))` (the default)"
                .into());
        }
        self.schedule.check()?;
        if self.batch_size == 0 {
            return Err("training.batch_size must be at least 1".into());
        }
        if self.docs_per_step == 0 {
            return Err("training.docs_per_step must be at least 1 (1: one document a step)".into());
        }
        if !(self.doc_loss >= 0.0) {
            return Err(format!("training.doc_loss must be 0 (off) or positive, got {}", self.doc_loss));
        }
        if self.doc_loss > 0.0 && self.docs_per_step < 2 {
            return Err("training.doc_loss ranks a query's document among the step's documents: it needs docs_per_step of at least 2".into());
        }
        if self.docs_per_step > 1 && self.negatives.corpus().is_some() {
            return Err("training.docs_per_step groups one-document batches; negatives: Corpus(..) already draws each batch across                  documents: set one"
                .into());
        }
        if self.docs_per_step > 1 && self.schedule.devices.is_some() {
            return Err("training.docs_per_step is read by arbor's own loop, not by the Learner over schedule.devices: set one".into());
        }
        if !(self.node_loss >= 0.0) {
            return Err(format!("training.node_loss must be 0 (off) or positive, got {}", self.node_loss));
        }
        if self.train_queries == Some(0) {
            return Err("training.train_queries must be at least 1 (or None: every query of the split)".into());
        }
        if self.step_tokens == Some(0) {
            return Err("training.step_tokens must be at least 1 (or None: the whole document)".into());
        }
        if self.frozen_layers.is_some() && self.freeze_encoder {
            return Err("training.frozen_layers freezes part of a fine-tuned encoder: it needs freeze_encoder: false".into());
        }
        if !(self.tau > 0.0) {
            return Err(format!("training.tau must be positive, got {}", self.tau));
        }
        if let Some(corpus) = self.negatives.mining() {
            corpus.check()?;
            if self.schedule.devices.is_some() {
                return Err(
                    "training.negatives: mined negatives are drawn on arbor's own loop, not on the Learner over schedule.devices: set one".into()
                );
            }
        }
        match self.grad_cache {
            Some(0) => return Err("training.grad_cache: a chunk holds at least 1 input (or None: the plain step)".into()),
            Some(_) if self.freeze_encoder => {
                return Err("training.grad_cache caches the fine-tuned encoder's step: it needs freeze_encoder: false".into());
            }
            Some(_) if self.schedule.devices.is_some() => {
                return Err("training.grad_cache is read by arbor's own loop, not by the Learner over schedule.devices: set one".into());
            }
            _ => {}
        }
        if !self.precision.is_f32() && self.freeze_encoder {
            return Err("training.precision sets the fine-tuned encoder's arithmetic: it needs freeze_encoder: false".into());
        }
        if self.min_steps.is_some() && self.schedule.devices.is_some() {
            return Err("training.min_steps is read by arbor's own loop, not by the Learner over schedule.devices: set one".into());
        }
        if self.schedule.steps.is_some() && self.schedule.devices.is_some() {
            return Err("schedule.steps is read by arbor's own loop, not by the Learner over schedule.devices: set one".into());
        }
        Ok(())
    }

    /// How a label names the documents a step reads (`None`: one, the paper's step).
    pub fn describe_docs_per_step(&self) -> Option<String> {
        (self.docs_per_step > 1).then(|| format!("{} documents a step", self.docs_per_step))
    }

    /// How a label names GradCache (`None`: the plain step).
    pub fn describe_grad_cache(&self) -> Option<String> {
        self.grad_cache.map(|k| format!("GradCache chunks of {k}"))
    }

    /// The schedule over `per_epoch` steps an epoch: `schedule.epochs`, or more to reach `min_steps`; with
    /// `schedule.steps`, as many epochs as those steps begin.
    pub fn schedule_over(&self, per_epoch: usize) -> Schedule {
        match self.schedule.steps {
            Some(steps) => Schedule { epochs: steps.div_ceil(per_epoch.max(1)), ..self.schedule.clone() },
            None => self.schedule.at_least(self.min_steps.unwrap_or(0), per_epoch),
        }
    }
}

/// A setting that was removed: reading it, whatever its value, is recorded so that `check` can say what
/// replaced it (an old experiment file gets that sentence, not a bare "unknown field").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Removed;

/// Deserialises a removed setting's value, whatever it is.
pub fn removed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Removed>, D::Error> {
    serde::de::IgnoredAny::deserialize(d)?;
    Ok(Some(Removed))
}

/// Settings added after runs were cached stay out of their serialised form at their default, so the cache
/// keys of earlier runs still hold.
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_one(x: &usize) -> bool {
    *x == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A floor of steps adds epochs on a small split and none on a large one.
    #[test]
    fn min_steps_adds_epochs_up_to_the_floor() {
        let config = TrainConfig { min_steps: Some(300), schedule: Schedule { epochs: 3, ..Schedule::default() }, ..TrainConfig::default() };
        assert_eq!(config.schedule_over(7).epochs, 43, "ceil(300 / 7)");
        assert_eq!(config.schedule_over(500).epochs, 3);
        assert_eq!(TrainConfig::default().schedule_over(1).epochs, TrainConfig::default().schedule.epochs);
        let devices = TrainConfig { schedule: Schedule { devices: Some(vec![0, 0]), ..Schedule::default() }, ..config };
        assert!(devices.check().unwrap_err().contains("min_steps"));
    }

    /// GradCache caches a fine-tuned encoder's step on arbor's own loop, whatever its batches: within
    /// documents (SproutRAG's joint step, the dense control's) or across them.
    #[test]
    fn grad_cache_needs_a_fine_tuned_encoder_on_arbors_own_loop() {
        let cached = TrainConfig { freeze_encoder: false, grad_cache: Some(4), docs_per_step: 2, ..TrainConfig::default() };
        cached.check().unwrap();
        let corpus = crate::negatives::Negatives::Corpus(crate::negatives::CorpusNegatives::default());
        TrainConfig { negatives: corpus, docs_per_step: 1, ..cached.clone() }.check().unwrap();
        let frozen = TrainConfig { freeze_encoder: true, ..cached.clone() };
        assert!(frozen.check().unwrap_err().contains("freeze_encoder: false"));
        let learner = TrainConfig { schedule: Schedule { devices: Some(vec![0]), ..Schedule::default() }, docs_per_step: 1, ..cached.clone() };
        assert!(learner.check().unwrap_err().contains("grad_cache is read by arbor's own loop"));
        assert!(TrainConfig { grad_cache: Some(0), ..cached }.check().unwrap_err().contains("at least 1"));
    }
}

/// How a trainer reads its held-out queries (`training.validation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum HeldOut {
    /// Each query among its own document's units (the scope `QueryDocuments` evaluates in).
    #[default]
    Documents,
    /// Each query among every unit of the held-out documents (the scope `Corpus` evaluates in): the
    /// reading also pays for finding the right document.
    Corpus,
}

impl HeldOut {
    pub fn is_documents(&self) -> bool {
        *self == HeldOut::Documents
    }
}
