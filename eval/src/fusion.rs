//! Hybrid retrieval by reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009): each of several
//! retrievers over the same leaf chunks ranks every chunk in scope, and a chunk's fused score is
//!
//! ```text
//! RRF(c) = Σ_r 1 / (k_rrf + rank_r(c))        rank from 1; k_rrf = 60 in the paper
//! ```
//!
//! summed over the retrievers that rank it within their first `depth` places. Ties go to the chunk first
//! in index order, so the fused list is deterministic.

use std::borrow::Cow;
use std::collections::HashMap;

use arbor_datasets::DocSpan;

use crate::index::{Chunks, Item, QueryInput, Retriever, Scope, top_k};

pub struct Fusion<'a> {
    pub name: String,
    /// Retrievers over the same chunks as `chunks`.
    pub parts: Vec<Box<dyn Retriever + 'a>>,
    pub chunks: Cow<'a, Chunks>,
    pub k_rrf: f32,
    /// How deep each retriever's list is read (chunks below it get nothing from that retriever).
    pub depth: usize,
    pub scope: Scope,
}

impl Retriever for Fusion<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn leaves(&self) -> &Chunks {
        &self.chunks
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let candidates: Vec<usize> = self.chunks.candidates(query, self.scope).collect();
        let index: HashMap<DocSpan, usize> = candidates.iter().map(|&c| (self.chunks.spans[c], c)).collect();
        let mut fused: HashMap<usize, f32> = candidates.iter().map(|&c| (c, 0.0)).collect();
        for part in &self.parts {
            for (rank, item) in part.retrieve(query, self.depth.min(candidates.len())).iter().enumerate() {
                let chunk = item.spans.first().and_then(|s| index.get(s)).expect("fused retrievers rank the same chunks");
                *fused.get_mut(chunk).expect("a candidate") += 1.0 / (self.k_rrf + rank as f32 + 1.0);
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
        let chunks = Chunks { spans: (0..4).map(|i| DocSpan { doc: 0, span: Span::new(i, i + 1) }).collect(), by_doc: vec![0..4] };
        // a: 0, 1, 2, 3; b: 2, 1, 3, 0. With k_rrf = 1: chunk 0 = 1/2 + 1/5, 1 = 1/3 + 1/3, 2 = 1/4 + 1/2, 3 = 1/5 + 1/4.
        let parts: Vec<Box<dyn Retriever>> =
            vec![Box::new(FixedRanking(vec![0, 1, 2, 3], chunks.clone())), Box::new(FixedRanking(vec![2, 1, 3, 0], chunks.clone()))];
        let fusion = Fusion { name: "rrf".into(), parts, chunks: Cow::Borrowed(&chunks), k_rrf: 1.0, depth: 100, scope: Scope::QueryDocuments };
        let query = QueryInput { text: String::new(), docs: vec![0], embedding: None };
        let got: Vec<usize> = fusion.retrieve(&query, 4).iter().map(|i| i.spans[0].span.start).collect();
        assert_eq!(got, vec![2, 0, 1, 3]);
        assert!((fusion.retrieve(&query, 1)[0].score - 0.75).abs() < 1e-6);
        // Read only 1 deep, chunks 1 and 3 get nothing and keep index order after 0 and 2.
        let shallow = Fusion { depth: 1, ..fusion };
        let got: Vec<usize> = shallow.retrieve(&query, 4).iter().map(|i| i.spans[0].span.start).collect();
        assert_eq!(got, vec![0, 2, 1, 3]);
    }
}
