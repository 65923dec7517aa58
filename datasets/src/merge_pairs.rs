//! Gold merge pairs G for SproutRAG's attention-structure loss (Section 4.2): pairs of leaf units that
//! belong together. A pair is two adjacent units (i, i + 1) of the same paragraph, or, with
//! [`MergePairs::SameSection`], of the same innermost section (documents without sections fall back to
//! paragraphs): what the document's layout says. With [`MergePairs::Evidence`] it is two consecutive
//! units that overlap one gold evidence snippet of a training query: what the task says belongs together,
//! without teaching that every neighbour does (adjacency is the proximity bias learned weights should
//! remove). L_attn has no negative term, so pairs straddling a snippet's edge are not used.

use serde::{Deserialize, Serialize};

use crate::span::Span;
use crate::units::Segmented;

/// Which adjacent units count as gold merge pairs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MergePairs {
    /// Adjacent units inside one paragraph.
    #[default]
    SameParagraph,
    /// Adjacent units inside one section (across its paragraphs).
    SameSection,
    /// Consecutive units overlapping the same gold evidence snippet of a training query.
    Evidence,
}

/// The gold merge pairs `(i, i + 1)` of a segmented document, in unit order; `evidence` is the gold
/// snippets in this document of the training queries (read by [`MergePairs::Evidence`] only).
pub fn merge_pairs(seg: &Segmented, rule: MergePairs, evidence: &[Span]) -> Vec<(usize, usize)> {
    let in_one_snippet = |a: &Span, b: &Span| evidence.iter().any(|e| e.overlaps(a) && e.overlaps(b));
    let together = |a: usize, b: usize| {
        let (pa, pb) = (seg.units[a].paragraph, seg.units[b].paragraph);
        match rule {
            MergePairs::SameParagraph => pa == pb,
            MergePairs::SameSection => match (seg.paragraphs[pa].section, seg.paragraphs[pb].section) {
                (Some(sa), Some(sb)) => sa == sb,
                _ => pa == pb,
            },
            MergePairs::Evidence => in_one_snippet(&seg.units[a].span, &seg.units[b].span),
        }
    };
    (1..seg.units.len()).filter(|&i| together(i - 1, i)).map(|i| (i - 1, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{Document, Section};
    use crate::tokens::TokenStarts;
    use crate::units::{UnitConfig, segment};

    #[test]
    fn pairs_follow_paragraphs_or_sections() {
        let text = "Aa. Bb. Cc. Dd.\n\nEe. Ff.\n\nGg. Hh.";
        let cut = text.find("Gg.").unwrap();
        let doc = |sections| Document { id: "d".into(), title: String::new(), text: text.into(), sections, split: None };
        let one = UnitConfig { max_sentences: 1, max_tokens: None, context: None, ..Default::default() };
        // Units: A B C D | E F | G H (indices 0-3, 4-5, 6-7).
        let words = TokenStarts::words(text);
        let plain = segment(&doc(vec![]), &one, &words).unwrap();
        assert_eq!(merge_pairs(&plain, MergePairs::SameParagraph, &[]), vec![(0, 1), (1, 2), (2, 3), (4, 5), (6, 7)]);
        assert_eq!(merge_pairs(&plain, MergePairs::SameSection, &[]), merge_pairs(&plain, MergePairs::SameParagraph, &[]));
        let sections = vec![
            Section { title: "One".into(), start: 0, end: cut, level: 1 },
            Section { title: "Two".into(), start: cut, end: text.len(), level: 1 },
        ];
        let sectioned = segment(&doc(sections), &one, &words).unwrap();
        assert_eq!(merge_pairs(&sectioned, MergePairs::SameSection, &[]), vec![(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (6, 7)]);
        // Evidence: one snippet over B and C, one over D across the paragraph break into E, one inside G.
        let at = |s: &str| text.find(s).unwrap();
        let snippets = [Span::new(at("Bb"), at("Cc") + 2), Span::new(at("Dd") + 1, at("Ee") + 1), Span::new(at("Gg"), at("Gg") + 2)];
        assert_eq!(merge_pairs(&plain, MergePairs::Evidence, &snippets), vec![(1, 2), (3, 4)]);
        assert!(merge_pairs(&plain, MergePairs::Evidence, &[]).is_empty());
    }
}
