//! SmartChunk's multi-level chunk hierarchy H(D) (Section 4.1, "Multi-level Chunking"; Appendix H): one
//! document at several granularities, each level's chunks made of consecutive chunks of the level below,
//! from the leaf units (level 0) to the whole document (the last level). Two schemes, each with a fixed
//! number of levels so that a level number means the same in every document (the planner predicts them):
//!
//! ```text
//! Structure:  0 unit | 1 paragraph | 2 subsection | 3 section | 4 document
//! Tokens:     0 unit | 1 <= 128    | 2 <= 256     | 3 <= 512  | 4 <= 1024 | 5 document   (sizes: config)
//! ```
//!
//! `Structure` is for corpora whose documents have sections (given or derived from headings): a
//! subsection is the run of paragraphs under one innermost section, a section the run under one top-level
//! section; text outside every section keeps its paragraphs. `Tokens` packs consecutive chunks of the
//! level below while their tokens fit the level's size (a larger child stands alone), for corpora without
//! structure. A chunk whose span equals its single child's repeats it; [`Levels::in_range`] hands each
//! span on once, at its lowest level.

use std::ops::Range;

use arbor_datasets::Span;

/// One chunk of the hierarchy.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelChunk {
    pub level: usize,
    pub span: Span,
    pub tokens: usize,
    /// Its chunks one level down (ids into [`Levels::chunks`]); empty at level 0.
    pub children: Vec<usize>,
    /// Its leaf units (level-0 chunk ids, which are the leaf indices), in order.
    pub leaves: Range<usize>,
}

/// One document's hierarchy: chunks by level, level 0 first.
#[derive(Debug, Clone, PartialEq)]
pub struct Levels {
    pub chunks: Vec<LevelChunk>,
    /// The chunk ids of each level.
    pub by_level: Vec<Range<usize>>,
}

impl Levels {
    /// Level 0 of a document: its leaf units' spans and token counts, in text order.
    fn leaves(leaves: &[(Span, usize)]) -> Self {
        let chunks = leaves
            .iter()
            .enumerate()
            .map(|(i, &(span, tokens))| LevelChunk { level: 0, span, tokens, children: Vec::new(), leaves: i..i + 1 })
            .collect();
        Levels { chunks, by_level: vec![0..leaves.len()] }
    }

    /// The `Tokens` scheme: one level per size in `sizes` (ascending), then the document.
    pub fn by_tokens(leaves: &[(Span, usize)], sizes: &[usize]) -> Self {
        let mut levels = Self::leaves(leaves);
        for &size in sizes {
            let mut used = 0;
            levels.push_level(|levels, c| {
                let t = levels.chunks[c].tokens;
                let new = used == 0 || used + t > size;
                used = if new { t } else { used + t };
                new
            });
        }
        levels.push_level(|_, _| false);
        levels
    }

    /// The `Structure` scheme: `keys[k][i]` is the group of leaf `i` at the k-th level above the leaves
    /// (paragraph, subsection, section); consecutive chunks whose first leaves share a key merge. Then
    /// the document.
    pub fn by_structure(leaves: &[(Span, usize)], keys: &[Vec<usize>]) -> Self {
        let mut levels = Self::leaves(leaves);
        for key in keys {
            let mut last = None;
            levels.push_level(|levels, c| {
                let k = key[levels.chunks[c].leaves.start];
                let new = last != Some(k);
                last = Some(k);
                new
            });
        }
        levels.push_level(|_, _| false);
        levels
    }

    /// Adds a level over the top one: a new chunk starts at each of its chunks for which `starts_new`
    /// says so (and at the first).
    fn push_level(&mut self, mut starts_new: impl FnMut(&Self, usize) -> bool) {
        let below = self.by_level.last().expect("level 0").clone();
        let level = self.by_level.len();
        let first = self.chunks.len();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for c in below {
            if starts_new(self, c) || groups.is_empty() {
                groups.push(Vec::new());
            }
            groups.last_mut().expect("pushed").push(c);
        }
        for children in groups {
            let (a, b) = (&self.chunks[children[0]], &self.chunks[*children.last().expect("not empty")]);
            let (span, leaves) = (Span::new(a.span.start, b.span.end), a.leaves.start..b.leaves.end);
            let tokens = children.iter().map(|&c| self.chunks[c].tokens).sum();
            self.chunks.push(LevelChunk { level, span, tokens, children, leaves });
        }
        self.by_level.push(first..self.chunks.len());
    }

    pub fn levels(&self) -> usize {
        self.by_level.len()
    }

    /// The chunks of levels `lo..=hi` (clamped to the document's levels), each span once, at its lowest
    /// level: the candidates of a plan `(lo, hi)`.
    pub fn in_range(&self, lo: usize, hi: usize) -> Vec<usize> {
        let hi = hi.min(self.levels() - 1);
        let mut out: Vec<usize> = Vec::new();
        for level in lo..=hi {
            for c in self.by_level[level].clone() {
                let repeats = level > lo && self.chunks[c].children.len() == 1;
                if !repeats {
                    out.push(c);
                }
            }
        }
        out
    }
}

