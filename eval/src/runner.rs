//! Runs one retriever over the evaluation queries: metrics, latency per query, tokens handed on.

use std::time::Instant;

use arbor_datasets::span::merge;
use arbor_datasets::{Corpus, DocSpan};

use crate::index::{QueryInput, Retriever};
use crate::metrics::{score_query, Metrics};
use crate::report::{Latency, MethodResult};

/// A query as the evaluator needs it: what the retriever sees, and the gold spans.
#[derive(Debug, Clone)]
pub struct EvalQuery {
    pub id: String,
    pub input: QueryInput,
    pub gold: Vec<DocSpan>,
}

/// How many items a method hands on to the generator (the token count is taken over their union).
pub const CONTEXT_K: usize = 5;

/// Evaluates `retriever` on every query, retrieving `top_k` items (at least 10, for nDCG@10).
/// `count_tokens` counts the tokens of a text; `progress` is called once per query.
pub fn evaluate(
    retriever: &dyn Retriever,
    corpus: &Corpus,
    queries: &[EvalQuery],
    top_k: usize,
    count_tokens: &dyn Fn(&str) -> usize,
    progress: &mut dyn FnMut(),
) -> MethodResult {
    let mut per_query = Vec::with_capacity(queries.len());
    let mut latencies = Vec::with_capacity(queries.len());
    let mut tokens = 0usize;
    for q in queries {
        let start = Instant::now();
        let items = retriever.retrieve(&q.input, top_k.max(10));
        latencies.push(start.elapsed().as_secs_f64() * 1e3);
        per_query.push(score_query(corpus, &q.gold, &items));
        let handed = merge(items.iter().take(CONTEXT_K).flat_map(|i| i.spans.iter().copied()).collect());
        tokens += handed.iter().map(|s| count_tokens(&corpus.documents[s.doc].text[s.span.start..s.span.end])).sum::<usize>();
        progress();
    }
    MethodResult {
        name: retriever.name().to_owned(),
        metrics: Metrics::mean(&per_query),
        latency_ms: Latency::of(&mut latencies),
        tokens_per_query: tokens as f64 / queries.len().max(1) as f64,
        index_ms_per_doc: 0.0,
    }
}
