//! Paragraphs and leaf units: the retrieval atoms every method shares.
//!
//! A paragraph is a blank-line separated block of a document's text, cut again at every section
//! boundary. A leaf unit is at most `max_sentences` consecutive sentences of one paragraph (SproutRAG,
//! Section 3.1: leaf chunks of at most two sentences), so no unit crosses a paragraph or a section.

use serde::{Deserialize, Serialize};

use crate::corpus::Document;
use crate::sentences::split_paragraph;
use crate::span::Span;

/// How a document is cut into leaf units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UnitConfig {
    /// At most this many sentences per leaf unit (the reference implementation uses 2).
    pub max_sentences: usize,
}

impl Default for UnitConfig {
    fn default() -> Self {
        UnitConfig { max_sentences: 2 }
    }
}

/// A paragraph and the innermost section that holds it (an index into `Document::sections`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paragraph {
    pub span: Span,
    pub section: Option<usize>,
}

/// A leaf unit: its span, the paragraph it lies in, and the sentences it is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    pub span: Span,
    pub paragraph: usize,
    pub sentences: Vec<Span>,
}

/// The paragraphs and leaf units of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segmented {
    pub paragraphs: Vec<Paragraph>,
    pub units: Vec<Unit>,
}

/// Cuts a document into paragraphs and leaf units of at most `config.max_sentences` sentences.
pub fn segment(doc: &Document, config: &UnitConfig) -> Segmented {
    let n = config.max_sentences.max(1);
    let paragraphs = paragraphs(doc);
    let mut units = Vec::new();
    for (p, para) in paragraphs.iter().enumerate() {
        for group in split_paragraph(&doc.text, para.span).chunks(n) {
            let span = group[0].cover(&group[group.len() - 1]);
            units.push(Unit { span, paragraph: p, sentences: group.to_vec() });
        }
    }
    Segmented { paragraphs, units }
}

/// The paragraphs of a document: blank-line blocks, cut at section boundaries, each with its section.
pub fn paragraphs(doc: &Document) -> Vec<Paragraph> {
    let mut cuts: Vec<usize> = doc.sections.iter().flat_map(|s| [s.start, s.end]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    for block in blank_line_paragraphs(&doc.text) {
        let mut start = block.start;
        for &cut in cuts.iter().filter(|&&c| c > block.start && c < block.end) {
            push_piece(doc, Span::new(start, cut), &mut out);
            start = cut;
        }
        push_piece(doc, Span::new(start, block.end), &mut out);
    }
    out
}

fn push_piece(doc: &Document, span: Span, out: &mut Vec<Paragraph>) {
    let piece = &doc.text[span.start..span.end];
    let lead = piece.len() - piece.trim_start().len();
    let trimmed = piece.trim();
    if trimmed.is_empty() {
        return;
    }
    let span = Span::new(span.start + lead, span.start + lead + trimmed.len());
    // The innermost section is the smallest one that contains the paragraph.
    let section = (0..doc.sections.len())
        .filter(|&i| doc.sections[i].span().contains(&span))
        .min_by_key(|&i| (doc.sections[i].end - doc.sections[i].start, std::cmp::Reverse(doc.sections[i].level)));
    out.push(Paragraph { span, section });
}

/// Blocks of text separated by blank lines (a line holding only whitespace is blank), whitespace trimmed.
pub fn blank_line_paragraphs(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let mut block_start: Option<usize> = None;
    let mut block_end = 0;
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            if let Some(s) = block_start.take() {
                out.push(Span::new(s, block_end));
            }
        } else {
            let lead = line.len() - line.trim_start().len();
            block_start.get_or_insert(line_start + lead);
            block_end = line_start + lead + trimmed.len();
        }
        line_start += line.len();
    }
    if let Some(s) = block_start {
        out.push(Span::new(s, block_end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Section;

    fn doc(text: &str, sections: Vec<Section>) -> Document {
        Document { id: "d".into(), title: String::new(), text: text.into(), sections, split: None }
    }

    fn texts<'a>(doc: &'a Document, spans: impl IntoIterator<Item = Span>) -> Vec<&'a str> {
        spans.into_iter().map(|s| &doc.text[s.start..s.end]).collect()
    }

    #[test]
    fn units_hold_at_most_n_sentences_and_never_cross_a_paragraph() {
        let d = doc("A one. B two. C three.\n\nD four. E five.\n \nF six.", vec![]);
        let seg = segment(&d, &UnitConfig { max_sentences: 2 });
        assert_eq!(
            texts(&d, seg.units.iter().map(|u| u.span)),
            vec!["A one. B two.", "C three.", "D four. E five.", "F six."]
        );
        assert_eq!(seg.units.iter().map(|u| u.paragraph).collect::<Vec<_>>(), vec![0, 0, 1, 2]);
        let singles = segment(&d, &UnitConfig { max_sentences: 1 });
        assert_eq!(singles.units.len(), 6);
    }

    #[test]
    fn section_boundaries_cut_paragraphs_and_name_the_innermost_section() {
        let text = "Intro text. More.\nMethods begin. Here.";
        let cut = text.find("Methods").unwrap();
        let sections = vec![
            Section { title: "Intro".into(), start: 0, end: cut, level: 1 },
            Section { title: "Methods".into(), start: cut, end: text.len(), level: 1 },
            Section { title: "Methods ::: Data".into(), start: cut, end: text.len(), level: 2 },
        ];
        let d = doc(text, sections);
        let paras = paragraphs(&d);
        assert_eq!(texts(&d, paras.iter().map(|p| p.span)), vec!["Intro text. More.", "Methods begin. Here."]);
        assert_eq!(paras.iter().map(|p| p.section).collect::<Vec<_>>(), vec![Some(0), Some(2)]);
    }
}
