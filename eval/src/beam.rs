//! Hierarchical beam search over a SproutRAG tree (SproutRAG, Section 3, `SproutRAG_Retrieve`):
//!
//! ```text
//! beam = [root]; V = {}
//! while beam is not empty:
//!     children = union of Child(v) for v in beam        (leaves have none)
//!     beam     = Top_b(children, cosine(q, children))
//!     V        = V ∪ beam
//! C = {v in V | cosine(q, v) >= delta}                 (strategy Threshold; Visited keeps all of V)
//! return Top_k(C, k)
//! ```
//!
//! Node embeddings are progressive (means of their children, not unit-norm), so scores are true cosines.
//! [`collapsed`] ranks every node of the tree flat (RAPTOR's collapsed tree), the ablation.

use serde::{Deserialize, Serialize};

use crate::index::top_k;
use crate::tree::Tree;

/// Which visited nodes are candidates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// Visited nodes whose cosine with the query is at least `delta`.
    #[default]
    Threshold,
    /// Every visited node.
    Visited,
}

/// Beam-search settings (the reference implementation's defaults: b = 5, delta = 0.0, top_k = 10).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BeamConfig {
    pub beam_width: usize,
    pub delta: f32,
    pub strategy: Strategy,
}

impl Default for BeamConfig {
    fn default() -> Self {
        BeamConfig { beam_width: 5, delta: 0.0, strategy: Strategy::Threshold }
    }
}

/// Cosine similarity; 0 when either vector is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na.sqrt() * nb.sqrt()) }
}

/// The top `k` nodes found by beam search, best first, as (node, cosine).
pub fn beam_search(tree: &Tree, query: &[f32], config: &BeamConfig, k: usize) -> Vec<(usize, f32)> {
    let score = |v: usize| cosine(query, tree.embedding(v));
    let mut beam = vec![tree.root()];
    let mut visited: Vec<(usize, f32)> = Vec::new();
    loop {
        let children: Vec<(usize, f32)> =
            beam.iter().filter_map(|&v| tree.children(v)).flat_map(|(a, b)| [a, b]).map(|c| (c, score(c))).collect();
        if children.is_empty() {
            break;
        }
        let next = top_k(children.into_iter(), config.beam_width.max(1));
        beam = next.iter().map(|&(v, _)| v).collect();
        visited.extend(next);
    }
    let candidates = visited.into_iter().filter(|&(_, s)| config.strategy == Strategy::Visited || s >= config.delta);
    top_k(candidates, k)
}

/// Every node ranked by cosine with the query (the collapsed tree), top `k`.
pub fn collapsed(tree: &Tree, query: &[f32], k: usize) -> Vec<(usize, f32)> {
    top_k((0..tree.num_nodes()).map(|v| (v, cosine(query, tree.embedding(v)))), k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::Similarity;
    use arbor_datasets::{DocSpan, Span};

    /// Four leaves with 2-d embeddings; merges (0,1) -> 4, (2,3) -> 5, (4,5) -> 6.
    fn tree() -> Tree {
        let leaves = (0..4).map(|i| DocSpan { doc: 0, span: Span::new(i, i + 1) }).collect();
        #[rustfmt::skip]
        let m = [
            0.0, 0.9, 0.1, 0.1,
            0.9, 0.0, 0.1, 0.1,
            0.1, 0.1, 0.0, 0.8,
            0.1, 0.1, 0.8, 0.0,
        ];
        let emb = [1.0, 0.0, 0.8, 0.6, 0.0, 1.0, -0.6, 0.8];
        Tree::build(leaves, &emb, 2, &Similarity { n: 4, values: &m })
    }

    #[test]
    fn beam_of_one_descends_the_best_branch_only() {
        let t = tree();
        assert_eq!(t.merges, vec![(0, 1), (2, 3), (4, 5)]);
        // Query along x: node 4 = (0.9, 0.3) beats node 5 = (-0.3, 0.9); then leaf 0 beats leaf 1.
        let got = beam_search(&t, &[1.0, 0.0], &BeamConfig { beam_width: 1, delta: -1.0, strategy: Strategy::Threshold }, 10);
        let nodes: Vec<usize> = got.iter().map(|&(v, _)| v).collect();
        assert_eq!(nodes, vec![0, 4]);
        assert!((got[1].1 - 0.9 / 0.9f32.hypot(0.3)).abs() < 1e-6);
    }

    #[test]
    fn wider_beams_visit_more_and_delta_filters() {
        let t = tree();
        let all = BeamConfig { beam_width: 2, delta: -1.0, strategy: Strategy::Threshold };
        let got: Vec<usize> = beam_search(&t, &[1.0, 0.0], &all, 10).iter().map(|&(v, _)| v).collect();
        // Level 1: 4 and 5; level 2: children {0,1,2,3}, top 2 = 0 and 1.
        assert_eq!(got, vec![0, 4, 1, 5]);
        let positive = BeamConfig { delta: 0.0, ..all };
        let got: Vec<usize> = beam_search(&t, &[1.0, 0.0], &positive, 10).iter().map(|&(v, _)| v).collect();
        assert_eq!(got, vec![0, 4, 1], "node 5 has a negative cosine");
        let visited = BeamConfig { delta: 0.99, strategy: Strategy::Visited, ..all };
        assert_eq!(beam_search(&t, &[1.0, 0.0], &visited, 10).len(), 4, "Visited ignores delta");
        assert_eq!(beam_search(&t, &[1.0, 0.0], &all, 2).len(), 2, "top k");
    }

    #[test]
    fn collapsed_ranks_every_node() {
        let t = tree();
        let got = collapsed(&t, &[0.0, 1.0], 3);
        assert_eq!(got.iter().map(|&(v, _)| v).collect::<Vec<_>>(), vec![2, 5, 6]);
    }
}
