//! Small-to-big hand-on (`retrieval.hand_on`): items are ranked by what the encoder reads (units, or the
//! pieces of a cut sentence with their `units.context` header) and handed on as the parent they lie in,
//! as a parent-document retriever hands on the parent of the child it matched: the whole of a cut table
//! (`Tables`, the default: a filing's statement), of any cut sentence (`WholeSentences`), or the whole
//! paragraph (`Paragraphs`: a blank-line block, a page of a PDF-extracted filing). Applied after ranking and before the token budget, the same way for every method:
//!
//! ```text
//! handed = []
//! for item in ranked:
//!     widened = each span of item, covered with every parent it overlaps; merged
//!     if item overlaps no parent, or widened adds text to handed: hand on widened (same score and node)
//!     (else it lies in what an item above already handed on, and is dropped)
//! ```
//!
//! An item that overlaps no parent is handed on as ranked (a tree's node inside a node above it too), so
//! without cut tables `Tables`, and without cut sentences `WholeSentences`, change nothing for any method. The runner asks the retriever for twice as many items while fewer than k remain after
//! widening (several children of one parent become one item), so every method still hands on k items
//! where it has them.

use arbor_datasets::span::merge;
use arbor_datasets::{DocSpan, Span};

use crate::index::Item;

/// `ranked` with every span widened to the whole of the parents it overlaps (`parents[d]`: document `d`'s
/// parents, sorted and disjoint), items that touch a parent and add nothing to those above them dropped.
/// An item that touches no parent is handed on as ranked, even inside an item above (a tree's node
/// inside its parent node, as `Items` hands them on), so where no parent lies in the ranked documents
/// nothing changes.
pub fn hand_on_parents(ranked: Vec<Item>, parents: &[Vec<Span>]) -> Vec<Item> {
    let mut handed: Vec<DocSpan> = Vec::new();
    let mut out = Vec::with_capacity(ranked.len());
    for item in ranked {
        let touched = |s: &DocSpan| overlapping(s.span, parents.get(s.doc).map_or(&[], Vec::as_slice));
        let touches = item.spans.iter().any(|s| !touched(s).is_empty());
        let spans = merge(item.spans.iter().map(|s| widen(*s, touched(s))).collect());
        let new = !touches || spans.iter().any(|s| !handed.iter().any(|h| h.contains(s)));
        if new {
            handed = merge(handed.into_iter().chain(spans.iter().copied()).collect());
            out.push(Item { spans, ..item });
        }
    }
    out
}

/// `s` covered with every span of `over`, the parents it overlaps.
fn widen(s: DocSpan, over: &[Span]) -> DocSpan {
    DocSpan { doc: s.doc, span: over.iter().fold(s.span, |acc, c| acc.cover(c)) }
}

/// The spans of `parents` (sorted, disjoint) that `s` overlaps, found by binary search.
fn overlapping(s: Span, parents: &[Span]) -> &[Span] {
    let first = parents.partition_point(|c| c.end <= s.start);
    let last = first + parents[first..].partition_point(|c| c.start < s.end);
    &parents[first..last]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn item(spans: &[(usize, usize, usize)], score: f32) -> Item {
        Item { spans: spans.iter().map(|&(doc, a, b)| DocSpan { doc, span: Span::new(a, b) }).collect(), score, node: None }
    }

    fn spans(items: &[Item]) -> Vec<Vec<(usize, usize, usize)>> {
        items.iter().map(|i| i.spans.iter().map(|s| (s.doc, s.span.start, s.span.end)).collect()).collect()
    }

    #[test]
    fn a_piece_is_handed_on_as_its_sentence_once() {
        // Document 0 cut sentences [10, 40) and [50, 90); document 1 none.
        let cut = vec![vec![Span::new(10, 40), Span::new(50, 90)], vec![]];
        let ranked = vec![
            item(&[(0, 20, 30)], 0.9), // a piece of the first sentence: the whole sentence
            item(&[(0, 0, 9)], 0.8),   // no cut sentence: as it is
            item(&[(0, 10, 20)], 0.7), // another piece of the first sentence: adds nothing, dropped
            item(&[(1, 5, 15)], 0.6),  // another document without cut sentences
            item(&[(0, 35, 55)], 0.5), // spans the end of one and the start of the other: both
            item(&[(0, 60, 70)], 0.4), // inside what is handed on already: dropped
        ];
        let out = hand_on_parents(ranked, &cut);
        assert_eq!(spans(&out), vec![vec![(0, 10, 40)], vec![(0, 0, 9)], vec![(1, 5, 15)], vec![(0, 10, 90)]]);
        assert_eq!(out.iter().map(|i| i.score).collect::<Vec<_>>(), vec![0.9, 0.8, 0.6, 0.5]);
    }

    #[test]
    fn without_cut_sentences_nothing_changes() {
        // A tree's node and a node inside it: both handed on, as ranked.
        let ranked = vec![item(&[(0, 0, 30)], 1.0), item(&[(0, 3, 8), (0, 20, 25)], 0.5), item(&[(0, 1, 4)], 0.2)];
        let out = hand_on_parents(ranked.clone(), &[vec![]]);
        assert_eq!(spans(&out), spans(&ranked));
        // Nor where the cut sentences lie elsewhere: items that touch none stay as ranked.
        let out = hand_on_parents(ranked.clone(), &[vec![Span::new(40, 60)]]);
        assert_eq!(spans(&out), spans(&ranked));
    }

    proptest! {
        #[test]
        fn every_item_holds_what_it_held_and_no_cut_sentence_in_part(
            bounds in proptest::collection::btree_set(0usize..200, 0..12),
            raw in proptest::collection::vec((0usize..190, 1usize..30), 1..10),
        ) {
            let b: Vec<usize> = bounds.into_iter().collect();
            let cut: Vec<Span> = b.chunks_exact(2).map(|p| Span::new(p[0], p[1])).collect();
            let ranked: Vec<Item> = raw.iter().map(|&(a, len)| item(&[(0, a, a + len)], 0.0)).collect();
            let out = hand_on_parents(ranked.clone(), std::slice::from_ref(&cut));
            // The first item is always handed on; every ranked span is inside what is handed on.
            prop_assert!(!out.is_empty());
            let union = merge(out.iter().flat_map(|o| o.spans.iter().copied()).collect());
            for r in &ranked {
                let s = r.spans[0].span;
                prop_assert!(union.iter().any(|h| h.span.contains(&s)), "{:?} lost", s);
            }
            // A handed-on span holds each cut sentence it touches whole.
            for h in out.iter().flat_map(|o| &o.spans) {
                for c in &cut {
                    prop_assert!(!c.overlaps(&h.span) || h.span.contains(c), "{:?} cuts {:?}", h.span, c);
                }
            }
        }
    }
}
