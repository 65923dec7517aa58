//! A rule-based English sentence splitter that returns byte spans.
//!
//! A sentence ends at a run of terminators (`.`, `!`, `?`, `…`), followed by closing quotes and brackets,
//! attached citation marks (`[citation needed]`, `[3]`, `:245`), then whitespace and a word that can open
//! a sentence (an upper-case letter, a digit, an opening quote or bracket). A single `.` does not end a
//! sentence after a known abbreviation (`Dr.`, `e.g.`, `St.`), a single-letter initial (`J. K. Rowling`)
//! or a dotted acronym followed by a capitalised word (`the U.S. Army`). Decimals (`3.7`) never split
//! since no whitespace follows the dot. Paragraphs (blank-line separated) always end a sentence.
//!
//! No maintained crate splits English with byte spans and these rules (punkt ports need trained
//! parameters we cannot ship); `examples/splitter_agreement.rs` measures how often our boundaries
//! agree with a corpus' gold sentence spans.

use crate::span::Span;

/// Lower-cased abbreviations (without their final dot) after which a `.` does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "gen", "col", "lt", "sgt", "capt", "cmdr", "adm", "gov", "sen", "rep", "rev",
    "hon", "pres", "vs", "v", "e.g", "i.e", "cf", "al", "fig", "figs", "no", "nos", "vol", "vols", "pp", "p", "ed", "eds", "approx", "ca", "c",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "est", "op", "ch", "sec", "art", "eq", "eqs", "ref", "refs",
];

/// Splits `text` into sentences, paragraph by paragraph, as byte spans into `text` (whitespace trimmed).
pub fn split_sentences(text: &str) -> Vec<Span> {
    blank_line_paragraphs(text).into_iter().flat_map(|p| split_paragraph(text, p)).collect()
}

/// Splits one paragraph, `text[para]`, into sentences as byte spans into `text`.
pub fn split_paragraph(text: &str, para: Span) -> Vec<Span> {
    let mut out = Vec::new();
    let base = para.start;
    let para = &text[para.start..para.end];
    let mut start = 0;
    let mut i = 0;
    while i < para.len() {
        let c = para[i..].chars().next().expect("i is on a char boundary");
        if !is_terminator(c) {
            i += c.len_utf8();
            continue;
        }
        let term_start = i;
        // The run of terminators, then closing marks and attached citations.
        while let Some(c) = para[i..].chars().next().filter(|&c| is_terminator(c)) {
            i += c.len_utf8();
        }
        let single_dot = &para[term_start..i] == ".";
        i = skip_closers(para, i);
        let end = i;
        // Whitespace must follow (or the paragraph ends).
        let ws_end = i + para[i..].len() - para[i..].trim_start().len();
        if ws_end == i && i < para.len() {
            continue;
        }
        let next = para[ws_end..].chars().next();
        let boundary = match next {
            None => true,
            Some(n) => opens_sentence(n) && !(single_dot && end == term_start + 1 && is_abbreviation(para, term_start, &para[ws_end..])),
        };
        if boundary {
            push_trimmed(para, base, start, end, &mut out);
            start = ws_end;
        }
        i = ws_end.max(i);
    }
    push_trimmed(para, base, start, para.len(), &mut out);
    out
}

fn push_trimmed(para: &str, base: usize, start: usize, end: usize, out: &mut Vec<Span>) {
    let piece = &para[start..end];
    let lead = piece.len() - piece.trim_start().len();
    let trimmed = piece.trim();
    if !trimmed.is_empty() {
        let s = base + start + lead;
        out.push(Span::new(s, s + trimmed.len()));
    }
}

fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…')
}

fn is_closer(c: char) -> bool {
    matches!(c, '"' | '\'' | '”' | '’' | ')' | ']' | '}' | '»')
}

fn opens_sentence(c: char) -> bool {
    c.is_uppercase() || c.is_ascii_digit() || matches!(c, '"' | '\'' | '“' | '‘' | '(' | '[' | '«' | '¿' | '¡')
}

/// Skips closing quotes and brackets, bracketed citations (`[1]`, `[citation needed]`) and page marks (`:33`).
fn skip_closers(para: &str, mut i: usize) -> usize {
    loop {
        let rest = &para[i..];
        let Some(c) = rest.chars().next() else { return i };
        if is_closer(c) {
            i += c.len_utf8();
        } else if c == '[' {
            match rest.find(']') {
                Some(close) if close < 60 && !rest[..close].contains('\n') => i += close + 1,
                _ => return i,
            }
        } else if c == ':' && rest[1..].starts_with(|d: char| d.is_ascii_digit()) {
            let digits = rest[1..].find(|d: char| !d.is_ascii_digit() && d != '–' && d != '-').unwrap_or(rest.len() - 1);
            i += 1 + digits;
        } else {
            return i;
        }
    }
}

