//! A token budget on what a method hands on, applied after ranking, the same way for every method
//! (RAPTOR's collapsed tree hands on at most 2,000 tokens; RAPTOR, Section 4 and Figure 3):
//!
//! ```text
//! used = 0; queue = the ranked items
//! while queue is not empty:
//!     item = pop the front of queue;  new = tokens(handed ∪ item) - used      (overlaps count once)
//!     if used + new <= budget:  hand on item;  used += new
//!     else if tokens(item) > budget:                       (larger than the whole budget)
//!         with a hierarchy: push the item's children, ranked, to the front of queue
//!         without:          hand on the first (budget - used) tokens of item; stop
//!     else: stop                                           (the next item does not fit)
//! ```
//!
//! Tokens are the encoder's word pieces ([`crate::index::Tokens`]). Under a budget a method may
//! hand on fewer than k items: what no reader can take is not handed on.

use std::collections::VecDeque;

use arbor_datasets::span::merge;
use arbor_datasets::{Corpus, DocSpan, Span};

use crate::index::{Item, QueryInput, Retriever, Tokens};

/// The items of `ranked` that fit `budget` tokens, in rank order (see the module doc).
pub fn spend(ranked: Vec<Item>, budget: usize, retriever: &dyn Retriever, query: &QueryInput, tokens: &Tokens, corpus: &Corpus) -> Vec<Item> {
    let mut queue: VecDeque<Item> = ranked.into();
    let mut handed: Vec<Item> = Vec::new();
    let mut spans: Vec<DocSpan> = Vec::new();
    let mut used = 0;
    while let Some(item) = queue.pop_front() {
        let with: Vec<DocSpan> = merge(spans.iter().chain(&item.spans).copied().collect());
        let new = tokens.of(&with) - used;
        if used + new <= budget {
            used += new;
            spans = with;
            handed.push(item);
            continue;
        }
        if tokens.of(&item.spans) <= budget {
            break;
        }
        match retriever.children(query, &item) {
            Some(children) => children.into_iter().rev().for_each(|c| queue.push_front(c)),
            None => {
                let cut = prefix(&item, budget - used, tokens, corpus);
                if !cut.spans.is_empty() {
                    handed.push(cut);
                }
                break;
            }
        }
    }
    handed
}

/// The first `n` tokens of an item's spans (in document order), trailing whitespace trimmed.
fn prefix(item: &Item, mut n: usize, tokens: &Tokens, corpus: &Corpus) -> Item {
    let mut spans = Vec::new();
    for s in merge(item.spans.clone()) {
        if n == 0 {
            break;
        }
        let starts = &tokens.0[s.doc];
        let end = starts.prefix_end(s.span, n);
        n -= starts.count(Span::new(s.span.start, end));
        let text = &corpus.documents[s.doc].text[s.span.start..end];
        let end = s.span.start + text.trim_end().len();
        if end > s.span.start {
            spans.push(DocSpan { doc: s.doc, span: Span::new(s.span.start, end) });
        }
    }
    Item { spans, score: item.score, node: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LeafIndex;
    use crate::index::{FixedRanking, word_tokens};
    use crate::retrievers::beam::Layers;
    use crate::retrievers::tree_retrieval::{TreeRetriever, TreeSearch};
    use crate::structures::tree::{Similarity, Tree};
    use arbor_datasets::{Document, Query};
    use std::path::Path;

    /// Four one-sentence units of 3, 3, 2 and 4 words (one token per word).
    const TEXT: &str = "Aa bb cc.\n\nDd ee ff.\n\nGg hh.\n\nIi jj kk ll.";

    fn setup() -> (Corpus, LeafIndex) {
        let doc = Document { id: "d".into(), title: String::new(), text: TEXT.into(), sections: vec![], split: None };
        let corpus = Corpus::new(vec![doc], Vec::<Query>::new(), Path::new("t")).unwrap();
        let index = LeafIndex::build(&corpus, &Default::default(), word_tokens(&corpus)).unwrap();
        (corpus, index)
    }

    fn query() -> QueryInput {
        QueryInput { text: String::new(), docs: vec![0], embedding: Some(vec![1.0, 0.0]) }
    }

    fn texts(corpus: &Corpus, items: &[Item]) -> Vec<String> {
        items.iter().map(|i| i.spans.iter().map(|s| &corpus.documents[0].text[s.span.start..s.span.end]).collect::<Vec<_>>().join("|")).collect()
    }

    #[test]
    fn items_are_taken_in_rank_order_until_the_next_does_not_fit() {
        let (corpus, index) = setup();
        let ranked: Vec<Item> = [1, 3, 2, 0].iter().map(|&u| Item::unit(index.units.spans[u], 1.0)).collect();
        let flat = FixedRanking(vec![1, 3, 2, 0], index.units.clone());
        // 3 + 4 = 7 tokens fit 8; the third (2 tokens) would make 9: stop there, although a later one is small.
        let got = spend(ranked.clone(), 8, &flat, &query(), &index.tokens, &corpus);
        assert_eq!(texts(&corpus, &got), ["Dd ee ff.", "Ii jj kk ll."]);
        assert_eq!(spend(ranked.clone(), 100, &flat, &query(), &index.tokens, &corpus), ranked, "a budget that fits all changes nothing");
        // An item larger than the whole budget, without a hierarchy, is cut to what is left.
        let got = spend(vec![Item::unit(index.units.spans[3], 1.0)], 2, &flat, &query(), &index.tokens, &corpus);
        assert_eq!(texts(&corpus, &got), ["Ii jj"]);
        assert_eq!(index.tokens.of(&got[0].spans), 2);
    }

    #[test]
    fn a_node_larger_than_the_budget_is_replaced_by_its_children() {
        let (corpus, index) = setup();
        // Leaves 0, 1 merge first (node 4), then 2, 3 (node 5), then the root 6.
        #[rustfmt::skip]
        let m = [
            0.0, 0.9, 0.1, 0.1,
            0.9, 0.0, 0.1, 0.1,
            0.1, 0.1, 0.0, 0.8,
            0.1, 0.1, 0.8, 0.0,
        ];
        let emb = [1.0, 0.0, 0.8, 0.6, 0.0, 1.0, -0.6, 0.8];
        let trees = vec![Some(Tree::build(index.units.spans.clone(), &emb, 2, &Similarity::Dense { n: 4, values: &m }))];
        let ranked = crate::retrievers::beam::collapsed(trees[0].as_ref().unwrap(), &[1.0, 0.0], Layers::Upper, 1);
        assert_eq!(ranked[0].0, 4, "node 4 (6 tokens) ranks first");
        let tree = TreeRetriever { name: "t".into(), trees, leaves: &index.units, search: TreeSearch::Collapsed };
        let q = query();
        let items = tree.retrieve(&q, 7);
        // A budget of 5: the root (12 tokens) and node 4 (6 tokens) are too large, so leaf 0 (3 tokens) is
        // handed on in node 4's place; then leaf 1 (3 more) does not fit.
        let root_first = vec![items.iter().find(|i| i.node.unwrap().node == 6).unwrap().clone()];
        let got = spend(root_first, 5, &tree, &q, &index.tokens, &corpus);
        assert_eq!(texts(&corpus, &got), ["Aa bb cc."]);
        assert_eq!(got[0].node.unwrap().node, 0);
    }
}
