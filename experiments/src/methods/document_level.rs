//! The document level above a tree row's hierarchy (issue 62, arbor's addition;
//! [`arbor_eval::retrievers::document_level`]): `documents: Some((beam_docs: 3, vector: LeafMean))` on
//! SproutRAG, RAPTOR or the heading hierarchy. Each row says which document vectors it can make
//! ([`Vectors`]); a summary's vector (SAC's header, [`DocumentSummary`]) is the frozen encoder's, so only a
//! row whose queries are the frozen encoder's may rank documents by it.

use arbor_eval::Retriever;
use arbor_eval::retrievers::document_level::{DocumentLevel, DocumentVector, Scoped};
use arbor_models::pooling::Role;

use super::Context;
use super::document_summary::DocumentSummary;

/// Which document vectors a row can make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vectors {
    /// Its hierarchy has an embedded root (SproutRAG's, RAPTOR's top layer).
    pub root: bool,
    /// Its queries are the frozen encoder's vectors, in whose space a summary's vector lies.
    pub frozen_queries: bool,
}

/// How a row's label names its level: `, document level: top 3 by LeafMean`, or nothing.
pub fn describe(level: Option<DocumentLevel>) -> String {
    level.map_or_else(String::new, |level| format!(", document level: top {} by {:?}", level.beam_docs, level.vector))
}

/// Refuses a level a row (`method`, in words) cannot search under.
pub fn check(level: Option<DocumentLevel>, method: &str, can: Vectors) -> anyhow::Result<()> {
    let Some(level) = level else { return Ok(()) };
    anyhow::ensure!(level.beam_docs > 0, "{method}: documents.beam_docs must be at least 1");
    let root = matches!(level.vector, DocumentVector::Root | DocumentVector::RootAndLeaves);
    anyhow::ensure!(
        !root || can.root,
        "{method}: documents.vector {:?} needs an embedded root, which it has not: use LeafMean or Summary",
        level.vector
    );
    anyhow::ensure!(
        level.vector != DocumentVector::Summary || can.frozen_queries,
        "{method}: documents.vector Summary is the frozen encoder's vector of each document's summary, and this row's queries are \
         not the frozen encoder's: use LeafMean or Root"
    );
    Ok(())
}

/// A level ready to search under: the documents it keeps and each corpus document's vector.
pub struct Level {
    beam_docs: usize,
    vectors: Vec<Option<Vec<f32>>>,
}

/// The vectors of `level` (`None` without one): `of_hierarchy`'s for the vectors a row's hierarchy holds,
/// each document's summary's for [`DocumentVector::Summary`] (`ctx`: an experiment's; `None` when serving
/// an index, which keeps no summaries).
pub fn vectors(
    level: Option<DocumentLevel>,
    ctx: Option<&Context>,
    summary: Option<&DocumentSummary>,
    of_hierarchy: impl FnOnce(DocumentVector) -> Vec<Option<Vec<f32>>>,
) -> anyhow::Result<Option<Level>> {
    let Some(level) = level else { return Ok(None) };
    let vectors = match (level.vector, ctx) {
        (DocumentVector::Summary, Some(ctx)) => summary_vectors(ctx, summary)?,
        (DocumentVector::Summary, None) => {
            anyhow::bail!("documents.vector Summary is made in an experiment, not from an index: use LeafMean or Root to serve")
        }
        (vector, _) => of_hierarchy(vector),
    };
    Ok(Some(Level { beam_docs: level.beam_docs, vectors }))
}

/// `retriever` under `level` (itself without one).
pub fn scoped<'a>(retriever: Box<dyn Retriever + 'a>, level: Option<Level>) -> Box<dyn Retriever + 'a> {
    match level {
        None => retriever,
        Some(Level { beam_docs, vectors }) => Box::new(Scoped::new(retriever, beam_docs, vectors)),
    }
}

/// The frozen encoder's vector of each context document's header (`<title or id>: <summary>`, the
/// row's `summary` or SAC's default), as a passage; `None` for the other documents.
pub fn summary_vectors(ctx: &Context, summary: Option<&DocumentSummary>) -> anyhow::Result<Vec<Option<Vec<f32>>>> {
    let summary = summary.cloned().unwrap_or_default();
    let (headers, _) = summary.headers(ctx)?;
    let texts: Vec<&str> = ctx.docs.iter().map(|&d| headers[d].trim_end()).collect();
    let embedded = ctx.cache.text_embeddings(ctx.encoder, Role::Passage, ctx.encoder_config.batch_size, &texts, "document summaries")?;
    let mut vectors = vec![None; ctx.corpus.documents.len()];
    for (&d, v) in ctx.docs.iter().zip(embedded) {
        vectors[d] = Some(v);
    }
    Ok(vectors)
}
