//! BM25 (Robertson & Zaragoza, 2009) over the same leaf units as the dense methods, with the `bm25`
//! crate's English tokenizer (unicode normalisation, stop words, Snowball stemming), k1 = 1.2, b = 0.75.
//! Under [`Scope::QueryDocuments`] each document is its own index (IDF and average length from its own
//! units); under [`Scope::Corpus`] one index holds every unit.
//!
//! BM25 scores only units that share a term with the query. So that it is scored on the same k as every
//! other method (DESIGN.md, "Metrics"), the units without a common term follow the matching ones, with
//! score 0, in document order.

use arbor_datasets::Corpus;
use bm25::{Document, Language, SearchEngine, SearchEngineBuilder};

use crate::index::{Chunks, Item, QueryInput, Retriever, Scope};

pub struct Bm25<'a> {
    chunks: &'a Chunks,
    scope: Scope,
    /// One engine per document, or a single one for the corpus; keys are unit indices.
    engines: Vec<SearchEngine<usize>>,
}

impl<'a> Bm25<'a> {
    pub fn build(corpus: &Corpus, chunks: &'a Chunks, scope: Scope) -> Self {
        let engine = |units: std::ops::Range<usize>| {
            let docs: Vec<Document<usize>> = units.map(|u| Document::new(u, chunks.text(corpus, u))).collect();
            SearchEngineBuilder::<usize>::with_documents(Language::English, docs).build()
        };
        let engines = match scope {
            Scope::QueryDocuments => chunks.by_doc.iter().cloned().map(engine).collect(),
            Scope::Corpus => vec![engine(0..chunks.len())],
        };
        Bm25 { chunks, scope, engines }
    }
}

impl Retriever for Bm25<'_> {
    fn name(&self) -> &str {
        "BM25"
    }

    fn leaves(&self) -> &Chunks {
        self.chunks
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let engines: Vec<&SearchEngine<usize>> = match self.scope {
            Scope::Corpus => vec![&self.engines[0]],
            Scope::QueryDocuments => query.docs.iter().map(|&d| &self.engines[d]).collect(),
        };
        let scored = engines.into_iter().flat_map(|e| e.search(&query.text, k)).map(|r| (r.document.id, r.score));
        let mut ranked = crate::index::top_k(scored, k);
        if ranked.len() < k {
            let matched: std::collections::HashSet<usize> = ranked.iter().map(|&(u, _)| u).collect();
            let rest = self.chunks.candidates(query, self.scope).filter(|u| !matched.contains(u));
            ranked.extend(rest.take(k - ranked.len()).map(|u| (u, 0.0)));
        }
        ranked.into_iter().map(|(u, score)| Item::unit(self.chunks.spans[u], score)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::{Document as Doc, Query};
    use std::path::Path;

    #[test]
    fn keyword_matches_rank_first_and_scope_limits_documents() {
        let doc = |id: &str, text: &str| Doc { id: id.into(), title: String::new(), text: text.into(), sections: vec![], split: None };
        let corpus = Corpus::new(
            vec![doc("a", "Cats purr loudly.\n\nDogs bark at night."), doc("b", "Dogs bark in the park.")],
            Vec::<Query>::new(),
            Path::new("test"),
        )
        .unwrap();
        let index = crate::LeafIndex::build(&corpus, &Default::default(), crate::index::word_tokens(&corpus)).unwrap();
        let units = &index.units;
        let query = QueryInput { text: "why do dogs bark".into(), docs: vec![0], embedding: None };
        let within = Bm25::build(&corpus, units, Scope::QueryDocuments).retrieve(&query, 3);
        assert_eq!(units.text(&corpus, 1), "Dogs bark at night.");
        assert_eq!(within[0].spans[0], units.spans[1]);
        // The unit without a query term follows, with score 0: the document has 2 units, so 2 items.
        assert_eq!(within.len(), 2);
        assert_eq!((within[1].spans[0], within[1].score), (units.spans[0], 0.0));
        let all = Bm25::build(&corpus, units, Scope::Corpus).retrieve(&query, 3);
        assert_eq!(all.len(), 3);
        assert!(all[0].score > 0.0 && all[1].score > 0.0 && all[2].score == 0.0);
    }
}
