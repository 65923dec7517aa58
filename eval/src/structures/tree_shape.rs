//! The shape of a SproutRAG tree (issue 45): whether the beam has a hierarchy to search. Greedy single
//! linkage (SproutRAG Section 2.3, [`super::tree`]) is known to chain, and a chain ("caterpillar": each
//! merge adds one leaf to one growing node) turns the beam search into a scan of the leaves. Per tree:
//!
//! ```text
//! depth(leaf)   = edges from the root to the leaf              mean and max over the leaves
//! balance       = mean over internal nodes p of min(|L(a)|, |L(b)|) / |L(p)|      (children a, b)
//! contiguous    = share of internal nodes whose leaves are a run of consecutive units of the document
//! ```
//!
//! |L(p)| is the number of leaves under p. A perfectly balanced tree of n = 2^k leaves has depth k at every
//! leaf and balance 0.5; a caterpillar has max depth n - 1 and balance (1/2 + 1/3 + ... + 1/n) / (n - 1),
//! near 0 for long documents. A document read left to right into nested sections has every node contiguous.
//! [`ShapeSummary`] averages the figures over a method's trees (one-leaf trees have no internal node and
//! count for depth only).

use serde::{Deserialize, Serialize};

use super::tree::Tree;

/// The shape figures of one tree (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub leaves: usize,
    pub mean_depth: f64,
    pub max_depth: usize,
    /// `None` for a tree of one leaf.
    pub balance: Option<f64>,
    /// `None` for a tree of one leaf.
    pub contiguous: Option<f64>,
}

impl Shape {
    pub fn of(tree: &Tree) -> Shape {
        let n = tree.num_leaves();
        // Per node its first and last leaf in document order (its leaf count is `Tree::size`).
        let mut first: Vec<usize> = (0..tree.num_nodes()).collect();
        let mut last = first.clone();
        let (mut balance, mut contiguous) = (0.0, 0usize);
        for p in n..tree.num_nodes() {
            let (a, b) = tree.children(p).expect("parents have children");
            first[p] = first[a].min(first[b]);
            last[p] = last[a].max(last[b]);
            balance += tree.size(a).min(tree.size(b)) as f64 / tree.size(p) as f64;
            contiguous += usize::from(last[p] - first[p] + 1 == tree.size(p));
        }
        let depth = tree.depths();
        let internal = tree.merges.len();
        let per_internal = |x: f64| (internal > 0).then(|| x / internal as f64);
        Shape {
            leaves: n,
            mean_depth: depth[..n].iter().sum::<usize>() as f64 / n as f64,
            max_depth: depth[..n].iter().copied().max().unwrap_or(0),
            balance: per_internal(balance),
            contiguous: per_internal(contiguous as f64),
        }
    }
}

/// A method's trees summed up: each figure's mean over the trees (balance and contiguity over the trees
/// with more than one leaf), and the deepest leaf of any.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ShapeSummary {
    pub trees: usize,
    pub mean_depth: f64,
    pub mean_max_depth: f64,
    pub max_depth: usize,
    pub balance: f64,
    pub contiguous: f64,
}