/// The `Structure` scheme's keys of each leaf (paragraph, subsection, section) from the leaves' spans,
/// their paragraphs, and the document's section spans (nested by containment): a leaf's subsection is
/// the innermost section holding its start, its section the outermost; a leaf outside every section is
/// keyed by its paragraph at every level.
pub fn structure_keys(leaves: &[(Span, usize)], sections: &[Span]) -> Vec<Vec<usize>> {
    let outside = sections.len();
    let mut keys: Vec<Vec<usize>> = (0..3).map(|_| Vec::with_capacity(leaves.len())).collect();
    for &(span, paragraph) in leaves {
        let holding = || sections.iter().enumerate().filter(|(_, s)| s.start <= span.start && span.start < s.end);
        let innermost = holding().min_by_key(|(_, s)| s.end - s.start).map(|(i, _)| i);
        let outermost = holding().max_by_key(|(_, s)| s.end - s.start).map(|(i, _)| i);
        keys[0].push(paragraph);
        keys[1].push(innermost.unwrap_or(outside + paragraph));
        keys[2].push(outermost.unwrap_or(outside + paragraph));
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five leaves of 10 bytes each with these token counts.
    fn leaves(tokens: &[usize]) -> Vec<(Span, usize)> {
        tokens.iter().enumerate().map(|(i, &t)| (Span::new(i * 10, i * 10 + 10), t)).collect()
    }

    #[test]
    fn token_levels_pack_consecutive_chunks_within_each_size() {
        let h = Levels::by_tokens(&leaves(&[60, 60, 100, 300, 20]), &[128, 256]);
        assert_eq!(h.levels(), 4);
        let spans = |level: usize| h.by_level[level].clone().map(|c| (h.chunks[c].leaves.clone(), h.chunks[c].tokens)).collect::<Vec<_>>();
        // <= 128: [60 60] [100] [300, alone] [20].
        assert_eq!(spans(1), vec![(0..2, 120), (2..3, 100), (3..4, 300), (4..5, 20)]);
        // <= 256: [120 100] [300] [20].
        assert_eq!(spans(2), vec![(0..3, 220), (3..4, 300), (4..5, 20)]);
        assert_eq!(spans(3), vec![(0..5, 540)]);
        let doc = &h.chunks[h.by_level[3].start];
        assert_eq!((doc.level, doc.span, doc.children.len()), (3, Span::new(0, 50), 3));
    }

    #[test]
    fn structure_levels_follow_the_keys_and_every_chunk_covers_its_children() {
        // Paragraphs {0,1} {2} {3,4}; leaves 0-2 in section A (subsections a1 = {0,1}, a2 = {2}), 3-4 in B.
        let keys = vec![vec![0, 0, 1, 2, 2], vec![10, 10, 11, 12, 12], vec![20, 20, 20, 21, 21]];
        let h = Levels::by_structure(&leaves(&[5; 5]), &keys);
        let ranges = |level: usize| h.by_level[level].clone().map(|c| h.chunks[c].leaves.clone()).collect::<Vec<_>>();
        assert_eq!(ranges(1), vec![0..2, 2..3, 3..5]);
        assert_eq!(ranges(2), vec![0..2, 2..3, 3..5]);
        assert_eq!(ranges(3), vec![0..3, 3..5]);
        assert_eq!(ranges(4), vec![0..5]);
        for c in &h.chunks {
            if let (Some(&a), Some(&b)) = (c.children.first(), c.children.last()) {
                assert_eq!((h.chunks[a].span.start, h.chunks[b].span.end), (c.span.start, c.span.end));
                assert!(c.children.iter().all(|&k| h.chunks[k].level + 1 == c.level));
            }
        }
        // Levels 1-3: subsections repeat the paragraphs (each has one child) and are handed on once.
        let got: Vec<_> = h.in_range(1, 3).into_iter().map(|c| (h.chunks[c].level, h.chunks[c].leaves.clone())).collect();
        assert_eq!(got, vec![(1, 0..2), (1, 2..3), (1, 3..5), (3, 0..3)]);
        assert_eq!(h.in_range(4, 9).len(), 1, "a range past the top is clamped to it");
    }

    #[test]
    fn keys_from_nested_sections() {
        // Section 0 = [0, 30) holds section 1 = [0, 20); leaf 4 ([40, 50)) lies outside both.
        let leaves: Vec<(Span, usize)> = leaves(&[1; 5]).into_iter().zip([0, 0, 1, 2, 3]).map(|((s, _), p)| (s, p)).collect();
        let keys = structure_keys(&leaves, &[Span::new(0, 30), Span::new(0, 20)]);
        assert_eq!(keys[0], vec![0, 0, 1, 2, 3]);
        assert_eq!(keys[1], vec![1, 1, 0, 2 + 2, 2 + 3]);
        assert_eq!(keys[2], vec![0, 0, 0, 2 + 2, 2 + 3]);
    }
}
