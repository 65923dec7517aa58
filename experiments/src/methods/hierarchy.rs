//! The document's own hierarchy with parent expansion (Forge's four-level hierarchical index; LlamaIndex's auto-merging retriever):
//! document / section / leaf unit, sections from the corpus (`sections` in JSONL, QASPER's) or, where a
//! document has none, derived from its heading lines (arbor_datasets::headings); dense retrieval over the
//! leaf units, a section replacing its retrieved units when more than `ratio` of them are retrieved
//! (arbor_eval::retrievers::hierarchy).

use std::borrow::Cow;

use arbor_datasets::headings::derive_sections;
use arbor_datasets::{Document, Span};
use arbor_eval::index::Chunks;
use arbor_eval::retrievers::hierarchy::{AutoMerging, Hierarchy};
use serde::{Deserialize, Serialize};

use super::{Built, Context, MethodSpec, QueryVectors, Served};
use crate::stored::StoredIndex;

/// `Hierarchy((ratio: 0.5))` in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HierarchyConfig {
    /// A section replaces its units when more than this share of its children is retrieved (LlamaIndex's
    /// simple_ratio_thresh: 0.5).
    pub ratio: f32,
}

impl Default for HierarchyConfig {
    fn default() -> Self {
        HierarchyConfig { ratio: 0.5 }
    }
}

impl MethodSpec for HierarchyConfig {
    fn label(&self) -> String {
        format!("Heading hierarchy (parent expansion > {})", self.ratio)
    }

    fn kind(&self) -> String {
        "Heading hierarchy".into()
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!((0.0..1.0).contains(&self.ratio), "Hierarchy: ratio {} must lie in [0, 1)", self.ratio);
        Ok(())
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let units = &ctx.leaves.units;
        let (mut given, mut derived, mut headings, mut flat) = (0, 0, 0, 0);
        let mut trees = vec![None; ctx.corpus.documents.len()];
        for &d in ctx.docs {
            let (tree, sections) = document_hierarchy(&ctx.corpus.documents[d], units, d);
            match sections {
                Sections::Given => given += 1,
                Sections::Derived(n) => {
                    derived += 1;
                    headings += n
                }
                Sections::None => flat += 1,
            }
            trees[d] = Some(tree);
        }
        let details = format!(
            "{given} documents with sections in the corpus, {derived} with {headings} headings derived from their lines, {flat} with neither \
             (document and units only)"
        );
        let retriever = AutoMerging {
            name: self.label(),
            trees,
            chunks: Cow::Borrowed(units),
            embeddings: Cow::Borrowed(ctx.unit_vectors()?),
            ratio: self.ratio,
        };
        Ok(Built { retriever: Box::new(retriever), queries: QueryVectors::Encoder, models: Vec::new(), details: Some(details) })
    }

    /// Sections from each stored document's heading lines (an index keeps no given sections).
    fn serve<'a>(&self, index: &'a StoredIndex) -> anyhow::Result<Served<'a>> {
        let docs = &index.corpus.documents;
        let trees = docs.iter().enumerate().map(|(d, doc)| Some(document_hierarchy(doc, &index.units, d).0)).collect();
        let retriever = AutoMerging {
            name: self.label(),
            trees,
            chunks: Cow::Borrowed(&index.units),
            embeddings: Cow::Borrowed(&index.vectors[..]),
            ratio: self.ratio,
        };
        Ok(Served { retriever: Box::new(retriever), embeds_queries: true })
    }
}

/// Where a document's sections came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sections {
    /// The corpus gives them.
    Given,
    /// This many were derived from heading lines.
    Derived(usize),
    /// Neither: the document and its units only.
    None,
}

/// Document `d`'s hierarchy over its leaf units (`units`): its own sections, else those of its heading
/// lines, else the document alone above the units. The one way it is built, for experiments and for
/// `arbor query --method hierarchy`.
pub fn document_hierarchy(doc: &Document, units: &Chunks, d: usize) -> (Hierarchy, Sections) {
    let (sections, source): (Vec<Span>, Sections) = match doc.sections.is_empty() {
        false => (doc.sections.iter().map(|s| s.span()).collect(), Sections::Given),
        true => {
            let found: Vec<Span> = derive_sections(&doc.text).iter().map(|s| s.span()).collect();
            let source = if found.is_empty() { Sections::None } else { Sections::Derived(found.len()) };
            (found, source)
        }
    };
    let leaves: Vec<_> = units.by_doc[d].clone().map(|c| (c, units.spans[c].span)).collect();
    (Hierarchy::build(doc.text.len(), &sections, &leaves), source)
}
