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
