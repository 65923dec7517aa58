//! Retrieval over per-document SproutRAG trees: beam search (or the collapsed tree, or the leaves ranked
//! in their tree's context) in each of the query's documents, top k per document, then the best k overall
//! (SproutRAG, Section 3; multi-document queries).
//!
//! With a document level (issue 62, arbor's addition: [`DocumentLevel`]) the corpus's documents are the
//! nodes above their trees: each document is ranked for the query by its vector (its tree's root, or the
//! mean of its leaves: what SproutRAG's document term trains), the best `beam_docs` are kept, and the
//! search descends into those documents' trees alone; when they hold fewer than k items the next
//! documents in that ranking are searched until k are found, their items ranked after the beam's (every
//! method hands on k items).

use serde::{Deserialize, Serialize};

use crate::index::{Chunks, Item, NodeRef, QueryInput, Retriever, Step, top_k};
use crate::retrievers::beam::{BeamConfig, Layers, beam_search, collapsed, cosine, in_context};
use crate::structures::tree::Tree;
use crate::structures::tree_shape::ShapeSummary;

/// How a tree is searched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum TreeSearch {
    /// Hierarchical beam search from the root.
    Beam(BeamConfig),
    /// Every node ranked flat (RAPTOR's collapsed tree).
    Collapsed,
    /// The leaves only, ranked flat (RAPTOR's layer ablation: layer 0).
    LeavesOnly,
    /// The merged nodes only, ranked flat (RAPTOR's layer ablation: upper layers).
    UpperOnly,
    /// The leaves, each ranked by its cosine mixed with its ancestors' mean at `weight`
    /// (`beam::in_context`; arbor's addition): `LeavesInContext(weight: 0.5)`.
    LeavesInContext { weight: f32 },
}

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

/// How a document's vector is made from its tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DocumentVector {
    /// The mean of its leaves' embeddings (what SproutRAG's document term, `doc_loss`, trains).
    #[default]
    LeafMean,
    /// Its tree's root embedding (the progressive embedding of the whole document).
    Root,
    /// The mean of the two, each normalised first.
    RootAndLeaves,
}

impl DocumentVector {
    /// The vector of the document `tree` holds.
    pub fn of(self, tree: &Tree) -> Vec<f32> {
        let leaf_mean = || {
            let n = tree.num_leaves();
            let mut mean = vec![0f32; tree.dim];
            for leaf in 0..n {
                mean.iter_mut().zip(tree.embedding(leaf)).for_each(|(m, x)| *m += x / n as f32);
            }
            mean
        };
        match self {
            DocumentVector::LeafMean => leaf_mean(),
            DocumentVector::Root => tree.embedding(tree.root()).to_vec(),
            DocumentVector::RootAndLeaves => {
                let unit = |v: &[f32]| {
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
                    v.iter().map(|x| x / norm).collect::<Vec<f32>>()
                };
                unit(tree.embedding(tree.root())).iter().zip(unit(&leaf_mean())).map(|(a, b)| (a + b) / 2.0).collect()
            }
        }
    }
}

pub struct TreeRetriever<'a> {
    pub name: String,
    /// One tree per corpus document (`None` for documents that were not indexed).
    pub trees: Vec<Option<Tree>>,
    /// The trees' leaves.
    pub leaves: &'a Chunks,
    pub search: TreeSearch,
    /// The document level with each document's vector (`None`: every document of the query searched).
    documents: Option<(DocumentLevel, Vec<Option<Vec<f32>>>)>,
}

