//! Runs one retriever over the evaluation queries: metrics, latency per query, tokens handed on.

use std::time::Instant;

use arbor_datasets::span::merge;
use arbor_datasets::{Corpus, DocSpan};
use serde::{Deserialize, Serialize};

use crate::index::{Chunks, Item, QueryInput, Retriever, Tokens};
use crate::scoring::budget::spend;
use crate::scoring::metrics::{Metrics, QueryMetrics, score_query};
use crate::scoring::parents::{Parents, Widened, hand_on_parents};
use crate::scoring::report::{Latency, MethodResult};
use crate::scoring::retrievals::{Handed, Retrieval};

/// A query as the evaluator needs it: what the retriever sees, and the gold spans.
#[derive(Debug, Clone)]
pub struct EvalQuery {
    pub id: String,
    pub input: QueryInput,
    pub gold: Vec<DocSpan>,
}

/// How many items a method hands on to the generator (the token count is taken over their union).
pub const CONTEXT_K: usize = 5;

/// How every method is asked and scored in a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EvalSettings {
    /// Items retrieved per query (at least 10 are, for nDCG@10).
    pub top_k: usize,
    /// The token budget on the ranked items ([`crate::scoring::budget`]); `None` for none.
    pub max_tokens: Option<usize>,
}

/// What a method hands on for one query: its first `k` items, each handed on as the parent it touches where
/// `parents` is given (several children of one parent being one item, it asks for twice as many while fewer
/// than `k` remain and the retriever gave all it was asked for), then spent under `max_tokens` ([`spend`]).
/// Returns the retriever's own ranking too. [`evaluate`] and `arbor query` both call it, so a served ranking
/// is the evaluated one.
pub fn hand_on(
    retriever: &dyn Retriever,
    input: &QueryInput,
    k: usize,
    parents: Option<&Parents>,
    max_tokens: Option<usize>,
    tokens: &Tokens,
    corpus: &Corpus,
) -> (Vec<Item>, Vec<Item>) {
    let mut items = retriever.retrieve(input, k);
    let widened = match parents {
        None => items.iter().cloned().map(Widened::plain).collect(),
        Some(parents) => {
            let mut want = k;
            loop {
                let w = hand_on_parents(items.clone(), parents);
                if w.len() >= k || items.len() < want {
                    break w;
                }
                want *= 2;
                items = retriever.retrieve(input, want);
            }
        }
    };
    let handed = match max_tokens {
        Some(budget) => spend(widened, budget, retriever, input, tokens, corpus, parents),
        None => widened.into_iter().map(|w| w.item).collect(),
    };
    (items, handed)
}

/// Evaluates `retriever` on every query; `tokens` counts what it hands on; `parents`, when given, holds each
/// document's parents, in which every item is handed on whole (or, under the budget, around its piece) ([`crate::scoring::parents`]); `progress` is called once per
/// query. Returns the row and, per query, the items it handed on. A retriever that breaks the metric contract (fewer than min(k, leaves in scope) items, unless
/// its items hold every leaf in scope, before the budget) is a bug in it, and stops the run.
pub fn evaluate(
    retriever: &dyn Retriever,
    corpus: &Corpus,
    tokens: &Tokens,
    queries: &[EvalQuery],
    settings: &EvalSettings,
    parents: Option<&Parents>,
    progress: &mut dyn FnMut(),
) -> (MethodResult, Vec<Retrieval>) {
    let k = settings.top_k.max(10);
    let mut per_query = Vec::with_capacity(queries.len());
    let mut latencies = Vec::with_capacity(queries.len());
    let mut handed_tokens = 0usize;
    let mut retrieved = Vec::with_capacity(queries.len());
    let leaves = retriever.leaves();
    // Per query with a document level: whether its beam kept a gold document.
    let mut kept_gold: Vec<bool> = Vec::new();
    for q in queries {
        if let Some(kept) = retriever.kept_documents(&q.input) {
            kept_gold.push(q.gold.iter().any(|g| kept.contains(&g.doc)));
        }
        let start = Instant::now();
        let (items, handed_on) = hand_on(retriever, &q.input, k, parents, settings.max_tokens, tokens, corpus);
        let in_scope: Vec<usize> = leaves.candidates(&q.input).collect();
        assert!(
            items.len() >= k.min(in_scope.len()) || covers(&items, leaves, &in_scope),
            "{} returned {} items of {} for query {}",
            retriever.name(),
            items.len(),
            k.min(in_scope.len()),
            q.id
        );
        let items = handed_on;
        latencies.push(start.elapsed().as_secs_f64() * 1e3);
        let gold_leaves: Vec<DocSpan> = leaves.overlapping(&q.gold).into_iter().map(|c| leaves.spans[c]).collect();
        let scored = score_query(corpus, &q.gold, &gold_leaves, &items);
        retrieved.push(Retrieval {
            method: retriever.name().to_owned(),
            query: q.id.clone(),
            ie: ie_percent(&scored),
            items: items.iter().map(|i| Handed::of(i, retriever, &q.input, corpus)).collect(),
        });
        per_query.push(scored);
        let handed: Vec<DocSpan> = items.iter().take(CONTEXT_K).flat_map(|i| i.spans.iter().copied()).collect();
        handed_tokens += tokens.of(&handed);
        progress();
    }
    let row = MethodResult {
        name: retriever.name().to_owned(),
        metrics: Metrics::mean(&per_query),
        latency_ms: Latency::of(&mut latencies),
        tokens_per_query: handed_tokens as f64 / queries.len().max(1) as f64,
        index_ms_per_doc: None,
        details: String::new(),
        tree_shape: None,
        documents_kept: (!kept_gold.is_empty()).then(|| 100.0 * kept_gold.iter().filter(|&&k| k).count() as f64 / kept_gold.len() as f64),
        role: Default::default(),
        per_query: per_query.iter().map(ie_percent).collect(),
    };
    (row, retrieved)
}

/// A query's IE in percent, the mean of its readings.
fn ie_percent(m: &QueryMetrics) -> f64 {
    100.0 * m.ie.iter().sum::<f64>() / m.ie.len() as f64
}

/// Whether `items` hold every one of the leaf chunks `in_scope` (methods whose items are runs of chunks).
fn covers(items: &[Item], leaves: &Chunks, in_scope: &[usize]) -> bool {
    let held = merge(items.iter().flat_map(|i| i.spans.iter().copied()).collect());
    in_scope.iter().all(|&c| {
        let leaf = leaves.spans[c];
        held.iter().any(|h| h.contains(&leaf))
    })
}
