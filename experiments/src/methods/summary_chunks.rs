//! Summary-Augmented Chunking (SAC; Reuter et al., 2025, arXiv 2510.06999, "Towards Reliable Retrieval in
//! RAG Systems for Large Legal Datasets"): every chunk is embedded with a summary of its whole document
//! written before it, so that chunks of near-identical contracts (the paper's "document-level retrieval
//! mismatch") carry which document they come from; retrieval is then plain dense search over the chunks,
//! and what is handed on is the chunk alone. The paper writes the summaries with an LLM; none can be
//! obtained here, so the default summary is extractive (`crate::summaries`), as in RSE's AutoContext, and
//! an `Endpoint` summariser may be configured where one is served.

use arbor_datasets::Span;
use arbor_eval::retrievers::flat::FlatDense;
use serde::{Deserialize, Serialize};

use super::chunks::Chunking;
use super::{Built, Context, MethodSpec, QueryVectors};
use crate::summaries::SummariserConfig;

/// `SummaryChunks((chunks: Units, summary_tokens: 64))` in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummaryChunksConfig {
    /// The chunks retrieved.
    pub chunks: Chunking,
    /// The document summary's length in tokens (it shares the encoder's input with the chunk).
    pub summary_tokens: usize,
    pub summariser: SummariserConfig,
}

impl Default for SummaryChunksConfig {
    fn default() -> Self {
        SummaryChunksConfig { chunks: Chunking::Units, summary_tokens: 64, summariser: SummariserConfig::Extractive }
    }
}

/// Each context document's header, `<title or id>: <summary of summary_tokens>\n\n` (empty for the
/// others), and the summariser in words: what AutoContext and SAC write before a chunk.
pub fn document_headers(ctx: &Context, summariser: &SummariserConfig, summary_tokens: usize) -> anyhow::Result<(Vec<String>, String)> {
    let summariser = summariser.open(ctx.corpus, ctx.leaves, ctx.unit_vectors()?, &ctx.cache.root)?;
    let mut headers = vec![String::new(); ctx.corpus.documents.len()];
    for &d in ctx.docs {
        let doc = &ctx.corpus.documents[d];
        let summary = summariser.summarise(d, &[Span::new(0, doc.text.len())], summary_tokens)?;
        let title = if doc.title.is_empty() { &doc.id } else { &doc.title };
        headers[d] = format!("{title}: {}\n\n", summary.text);
    }
    Ok((headers, summariser.describe()))
}

impl MethodSpec for SummaryChunksConfig {
    fn label(&self) -> String {
        format!("SAC: {} with a {}-token document summary", self.chunks.describe(), self.summary_tokens)
    }

    fn kind(&self) -> String {
        "Summary-augmented chunks".into()
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.summary_tokens > 0, "SummaryChunks: summary_tokens must be at least 1");
        self.summariser.check()?;
        self.chunks.check()
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let (headers, described) = document_headers(ctx, &self.summariser, self.summary_tokens)?;
        let header = |d: usize| headers[d].clone();
        let (chunks, embeddings) = self.chunks.embedded(ctx, Some(("sac", &header)))?;
        let details = format!("document summaries of {} tokens before every chunk, {described}", self.summary_tokens);
        let retriever = FlatDense { name: self.label(), chunks, embeddings };
        Ok(Built { retriever: Box::new(retriever), queries: QueryVectors::Encoder, models: Vec::new(), details: Some(details) })
    }
}
