//! What retrievers search, built per document: [`tree`] (SproutRAG's attention-guided binary tree with
//! progressive embeddings; [`linkage`]: single, average, complete or adjacent merging; [`tree_shape`]:
//! its depth, balance and contiguity), [`levels`] (SmartChunk's multi-level chunks), [`chunkers`] (token windows,
//! sentence packing, semantic chunks), [`gmm`] (RAPTOR's clustering), [`node_targets`] (what L_node reads off
//! a tree).

pub mod chunkers;
pub mod gmm;
pub mod levels;
pub mod linkage;
pub mod node_targets;
pub mod tree;
pub mod tree_shape;