impl Retriever for TreeRetriever<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn tree_shape(&self) -> Option<ShapeSummary> {
        ShapeSummary::of(self.trees.iter().flatten())
    }

    fn leaves(&self) -> &Chunks {
        self.leaves
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let q = query.embedding.as_deref().expect("tree retrieval needs a query embedding");
        let (order, kept) = match &self.documents {
            None => (query.docs.clone(), query.docs.len()),
            Some((level, _)) => (self.ranked_documents(query, q), level.beam_docs),
        };
        let (beam, rest) = order.split_at(kept.min(order.len()));
        let mut items = self.best_in(beam, q, k);
        // Past the level's beam only while its documents held fewer than k items, ranked after them.
        for &d in rest {
            if items.len() >= k {
                break;
            }
            items.extend(self.best_in(&[d], q, k - items.len()));
        }
        items
    }

    fn kept_documents(&self, query: &QueryInput) -> Option<Vec<usize>> {
        let (level, _) = self.documents.as_ref()?;
        let q = query.embedding.as_deref()?;
        Some(self.ranked_documents(query, q).into_iter().take(level.beam_docs).collect())
    }

    fn children(&self, query: &QueryInput, item: &Item) -> Option<Vec<Item>> {
        let NodeRef { doc, node } = item.node?;
        let tree = self.trees[doc].as_ref()?;
        let (a, b) = tree.children(node)?;
        let q = query.embedding.as_deref().expect("tree retrieval needs a query embedding");
        let scored = [a, b].map(|c| (c, cosine(q, tree.embedding(c))));
        Some(top_k(scored.into_iter(), 2).into_iter().map(|(c, s)| self.item(doc, c, s)).collect())
    }

    fn path(&self, query: &QueryInput, NodeRef { doc, node }: NodeRef) -> Option<Vec<Step>> {
        let tree = self.trees[doc].as_ref()?;
        let q = query.embedding.as_deref()?;
        Some(tree.path(node).into_iter().map(|v| Step { node: v, leaves: tree.size(v), score: cosine(q, tree.embedding(v)) }).collect())
    }
}

impl<'a> TreeRetriever<'a> {
    /// Searches every document of a query (no document level).
    pub fn new(name: String, trees: Vec<Option<Tree>>, leaves: &'a Chunks, search: TreeSearch) -> Self {
        TreeRetriever { name, trees, leaves, search, documents: None }
    }

    /// With a document level above the trees ([`DocumentLevel`]): each document's vector made once here.
    pub fn with_document_level(self, level: DocumentLevel) -> Self {
        let vectors = self.trees.iter().map(|t| t.as_ref().map(|t| level.vector.of(t))).collect();
        TreeRetriever { documents: Some((level, vectors)), ..self }
    }

    /// The best `k` nodes over the trees of `docs`, each searched for its own top k, merged by score.
    fn best_in(&self, docs: &[usize], q: &[f32], k: usize) -> Vec<Item> {
        let mut found: Vec<(usize, usize, f32)> = Vec::new();
        for &d in docs {
            let Some(tree) = &self.trees[d] else { continue };
            let hits = match &self.search {
                TreeSearch::Beam(config) => beam_search(tree, q, config, k),
                TreeSearch::Collapsed => collapsed(tree, q, Layers::All, k),
                TreeSearch::LeavesOnly => collapsed(tree, q, Layers::Leaves, k),
                TreeSearch::UpperOnly => collapsed(tree, q, Layers::Upper, k),
                TreeSearch::LeavesInContext { weight } => in_context(tree, q, *weight, k),
            };
            found.extend(hits.into_iter().map(|(node, s)| (d, node, s)));
        }
        let best = top_k(found.iter().enumerate().map(|(i, &(_, _, s))| (i, s)), k);
        best.into_iter().map(|(i, score)| self.item(found[i].0, found[i].1, score)).collect()
    }

    /// The query's indexed documents, best first by the cosine of their vectors (ties to the earlier).
    fn ranked_documents(&self, query: &QueryInput, q: &[f32]) -> Vec<usize> {
        let Some((_, vectors)) = &self.documents else { return query.docs.clone() };
        let scored = query.docs.iter().filter_map(|&d| Some((d, cosine(q, vectors[d].as_deref()?))));
        top_k(scored, query.docs.len()).into_iter().map(|(d, _)| d).collect()
    }

