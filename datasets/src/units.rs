//! Paragraphs and leaf units: the retrieval atoms every method shares.
//!
//! A paragraph is a blank-line separated block of a document's text, cut again at every section
//! boundary. A leaf unit is at most `max_sentences` consecutive sentences of one paragraph (SproutRAG,
//! Section 3.1: leaf chunks of at most two sentences), so no unit crosses a paragraph or a section.
//!
//! With a token limit (`max_tokens`, in the encoder's tokens: the encoder must read a unit whole),
//! sentences are grouped greedily while the group fits, and a sentence longer than the limit is cut:
//!
//! ```text
//! for each sentence s of a paragraph:
//!     if tokens(s) > max_tokens:   cut s at line breaks into runs of whole lines that fit; a line that
//!                                  alone does not fit is cut at whitespace into runs of words that fit;
//!                                  each piece is a unit (a word longer than max_tokens is an error)
//!     else: add s to the current unit, first starting a new unit when it already holds
//!           max_sentences sentences or tokens(unit + s) > max_tokens
//! ```
//!
//! Without a limit this is the plain grouping of every `max_sentences` consecutive sentences.
//!
//! A piece cut out of a long sentence (a table's rows, say) loses the lines that say what it is. With
//! `context: Some(c)` every piece is read after a header of at most `c` tokens, while its span stays the
//! piece alone: the line before the sentence when it has words (not a page number): its paragraph's last
//! line before it (a filing page's company name, "ADOBE INC.", which ends a sentence of its own; a line
//! that introduces a table), or the last line of the paragraph before when the sentence opens its
//! paragraph; and, for every piece after the first, the sentence's lines before its
//! first data row (a line ending in a figure that is not a year): a table's page header, title, unit line
//! and column row as `pdftotext -raw` lays out a filing's statement, whole lines while they fit. The pieces are then cut to `max_tokens` less their header's tokens, so
//! the encoder still reads header and piece whole (contextual headers, as dsRAG's AutoContext does for
//! chunks, here from the document's own lines).
//!
//! A cut sentence is a *table* when at least three of its lines, and at least a third of them, are data
//! rows. By default (`context_on: Tables`, `context: Some(64)`) only a table's pieces are read after a
//! header: a cut prose sentence (a long contract clause) keeps its plain pieces, so a corpus without
//! tables is cut exactly as without `context`. `context_on: CutSentences` gives every cut sentence's pieces
//! a header. [`Segmented::tables`] lists the tables, what `retrieval.hand_on: Tables` hands on whole.

use serde::{Deserialize, Serialize};

use crate::corpus::Document;
use crate::sentences::{blank_line_paragraphs, split_paragraph};
use crate::span::Span;
use crate::tokens::TokenStarts;

/// How a document is cut into leaf units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UnitConfig {
    /// At most this many sentences per leaf unit (the reference implementation uses 2).
    pub max_sentences: usize,
    /// At most this many tokens per leaf unit, special tokens not counted. In an experiment, `None` means
    /// what the encoder reads whole (its max_seq_length less `[CLS]` and `[SEP]`); to [`segment`], no limit.
    pub max_tokens: Option<usize>,
    /// The header of at most this many tokens the pieces of a cut sentence are read after (`None`: none).
    pub context: Option<usize>,
    /// Which cut sentences' pieces read that header: tables only (the default) or every one. Left out of
    /// the serialised rule when it is the default, so a rule without a header serialises (and keys its
    /// artefacts, and matches an `arbor index` built before it) as it did before the field.
    #[serde(skip_serializing_if = "ContextOn::is_tables")]
    pub context_on: ContextOn,
}

/// The cut sentences whose pieces are read after a header (see [`UnitConfig::context_on`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ContextOn {
    /// Cut sentences that are tables (see the module's doc); cut prose keeps plain pieces.
    #[default]
    Tables,
    /// Every cut sentence.
    CutSentences,
}

impl ContextOn {
    fn is_tables(&self) -> bool {
        *self == ContextOn::Tables
    }
}

