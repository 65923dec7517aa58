//! What the node-level loss of arbor's SproutRAG trainer reads off a built tree (arbor's addition; not in the
//! paper, whose objective ranks units only): for a query whose gold lies in leaves `G`,
//!
//! ```text
//! positive  p = the smallest node covering every leaf of G (their lowest common ancestor)
//! negatives N = the ancestors of p (larger nodes that hold the gold and dilute it)
//!             + the sibling of p and of each ancestor (nodes beside the path, none of the gold)
//! ```
//!
//! and the weights that write a node's progressive embedding (Section 2.3, e(p) = (e(u) + e(v)) / 2) as a
//! combination of its leaves' embeddings, `e(p) = sum_l 2^-depth_p(l) e(l)`, so that a trainer can
//! differentiate the node embeddings through the leaves while the tree itself stays fixed.

use crate::structures::tree::Tree;

/// A query's positive node and its negatives, node ids of a [`Tree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTargets {
    pub positive: usize,
    pub negatives: Vec<usize>,
}

impl NodeTargets {
    /// The positive, then the negatives: every node the query's softmax reads.
    pub fn candidates(&self) -> impl Iterator<Item = usize> + '_ {
        std::iter::once(self.positive).chain(self.negatives.iter().copied())
    }
}

/// The parent of every node (`None` for the root).
pub fn parents(tree: &Tree) -> Vec<Option<usize>> {
    let mut parent = vec![None; tree.num_nodes()];
    for node in tree.num_leaves()..tree.num_nodes() {
        let (a, b) = tree.children(node).expect("parents have children");
        parent[a] = Some(node);
        parent[b] = Some(node);
    }
    parent
}

/// The positive and negatives for gold leaves `gold`; `None` when there is no gold leaf or the positive
/// is the root (nothing then ranks above or beside it).
pub fn node_targets(tree: &Tree, parent: &[Option<usize>], gold: &[usize]) -> Option<NodeTargets> {
    let first = *gold.first()?;
    // The lowest common ancestor: climb from the first gold leaf until the node covers every gold leaf.
    let mut positive = first;
    while gold.iter().any(|&g| !covers(tree, positive, g)) {
        positive = parent[positive]?;
    }
    let mut negatives = Vec::new();
    let mut node = positive;
    while let Some(up) = parent[node] {
        let (a, b) = tree.children(up).expect("a parent has children");
        negatives.push(if a == node { b } else { a });
        negatives.push(up);
        node = up;
    }
    (!negatives.is_empty()).then_some(NodeTargets { positive, negatives })
}

fn covers(tree: &Tree, node: usize, leaf: usize) -> bool {
    node == leaf || tree.leaves_under(node).any(|l| l == leaf)
}

/// The leaves under `node` with their weights in its progressive embedding: halved at every merge on
/// the way down, so they sum to 1.
pub fn leaf_weights(tree: &Tree, node: usize) -> Vec<(usize, f32)> {
    let mut out = Vec::new();
    let mut stack = vec![(node, 1.0f32)];
    while let Some((at, w)) = stack.pop() {
        match tree.children(at) {
            None => out.push((at, w)),
            Some((a, b)) => stack.extend([(a, w / 2.0), (b, w / 2.0)]),
        }
    }
    out.sort_by_key(|&(leaf, _)| leaf);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::{DocSpan, Span};

    /// Leaves 0..4; node 4 = (0, 1), node 5 = (4, 2), node 6 = (5, 3) the root. Embeddings: leaf i is e_i.
    fn tree() -> Tree {
        let leaves = (0..4).map(|i| DocSpan { doc: 0, span: Span::new(10 * i, 10 * i + 10) }).collect();
        let mut emb: Vec<f32> = (0..4).flat_map(|i| (0..4).map(move |d| f32::from(u8::from(d == i)))).collect();
        for (a, b) in [(0usize, 1usize), (4, 2), (5, 3)] {
            let row: Vec<f32> = (0..4).map(|d| (emb[a * 4 + d] + emb[b * 4 + d]) / 2.0).collect();
            emb.extend(row);
        }
        Tree::from_parts(leaves, vec![(0, 1), (4, 2), (5, 3)], emb, 4)
    }

    #[test]
    fn the_positive_is_the_lowest_common_ancestor_and_the_negatives_its_ancestors_and_their_siblings() {
        let t = tree();
        let p = parents(&t);
        assert_eq!(p, vec![Some(4), Some(4), Some(5), Some(6), Some(5), Some(6), None]);
        // One gold leaf: the leaf itself; above it node 4 (sibling leaf 1), node 5 (sibling 2), root (sibling 3).
        assert_eq!(node_targets(&t, &p, &[0]), Some(NodeTargets { positive: 0, negatives: vec![1, 4, 2, 5, 3, 6] }));
        // Gold in leaves 1 and 2: their lowest common ancestor is node 5.
        assert_eq!(node_targets(&t, &p, &[2, 1]), Some(NodeTargets { positive: 5, negatives: vec![3, 6] }));
        // Gold on both sides of the root: nothing ranks above the root.
        assert_eq!(node_targets(&t, &p, &[0, 3]), None);
        assert_eq!(node_targets(&t, &p, &[]), None);
    }

    #[test]
    fn leaf_weights_rebuild_the_progressive_embeddings() {
        let t = tree();
        for node in 0..t.num_nodes() {
            let w = leaf_weights(&t, node);
            assert!((w.iter().map(|x| x.1).sum::<f32>() - 1.0).abs() < 1e-6);
            let mut e = [0.0f32; 4];
            for (leaf, weight) in w {
                e.iter_mut().zip(t.embedding(leaf)).for_each(|(x, y)| *x += weight * y);
            }
            assert_eq!(&e, t.embedding(node), "node {node}");
        }
        assert_eq!(leaf_weights(&t, 6), vec![(0, 0.125), (1, 0.125), (2, 0.25), (3, 0.5)]);
    }
}
