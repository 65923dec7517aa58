//! arbor-trainers: the training loops (SproutRAG joint training, the SmartChunk compressor, the planner's
//! SFT / GRPO / STITCH), AdamW with separate learning rates, warmup, clipping, checkpoints that survive
//! a kill, TensorBoard and JSONL logs (DESIGN.md, "trainers").
//!
//! Nothing lives here yet: the SproutRAG issue brings the first loop.
