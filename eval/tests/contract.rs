//! The metric contract of ARCHITECTURE.md, for every retriever: on any corpus and query, exactly
//! `min(k, units in scope)` items, or more where a hierarchy offers more nodes, never more than k; under a
//! token budget, never more tokens than the budget.

use std::borrow::Cow;
use std::path::Path;

use arbor_datasets::Span;
use arbor_datasets::span::merge;
use arbor_datasets::{Corpus, DocSpan, Document, Query, TokenStarts};
use arbor_eval::retrievers::beam::{BeamConfig, Strategy};
use arbor_eval::retrievers::bm25::Bm25;
use arbor_eval::retrievers::document_level::DocumentVector;
use arbor_eval::retrievers::flat::FlatDense;
use arbor_eval::retrievers::fusion::Fusion;
use arbor_eval::retrievers::hierarchy::{AutoMerging, Hierarchy};
use arbor_eval::retrievers::level_retrieval::LevelRetriever;
use arbor_eval::retrievers::raptor::{RaptorParams, RaptorRetriever, RaptorSearch, RaptorTree, Summary};
use arbor_eval::retrievers::rse::{Rse, RsePreset};
use arbor_eval::retrievers::tree_retrieval::{TreeRetriever, TreeSearch};
use arbor_eval::scoring::budget::spend;
use arbor_eval::scoring::parents::Widened;
use arbor_eval::structures::levels::Levels;
use arbor_eval::structures::tree::{Similarity, Tree};
use arbor_eval::{LeafIndex, QueryInput, Retriever, Scope};
use proptest::prelude::*;

const WORDS: [&str; 8] = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "field"];

/// Documents of one-to-three paragraphs of short sentences built from `picks`.
fn corpus(docs: &[Vec<Vec<usize>>]) -> Corpus {
    let documents = docs
        .iter()
        .enumerate()
        .map(|(d, paragraphs)| {
            let text = paragraphs
                .iter()
                .map(|sentences| {
                    sentences.iter().map(|&w| format!("{} {}.", capital(WORDS[w % 8]), WORDS[(w / 8) % 8])).collect::<Vec<_>>().join(" ")
                })
                .collect::<Vec<_>>()
                .join("\n\n");
            Document { id: format!("d{d}"), title: String::new(), text, sections: vec![], split: None }
        })
        .collect();
    Corpus::new(documents, Vec::<Query>::new(), Path::new("t")).unwrap()
}