    fn item(&self, doc: usize, node: usize, score: f32) -> Item {
        let tree = self.trees[doc].as_ref().expect("an item comes from an indexed document");
        Item { spans: tree.spans(node), score, node: Some(NodeRef { doc, node }) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structures::tree::Similarity;
    use arbor_datasets::{DocSpan, Span};

    fn tree(doc: usize, emb: &[f32]) -> Tree {
        let leaves = (0..2).map(|i| DocSpan { doc, span: Span::new(i * 5, i * 5 + 4) }).collect();
        Tree::build(leaves, emb, 2, &Similarity::Dense { n: 2, values: &[0.0, 1.0, 1.0, 0.0] })
    }

    fn leaves(trees: &[Option<Tree>]) -> Chunks {
        Chunks::from_docs(trees.iter().map(|t| t.as_ref().map_or(vec![], |t| t.leaves.iter().map(|l| l.span).collect())))
    }

    #[test]
    fn multi_document_queries_merge_per_document_results_by_score() {
        let trees = vec![Some(tree(0, &[1.0, 0.0, 0.0, 1.0])), None, Some(tree(2, &[0.9, 0.1, -1.0, 0.0]))];
        let chunks = leaves(&trees);
        let r = TreeRetriever::new("t".into(), trees, &chunks, TreeSearch::Collapsed);
        let q = QueryInput { text: String::new(), docs: vec![0, 2], embedding: Some(vec![1.0, 0.0]) };
        let items = r.retrieve(&q, 2);
        assert_eq!(items[0].spans, vec![DocSpan { doc: 0, span: Span::new(0, 4) }]);
        assert_eq!(items[1].spans[0].doc, 2);
        assert!(items[0].score >= items[1].score);
    }

    /// Issue 62: a hand-built corpus of three documents, the query nearest document 1's vector: the
    /// document level keeps document 1 and hands on only its units, though document 2 holds the single
    /// leaf nearest the query; with a beam of two documents, 2's leaf comes first. A level whose beam holds
    /// fewer than k items searches the next documents, so k items still come back.
    #[test]
    fn the_document_level_keeps_the_right_document_and_hands_on_only_its_units() {
        let trees = vec![Some(tree(0, &[-1.0, 0.0, -0.8, -0.6])), Some(tree(1, &[0.6, 0.8, 0.8, 0.6])), Some(tree(2, &[1.0, 0.05, -0.9, 0.1]))];
        let chunks = leaves(&trees);
        let q = QueryInput { text: String::new(), docs: vec![0, 1, 2], embedding: Some(vec![1.0, 0.0]) };
        let plain = TreeRetriever::new("t".into(), trees.clone(), &chunks, TreeSearch::LeavesOnly);
        assert_eq!(plain.retrieve(&q, 2)[0].spans[0].doc, 2, "the single nearest leaf is document 2's");
        assert_eq!(plain.kept_documents(&q), None);
        for vector in [DocumentVector::LeafMean, DocumentVector::Root, DocumentVector::RootAndLeaves] {
            let level = |beam_docs| {
                TreeRetriever::new("t".into(), trees.clone(), &chunks, TreeSearch::LeavesOnly)
                    .with_document_level(DocumentLevel { beam_docs, vector })
            };
            let one = level(1);
            assert_eq!(one.kept_documents(&q), Some(vec![1]), "{vector:?}");
            let items = one.retrieve(&q, 2);
            assert_eq!(items.len(), 2);
            assert!(items.iter().all(|i| i.spans.iter().all(|s| s.doc == 1)), "{vector:?}: {items:?}");
            let two = level(2);
            assert_eq!(two.kept_documents(&q), Some(vec![1, 2]), "{vector:?}");
            assert_eq!(two.retrieve(&q, 2)[0].spans[0].doc, 2);
            // Three items asked of a one-document beam over two leaves: the next document fills in, after.
            let docs: Vec<usize> = one.retrieve(&q, 3).iter().map(|i| i.spans[0].doc).collect();
            assert_eq!(docs, [1, 1, 2], "{vector:?}");
        }
        // The vectors by hand for document 2: leaves (1, 0.05) and (-0.9, 0.1).
        let t2 = trees[2].as_ref().unwrap();
        let mean = DocumentVector::LeafMean.of(t2);
        assert!((mean[0] - 0.05).abs() < 1e-6 && (mean[1] - 0.075).abs() < 1e-6, "{mean:?}");
        assert_eq!(DocumentVector::Root.of(t2), t2.embedding(t2.root()));
    }

    #[test]
    fn children_of_a_node_are_its_two_children_ranked_for_the_query() {
        let trees = vec![Some(tree(0, &[1.0, 0.0, 0.0, 1.0]))];
        let chunks = leaves(&trees);
        let r = TreeRetriever::new("t".into(), trees, &chunks, TreeSearch::Collapsed);
        let q = QueryInput { text: String::new(), docs: vec![0], embedding: Some(vec![0.0, 1.0]) };
        let root = r.item(0, 2, 0.5);
        let kids = r.children(&q, &root).unwrap();
        assert_eq!(kids.iter().map(|i| i.node.unwrap().node).collect::<Vec<_>>(), vec![1, 0]);
        assert_eq!(r.children(&q, &kids[0]), None, "a leaf has none");
    }
}
