//! BM25 (Robertson & Zaragoza, 2009) over the same leaf units as the dense methods, with the `bm25`
//! crate's English tokenizer (unicode normalisation, stop words, Snowball stemming), k1 = 1.2, b = 0.75.
//! Under [`Scope::QueryDocuments`] each document is its own index (IDF and average length from its own
//! units); under [`Scope::Corpus`] one index holds every unit of the evaluated documents.
//!
//! BM25 scores only units that share a term with the query. So that it is scored on the same k as every
//! other method (ARCHITECTURE.md, "The metric contract"), the units without a common term follow the matching ones, with
//! score 0, in document order.

use arbor_datasets::Corpus;
use bm25::{Embedder, EmbedderBuilder, Language, Scorer};

use crate::index::{Chunks, Item, QueryInput, Retriever, Scope};

pub struct Bm25<'a> {
    chunks: &'a Chunks,
    scope: Scope,
    /// One engine per indexed document (by corpus index), or a single one over them all; keys are unit
    /// indices.
    engines: Vec<Option<Engine>>,
}

/// The `bm25` crate's search engine without its copy of the texts: the embedder fitted to the units
/// (average length, the English tokenizer) and the scorer holding their term vectors. Scores are the
/// crate's `SearchEngine`'s, which is built the same way.
struct Engine {
    embedder: Embedder,
    scorer: Scorer<usize>,
}

impl Engine {
    fn new(units: Vec<(usize, String)>) -> Self {
        let texts: Vec<&str> = units.iter().map(|(_, t)| t.as_str()).collect();
        let embedder: Embedder = EmbedderBuilder::with_fit_to_corpus(Language::English, &texts).build();
        let mut scorer = Scorer::new();
        for (u, text) in &units {
            scorer.upsert(u, embedder.embed(text));
        }
        Engine { embedder, scorer }
    }

    /// Every unit sharing a term with `query`, scored (in no particular order among equal scores).
    fn matches(&self, query: &str) -> Vec<(usize, f32)> {
        self.scorer.matches(&self.embedder.embed(query)).into_iter().map(|m| (m.id, m.score)).collect()
    }
}

