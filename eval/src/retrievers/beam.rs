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
//! Every search returns `min(k, leaves)` nodes (the metric contract, ARCHITECTURE.md): when C holds fewer than
//! k, the rest follow it, ranked by cosine: the visited nodes below delta and the leaves the search did
//! not reach (with `max_leaves`, only those small enough). The paper's C alone is a prefix of the result.
//!
//! Node embeddings are progressive (means of their children, not unit-norm), so scores are true cosines.
//! [`collapsed`] ranks the nodes of the tree flat (RAPTOR's collapsed tree), the ablation; restricted to
//! the leaves or to the upper nodes it is RAPTOR's layer ablation (RAPTOR, Table 8).

use serde::{Deserialize, Serialize};

use crate::index::top_k;
use crate::retrievers::flat::dot;
use crate::structures::tree::Tree;

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

/// Cosine similarity; 0 when either vector is zero. Three SIMD-friendly dot products ([`dot`]) rather
/// than one loop of three dependent sums: beam search in every document of a corpus scores many nodes.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (na, nb) = (dot(a, a), dot(b, b));
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot(a, b) / (na.sqrt() * nb.sqrt()) }
}

/// The top `k` nodes found by beam search, best first, as (node, cosine).
pub fn beam_search(tree: &Tree, query: &[f32], config: &BeamConfig, k: usize) -> Vec<(usize, f32)> {
    let score = |v: usize| cosine(query, tree.embedding(v));
    let mut beam = vec![tree.root()];
    let mut visited: Vec<(usize, f32)> = Vec::new();
    loop {
        let children: Vec<(usize, f32)> = beam.iter().filter_map(|&v| tree.children(v)).flat_map(|(a, b)| [a, b]).map(|c| (c, score(c))).collect();
        if children.is_empty() {
            break;
        }
        let next = top_k(children.into_iter(), config.beam_width.max(1));
        beam = next.iter().map(|&(v, _)| v).collect();
        visited.extend(next);
    }
    let small = |v: usize| config.max_leaves.is_none_or(|m| tree.size(v) <= m);
    let (found, below): (Vec<(usize, f32)>, Vec<(usize, f32)>) =
        visited.iter().filter(|&&(v, _)| small(v)).partition(|&&(_, s)| config.strategy == Strategy::Visited || s >= config.delta);
    let mut out = top_k(found.into_iter(), k);
    if out.len() < k {
        let reached: std::collections::HashSet<usize> = visited.iter().map(|&(v, _)| v).collect();
        let unreached = (0..tree.num_leaves()).filter(|v| !reached.contains(v)).map(|v| (v, score(v)));
        out.extend(top_k(below.into_iter().chain(unreached), k - out.len()));
    }
    out
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

/// The nodes of `layers` ranked by cosine with the query (the collapsed tree), top `k`. The upper layers
/// of a tree of n leaves hold n - 1 nodes; when k is larger, the leaves follow them, ranked.
pub fn collapsed(tree: &Tree, query: &[f32], layers: Layers, k: usize) -> Vec<(usize, f32)> {
    let scored = |nodes: std::ops::Range<usize>| nodes.map(|v| (v, cosine(query, tree.embedding(v))));
    let (n, all) = (tree.num_leaves(), tree.num_nodes());
    match layers {
        Layers::All => top_k(scored(0..all), k),
        Layers::Leaves => top_k(scored(0..n), k),
        Layers::Upper => {
            let mut out = top_k(scored(n..all), k);
            if out.len() < k {
                out.extend(top_k(scored(0..n), k - out.len()));
            }
            out
        }
    }
}

/// Every leaf ranked by its own cosine mixed with its context in the tree, top `k`:
/// `(1 - weight) cos(q, leaf) + weight * mean over the leaf's ancestors a of cos(q, a)` (root included; a
/// one-leaf tree has no ancestor and keeps its own score). Not in the paper: arbor's reading of the tree
/// as score smoothing, the way passage retrieval mixes a passage's score with its document's. The items
/// handed on are leaves, so only the ranking differs from `Layers::Leaves`; `weight` 0 is that ranking.
pub fn in_context(tree: &Tree, query: &[f32], weight: f32, k: usize) -> Vec<(usize, f32)> {
    let (n, all) = (tree.num_leaves(), tree.num_nodes());
    let score: Vec<f32> = (0..all).map(|v| cosine(query, tree.embedding(v))).collect();
    // Sum and count of each node's ancestors' scores, from the root down (a parent's id is above its children's).
    let (mut above, mut count) = (vec![0f32; all], vec![0u32; all]);
    for p in (n..all).rev() {
        let (a, b) = tree.children(p).expect("parents have children");
        for c in [a, b] {
            above[c] = above[p] + score[p];
            count[c] = count[p] + 1;
        }
    }
    let mixed = (0..n).map(|l| match count[l] {
        0 => (l, score[l]),
        c => (l, (1.0 - weight) * score[l] + weight * above[l] / c as f32),
    });
    top_k(mixed, k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structures::tree::Similarity;
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
        Tree::build(leaves, &emb, 2, &Similarity::Dense { n: 4, values: &m })
    }

    #[test]
    fn beam_of_one_descends_the_best_branch_only() {
        let t = tree();
        assert_eq!(t.merges, vec![(0, 1), (2, 3), (4, 5)]);
        // Query along x: node 4 = (0.9, 0.3) beats node 5 = (-0.3, 0.9); then leaf 0 beats leaf 1.
        let got = beam_search(&t, &[1.0, 0.0], &BeamConfig { beam_width: 1, delta: -1.0, ..Default::default() }, 10);
        let nodes: Vec<usize> = got.iter().map(|&(v, _)| v).collect();
        // C = {0, 4}; the unreached leaves follow by cosine.
        assert_eq!(nodes, vec![0, 4, 1, 2, 3]);
        assert!((got[1].1 - 0.9 / 0.9f32.hypot(0.3)).abs() < 1e-6);
    }

    #[test]
    fn wider_beams_visit_more_and_delta_filters() {
        let t = tree();
        let all = BeamConfig { beam_width: 2, delta: -1.0, ..Default::default() };
        let got: Vec<usize> = beam_search(&t, &[1.0, 0.0], &all, 10).iter().map(|&(v, _)| v).collect();
        // Level 1: 4 and 5; level 2: children {0,1,2,3}, top 2 = 0 and 1; then the unreached leaves 2, 3.
        assert_eq!(got, vec![0, 4, 1, 5, 2, 3]);
        let positive = BeamConfig { delta: 0.0, ..all };
        let got: Vec<usize> = beam_search(&t, &[1.0, 0.0], &positive, 10).iter().map(|&(v, _)| v).collect();
        // Node 5 has a negative cosine: C = {0, 4, 1}; the rest follow by cosine (leaf 2: 0, node 5: -0.32,
        // leaf 3: -0.6).
        assert_eq!(got, vec![0, 4, 1, 2, 5, 3]);
        assert_eq!(beam_search(&t, &[1.0, 0.0], &positive, 3).iter().map(|&(v, _)| v).collect::<Vec<_>>(), vec![0, 4, 1]);
        let visited = BeamConfig { delta: 0.99, strategy: Strategy::Visited, ..all };
        let mut got: Vec<usize> = beam_search(&t, &[1.0, 0.0], &visited, 4).iter().map(|&(v, _)| v).collect();
        got.sort();
        assert_eq!(got, vec![0, 1, 4, 5], "Visited ignores delta");
        assert_eq!(beam_search(&t, &[1.0, 0.0], &all, 2).len(), 2, "top k");
        let leaves_only = BeamConfig { max_leaves: Some(1), ..all };
        let got: Vec<usize> = beam_search(&t, &[1.0, 0.0], &leaves_only, 2).iter().map(|&(v, _)| v).collect();
        assert_eq!(got, vec![0, 1], "nodes 4 and 5 guide the descent but cover two leaves each");
        let got: Vec<usize> = beam_search(&t, &[1.0, 0.0], &leaves_only, 10).iter().map(|&(v, _)| v).collect();
        assert_eq!(got, vec![0, 1, 2, 3], "the unreached leaves follow");
    }

    #[test]
    fn collapsed_ranks_the_nodes_of_its_layers() {
        let t = tree();
        let ids = |layers| collapsed(&t, &[0.0, 1.0], layers, 3).iter().map(|&(v, _)| v).collect::<Vec<_>>();
        assert_eq!(ids(Layers::All), vec![2, 5, 6]);
        assert_eq!(ids(Layers::Leaves), vec![2, 3, 1]);
        assert_eq!(ids(Layers::Upper), vec![5, 6, 4]);
        let upper_then_leaves: Vec<usize> = collapsed(&t, &[0.0, 1.0], Layers::Upper, 5).iter().map(|&(v, _)| v).collect();
        assert_eq!(upper_then_leaves, vec![5, 6, 4, 2, 3], "3 upper nodes, then the best leaves");
    }

    #[test]
    fn in_context_mixes_each_leaf_with_its_ancestors_mean() {
        let t = tree();
        let q = [0.6, 0.8];
        let cos: Vec<f32> = (0..7).map(|v| cosine(&q, t.embedding(v))).collect();
        let ids = |got: Vec<(usize, f32)>| got.iter().map(|&(v, _)| v).collect::<Vec<_>>();
        // Alone, leaf 2 (0.8) is above leaf 0 (0.6); leaf 0's branch (node 4, 0.82) is nearer the query
        // than leaf 2's (node 5, 0.57), so with enough context the two swap.
        assert_eq!(ids(in_context(&t, &q, 0.0, 4)), vec![1, 2, 0, 3]);
        assert_eq!(ids(in_context(&t, &q, 0.0, 4)), ids(collapsed(&t, &q, Layers::Leaves, 4)), "weight 0: the leaves' ranking");
        let got = in_context(&t, &q, 0.75, 4);
        assert_eq!(ids(got.clone()), vec![1, 0, 2, 3]);
        // Leaf 0's ancestors are node 4 and the root 6.
        let want = 0.25 * cos[0] + 0.75 * (cos[4] + cos[6]) / 2.0;
        assert!((got[1].1 - want).abs() < 1e-6, "{} vs {want}", got[1].1);
        // At weight 1 two siblings share their context exactly.
        let x = in_context(&t, &[1.0, 0.0], 1.0, 4);
        assert!((x[0].1 - x[1].1).abs() < 1e-6 && x[2].1 < x[1].1, "{x:?}");
        assert_eq!(in_context(&t, &q, 0.5, 2).len(), 2, "top k");
    }

    proptest::proptest! {
        /// The top-down sums equal the mean over `Tree::path` (the root down to the leaf), leaf by leaf.
        #[test]
        fn in_context_scores_are_the_mean_over_each_leafs_path(
            n in 1usize..10,
            w in proptest::collection::vec(0.0f32..1.0, 100),
            e in proptest::collection::vec(-1.0f32..1.0, 20),
            q in (-1.0f32..1.0, -1.0f32..1.0),
            weight in 0.0f32..1.0,
        ) {
            let leaves = (0..n).map(|i| DocSpan { doc: 0, span: Span::new(i, i + 1) }).collect();
            let m: Vec<f32> = (0..n * n).map(|i| if i / n == i % n { 0.0 } else { w[(i / n).min(i % n) * 10 + (i / n).max(i % n)] }).collect();
            let t = Tree::build(leaves, &e[..2 * n], 2, &Similarity::Dense { n, values: &m });
            let query = [q.0, q.1 + 1e-3];
            let got = in_context(&t, &query, weight, n);
            proptest::prop_assert_eq!(got.len(), n);
            for (leaf, score) in got {
                let path = t.path(leaf);
                let above = &path[..path.len() - 1];
                let own = cosine(&query, t.embedding(leaf));
                let want = match above.len() {
                    0 => own,
                    c => (1.0 - weight) * own + weight * above.iter().map(|&a| cosine(&query, t.embedding(a))).sum::<f32>() / c as f32,
                };
                proptest::prop_assert!((score - want).abs() < 1e-5, "leaf {}: {} vs {}", leaf, score, want);
            }
        }
    }

    #[test]
    fn a_single_leaf_tree_returns_its_leaf() {
        let t = Tree::build(vec![DocSpan { doc: 0, span: Span::new(0, 1) }], &[1.0, 0.0], 2, &Similarity::Dense { n: 1, values: &[0.0] });
        assert_eq!(beam_search(&t, &[1.0, 0.0], &BeamConfig::default(), 5), vec![(0, 1.0)]);
        assert_eq!(collapsed(&t, &[1.0, 0.0], Layers::Upper, 5), vec![(0, 1.0)]);
        assert_eq!(in_context(&t, &[1.0, 0.0], 0.5, 5), vec![(0, 1.0)]);
    }
}
