//! A document's summary written before every one of its units (`<title or id>: <summary>\n\n`), the
//! header Summary-Augmented Chunking (Reuter et al., 2025, arXiv 2510.06999) embeds each chunk after and
//! dsRAG's AutoContext writes before each chunk: shared by SAC ([`super::summary_chunks`]), RSE
//! ([`super::rse`]), and the trained rows over SAC's inputs (a dense row's and SproutRAG's `summary`).

use std::collections::BTreeSet;

use arbor_datasets::Span;
use arbor_trainers::config::TrainConfig;
use serde::{Deserialize, Serialize};

use super::Context;
use super::training::{queries_by_doc, training_queries};
use crate::summaries::SummariserConfig;
use crate::validation::VALIDATION;

/// A summary of each document written before every one of its units, as SAC writes it
/// (`<title or id>: <summary>\n\n`): `summary: Some((summary_tokens: 64))` on a trained dense row or on
/// SproutRAG, so that a method over SAC's inputs is set beside its control over the same inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DocumentSummary {
    /// The summary's length in tokens (it shares the encoder's input with the unit).
    pub summary_tokens: usize,
    pub summariser: SummariserConfig,
}

impl Default for DocumentSummary {
    fn default() -> Self {
        DocumentSummary { summary_tokens: 64, summariser: SummariserConfig::Extractive }
    }
}

impl DocumentSummary {
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.summary_tokens > 0, "summary_tokens must be at least 1");
        self.summariser.check()
    }

    /// How a row names it.
    pub fn describe(&self) -> String {
        format!("units read after a {}-token document summary", self.summary_tokens)
    }

    /// Each context document's header (empty for the others), and the summariser in words: what
    /// AutoContext and SAC write before a chunk.
    pub fn headers(&self, ctx: &Context) -> anyhow::Result<(Vec<String>, String)> {
        self.headers_of(ctx, ctx.docs, ctx.unit_vectors()?)
    }

    /// The headers of every document a method trained with `training` reads: the evaluated ones, and its
    /// training and validation documents.
    pub fn training_headers(&self, ctx: &Context, training: &TrainConfig) -> anyhow::Result<(Vec<String>, String)> {
        let read: BTreeSet<usize> = ctx
            .docs
            .iter()
            .copied()
            .chain(training_queries(ctx.corpus, training).into_keys())
            .chain(queries_by_doc(ctx.corpus, VALIDATION).into_keys())
            .collect();
        let docs: Vec<usize> = read.into_iter().collect();
        let vectors = ctx.cache.unit_embeddings(ctx.encoder, ctx.corpus, ctx.leaves, ctx.keys, &docs, ctx.encoder_config.batch_size)?;
        self.headers_of(ctx, &docs, &vectors)
    }

    /// The headers of `docs`, summarised over `unit_vectors` (the frozen encoder's, those documents' filled).
    fn headers_of(&self, ctx: &Context, docs: &[usize], unit_vectors: &[Vec<f32>]) -> anyhow::Result<(Vec<String>, String)> {
        let summariser = self.summariser.open(ctx.corpus, ctx.leaves, unit_vectors, &ctx.cache.root)?;
        let mut headers = vec![String::new(); ctx.corpus.documents.len()];
        for &d in docs {
            let doc = &ctx.corpus.documents[d];
            let summary = summariser.summarise(d, &[Span::new(0, doc.text.len())], self.summary_tokens)?;
            headers[d] = header(header_name(&doc.title, &doc.id), &summary.text);
        }
        Ok((headers, summariser.describe()))
    }
}

/// The header written before every unit of a document named `name` (its title, else its id) whose summary
/// is `summary`: `<name>: <summary>` and a blank line.
pub fn header(name: &str, summary: &str) -> String {
    format!("{name}: {summary}\n\n")
}

/// The name a header gives a document: its title, else its id (in an experiment, its corpus id; in an
/// index, the id within its file, else its key).
pub fn header_name<'a>(title: &'a str, id: &'a str) -> &'a str {
    if title.is_empty() { id } else { title }
}
