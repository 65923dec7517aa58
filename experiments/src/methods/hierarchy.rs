//! The document's own hierarchy with parent expansion (Forge's four-level hierarchical index; LlamaIndex's auto-merging retriever):
//! document / section / leaf unit, sections from the corpus (`sections` in JSONL, QASPER's) or, where a
//! document has none, derived from its heading lines (arbor_datasets::headings); dense retrieval over the
//! leaf units, a section replacing its retrieved units when more than `ratio` of them are retrieved
//! (arbor_eval::retrievers::hierarchy).

use std::borrow::Cow;

use arbor_datasets::headings::derive_sections;
use arbor_datasets::{Document, Span};
use arbor_eval::Retriever;
use arbor_eval::index::Chunks;
use arbor_eval::retrievers::document_level::{DocumentLevel, mean};
use arbor_eval::retrievers::hierarchy::{AutoMerging, Hierarchy};
use serde::{Deserialize, Serialize};

use super::{Built, Context, MethodSpec, QueryVectors, Served, Serving, document_level};

/// `Hierarchy((ratio: 0.5))` in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HierarchyConfig {
    /// A section replaces its units when more than this share of its children is retrieved (LlamaIndex's
    /// simple_ratio_thresh: 0.5).
    pub ratio: f32,
    /// A document level above the hierarchies (issue 62, [`super::document_level`]): each query searches
    /// only the documents whose vectors (their units' mean, or their summary's) rank best for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documents: Option<DocumentLevel>,
}

impl Default for HierarchyConfig {
    fn default() -> Self {
        HierarchyConfig { ratio: 0.5, documents: None }
    }
}

impl MethodSpec for HierarchyConfig {
    fn label(&self) -> String {
        format!("Heading hierarchy (parent expansion > {}{})", self.ratio, document_level::describe(self.documents))
    }

    fn kind(&self) -> String {
        "Heading hierarchy".into()
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!((0.0..1.0).contains(&self.ratio), "Hierarchy: ratio {} must lie in [0, 1)", self.ratio);
        // The document node is not embedded: its units' mean stands for it.
        document_level::check(self.documents, "Hierarchy", document_level::Vectors { root: false, frozen_queries: true })
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
        let retriever = self.retriever(trees, units, ctx.unit_vectors()?, Some(ctx))?;
        Ok(Built { retriever, queries: QueryVectors::Encoder, models: Vec::new(), details: Some(details) })
    }

    /// Sections from each stored document's heading lines (an index keeps no given sections).
    fn serve<'a>(&self, at: &Serving<'a>) -> anyhow::Result<Served<'a>> {
        let index = at.index;
        let docs = &index.corpus.documents;
        let trees = docs.iter().enumerate().map(|(d, doc)| Some(document_hierarchy(doc, &index.units, d).0)).collect();
        Ok(Served { retriever: self.retriever(trees, &index.units, &index.vectors, None)?, embeds_queries: true })
    }
}

impl HierarchyConfig {
    /// Parent expansion over `trees`, under the row's document level if it has one (`ctx`: an
    /// experiment's, where a summary's vector can be made; `None` when serving an index).
    fn retriever<'a>(
        &self,
        trees: Vec<Option<Hierarchy>>,
        units: &'a Chunks,
        embeddings: &'a [Vec<f32>],
        ctx: Option<&Context>,
    ) -> anyhow::Result<Box<dyn Retriever + 'a>> {
        let dim = embeddings.first().map_or(0, Vec::len);
        let unit_mean = |d: usize| mean(units.by_doc[d].clone().map(|u| &embeddings[u]), dim);
        // LeafMean is the one vector of the hierarchy (`check` refuses Root and RootAndLeaves).
        let of_units = |_| trees.iter().enumerate().map(|(d, t)| t.as_ref().map(|_| unit_mean(d))).collect();
        let level = document_level::vectors(self.documents, ctx, None, of_units)?;
        let retriever = AutoMerging { name: self.label(), trees, chunks: Cow::Borrowed(units), embeddings: Cow::Borrowed(embeddings), ratio: self.ratio };
        Ok(document_level::scoped(Box::new(retriever), level))
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
