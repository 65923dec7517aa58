//! arbor-models: Burn modules and their weight loading.
//!
//! - [`bert::Bert`]: a BERT-family encoder that loads a Hugging Face directory as it is and can hand back
//!   the attention probabilities of every layer and head.
//! - [`encoder::SentenceEncoder`]: sentence-transformers' embedding (the folder's pooling and prompts,
//!   [`pooling`] and [`pipeline`]; L2 norm, truncation), batched by length.
//! - [`compressor::Compressor`]: SmartChunk's Chunk Compression Encoder (a chunk's embedding from its parts').
//! - [`dense::DenseModel`]: the matched control of a trained method: plain dense retrieval, the encoder
//!   fine-tuned (or a linear map over its frozen vectors) on the same InfoNCE.
//! - [`planner::Planner`]: SmartChunk's planner, a small autoregressive policy that writes a level plan.
//! - [`reranker::CrossEncoder`]: a cross-encoder reranker (MiniLM trunk and a score head, query and unit
//!   as one input), the reranking stage of SproutRAG (Section 3).
//! - [`hub`]: where model files come from (a local directory, or the default all-MiniLM-L6-v2 fetched into
//!   `$ARBOR_HOME`).
//! - [`backend`]: the default backend (CPU) and the `cuda` feature.

pub mod aggregator;
pub mod backend;
pub mod bert;
pub mod compressor;
pub mod dense;
pub mod encoder;
pub mod error;
pub mod host;
pub mod hub;
pub mod pipeline;
pub mod planner;
pub mod pooling;
pub mod processor;
pub mod reranker;
pub mod save;
pub mod sentence_vae;
pub mod sllm;
pub mod sproutrag;
pub mod unit_attention;

// The tests of the public API (tests/integration/: parity with sentence-transformers, the reranker, token
// handling, unit attention) run inside the library's own test harness: a separate test crate would
// monomorphise Burn's generic kernels again in a release build (about 45 s of a clean CI build). They name
// the crate as a user does, through this alias.
#[cfg(test)]
extern crate self as arbor_models;
#[cfg(test)]
#[path = "../tests/integration/main.rs"]
mod integration;

pub use backend::{DefaultBackend, default_device};
pub use encoder::{EncoderConfig, SentenceEncoder};
pub use error::ModelError;
pub use hub::ModelSource;
