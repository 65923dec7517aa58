//! The reranker's training examples, which the reranker ([`super`]) and its matched control
//! ([`super::super::dense`], trained as the reranker trains with a bi-encoder in its place) both read: each
//! training and validation question with its first-stage candidates (dense cosines as the prior, BM25 for
//! the hard negatives), and how a (query, unit) pair is cut for the encoder.

use arbor_models::pooling::Role;
use std::collections::HashSet;

use arbor_datasets::span::gold_units;
use arbor_datasets::{Corpus, DocSpan, Query};
use arbor_eval::Scope;
use arbor_eval::index::{Chunks, QueryInput};
use arbor_eval::retrievers::bm25::Bm25;
use arbor_eval::retrievers::flat::dot;
use arbor_eval::Retriever;
use arbor_models::{DefaultBackend, SentenceEncoder};
use arbor_trainers::reranker::{Candidate, PairFormat, RerankExample, RerankerTraining, usable};

use crate::methods::Context;
use crate::methods::training::sample;
use crate::validation::VALIDATION;

/// How pairs (and its control's rows) are cut for `encoder`.
pub(crate) fn pair_format(encoder: &SentenceEncoder<DefaultBackend>, training: &RerankerTraining) -> PairFormat {
    PairFormat {
        special: encoder.special_ids(),
        max_query: training.max_query_tokens,
        max_len: training.max_pair_tokens.min(encoder.max_seq_length()),
        layer_norm_eps: encoder.config.layer_norm_eps,
    }
}

/// The training examples of `training.split` and the held-out ones of the validation split.
pub(in crate::methods) fn examples(ctx: &Context, training: &RerankerTraining) -> anyhow::Result<(Vec<RerankExample>, Vec<RerankExample>)> {
    let corpus = ctx.corpus;
    let mut queries = sample(corpus.eval_queries(Some(&training.split)), training.train_queries, training.schedule.seed);
    let n_train = queries.len();
    queries.extend(corpus.eval_queries(Some(VALIDATION)));
    let mut docs: Vec<usize> = queries.iter().flat_map(|q| corpus.query_docs(q)).collect();
    docs.sort_unstable();
    docs.dedup();
    let batch = ctx.encoder_config.batch_size;
    let first = FirstStage {
        units: &ctx.leaves.units,
        unit_vectors: &ctx.cache.unit_embeddings(ctx.encoder, corpus, ctx.leaves, ctx.keys, &docs, batch)?,
        bm25: &Bm25::build(corpus, &ctx.leaves.units, Scope::QueryDocuments, &docs),
    };
    let texts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
    let query_vectors = ctx.cache.text_embeddings(ctx.encoder, Role::Query, batch, &texts, "training queries")?;
    let (mut train, mut holdout) = (Vec::new(), Vec::new());
    for (i, (q, vector)) in queries.into_iter().zip(&query_vectors).enumerate() {
        let example = first.example(ctx.encoder, corpus, q, vector, training.hard_negatives);
        if i < n_train { train.push(example) } else { holdout.push(example) }
    }
    Ok((usable(training, train), usable(training, holdout)))
}

/// What training examples are drawn from: the units, their dense vectors (the prior, and with BM25 the
/// hard negatives).
struct FirstStage<'a> {
    units: &'a Chunks,
    unit_vectors: &'a [Vec<f32>],
    bm25: &'a Bm25<'a>,
}

impl FirstStage<'_> {
    fn example(&self, encoder: &SentenceEncoder<DefaultBackend>, corpus: &Corpus, q: &Query, query_vector: &[f32], pool: usize) -> RerankExample {
        let units = self.units;
        let docs = corpus.query_docs(q);
        let gold = corpus.gold(q);
        let in_scope: Vec<usize> = docs.iter().flat_map(|&d| units.by_doc[d].clone()).collect();
        let spans: Vec<DocSpan> = in_scope.iter().map(|&u| units.spans[u]).collect();
        let positives: Vec<usize> = gold_units(&spans, &gold).into_iter().map(|i| in_scope[i]).collect();
        let input = QueryInput { text: q.text.clone(), docs, embedding: None };
        // Hard negatives from both first stages, alternating: BM25's best and the dense best.
        let is_negative = |u: &usize| !gold.iter().any(|g| g.overlaps(&units.spans[*u]));
        let lexical: Vec<usize> =
            self.bm25.retrieve(&input, pool + positives.len()).iter().flat_map(|item| units.overlapping(&item.spans)).filter(is_negative).collect();
        let mut dense: Vec<usize> = in_scope.iter().copied().filter(is_negative).collect();
        dense.sort_by(|&a, &b| dot(query_vector, &self.unit_vectors[b]).total_cmp(&dot(query_vector, &self.unit_vectors[a])));
        let mut seen = HashSet::new();
        let negatives: Vec<usize> = lexical.into_iter().zip(dense).flat_map(|(l, d)| [l, d]).filter(|&u| seen.insert(u)).take(pool).collect();
        let candidates = |us: &[usize]| {
            // Each unit as the encoder reads it at evaluation: its header (`units.context`), then the piece.
            let inputs: Vec<_> = us.iter().map(|&u| units.input(corpus, u)).collect();
            let pieces = encoder.word_pieces(&inputs.iter().map(|t| t.as_ref()).collect::<Vec<&str>>());
            pieces.into_iter().zip(us).map(|(ids, &u)| Candidate { ids, prior: dot(query_vector, &self.unit_vectors[u]), teacher: None }).collect()
        };
        RerankExample {
            query: encoder.word_pieces(&[q.text.as_str()]).remove(0),
            positives: candidates(&positives),
            negatives: candidates(&negatives),
        }
    }
}

