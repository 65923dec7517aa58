//! arbor-eval: retrieval over leaf units, the metric contract, and run reports. Plain Rust on f32
//! slices: no model and no autodiff here, so every retriever and metric can be tested on hand-made data.
//! Its rooms:
//!
//! - [`index`]: the shared vocabulary: [`LeafIndex`] (a corpus's leaf units and token starts),
//!   [`Retriever`] (anything that ranks [`Item`]s, sets of spans, for a [`QueryInput`]), [`Scope`].
//! - [`retrievers`]: one retriever per method family: flat dense and BM25, fusion (RRF), beam search and
//!   the collapsed tree over SproutRAG trees, RAPTOR, RSE, the heading hierarchy, SmartChunk's levels.
//! - [`structures`]: what retrievers search: SproutRAG's tree, SmartChunk's levels, the chunkers (token
//!   windows, semantic chunks), RAPTOR's Gaussian mixtures, the node targets of L_node.
//! - [`formats`]: trees, RAPTOR trees and vector matrices in versioned binary formats, written and read
//!   back through arbor-files (atomic writes and checksums).
//! - [`scoring`]: the metrics (character IE, the reference code's id readings, ...), the token budget, the
//!   runner that scores one method on every query, paired statistics and the report.

pub mod formats;
pub mod index;
pub mod retrievers;
pub mod scoring;
pub mod structures;

pub use index::{Item, LeafIndex, NodeRef, QueryInput, Retriever, Scope};
pub use scoring::metrics::{Metrics, QueryMetrics};
pub use scoring::report::{MethodResult, Report};
