//! The linkage rule of a SproutRAG tree (issue 45): which two nodes merge next. SproutRAG (Section 2.3)
//! merges by single linkage, `M_pr = max(M_ur, M_vr)` ([`super::tree::merge_order`], the default), which
//! is known to chain. The alternatives, each with the paper's progressive embeddings (a parent's vector
//! the mean of its children's, [`super::tree::Tree::from_merges`]):
//!
//! ```text
//! Single     M(P, R) = max over p in P, r in R of M_pr                  (the paper's)
//! Average    M(P, R) = mean over p in P, r in R of M_pr                 (UPGMA)
//! Complete   M(P, R) = min over p in P, r in R of M_pr
//! Adjacent   single linkage, but only two nodes whose leaves are neighbouring runs of the document
//!            merge: every node is a contiguous span, as a heading hierarchy is
//! ```
//!
//! The matrix is read as a symmetric similarity, `M(i, j) = max(M_ij, M_ji, 0)` (attention is not
//! negative); a pair that a sparse `M` does not store, or a NaN, is 0. Single linkage keeps its O(n^2) spanning-tree path and its sparse
//! O(E log E) one. The others need the dense matrix: O(n^2) memory (4 n^2 bytes; refused above
//! [`MAX_DENSE_UNITS`] units, 1 GiB) and O(n^2) time: average and complete linkage by the nearest-neighbour
//! chain (they are reducible, so the chain finds the merges greedy merging finds, Murtagh 1983), updated by
//! Lance-Williams; adjacent merging scans the n - 1 neighbouring pairs before each merge. Ties go to the
//! lower unit index.

use serde::{Deserialize, Serialize};

use super::tree::{Similarity, merge_order};

/// Which nodes merge next (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Linkage {
    #[default]
    Single,
    Average,
    Complete,
    Adjacent,
}

/// The most units a document may have for the dense linkage rules (an n x n float matrix: 1 GiB here).
pub const MAX_DENSE_UNITS: usize = 16_384;

impl Linkage {
    pub fn is_single(&self) -> bool {
        *self == Linkage::Single
    }

    /// The merge sequence under this rule, as pairs of node ids (leaves `0..n`, parents from `n` in merge
    /// order), or why the document is too long for it.
    pub fn merges(self, m: &Similarity) -> Result<Vec<(u32, u32)>, String> {
        let n = m.n();
        if self == Linkage::Single {
            return Ok(merge_order(m));
        }
        if n > MAX_DENSE_UNITS {
            return Err(format!("{self:?} linkage holds an n x n matrix: a document of {n} units is over its cap of {MAX_DENSE_UNITS}"));
        }
        let s = dense(m);
        Ok(match self {
            Linkage::Adjacent => adjacent(n, s),
            rule => nn_chain(n, s, rule),
        })
    }
}

/// `M` as a dense symmetric matrix: `max(M_ij, M_ji, 0)`, 0 where not stored or NaN.
fn dense(m: &Similarity) -> Vec<f32> {
    let n = m.n();
    let mut s = vec![0.0f32; n * n];
    let mut put = |i: usize, j: usize, w: f32| {
        if i != j && w > s[i * n + j] {
            s[i * n + j] = w;
            s[j * n + i] = w;
        }
    };
    match m {
        Similarity::Dense { values, .. } => (0..n * n).for_each(|k| put(k / n, k % n, values[k])),
        Similarity::Sparse { edges, .. } => edges.iter().for_each(|&(i, j, w)| put(i as usize, j as usize, w)),
    }
    s
}

/// Records the merge of slots `a` and `b` (slot ids are leaves' until merged; the merged node lives in
/// the lower slot): the pair of node ids, the merged node's id in its slot, the higher slot retired.
struct Merging {
    node: Vec<u32>,
    size: Vec<usize>,
    active: Vec<bool>,
    merges: Vec<(u32, u32)>,
}

impl Merging {
    fn new(n: usize) -> Self {
        Merging { node: (0..n as u32).collect(), size: vec![1; n], active: vec![true; n], merges: Vec::with_capacity(n.saturating_sub(1)) }
    }

    /// Merges slots `a` and `b` into the lower one and returns (kept, retired).
    fn merge(&mut self, a: usize, b: usize) -> (usize, usize) {
        let (keep, gone) = (a.min(b), a.max(b));
        let (x, y) = (self.node[keep], self.node[gone]);
        self.merges.push((x.min(y), x.max(y)));
        self.node[keep] = (self.node.len() + self.merges.len() - 1) as u32;
        self.size[keep] += self.size[gone];
        self.active[gone] = false;
        (keep, gone)
    }
}

