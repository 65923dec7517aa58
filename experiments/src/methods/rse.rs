//! RSE + AutoContext (spRAG / dsRAG, D-Star AI's open-source framework): chunks embedded with a document header (AutoContext: the
//! title and a short summary of the document, written before each chunk's text), then Relevant Segment
//! Extraction over them (arbor_eval::retrievers::rse) with one of dsRAG's presets.

use arbor_eval::retrievers::rse::{Rse, RsePreset};
use serde::{Deserialize, Serialize};

use super::chunks::Chunking;
use super::document_summary::DocumentSummary;
use super::{Built, Context, MethodSpec, QueryVectors};
use crate::summaries::SummariserConfig;

/// `Rse((preset: Balanced))` in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RseConfig {
    pub preset: RsePreset,
    /// The chunks segments are made of.
    pub chunks: Chunking,
    /// Write the document's title and summary before each chunk when embedding it.
    pub auto_context: bool,
    /// The summary's length in tokens (the header shares the encoder's input with the chunk).
    pub context_tokens: usize,
    pub summariser: SummariserConfig,
}

impl Default for RseConfig {
    fn default() -> Self {
        RseConfig {
            preset: RsePreset::Balanced,
            chunks: Chunking::Units,
            auto_context: true,
            context_tokens: 32,
            summariser: SummariserConfig::Extractive,
        }
    }
}

impl MethodSpec for RseConfig {
    fn label(&self) -> String {
        let context = if self.auto_context { " + AutoContext" } else { "" };
        format!("RSE{context} ({:?}, {})", self.preset, self.chunks.describe())
    }

    fn kind(&self) -> String {
        "RSE".into()
    }

    fn check(&self) -> anyhow::Result<()> {
        if self.auto_context {
            self.summariser.check()?;
        }
        self.chunks.check()
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let (headers, described) = match self.auto_context {
            true => {
                let (headers, summariser) = DocumentSummary { summary_tokens: self.context_tokens, summariser: self.summariser.clone() }.headers(ctx)?;
                (headers, format!("AutoContext headers: title + {} tokens of summary, {summariser}", self.context_tokens))
            }
            false => (vec![String::new(); ctx.corpus.documents.len()], String::from("no AutoContext")),
        };
        let header = |d: usize| headers[d].clone();
        let context = self.auto_context.then_some(("auto_context", &header as &dyn Fn(usize) -> String));
        let (chunks, embeddings) = self.chunks.embedded(ctx, context)?;
        let limit = ctx.encoder.max_content_tokens();
        let header_tokens: Vec<usize> = headers.iter().map(|h| if h.is_empty() { 0 } else { ctx.encoder.count_tokens(h) }).collect();
        let over = ctx
            .docs
            .iter()
            .flat_map(|&d| chunks.by_doc[d].clone())
            .filter(|&c| header_tokens[chunks.spans[c].doc] + ctx.leaves.tokens.count(chunks.spans[c]) > limit)
            .count();
        let chars = (0..chunks.len()).map(|c| chunks.text(ctx.corpus, c).chars().count()).collect();
        let details = format!("{described}; {over} header + chunk inputs longer than the encoder reads (their ends unseen)");
        let rse = Rse { name: self.label(), chunks, embeddings, chars, params: self.preset.params() };
        Ok(Built { retriever: Box::new(rse), queries: QueryVectors::Encoder, models: Vec::new(), details: Some(details) })
    }
}
