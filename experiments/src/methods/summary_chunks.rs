//! Summary-Augmented Chunking (SAC; Reuter et al., 2025, arXiv 2510.06999, "Towards Reliable Retrieval in
//! RAG Systems for Large Legal Datasets"): every chunk is embedded with a summary of its whole document
//! written before it, so that chunks of near-identical contracts (the paper's "document-level retrieval
//! mismatch") carry which document they come from; retrieval is then plain dense search over the chunks,
//! and what is handed on is the chunk alone. The paper writes the summaries with an LLM; none can be
//! obtained here, so the default summary is extractive (`crate::summaries`), as in RSE's AutoContext, and
//! an `Endpoint` summariser may be configured where one is served.
//!
//! With `training: Some(..)` the encoder is fine-tuned on the training queries as the dense control is
//! ([`super::dense`], InfoNCE with the same batches, negatives and schedule), every unit read after its
//! document's header in training, on validation and at evaluation alike ([`super::chunks::prefixed_input`]):
//! the paper's chunks under the field's fine-tuning. Its matched control is that same fine-tune without
//! the headers, so the comparison measures what the summaries add once the encoder is trained.


use arbor_eval::retrievers::flat::FlatDense;
use arbor_trainers::config::TrainConfig;
use serde::{Deserialize, Serialize};

use super::chunks::Chunking;
use super::document_summary::DocumentSummary;
use super::dense::{DenseConfig, build_over_summaries};
use super::{Built, Context, MethodSpec, QueryVectors, Trains};
use crate::summaries::SummariserConfig;

/// `SummaryChunks((chunks: Units, summary_tokens: 64))` in an experiment file; with `training: Some((..))`
/// (the dense control's settings) the encoder is fine-tuned over the headed units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummaryChunksConfig {
    /// The chunks retrieved.
    pub chunks: Chunking,
    /// The document summary's length in tokens (it shares the encoder's input with the chunk).
    pub summary_tokens: usize,
    pub summariser: SummariserConfig,
    /// Fine-tune the encoder on the training queries over the headed units (`chunks: Units` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainConfig>,
}

impl Default for SummaryChunksConfig {
    fn default() -> Self {
        SummaryChunksConfig { chunks: Chunking::Units, summary_tokens: 64, summariser: SummariserConfig::Extractive, training: None }
    }
}

impl SummaryChunksConfig {
    /// Its summary settings.
    pub fn summary(&self) -> DocumentSummary {
        DocumentSummary { summary_tokens: self.summary_tokens, summariser: self.summariser.clone() }
    }
}

impl MethodSpec for SummaryChunksConfig {
    fn label(&self) -> String {
        let plain = format!("SAC: {} with a {}-token document summary", self.chunks.describe(), self.summary_tokens);
        // Its encoder trains as its matched control's does (`DenseConfig::matching`), so that the two differ
        // by the headers alone.
        match &self.training {
            None => plain,
            Some(training) => {
                let trained = DenseConfig::matching(training).label();
                format!("{plain}, {}", trained.strip_prefix("Dense, ").unwrap_or(&trained))
            }
        }
    }

    fn kind(&self) -> String {
        match self.training {
            None => "Summary-augmented chunks".into(),
            Some(_) => "Summary-augmented chunks, fine-tuned".into(),
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        self.summary().check().map_err(|e| anyhow::anyhow!("SummaryChunks: {e}"))?;
        if let Some(training) = &self.training {
            training.check().map_err(anyhow::Error::msg)?;
            anyhow::ensure!(
                self.chunks == Chunking::Units,
                "SummaryChunks with training fine-tunes over the leaf units: set chunks: Units (it has {})",
                self.chunks.describe()
            );
            DenseConfig::matching(training).check()?;
        }
        self.chunks.check()
    }

    fn trains(&self) -> Trains {
        self.training.clone().map_or(Trains::No, Trains::Queries)
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        if let Some(training) = &self.training {
            return build_over_summaries(ctx, self.label(), self, &DenseConfig::matching(training), &self.summary());
        }
        let (headers, described) = self.summary().headers(ctx)?;
        let header = |d: usize| headers[d].clone();
        let (chunks, embeddings) = self.chunks.embedded(ctx, Some(("sac", &header)))?;
        let details = format!("document summaries of {} tokens before every chunk, {described}", self.summary_tokens);
        let retriever = FlatDense { name: self.label(), chunks, embeddings };
        Ok(Built { retriever: Box::new(retriever), queries: QueryVectors::Encoder, models: Vec::new(), details: Some(details) })
    }
}
