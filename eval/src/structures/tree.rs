//! The attention-guided binary chunking tree of SproutRAG (Section 2.3, "Progressive Embedding and Tree
//! Construction"):
//!
//! ```text
//! every leaf unit is a node
//! repeat until one root remains:
//!     (u, v) = the pair of current nodes with the highest M_uv          (any pair, not only neighbours)
//!     p = new parent of u and v;  e(p) = (e(u) + e(v)) / 2             (progressive embedding, not re-normalised)
//!     M_pr = max(M_ur, M_vr) for every other node r                    (single linkage)
//! ```
//!
//! Greedy single-linkage merging on a similarity matrix is Kruskal's algorithm on the maximum spanning
//! tree: the merges happen in the order of the spanning tree's edges, heaviest first. So the tree is built
//! in O(n^2) time and memory (Prim's algorithm on the dense matrix, then a sort and a union-find) instead
//! of the naive O(n^3). Ties are broken by unit index: Prim takes the lowest-index node among equals, and
//! edges of equal weight merge in the order of their (lower, higher) unit indices.
//!
//! Attention from token windows is sparse (units more than a window apart never attend), so `M` may also
//! come as its stored edges ([`Similarity::Sparse`], every other pair 0). Then Kruskal runs on the stored
//! edges directly, O(E log E) time and O(E) memory: the heaviest first, which is the maximum spanning forest.
//! The parts that no stored edge joins are joined at similarity 0 last, left to right: the part holding
//! unit 0 absorbs the others in the order of their first unit. This is what the dense path does with the
//! zeros of the same matrix (Prim reaches each unconnected part from unit 0, at its lowest unit), so both
//! give the same tree (property test). A tree over n leaves
//! has 2n - 1 nodes: leaves `0..n` in document order, then parents `n..2n-1` in merge order; the root is
//! the last node.

use arbor_datasets::DocSpan;
use arbor_datasets::span::merge;

use super::linkage::Linkage;

/// The similarity M between the `n` units of a document.
pub enum Similarity<'a> {
    /// A dense matrix, row-major; only entries off the diagonal are read.
    Dense { n: usize, values: &'a [f32] },
    /// The stored pairs `(i, j, M_ij)`, each pair once; every pair not stored is 0. M must not be negative:
    /// a stored weight that is not above 0 (or NaN) counts as not stored.
    Sparse { n: usize, edges: &'a [(u32, u32, f32)] },
}

impl Similarity<'_> {
    pub fn n(&self) -> usize {
        match self {
            Similarity::Dense { n, .. } | Similarity::Sparse { n, .. } => *n,
        }
    }
}

/// A SproutRAG tree over the leaf units of one document.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    /// The leaves' spans, in document order.
    pub leaves: Vec<DocSpan>,
    /// `merges[i] = (a, b)`: node `n + i` is the parent of nodes `a` and `b`.
    pub merges: Vec<(u32, u32)>,
    /// Node embeddings, `(2n - 1) x dim`, row-major: leaves first, then parents.
    pub embeddings: Vec<f32>,
    pub dim: usize,
    /// Leaves in the tree's left-to-right order; every node covers a contiguous range of it.
    order: Vec<u32>,
    /// The range of `order` each node covers.
    ranges: Vec<(u32, u32)>,
}

impl Tree {
    /// Builds the tree from leaf spans, leaf embeddings (`n x dim`, row-major) and the similarity `m`.
    pub fn build(leaves: Vec<DocSpan>, leaf_embeddings: &[f32], dim: usize, m: &Similarity) -> Tree {
        let n = leaves.len();
        assert!(n > 0, "a tree needs at least one leaf");
        assert_eq!(m.n(), n, "one similarity row per leaf");
        assert_eq!(leaf_embeddings.len(), n * dim, "one embedding per leaf");
        Self::from_merges(leaves, leaf_embeddings, dim, merge_order(m))
    }