fn capital(w: &str) -> String {
    let mut c = w.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn vector(seed: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..4).map(|i| (((seed * 7919 + i * 104_729) % 1000) as f32 / 500.0) - 1.0).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

fn tree(index: &LeafIndex, d: usize, embeddings: &[Vec<f32>]) -> Tree {
    let units: Vec<usize> = index.units.by_doc[d].clone().collect();
    let n = units.len();
    let leaves: Vec<f32> = units.iter().flat_map(|&u| embeddings[u].clone()).collect();
    let m: Vec<f32> = (0..n * n).map(|i| ((i * 31 + d) % 17) as f32 / 17.0).collect();
    Tree::build(units.iter().map(|&u| index.units.spans[u]).collect(), &leaves, 4, &Similarity::Dense { n, values: &m })
}

/// Each paragraph of document `d` a section, over its units.
fn hierarchy(corpus: &Corpus, index: &LeafIndex, d: usize) -> Hierarchy {
    let paragraphs: Vec<Span> = index.segments[d].paragraphs.iter().map(|p| p.span).collect();
    let leaves: Vec<(usize, Span)> = index.units.by_doc[d].clone().map(|c| (c, index.units.spans[c].span)).collect();
    Hierarchy::build(corpus.documents[d].text.len(), &paragraphs, &leaves)
}

/// A RAPTOR tree over document `d`'s units that clusters even a few (reduction dimension 0); a summary is its
/// first leaf, embedded as that leaf.
fn raptor(index: &LeafIndex, d: usize, embeddings: &[Vec<f32>]) -> RaptorTree {
    let range = index.units.by_doc[d].clone();
    let spans: Vec<Span> = index.units.spans[range.clone()].iter().map(|s| s.span).collect();
    let tokens: Vec<usize> = spans.iter().map(|&s| index.tokens.0[d].count(s)).collect();
    let mut p = RaptorParams::default();
    p.cluster.reduction_dimension = 0;
    let mut summarise =
        |under: &[Span]| -> Result<Summary, ()> { Ok(Summary { text: under[0].start.to_string(), spans: vec![under[0]], tokens: 1 }) };
    let mut embed = |texts: &[String]| -> Result<Vec<Vec<f32>>, ()> {
        Ok(texts.iter().map(|t| embeddings[range.clone()][spans.iter().position(|s| s.start.to_string() == *t).unwrap()].clone()).collect())
    };
    RaptorTree::build(&spans, embeddings[range.clone()].to_vec(), &tokens, &p, &mut summarise, &mut embed).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_method_hands_on_min_k_units_items(
        docs in prop::collection::vec(prop::collection::vec(prop::collection::vec(0usize..64, 1..5), 1..4), 1..3),
        k in 1usize..12,
        query_words in prop::collection::vec(0usize..8, 0..3),
        delta in -1.0f32..1.0,
        beam_width in 1usize..4,
        max_leaves in prop::option::of(1usize..3),
        budget in 1usize..40,
        plan in (0usize..4, 0usize..4),
    ) {
        let corpus = corpus(&docs);
        let tokens: Vec<TokenStarts> = corpus.documents.iter().map(|d| TokenStarts::words(&d.text)).collect();
        let index = LeafIndex::build(&corpus, &Default::default(), tokens).unwrap();
        let embeddings: Vec<Vec<f32>> = (0..index.units.len()).map(vector).collect();
        let trees: Vec<Option<Tree>> = (0..corpus.documents.len()).map(|d| Some(tree(&index, d, &embeddings))).collect();
        let text = query_words.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
        for scope in [Scope::QueryDocuments, Scope::Corpus] {
            // Under corpus scope the query ranks every document (the runner puts the pool in its docs).
            let all: Vec<usize> = (0..corpus.documents.len()).collect();
            let docs = if scope == Scope::Corpus { all.clone() } else { vec![0] };
            let query = QueryInput { text: text.clone(), docs, embedding: Some(vector(999)) };
            let units = index.units.candidates(&query).count();
            let flat = FlatDense { name: "flat".into(), chunks: Cow::Borrowed(&index.units), embeddings: Cow::Borrowed(&embeddings) };
            let bm25 = Bm25::build(&corpus, &index.units, scope, &all);
            let mut retrievers: Vec<Box<dyn Retriever + '_>> = vec![Box::new(flat), Box::new(bm25)];
            let beam = BeamConfig { beam_width, delta, strategy: Strategy::Threshold, max_leaves };
            for search in [TreeSearch::Beam(beam), TreeSearch::Collapsed, TreeSearch::LeavesOnly, TreeSearch::UpperOnly] {
                let trees = trees.clone();
                retrievers.push(Box::new(TreeRetriever::new(format!("{search:?}"), trees, &index.units, search)));
            }
            // A document level keeping one document: its items first, the next documents' after while fewer than k.
            let search = TreeSearch::Beam(beam);
            let tree = TreeRetriever::new("document level".into(), trees.clone(), &index.units, search);
            retrievers.push(Box::new(tree.with_document_level(1, DocumentVector::LeafMean)));
            let parts: Vec<Box<dyn Retriever + '_>> = vec![
                Box::new(FlatDense { name: "dense".into(), chunks: Cow::Borrowed(&index.units), embeddings: Cow::Borrowed(&embeddings) }),
                Box::new(Bm25::build(&corpus, &index.units, scope, &all)),
            ];
            retrievers.push(Box::new(Fusion { name: "hybrid".into(), parts, chunks: Cow::Borrowed(&index.units), k_rrf: 60.0, depth: usize::MAX }));
            let chars = index.units.spans.iter().map(|s| s.span.len()).collect();
            let params = RsePreset::Balanced.params();
            retrievers.push(Box::new(Rse { name: "rse".into(), chunks: Cow::Borrowed(&index.units), embeddings: Cow::Borrowed(&embeddings), chars, params }));
            let hierarchies = (0..corpus.documents.len()).map(|d| Some(hierarchy(&corpus, &index, d))).collect();
            retrievers.push(Box::new(AutoMerging { name: "hierarchy".into(), trees: hierarchies, chunks: Cow::Borrowed(&index.units), embeddings: Cow::Borrowed(&embeddings), ratio: 0.3 }));
            for search in [RaptorSearch::Collapsed, RaptorSearch::Traversal { top_k: beam_width }] {
                let trees = (0..corpus.documents.len()).map(|d| Some(raptor(&index, d, &embeddings))).collect();
                retrievers.push(Box::new(RaptorRetriever { name: format!("{search:?}"), trees, leaves: Cow::Borrowed(&index.units), search }));
            }
            let levels: Vec<Option<Levels>> = (0..corpus.documents.len())
                .map(|d| {
                    let leaves: Vec<(Span, usize)> = index.units.by_doc[d].clone().map(|u| (index.units.spans[u].span, index.tokens.count(index.units.spans[u]))).collect();
                    Some(Levels::by_tokens(&leaves, &[6, 12]))
                })
                .collect();
            let level_vectors = levels.iter().map(|l| (0..l.as_ref().unwrap().chunks.len()).map(|c| vector(c + 77)).collect()).collect();
            let (lo, hi) = (plan.0.min(plan.1), plan.0.max(plan.1));
            let plan = Box::new(move |_: &QueryInput| (lo, hi));
            retrievers.push(Box::new(LevelRetriever { name: "levels".into(), levels, embeddings: level_vectors, leaves: Cow::Borrowed(&index.units), plan }));
            for r in &retrievers {
                let items = r.retrieve(&query, k);
                let held: Vec<DocSpan> = merge(items.iter().flat_map(|i| i.spans.clone()).collect());
                let in_scope: Vec<usize> = index.units.candidates(&query).collect();
                let covers = in_scope.iter().all(|&c| held.iter().any(|h| h.contains(&index.units.spans[c])));
                prop_assert!((items.len() >= k.min(units) || covers) && items.len() <= k, "{}: {} items, k {k}, {units} units", r.name(), items.len());
                let handed = spend(items.into_iter().map(Widened::plain).collect(), budget, r.as_ref(), &query, &index.tokens, &corpus, None);
                let spans: Vec<DocSpan> = handed.iter().flat_map(|i| i.spans.clone()).collect();
                prop_assert!(index.tokens.of(&spans) <= budget, "{}: over the budget", r.name());
            }
        }
    }
}
