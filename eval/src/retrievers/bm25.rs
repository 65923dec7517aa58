//! BM25 (Robertson & Zaragoza, 2009) over the same leaf units as the dense methods, with the `bm25`
//! crate's English tokenizer (unicode normalisation, stop words, Snowball stemming), k1 = 1.2, b = 0.75.
//! Under [`Scope::QueryDocuments`] each document is its own index (IDF and average length from its own
//! units); under [`Scope::Corpus`] one index holds every unit of the evaluated documents.
//!
//! BM25 scores only units that share a term with the query. So that it is scored on the same k as every
//! other method (ARCHITECTURE.md, "The metric contract"), the units without a common term follow the matching ones, with
//! score 0, in document order.

use arbor_datasets::Corpus;
use std::collections::{HashMap, HashSet};

use bm25::{Embedder, EmbedderBuilder, Language};

use crate::index::{Chunks, Item, QueryInput, Retriever, Scope};

pub struct Bm25<'a> {
    chunks: &'a Chunks,
    scope: Scope,
    /// One engine per indexed document (by corpus index), or a single one over them all; keys are unit
    /// indices.
    engines: Vec<Option<Engine>>,
}

/// BM25 over a set of units as an inverted index: for every term, the units holding it (in unit order)
/// with their saturated term frequency. The `bm25` crate's embedder (tokenizer, k1, b, average length
/// fitted to the units) gives the frequencies; scoring walks only the query terms' postings, where the
/// crate's own scorer visits every matching unit's whole term list for each query term. Its scores are
/// the crate's `Scorer`'s bit for bit: the same IDF expression and, per unit, the same additions in the
/// same order (query terms in order, repeats included; a term the unit lacks adds 0).
pub struct Engine {
    embedder: Embedder,
    /// The units, by local index (postings hold local indices).
    units: Vec<usize>,
    postings: HashMap<u32, Vec<(u32, f32)>>,
}

impl Engine {
    /// The index of `units`, each `(key, text)`: what [`Self::matches`] returns the keys of.
    pub fn new(units: Vec<(usize, String)>) -> Self {
        let texts: Vec<&str> = units.iter().map(|(_, t)| t.as_str()).collect();
        let embedder: Embedder = EmbedderBuilder::with_fit_to_corpus(Language::English, &texts).build();
        let mut postings: HashMap<u32, Vec<(u32, f32)>> = HashMap::new();
        for (local, (_, text)) in units.iter().enumerate() {
            let embedding = embedder.embed(text);
            let mut seen = HashSet::new();
            for t in embedding.iter().filter(|t| seen.insert(t.index)) {
                postings.entry(t.index).or_default().push((local as u32, t.value));
            }
        }
        Engine { embedder, units: units.into_iter().map(|(u, _)| u).collect(), postings }
    }

    /// ln(1 + (N - n + 0.5) / (n + 0.5)) for a term held by n of the N units.
    fn idf(&self, held_by: usize) -> f32 {
        let n = held_by as f32;
        let numerator = self.units.len() as f32 - n + 0.5;
        (1f32 + (numerator / (n + 0.5))).ln()
    }

    /// Every unit sharing a term with `query`, scored, in the order `units` were given.
    pub fn matches(&self, query: &str) -> Vec<(usize, f32)> {
        let mut scores = vec![0f32; self.units.len()];
        let mut hit = Vec::new();
        for term in self.embedder.embed(query).iter() {
            let Some(list) = self.postings.get(&term.index) else { continue };
            let idf = self.idf(list.len());
            for &(u, value) in list {
                let s = &mut scores[u as usize];
                if *s == 0.0 {
                    hit.push(u);
                }
                *s += idf * value;
            }
        }
        hit.sort_unstable();
        hit.into_iter().map(|u| (self.units[u as usize], scores[u as usize])).collect()
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
        // Every match, ranked by `top_k`, which breaks ties by unit order (the same in every process).
        let scored = engines.into_iter().flat_map(|e| e.matches(&query.text));
        let mut ranked = crate::index::top_k(scored, k);
        if ranked.len() < k {
            let matched: HashSet<usize> = ranked.iter().map(|&(u, _)| u).collect();
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
        // Two data rows make no table, so the header is asked for every cut sentence.
        let rule = |context| arbor_datasets::UnitConfig {
            max_sentences: 2,
            max_tokens: Some(6),
            context,
            context_on: arbor_datasets::units::ContextOn::CutSentences,
        };
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

    proptest::proptest! {
        /// The inverted index scores exactly what the `bm25` crate's own scorer scores, unit for unit.
        #[test]
        fn postings_score_as_the_crate_scorer(
            units in proptest::collection::vec(proptest::collection::vec(0usize..12, 0..14), 1..20),
            query in proptest::collection::vec(0usize..14, 1..8),
        ) {
            // A small vocabulary (repeats and stop words included) so terms are shared and repeated.
            const WORDS: [&str; 14] = ["lease", "tenant", "the", "rent", "term", "notice", "of", "landlord",
                "renewal", "deposit", "terms", "leases", "arbitration", "indemnity"];
            let text = |ws: &[usize]| ws.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
            let texts: Vec<(usize, String)> = units.iter().enumerate().map(|(u, ws)| (u + 3, text(ws))).collect();
            let engine = Engine::new(texts.clone());
            let mut scorer = bm25::Scorer::<usize>::new();
            for (u, t) in &texts {
                scorer.upsert(u, engine.embedder.embed(t));
            }
            let q = text(&query);
            let mut want: Vec<(usize, f32)> = scorer.matches(&engine.embedder.embed(&q)).into_iter().map(|m| (m.id, m.score)).collect();
            want.sort_by_key(|&(u, _)| u);
            proptest::prop_assert_eq!(engine.matches(&q), want);
        }
    }
}