/// The default header budget (see [`UnitConfig::context`]): a filing's page header, title, unit line and
/// column row fit (a budget of 128 gave the same figures on financebench-dev at stop 57, RESULTS.md).
pub const DEFAULT_CONTEXT: usize = 64;

impl Default for UnitConfig {
    fn default() -> Self {
        UnitConfig { max_sentences: 2, max_tokens: None, context: Some(DEFAULT_CONTEXT), context_on: ContextOn::Tables }
    }
}

/// A unit rule that cannot be met: one word has more tokens than `max_tokens`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "document {doc:?}: the word at byte {offset} ({word:?}) is {tokens} tokens, more than units.max_tokens = {max_tokens}; \
     raise units.max_tokens"
)]
pub struct UnitError {
    pub doc: String,
    pub offset: usize,
    pub word: String,
    pub tokens: usize,
    pub max_tokens: usize,
}

/// A paragraph and the innermost section that holds it (an index into `Document::sections`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paragraph {
    pub span: Span,
    pub section: Option<usize>,
}

/// A leaf unit: its span, the paragraph it lies in, the sentences it is made of, and the spans of its
/// header (empty but for pieces of a cut sentence under `context`), read before it, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    pub span: Span,
    pub paragraph: usize,
    pub sentences: Vec<Span>,
    pub header: Vec<Span>,
}

/// The paragraphs and leaf units of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segmented {
    pub paragraphs: Vec<Paragraph>,
    pub units: Vec<Unit>,
    /// Sentences longer than `max_tokens`, each cut into several units (in document order).
    pub cut: Vec<Span>,
    /// The cut sentences that are tables (see the module's doc), in document order.
    pub tables: Vec<Span>,
}

/// Cuts a document into paragraphs and leaf units of at most `config.max_sentences` sentences and
/// `config.max_tokens` tokens (counted with `tokens`, the document's token starts).
pub fn segment(doc: &Document, config: &UnitConfig, tokens: &TokenStarts) -> Result<Segmented, UnitError> {
    let n = config.max_sentences.max(1);
    let fits = |span: Span| config.max_tokens.is_none_or(|max| tokens.count(span) <= max);
    let paragraphs = paragraphs(doc);
    let mut units = Vec::new();
    let mut cut = Vec::new();
    let mut tables = Vec::new();
    for (p, para) in paragraphs.iter().enumerate() {
        let mut group: Vec<Span> = Vec::new();
        let flush = |group: &mut Vec<Span>, units: &mut Vec<Unit>| {
            if let (Some(first), Some(last)) = (group.first(), group.last()) {
                units.push(Unit { span: first.cover(last), paragraph: p, sentences: std::mem::take(group), header: Vec::new() });
            }
        };
        for sentence in split_paragraph(&doc.text, para.span) {
            if !fits(sentence) {
                flush(&mut group, &mut units);
                let max = config.max_tokens.expect("only a limit makes a sentence too long");
                let table = is_table(&doc.text, sentence);
                let context = config.context.filter(|_| table || config.context_on == ContextOn::CutSentences);
                // The line before says whose table it is or introduces it when it has words (not a page
                // number, say): within the paragraph, else the paragraph before's last.
                let before = if sentence.start > para.span.start {
                    Some(last_line(&doc.text, Span::new(para.span.start, sentence.start)))
                } else {
                    (p > 0).then(|| last_line(&doc.text, paragraphs[p - 1].span))
                };
                let before = before.filter(|l| doc.text[l.start..l.end].chars().any(char::is_alphabetic));
                for (piece, header) in cut_with_headers(doc, sentence, before, context, max, tokens)? {
                    units.push(Unit { span: piece, paragraph: p, sentences: vec![piece], header });
                }
                cut.push(sentence);
                if table {
                    tables.push(sentence);
                }
                continue;
            }
            if group.len() == n || group.first().is_some_and(|first| !fits(first.cover(&sentence))) {
                flush(&mut group, &mut units);
            }
            group.push(sentence);
        }
        flush(&mut group, &mut units);
    }
    Ok(Segmented { paragraphs, units, cut, tables })
}

