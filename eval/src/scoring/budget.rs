//! A token budget on what a method hands on, applied after ranking, the same way for every method
//! (RAPTOR's collapsed tree hands on at most 2,000 tokens; RAPTOR, Section 4 and Figure 3):
//!
//! ```text
//! used = 0; queue = the ranked items (widened to their parents under retrieval.hand_on)
//! while queue is not empty:
//!     item = pop the front of queue;  new = tokens(handed ∪ item) - used      (overlaps count once)
//!     if used + new <= budget:  hand on item;  used += new
//!     else if tokens(item) > budget:                       (larger than the whole budget)
//!         widened to a parent, its piece fitting what is left:
//!                           hand on the part of the parent around the piece that fits; stop
//!         with a hierarchy: push the item's children, ranked and widened, to the front of queue
//!         widened:          hand on the part of the parent around the piece that fits; stop
//!         without:          hand on the first (budget - used) tokens of item; stop
//!     else: stop                                           (the next item does not fit)
//! ```
//!
//! Tokens are the encoder's word pieces ([`crate::index::Tokens`]). Under a budget a method may
//! hand on fewer than k items: what no reader can take is not handed on. The part of a parent around its
//! piece is [`crate::scoring::parents::around`]: one rule for flat methods and trees alike.

use std::collections::VecDeque;

use arbor_datasets::span::merge;
use arbor_datasets::{Corpus, DocSpan, Span};

use crate::index::{Item, QueryInput, Retriever, Tokens};
use crate::scoring::parents::{Parents, Widened, around, widen_item};