impl ShapeSummary {
    /// `None` without a tree.
    pub fn of<'a>(trees: impl IntoIterator<Item = &'a Tree>) -> Option<ShapeSummary> {
        let shapes: Vec<Shape> = trees.into_iter().map(Shape::of).collect();
        let mean = |xs: Vec<f64>| if xs.is_empty() { 0.0 } else { xs.iter().sum::<f64>() / xs.len() as f64 };
        (!shapes.is_empty()).then(|| ShapeSummary {
            trees: shapes.len(),
            mean_depth: mean(shapes.iter().map(|s| s.mean_depth).collect()),
            mean_max_depth: mean(shapes.iter().map(|s| s.max_depth as f64).collect()),
            max_depth: shapes.iter().map(|s| s.max_depth).max().unwrap_or(0),
            balance: mean(shapes.iter().filter_map(|s| s.balance).collect()),
            contiguous: mean(shapes.iter().filter_map(|s| s.contiguous).collect()),
        })
    }

    /// The figures in a few words (a table cell).
    pub fn short(&self) -> String {
        format!("depth {:.1} (max {}), balance {:.2}, contiguous {:.0} %", self.mean_depth, self.max_depth, self.balance, 100.0 * self.contiguous)
    }

    /// The figures as one line of a report.
    pub fn line(&self) -> String {
        format!(
            "tree shape over {} trees: leaf depth mean {:.1}, max {:.1} on average (deepest {}); balance {:.2} (0.5 balanced, near 0 a chain); contiguous nodes {:.0} %",
            self.trees,
            self.mean_depth,
            self.mean_max_depth,
            self.max_depth,
            self.balance,
            100.0 * self.contiguous
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::{DocSpan, Span};
    use proptest::prelude::*;

    fn tree(n: usize, merges: Vec<(u32, u32)>) -> Tree {
        let leaves = (0..n).map(|i| DocSpan { doc: 0, span: Span::new(i * 10, i * 10 + 9) }).collect();
        Tree::from_merges(leaves, &vec![0.0; n], 1, merges)
    }

    #[test]
    fn a_balanced_tree_a_caterpillar_and_a_crossing_tree_hand_checked() {
        // ((0 1) (2 3)): depth 2 everywhere, balance 0.5, every node contiguous.
        let s = Shape::of(&tree(4, vec![(0, 1), (2, 3), (4, 5)]));
        assert_eq!((s.mean_depth, s.max_depth, s.balance, s.contiguous), (2.0, 2, Some(0.5), Some(1.0)));
        // (((0 1) 2) 3): depths 3, 3, 2, 1; balance (1/2 + 1/3 + 1/4) / 3; contiguous.
        let s = Shape::of(&tree(4, vec![(0, 1), (4, 2), (5, 3)]));
        assert_eq!((s.mean_depth, s.max_depth, s.contiguous), (9.0 / 4.0, 3, Some(1.0)));
        assert!((s.balance.unwrap() - (0.5 + 1.0 / 3.0 + 0.25) / 3.0).abs() < 1e-12);
        // ((0 2) (1 3)): balanced, but only the root is a run of the document.
        let s = Shape::of(&tree(4, vec![(0, 2), (1, 3), (4, 5)]));
        assert_eq!((s.mean_depth, s.balance, s.contiguous), (2.0, Some(0.5), Some(1.0 / 3.0)));
        let one = Shape::of(&tree(1, vec![]));
        assert_eq!((one.mean_depth, one.max_depth, one.balance, one.contiguous), (0.0, 0, None, None));
    }

    #[test]
    fn the_summary_averages_over_trees_and_skips_one_leaf_trees_for_balance() {
        let trees = [tree(4, vec![(0, 1), (2, 3), (4, 5)]), tree(4, vec![(0, 2), (1, 3), (4, 5)]), tree(1, vec![])];
        let s = ShapeSummary::of(&trees).unwrap();
        assert_eq!((s.trees, s.max_depth, s.balance), (3, 2, 0.5));
        assert!((s.mean_depth - 4.0 / 3.0).abs() < 1e-12 && (s.contiguous - 2.0 / 3.0).abs() < 1e-12);
        assert!(s.line().contains("over 3 trees") && s.line().contains("contiguous nodes 67 %"), "{}", s.line());
        assert_eq!(ShapeSummary::of(std::iter::empty()), None);
    }

    proptest! {
        /// Any tree a similarity matrix gives: depths sum to at least n log2 n (a binary tree's floor), the
        /// balance lies in (0, 0.5], the root is contiguous, and a chain merged in document order has
        /// every node contiguous.
        #[test]
        fn figures_stay_in_their_bounds(n in 2usize..24, seed in 0u64..1000) {
            let mut values = vec![0.0f32; n * n];
            let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            for v in values.iter_mut() {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                *v = (x >> 40) as f32 / (1u64 << 24) as f32;
            }
            let leaves: Vec<DocSpan> = (0..n).map(|i| DocSpan { doc: 0, span: Span::new(i * 10, i * 10 + 9) }).collect();
            let t = Tree::build(leaves, &vec![0.0; n], 1, &super::super::tree::Similarity::Dense { n, values: &values });
            let s = Shape::of(&t);
            prop_assert!(s.mean_depth * n as f64 >= n as f64 * (n as f64).log2() - 1e-9);
            prop_assert!(s.max_depth < n);
            let b = s.balance.unwrap();
            prop_assert!(b > 0.0 && b <= 0.5);
            let c = s.contiguous.unwrap();
            prop_assert!(c >= 1.0 / (n - 1) as f64 - 1e-12 && c <= 1.0);
            let chain: Vec<(u32, u32)> = (1..n).map(|i| (if i == 1 { 0 } else { (n + i - 2) as u32 }, i as u32)).collect();
            prop_assert_eq!(Shape::of(&tree(n, chain)).contiguous, Some(1.0));
        }
    }
}
