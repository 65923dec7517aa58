//! A document's own hierarchy (Forge's four-level hierarchical index: document / section / chunk levels, with parent expansion;
//! LlamaIndex's auto-merging retriever): sections nest by containment, each leaf unit hangs from the
//! smallest section that holds it, and the document is the root.
//!
//! Retrieval with parent expansion:
//! ```text
//! R = the top k leaves by cosine
//! repeat until nothing changes:
//!     for a parent p with children C(p):  if |R ∩ C(p)| / |C(p)| > ratio:
//!         R = R \ C(p) ∪ {p}          (p scored by the mean of its retrieved children's scores)
//! hand on R by score, then the leaves not under any item of R, by cosine
//! ```
//! A node's text is its span (a section or the whole document). The token budget hands on the children of
//! a node larger than the budget, ranked by their best leaf.

use std::borrow::Cow;
use std::collections::HashMap;

use arbor_datasets::{DocSpan, Span};

use crate::index::{Chunks, Item, NodeRef, QueryInput, Retriever, top_k};
use crate::retrievers::flat::dot;

/// One node: its span, its parent, its children and, for a leaf, its global chunk index.
#[derive(Debug, Clone, PartialEq)]
pub struct HNode {
    pub span: Span,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    pub leaf: Option<usize>,
}

/// One document's hierarchy; node 0 is the document.
#[derive(Debug, Clone, PartialEq)]
pub struct Hierarchy {
    pub nodes: Vec<HNode>,
}

impl Hierarchy {
    /// The hierarchy of a document of `len` bytes with `sections` (any order, nested by containment) over
    /// its leaf chunks `leaves` (global index, span), in text order.
    pub fn build(len: usize, sections: &[Span], leaves: &[(usize, Span)]) -> Self {
        let mut sections: Vec<Span> = sections.iter().copied().filter(|s| !s.is_empty()).collect();
        sections.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
        sections.dedup();
        let mut nodes = vec![HNode { span: Span::new(0, len), parent: None, children: vec![], leaf: None }];
        // Sections in start order: each one's parent is the innermost open section that contains it.
        let mut open: Vec<usize> = vec![0];
        for s in sections {
            while open.len() > 1 && !nodes[*open.last().expect("root")].span.contains(&s) {
                open.pop();
            }
            let parent = *open.last().expect("root");
            nodes.push(HNode { span: s, parent: Some(parent), children: vec![], leaf: None });
            let id = nodes.len() - 1;
            nodes[parent].children.push(id);
            open.push(id);
        }
        let section_count = nodes.len();
        for &(chunk, span) in leaves {
            let parent = (0..section_count).filter(|&n| nodes[n].span.contains(&span)).min_by_key(|&n| nodes[n].span.len()).unwrap_or(0);
            nodes.push(HNode { span, parent: Some(parent), children: vec![], leaf: Some(chunk) });
            let id = nodes.len() - 1;
            nodes[parent].children.push(id);
        }
        Hierarchy { nodes }
    }

    /// The number of sections (nodes other than the document and the leaves).
    pub fn sections(&self) -> usize {
        self.nodes.iter().skip(1).filter(|n| n.leaf.is_none()).count()
    }
}

/// Dense leaf retrieval with parent expansion over one hierarchy per document.
pub struct AutoMerging<'a> {
    pub name: String,
    pub trees: Vec<Option<Hierarchy>>,
    pub chunks: Cow<'a, Chunks>,
    pub embeddings: Cow<'a, [Vec<f32>]>,
    /// A parent replaces its retrieved children when more than this share of them is retrieved.
    pub ratio: f32,
}

impl Retriever for AutoMerging<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn leaves(&self) -> &Chunks {
        &self.chunks
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let q = query.embedding.as_deref().expect("dense retrieval needs a query embedding");
        let ranked = top_k(self.chunks.candidates(query).map(|c| (c, dot(q, &self.embeddings[c]))), usize::MAX);
        let node_of: HashMap<usize, NodeRef> = self.leaf_nodes(ranked.iter().take(k).map(|&(c, _)| c));
        let mut retrieved: Vec<(NodeRef, f32)> = ranked.iter().take(k).map(|&(c, s)| (node_of[&c], s)).collect();
        loop {
            let mut by_parent: HashMap<NodeRef, Vec<usize>> = HashMap::new();
            for (i, (r, _)) in retrieved.iter().enumerate() {
                if let Some(p) = self.node(*r).parent {
                    by_parent.entry(NodeRef { doc: r.doc, node: p }).or_default().push(i);
                }
            }
            let mut parents: Vec<(NodeRef, Vec<usize>)> = by_parent.into_iter().collect();
            parents.sort_by_key(|(p, _)| (p.doc, p.node));
            let Some((parent, members)) = parents.into_iter().find(|(p, m)| m.len() as f32 / self.node(*p).children.len() as f32 > self.ratio) else {
                break;
            };
            let score = members.iter().map(|&i| retrieved[i].1).sum::<f32>() / members.len() as f32;
            let mut i = 0;
            retrieved.retain(|_| {
                i += 1;
                !members.contains(&(i - 1))
            });
            retrieved.push((parent, score));
        }
        retrieved.sort_by(|a, b| b.1.total_cmp(&a.1).then((a.0.doc, a.0.node).cmp(&(b.0.doc, b.0.node))));
        let mut items: Vec<Item> = retrieved.iter().map(|&(r, s)| self.item(r, s)).collect();
        let held: Vec<DocSpan> = items.iter().flat_map(|i| i.spans.iter().copied()).collect();
        let rest = ranked.iter().filter(|(c, _)| {
            let leaf = self.chunks.spans[*c];
            !held.iter().any(|h| h.contains(&leaf))
        });
        items.extend(rest.take(k.saturating_sub(items.len())).map(|&(c, s)| Item::unit(self.chunks.spans[c], s)));
        items
    }

    fn children(&self, query: &QueryInput, item: &Item) -> Option<Vec<Item>> {
        let r = item.node?;
        let children = &self.node(r).children;
        if children.is_empty() {
            return None;
        }
        let q = query.embedding.as_deref().expect("dense retrieval needs a query embedding");
        let tree = self.trees[r.doc].as_ref()?;
        let best = |n: usize| self.best_leaf(tree, n, q);
        let scored = children.iter().map(|&c| (c, best(c)));
        Some(top_k(scored, children.len()).into_iter().map(|(c, s)| self.item(NodeRef { doc: r.doc, node: c }, s)).collect())
    }
}

