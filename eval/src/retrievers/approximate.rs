//! Flat dense search through an approximate nearest-neighbour index, for an index of a million units
//! (`arbor query` over `arbor index --approximate`): the graph proposes `depth` candidates nearest the
//! query, each is scored exactly as [`FlatDense`] scores it (the dot product of the stored float32
//! vectors), and the best k are handed on. The scores are exact; the set is not: a unit of the true top k
//! the graph does not propose is missed, which is why `scripts/bench_index.sh` prints recall@10 against
//! exact search. A scope of fewer than [`EXACT_BELOW`] units (a few documents, `--doc`) is searched
//! exactly, as fast as the graph and with nothing missed, and so is a ranking of more than 1 % of the
//! scope (the dense half of a `Hybrid` without `depth`, which fuses every unit's rank).

use super::flat::{FlatDense, dot};
use crate::index::{Chunks, Item, QueryInput, Retriever, top_k};

/// An approximate index over a retriever's units.
pub trait Neighbours: Send + Sync {
    /// About `count` units (positions in the retriever's [`Chunks`]) nearest `query`, among those `keep`
    /// accepts (every unit when `None`).
    fn nearest(&self, query: &[f32], count: usize, keep: Option<&(dyn Fn(usize) -> bool + Sync)>) -> Vec<usize>;
}

/// Below this many units in scope, exact search.
pub const EXACT_BELOW: usize = 100_000;

/// More than 1 / SHARE of the scope asked for: exact search (a graph proposes a few hundred candidates
/// well, not a whole ranking).
const SHARE: usize = 100;

pub struct Approximate<'a> {
    pub flat: FlatDense<'a>,
    pub neighbours: &'a dyn Neighbours,
    /// Candidates asked of the graph (at least k).
    pub depth: usize,
}

impl Retriever for Approximate<'_> {
    fn name(&self) -> &str {
        self.flat.name()
    }

    fn leaves(&self) -> &Chunks {
        self.flat.leaves()
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let chunks = &self.flat.chunks;
        let in_scope = self.flat.in_scope(&query.docs);
        // A small scope, or a ranking of a large share of it (a hybrid's whole dense ranking): exactly.
        if k == 0 || in_scope < EXACT_BELOW || k.saturating_mul(SHARE) > in_scope {
            return self.flat.retrieve(query, k);
        }
        let q = query.embedding.as_deref().expect("dense retrieval needs a query embedding");
        let mut scope = vec![false; chunks.by_doc.len()];
        for &d in &query.docs {
            scope[d] = true;
        }
        let everything = scope.iter().all(|&s| s);
        let keep = |u: usize| scope[chunks.spans[u].doc];
        let found = self.neighbours.nearest(q, self.depth.max(k), (!everything).then_some(&keep as &(dyn Fn(usize) -> bool + Sync)));
        let exact = found.into_iter().filter(|&u| keep(u)).map(|u| (u, dot(q, &self.flat.embeddings[u])));
        top_k(exact, k).into_iter().map(|(u, score)| Item::unit(chunks.spans[u], score)).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use arbor_datasets::{DocSpan, Span};

    use super::*;

    /// A graph that proposes the units of its list that `keep` accepts, in order: what the retriever does
    /// with candidates is checked apart from any graph.
    struct Proposes(Vec<usize>);

    impl Neighbours for Proposes {
        fn nearest(&self, _: &[f32], count: usize, keep: Option<&(dyn Fn(usize) -> bool + Sync)>) -> Vec<usize> {
            self.0.iter().copied().filter(|&u| keep.is_none_or(|f| f(u))).take(count).collect()
        }
    }

    fn corpus(n: usize, docs: usize) -> (Chunks, Vec<Vec<f32>>) {
        let per = n / docs;
        let spans = (0..n).map(|u| DocSpan { doc: u / per, span: Span::new(u, u + 1) }).collect();
        let chunks = Chunks { spans, by_doc: (0..docs).map(|d| d * per..(d + 1) * per).collect(), headers: Vec::new() };
        // Unit u points at angle u / n: its cosine with [1, 0] falls as u grows.
        let vectors = (0..n).map(|u| u as f32 / n as f32 * 1.5).map(|a| vec![a.cos(), a.sin()]).collect();
        (chunks, vectors)
    }

    #[test]
    fn candidates_are_scored_exactly_and_the_best_k_kept() {
        let (chunks, vectors) = corpus(EXACT_BELOW * 2, 4);
        let flat = FlatDense { name: "flat".into(), chunks: Cow::Borrowed(&chunks), embeddings: Cow::Borrowed(&vectors) };
        // The graph misses unit 0 (the true best) and proposes the others out of order.
        let graph = Proposes(vec![9, 3, 150_000, 1, 2]);
        let approximate = Approximate { flat, neighbours: &graph, depth: 5 };
        let all = QueryInput { text: String::new(), docs: vec![0, 1, 2, 3], embedding: Some(vec![1.0, 0.0]) };
        let got: Vec<usize> = approximate.retrieve(&all, 3).iter().map(|i| i.spans[0].span.start).collect();
        assert_eq!(got, vec![1, 2, 3], "exact order of the candidates; the missed unit 0 stays missed");
        assert_eq!(approximate.retrieve(&all, 3)[0].score, dot(&[1.0, 0.0], &vectors[1]), "the exact score");
        // Documents 2 and 3 only: the graph's candidates outside them are not handed on.
        let two = QueryInput { docs: vec![2, 3], ..all.clone() };
        let got: Vec<usize> = approximate.retrieve(&two, 3).iter().map(|i| i.spans[0].span.start).collect();
        assert_eq!(got, vec![150_000]);
        // A ranking of more than 1 % of the scope: exactly, unit 0 first.
        assert_eq!(approximate.retrieve(&all, EXACT_BELOW)[0].spans[0].span.start, 0);
        // One document is under EXACT_BELOW units: searched exactly, unit 0 found.
        let one = QueryInput { docs: vec![0], ..all };
        assert_eq!(approximate.retrieve(&one, 1)[0].spans[0].span.start, 0);
    }
}
