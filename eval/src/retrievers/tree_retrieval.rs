//! Retrieval over per-document SproutRAG trees: beam search (or the collapsed tree, or the leaves ranked
//! in their tree's context) in each of the query's documents, top k per document, then the best k overall
//! (SproutRAG, Section 3; multi-document queries).

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
        let docs = query.docs.clone();
        let mut found: Vec<(usize, usize, f32)> = Vec::new();
        for d in docs {
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

impl TreeRetriever<'_> {
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
        let r = TreeRetriever { name: "t".into(), trees, leaves: &chunks, search: TreeSearch::Collapsed };
        let q = QueryInput { text: String::new(), docs: vec![0, 2], embedding: Some(vec![1.0, 0.0]) };
        let items = r.retrieve(&q, 2);
        assert_eq!(items[0].spans, vec![DocSpan { doc: 0, span: Span::new(0, 4) }]);
        assert_eq!(items[1].spans[0].doc, 2);
        assert!(items[0].score >= items[1].score);
    }

    #[test]
    fn children_of_a_node_are_its_two_children_ranked_for_the_query() {
        let trees = vec![Some(tree(0, &[1.0, 0.0, 0.0, 1.0]))];
        let chunks = leaves(&trees);
        let r = TreeRetriever { name: "t".into(), trees, leaves: &chunks, search: TreeSearch::Collapsed };
        let q = QueryInput { text: String::new(), docs: vec![0], embedding: Some(vec![0.0, 1.0]) };
        let root = r.item(0, 2, 0.5);
        let kids = r.children(&q, &root).unwrap();
        assert_eq!(kids.iter().map(|i| i.node.unwrap().node).collect::<Vec<_>>(), vec![1, 0]);
        assert_eq!(r.children(&q, &kids[0]), None, "a leaf has none");
    }
}
