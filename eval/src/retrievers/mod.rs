//! Retrievers, one per method family, each ranking items within a query's scope under the metric
//! contract (ARCHITECTURE.md): [`flat`] (dense cosine; [`prefilter`], the same search in two passes for a
//! large index; [`approximate`], through an approximate nearest-neighbour index at a million units), [`bm25`], [`fusion`] (reciprocal rank fusion),
//! [`beam`] and [`tree_retrieval`] (SproutRAG's hierarchical beam search and the collapsed tree),
//! [`raptor`], [`rse`] (Relevant Segment Extraction), [`hierarchy`] (parent expansion), [`level_retrieval`]
//! (SmartChunk's levels within a plan); [`document_level`] puts a level that chooses documents above any of
//! them.

pub mod approximate;
pub mod beam;
pub mod bm25;
pub mod document_level;
pub mod flat;
pub mod fusion;
pub mod hierarchy;
pub mod level_retrieval;
pub mod prefilter;
pub mod raptor;
pub mod rse;
pub mod tree_retrieval;
