//! Exemplar expansion: a control that uses the training queries without training anything. Each query
//! is joined by its `neighbours` nearest training questions (by the encoder's cosine) and their gold text,
//! the way templated benchmarks reward any method that has seen the training split:
//!
//! ```text
//! BM25:   the query text followed by the neighbours' gold texts, ranked by BM25
//! dense:  q' = normalise(e(q) + mean_j e(gold_j)), ranked by cosine over the units (Rocchio's expansion,
//!         on vectors: the neighbours' gold texts together exceed what the encoder reads)
//! ```
//!
//! A trained method that does not beat this on the same split has not shown that its idea, rather than
//! the training data, carries its gain.

use arbor_models::pooling::Role;
use std::borrow::Cow;
use std::collections::HashMap;

use arbor_eval::index::{Chunks, Item, QueryInput, Retriever, top_k};
use arbor_eval::retrievers::bm25::Bm25;
use arbor_eval::retrievers::flat::{FlatDense, dot};
use serde::{Deserialize, Serialize};

use super::{Built, Context, MethodSpec, QueryVectors, Trains};

/// `Exemplars((over: Bm25, neighbours: 3))` in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExemplarsConfig {
    pub over: ExemplarRanker,
    /// Training questions joined to each query.
    pub neighbours: usize,
    /// The split the exemplars come from.
    pub split: String,
    /// Only a sample of this many of the split's queries, drawn by `seed` as every trainer draws its
    /// sample (super::training::sample): as a control, the sample of the method it controls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub train_queries: Option<usize>,
    #[serde(skip_serializing_if = "is_zero")]
    pub seed: u64,
}

fn is_zero(seed: &u64) -> bool {
    *seed == 0
}

/// What ranks the expanded query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExemplarRanker {
    Bm25,
    Dense,
}

impl Default for ExemplarsConfig {
    fn default() -> Self {
        ExemplarsConfig { over: ExemplarRanker::Bm25, neighbours: 3, split: "train".into(), train_queries: None, seed: 0 }
    }
}

impl MethodSpec for ExemplarsConfig {
    fn label(&self) -> String {
        let how = match self.over {
            ExemplarRanker::Bm25 => "BM25 over the query and",
            ExemplarRanker::Dense => "dense, the query's vector moved towards",
        };
        let pool = self.train_queries.map_or(String::new(), |n| format!(" (a sample of {n}, seed {})", self.seed));
        format!("Exemplars: {how} the gold text of its {} nearest {} questions{pool}", self.neighbours, self.split)
    }

    fn kind(&self) -> String {
        match self.over {
            ExemplarRanker::Bm25 => "Exemplars, BM25 (control)".into(),
            ExemplarRanker::Dense => "Exemplars, dense (control)".into(),
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.neighbours > 0, "Exemplars: neighbours must be at least 1");
        Ok(())
    }

    fn trains(&self) -> Trains {
        Trains::LooksUp(self.split.clone())
    }

    fn reads_splits(&self) -> Vec<(&'static str, String)> {
        vec![("Exemplars((split))", self.split.clone())]
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let corpus = ctx.corpus;
        let exemplars = super::training::sample(corpus.eval_queries(Some(&self.split)), self.train_queries, self.seed);
        anyhow::ensure!(!exemplars.is_empty(), "Exemplars: no query with gold evidence in split {:?}", self.split);
        let batch = ctx.encoder_config.batch_size;
        let texts: Vec<&str> = exemplars.iter().map(|q| q.text.as_str()).collect();
        let exemplar_vectors = ctx.cache.text_embeddings(ctx.encoder, Role::Query, batch, &texts, &format!("{} questions", self.split))?;
        let gold_texts: Vec<String> = exemplars
            .iter()
            .map(|q| corpus.gold(q).iter().map(|g| &corpus.documents[g.doc].text[g.span.start..g.span.end]).collect::<Vec<_>>().join(" "))
            .collect();
        let query_vectors = ctx.query_vectors()?;
        // Each evaluated query's nearest exemplars (never itself, when a split is evaluated whole).
        let nearest: Vec<Vec<usize>> = ctx
            .queries
            .iter()
            .zip(query_vectors)
            .map(|(q, v)| {
                let scores = exemplar_vectors.iter().enumerate().filter(|(e, _)| exemplars[*e].id != q.id).map(|(e, x)| (e, dot(v, x)));
                top_k(scores, self.neighbours).into_iter().map(|(e, _)| e).collect()
            })
            .collect();
        let label = self.label();
        match self.over {
            ExemplarRanker::Bm25 => {
                let expanded: HashMap<String, String> = ctx
                    .queries
                    .iter()
                    .zip(&nearest)
                    .map(|(q, near)| {
                        let mut text = q.input.text.clone();
                        near.iter().for_each(|&e| {
                            text.push(' ');
                            text.push_str(&gold_texts[e]);
                        });
                        (q.input.text.clone(), text)
                    })
                    .collect();
                let bm25 = Bm25::build(corpus, &ctx.leaves.units, ctx.scope, ctx.docs);
                let retriever = Expanded { name: label, inner: Box::new(bm25), texts: expanded };
                Ok(Built { retriever: Box::new(retriever), queries: QueryVectors::None, models: Vec::new(), details: None })
            }
            ExemplarRanker::Dense => {
                let golds: Vec<&str> = gold_texts.iter().map(String::as_str).collect();
                let gold_vectors = ctx.cache.text_embeddings(ctx.encoder, Role::Passage, batch, &golds, "exemplars' gold texts")?;
                let queries: Vec<Vec<f32>> =
                    query_vectors.iter().zip(&nearest).map(|(v, near)| rocchio(v, near.iter().map(|&e| &gold_vectors[e][..]))).collect();
                let retriever = FlatDense { name: label, chunks: Cow::Borrowed(&ctx.leaves.units), embeddings: Cow::Borrowed(ctx.unit_vectors()?) };
                Ok(Built { retriever: Box::new(retriever), queries: QueryVectors::Own(queries), models: Vec::new(), details: None })
            }
        }
    }
}

/// normalise(q + mean of `near`).
pub fn rocchio<'v>(q: &[f32], near: impl Iterator<Item = &'v [f32]>) -> Vec<f32> {
    let near: Vec<&[f32]> = near.collect();
    let mut out = q.to_vec();
    for v in &near {
        out.iter_mut().zip(v.iter()).for_each(|(o, x)| *o += x / near.len() as f32);
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    out.iter_mut().for_each(|x| *x /= norm);
    out
}

/// A retriever asked with each query's expanded text.
struct Expanded<'a> {
    name: String,
    inner: Box<dyn Retriever + 'a>,
    /// Query text to expanded text.
    texts: HashMap<String, String>,
}

impl Retriever for Expanded<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn leaves(&self) -> &Chunks {
        self.inner.leaves()
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let text = self.texts.get(&query.text).cloned().unwrap_or_else(|| query.text.clone());
        self.inner.retrieve(&QueryInput { text, ..query.clone() }, k)
    }
}
