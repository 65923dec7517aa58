//! LangChain's `RecursiveCharacterTextSplitter` as LegalBench-RAG's baseline runs it (Pipitone & Alami
//! 2024; legalbenchrag/methods/baseline.py: `chunk_size=500, chunk_overlap=0`, the separators of
//! [`LEGALBENCH_SEPARATORS`], each kept at the start of the piece that follows it, whitespace not
//! stripped), counting characters as Python's `len` does: the chunks partition the text.
//!
//! The text is split at the first separator it holds (the empty one: every character); pieces shorter than
//! the size are packed greedily into chunks of at most `size` characters, and a piece as long or longer is
//! split again with the separators after that one.

use crate::span::Span;

/// The baseline's separators, coarsest first.
pub const LEGALBENCH_SEPARATORS: [&str; 10] = ["\n\n", "\n", "!", "?", ".", ":", ";", ",", " ", ""];

/// The chunks of `text` (byte spans in order, covering it) of at most `size` characters where the
/// separators allow it.
pub fn recursive_split(text: &str, size: usize, separators: &[&str]) -> Vec<Span> {
    let mut out = Vec::new();
    split(text, Span::new(0, text.len()), size.max(1), separators, &mut out);
    out
}

fn characters(text: &str, span: Span) -> usize {
    text[span.start..span.end].chars().count()
}

/// `piece` cut before every occurrence of `separator` (each piece after the first starts with it), empty
/// pieces left out; the empty separator cuts between characters.
fn cut(text: &str, piece: Span, separator: &str) -> Vec<Span> {
    let body = &text[piece.start..piece.end];
    let starts: Vec<usize> = if separator.is_empty() {
        body.char_indices().map(|(i, _)| i).skip(1).collect()
    } else {
        body.match_indices(separator).map(|(i, _)| i).filter(|&i| i > 0).collect()
    };
    let bounds: Vec<usize> = std::iter::once(0).chain(starts).chain(std::iter::once(body.len())).collect();
    bounds.windows(2).filter(|w| w[0] < w[1]).map(|w| Span::new(piece.start + w[0], piece.start + w[1])).collect()
}

fn split(text: &str, piece: Span, size: usize, separators: &[&str], out: &mut Vec<Span>) {
    let body = &text[piece.start..piece.end];
    let (separator, finer) = match separators.iter().position(|s| s.is_empty() || body.contains(s)) {
        Some(i) => (separators[i], if separators[i].is_empty() { &[][..] } else { &separators[i + 1..] }),
        None => (separators.last().copied().unwrap_or(""), &[][..]),
    };
    let mut small: Vec<Span> = Vec::new();
    for s in cut(text, piece, separator) {
        if characters(text, s) < size {
            small.push(s);
            continue;
        }
        pack(text, &small, size, out);
        small.clear();
        if finer.is_empty() {
            out.push(s);
        } else {
            split(text, s, size, finer, out);
        }
    }
    pack(text, &small, size, out);
}

/// Consecutive `pieces` packed greedily into chunks of at most `size` characters (no overlap).
fn pack(text: &str, pieces: &[Span], size: usize, out: &mut Vec<Span>) {
    let (mut current, mut total): (Option<Span>, usize) = (None, 0);
    for &p in pieces {
        let n = characters(text, p);
        if let Some(c) = current
            && total + n > size
        {
            out.push(c);
            current = None;
            total = 0;
        }
        current = Some(current.map_or(p, |c| Span::new(c.start, p.end)));
        total += n;
    }
    out.extend(current);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunks' lengths in characters, as LangChain's splitter (langchain-text-splitters 1.x, the
    /// baseline's settings) gives them for the same texts (scripts/legalbench_splits.py printed them).
    #[test]
    fn the_chunks_are_langchains() {
        for (text, size, want) in cases() {
            let spans = recursive_split(&text, size, &LEGALBENCH_SEPARATORS);
            let got: Vec<usize> = spans.iter().map(|s| characters(&text, *s)).collect();
            assert_eq!(got, want, "size {size}: {text:?}");
            let ends: Vec<usize> = std::iter::once(0).chain(spans.iter().map(|s| s.end)).collect();
            assert!(spans.iter().zip(&ends).all(|(s, &e)| s.start == e) && *ends.last().unwrap() == text.len(), "a partition");
        }
    }

    proptest::proptest! {
        /// Any text: the chunks partition it, and a chunk is longer than the size only where no separator
        /// could cut it (never, since the empty separator cuts between characters).
        #[test]
        fn chunks_partition_the_text_within_the_size(text in "[a-c .,\n!é]{0,300}", size in 1usize..40) {
            let spans = recursive_split(&text, size, &LEGALBENCH_SEPARATORS);
            let mut at = 0;
            for s in &spans {
                proptest::prop_assert_eq!(s.start, at);
                proptest::prop_assert!(s.end > s.start && characters(&text, *s) <= size);
                at = s.end;
            }
            proptest::prop_assert_eq!(at, text.len());
        }
    }

    fn cases() -> Vec<(String, usize, Vec<usize>)> {
        let fixture = |name: &str| {
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/legalbench-rag/corpus").join(name)).unwrap()
        };
        vec![
            (
                "Hello world. This is one; two, three! Four? Five: six.\n\nNew paragraph here with words.\nAnd a line.".to_owned(),
                20,
                vec![11, 13, 12, 18, 1, 19, 11, 1, 12],
            ),
            (
                "Hello world. This is one; two, three! Four? Five: six.\n\nNew paragraph here with words.\nAnd a line.".to_owned(),
                7,
                vec![5, 6, 6, 7, 5, 7, 6, 6, 5, 1, 1, 4, 7, 3, 5, 5, 6, 1, 6, 5, 1],
            ),
            ("Prix: 12 €; délai «court». Été, hiver!\n\nÇa va? Oui.".to_owned(), 9, vec![4, 6, 7, 8, 5, 7, 1, 1, 6, 6]),
            ("".to_owned(), 5, vec![]),
            ("aaaaaaaaaaaaaaaaaaaa".to_owned(), 6, vec![6, 6, 6, 2]),
            (fixture("contractnli/NDA Alpha.txt"), 60, vec![31, 1, 2, 58, 16, 1, 1, 2, 53, 31, 1, 59]),
            (fixture("contractnli/NDA Beta.txt"), 60, vec![24, 1, 58, 30, 1, 1, 55, 23, 1, 35]),
            (fixture("contractnli/Nda Gamma.txt"), 60, vec![25, 1, 50, 25, 1, 50, 54]),
            (fixture("maud/Acme Corp_Beta Inc.pdf__Acme_Beta_Amendment No.1.txt"), 60, vec![29, 1, 10, 58, 1, 10, 31, 30, 1, 1]),
            (fixture("privacy_qa/Tick_ Lists & Plans.txt"), 60, vec![21, 55, 42]),
        ]
    }
}