    /// [`Tree::build`] under a linkage rule ([`Linkage`]; `Single` is [`Tree::build`]), or why the document
    /// is too long for it.
    pub fn build_with(leaves: Vec<DocSpan>, leaf_embeddings: &[f32], dim: usize, m: &Similarity, linkage: Linkage) -> Result<Tree, String> {
        assert!(!leaves.is_empty(), "a tree needs at least one leaf");
        assert_eq!(m.n(), leaves.len(), "one similarity row per leaf");
        assert_eq!(leaf_embeddings.len(), leaves.len() * dim, "one embedding per leaf");
        Ok(Self::from_merges(leaves, leaf_embeddings, dim, linkage.merges(m)?))
    }

    /// The tree of stored `merges` over leaves with these embeddings: parents get progressive embeddings
    /// (the mean of their children), as [`Tree::build`] gives them.
    pub fn from_merges(leaves: Vec<DocSpan>, leaf_embeddings: &[f32], dim: usize, merges: Vec<(u32, u32)>) -> Tree {
        let n = leaves.len();
        assert_eq!(merges.len() + 1, n.max(1), "n - 1 merges for n leaves");
        let mut embeddings = Vec::with_capacity((2 * n - 1) * dim);
        embeddings.extend_from_slice(leaf_embeddings);
        for &(a, b) in &merges {
            for d in 0..dim {
                let v = (embeddings[a as usize * dim + d] + embeddings[b as usize * dim + d]) / 2.0;
                embeddings.push(v);
            }
        }
        Self::from_parts(leaves, merges, embeddings, dim)
    }

    /// Assembles a tree from stored parts, deriving the leaf order.
    pub fn from_parts(leaves: Vec<DocSpan>, merges: Vec<(u32, u32)>, embeddings: Vec<f32>, dim: usize) -> Tree {
        let n = leaves.len();
        let mut tree = Tree { leaves, merges, embeddings, dim, order: Vec::with_capacity(n), ranges: vec![(0, 0); 2 * n - 1] };
        tree.layout();
        tree
    }

    /// In-order leaf layout, iteratively (a chain-shaped tree of thousands of leaves must not overflow the stack).
    fn layout(&mut self) {
        let mut stack = vec![(self.root(), false)];
        while let Some((node, expanded)) = stack.pop() {
            match self.children(node) {
                None => {
                    let at = self.order.len() as u32;
                    self.order.push(node as u32);
                    self.ranges[node] = (at, at + 1);
                }
                Some((a, b)) if expanded => self.ranges[node] = (self.ranges[a].0, self.ranges[b].1),
                Some((a, b)) => stack.extend([(node, true), (b, false), (a, false)]),
            }
        }
    }

    pub fn num_leaves(&self) -> usize {
        self.leaves.len()
    }

    pub fn num_nodes(&self) -> usize {
        2 * self.leaves.len() - 1
    }

    pub fn root(&self) -> usize {
        self.num_nodes() - 1
    }

    /// The two children of a parent; `None` for a leaf.
    pub fn children(&self, node: usize) -> Option<(usize, usize)> {
        let n = self.leaves.len();
        (node >= n).then(|| {
            let (a, b) = self.merges[node - n];
            (a as usize, b as usize)
        })
    }

    pub fn embedding(&self, node: usize) -> &[f32] {
        &self.embeddings[node * self.dim..(node + 1) * self.dim]
    }

    /// The leaves under a node.
    pub fn leaves_under(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
        let (lo, hi) = self.ranges[node];
        self.order[lo as usize..hi as usize].iter().map(|&l| l as usize)
    }

    /// How many leaves a node covers.
    pub fn size(&self, node: usize) -> usize {
        let (lo, hi) = self.ranges[node];
        (hi - lo) as usize
    }

    /// The text a node hands on: its leaves' spans, sorted and merged.
    pub fn spans(&self, node: usize) -> Vec<DocSpan> {
        merge(self.leaves_under(node).map(|l| self.leaves[l]).collect())
    }

    /// The nodes from the root down to `node`, both included. Beam search reaches a node only through its
    /// parent's place in the beam, so this is the path the search took to it.
    pub fn path(&self, node: usize) -> Vec<usize> {
        let mut parent = vec![usize::MAX; self.num_nodes()];
        for p in self.leaves.len()..self.num_nodes() {
            let (a, b) = self.children(p).expect("parents have children");
            parent[a] = p;
            parent[b] = p;
        }
        let mut path = vec![node];
        while let Some(&p) = path.last().map(|&v| &parent[v]).filter(|&&p| p != usize::MAX) {
            path.push(p);
        }
        path.reverse();
        path
    }

