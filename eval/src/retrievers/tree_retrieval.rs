//! Retrieval over per-document SproutRAG trees: beam search (or the collapsed tree, or the leaves ranked
//! in their tree's context) in each of the query's documents, top k per document, then the best k overall
//! (SproutRAG, Section 3; multi-document queries).
//!
//! A document level above the trees (issue 62) is [`crate::retrievers::document_level`]'s, the same for
//! every tree method; [`tree_vector`] gives a document's vector from its tree.

use serde::{Deserialize, Serialize};

use crate::index::{Chunks, Item, NodeRef, QueryInput, Retriever, Step, top_k};
use crate::retrievers::beam::{BeamConfig, Layers, beam_search, collapsed, cosine, in_context};
use crate::retrievers::document_level::{DocumentVector, Scoped, mean, root_and_leaves};
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

/// A document's vector from its tree, for a document level above the trees
/// ([`crate::retrievers::document_level`]); `None` for a summary's, which the tree does not hold.
pub fn tree_vector(vector: DocumentVector, tree: &Tree) -> Option<Vec<f32>> {
    let leaf_mean = || mean((0..tree.num_leaves()).map(|leaf| tree.embedding(leaf)), tree.dim);
    match vector {
        DocumentVector::LeafMean => Some(leaf_mean()),
        DocumentVector::Root => Some(tree.embedding(tree.root()).to_vec()),
        DocumentVector::RootAndLeaves => Some(root_and_leaves(tree.embedding(tree.root()), &leaf_mean())),
        DocumentVector::Summary => None,
    }
}

pub struct TreeRetriever<'a> {
    pub name: String,
    /// One tree per corpus document (`None` for documents that were not indexed).
    pub trees: Vec<Option<Tree>>,
    /// The trees' leaves.
    pub leaves: &'a Chunks,
    pub search: TreeSearch,
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
        self.best_in(&query.docs, q, k)
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
        TreeRetriever { name, trees, leaves, search }
    }

    /// Under a document level keeping `beam_docs` documents by their trees' `vector` (not a summary's).
    pub fn with_document_level(self, beam_docs: usize, vector: DocumentVector) -> Scoped<'a> {
        let vectors = self.trees.iter().map(|t| t.as_ref().and_then(|t| tree_vector(vector, t))).collect();
        Scoped::new(Box::new(self), beam_docs, vectors)
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
            let level =
                |beam_docs| TreeRetriever::new("t".into(), trees.clone(), &chunks, TreeSearch::LeavesOnly).with_document_level(beam_docs, vector);
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
        let mean = tree_vector(DocumentVector::LeafMean, t2).unwrap();
        assert!((mean[0] - 0.05).abs() < 1e-6 && (mean[1] - 0.075).abs() < 1e-6, "{mean:?}");
        assert_eq!(tree_vector(DocumentVector::Root, t2).unwrap(), t2.embedding(t2.root()));
        assert_eq!(tree_vector(DocumentVector::Summary, t2), None, "a tree holds no summary");
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
