//! The validation split: carved from a corpus's `train` documents, by document (a document's queries stay
//! together), stratified by collection (the part of a document id before its first `/`, as
//! legalbench-rag-mini's `contractnli/...`; one collection when ids have none), with a fixed seed. Each
//! collection with n >= 2 training documents gives round(fraction x n) of them, at least 1 and at most
//! n - 1, so every collection keeps training documents. Their documents and every query that touches one
//! take the split `validation`: trainers hold them out, choose their checkpoint on them, and sweeps select
//! on them; a `test` document or query is never touched. Documents a training query ties together move
//! as one group, so no query reads both a training and a validation document.

use std::collections::{BTreeMap, HashSet};

use arbor_datasets::Corpus;
use serde::{Deserialize, Serialize};

use crate::cache::key;

/// `data.validation: Some((fraction: 0.2, seed: 0))`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationConfig {
    /// The share of each collection's training documents held out, strictly between 0 and 1.
    pub fraction: f64,
    pub seed: u64,
}

impl Default for ValidationConfig {
    fn default() -> Self {
        ValidationConfig { fraction: 0.2, seed: 0 }
    }
}

/// The split name of the carved documents and queries.
pub const VALIDATION: &str = "validation";

impl ValidationConfig {
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.fraction > 0.0 && self.fraction < 1.0,
            "data.validation.fraction must be strictly between 0 and 1, got {} (None: no validation split)",
            self.fraction
        );
        Ok(())
    }

    /// `corpus` with its validation split carved out of `train`; returns it and how many documents moved.
    pub fn carve(&self, mut corpus: Corpus) -> (Corpus, usize) {
        let mut by_collection: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (d, doc) in corpus.documents.iter().enumerate() {
            if doc.split.as_deref() == Some("train") {
                by_collection.entry(collection(&doc.id)).or_default().push(d);
            }
        }
        let mut held: HashSet<usize> = HashSet::new();
        for docs in by_collection.into_values() {
            let n = docs.len();
            if n < 2 {
                continue;
            }
            let take = ((self.fraction * n as f64).round() as usize).clamp(1, n - 1);
            // A fixed order that depends only on the seed and the document ids (not on a random number
            // generator's version): ascending digest.
            let mut order: Vec<(String, usize)> = docs.iter().map(|&d| (key(&(self.seed, &corpus.documents[d].id)), d)).collect();
            order.sort();
            held.extend(order.into_iter().take(take).map(|(_, d)| d));
        }
        // A training query asked against several documents ties them: when one of them is held out, all are
        // (whole connected groups move), so that no query is split between training and validation.
        let mut ids: HashSet<String> = held.iter().map(|&d| corpus.documents[d].id.clone()).collect();
        loop {
            let before = ids.len();
            for q in corpus.queries.iter().filter(|q| q.split.as_deref() == Some("train")) {
                let docs = q.doc_ids.iter().chain(q.evidence.iter().map(|e| &e.doc_id));
                if docs.clone().any(|d| ids.contains(d)) {
                    ids.extend(docs.filter(|d| corpus.doc_index(d).is_some_and(|i| corpus.documents[i].split.as_deref() == Some("train"))).cloned());
                }
            }
            if ids.len() == before {
                break;
            }
        }
        held.extend(ids.iter().filter_map(|id| corpus.doc_index(id)));
        for &d in &held {
            corpus.documents[d].split = Some(VALIDATION.into());
        }
        for q in &mut corpus.queries {
            if q.split.as_deref() == Some("train") && q.doc_ids.iter().any(|d| ids.contains(d)) {
                q.split = Some(VALIDATION.into());
            }
        }
        (corpus, held.len())
    }
}

/// The collection of a document: its id up to the first `/` (empty when it has none).
pub fn collection(id: &str) -> &str {
    id.split_once('/').map_or("", |(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::{Document, Evidence, Query};
    use proptest::prelude::*;
    use std::path::Path;

    fn corpus(docs: &[(String, &str)], queries: &[(usize, &str)]) -> Corpus {
        let documents = docs
            .iter()
            .map(|(id, split)| Document {
                id: id.clone(),
                title: String::new(),
                text: "Text.".into(),
                sections: vec![],
                split: Some(split.to_string()),
            })
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
}
