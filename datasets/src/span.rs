//! Byte spans into a document's text, and the interval arithmetic every metric is built on.

use serde::{Deserialize, Serialize};

/// A half-open UTF-8 byte range `[start, end)` into one document's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        debug_assert!(start <= end, "span {start}..{end} is reversed");
        Span { start, end }
    }

    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start >= self.end
    }

    pub fn contains(&self, other: &Span) -> bool {
        self.start <= other.start && other.end <= self.end
    }

    pub fn overlaps(&self, other: &Span) -> bool {
        self.start < other.end && other.start < self.end
    }

    /// The covering span of two spans.
    pub fn cover(&self, other: &Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// The code point offset of byte offset `byte` (a character boundary) of `text`: one lookup, counted.
pub fn char_offset(text: &str, byte: usize) -> usize {
    text[..byte].chars().count()
}

/// Byte offsets to code point offsets in one text, for many lookups (a document's every unit).
pub struct CharOffsets {
    /// The byte offset of every character, then the text's length.
    starts: Vec<usize>,
}

impl CharOffsets {
    pub fn new(text: &str) -> Self {
        CharOffsets { starts: text.char_indices().map(|(b, _)| b).chain([text.len()]).collect() }
    }

    /// [`char_offset`] of `byte`, by binary search.
    pub fn at(&self, byte: usize) -> usize {
        self.starts.partition_point(|&b| b < byte)
    }
}

/// A span inside a given document of a corpus (documents are numbered by their position in the corpus).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DocSpan {
    pub doc: usize,
    pub span: Span,
}

impl DocSpan {
    /// Both spans in the same document and sharing at least one byte.
    pub fn overlaps(&self, other: &DocSpan) -> bool {
        self.doc == other.doc && self.span.overlaps(&other.span)
    }

    /// Both spans in the same document, `other` wholly inside this one.
    pub fn contains(&self, other: &DocSpan) -> bool {
        self.doc == other.doc && self.span.contains(&other.span)
    }
}

/// Sorts and merges overlapping or touching spans, per document: the result is a set of disjoint spans.
pub fn merge(mut spans: Vec<DocSpan>) -> Vec<DocSpan> {
    spans.retain(|s| !s.span.is_empty());
    spans.sort();
    let mut out: Vec<DocSpan> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last_mut() {
            Some(last) if last.doc == s.doc && s.span.start <= last.span.end => {
                last.span.end = last.span.end.max(s.span.end);
            }
            _ => out.push(s),
        }
    }
    out
}

/// The intersection of two merged (disjoint, sorted) span sets.
pub fn intersect(a: &[DocSpan], b: &[DocSpan]) -> Vec<DocSpan> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        if x.doc != y.doc {
            if x.doc < y.doc {
                i += 1
            } else {
                j += 1
            }
            continue;
        }
        let start = x.span.start.max(y.span.start);
        let end = x.span.end.min(y.span.end);
        if start < end {
            out.push(DocSpan { doc: x.doc, span: Span::new(start, end) });
        }
        if x.span.end <= y.span.end { i += 1 } else { j += 1 }
    }
    out
}

/// Characters of `unit` inside the (merged) gold spans.
fn inside(unit: DocSpan, gold: &[DocSpan]) -> usize {
    gold.iter().filter(|g| g.overlaps(&unit)).map(|g| g.span.end.min(unit.span.end) - g.span.start.max(unit.span.start)).sum()
}

/// The gold units of a query among `units`: units at least half inside its gold, and for a gold span
/// shorter than half a unit, the unit that holds most of it.
pub fn gold_units(units: &[DocSpan], gold: &[DocSpan]) -> Vec<usize> {
    let gold = merge(gold.to_vec());
    let mut out: Vec<usize> = (0..units.len()).filter(|&u| 2 * inside(units[u], &gold) >= units[u].span.len()).collect();
    for g in &gold {
        let best = (0..units.len()).max_by_key(|&u| inside(units[u], std::slice::from_ref(g)));
        if let Some(u) = best.filter(|&u| 2 * inside(units[u], std::slice::from_ref(g)) >= g.span.len()) {
            out.push(u);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn char_offsets_count_code_points() {
        let text = "aé€b";
        let c = CharOffsets::new(text);
        assert_eq!([c.at(0), c.at(1), c.at(3), c.at(6), c.at(7)], [0, 1, 2, 3, 4]);
        assert_eq!([0, 1, 3, 6, 7].map(|b| char_offset(text, b)), [0, 1, 2, 3, 4]);
    }

    fn ds(doc: usize, start: usize, end: usize) -> DocSpan {
        DocSpan { doc, span: Span::new(start, end) }
    }

    #[test]
    fn merge_joins_overlapping_and_touching_spans_per_document() {
        let merged = merge(vec![ds(0, 5, 9), ds(0, 0, 5), ds(1, 0, 2), ds(0, 20, 30), ds(0, 8, 12)]);
        assert_eq!(merged, vec![ds(0, 0, 12), ds(0, 20, 30), ds(1, 0, 2)]);
    }

    #[test]
    fn intersect_keeps_only_common_bytes_of_the_same_document() {
        let a = merge(vec![ds(0, 0, 10), ds(0, 20, 30), ds(1, 0, 10)]);
        let b = merge(vec![ds(0, 5, 25), ds(2, 0, 10)]);
        assert_eq!(intersect(&a, &b), vec![ds(0, 5, 10), ds(0, 20, 25)]);
    }

    fn bytes(set: &[DocSpan]) -> std::collections::BTreeSet<(usize, usize)> {
        set.iter().flat_map(|s| (s.span.start..s.span.end).map(move |b| (s.doc, b))).collect()
    }

    proptest! {
        #[test]
        fn intersect_equals_bytewise_intersection(
            a in prop::collection::vec((0usize..3, 0usize..40, 0usize..10), 0..8),
            b in prop::collection::vec((0usize..3, 0usize..40, 0usize..10), 0..8),
        ) {
            let a = merge(a.into_iter().map(|(d, s, l)| ds(d, s, s + l)).collect());
            let b = merge(b.into_iter().map(|(d, s, l)| ds(d, s, s + l)).collect());
            let got = bytes(&intersect(&a, &b));
            let want: std::collections::BTreeSet<_> = bytes(&a).intersection(&bytes(&b)).cloned().collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn gold_units_are_units_mostly_inside_the_gold_or_holding_a_short_gold() {
        let units = [ds(0, 0, 10), ds(0, 10, 20), ds(0, 20, 30), ds(0, 30, 40)];
        // Gold 8..24: unit 1 wholly inside, unit 0 only 2 of 10, unit 2 4 of 10.
        assert_eq!(gold_units(&units, &[ds(0, 8, 24)]), vec![1]);
        // A short gold (3 characters) inside unit 3.
        assert_eq!(gold_units(&units, &[ds(0, 33, 36)]), vec![3]);
        // Overlapping gold spans are merged before counting: 15..25 twice is unit 1's half and unit 2's half.
        assert_eq!(gold_units(&units, &[ds(0, 15, 25), ds(0, 15, 25)]), vec![1, 2]);
        // Gold in another document gives nothing.
        assert!(gold_units(&units, &[DocSpan { doc: 1, span: Span::new(0, 40) }]).is_empty());
    }
}