/// The pieces of an over-long sentence with their headers (see the module's doc): without `context`, the
/// pieces of [`cut`] with none; with it, each piece and its header together at most `max` tokens.
fn cut_with_headers(
    doc: &Document,
    sentence: Span,
    before: Option<Span>,
    context: Option<usize>,
    max: usize,
    tokens: &TokenStarts,
) -> Result<Vec<(Span, Vec<Span>)>, UnitError> {
    let Some(budget) = context.map(|c| c.min(max / 2)) else {
        return Ok(cut(doc, sentence, max, tokens)?.into_iter().map(|p| (p, Vec::new())).collect());
    };
    // The header's lines, in reading order, within `budget` tokens: the line before (at most half of
    // them), then the first line.
    let take = |span: Span, room: usize| trimmed(&doc.text, Span::new(span.start, tokens.prefix_end(span, room)));
    let before = before.map(|b| take(b, budget.div_ceil(2))).filter(|b| !b.is_empty());
    let room = budget - before.map_or(0, |b| tokens.count(b));
    let opening: Vec<Span> = before.into_iter().collect();
    let rest: Vec<Span> = opening.iter().copied().chain(table_head(&doc.text, sentence, room, tokens)).collect();
    let count = |h: &[Span]| h.iter().map(|&s| tokens.count(s)).sum::<usize>();
    // The first piece is cut to what its header leaves, the rest re-cut to what theirs leaves.
    let mut pieces = cut(doc, sentence, max - count(&opening), tokens)?;
    if pieces.len() > 1 {
        let tail = Span::new(pieces[1].start, sentence.end);
        pieces.truncate(1);
        pieces.extend(cut(doc, tail, max - count(&rest), tokens)?);
    }
    Ok(pieces.into_iter().enumerate().map(|(i, p)| (p, if i == 0 { opening.clone() } else { rest.clone() })).collect())
}

/// `span` without its leading and trailing whitespace.
fn trimmed(text: &str, span: Span) -> Span {
    parts(text, span, |_| false).into_iter().next().unwrap_or(Span::new(span.start, span.start))
}

/// The lines that say what a cut sentence is, within `room` tokens: its lines before the first data row
/// (a table's page header, title, unit line and column row; a line ending in a figure that is not a year
/// is a data row), whole while they fit, the first cut to `room` when it alone does not.
fn table_head(text: &str, sentence: Span, room: usize, tokens: &TokenStarts) -> Vec<Span> {
    let mut head = Vec::new();
    let mut used = 0;
    for line in parts(text, sentence, |c| c == '\n') {
        if is_data_row(&text[line.start..line.end]) {
            break;
        }
        let n = tokens.count(line);
        if used + n > room {
            if head.is_empty() {
                head.extend(Some(trimmed(text, Span::new(line.start, tokens.prefix_end(line, room)))).filter(|p| !p.is_empty()));
            }
            break;
        }
        used += n;
        head.push(line);
    }
    head
}

/// Whether a cut sentence is a table: at least three of its lines, and at least a third of them, are data
/// rows.
fn is_table(text: &str, sentence: Span) -> bool {
    let lines = parts(text, sentence, |c| c == '\n');
    let rows = lines.iter().filter(|l| is_data_row(&text[l.start..l.end])).count();
    rows >= 3 && 3 * rows >= lines.len()
}

