//! A document level above a method's own search (issue 62, arbor's addition): the corpus's documents are
//! the nodes above each method's hierarchy. Each document is ranked for the query by its vector (the mean
//! of its leaves: what SproutRAG's document term trains; its tree's root; or its summary's), the best
//! `beam_docs` are kept, and the method searches those documents alone; when they hold fewer than k items
//! the next documents in that ranking are searched until k are found, their items ranked after the beam's
//! (every method hands on k items). The same level over every tree method (SproutRAG's trees, RAPTOR, the
//! heading hierarchy): [`Scoped`] wraps any [`Retriever`], whose search already reads a query's `docs`.

use serde::{Deserialize, Serialize};

use crate::index::{Chunks, Item, NodeRef, QueryInput, Retriever, Step, top_k};
use crate::retrievers::beam::cosine;
use crate::structures::tree_shape::ShapeSummary;

/// The level above the trees: which documents a query descends into.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DocumentLevel {
    /// Documents kept by the level's beam, best first.
    pub beam_docs: usize,
    /// A document's vector.
    pub vector: DocumentVector,
}

impl Default for DocumentLevel {
    fn default() -> Self {
        DocumentLevel { beam_docs: 3, vector: DocumentVector::LeafMean }
    }
}

/// How a document's vector is made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DocumentVector {
    /// The mean of its leaves' embeddings (what SproutRAG's document term, `doc_loss`, trains).
    #[default]
    LeafMean,
    /// Its tree's root embedding (SproutRAG: the progressive embedding of the whole document; RAPTOR: the
    /// mean of its top layer's summaries).
    Root,
    /// The mean of the two, each normalised first.
    RootAndLeaves,
    /// Its summary's embedding by the encoder that embeds the queries (the summary SAC writes before each
    /// chunk: the row's own `summary` setting, else SAC's default).
    Summary,
}

/// The mean of `vectors` (zeros of `dim` for none).
pub fn mean(vectors: impl IntoIterator<Item = impl AsRef<[f32]>>, dim: usize) -> Vec<f32> {
    let mut sum = vec![0f32; dim];
    let mut n = 0usize;
    for v in vectors {
        sum.iter_mut().zip(v.as_ref()).for_each(|(s, x)| *s += x);
        n += 1;
    }
    sum.iter_mut().for_each(|s| *s /= n.max(1) as f32);
    sum
}

/// The mean of `root` and `leaves`, each normalised first ([`DocumentVector::RootAndLeaves`]).
pub fn root_and_leaves(root: &[f32], leaves: &[f32]) -> Vec<f32> {
    let unit = |v: &[f32]| {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
        v.iter().map(|x| x / norm).collect::<Vec<f32>>()
    };
    unit(root).iter().zip(unit(leaves)).map(|(a, b)| (a + b) / 2.0).collect()
}

/// A retriever searched under a document level: `inner` searches only the documents the level keeps.
pub struct Scoped<'a> {
    inner: Box<dyn Retriever + 'a>,
    beam_docs: usize,
    /// Each corpus document's vector (`None`: not indexed, never kept).
    vectors: Vec<Option<Vec<f32>>>,
}

impl<'a> Scoped<'a> {
    /// `inner` under a level that keeps `beam_docs` documents ranked by `vectors` (one per corpus document).
    pub fn new(inner: Box<dyn Retriever + 'a>, beam_docs: usize, vectors: Vec<Option<Vec<f32>>>) -> Self {
        assert!(beam_docs > 0, "a document level keeps at least one document");
        Scoped { inner, beam_docs, vectors }
    }

    /// The query's indexed documents, best first by the cosine of their vectors (ties to the earlier).
    fn ranked_documents(&self, query: &QueryInput, q: &[f32]) -> Vec<usize> {
        let scored = query.docs.iter().filter_map(|&d| Some((d, cosine(q, self.vectors.get(d)?.as_deref()?))));
        top_k(scored, query.docs.len()).into_iter().map(|(d, _)| d).collect()
    }

    /// `inner`'s best `k` over `docs` alone.
    fn within(&self, query: &QueryInput, docs: &[usize], k: usize) -> Vec<Item> {
        self.inner.retrieve(&QueryInput { docs: docs.to_vec(), ..query.clone() }, k)
    }
}

impl Retriever for Scoped<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn leaves(&self) -> &Chunks {
        self.inner.leaves()
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let q = query.embedding.as_deref().expect("a document level needs a query embedding");
        let order = self.ranked_documents(query, q);
        let (beam, rest) = order.split_at(self.beam_docs.min(order.len()));
        let mut items = self.within(query, beam, k);
        // Past the level's beam only while its documents held fewer than k items, ranked after them.
        for &d in rest {
            if items.len() >= k {
                break;
            }
            items.extend(self.within(query, &[d], k - items.len()));
        }
        items
    }

    fn children(&self, query: &QueryInput, item: &Item) -> Option<Vec<Item>> {
        self.inner.children(query, item)
    }

    fn path(&self, query: &QueryInput, node: NodeRef) -> Option<Vec<Step>> {
        self.inner.path(query, node)
    }

    fn layer(&self, item: &Item) -> Option<usize> {
        self.inner.layer(item)
    }

    fn tree_shape(&self) -> Option<ShapeSummary> {
        self.inner.tree_shape()
    }

    fn kept_documents(&self, query: &QueryInput) -> Option<Vec<usize>> {
        let q = query.embedding.as_deref()?;
        Some(self.ranked_documents(query, q).into_iter().take(self.beam_docs).collect())
    }
}
