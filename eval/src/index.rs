//! The shared vocabulary of retrieval: leaf units of a corpus, queries, retrieved items, scopes.

use std::ops::Range;

use arbor_datasets::units::{segment, UnitConfig};
use arbor_datasets::{Corpus, DocSpan};
use serde::{Deserialize, Serialize};

/// Which units a query is ranked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scope {
    /// Only the units of the documents the query names (SQuAD-style long-document QA).
    #[default]
    QueryDocuments,
    /// Every unit of the corpus (open retrieval, BEIR).
    Corpus,
}

/// Every leaf unit of a corpus, documents in corpus order, units in text order.
#[derive(Debug, Clone)]
pub struct LeafIndex {
    pub units: Vec<DocSpan>,
    /// The units of document `d` are `units[doc_units[d].clone()]`.
    pub doc_units: Vec<Range<usize>>,
}

impl LeafIndex {
    /// Segments every document into leaf units.
    pub fn build(corpus: &Corpus, config: &UnitConfig) -> Self {
        let mut units = Vec::new();
        let mut doc_units = Vec::with_capacity(corpus.documents.len());
        for (d, doc) in corpus.documents.iter().enumerate() {
            let start = units.len();
            units.extend(segment(doc, config).units.into_iter().map(|u| DocSpan { doc: d, span: u.span }));
            doc_units.push(start..units.len());
        }
        LeafIndex { units, doc_units }
    }

    /// The units a query may retrieve under a scope.
    pub fn candidates<'a>(&'a self, query: &'a QueryInput, scope: Scope) -> Box<dyn Iterator<Item = usize> + 'a> {
        match scope {
            Scope::Corpus => Box::new(0..self.units.len()),
            Scope::QueryDocuments => Box::new(query.docs.iter().flat_map(|&d| self.doc_units[d].clone())),
        }
    }

    /// The text of a unit.
    pub fn text<'a>(&self, corpus: &'a Corpus, unit: usize) -> &'a str {
        let u = self.units[unit];
        &corpus.documents[u.doc].text[u.span.start..u.span.end]
    }
}

/// What a retriever sees of a query.
#[derive(Debug, Clone)]
pub struct QueryInput {
    pub text: String,
    /// The query's documents, as corpus indices.
    pub docs: Vec<usize>,
    /// The query's dense embedding, for dense retrievers.
    pub embedding: Option<Vec<f32>>,
}

/// One retrieved item: the spans it hands on (one for a unit, several for a merged node) and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub spans: Vec<DocSpan>,
    pub score: f32,
}

/// A retrieval method: ranks items for a query, best first, at most `k`.
pub trait Retriever: Sync {
    fn name(&self) -> &str;
    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item>;
}

/// The indices of the `k` largest scores, best first; ties go to the lower index.
pub fn top_k(scores: impl Iterator<Item = (usize, f32)>, k: usize) -> Vec<(usize, f32)> {
    let mut all: Vec<(usize, f32)> = scores.collect();
    let by_score = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if all.len() > k {
        all.select_nth_unstable_by(k, by_score);
        all.truncate(k);
    }
    all.sort_by(by_score);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_orders_by_score_then_index() {
        let got = top_k([(0, 0.5), (1, 0.9), (2, 0.5), (3, 0.1), (4, 0.9)].into_iter(), 3);
        assert_eq!(got, vec![(1, 0.9), (4, 0.9), (0, 0.5)]);
        assert_eq!(top_k([(7, 1.0)].into_iter(), 5), vec![(7, 1.0)]);
    }
}