impl AutoMerging<'_> {
    fn node(&self, r: NodeRef) -> &HNode {
        &self.trees[r.doc].as_ref().expect("an item comes from an indexed document").nodes[r.node]
    }

    fn item(&self, r: NodeRef, score: f32) -> Item {
        Item { spans: vec![DocSpan { doc: r.doc, span: self.node(r).span }], score, node: Some(r) }
    }

    /// The tree node of each of `chunks`.
    fn leaf_nodes(&self, chunks: impl Iterator<Item = usize>) -> HashMap<usize, NodeRef> {
        chunks
            .map(|c| {
                let doc = self.chunks.spans[c].doc;
                let tree = self.trees[doc].as_ref().expect("a retrieved chunk's document is indexed");
                let node = tree.nodes.iter().position(|n| n.leaf == Some(c)).expect("every chunk is a leaf of its document");
                (c, NodeRef { doc, node })
            })
            .collect()
    }

    /// The best cosine of the leaves under node `n`.
    fn best_leaf(&self, tree: &Hierarchy, n: usize, q: &[f32]) -> f32 {
        match tree.nodes[n].leaf {
            Some(c) => dot(q, &self.embeddings[c]),
            None => tree.nodes[n].children.iter().map(|&c| self.best_leaf(tree, c, q)).fold(f32::NEG_INFINITY, f32::max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document 0..100 with section A = 0..50 (holding A.1 = 0..25) and B = 50..100; eight leaves of
    /// 12 bytes: 0, 12 in A.1; 26, 38 in A (outside A.1); 50, 62, 74, 86 in B.
    fn setup() -> (Hierarchy, Chunks) {
        let starts = [0, 12, 26, 38, 50, 62, 74, 86];
        let spans: Vec<Span> = starts.iter().map(|&s| Span::new(s, s + 12)).collect();
        let chunks = Chunks::from_docs([spans.clone()]);
        let leaves: Vec<(usize, Span)> = spans.into_iter().enumerate().collect();
        let tree = Hierarchy::build(100, &[Span::new(50, 100), Span::new(0, 50), Span::new(0, 25)], &leaves);
        (tree, chunks)
    }

    #[test]
    fn sections_nest_and_leaves_hang_from_the_smallest_section() {
        let (tree, _) = setup();
        assert_eq!(tree.sections(), 3);
        let span_of = |n: usize| tree.nodes[n].span;
        let parent_span = |leaf: usize| span_of(tree.nodes.iter().find(|n| n.leaf == Some(leaf)).unwrap().parent.unwrap());
        assert_eq!(parent_span(0), Span::new(0, 25));
        assert_eq!(parent_span(3), Span::new(0, 50));
        assert_eq!(parent_span(7), Span::new(50, 100));
        let a1 = tree.nodes.iter().position(|n| n.span == Span::new(0, 25)).unwrap();
        assert_eq!(span_of(tree.nodes[a1].parent.unwrap()), Span::new(0, 50));
    }

    #[test]
    fn a_parent_replaces_its_children_when_most_of_them_are_retrieved() {
        let (tree, chunks) = setup();
        // The query matches leaves 4, 5, 6 (three of B's four) best, then leaf 0.
        let e = |x: f32| vec![x, (1.0 - x * x).sqrt()];
        let embeddings = vec![e(0.7), e(0.1), e(0.2), e(0.15), e(0.95), e(0.9), e(0.85), e(0.05)];
        let r = AutoMerging {
            name: "h".into(),
            trees: vec![Some(tree)],
            chunks: Cow::Borrowed(&chunks),
            embeddings: Cow::Borrowed(&embeddings),
            ratio: 0.5,
        };
        let q = QueryInput { text: String::new(), docs: vec![0], embedding: Some(vec![1.0, 0.0]) };
        let items = r.retrieve(&q, 4);
        let spans: Vec<Span> = items.iter().map(|i| i.spans[0].span).collect();
        // Top 4 = leaves 4, 5, 6, 0: 3 of B's 4 children (> 0.5), so B replaces them; A.1 has 1 of 2 (not > 0.5).
        assert_eq!(spans[..2], [Span::new(50, 100), Span::new(0, 12)]);
        assert!((items[0].score - 0.9).abs() < 1e-6, "B scores the mean of 0.95, 0.9, 0.85");
        assert_eq!(items.len(), 4, "then the best leaves outside B: 2 and 3");
        assert_eq!(spans[2..], [Span::new(26, 38), Span::new(38, 50)]);
        // With a ratio of 0.8, B is not expanded.
        let strict = AutoMerging { ratio: 0.8, ..r };
        assert_eq!(strict.retrieve(&q, 4)[0].spans[0].span, Span::new(50, 62));
        // B's children for a budget: its leaves by cosine.
        let b = &items[0];
        let kids: Vec<Span> = strict.children(&q, b).unwrap().iter().map(|i| i.spans[0].span).collect();
        assert_eq!(kids, [Span::new(50, 62), Span::new(62, 74), Span::new(74, 86), Span::new(86, 98)]);
    }
}