/// Average or complete linkage by the nearest-neighbour chain.
fn nn_chain(n: usize, mut s: Vec<f32>, rule: Linkage) -> Vec<(u32, u32)> {
    let mut state = Merging::new(n);
    let mut chain: Vec<usize> = Vec::with_capacity(n);
    while state.merges.len() + 1 < n {
        if chain.is_empty() {
            chain.push(state.active.iter().position(|&a| a).expect("two nodes are left"));
        }
        let a = *chain.last().expect("not empty");
        let prev = chain.len().checked_sub(2).map(|i| chain[i]);
        // a's most similar active node; ties keep the chain's previous node, else the lowest slot.
        let mut best: Option<(f32, usize)> = None;
        for r in (0..n).filter(|&r| r != a && state.active[r]) {
            let v = s[a * n + r];
            if best.is_none_or(|(bv, _)| v > bv || (v == bv && Some(r) == prev)) {
                best = Some((v, r));
            }
        }
        let (_, b) = best.expect("two nodes are left");
        if Some(b) != prev {
            chain.push(b);
            continue;
        }
        chain.truncate(chain.len() - 2);
        let (sa, sb) = (state.size[a] as f32, state.size[b] as f32);
        let (keep, _) = state.merge(a, b);
        for r in (0..n).filter(|&r| state.active[r] && r != keep) {
            let (x, y) = (s[a * n + r], s[b * n + r]);
            let v = match rule {
                Linkage::Average => (sa * x + sb * y) / (sa + sb),
                _ => x.min(y),
            };
            s[keep * n + r] = v;
            s[r * n + keep] = v;
        }
    }
    state.merges
}