/// The items of `ranked` that fit `budget` tokens, in rank order (see the module doc); `parents`, the
/// parents `ranked` was widened to (`None`: items handed on as ranked).
pub fn spend(
    ranked: Vec<Widened>,
    budget: usize,
    retriever: &dyn Retriever,
    query: &QueryInput,
    tokens: &Tokens,
    corpus: &Corpus,
    parents: Option<&Parents>,
) -> Vec<Item> {
    let mut queue: VecDeque<Widened> = ranked.into();
    let mut handed: Vec<Item> = Vec::new();
    let mut spans: Vec<DocSpan> = Vec::new();
    let mut used = 0;
    while let Some(w) = queue.pop_front() {
        let with: Vec<DocSpan> = merge(spans.iter().chain(&w.item.spans).copied().collect());
        let new = tokens.of(&with) - used;
        if used + new <= budget {
            used += new;
            spans = with;
            handed.push(w.item);
            continue;
        }
        if tokens.of(&w.item.spans) <= budget {
            break;
        }
        let piece_fits = || tokens.of(&merge(spans.iter().chain(&w.matched).copied().collect())) <= budget;
        let cut = match (parents, w.matched.is_empty()) {
            (Some(parents), false) if piece_fits() => around(&w, parents, &spans, budget, tokens, corpus),
            _ => match retriever.children(query, &w.item) {
                Some(children) => {
                    // Children are handed on as their parents too; one inside what is handed on is dropped.
                    let widened = children.into_iter().filter_map(|c| match parents {
                        Some(parents) => widen_item(c, parents, &spans),
                        None => Some(Widened::plain(c)),
                    });
                    widened.collect::<Vec<_>>().into_iter().rev().for_each(|c| queue.push_front(c));
                    continue;
                }
                None => match parents {
                    Some(parents) if !w.matched.is_empty() => around(&w, parents, &spans, budget, tokens, corpus),
                    _ => prefix(&w.item, budget - used, tokens, corpus),
                },
            },
        };
        if !cut.spans.is_empty() {
            handed.push(cut);
        }
        break;
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
    use crate::scoring::parents::hand_on_parents;
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

    fn plain(items: Vec<Item>) -> Vec<Widened> {
        items.into_iter().map(Widened::plain).collect()
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
        let got = spend(plain(ranked.clone()), 8, &flat, &query(), &index.tokens, &corpus, None);
        assert_eq!(texts(&corpus, &got), ["Dd ee ff.", "Ii jj kk ll."]);
        assert_eq!(
            spend(plain(ranked.clone()), 100, &flat, &query(), &index.tokens, &corpus, None),
            ranked,
            "a budget that fits all changes nothing"
        );
        // An item larger than the whole budget, without a hierarchy, is cut to what is left.
        let got = spend(plain(vec![Item::unit(index.units.spans[3], 1.0)]), 2, &flat, &query(), &index.tokens, &corpus, None);
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
        let tree = TreeRetriever::new("t".into(), trees, &index.units, TreeSearch::Collapsed);
        let q = query();
        let items = tree.retrieve(&q, 7);
        // A budget of 5: the root (12 tokens) and node 4 (6 tokens) are too large, so leaf 0 (3 tokens) is
        // handed on in node 4's place; then leaf 1 (3 more) does not fit.
        let root_first = vec![items.iter().find(|i| i.node.unwrap().node == 6).unwrap().clone()];
        let got = spend(plain(root_first), 5, &tree, &q, &index.tokens, &corpus, None);
        assert_eq!(texts(&corpus, &got), ["Aa bb cc."]);
        assert_eq!(got[0].node.unwrap().node, 0);
    }

    /// A statement (one "sentence" of 31 words: a title, a column row, eight data rows) after a line of
    /// prose, cut into pieces of at most 20 tokens, each read after its head (the line before, the title
    /// and the column row: 8 tokens); the gold is its last row.
    const STATEMENT: &str = "Debt.\n\nNotes payable\n($ in millions) 2024 2023\nalpha 10 11\nbeta 12 13\ngamma 14 15\n\
                             delta 16 17\nepsilon 18 19\nzeta 20 21\neta 22 23\ntheta 24 25";

    fn statement() -> (Corpus, LeafIndex, Parents) {
        let doc = Document { id: "d".into(), title: String::new(), text: STATEMENT.into(), sections: vec![], split: None };
        let corpus = Corpus::new(vec![doc], Vec::<Query>::new(), Path::new("t")).unwrap();
        let units = arbor_datasets::UnitConfig { max_tokens: Some(20), context: Some(10), ..Default::default() };
        let index = LeafIndex::build(&corpus, &units, word_tokens(&corpus)).unwrap();
        assert_eq!(index.segments[0].tables.len(), 1, "the statement is a cut table");
        let parents = Parents::with_heads(&index.segments, |s| s.tables.clone());
        (corpus, index, parents)
    }

    /// What `spend` hands on of `ranked` widened to its tables under `budget`, as one text.
    fn handed_text(corpus: &Corpus, index: &LeafIndex, parents: &Parents, ranked: Vec<Item>, r: &dyn Retriever, budget: usize) -> String {
        let got = spend(hand_on_parents(ranked, parents), budget, r, &query(), &index.tokens, corpus, Some(parents));
        assert!(index.tokens.of(&got.iter().flat_map(|i| i.spans.clone()).collect::<Vec<_>>()) <= budget, "over the budget");
        texts(corpus, &got).join("|")
    }

    #[test]
    fn a_table_over_the_budget_is_handed_on_around_the_piece_that_matched() {
        let (corpus, index, parents) = statement();
        let last = index.units.len() - 1;
        let gold = "theta 24 25";
        assert!(index.units.text(&corpus, last).ends_with(gold));
        let flat = FixedRanking((0..=last).rev().collect(), index.units.clone());
        let ranked = vec![Item::unit(index.units.spans[last], 1.0)];
        // The whole table (31 tokens) does not fit 24: its head, the piece and the rows nearest it do; its
        // first rows, far from the piece, do not (cut from the table's start, the gold would be lost).
        let got = handed_text(&corpus, &index, &parents, ranked.clone(), &flat, 24);
        assert!(got.contains(gold), "the piece that matched is handed on: {got:?}");
        assert!(got.contains("($ in millions) 2024 2023"), "the table's head first: {got:?}");
        assert!(!got.contains("alpha"), "rows far from the piece are left out: {got:?}");
        assert!(got.contains("zeta 20 21"), "the rows nearest the piece fill what is left: {got:?}");
        // With room for the whole table, the whole table.
        let whole = handed_text(&corpus, &index, &parents, ranked, &flat, 40);
        assert_eq!(whole, &STATEMENT[STATEMENT.find("Notes").unwrap()..]);
    }

    #[test]
    fn a_tree_hands_on_a_table_over_the_budget_by_the_same_rule() {
        let (corpus, index, parents) = statement();
        let n = index.units.len();
        // A tree over the units whose leaves merge left to right; the query's vector is the last leaf's.
        let m: Vec<f32> = (0..n * n).map(|i| if (i / n).abs_diff(i % n) == 1 { 0.9 - 0.1 * (i / n).min(i % n) as f32 } else { 0.0 }).collect();
        let emb: Vec<f32> = (0..n).flat_map(|u| if u + 1 == n { [1.0, 0.0] } else { [0.0, 1.0] }).collect();
        let trees = vec![Some(Tree::build(index.units.spans.clone(), &emb, 2, &Similarity::Dense { n, values: &m }))];
        let tree = TreeRetriever::new("t".into(), trees, &index.units, TreeSearch::Collapsed);
        let root = tree.retrieve(&query(), 2 * n).into_iter().max_by_key(|i| index.tokens.of(&i.spans)).unwrap();
        assert!(index.tokens.of(&root.spans) > 31, "the root holds the prose and the table");
        // The root and every node over the table are larger than 24 tokens: the node nearest the query is
        // handed on as the part of its table around it, with the head, as a flat method's piece is.
        let got = handed_text(&corpus, &index, &parents, vec![root], &tree, 24);
        assert!(got.contains("theta 24 25") && got.contains("($ in millions) 2024 2023"), "{got:?}");
        assert!(!got.contains("alpha"), "{got:?}");
    }
}
