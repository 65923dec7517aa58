//! Dense retrieval over a method's own chunks (arbor_eval::structures::chunkers): fixed token windows with optional
//! overlap (Chroma's and SmartChunk's fixed-size baselines), semantic chunks (level L2 of Forge's four-level hierarchical index) and
//! LegalBench-RAG's baseline, LangChain's recursive character splits (arbor_datasets::recursive_split). The
//! chunking is shared with RSE, which reads segments over the same kinds of chunks.

use std::borrow::Cow;

use anyhow::bail;
use arbor_datasets::Span;
use arbor_datasets::recursive_split::{LEGALBENCH_SEPARATORS, recursive_split};
use arbor_eval::index::Chunks;
use arbor_eval::retrievers::flat::FlatDense;
use arbor_eval::structures::chunkers::{Breakpoint, semantic, token_windows};
use serde::{Deserialize, Serialize};

use super::{Built, Context, MethodSpec, QueryVectors};

/// How a document is cut into the chunks a method retrieves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Chunking {
    /// The shared leaf units (`units` in the experiment).
    Units,
    /// Windows of `tokens` encoder tokens, each overlapping the next by `overlap`. Windows longer than the
    /// encoder reads are refused unless `truncate` says the encoder may read only their start.
    Windows {
        tokens: usize,
        #[serde(default)]
        overlap: usize,
        #[serde(default)]
        truncate: bool,
    },
    /// Semantic chunks over the documents' sentences: cut at `breakpoint`, pieces under `min_tokens` merged
    /// into the next, at most `max_tokens` (`None`: what the encoder reads).
    Semantic {
        #[serde(default = "default_breakpoint")]
        breakpoint: Breakpoint,
        #[serde(default = "default_min_tokens")]
        min_tokens: usize,
        #[serde(default)]
        max_tokens: Option<usize>,
    },
    /// LegalBench-RAG's baseline chunks (Pipitone & Alami 2024): LangChain's recursive character splitter
    /// with its separators, at most `size` characters, no overlap, the chunks covering the text (a chunk
    /// longer than the encoder reads is read up to its limit).
    RecursiveCharacters { size: usize },
}

fn default_breakpoint() -> Breakpoint {
    Breakpoint::Percentile(95.0)
}

fn default_min_tokens() -> usize {
    64
}

impl Chunking {
    pub fn check(&self) -> anyhow::Result<()> {
        match self {
            Chunking::Windows { tokens, overlap, .. } if *tokens == 0 || overlap >= tokens => {
                bail!("Windows(tokens: {tokens}, overlap: {overlap}): tokens must be at least 1 and more than the overlap")
            }
            Chunking::Semantic { min_tokens, max_tokens: Some(max), .. } if max < min_tokens || *max == 0 => {
                bail!("Semantic chunks: max_tokens {max} must be at least 1 and at least min_tokens {min_tokens}")
            }
            Chunking::RecursiveCharacters { size: 0 } => bail!("RecursiveCharacters(size: 0): size must be at least 1 character"),
            _ => Ok(()),
        }
    }

    /// The chunks, in words.
    pub fn describe(&self) -> String {
        match self {
            Chunking::Units => "leaf units".into(),
            Chunking::Windows { tokens, overlap: 0, truncate } => format!("{tokens}-token windows{}", truncated(*truncate)),
            Chunking::Windows { tokens, overlap, truncate } => format!("{tokens}-token windows, overlap {overlap}{}", truncated(*truncate)),
            Chunking::Semantic { breakpoint, min_tokens, max_tokens } => {
                let cut = match breakpoint {
                    Breakpoint::Threshold(t) => format!("cosine < {t}"),
                    Breakpoint::Percentile(p) => format!("distance > p{p}"),
                };
                let max = max_tokens.map_or("encoder limit".into(), |m| m.to_string());
                format!("semantic chunks ({cut}, {min_tokens}..{max} tokens)")
            }
            Chunking::RecursiveCharacters { size } => format!("recursive {size}-character chunks"),
        }
    }