/// Single linkage between neighbouring runs only: before each merge, the most similar of the n - 1
/// neighbouring pairs (ties: the leftmost).
fn adjacent(n: usize, mut s: Vec<f32>) -> Vec<(u32, u32)> {
    let mut state = Merging::new(n);
    // The runs in document order: the slot of each run's first unit, the next run's slot.
    let mut next: Vec<Option<usize>> = (0..n).map(|i| (i + 1 < n).then_some(i + 1)).collect();
    while state.merges.len() + 1 < n {
        let mut best: Option<(f32, usize, usize)> = None;
        let mut a = Some(0);
        while let Some(x) = a {
            if let Some(y) = next[x] {
                let v = s[x * n + y];
                if best.is_none_or(|(bv, ..)| v > bv) {
                    best = Some((v, x, y));
                }
            }
            a = next[x];
        }
        let (_, x, y) = best.expect("two runs are left");
        state.merge(x, y);
        next[x] = next[y];
        for r in (0..n).filter(|&r| state.active[r] && r != x) {
            let v = s[x * n + r].max(s[y * n + r]);
            s[x * n + r] = v;
            s[r * n + x] = v;
        }
    }
    state.merges
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn sym(n: usize, pairs: &[(usize, usize, f32)]) -> Vec<f32> {
        let mut v = vec![0.0; n * n];
        for &(i, j, w) in pairs {
            v[i * n + j] = w;
            v[j * n + i] = w;
        }
        v
    }

    /// The leaf sets of the parents, in merge order.
    fn sets(n: usize, merges: &[(u32, u32)]) -> Vec<BTreeSet<usize>> {
        let mut of: Vec<BTreeSet<usize>> = (0..n).map(|i| BTreeSet::from([i])).collect();
        for &(a, b) in merges {
            let set = of[a as usize].union(&of[b as usize]).copied().collect();
            of.push(set);
        }
        of.split_off(n)
    }

    fn tree_of(n: usize, values: &[f32], rule: Linkage) -> Vec<BTreeSet<usize>> {
        sets(n, &rule.merges(&Similarity::Dense { n, values }).unwrap())
    }

    fn set(xs: &[usize]) -> BTreeSet<usize> {
        xs.iter().copied().collect()
    }

    /// {0,1} merge first everywhere. Then unit 2 is one strong link from 1 (0.85) and none from 0; unit
    /// 3 is 0.5 from both: single linkage takes 2 (0.85 > 0.5), average and complete take 3 (0.425 < 0.5
    /// and 0 < 0.5).
    #[test]
    fn single_linkage_follows_one_strong_link_where_average_and_complete_do_not() {
        let m = sym(4, &[(0, 1, 0.9), (1, 2, 0.85), (0, 3, 0.5), (1, 3, 0.5), (2, 3, 0.05)]);
        assert_eq!(tree_of(4, &m, Linkage::Single), [set(&[0, 1]), set(&[0, 1, 2]), set(&[0, 1, 2, 3])]);
        assert_eq!(tree_of(4, &m, Linkage::Average), [set(&[0, 1]), set(&[0, 1, 3]), set(&[0, 1, 2, 3])]);
        assert_eq!(tree_of(4, &m, Linkage::Complete), [set(&[0, 1]), set(&[0, 1, 3]), set(&[0, 1, 2, 3])]);
    }

    /// After {0,1}: unit 2 is 0.3 and 0.8 away (mean 0.55, min 0.3), unit 3 0.5 and 0.5: average takes 2,
    /// complete takes 3.
    #[test]
    fn average_and_complete_linkage_hand_checked() {
        let m = sym(4, &[(0, 1, 0.9), (0, 2, 0.3), (1, 2, 0.8), (0, 3, 0.5), (1, 3, 0.5), (2, 3, 0.1)]);
        assert_eq!(tree_of(4, &m, Linkage::Average), [set(&[0, 1]), set(&[0, 1, 2]), set(&[0, 1, 2, 3])]);
        assert_eq!(tree_of(4, &m, Linkage::Complete), [set(&[0, 1]), set(&[0, 1, 3]), set(&[0, 1, 2, 3])]);
    }

    /// The strongest pair (0, 2) is not neighbouring: adjacent merging takes (2, 3) at 0.6, then {2,3}
    /// with 1 (its link to 1 is max(0.2, 0.4) = 0.4 against 0's 0.3), then 0.
    #[test]
    fn adjacent_merging_joins_only_neighbouring_runs() {
        let m = sym(4, &[(0, 2, 0.99), (0, 1, 0.3), (1, 2, 0.2), (1, 3, 0.4), (2, 3, 0.6)]);
        assert_eq!(tree_of(4, &m, Linkage::Single)[0], set(&[0, 2]));
        assert_eq!(tree_of(4, &m, Linkage::Adjacent), [set(&[2, 3]), set(&[1, 2, 3]), set(&[0, 1, 2, 3])]);
    }

    #[test]
    fn a_sparse_matrix_reads_unstored_pairs_as_zero_and_small_documents_work() {
        let edges = [(0u32, 1u32, 0.9f32), (2, 3, 0.8)];
        let sparse = Linkage::Average.merges(&Similarity::Sparse { n: 4, edges: &edges }).unwrap();
        assert_eq!(sets(4, &sparse), [set(&[0, 1]), set(&[2, 3]), set(&[0, 1, 2, 3])]);
        for rule in [Linkage::Average, Linkage::Complete, Linkage::Adjacent] {
            assert_eq!(rule.merges(&Similarity::Dense { n: 1, values: &[0.0] }).unwrap(), vec![]);
            assert_eq!(rule.merges(&Similarity::Dense { n: 2, values: &[0.0, 0.5, 0.5, 0.0] }).unwrap(), vec![(0, 1)]);
        }
        let err = Linkage::Complete.merges(&Similarity::Sparse { n: MAX_DENSE_UNITS + 1, edges: &[] }).unwrap_err();
        assert!(err.contains("cap"), "{err}");
    }

    /// The rule as stated, O(n^4): the clusters with the highest linkage over member pairs merge next
    /// (for `adjacent`, only clusters that are neighbouring runs).
    fn naive(n: usize, s: &[f32], rule: Linkage) -> Vec<BTreeSet<usize>> {
        let mut clusters: Vec<BTreeSet<usize>> = (0..n).map(|i| BTreeSet::from([i])).collect();
        let mut out = Vec::new();
        while clusters.len() > 1 {
            let mut best = (f32::NEG_INFINITY, 0, 0);
            for i in 0..clusters.len() {
                for j in i + 1..clusters.len() {
                    let (p, q) = (&clusters[i], &clusters[j]);
                    let neighbours = p.last().unwrap() + 1 == *q.first().unwrap() || q.last().unwrap() + 1 == *p.first().unwrap();
                    if rule == Linkage::Adjacent && !neighbours {
                        continue;
                    }
                    let pairs: Vec<f32> = p.iter().flat_map(|&a| q.iter().map(move |&b| s[a * n + b])).collect();
                    let v = match rule {
                        Linkage::Average => pairs.iter().sum::<f32>() / pairs.len() as f32,
                        Linkage::Complete => pairs.iter().copied().fold(f32::INFINITY, f32::min),
                        _ => pairs.iter().copied().fold(f32::NEG_INFINITY, f32::max),
                    };
                    if v > best.0 {
                        best = (v, i, j);
                    }
                }
            }
            let (_, i, j) = best;
            let merged: BTreeSet<usize> = clusters[i].union(&clusters[j]).copied().collect();
            clusters.remove(j);
            clusters[i] = merged.clone();
            out.push(merged);
        }
        out
    }

    proptest! {
        /// On random symmetric matrices (distinct values, so no ties): every rule builds the tree its
        /// definition builds (the same parents; the chain may find them in another order), and adjacent
        /// merging's every node is a contiguous span.
        #[test]
        fn every_rule_builds_the_tree_its_definition_builds(n in 2usize..14, seed in 0u64..10_000) {
            let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(1);
            let mut s = vec![0.0f32; n * n];
            for i in 0..n {
                for j in i + 1..n {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let w = (x >> 40) as f32 / (1u64 << 24) as f32;
                    s[i * n + j] = w;
                    s[j * n + i] = w;
                }
            }
            for rule in [Linkage::Single, Linkage::Average, Linkage::Complete, Linkage::Adjacent] {
                let got: BTreeSet<BTreeSet<usize>> = tree_of(n, &s, rule).into_iter().collect();
                let want: BTreeSet<BTreeSet<usize>> = naive(n, &s, rule).into_iter().collect();
                prop_assert_eq!(&got, &want, "{:?}", rule);
            }
            for node in tree_of(n, &s, Linkage::Adjacent) {
                prop_assert_eq!(node.last().unwrap() - node.first().unwrap() + 1, node.len());
            }
        }
    }
}
