//! arbor-eval: retrieval over leaf units, the metric contract, and run reports. Plain Rust on f32
//! slices: no model and no autodiff here, so every retriever and metric can be tested on hand-made data.
//!
//! - [`Retriever`]: anything that ranks [`Item`]s (sets of spans) for a [`QueryInput`].
//! - [`flat::FlatDense`] (cosine over unit embeddings) and [`bm25::Bm25`] (keyword baseline), both over
//!   the same [`LeafIndex`] and [`Scope`].
//! - [`metrics`]: character precision / recall / IE@k, hit@k, nDCG@10, evidence recall, the reference
//!   code's id-based reading in a generous and a strict form (ARCHITECTURE.md, "The metric contract").
//! - [`budget`]: a token budget on what a method hands on, the same for every method.
//! - [`levels::Levels`]: SmartChunk's multi-level chunk hierarchy (unit to document), searched within a
//!   query's planned levels by [`level_retrieval::LevelRetriever`].
//! - [`runner::evaluate`]: one method over the queries; [`report`]: a run's report.md + report.json,
//!   written atomically, with [`stats`]' paired intervals and p-values on every difference it draws.

pub mod beam;
pub mod bm25;
pub mod budget;
pub mod chunkers;
pub mod files;
pub mod flat;
pub mod fusion;
pub mod gmm;
pub mod hierarchy;
pub mod index;
pub mod level_retrieval;
pub mod levels;
pub mod metrics;
pub mod node_targets;
pub mod raptor;
pub mod raptor_io;
pub mod report;
pub mod rse;
pub mod runner;
pub mod stats;
pub mod tree;
pub mod tree_io;
pub mod tree_retrieval;
pub mod vectors_io;

pub use index::{Item, LeafIndex, NodeRef, QueryInput, Retriever, Scope};
pub use metrics::{Metrics, QueryMetrics};
pub use report::{MethodResult, Report};