    /// The depth of every node (the root is 0).
    pub fn depths(&self) -> Vec<usize> {
        let mut depth = vec![0; self.num_nodes()];
        for node in (self.leaves.len()..self.num_nodes()).rev() {
            let (a, b) = self.children(node).expect("parents have children");
            depth[a] = depth[node] + 1;
            depth[b] = depth[node] + 1;
        }
        depth
    }
}

/// The greedy single-linkage merge sequence, as pairs of node ids (leaves `0..n`, parents from `n`).
pub fn merge_order(m: &Similarity) -> Vec<(u32, u32)> {
    let mut edges = match m {
        Similarity::Dense { n, values } => prim(*n, values),
        Similarity::Sparse { edges, .. } => edges.iter().filter(|e| e.2 > 0.0).map(|&(i, j, w)| (w, i.min(j) as usize, i.max(j) as usize)).collect(),
    };
    // Heaviest first, ties by unit index; then the parts left apart, joined at 0 from unit 0 (see above).
    edges.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let n = m.n();
    kruskal(n, edges.into_iter().map(|(_, u, v)| (u, v)).chain((1..n).map(|v| (0, v))))
}

/// Prim's algorithm for the maximum spanning tree of a dense similarity graph: its `n - 1` edges.
fn prim(n: usize, values: &[f32]) -> Vec<(f32, usize, usize)> {
    let at = |i: usize, j: usize| sanitize(values[i * n + j]);
    let mut edges = Vec::with_capacity(n.saturating_sub(1));
    if n < 2 {
        return edges;
    }
    let mut in_tree = vec![false; n];
    let mut best = vec![f32::NEG_INFINITY; n];
    let mut from = vec![0usize; n];
    in_tree[0] = true;
    for v in 1..n {
        best[v] = at(0, v);
    }
    for _ in 1..n {
        let mut pick = usize::MAX;
        for v in 0..n {
            if !in_tree[v] && (pick == usize::MAX || best[v] > best[pick]) {
                pick = v;
            }
        }
        in_tree[pick] = true;
        edges.push((best[pick], from[pick].min(pick), from[pick].max(pick)));
        for u in 0..n {
            let w = at(pick, u);
            if !in_tree[u] && w > best[u] {
                best[u] = w;
                from[u] = pick;
            }
        }
    }
    edges
}

/// Merges the parts joined by each edge in turn, skipping edges inside one part, until one part is left.
fn kruskal(n: usize, edges: impl Iterator<Item = (usize, usize)>) -> Vec<(u32, u32)> {
    let mut parent: Vec<usize> = (0..n).collect();
    let mut node_of: Vec<u32> = (0..n as u32).collect();
    let mut merges = Vec::with_capacity(n.saturating_sub(1));
    for (u, v) in edges {
        if merges.len() + 1 >= n {
            break;
        }
        let (ru, rv) = (find(&mut parent, u), find(&mut parent, v));
        if ru == rv {
            continue;
        }
        let (a, b) = (node_of[ru], node_of[rv]);
        merges.push((a.min(b), a.max(b)));
        parent[rv] = ru;
        node_of[ru] = (n + merges.len() - 1) as u32;
    }
    merges
}

