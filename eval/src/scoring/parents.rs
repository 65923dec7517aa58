//! Small-to-big hand-on (`retrieval.hand_on`): items are ranked by what the encoder reads (units, or the
//! pieces of a cut sentence with their `units.context` header) and handed on as the parent they lie in,
//! as a parent-document retriever hands on the parent of the child it matched: the whole of a cut table
//! (`Tables`, the default: a filing's statement), of any cut sentence (`WholeSentences`), or the whole
//! paragraph (`Paragraphs`: a blank-line block, a page of a PDF-extracted filing). Applied after ranking
//! and before the token budget, the same way for every method:
//!
//! ```text
//! handed = []
//! for item in ranked:
//!     widened = each span of item, covered with every parent it overlaps; merged
//!     if item overlaps no parent, or widened adds text to handed: hand on widened (same score and node),
//!         remembering the item's own spans (the piece that matched)
//!     (else it lies in what an item above already handed on, and is dropped)
//! ```
//!
//! An item that overlaps no parent is handed on as ranked (a tree's node inside a node above it too), so
//! without cut tables `Tables`, and without cut sentences `WholeSentences`, change nothing for any method.
//! The runner asks the retriever for twice as many items while fewer than k remain after widening (several
//! children of one parent become one item), so every method still hands on k items where it has them.
//!
//! A parent larger than what the token budget leaves is handed on as the part of it that fits *around the
//! piece that matched* ([`around`]), the same for every method (flat, BM25, hybrid, trees): the parent's
//! head first (the lines `units.context` reads its pieces after: a statement's title, unit line and column
//! row), then the piece, then the parent's lines nearest the piece, after and before it in turn, whole
//! lines while they fit. A parent is thus handed on whole or as one such cut, never as an arbitrary part.

use arbor_datasets::span::merge;
use arbor_datasets::units::Segmented;
use arbor_datasets::{Corpus, DocSpan, Span};

use crate::index::{Item, Tokens};

/// What items are handed on as: each document's parents (sorted, disjoint) and each parent's head (the
/// spans its pieces are read after under `units.context`; empty without it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parents {
    pub spans: Vec<Vec<Span>>,
    pub heads: Vec<Vec<Vec<Span>>>,
}

impl Parents {
    /// Parents without heads (paragraphs; any rule whose units read no header).
    pub fn plain(spans: Vec<Vec<Span>>) -> Self {
        let heads = spans.iter().map(|p| vec![Vec::new(); p.len()]).collect();
        Parents { spans, heads }
    }

    /// `parents(segmented)` of each document, each parent's head the header its last unit is read after
    /// (a cut table's later pieces read its whole head; the first piece holds the head itself).
    pub fn with_heads(segments: &[Segmented], parents: impl Fn(&Segmented) -> Vec<Span>) -> Self {
        let mut out = Parents::default();
        for s in segments {
            let spans = parents(s);
            let heads = spans.iter().map(|p| s.units.iter().rev().find(|u| p.contains(&u.span)).map_or(Vec::new(), |u| u.header.clone())).collect();
            out.spans.push(spans);
            out.heads.push(heads);
        }
        out
    }

    /// The parents of document `doc` that `s` overlaps, with their indices.
    fn touched(&self, doc: usize, s: Span) -> std::ops::Range<usize> {
        let parents = self.spans.get(doc).map_or(&[][..], Vec::as_slice);
        let first = parents.partition_point(|c| c.end <= s.start);
        first..first + parents[first..].partition_point(|c| c.start < s.end)
    }
}

/// An item as it is handed on, with the spans it was ranked for when it was widened to its parents
/// (`matched`; empty when it touched none).
#[derive(Debug, Clone, PartialEq)]
pub struct Widened {
    pub item: Item,
    pub matched: Vec<DocSpan>,
}

impl Widened {
    /// An item handed on as ranked.
    pub fn plain(item: Item) -> Self {
        Widened { item, matched: Vec::new() }
    }
}

/// `ranked` with every span widened to the whole of the parents it overlaps, items that touch a parent and
/// add nothing to those above them dropped (see the module doc). An item that touches no parent is handed
/// on as ranked, even inside an item above (a tree's node inside its parent node, as `Items` hands them
/// on), so where no parent lies in the ranked documents nothing changes.
pub fn hand_on_parents(ranked: Vec<Item>, parents: &Parents) -> Vec<Widened> {
    let mut handed: Vec<DocSpan> = Vec::new();
    let mut out = Vec::with_capacity(ranked.len());
    for item in ranked {
        if let Some(w) = widen_item(item, parents, &handed) {
            handed = merge(handed.into_iter().chain(w.item.spans.iter().copied()).collect());
            out.push(w);
        }
    }
    out
}

/// `item` widened to the parents it touches, or `None` when it touches one and adds nothing to `handed`.
pub fn widen_item(item: Item, parents: &Parents, handed: &[DocSpan]) -> Option<Widened> {
    let touches = item.spans.iter().any(|s| !parents.touched(s.doc, s.span).is_empty());
    if !touches {
        return Some(Widened::plain(item));
    }
    let spans = merge(
        item.spans
            .iter()
            .map(|s| DocSpan { doc: s.doc, span: parents.spans[s.doc][parents.touched(s.doc, s.span)].iter().fold(s.span, |acc, c| acc.cover(c)) })
            .collect(),
    );
    let new = spans.iter().any(|s| !handed.iter().any(|h| h.contains(s)));
    new.then(|| Widened { matched: merge(item.spans.clone()), item: Item { spans, ..item } })
}

