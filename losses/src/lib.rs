//! arbor-losses: the training objectives of SproutRAG and SmartChunk as pure functions of tensors, one
//! per file, each with its equation in its doc comment (DESIGN.md, "losses"): InfoNCE with in-batch
//! negatives and the attention-structure regulariser (SproutRAG, Section 4), the SentenceVAE
//! reconstruction + KL term, the compressor's MSE to summary embeddings and the GRPO / imitation
//! objectives (SmartChunk). No IO here, and no model: inputs are tensors.
//!
//! Nothing lives here yet: the SproutRAG issue brings the first losses.
