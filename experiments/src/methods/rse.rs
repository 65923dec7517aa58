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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::cache::Cache;
    use crate::experiment::Experiment;
    use crate::run::run_in;
    use crate::summaries::endpoint::tests::{completion, serve};
    use crate::trained::Training;

    /// AutoContext's header is part of what a chunk vector is computed from: a header written by another
    /// summariser gets new vectors in the shared cache, and the generator is asked once per document.
    #[test]
    fn autocontext_headers_from_another_summariser_are_encoded_anew_and_generated_once() {
        let (url, seen) = serve(2, |_| (200, completion("A survey of the article, written by a generator.")));
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/squad-mini");
        let exp = |summariser: &str| {
            let text = format!(
                r#"Experiment(name: "autocontext", data: (format: Jsonl, path: "{}", split: Some("test")),
                   methods: [Rse((preset: Precision, summariser: {summariser}))])"#,
                fixture.display()
            );
            Experiment::parse(&text, Path::new("x.ron")).unwrap()
        };
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        let vector_files = || {
            let folders = std::fs::read_dir(&cache.root).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("chunks-"));
            folders.map(|f| std::fs::read_dir(f.path()).unwrap().count()).sum::<usize>()
        };
        let extractive = run_in(&exp("Extractive"), &tmp.path().join("a"), &cache, &Training::Never(None)).unwrap();
        assert_eq!(vector_files(), 2, "one file per test article");
        let generated = exp(&format!(r#"Endpoint((url: "{url}", model: "m"))"#));
        let first = run_in(&generated, &tmp.path().join("b"), &cache, &Training::Never(None)).unwrap();
        assert_eq!(vector_files(), 4, "the generated headers are encoded, not read back from the extractive ones");
        assert_ne!(first.methods[0].metrics, extractive.methods[0].metrics);
        assert!(first.methods[0].details.contains("written by m at http://127.0.0.1"), "{}", first.methods[0].details);
        assert_eq!(seen.iter().take(2).count(), 2, "one summary per test article");
        // The server is gone: a rerun finds every summary in the record and every vector in the cache.
        let again = run_in(&generated, &tmp.path().join("c"), &cache, &Training::Never(None)).unwrap();
        assert_eq!((again.methods[0].metrics.clone(), vector_files()), (first.methods[0].metrics.clone(), 4));
    }
}