/// The part of `w`'s parents that fits with `handed` in `budget` tokens around the piece that matched (see
/// the module doc): the parents' heads, the piece (its first tokens, if it alone is too long), then the
/// parents' lines nearest it, after and before in turn, whole while they fit. Empty when nothing fits.
pub fn around(w: &Widened, parents: &Parents, handed: &[DocSpan], budget: usize, tokens: &Tokens, corpus: &Corpus) -> Item {
    let cost = |extra: &[DocSpan]| tokens.of(&merge(handed.iter().chain(extra).copied().collect()));
    let heads: Vec<DocSpan> = w
        .matched
        .iter()
        .flat_map(|s| parents.touched(s.doc, s.span).flat_map(move |p| parents.heads[s.doc][p].iter().map(move |&span| DocSpan { doc: s.doc, span })))
        .collect();
    // The piece: its first tokens that fit alone.
    let mut taken: Vec<DocSpan> = Vec::new();
    for s in &w.matched {
        let room = budget.saturating_sub(cost(&taken));
        let starts = &tokens.0[s.doc];
        let end = starts.prefix_end(s.span, room);
        let end = s.span.start + corpus.documents[s.doc].text[s.span.start..end].trim_end().len();
        if end > s.span.start {
            taken.push(DocSpan { doc: s.doc, span: Span::new(s.span.start, end) });
        }
        if end < s.span.end {
            break;
        }
    }
    if taken.is_empty() {
        return Item { spans: Vec::new(), score: w.item.score, node: None };
    }
    // The head, line by line in reading order, while it fits beside the piece.
    for h in heads {
        taken.push(h);
        if cost(&taken) > budget {
            taken.pop();
        }
    }
    // The lines nearest the piece, after and before it in turn, within its parent.
    for &s in &w.matched {
        let Some(p) = parents.touched(s.doc, s.span).next().map(|p| parents.spans[s.doc][p]) else { continue };
        let text = &corpus.documents[s.doc].text;
        let (mut left, mut right) = (s.span.start.max(p.start), s.span.end.min(p.end));
        let (mut open_left, mut open_right) = (left > p.start, right < p.end);
        while open_left || open_right {
            for after in [true, false] {
                let open = if after { &mut open_right } else { &mut open_left };
                if !*open {
                    continue;
                }
                let line = match after {
                    true => Span::new(right, text[right..p.end].find('\n').map_or(p.end, |i| right + i + 1)),
                    false => {
                        let before = &text[p.start..left];
                        let before = before.strip_suffix('\n').unwrap_or(before);
                        Span::new(before.rfind('\n').map_or(p.start, |i| p.start + i + 1), left)
                    }
                };
                taken.push(DocSpan { doc: s.doc, span: line });
                if cost(&taken) > budget {
                    taken.pop();
                    *open = false;
                    continue;
                }
                if after {
                    right = line.end;
                    open_right = right < p.end;
                } else {
                    left = line.start;
                    open_left = left > p.start;
                }
            }
        }
    }
    let spans = merge(taken)
        .into_iter()
        .filter_map(|s| {
            let t = &corpus.documents[s.doc].text[s.span.start..s.span.end];
            let start = s.span.start + (t.len() - t.trim_start().len());
            let end = s.span.start + t.trim_end().len();
            (end > start).then(|| DocSpan { doc: s.doc, span: Span::new(start, end) })
        })
        .collect();
    Item { spans, score: w.item.score, node: None }
}
#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn item(spans: &[(usize, usize, usize)], score: f32) -> Item {
        Item { spans: spans.iter().map(|&(doc, a, b)| DocSpan { doc, span: Span::new(a, b) }).collect(), score, node: None }
    }

    fn items(out: Vec<Widened>) -> Vec<Item> {
        out.into_iter().map(|w| w.item).collect()
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
        let out = items(hand_on_parents(ranked, &Parents::plain(cut)));
        assert_eq!(spans(&out), vec![vec![(0, 10, 40)], vec![(0, 0, 9)], vec![(1, 5, 15)], vec![(0, 10, 90)]]);
        assert_eq!(out.iter().map(|i| i.score).collect::<Vec<_>>(), vec![0.9, 0.8, 0.6, 0.5]);
    }

    #[test]
    fn without_cut_sentences_nothing_changes() {
        // A tree's node and a node inside it: both handed on, as ranked.
        let ranked = vec![item(&[(0, 0, 30)], 1.0), item(&[(0, 3, 8), (0, 20, 25)], 0.5), item(&[(0, 1, 4)], 0.2)];
        let out = items(hand_on_parents(ranked.clone(), &Parents::plain(vec![vec![]])));
        assert_eq!(spans(&out), spans(&ranked));
        // Nor where the cut sentences lie elsewhere: items that touch none stay as ranked.
        let out = items(hand_on_parents(ranked.clone(), &Parents::plain(vec![vec![Span::new(40, 60)]])));
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
            let out = items(hand_on_parents(ranked.clone(), &Parents::plain(vec![cut.clone()])));
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
