//! Hybrid retrieval by reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009): each of several
//! retrievers over the same leaf chunks ranks every chunk in scope, and a chunk's fused score is
//!
//! ```text
//! RRF(c) = Σ_r 1 / (k_rrf + rank_r(c))        rank from 1; k_rrf = 60 in the paper
//! ```
//!
//! summed over the retrievers that rank it within their first `depth` places. An item that is not itself
//! one of the chunks (a tree node, a larger chunk) credits every chunk it overlaps at its rank, and a chunk
//! is credited once per retriever, at its best rank. Ties go to the chunk first in index order, so the
//! fused list is deterministic.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use arbor_datasets::DocSpan;

use crate::index::{Chunks, Item, QueryInput, Retriever, top_k};

pub struct Fusion<'a> {
    pub name: String,
    /// Retrievers over the documents of `chunks` (their items are mapped onto the chunks they overlap).
    pub parts: Vec<Box<dyn Retriever + 'a>>,
    pub chunks: Cow<'a, Chunks>,
    pub k_rrf: f32,
    /// How deep each retriever's list is read (chunks below it get nothing from that retriever).
    pub depth: usize,
}

impl Retriever for Fusion<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn leaves(&self) -> &Chunks {
        &self.chunks
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let candidates: Vec<usize> = self.chunks.candidates(query).collect();
        let index: HashMap<DocSpan, usize> = candidates.iter().map(|&c| (self.chunks.spans[c], c)).collect();
        let mut fused: HashMap<usize, f32> = candidates.iter().map(|&c| (c, 0.0)).collect();
        for part in &self.parts {
            let mut credited: HashSet<usize> = HashSet::new();
            for (rank, item) in part.retrieve(query, self.depth.min(candidates.len())).iter().enumerate() {
                let chunks = match item.spans.as_slice() {
                    [span] if index.contains_key(span) => vec![index[span]],
                    spans => self.chunks.overlapping(spans),
                };
                for chunk in chunks {
                    if let Some(score) = fused.get_mut(&chunk).filter(|_| credited.insert(chunk)) {
                        *score += 1.0 / (self.k_rrf + rank as f32 + 1.0);
                    }
                }
            }
        }
        top_k(fused.into_iter(), k).into_iter().map(|(c, score)| Item::unit(self.chunks.spans[c], score)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::FixedRanking;
    use arbor_datasets::Span;

    #[test]
    fn ranks_by_summed_reciprocal_ranks() {
        let chunks =
            Chunks { spans: (0..4).map(|i| DocSpan { doc: 0, span: Span::new(i, i + 1) }).collect(), by_doc: vec![0..4], headers: Vec::new() };
        // a: 0, 1, 2, 3; b: 2, 1, 3, 0. With k_rrf = 1: chunk 0 = 1/2 + 1/5, 1 = 1/3 + 1/3, 2 = 1/4 + 1/2, 3 = 1/5 + 1/4.
        let parts: Vec<Box<dyn Retriever>> =
            vec![Box::new(FixedRanking(vec![0, 1, 2, 3], chunks.clone())), Box::new(FixedRanking(vec![2, 1, 3, 0], chunks.clone()))];
        let fusion = Fusion { name: "rrf".into(), parts, chunks: Cow::Borrowed(&chunks), k_rrf: 1.0, depth: 100 };
        let query = QueryInput { text: String::new(), docs: vec![0], embedding: None };
        let got: Vec<usize> = fusion.retrieve(&query, 4).iter().map(|i| i.spans[0].span.start).collect();
        assert_eq!(got, vec![2, 0, 1, 3]);
        assert!((fusion.retrieve(&query, 1)[0].score - 0.75).abs() < 1e-6);
        // Read only 1 deep, chunks 1 and 3 get nothing and keep index order after 0 and 2.
        let shallow = Fusion { depth: 1, ..fusion };
        let got: Vec<usize> = shallow.retrieve(&query, 4).iter().map(|i| i.spans[0].span.start).collect();
        assert_eq!(got, vec![0, 2, 1, 3]);
    }

    /// A retriever that hands on the given items, best first.
    struct Items(Vec<Item>, Chunks);

    impl Retriever for Items {
        fn name(&self) -> &str {
            "items"
        }
        fn leaves(&self) -> &Chunks {
            &self.1
        }
        fn retrieve(&self, _: &QueryInput, k: usize) -> Vec<Item> {
            self.0.iter().take(k).cloned().collect()
        }
    }

    #[test]
    fn a_node_credits_each_chunk_it_covers_once_at_its_best_rank() {
        let span = |d: usize, s: usize, e: usize| DocSpan { doc: d, span: Span::new(s, e) };
        let mut spans: Vec<DocSpan> = (0..4).map(|i| span(0, i, i + 1)).collect();
        spans.push(span(1, 0, 1));
        let chunks = Chunks { spans, by_doc: vec![0..4, 4..5], headers: Vec::new() };
        // a: 3, 2, 1, 0. b: a node over chunks 1 and 2 (one span), chunk 2 again, chunk 0, then a chunk of
        // another document (outside the query's scope: no credit).
        let b = vec![
            Item { spans: vec![span(0, 1, 3)], score: 1.0, node: None },
            Item::unit(span(0, 2, 3), 0.9),
            Item::unit(span(0, 0, 1), 0.8),
            Item::unit(span(1, 0, 1), 0.7),
        ];
        let parts: Vec<Box<dyn Retriever>> = vec![Box::new(FixedRanking(vec![3, 2, 1, 0], chunks.clone())), Box::new(Items(b, chunks.clone()))];
        let fusion = Fusion { name: "rrf".into(), parts, chunks: Cow::Borrowed(&chunks), k_rrf: 0.0, depth: 100 };
        let query = QueryInput { text: String::new(), docs: vec![0], embedding: None };
        let scores: Vec<(usize, f32)> = fusion.retrieve(&query, 4).iter().map(|i| (i.spans[0].span.start, i.score)).collect();
        // k_rrf = 0: chunk 3 = 1; chunk 2 = 1/2 + 1 (the node, not again at rank 2); chunk 1 = 1/3 + 1;
        // chunk 0 = 1/4 + 1/3.
        let want = [(2, 1.5), (1, 4.0 / 3.0), (3, 1.0), (0, 7.0 / 12.0)];
        assert_eq!(scores.len(), 4, "only the query's document is in scope");
        for ((c, s), (wc, ws)) in scores.into_iter().zip(want) {
            assert_eq!(c, wc);
            assert!((s - ws).abs() < 1e-6, "chunk {c}: {s} against {ws}");
        }
    }
}
