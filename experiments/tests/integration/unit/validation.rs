//! The unit tests of `arbor_experiments::validation` (src/validation.rs).

use arbor_datasets::Corpus;
use arbor_datasets::{Document, Evidence, Query};
use arbor_experiments::validation::*;
use proptest::prelude::*;
use std::collections::HashSet;
use std::path::Path;

fn corpus(docs: &[(String, &str)], queries: &[(usize, &str)]) -> Corpus {
    let documents = docs
        .iter()
        .map(|(id, split)| Document { id: id.clone(), title: String::new(), text: "Text.".into(), sections: vec![], split: Some(split.to_string()) })
        .collect();
    let queries = queries
        .iter()
        .enumerate()
        .map(|(i, &(d, split))| Query {
            id: format!("q{i}"),
            text: "?".into(),
            doc_ids: vec![docs[d].0.clone()],
            evidence: vec![Evidence { doc_id: docs[d].0.clone(), start: 0, end: 4 }],
            answers: vec![],
            split: Some(split.into()),
        })
        .collect();
    Corpus::new(documents, queries, Path::new("t")).unwrap()
}

#[test]
fn each_collection_gives_its_share_and_keeps_training_documents() {
    let mut docs: Vec<(String, &str)> = (0..10).map(|i| (format!("nda/{i}"), "train")).collect();
    docs.extend((0..3).map(|i| (format!("privacy/{i}"), "train")));
    docs.push(("lone/0".into(), "train"));
    docs.push(("nda/t".into(), "test"));
    let (carved, moved) = ValidationConfig::default().carve(corpus(&docs, &[(0, "train"), (14, "test")]));
    let held = |c: &str| carved.documents.iter().filter(|d| collection(&d.id) == c && d.split.as_deref() == Some(VALIDATION)).count();
    assert_eq!((held("nda"), held("privacy"), held("lone")), (2, 1, 0), "round(0.2 x 10), at least 1 of 3, none of 1");
    assert_eq!(moved, 3);
    assert_eq!(carved.documents[14].split.as_deref(), Some("test"));
    // The same seed carves the same documents; another seed, others.
    let again = ValidationConfig::default().carve(corpus(&docs, &[])).0;
    assert!(again.documents.iter().zip(&carved.documents).all(|(a, b)| a.split == b.split));
    let other = ValidationConfig { seed: 7, ..Default::default() }.carve(corpus(&docs, &[])).0;
    assert!(other.documents.iter().zip(&carved.documents).any(|(a, b)| a.split != b.split));
    assert!(ValidationConfig { fraction: 1.0, seed: 0 }.check().is_err() && ValidationConfig { fraction: 0.0, seed: 0 }.check().is_err());
}

/// A training query asked against two documents moves both with it, whichever of them was drawn.
#[test]
fn documents_a_query_ties_together_move_as_one_group() {
    let docs: Vec<(String, &str)> = (0..10).map(|i| (format!("c/{i}"), "train")).collect();
    for seed in 0..20 {
        let mut c = corpus(&docs, &(0..10).map(|d| (d, "train")).collect::<Vec<_>>());
        for q in &mut c.queries {
            // Documents pair up: c/0 with c/1, c/2 with c/3, ...
            let partner = format!("c/{}", q.doc_ids[0][2..].parse::<usize>().unwrap() ^ 1);
            q.doc_ids.push(partner);
        }
        let (carved, _) = ValidationConfig { fraction: 0.2, seed }.carve(c);
        let split = |id: &str| carved.documents[carved.doc_index(id).unwrap()].split.clone();
        for q in &carved.queries {
            let splits: HashSet<Option<String>> = q.doc_ids.iter().map(|d| split(d)).collect();
            assert_eq!(splits.len(), 1, "query {} reads {:?}", q.id, q.doc_ids);
            assert_eq!(q.split, splits.into_iter().next().unwrap());
        }
    }
}

proptest! {
    /// No test document or query ever moves; no query left in training touches a validation document;
    /// every collection with two or more training documents keeps at least one.
    #[test]
    fn the_split_never_puts_a_test_document_in_training(
        docs in prop::collection::vec((0usize..3, prop::bool::ANY), 1..30),
        queries in prop::collection::vec((0usize..30, prop::bool::ANY), 0..40),
        fraction in 0.01f64..0.99,
        seed in 0u64..1000,
    ) {
        let docs: Vec<(String, &str)> = docs.iter().enumerate().map(|(i, &(c, test))| (format!("c{c}/{i}"), if test { "test" } else { "train" })).collect();
        let queries: Vec<(usize, &str)> = queries.iter().map(|&(d, _)| (d % docs.len(), docs[d % docs.len()].1)).collect();
        let before = corpus(&docs, &queries);
        let (after, _) = ValidationConfig { fraction, seed }.carve(before.clone());
        for (a, b) in after.documents.iter().zip(&before.documents) {
            prop_assert!(b.split.as_deref() != Some("test") || a.split == b.split);
        }
        for (a, b) in after.queries.iter().zip(&before.queries) {
            prop_assert!(b.split.as_deref() != Some("test") || a.split == b.split);
        }
        let validation: HashSet<&str> = after.documents.iter().filter(|d| d.split.as_deref() == Some(VALIDATION)).map(|d| d.id.as_str()).collect();
        for q in after.eval_queries(Some("train")) {
            prop_assert!(q.doc_ids.iter().all(|d| !validation.contains(d.as_str())));
        }
        for c in ["c0", "c1", "c2"] {
            let train = |corpus: &Corpus| corpus.documents.iter().filter(|d| collection(&d.id) == c && d.split.as_deref() == Some("train")).count();
            prop_assert!(train(&before) < 2 || train(&after) >= 1);
        }
    }
}
