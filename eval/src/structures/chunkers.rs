//! Ways to cut a document into chunks other than the shared leaf units, each a pure function of the
//! document's text, its token starts (the encoder's tokens) and, for semantic chunking, sentence vectors:
//!
//! - [`token_windows`]: fixed windows of `size` tokens, each starting `size - overlap` tokens after the
//!   previous one (Chroma's and SmartChunk's fixed-size baselines). Without overlap the windows tile the
//!   text: every character from the first token to the last lies in exactly one window.
//! - [`pack_sentences`]: consecutive sentences packed greedily into chunks of at most `max` tokens, a
//!   sentence longer than that cut into windows (RAPTOR's leaf chunks, `split_text` with 100 tokens).
//! - [`semantic`]: the semantic chunker of Forge's four-level hierarchical index (level L2): cut where the cosine between consecutive
//!   sentences drops (below a threshold, or where the cosine distance is above a percentile of the
//!   document's distances), then merge pieces smaller than `min_tokens` into the next while the result
//!   stays within `max_tokens`, and split pieces larger than `max_tokens` at sentence boundaries.

use arbor_datasets::{Span, TokenStarts};
use serde::{Deserialize, Serialize};

use crate::retrievers::flat::dot;

/// Fixed windows of `size` tokens over the tokens starting inside `within`, a window starting every
/// `size - overlap` tokens until one reaches the last token. Each window runs from its first token's
/// start to the next window-end token's start (or `within.end`), trailing whitespace trimmed.
pub fn token_windows(text: &str, tokens: &TokenStarts, within: Span, size: usize, overlap: usize) -> Vec<Span> {
    assert!(size > overlap, "a window of {size} tokens cannot overlap the next by {overlap}");
    let first = tokens.first_at(within.start);
    let last = tokens.first_at(within.end);
    let end_of = |t: usize| if t < last { tokens.start(t) } else { within.end };
    let mut out = Vec::new();
    let mut t = first;
    while t < last {
        let end = (t + size).min(last);
        out.push(trimmed(text, Span::new(tokens.start(t), end_of(end))));
        if end == last {
            break;
        }
        t += size - overlap;
    }
    out
}

/// Consecutive `sentences` packed into chunks of at most `max` tokens; a sentence longer than `max` is
/// cut into windows of `max` tokens.
pub fn pack_sentences(text: &str, tokens: &TokenStarts, sentences: &[Span], max: usize) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut open: Option<Span> = None;
    for &s in sentences {
        if tokens.count(s) > max {
            out.extend(open.take());
            out.extend(token_windows(text, tokens, s, max, 0));
            continue;
        }
        open = match open {
            Some(o) if tokens.count(o.cover(&s)) <= max => Some(o.cover(&s)),
            Some(o) => {
                out.push(o);
                Some(s)
            }
            None => Some(s),
        };
    }
    out.extend(open);
    out
}

/// Where semantic chunking cuts between two consecutive sentences.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Breakpoint {
    /// Where their cosine is below this value.
    Threshold(f32),
    /// Where their cosine distance is above this percentile (0-100) of the document's distances
    /// (LangChain's SemanticChunker default: 95).
    Percentile(f32),
}

/// Semantic chunks of one document from its `sentences` (in text order) and their unit-norm `vectors`
/// (see the module doc).
pub fn semantic(
    tokens: &TokenStarts,
    sentences: &[Span],
    vectors: &[Vec<f32>],
    breakpoint: Breakpoint,
    min_tokens: usize,
    max_tokens: usize,
) -> Vec<Span> {
    assert_eq!(sentences.len(), vectors.len(), "one vector per sentence");
    if sentences.is_empty() {
        return Vec::new();
    }
    let sims: Vec<f32> = vectors.windows(2).map(|w| dot(&w[0], &w[1])).collect();
    let cut_below = match breakpoint {
        Breakpoint::Threshold(t) => t,
        Breakpoint::Percentile(p) => 1.0 - percentile(sims.iter().map(|s| 1.0 - s).collect(), p),
    };
    // Topic pieces: runs of sentences between cuts, each a list of sentence indices.
    let mut pieces: Vec<Vec<usize>> = vec![vec![0]];
    for (i, &sim) in sims.iter().enumerate() {
        if sim < cut_below {
            pieces.push(Vec::new());
        }
        pieces.last_mut().expect("pushed above").push(i + 1);
    }
    let span_of = |piece: &[usize]| sentences[piece[0]].cover(&sentences[*piece.last().expect("pieces are not empty")]);
    // Split what is too large, then merge what is too small into the next piece while it fits.
    let mut sized: Vec<Vec<usize>> = Vec::new();
    for piece in pieces {
        let mut open: Vec<usize> = Vec::new();
        for i in piece {
            if !open.is_empty() && tokens.count(span_of(&[open[0], i])) > max_tokens {
                sized.push(std::mem::take(&mut open));
            }
            open.push(i);
        }
        sized.push(open);
    }
    let mut out: Vec<Span> = Vec::new();
    let mut open: Option<Span> = None;
    for piece in sized {
        let span = span_of(&piece);
        open = match open {
            Some(o) if tokens.count(o) < min_tokens && tokens.count(o.cover(&span)) <= max_tokens => Some(o.cover(&span)),
            Some(o) => {
                out.push(o);
                Some(span)
            }
            None => Some(span),
        };
    }
    out.extend(open);
    out
}