impl<'a> Bm25<'a> {
    /// BM25 over the units of `docs` (the documents queries may rank).
    pub fn build(corpus: &Corpus, chunks: &'a Chunks, scope: Scope, docs: &[usize]) -> Self {
        let engine = |units: &mut dyn Iterator<Item = usize>| Some(Engine::new(units.map(|u| (u, chunks.input(corpus, u).into_owned())).collect()));
        let engines = match scope {
            Scope::QueryDocuments => {
                let mut engines: Vec<Option<Engine>> = (0..chunks.by_doc.len()).map(|_| None).collect();
                for &d in docs {
                    engines[d] = engine(&mut chunks.by_doc[d].clone());
                }
                engines
            }
            Scope::Corpus => vec![engine(&mut docs.iter().flat_map(|&d| chunks.by_doc[d].clone()))],
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
        let engines: Vec<&Engine> = match self.scope {
            Scope::Corpus => self.engines.iter().flatten().collect(),
            Scope::QueryDocuments => query.docs.iter().map(|&d| self.engines[d].as_ref().expect("every document a query names is indexed")).collect(),
        };
        // Every match, not the engine's first k: it orders equal scores by a hash, different in every
        // process, so a tie at the k-th place would change the ranking from run to run; `top_k` breaks ties
        // by unit order.
        let scored = engines.into_iter().flat_map(|e| e.matches(&query.text));
        let mut ranked = crate::index::top_k(scored, k);
        if ranked.len() < k {
            let matched: std::collections::HashSet<usize> = ranked.iter().map(|&(u, _)| u).collect();
            let rest = self.chunks.candidates(query).filter(|u| !matched.contains(u));
            ranked.extend(rest.take(k - ranked.len()).map(|u| (u, 0.0)));
        }
        ranked.into_iter().map(|(u, score)| Item::unit(self.chunks.spans[u], score)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::{DocSpan, Document as Doc, Query};
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
        let within = Bm25::build(&corpus, units, Scope::QueryDocuments, &[0, 1]).retrieve(&query, 3);
        assert_eq!(units.text(&corpus, 1), "Dogs bark at night.");
        assert_eq!(within[0].spans[0], units.spans[1]);
        // The unit without a query term follows, with score 0: the document has 2 units, so 2 items.
        assert_eq!(within.len(), 2);
        assert_eq!((within[1].spans[0], within[1].score), (units.spans[0], 0.0));
        let pool = QueryInput { docs: vec![0, 1], ..query };
        let all = Bm25::build(&corpus, units, Scope::Corpus, &[0, 1]).retrieve(&pool, 3);
        assert_eq!(all.len(), 3);
        assert!(all[0].score > 0.0 && all[1].score > 0.0 && all[2].score == 0.0);
    }

    #[test]
    fn equal_scores_at_the_cut_go_to_the_earlier_unit() {
        // Twelve paragraphs with the same words score the same; k = 1 keeps the first, in every process.
        let text = ["Tidal power turns the sea's motion into electricity."; 12].join("\n\n");
        let doc = Doc { id: "a".into(), title: String::new(), text, sections: vec![], split: None };
        let corpus = Corpus::new(vec![doc], Vec::<Query>::new(), Path::new("test")).unwrap();
        let index = crate::LeafIndex::build(&corpus, &Default::default(), crate::index::word_tokens(&corpus)).unwrap();
        let query = QueryInput { text: "tidal electricity".into(), docs: vec![0], embedding: None };
        let bm25 = Bm25::build(&corpus, &index.units, Scope::Corpus, &[0]);
        for k in [1, 3] {
            let got: Vec<DocSpan> = bm25.retrieve(&query, k).iter().map(|i| i.spans[0]).collect();
            assert_eq!(got, index.units.spans[..k], "k = {k}");
        }
    }

    #[test]
    fn a_cut_piece_is_found_by_the_words_of_its_header() {
        // The table is one sentence of 9 words, cut at 6: "bonds 84 84" alone does not say it is debt.
        let text = "Long-term debt consisted of:\n\nyear 2017 2016\nnotes 600 600\nbonds 84 84";
        let doc = Doc { id: "a".into(), title: String::new(), text: text.into(), sections: vec![], split: None };
        let corpus = Corpus::new(vec![doc], Vec::<Query>::new(), Path::new("test")).unwrap();
        let rule = |context| arbor_datasets::UnitConfig { max_sentences: 2, max_tokens: Some(6), context };
        let query = QueryInput { text: "debt".into(), docs: vec![0], embedding: None };
        // The score BM25 gives the last piece, and what it read of it.
        let last = |context| {
            let index = crate::LeafIndex::build(&corpus, &rule(context), crate::index::word_tokens(&corpus)).unwrap();
            let piece = index.units.len() - 1;
            let items = Bm25::build(&corpus, &index.units, Scope::QueryDocuments, &[0]).retrieve(&query, index.units.len());
            let score = items.iter().find(|i| i.spans[0] == index.units.spans[piece]).unwrap().score;
            (score, index.units.input(&corpus, piece).into_owned(), index.units.text(&corpus, piece).to_owned())
        };
        let (plain, plain_input, plain_text) = last(None);
        assert_eq!((plain, plain_input.as_str()), (0.0, plain_text.as_str()), "no header: no match, input = text");
        // A 3-token header: the introduction's first 2 words (half, rounded up), then the table's first word.
        let (headed, input, text) = last(Some(3));
        assert!(headed > 0.0, "the header's \"debt\" matches");
        assert_eq!((input.as_str(), text.as_str()), ("Long-term debt\nyear\nbonds 84 84", "bonds 84 84"));
    }
}