/// Whether a line is a table's data row: its last word a figure ("1,577", "$ 5,363", "(370)", "12.5%",
/// "—"), neither a year nor a day after a month (a column row, "(Millions) 2018 2017 2016", and a period
/// line, "Years ended December 31", are part of the head), nor a run of more than four digits without a
/// separator, which no table prints as an amount (an identifier: a PubMed id ending a reference, a zip
/// code).
fn is_data_row(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&last, before)) = words.split_last() else { return false };
    if matches!(last, "—" | "–" | "-") {
        return !before.is_empty();
    }
    let figure = last.trim_start_matches(['$', '(']).trim_end_matches([')', '%', '*', ',']);
    let numeric = figure.chars().any(|c| c.is_ascii_digit()) && figure.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '.');
    let year = figure == last && figure.len() == 4 && (figure.starts_with("19") || figure.starts_with("20"));
    let day = figure.len() <= 2 && before.last().is_some_and(|w| is_month(w));
    let identifier = figure.len() > 4 && figure.chars().all(|c| c.is_ascii_digit());
    numeric && !year && !day && !identifier
}

/// A month's name or its abbreviation of at least three letters ("Dec", "Sept.", "December").
fn is_month(word: &str) -> bool {
    const MONTHS: [&str; 12] =
        ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
    let w = word.trim_end_matches(['.', ',']).to_ascii_lowercase();
    w.len() >= 3 && MONTHS.iter().any(|m| m.starts_with(&w))
}

/// The last non-empty line of `text[span]`, whitespace trimmed.
fn last_line(text: &str, span: Span) -> Span {
    parts(text, span, |c| c == '\n').into_iter().last().unwrap_or(Span::new(span.end, span.end))
}

/// Cuts an over-long sentence into pieces of at most `max` tokens: runs of whole lines, and lines that do
/// not fit alone cut into runs of whole words.
fn cut(doc: &Document, sentence: Span, max: usize, tokens: &TokenStarts) -> Result<Vec<Span>, UnitError> {
    let mut pieces = Vec::new();
    let mut lines = Vec::new();
    for line in parts(&doc.text, sentence, |c| c == '\n') {
        if tokens.count(line) <= max {
            lines.push(line);
            continue;
        }
        pieces.extend(pack(std::mem::take(&mut lines), max, tokens));
        let words = parts(&doc.text, line, char::is_whitespace);
        if let Some(&word) = words.iter().find(|&&w| tokens.count(w) > max) {
            let text = &doc.text[word.start..word.end];
            return Err(UnitError {
                doc: doc.id.clone(),
                offset: word.start,
                word: text.chars().take(40).collect(),
                tokens: tokens.count(word),
                max_tokens: max,
            });
        }
        pieces.extend(pack(words, max, tokens));
    }
    pieces.extend(pack(lines, max, tokens));
    Ok(pieces)
}

/// Joins consecutive spans (each fitting alone) greedily into covers of at most `max` tokens.
fn pack(spans: Vec<Span>, max: usize, tokens: &TokenStarts) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut current: Option<Span> = None;
    for s in spans {
        current = match current {
            Some(c) if tokens.count(c.cover(&s)) <= max => Some(c.cover(&s)),
            Some(c) => {
                out.push(c);
                Some(s)
            }
            None => Some(s),
        };
    }
    out.extend(current);
    out
}

