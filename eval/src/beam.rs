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
//! `max_leaves` (not in the paper, an ablation) keeps only candidates that cover at most that many
//! leaves, so large upper nodes still guide the descent but are not handed on.
//!
//! Node embeddings are progressive (means of their children, not unit-norm), so scores are true cosines.
//! [`collapsed`] ranks the nodes of the tree flat (RAPTOR's collapsed tree), the ablation; restricted to
//! the leaves or to the upper nodes it is RAPTOR's layer ablation (RAPTOR, Table 8).

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
    /// Candidates cover at most this many leaves (`None`: any node, as in the paper).
    pub max_leaves: Option<usize>,
}

impl Default for BeamConfig {
    fn default() -> Self {
        BeamConfig { beam_width: 5, delta: 0.0, strategy: Strategy::Threshold, max_leaves: None }
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
    let small = |v: usize| config.max_leaves.is_none_or(|m| tree.size(v) <= m);
    let candidates = visited.into_iter().filter(|&(v, s)| (config.strategy == Strategy::Visited || s >= config.delta) && small(v));
    top_k(candidates, k)
}

/// Which nodes the collapsed tree ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Layers {
    All,
    /// The units themselves (layer 0).
    Leaves,
    /// Every merged node, none of the units.
    Upper,
}

/// The nodes of `layers` ranked by cosine with the query (the collapsed tree), top `k`.
pub fn collapsed(tree: &Tree, query: &[f32], layers: Layers, k: usize) -> Vec<(usize, f32)> {
    let nodes = match layers {
        Layers::All => 0..tree.num_nodes(),
        Layers::Leaves => 0..tree.num_leaves(),
        Layers::Upper => tree.num_leaves()..tree.num_nodes(),
    };
    top_k(nodes.map(|v| (v, cosine(query, tree.embedding(v)))), k)
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
        let got = beam_search(&t, &[1.0, 0.0], &BeamConfig { beam_width: 1, delta: -1.0, ..Default::default() }, 10);
        let nodes: Vec<usize> = got.iter().map(|&(v, _)| v).collect();
        assert_eq!(nodes, vec![0, 4]);
        assert!((got[1].1 - 0.9 / 0.9f32.hypot(0.3)).abs() < 1e-6);
    }

    #[test]
    fn wider_beams_visit_more_and_delta_filters() {
        let t = tree();
        let all = BeamConfig { beam_width: 2, delta: -1.0, ..Default::default() };
        let got: Vec<usize> = beam_search(&t, &[1.0, 0.0], &all, 10).iter().map(|&(v, _)| v).collect();
        // Level 1: 4 and 5; level 2: children {0,1,2,3}, top 2 = 0 and 1.
        assert_eq!(got, vec![0, 4, 1, 5]);
        let positive = BeamConfig { delta: 0.0, ..all };
        let got: Vec<usize> = beam_search(&t, &[1.0, 0.0], &positive, 10).iter().map(|&(v, _)| v).collect();
        assert_eq!(got, vec![0, 4, 1], "node 5 has a negative cosine");
        let visited = BeamConfig { delta: 0.99, strategy: Strategy::Visited, ..all };
        assert_eq!(beam_search(&t, &[1.0, 0.0], &visited, 10).len(), 4, "Visited ignores delta");
        assert_eq!(beam_search(&t, &[1.0, 0.0], &all, 2).len(), 2, "top k");
        let leaves_only = BeamConfig { max_leaves: Some(1), ..all };
        let got: Vec<usize> = beam_search(&t, &[1.0, 0.0], &leaves_only, 10).iter().map(|&(v, _)| v).collect();
        assert_eq!(got, vec![0, 1], "nodes 4 and 5 guide the descent but cover two leaves each");
    }

    #[test]
    fn collapsed_ranks_the_nodes_of_its_layers() {
        let t = tree();
        let ids = |layers| collapsed(&t, &[0.0, 1.0], layers, 3).iter().map(|&(v, _)| v).collect::<Vec<_>>();
        assert_eq!(ids(Layers::All), vec![2, 5, 6]);
        assert_eq!(ids(Layers::Leaves), vec![2, 3, 1]);
        assert_eq!(ids(Layers::Upper), vec![5, 6, 4]);
    }
}
