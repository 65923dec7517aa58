//! Sections derived from heading lines, for documents that come without `sections` (Forge's four-level hierarchical index, level L1:
//! "documents are split at heading boundaries"). A heading is a line of at most [`MAX_WORDS`] words that is
//! one of
//!
//! ```text
//! # Title / ## Title ...            Markdown ATX heading            level = number of '#'
//! 1. Title / 2.3 Title / 4.1.2 ...  a numbered heading               level = number of numbers
//! ARTICLE IV / Article 4 ...        an article heading               level 1
//! Section 5 / SECTION 5.1 ...       a section heading                level 2
//! Item 1A. Risk Factors ...         an SEC filing item               level 1
//! ```
//!
//! where a numbered heading starts its text with a capital letter and does not end like a sentence
//! (a numbered list item that is a sentence is not a heading). A section runs from its heading to the
//! next heading of the same or a higher level (a lower number), or to the end of the document.

use crate::corpus::Section;

/// Lines longer than this are text, not headings.
pub const MAX_WORDS: usize = 12;

/// The level of a heading line, or `None` for a line of text.
pub fn heading_level(line: &str) -> Option<usize> {
    let line = line.trim();
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() < 2 || words.len() > MAX_WORDS {
        return None;
    }
    let hashes = words[0].chars().take_while(|&c| c == '#').count();
    if hashes > 0 && hashes == words[0].len() && hashes <= 6 {
        return Some(hashes);
    }
    let marker = words[0].trim_end_matches('.');
    let numbered = !marker.is_empty() && marker.split('.').all(|p| !p.is_empty() && p.len() <= 3 && p.chars().all(|c| c.is_ascii_digit()));
    let sentence_end = line.ends_with(['.', ';', ',', ':']) && !line.ends_with("..");
    if numbered && words[1].starts_with(|c: char| c.is_uppercase()) && !sentence_end {
        return Some(marker.split('.').count());
    }
    let roman_or_number = |w: &str| {
        let w = w.trim_end_matches(['.', ':']);
        !w.is_empty() && (w.chars().all(|c| c.is_ascii_digit() || c == '.') || w.chars().all(|c| "IVXLC".contains(c)))
    };
    match words[0] {
        "ARTICLE" | "Article" if roman_or_number(words[1]) => Some(1),
        "SECTION" | "Section" if roman_or_number(words[1]) && !sentence_end => Some(2),
        "ITEM" | "Item" if item_number(words[1]) && !sentence_end => Some(1),
        _ => None,
    }
}

/// An SEC item number: digits, an optional letter, an optional period ("1A.", "7").
fn item_number(w: &str) -> bool {
    let w = w.trim_end_matches('.');
    let digits = w.trim_end_matches(|c: char| c.is_ascii_uppercase());
    !digits.is_empty() && digits.len() <= 2 && digits.chars().all(|c| c.is_ascii_digit()) && w.len() - digits.len() <= 1
}

/// The sections of `text` given by its heading lines (see the module doc).
pub fn derive_sections(text: &str) -> Vec<Section> {
    let mut headings: Vec<(usize, usize, &str)> = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if let Some(level) = heading_level(line) {
            headings.push((at, level, line.trim()));
        }
        at += line.len();
    }
    let end = text.trim_end().len();
    headings
        .iter()
        .enumerate()
        .map(|(i, &(start, level, title))| {
            let next = headings[i + 1..].iter().find(|h| h.1 <= level).map_or(end, |h| h.0);
            Section { title: title.trim_start_matches('#').trim().to_owned(), start, end: text[..next].trim_end().len().max(start), level }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_lines_and_their_levels() {
        assert_eq!(heading_level("# Introduction"), Some(1));
        assert_eq!(heading_level("### Results and discussion"), Some(3));
        assert_eq!(heading_level("1. Definitions"), Some(1));
        assert_eq!(heading_level("2.3 Term of the Agreement"), Some(2));
        assert_eq!(heading_level("ARTICLE IV"), Some(1));
        assert_eq!(heading_level("Introduction"), None, "one word is too little to tell");
        assert_eq!(heading_level("ARTICLE IV CONFIDENTIALITY"), Some(1));
        assert_eq!(heading_level("Section 5.1 Payment"), Some(2));
        assert_eq!(heading_level("Item 1A. Risk Factors"), Some(1));
        assert_eq!(heading_level("Item 7. Management's Discussion and Analysis"), Some(1));
        assert_eq!(heading_level("Item prices rose in the quarter"), None);
        assert_eq!(heading_level("1. The Recipient shall keep the information secret."), None, "a numbered sentence");
        assert_eq!(heading_level("2019 was a good year for the company overall"), None, "a year is not a heading number");
        assert_eq!(heading_level("#hashtag text"), None);
        assert_eq!(heading_level("The parties agree as follows"), None);
    }

    #[test]
    fn sections_run_to_the_next_heading_of_the_same_or_higher_level() {
        let text = "Preamble.\n\n1. Definitions\n\nWords.\n\n1.1 Scope\n\nMore.\n\n2. Term\n\nEnd.\n";
        let got = derive_sections(text);
        let spans: Vec<(&str, &str, usize)> = got.iter().map(|s| (s.title.as_str(), &text[s.start..s.end], s.level)).collect();
        assert_eq!(
            spans,
            vec![
                ("1. Definitions", "1. Definitions\n\nWords.\n\n1.1 Scope\n\nMore.", 1),
                ("1.1 Scope", "1.1 Scope\n\nMore.", 2),
                ("2. Term", "2. Term\n\nEnd.", 1),
            ]
        );
        assert!(derive_sections("No headings here.\n\nNone at all.").is_empty());
    }
}