/// The non-empty pieces of `text[span]` between separator characters, whitespace trimmed.
fn parts(text: &str, span: Span, separator: impl Fn(char) -> bool) -> Vec<Span> {
    let mut out = Vec::new();
    let mut push = |start: usize, end: usize| {
        let piece = &text[start..end];
        let lead = piece.len() - piece.trim_start().len();
        let trimmed = piece.trim();
        if !trimmed.is_empty() {
            out.push(Span::new(start + lead, start + lead + trimmed.len()));
        }
    };
    let mut start = span.start;
    for (i, c) in text[span.start..span.end].char_indices() {
        if separator(c) {
            push(start, span.start + i);
            start = span.start + i + c.len_utf8();
        }
    }
    push(start, span.end);
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Section;

    fn doc(text: &str, sections: Vec<Section>) -> Document {
        Document { id: "d".into(), title: String::new(), text: text.into(), sections, split: None }
    }

    fn texts(doc: &Document, spans: impl IntoIterator<Item = Span>) -> Vec<&str> {
        spans.into_iter().map(|s| &doc.text[s.start..s.end]).collect()
    }

    /// Segments with one token per word.
    fn seg(d: &Document, config: UnitConfig) -> Segmented {
        segment(d, &config, &TokenStarts::words(&d.text)).unwrap()
    }

    #[test]
    fn a_token_limit_starts_new_units_and_cuts_long_sentences_at_lines_then_words() {
        // Sentence 1: 3 words; sentence 2: a table of 3 lines (2, 2 and 6 words) without a full stop.
        let text = "Revenue rose this year. Item | 2017\nsales | 10\na b c d e f\n\nShort one. Two.";
        let d = doc(text, vec![]);
        let limited = seg(&d, UnitConfig { max_sentences: 2, max_tokens: Some(4), context: None, ..Default::default() });
        assert_eq!(
            texts(&d, limited.units.iter().map(|u| u.span)),
            vec!["Revenue rose this year.", "Item | 2017", "sales | 10", "a b c d", "e f", "Short one. Two."]
        );
        assert_eq!(texts(&d, limited.cut.iter().copied()), vec!["Item | 2017\nsales | 10\na b c d e f"]);
        assert_eq!(limited.units.iter().map(|u| u.paragraph).collect::<Vec<_>>(), vec![0, 0, 0, 0, 0, 1]);
        // Whole lines are kept together while they fit.
        let wider = seg(&d, UnitConfig { max_sentences: 2, max_tokens: Some(7), context: None, ..Default::default() });
        assert_eq!(
            texts(&d, wider.units.iter().map(|u| u.span)),
            vec!["Revenue rose this year.", "Item | 2017\nsales | 10", "a b c d e f", "Short one. Two."]
        );
        // No limit: the plain grouping.
        let plain = seg(&d, UnitConfig { max_sentences: 2, max_tokens: None, context: None, ..Default::default() });
        assert_eq!(plain.units.len(), 2);
        assert!(plain.cut.is_empty());
    }

    #[test]
    fn pieces_of_a_cut_table_are_read_after_its_introduction_and_first_row() {
        let text = "Debt consisted of the following:\n\n($ in millions) 2017 2016\nnotes 600 600\nbonds 84 84\ntotal 1279 1278";
        let d = doc(text, vec![]);
        let s = seg(&d, UnitConfig { max_sentences: 2, max_tokens: Some(12), context: Some(8), ..Default::default() });
        // The table (14 words) is one sentence. The header budget, 8 but at most half of 12, is 6: 3 tokens
        // of the line before, 3 of the first row. The first piece has only the former (9 tokens of rows
        // fit), the second both (6 fit).
        assert_eq!(
            texts(&d, s.units.iter().map(|u| u.span)),
            vec!["Debt consisted of the following:", "($ in millions) 2017 2016\nnotes 600 600", "bonds 84 84\ntotal 1279 1278"]
        );
        let headers: Vec<Vec<&str>> = s.units.iter().map(|u| texts(&d, u.header.iter().copied())).collect();
        assert_eq!(headers, vec![vec![], vec!["Debt consisted of"], vec!["Debt consisted of", "($ in millions)"]]);
        // Without `context` no header, and the pieces are cut to the whole limit.
        let plain = seg(&d, UnitConfig { max_sentences: 2, max_tokens: Some(12), context: None, ..Default::default() });
        assert!(plain.units.iter().all(|u| u.header.is_empty()));
        assert_eq!(texts(&d, plain.units.iter().map(|u| u.span))[1..], ["($ in millions) 2017 2016\nnotes 600 600\nbonds 84 84", "total 1279 1278"]);
    }

    #[test]
    fn pieces_of_a_statement_as_pdftotext_lays_it_out_are_read_after_its_title_and_column_row() {
        // One sentence (no full stop): page header, title, period line and column row, then data rows.
        let text = "Table of Contents\n3M Company\nConsolidated Statement of Cash Flows\nYears ended December 31\n\
                    (Millions) 2018 2017 2016\nNet income $ 5,363 $ 4,869\nDepreciation 1,488 1,544\nInventories (509) (387)\n\
                    Purchases of PP&E (1,577) (1,373)\nOther — net 9 —";
        let d = doc(text, vec![]);
        let s = seg(&d, UnitConfig { max_sentences: 2, max_tokens: Some(36), context: Some(20), ..Default::default() });
        // The head, 18 words, fits the header budget (20, at most half of 36); the first piece holds it and
        // four rows (35 words), the second, the last row, is read after it (18 + 5).
        assert_eq!(s.units.len(), 2);
        let headers: Vec<Vec<&str>> = s.units.iter().map(|u| texts(&d, u.header.iter().copied())).collect();
        assert!(headers[0].is_empty());
        assert_eq!(
            headers[1],
            ["Table of Contents", "3M Company", "Consolidated Statement of Cash Flows", "Years ended December 31", "(Millions) 2018 2017 2016"]
        );
        assert_eq!(texts(&d, [s.units[1].span]), ["Other — net 9 —"]);
        // A smaller budget keeps whole lines from the top while they fit.
        let small = seg(&d, UnitConfig { max_sentences: 2, max_tokens: Some(24), context: Some(10), ..Default::default() });
        let last = small.units.last().unwrap();
        assert_eq!(texts(&d, last.header.iter().copied()), ["Table of Contents", "3M Company", "Consolidated Statement of Cash Flows"]);
    }

    #[test]
    fn every_later_piece_of_a_real_statement_is_read_after_its_title_and_column_row() {
        // Four pages of 3M's 2018 10-K through `pdftotext -raw` (experiments/fixtures/filing-pdftotext-mini).
        let line = include_str!("../../experiments/fixtures/filing-pdftotext-mini/documents.jsonl");
        let d: Document = serde_json::from_str(line.lines().next().unwrap()).unwrap();
        let s = seg(&d, UnitConfig { max_sentences: 2, max_tokens: Some(120), context: Some(64), ..Default::default() });
        let statements = [
            ("Consolidated Statement of Incom e", "(Millions, except per share amounts) 2018 2017 2016"),
            ("Consolidated Balance Shee t", "(Dollars in millions, except per share amount) 2018 2017"),
            ("Consolidated Statement of Cash Flows", "(Millions) 2018 2017 2016"),
        ];
        for (title, columns) in statements {
            let at = d.text.find(title).unwrap();
            let page = d.sections.iter().map(|p| p.span()).find(|p| p.start <= at && at < p.end).unwrap();
            // The statement is one sentence up to its closing line ("The accompanying Notes ... statement."),
            // cut: its pieces after the first (which holds the title).
            let end = at + d.text[at..].find("The accompanying Notes").unwrap();
            let later: Vec<&Unit> = s.units.iter().filter(|u| page.contains(&u.span) && u.span.start > at && u.span.start < end).collect();
            assert!(!later.is_empty(), "{title}: the page is cut");
            for u in later {
                let header = texts(&d, u.header.iter().copied());
                assert!(header.contains(&title) && header.contains(&columns), "{title}: {header:?} {:?}", &d.text[u.span.start..u.span.end]);
                assert!(!header.iter().any(|h| h.chars().all(|c| c.is_ascii_digit())), "no page number in {header:?}");
            }
        }
    }

    #[test]
    fn by_default_only_a_cut_table_is_read_after_a_header_and_listed_as_a_table() {
        // A table of four data rows and a clause of 14 words without a full stop, each one sentence.
        let text = "Debt consisted of the following:\n\n($ in millions) 2017 2016\nnotes 600 600\nbonds 84 84\nloans 5 7\ntotal 1279 1278\n\n\
                    the Receiving Party shall hold and keep in confidence all Confidential Information disclosed to it";
        let d = doc(text, vec![]);
        let rule = UnitConfig { max_tokens: Some(12), context: Some(8), ..Default::default() };
        let s = seg(&d, rule);
        assert_eq!(s.cut.len(), 2);
        assert_eq!(texts(&d, s.tables.iter().copied()), [&text[text.find("($").unwrap()..text.find("\n\nthe").unwrap()]]);
        let clause = text.find("the Receiving").unwrap();
        let (table, prose): (Vec<&Unit>, Vec<&Unit>) = s.units.iter().filter(|u| u.span.start > 40).partition(|u| u.span.start < clause);
        assert!(table.iter().skip(1).all(|u| texts(&d, u.header.iter().copied()) == ["Debt consisted of", "($ in millions)"]));
        assert!(prose.len() > 1 && prose.iter().all(|u| u.header.is_empty()), "cut prose keeps plain pieces");
        // Asked for every cut sentence, the clause's later pieces read its opening too; the tables are the same.
        let every = seg(&d, UnitConfig { context_on: ContextOn::CutSentences, ..rule });
        assert!(every.units.iter().filter(|u| u.span.start > clause).all(|u| !u.header.is_empty()));
        assert_eq!(every.tables, s.tables);
        // Without a header the pieces are the plain ones, and the table is still a table.
        let plain = seg(&d, UnitConfig { context: None, ..rule });
        assert!(plain.units.iter().all(|u| u.header.is_empty()));
        assert_eq!(plain.tables, s.tables);
        // The prose alone is cut exactly as without a header: a corpus without tables does not change.
        let prose_only = doc(&text[clause..], vec![]);
        assert_eq!(seg(&prose_only, rule), seg(&prose_only, UnitConfig { context: None, ..rule }));
    }

    #[test]
    fn a_statement_after_its_company_line_reads_that_line_first() {
        // A page as pdftotext gives it: the company's name ends a sentence of its own, the statement is the
        // next sentence of the same paragraph.
        let text = "See accompanying Notes.\n56\n\nADOBE INC.\nCONSOLIDATED STATEMENTS OF CASH FLOWS\n(In millions)\n\
                    Net income $ 4,756 $ 4,822\nDepreciation 856 788\nStock compensation 1,440 1,069\nOther (37) 48\n\
                    Amortization 331 255\nDeferred taxes (64) 92";
        let d = doc(text, vec![]);
        let s = seg(&d, UnitConfig { max_tokens: Some(24), context: Some(16), ..Default::default() });
        assert_eq!(s.tables.len(), 1);
        let pieces: Vec<&Unit> = s.units.iter().filter(|u| s.tables[0].contains(&u.span)).collect();
        assert!(pieces.len() > 1);
        assert_eq!(texts(&d, pieces[0].header.iter().copied()), ["ADOBE INC."]);
        for u in &pieces[1..] {
            assert_eq!(texts(&d, u.header.iter().copied()), ["ADOBE INC.", "CONSOLIDATED STATEMENTS OF CASH FLOWS", "(In millions)"]);
        }
        // A table opening its paragraph reads the last line of the one before, unless it is a page number.
        let opening = doc(&text[text.find("CONSOLIDATED").unwrap()..], vec![]);
        let after_number = doc(&format!("56\n\n{}", opening.text), vec![]);
        for d in [&opening, &after_number] {
            let s = seg(d, UnitConfig { max_tokens: Some(24), context: Some(16), ..Default::default() });
            let first = s.units.iter().find(|u| s.tables[0].contains(&u.span)).unwrap();
            assert!(first.header.is_empty(), "{:?}", texts(d, first.header.iter().copied()));
        }
    }

    #[test]
    fn a_table_has_three_data_rows_and_a_third_of_its_lines() {
        let table = |t: &str| is_table(t, Span::new(0, t.len()));
        assert!(table("Revenue\n(Millions) 2018 2017\nSales 5,363 4,869\nCosts (1,577) (1,373)\nNet 9 —"));
        // Two rows are a list, not a table; three among ten lines of words are a page with figures in it.
        assert!(!table("(Millions) 2018 2017\nSales 5,363 4,869\nCosts (1,577) (1,373)"));
        assert!(!table(&format!("{}a 1\nb 2\nc 3", "words without figures\n".repeat(7))));
        // A reference list ends its lines in PubMed ids: no data rows.
        assert!(!table(
            "Good MF Doolan DL Immune effector mechanisms Curr Opin Immunol 1999 11 412 419 10448141\n\
             Gray JW Collins C Genome changes Carcinogenesis 2000 21 443 452 10688864\n\
             Pollack JR Perou CM Genome-wide analysis Nat Genet 1999 23 41 46 10471496"
        ));
    }

    #[test]
    fn data_rows_end_in_a_figure_that_is_neither_a_year_nor_a_day() {
        for row in ["Net income $ 5,363", "Inventories (509) (387)", "Other — net 9 —", "Margin 12.5%", "Balance at December 31, 2017 $ 11,622"] {
            assert!(is_data_row(row), "{row}");
        }
        for head in [
            "(Millions) 2018 2017 2016",
            "Years ended December 31",
            "Three Months Ended June 30,",
            "Consolidated Balance Sheets",
            "—",
            "",
            "St. Paul, Minnesota 55144",
            "Science 2002 297 2270 2275 12351791",
        ] {
            assert!(!is_data_row(head), "{head}");
        }
    }

    #[test]
    fn a_word_longer_than_the_limit_is_an_error_that_names_it() {
        let d = doc("Fine words here. Then https://example.org/a-very-long-address ends.", vec![]);
        // One token per 4 bytes: the address is 12 tokens.
        let starts = TokenStarts::new((0..d.text.len() as u32).step_by(4).collect());
        let err = segment(&d, &UnitConfig { max_sentences: 2, max_tokens: Some(5), context: None, ..Default::default() }, &starts).unwrap_err();
        assert_eq!(err.offset, d.text.find("https").unwrap());
        assert!(err.to_string().contains("raise units.max_tokens"), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn units_fit_the_limit_and_cover_every_word_once(
            words in proptest::collection::vec("[a-z]{1,3}[.\n]?", 1..60),
            max_sentences in 1usize..4,
            max_tokens in 2usize..10,
            context in proptest::option::of(0usize..6),
        ) {
            let d = doc(&words.join(" "), vec![]);
            let tokens = TokenStarts::words(&d.text);
            let s = seg(&d, UnitConfig { max_sentences, max_tokens: Some(max_tokens), context, ..Default::default() });
            for u in &s.units {
                let header: usize = u.header.iter().map(|&h| tokens.count(h)).sum();
                proptest::prop_assert!(header + tokens.count(u.span) <= max_tokens);
                proptest::prop_assert!(header <= context.unwrap_or(0));
                proptest::prop_assert!(u.header.iter().all(|h| !h.is_empty() && h.end <= u.span.start), "a header precedes its unit");
            }
            for pair in s.units.windows(2) {
                proptest::prop_assert!(pair[0].span.end <= pair[1].span.start);
            }
            let covered: usize = s.units.iter().map(|u| tokens.count(u.span)).sum();
            proptest::prop_assert_eq!(covered, tokens.count(Span::new(0, d.text.len())));
        }
    }

    #[test]
    fn units_hold_at_most_n_sentences_and_never_cross_a_paragraph() {
        let d = doc("A one. B two. C three.\n\nD four. E five.\n \nF six.", vec![]);
        let pairs = seg(&d, UnitConfig { max_sentences: 2, max_tokens: None, context: None, ..Default::default() });
        assert_eq!(texts(&d, pairs.units.iter().map(|u| u.span)), vec!["A one. B two.", "C three.", "D four. E five.", "F six."]);
        assert_eq!(pairs.units.iter().map(|u| u.paragraph).collect::<Vec<_>>(), vec![0, 0, 1, 2]);
        let singles = seg(&d, UnitConfig { max_sentences: 1, max_tokens: None, context: None, ..Default::default() });
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