    /// Cuts the context's documents (others get no chunks) and embeds the chunks, `prefix(doc)` (AutoContext,
    /// SAC) written before what the encoder reads of each chunk (its header's lines, when the units have
    /// one, then its text); `what` names the prefix in the cache key.
    pub fn embedded<'a>(
        &self,
        ctx: &'a Context<'a>,
        prefix: Option<(&str, &dyn Fn(usize) -> String)>,
    ) -> anyhow::Result<(Cow<'a, Chunks>, Cow<'a, [Vec<f32>]>)> {
        let chunks = self.cut(ctx)?;
        if *self == Chunking::Units && prefix.is_none() {
            return Ok((chunks, Cow::Borrowed(ctx.unit_vectors()?)));
        }
        let prefixes: Vec<String> = match prefix {
            Some((_, p)) => (0..ctx.corpus.documents.len()).map(|d| if ctx.docs.contains(&d) { p(d) } else { String::new() }).collect(),
            None => vec![String::new(); ctx.corpus.documents.len()],
        };
        let text = |c: usize| prefixed_input(ctx.corpus, &chunks, &prefixes, c);
        let vectors = ctx.chunk_vectors(&(self, prefix.map(|(what, _)| what)), &chunks, &text)?;
        Ok((chunks, Cow::Owned(vectors)))
    }

    /// The chunks of the context's documents.
    pub fn cut<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Cow<'a, Chunks>> {
        let limit = ctx.encoder.max_content_tokens();
        let texts = &ctx.corpus.documents;
        let per_doc =
            |cut: &dyn Fn(usize) -> Vec<Span>| Chunks::from_docs((0..texts.len()).map(|d| if ctx.docs.contains(&d) { cut(d) } else { Vec::new() }));
        Ok(Cow::Owned(match self {
            Chunking::Units => return Ok(Cow::Borrowed(&ctx.leaves.units)),
            Chunking::Windows { tokens, overlap, truncate } => {
                if *tokens > limit && !truncate {
                    bail!(
                        "Windows(tokens: {tokens}) is longer than the {limit} tokens the encoder reads: set truncate: true to embed only \
                         each window's start, or use at most {limit} tokens"
                    );
                }
                per_doc(&|d| token_windows(&texts[d].text, &ctx.leaves.tokens.0[d], Span::new(0, texts[d].text.len()), *tokens, *overlap))
            }
            Chunking::Semantic { breakpoint, min_tokens, max_tokens } => {
                let sentences = ctx.sentences();
                let vectors = ctx.chunk_vectors(&"sentences", &sentences, &|c| sentences.text(ctx.corpus, c).to_owned())?;
                let max = max_tokens.unwrap_or(limit).min(limit);
                per_doc(&|d| {
                    let range = sentences.by_doc[d].clone();
                    let spans: Vec<Span> = sentences.spans[range.clone()].iter().map(|s| s.span).collect();
                    semantic(&ctx.leaves.tokens.0[d], &spans, &vectors[range], *breakpoint, *min_tokens, max)
                })
            }
            Chunking::RecursiveCharacters { size } => per_doc(&|d| recursive_split(&texts[d].text, *size, &LEGALBENCH_SEPARATORS)),
        }))
    }
}

/// What the encoder reads of chunk `c` after its document's prefix (AutoContext's or SAC's header, by
/// document): the prefix, then the chunk's input (its `units.context` header's lines and its text).
pub fn prefixed_input(corpus: &arbor_datasets::Corpus, chunks: &Chunks, prefixes: &[String], c: usize) -> String {
    headed(&prefixes[chunks.spans[c].doc], &chunks.input(corpus, c))
}

/// What the encoder reads of a unit whose document has `header` (a SAC summary's, empty for none): the
/// header, then the unit's input. The one form for experiments ([`prefixed_input`]) and indexes.
pub fn headed(header: &str, input: &str) -> String {
    format!("{header}{input}")
}

fn truncated(truncate: bool) -> &'static str {
    if truncate { ", encoder reads the start" } else { "" }
}

impl MethodSpec for Chunking {
    fn label(&self) -> String {
        format!("Dense over {}", self.describe())
    }

    fn kind(&self) -> String {
        match self {
            Chunking::Units => "Flat".into(),
            Chunking::Windows { .. } => "Fixed windows".into(),
            Chunking::Semantic { .. } => "Semantic chunks".into(),
            Chunking::RecursiveCharacters { .. } => "Recursive character chunks".into(),
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        Chunking::check(self)
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let (chunks, vectors) = self.embedded(ctx, None)?;
        let n: usize = ctx.docs.iter().map(|&d| chunks.by_doc[d].len()).sum();
        let details = format!(
            "{n} chunks, {:.0} tokens on average",
            chunks.spans.iter().map(|s| ctx.leaves.tokens.count(*s)).sum::<usize>() as f64 / n.max(1) as f64
        );
        let retriever = FlatDense { name: MethodSpec::label(self), chunks, embeddings: vectors };
        Ok(Built { retriever: Box::new(retriever), queries: QueryVectors::Encoder, models: Vec::new(), details: Some(details) })
    }
}
