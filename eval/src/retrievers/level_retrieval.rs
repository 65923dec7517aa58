//! SmartChunk's retrieval (Section 4.1, "Planner"): the plan `(level_min, level_max)` of a query restricts
//! the candidates to `C = {c in H(D) | level(c) in [level_min, level_max]}`, which are ranked by cosine to
//! the query; the top k are handed on. The plan comes from outside (a trained planner, a fixed range, or
//! every level: "w/o planner"), so this crate knows no model. An item larger than the token budget hands
//! on its children, ranked.

use std::borrow::Cow;

use arbor_datasets::DocSpan;

use crate::index::{Chunks, Item, NodeRef, QueryInput, Retriever, top_k};
use crate::retrievers::flat::dot;
use crate::structures::levels::Levels;

/// Multi-level retrieval over one hierarchy per document.
pub struct LevelRetriever<'a> {
    pub name: String,
    /// Each document's hierarchy (`None`: not indexed).
    pub levels: Vec<Option<Levels>>,
    /// Each document's chunk embeddings, by chunk id of its hierarchy (unit length).
    pub embeddings: Vec<Vec<Vec<f32>>>,
    /// The leaf units (level 0 of every hierarchy).
    pub leaves: Cow<'a, Chunks>,
    /// The plan of a query: its `(level_min, level_max)`.
    pub plan: Box<dyn Fn(&QueryInput) -> (usize, usize) + Send + Sync + 'a>,
}

impl LevelRetriever<'_> {
    /// The documents a query searches.
    fn docs(&self, query: &QueryInput) -> Vec<usize> {
        query.docs.clone()
    }

    /// The chunks a plan makes candidates in a query's documents: its cost (each is built and scored).
    pub fn candidates(&self, query: &QueryInput) -> Vec<NodeRef> {
        let (lo, hi) = (self.plan)(query);
        self.docs(query)
            .into_iter()
            .filter_map(|d| self.levels[d].as_ref().map(|l| (d, l)))
            .flat_map(|(d, l)| l.in_range(lo.min(l.levels() - 1), hi).into_iter().map(move |c| NodeRef { doc: d, node: c }))
            .collect()
    }

    fn item(&self, r: NodeRef, score: f32) -> Item {
        let chunk = &self.levels[r.doc].as_ref().expect("indexed").chunks[r.node];
        Item { spans: vec![DocSpan { doc: r.doc, span: chunk.span }], score, node: Some(r) }
    }

    fn score(&self, q: &[f32], r: NodeRef) -> f32 {
        dot(q, &self.embeddings[r.doc][r.node])
    }
}

impl Retriever for LevelRetriever<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn leaves(&self) -> &Chunks {
        &self.leaves
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let q = query.embedding.as_deref().expect("SmartChunk needs a query embedding");
        let candidates = self.candidates(query);
        let ranked = top_k(candidates.iter().enumerate().map(|(i, &r)| (i, self.score(q, r))), k);
        ranked.into_iter().map(|(i, s)| self.item(candidates[i], s)).collect()
    }

    fn children(&self, query: &QueryInput, item: &Item) -> Option<Vec<Item>> {
        let r = item.node?;
        let children = &self.levels[r.doc].as_ref()?.chunks[r.node].children;
        if children.is_empty() {
            return None;
        }
        let q = query.embedding.as_deref().expect("SmartChunk needs a query embedding");
        let scored = children.iter().map(|&c| (c, self.score(q, NodeRef { doc: r.doc, node: c })));
        Some(top_k(scored, children.len()).into_iter().map(|(c, s)| self.item(NodeRef { doc: r.doc, node: c }, s)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::Span;

    /// One document of four 10-token leaves; levels: units, pairs (<= 20 tokens), document. Leaf 2 points
    /// at the query, the pair (2, 3) a little less.
    fn retriever(plan: (usize, usize)) -> LevelRetriever<'static> {
        let leaves: Vec<(Span, usize)> = (0..4).map(|i| (Span::new(i * 10, i * 10 + 10), 10)).collect();
        let levels = Levels::by_tokens(&leaves, &[20]);
        let e = |x: f32| vec![x, (1.0 - x * x).sqrt()];
        // chunks: 0-3 leaves, 4 = (0, 1), 5 = (2, 3), 6 = document.
        let embeddings = vec![vec![e(0.1), e(0.2), e(1.0), e(0.3), e(0.15), e(0.9), e(0.5)]];
        LevelRetriever {
            name: "t".into(),
            levels: vec![Some(levels)],
            embeddings,
            leaves: Cow::Owned(Chunks::from_docs([leaves.iter().map(|l| l.0).collect()])),
            plan: Box::new(move |_| plan),
        }
    }

    fn query() -> QueryInput {
        QueryInput { text: "q".into(), docs: vec![0], embedding: Some(vec![1.0, 0.0]) }
    }

    #[test]
    fn the_plan_restricts_the_candidates_to_its_levels() {
        let spans = |r: &LevelRetriever, k| r.retrieve(&query(), k).iter().map(|i| i.spans[0].span).collect::<Vec<_>>();
        assert_eq!(spans(&retriever((0, 0)), 2), vec![Span::new(20, 30), Span::new(30, 40)]);
        assert_eq!(spans(&retriever((1, 1)), 2), vec![Span::new(20, 40), Span::new(0, 20)]);
        assert_eq!(spans(&retriever((0, 2)), 3), vec![Span::new(20, 30), Span::new(20, 40), Span::new(0, 40)]);
        assert_eq!(retriever((0, 2)).candidates(&query()).len(), 7);
        assert_eq!(retriever((2, 9)).candidates(&query()).len(), 1, "past the top: the document");
        // Fewer candidates than k only when they cover the document (here: the whole document).
        assert_eq!(retriever((2, 2)).retrieve(&query(), 5).len(), 1);
    }

    #[test]
    fn a_chunk_hands_on_its_children_ranked() {
        let r = retriever((1, 1));
        let top = r.retrieve(&query(), 1).remove(0);
        let children: Vec<_> = r.children(&query(), &top).unwrap().iter().map(|i| i.spans[0].span).collect();
        assert_eq!(children, vec![Span::new(20, 30), Span::new(30, 40)]);
        let leaf = r.item(NodeRef { doc: 0, node: 0 }, 0.0);
        assert!(r.children(&query(), &leaf).is_none());
    }
}
