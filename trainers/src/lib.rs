//! arbor-trainers: training loops, with the bookkeeping a research run needs (ARCHITECTURE.md, "trainers").
//!
//! - [`skeleton::train`]: the one training loop every trainer runs on (a [`skeleton::Task`] per trainer).
//! - [`learner::fit`]: burn-train's Learner for the plain supervised trainers (compressor, planner SFT),
//!   with atomic checkpoints, arbor's logs and progress bar, and the NaN stop.
//! - [`sproutrag::train`]: SproutRAG's joint training (InfoNCE + lambda L_attn + VAE + L_node), the encoder
//!   frozen or fine-tuned.
//! - [`dense::train`]: the matched control of a trained method: plain dense retrieval on the same
//!   queries, batches and epochs, InfoNCE alone.
//! - [`objective`]: what those two share: L_ret and the held-out flat reading that chooses the epoch.
//! - [`head_weights::train`]: the (layer, head) weights alone, on L_attn over fixed (token) attention.
//! - [`compressor::train`]: SmartChunk's Chunk Compression Encoder on L_comp.
//! - [`planner::train`]: SmartChunk's planner by SFT, GRPO, SFT + GRPO or STITCH (Table 5).
//! - [`reranker::train`]: the cross-encoder reranker on L_rank (SproutRAG's reranking stage).
//! - [`rerank_control::train`]: its matched control, a bi-encoder on the reranker's own batches, groups,
//!   schedule, rate and trainable blocks.
//! - [`stitch::Stitch`]: STITCH's routing of a query (vanilla, hinted, imitation; SmartChunk, Algorithm 2).
//! - [`adamw`]: the optimizer, Burn's AdamW with its gradient clipping, fused into one pass on the CPU.
//! - [`checkpoint`]: model and optimizer states written atomically, committed by `state.json` with their
//!   digests and the best epoch on validation.
//! - [`logger::Logger`]: `log.jsonl` and TensorBoard event files.
//! - [`schedule::Schedule`]: the training contract every trainer's config nests (epochs, seed, warmup,
//!   weight decay, clipping, checkpoints, early stopping).
//! - [`config::TrainConfig`], [`data`]: SproutRAG's settings and the per-document batches.
//! - [`encoder`]: where a trainer's pooled vectors come from (frozen, fine-tuned whole or above
//!   `frozen_layers`, the inference kernel for validation).
//! - [`parallel`]: the dense control's training and SproutRAG's joint training on burn-train's Learner,
//!   data parallel over `schedule.devices` (the compressor and the planner's SFT reach the Learner
//!   through [`learner`]).
//! - [`grad_cache`]: GradCache, a contrastive step over a batch larger than memory with the plain step's
//!   gradient (the dense trainer's corpus-wide step).
//! - [`negatives`]: where a query's negatives come from: its own document, or mined from the whole
//!   training split with batches across documents (false negatives filtered).
//! - [`window`]: the sampled step's units (positives, then the nearest negatives within a token budget).

pub mod adamw;
pub mod bench;
pub mod checkpoint;
pub mod compressor;
pub mod config;
pub mod data;
pub mod dense;
pub mod encoder;
#[cfg(test)]
mod fixtures;
pub mod grad_cache;
pub mod head_weights;
pub mod learner;
pub mod logger;
pub mod negatives;
pub mod objective;
pub mod parallel;
pub mod planner;
pub mod rerank_control;
pub mod reranker;
pub mod schedule;
pub mod skeleton;
pub mod sproutrag;
pub mod stitch;
pub mod strategy;
pub mod window;
