//! Matched controls, added to a run for every method trained on the training queries, so that a trained
//! method never stands only beside untrained baselines: its margin over them includes whatever any use of
//! the same training data gives, and only its margin over its controls is its own.
//!
//! | `controls:` | rows added | what they use |
//! |---|---|---|
//! | `Dense` | [`super::dense`]: dense retrieval fine-tuned by InfoNCE alone (the reranker's: a bi-encoder on its own groups) | the method's queries, batches, epochs, seed, rates, encoder regime ([`super::MethodSpec::dense_control`]) |
//! | `Exemplars` | [`super::exemplars`] over BM25 and over dense | the nearest training questions' gold text, from the method's own sample, no training |
//! | `Fused` | the dense control and the dense exemplars, each fused with BM25 by RRF | as above |
//!
//! Controls of several methods trained on the same queries and epochs are added once, and name every
//! method they control.

use serde::{Deserialize, Serialize};

use super::Method;
use super::Trains;
use super::exemplars::{ExemplarRanker, ExemplarsConfig};
use super::hybrid::HybridConfig;

/// One family of matched controls (`controls: [Dense, Exemplars, Fused]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControlKind {
    Dense,
    Exemplars,
    Fused,
}

impl ControlKind {
    /// Every family: the default.
    pub fn all() -> Vec<ControlKind> {
        vec![ControlKind::Dense, ControlKind::Exemplars, ControlKind::Fused]
    }
}

/// The matched controls of `methods` (those in `kinds`), each with the indices of the methods it controls,
/// in the order they are first needed. A control that is itself one of `methods` (a fine-tuned dense row
/// listed beside the SproutRAG rows it controls) is listed too: the report gives that row the control's
/// role rather than a second row. No method is its own control.
pub fn matched(methods: &[Method], kinds: &[ControlKind]) -> Vec<(Method, Vec<usize>)> {
    let mut out: Vec<(Method, Vec<usize>)> = Vec::new();
    for (i, method) in methods.iter().enumerate() {
        let Trains::Queries(training) = method.spec().trains() else { continue };
        let Some(dense) = method.spec().dense_control().map(Method::Dense) else { continue };
        // The exemplar pool is the method's own sample of its split (every query when it samples none).
        let (train_queries, seed) = (training.train_queries, training.train_queries.map_or(0, |_| training.schedule.seed));
        let exemplars =
            |over| Method::Exemplars(ExemplarsConfig { over, split: training.split.clone(), train_queries, seed, ..ExemplarsConfig::default() });
        let fused = |m: Method| Method::Hybrid(HybridConfig { dense: Some(Box::new(m)), ..HybridConfig::default() });
        let mut rows = Vec::new();
        if kinds.contains(&ControlKind::Dense) {
            rows.push(dense.clone());
        }
        if kinds.contains(&ControlKind::Exemplars) {
            rows.push(exemplars(ExemplarRanker::Bm25));
            rows.push(exemplars(ExemplarRanker::Dense));
        }
        if kinds.contains(&ControlKind::Fused) {
            rows.push(fused(dense));
            rows.push(fused(exemplars(ExemplarRanker::Dense)));
        }
        for row in rows {
            if row == *method {
                continue;
            }
            match out.iter_mut().find(|(m, _)| *m == row) {
                Some((_, of)) => of.push(i),
                None => out.push((row, vec![i])),
            }
        }
    }
    out
}