/// The `p`-th percentile (0-100) of `values`, linearly interpolated (numpy's default).
fn percentile(mut values: Vec<f32>, p: f32) -> f32 {
    if values.is_empty() {
        return f32::INFINITY;
    }
    values.sort_by(f32::total_cmp);
    let rank = (p.clamp(0.0, 100.0) / 100.0) * (values.len() - 1) as f32;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    values[lo] + (values[hi] - values[lo]) * (rank - lo as f32)
}

/// `span` without trailing whitespace.
fn trimmed(text: &str, span: Span) -> Span {
    Span::new(span.start, span.start + text[span.start..span.end].trim_end().len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts<'a>(text: &'a str, spans: &[Span]) -> Vec<&'a str> {
        spans.iter().map(|s| &text[s.start..s.end]).collect()
    }

    #[test]
    fn windows_tile_the_text_and_overlap_by_the_given_tokens() {
        let text = "a b c d e f g";
        let t = TokenStarts::words(text);
        let all = Span::new(0, text.len());
        assert_eq!(texts(text, &token_windows(text, &t, all, 3, 0)), ["a b c", "d e f", "g"]);
        assert_eq!(texts(text, &token_windows(text, &t, all, 3, 1)), ["a b c", "c d e", "e f g"]);
        assert_eq!(texts(text, &token_windows(text, &t, all, 10, 2)), ["a b c d e f g"]);
        assert_eq!(texts(text, &token_windows(text, &t, Span::new(2, 9), 2, 0)), ["b c", "d e"]);
        assert!(token_windows("", &TokenStarts::words(""), Span::new(0, 0), 3, 0).is_empty());
    }

    proptest! {
        #[test]
        fn windows_without_overlap_cover_every_token_once(words in prop::collection::vec("[a-z]{1,3}", 1..40), size in 1usize..9, overlap in 0usize..4) {
            let text = words.join(" \n");
            let t = TokenStarts::words(&text);
            let all = Span::new(0, text.len());
            let windows = token_windows(&text, &t, all, size, 0);
            prop_assert_eq!(windows.iter().map(|w| t.count(*w)).sum::<usize>(), words.len());
            prop_assert!(windows.iter().all(|w| t.count(*w) <= size));
            prop_assert_eq!(windows.first().unwrap().start, 0);
            prop_assert_eq!(windows.last().unwrap().end, text.len());
            for pair in windows.windows(2) {
                let gap = &text[pair[0].end..pair[1].start];
                prop_assert!(gap.trim().is_empty(), "only whitespace between windows");
            }
            // (Overlap 0 is the case above.)
            if 0 < overlap && overlap < size {
                let overlapping = token_windows(&text, &t, all, size, overlap);
                prop_assert_eq!(overlapping.last().unwrap().end, text.len());
                for pair in overlapping.windows(2) {
                    prop_assert_eq!(t.count(Span::new(pair[1].start, pair[0].end)), overlap);
                }
            }
        }
    }

    #[test]
    fn sentences_are_packed_up_to_the_limit_and_long_ones_cut() {
        let text = "A b. C d e. F. G h i j k l.";
        let t = TokenStarts::words(text);
        let sentences = [Span::new(0, 4), Span::new(5, 11), Span::new(12, 14), Span::new(15, 27)];
        assert_eq!(texts(text, &pack_sentences(text, &t, &sentences, 5)), ["A b. C d e.", "F.", "G h i j k", "l."]);
        assert_eq!(texts(text, &pack_sentences(text, &t, &sentences, 100)), [text]);
    }

    #[test]
    fn semantic_chunks_cut_at_topic_shifts_and_merge_small_pieces() {
        // Six one-word sentences; topics x, x, y, y, y, x.
        let text = "a. b. c. d. e. f.";
        let t = TokenStarts::words(text);
        let sentences: Vec<Span> = (0..6).map(|i| Span::new(3 * i, 3 * i + 2)).collect();
        let (x, y) = (vec![1.0, 0.0], vec![0.0, 1.0]);
        let vectors = vec![x.clone(), x.clone(), y.clone(), y.clone(), y, x];
        let got = semantic(&t, &sentences, &vectors, Breakpoint::Threshold(0.5), 0, 100);
        assert_eq!(texts(text, &got), ["a. b.", "c. d. e.", "f."]);
        // Pieces under 3 tokens are merged into the next while the result fits 5 tokens.
        let got = semantic(&t, &sentences, &vectors, Breakpoint::Threshold(0.5), 3, 5);
        assert_eq!(texts(text, &got), ["a. b. c. d. e.", "f."]);
        // A piece over the limit is split at sentence boundaries.
        let got = semantic(&t, &sentences, &vectors, Breakpoint::Threshold(0.5), 0, 2);
        assert_eq!(texts(text, &got), ["a. b.", "c. d.", "e.", "f."]);
        // The 60th percentile of the distances (0, 1, 0, 0, 1) is 0.4: the same cuts as the threshold.
        let got = semantic(&t, &sentences, &vectors, Breakpoint::Percentile(60.0), 0, 100);
        assert_eq!(texts(text, &got), ["a. b.", "c. d. e.", "f."]);
    }

    #[test]
    fn percentiles_interpolate() {
        assert_eq!(percentile(vec![3.0, 1.0, 2.0], 50.0), 2.0);
        assert_eq!(percentile(vec![0.0, 1.0], 25.0), 0.25);
    }
}