/// Whether the `.` at `dot` closes an abbreviation rather than a sentence; `next` is the text after it.
fn is_abbreviation(para: &str, dot: usize, next: &str) -> bool {
    let word_start = para[..dot]
        .rfind(|c: char| c.is_whitespace() || matches!(c, '(' | '"' | '“' | '\'' | '‘' | '[' | '—' | '/'))
        .map(|p| p + para[p..].chars().next().map_or(1, char::len_utf8))
        .unwrap_or(0);
    let word = &para[word_start..dot];
    if word.is_empty() {
        return false;
    }
    let lower = word.to_lowercase();
    if ABBREVIATIONS.contains(&lower.as_str()) {
        return true;
    }
    let mut chars = word.chars();
    let first = chars.next().expect("word is not empty");
    let initial = first.is_uppercase() && chars.next().is_none();
    // A dotted acronym of letters: "U.S.", "a.m.", "Ph.D".
    let acronym = word.contains('.') && word.split('.').all(|p| !p.is_empty() && p.chars().count() <= 2 && p.chars().all(char::is_alphabetic));
    // An initial ("J. K. Rowling") or an acronym ("the U.S. Army") followed by a capitalised word, unless
    // that word usually opens a sentence ("... in the U.S. The war").
    if initial || acronym {
        let next_word: String = next.chars().take_while(|c| c.is_alphabetic()).collect();
        return !SENTENCE_OPENERS.contains(&next_word.as_str());
    }
    false
}

/// Words that usually open a sentence; after a dotted acronym they signal a real boundary.
const SENTENCE_OPENERS: &[&str] = &[
    "The",
    "A",
    "An",
    "In",
    "It",
    "This",
    "That",
    "These",
    "Those",
    "He",
    "She",
    "They",
    "We",
    "I",
    "His",
    "Her",
    "Their",
    "Its",
    "However",
    "After",
    "Before",
    "During",
    "When",
    "While",
    "As",
    "At",
    "On",
    "By",
    "For",
    "From",
    "There",
    "Since",
    "Although",
    "But",
    "And",
    "Some",
    "Many",
    "Most",
    "Other",
    "Also",
    "Following",
    "According",
    "Thus",
    "Therefore",
    "Then",
    "If",
    "To",
    "With",
    "Both",
    "Each",
    "Such",
    "One",
    "Two",
    "Today",
    "Because",
];

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

    fn sentences(text: &str) -> Vec<&str> {
        split_sentences(text).iter().map(|s| &text[s.start..s.end]).collect()
    }

    #[test]
    fn splits_on_terminators_followed_by_a_capital() {
        assert_eq!(sentences("One two. Three four! Five? Six"), vec!["One two.", "Three four!", "Five?", "Six"]);
    }

    #[test]
    fn keeps_abbreviations_initials_and_decimals_inside_a_sentence() {
        let text = "Dr. Smith paid 3.7 million, e.g. for J. K. Rowling's books. Next one.";
        assert_eq!(sentences(text), vec!["Dr. Smith paid 3.7 million, e.g. for J. K. Rowling's books.", "Next one."]);
    }

    #[test]
    fn dotted_acronyms_split_only_before_a_sentence_opener() {
        assert_eq!(sentences("He joined the U.S. Army in 1940."), vec!["He joined the U.S. Army in 1940."]);
        assert_eq!(sentences("He moved to the U.S. The war began."), vec!["He moved to the U.S.", "The war began."]);
    }

    #[test]
    fn quotes_brackets_and_citations_stay_with_their_sentence() {
        let text = "He said \"stop.\" Then left (quietly.) [Note] it.[citation needed] Later, 1873.:33 Done.";
        assert_eq!(sentences(text), vec!["He said \"stop.\"", "Then left (quietly.)", "[Note] it.[citation needed]", "Later, 1873.:33", "Done."]);
    }

    #[test]
    fn lower_case_after_a_dot_does_not_split_and_ellipses_inside_stay() {
        assert_eq!(sentences("a random ... probability sample. ok then"), vec!["a random ... probability sample. ok then"]);
    }

    #[test]
    fn paragraphs_always_split_and_spans_are_byte_offsets_in_unicode_text() {
        let text = "Café au lait\n\nÜber alles. Ende.";
        let spans = split_sentences(text);
        assert_eq!(sentences(text), vec!["Café au lait", "Über alles.", "Ende."]);
        assert_eq!(spans[1].start, "Café au lait\n\n".len());
    }
}