/// NaN similarities never win a merge.
fn sanitize(x: f32) -> f32 {
    if x.is_nan() { f32::NEG_INFINITY } else { x }
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::Span;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// The algorithm as the paper states it, O(n^3): the oracle for `merge_order`.
    fn naive(n: usize, m: &[f32]) -> Vec<BTreeSet<usize>> {
        let mut clusters: Vec<Option<BTreeSet<usize>>> = (0..n).map(|i| Some(BTreeSet::from([i]))).collect();
        let mut sim: Vec<Vec<f32>> = (0..n).map(|i| (0..n).map(|j| m[i * n + j]).collect()).collect();
        let mut out = Vec::new();
        for _ in 1..n {
            let mut best = (f32::NEG_INFINITY, 0, 0);
            for i in 0..clusters.len() {
                for j in i + 1..clusters.len() {
                    if clusters[i].is_some() && clusters[j].is_some() && sim[i][j] > best.0 {
                        best = (sim[i][j], i, j);
                    }
                }
            }
            let (_, u, v) = best;
            let merged: BTreeSet<usize> = clusters[u].take().unwrap().union(&clusters[v].take().unwrap()).cloned().collect();
            let row: Vec<f32> = (0..clusters.len()).map(|r| sim[u][r].max(sim[v][r])).collect();
            for (r, s) in sim.iter_mut().enumerate() {
                s.push(row[r]);
            }
            let mut new_row = row;
            new_row.push(f32::NEG_INFINITY);
            sim.push(new_row);
            out.push(merged.clone());
            clusters.push(Some(merged));
        }
        out
    }

    fn leaves(n: usize) -> Vec<DocSpan> {
        (0..n).map(|i| DocSpan { doc: 0, span: Span::new(10 * i, 10 * i + 9) }).collect()
    }

    fn build(n: usize, m: &[f32]) -> Tree {
        let emb: Vec<f32> = (0..n).flat_map(|i| [i as f32, 1.0]).collect();
        Tree::build(leaves(n), &emb, 2, &Similarity::Dense { n, values: m })
    }

    fn leaf_sets(tree: &Tree) -> Vec<BTreeSet<usize>> {
        (tree.num_leaves()..tree.num_nodes()).map(|p| tree.leaves_under(p).collect()).collect()
    }

    #[test]
    fn hand_built_matrix_merges_in_the_known_order() {
        // Units 0..4. Strongest pair (1, 3) though not neighbours; then 0 joins {1,3} through M_01 = 0.7
        // (single linkage); then {2, 4}; then the two clusters.
        #[rustfmt::skip]
        let m = [
            0.0, 0.7, 0.1, 0.2, 0.0,
            0.7, 0.0, 0.2, 0.9, 0.1,
            0.1, 0.2, 0.0, 0.3, 0.6,
            0.2, 0.9, 0.3, 0.0, 0.1,
            0.0, 0.1, 0.6, 0.1, 0.0,
        ];
        let tree = build(5, &m);
        assert_eq!(tree.merges, vec![(1, 3), (0, 5), (2, 4), (6, 7)]);
        assert_eq!(tree.num_nodes(), 9);
        assert_eq!(tree.root(), 8);
        // Progressive embeddings: the mean of the children, first dimension = mean of leaf indices pairwise.
        assert_eq!(tree.embedding(5), &[2.0, 1.0]);
        assert_eq!(tree.embedding(6), &[1.0, 1.0]);
        assert_eq!(tree.leaves_under(6).collect::<BTreeSet<_>>(), BTreeSet::from([0, 1, 3]));
        // Spans of {0, 1, 3}: 0..9, 10..19 and 30..39, sorted; adjacent units stay separate spans.
        let spans: Vec<(usize, usize)> = tree.spans(6).iter().map(|s| (s.span.start, s.span.end)).collect();
        assert_eq!(spans, vec![(0, 9), (10, 19), (30, 39)]);
        assert_eq!(tree.depths()[8], 0);
        assert_eq!(tree.depths()[1], 3);
        // Root 8 = {6, 7}; 6 = {0, 5}; 5 = {1, 3}: the way down to unit 3, and to the root itself.
        assert_eq!(tree.path(3), vec![8, 6, 5, 3]);
        assert_eq!(tree.path(8), vec![8]);
        assert_eq!(tree.path(4), vec![8, 7, 4]);
        let emb: Vec<f32> = (0..5).flat_map(|i| [i as f32, 1.0]).collect();
        assert_eq!(Tree::from_merges(leaves(5), &emb, 2, tree.merges.clone()), tree, "stored merges give the same tree");
    }

    #[test]
    fn ties_are_broken_by_unit_index() {
        // All pairs equally similar: (0, 1) first, then 2 joins, then 3: a left-leaning chain.
        let m = [0.5f32; 16];
        assert_eq!(build(4, &m).merges, vec![(0, 1), (2, 4), (3, 5)]);
    }

    #[test]
    fn one_leaf_is_a_tree_and_nan_never_wins() {
        let t = build(1, &[0.0]);
        assert_eq!((t.num_nodes(), t.root(), t.children(0)), (1, 0, None));
        let m = [0.0, f32::NAN, 0.1, f32::NAN, 0.0, 0.2, 0.1, 0.2, 0.0];
        assert_eq!(build(3, &m).merges, vec![(1, 2), (0, 3)]);
    }

    #[test]
    fn a_two_thousand_unit_chain_builds_without_recursion() {
        // Neighbours only: a long chain tree.
        let n = 2000;
        let mut m = vec![0.0f32; n * n];
        for i in 0..n - 1 {
            m[i * n + i + 1] = 1.0 + i as f32;
            m[(i + 1) * n + i] = 1.0 + i as f32;
        }
        let t = build(n, &m);
        assert_eq!(t.leaves_under(t.root()).count(), n);
        assert_eq!(t.depths().iter().max(), Some(&(n - 1)));
    }

    #[test]
    fn sparse_parts_merge_inside_first_then_join_from_unit_zero() {
        // Parts {0, 2} and {1, 3} and a lone 4: inside each part first, heaviest first; then the part of
        // unit 0 absorbs {1, 3} (first unit 1), then 4.
        let edges = [(2, 0, 0.5), (1, 3, 0.4), (0, 2, f32::NAN)];
        let sparse = merge_order(&Similarity::Sparse { n: 5, edges: &edges });
        assert_eq!(sparse, vec![(0, 2), (1, 3), (5, 6), (4, 7)]);
        let mut dense = vec![0.0f32; 25];
        for &(i, j, w) in &edges[..2] {
            dense[i as usize * 5 + j as usize] = w;
            dense[j as usize * 5 + i as usize] = w;
        }
        assert_eq!(merge_order(&Similarity::Dense { n: 5, values: &dense }), sparse);
        assert!(merge_order(&Similarity::Sparse { n: 1, edges: &[] }).is_empty());
    }

    proptest! {
        #[test]
        fn kruskal_order_equals_the_naive_greedy_merges(n in 2usize..12, seed in prop::collection::vec(0.0f32..1.0, 144)) {
            let mut m = vec![0.0f32; n * n];
            for i in 0..n {
                for j in i + 1..n {
                    // Symmetric, distinct weights.
                    let w = seed[i * 12 + j] + (i * n + j) as f32 * 1e-4;
                    m[i * n + j] = w;
                    m[j * n + i] = w;
                }
            }
            let tree = build(n, &m);
            prop_assert_eq!(leaf_sets(&tree), naive(n, &m));
            prop_assert_eq!(tree.num_nodes(), 2 * n - 1);
            let mut all: Vec<usize> = tree.leaves_under(tree.root()).collect();
            all.sort();
            prop_assert_eq!(all, (0..n).collect::<Vec<_>>());
        }

        #[test]
        fn sparse_and_dense_builders_give_the_same_tree(
            n in 1usize..16,
            band in 1usize..5,
            seed in prop::collection::vec((0.0f32..1.0, 0u8..4), 256),
        ) {
            // Pairs closer than `band`, about a quarter of them left out (so parts can fall apart);
            // positive, distinct weights, as token-window attention gives.
            let mut dense = vec![0.0f32; n * n];
            let mut edges = Vec::new();
            for i in 0..n {
                for j in i + 1..(i + band).min(n) {
                    let (w, drop) = seed[i * 16 + j];
                    if drop > 0 {
                        let w = 0.01 + w + (i * n + j) as f32 * 1e-4;
                        dense[i * n + j] = w;
                        dense[j * n + i] = w;
                        edges.push((j as u32, i as u32, w));
                    }
                }
            }
            let emb: Vec<f32> = (0..n).flat_map(|i| [i as f32, 1.0]).collect();
            let sparse = Tree::build(leaves(n), &emb, 2, &Similarity::Sparse { n, edges: &edges });
            prop_assert_eq!(&sparse, &build(n, &dense));
            prop_assert_eq!(sparse.num_nodes(), 2 * n - 1);
        }
    }
}
