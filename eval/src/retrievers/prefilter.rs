//! Exact flat search in two passes, for a large index (`arbor query` over a whole corpus): the same top k
//! as [`FlatDense`], items and scores, reading a quarter of the bytes for most units.
//!
//! Each unit vector `v` is kept a second time as 8-bit codes `c = round(v / s)` with `s = max|v| / 127`,
//! so `|v_j - s c_j| <= s / 2`. For a query `q` the first pass scores every unit from its codes,
//! `s8 = s (q · c)`, which lies within `e = s (||q||_1 / 2 + rounding)` of the exact cosine the flat
//! search computes. The k-th largest lower bound `L = (s8 - e)_(k)` is at most the true k-th score, so
//! every unit of the true top k has an upper bound `s8 + e >= L`; the second pass scores exactly those
//! units (usually a few hundred) with the full vectors and keeps the best k, ties to the earlier unit as
//! everywhere ([`top_k`]). No unit of the true top k can be missed: this is exact search, not an
//! approximate one, which is why it needs no recall figure.

use rayon::prelude::*;

use super::flat::{FlatDense, dot, dot_with};
use crate::index::{Chunks, Item, QueryInput, Retriever, top_k};

pub struct Prefiltered<'a> {
    pub flat: FlatDense<'a>,
    /// `[units, dim]` codes, row-major.
    codes: Vec<i8>,
    /// Per unit, `max|v| / 127` (1 for a zero vector, whose codes are all 0).
    scales: Vec<f32>,
    dim: usize,
}

/// Below this many units in scope per item asked for, one exact pass is as fast.
const MIN_UNITS_PER_ITEM: usize = 8;

impl<'a> Prefiltered<'a> {
    pub fn new(flat: FlatDense<'a>) -> Self {
        let dim = flat.embeddings.first().map_or(0, Vec::len);
        let mut codes = Vec::with_capacity(flat.embeddings.len() * dim);
        let mut scales = Vec::with_capacity(flat.embeddings.len());
        for v in flat.embeddings.iter() {
            let (c, s) = quantise(v);
            codes.extend(c);
            scales.push(s);
        }
        Prefiltered { flat, codes, scales, dim }
    }

    /// `[lower, upper]` around unit `u`'s exact score, from its codes; `bound` is the query's part of
    /// the half-width (times the unit's scale).
    fn interval(&self, q: &[f32], u: usize, bound: f32) -> (f32, f32) {
        let s = self.scales[u];
        let approx = s * dot_with(q, &self.codes[u * self.dim..(u + 1) * self.dim]);
        (approx - s * bound, approx + s * bound)
    }
}

/// A vector's 8-bit codes and their scale.
pub fn quantise(v: &[f32]) -> (Vec<i8>, f32) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    (v.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8).collect(), scale)
}

impl Retriever for Prefiltered<'_> {
    fn name(&self) -> &str {
        self.flat.name()
    }

    fn leaves(&self) -> &Chunks {
        self.flat.leaves()
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let chunks = &self.flat.chunks;
        let in_scope = self.flat.in_scope(&query.docs);
        if k == 0 || k.saturating_mul(MIN_UNITS_PER_ITEM) >= in_scope {
            return self.flat.retrieve(query, k);
        }
        let q = query.embedding.as_deref().expect("dense retrieval needs a query embedding");
        let q1: f32 = q.iter().map(|x| x.abs()).sum();
        let q2: f32 = q.iter().map(|x| x * x).sum::<f32>().sqrt();
        // Half of q's L1 norm for the codes' rounding (1 % more for float rounding of the code sum), and
        // the exact dot's own float error, at most 3e-5 |q| |v|, with |v| <= 127 s sqrt(dim).
        let bound = 0.505 * q1 + 3e-5 * q2 * 127.0 * (self.dim as f32).sqrt();
        let intervals: Vec<(usize, f32, f32)> = query
            .docs
            .par_iter()
            .flat_map_iter(|&d| {
                chunks.by_doc[d].clone().map(|u| {
                    let (lo, hi) = self.interval(q, u, bound);
                    (u, lo, hi)
                })
            })
            .collect();
        let mut lows: Vec<f32> = intervals.iter().map(|&(_, lo, _)| lo).collect();
        let (_, &mut kth_low, _) = lows.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
        let exact = intervals.iter().filter(|&&(_, _, hi)| hi >= kth_low).map(|&(u, _, _)| (u, dot(q, &self.flat.embeddings[u])));
        top_k(exact, k).into_iter().map(|(u, score)| Item::unit(chunks.spans[u], score)).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use arbor_datasets::{DocSpan, Span};
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn codes_round_to_the_largest_component() {
        let (c, s) = quantise(&[0.5, -0.25, 0.0, 0.001]);
        assert_eq!(s, 0.5 / 127.0);
        assert_eq!(c, vec![127, -64, 0, 0]);
        assert_eq!(quantise(&[0.0, 0.0]), (vec![0, 0], 1.0), "a zero vector");
    }

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.into_iter().map(|x| x / n).collect()
    }

    proptest! {
        /// The two passes return exactly what one exact pass returns: the same units, scores and order,
        /// duplicated vectors (ties) and partial scopes included.
        #[test]
        fn same_items_as_exact_flat_search(
            base in proptest::collection::vec(proptest::collection::vec(-1.0f32..1.0, 16), 20..60),
            picks in proptest::collection::vec(0usize..1000, 150..400),
            query in proptest::collection::vec(-1.0f32..1.0, 16),
            docs in proptest::collection::btree_set(0usize..4, 1..=4),
            k in 1usize..15,
        ) {
            // Units drawn from a few base vectors, so many share a score exactly.
            let embeddings: Vec<Vec<f32>> = picks.iter().map(|&p| unit(base[p % base.len()].clone())).collect();
            let n = embeddings.len();
            let cut = |i: usize| i * n / 4;
            let spans = (0..n).map(|u| DocSpan { doc: (0..4).find(|&d| u < cut(d + 1)).unwrap(), span: Span::new(u, u + 1) }).collect();
            let chunks = Chunks { spans, by_doc: (0..4).map(|d| cut(d)..cut(d + 1)).collect(), headers: Vec::new() };
            let flat = || FlatDense { name: "flat".into(), chunks: Cow::Borrowed(&chunks), embeddings: Cow::Borrowed(&embeddings) };
            let input = QueryInput { text: String::new(), docs: docs.into_iter().collect(), embedding: Some(unit(query)) };
            let two_pass = Prefiltered::new(flat());
            prop_assert_eq!(two_pass.retrieve(&input, k), flat().retrieve(&input, k));
        }
    }
}
