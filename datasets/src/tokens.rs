//! Where an encoder's tokens start in a document's text, so token counts of any span are exact and cheap.
//!
//! A document is tokenized once, whole (the caller does that with its tokenizer: arbor-models'
//! `SentenceEncoder::token_starts`); afterwards
//!
//! ```text
//! tokens(span) = |{ t : span.start <= start(t) < span.end }|
//! ```
//!
//! is a binary search. Leaf units are cut to a token limit with it ([`crate::units`]), token budgets are
//! spent with it and the tokens a method hands on are counted with it. For a BERT tokenizer, whose
//! pre-tokenizer splits at whitespace and punctuation, this equals tokenizing the span's text alone
//! whenever the span starts and ends at a word boundary (every unit does).

use crate::span::Span;

/// The byte offsets at which the tokens of one document start, ascending.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenStarts {
    starts: Vec<u32>,
}

impl TokenStarts {
    /// From the start offsets of a tokenizer's tokens (sorted here; word pieces keep their order).
    pub fn new(mut starts: Vec<u32>) -> Self {
        starts.sort_unstable();
        TokenStarts { starts }
    }

    /// One token per whitespace-separated word: a tokenizer-free stand-in for tests and for corpora
    /// segmented without an encoder.
    pub fn words(text: &str) -> Self {
        let mut starts = Vec::new();
        let mut in_word = false;
        for (i, c) in text.char_indices() {
            if !c.is_whitespace() && !in_word {
                starts.push(i as u32);
            }
            in_word = !c.is_whitespace();
        }
        TokenStarts { starts }
    }

    /// The tokens that start inside `span`.
    pub fn count(&self, span: Span) -> usize {
        self.first_at(span.end).saturating_sub(self.first_at(span.start))
    }

    /// The end of the first `n` tokens of `span`: the start of its token `n` (or `span.end` when the span
    /// has at most `n` tokens).
    pub fn prefix_end(&self, span: Span, n: usize) -> usize {
        let at = self.first_at(span.start) + n;
        match self.starts.get(at) {
            Some(&s) if (s as usize) < span.end => s as usize,
            _ => span.end,
        }
    }

    /// How many tokens the document has.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Where token `i` starts.
    pub fn start(&self, i: usize) -> usize {
        self.starts[i] as usize
    }

    /// The index of the first token starting at or after `byte`.
    pub fn first_at(&self, byte: usize) -> usize {
        self.starts.partition_point(|&s| (s as usize) < byte)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_and_prefixes_by_token_start() {
        // "ab cd ef": tokens start at 0, 3, 6.
        let t = TokenStarts::words("ab cd ef");
        assert_eq!(t.count(Span::new(0, 8)), 3);
        assert_eq!(t.count(Span::new(1, 8)), 2, "a token belongs to the span its first byte is in");
        assert_eq!(t.count(Span::new(3, 5)), 1);
        assert_eq!(t.count(Span::new(4, 5)), 0);
        assert_eq!(t.prefix_end(Span::new(0, 8), 2), 6);
        assert_eq!(t.prefix_end(Span::new(3, 8), 1), 6);
        assert_eq!(t.prefix_end(Span::new(0, 8), 3), 8);
        assert_eq!(t.prefix_end(Span::new(0, 5), 5), 5);
    }

    proptest! {
        #[test]
        fn counts_add_up_over_a_split_and_prefixes_hold_n_tokens(words in prop::collection::vec("[a-z]{1,4}", 0..20), cut in 0usize..80, n in 0usize..25) {
            let text = words.join(" ");
            let t = TokenStarts::words(&text);
            let all = Span::new(0, text.len());
            let cut = cut.min(text.len());
            prop_assert_eq!(t.count(all), words.len());
            prop_assert_eq!(t.count(Span::new(0, cut)) + t.count(Span::new(cut, text.len())), words.len());
            let end = t.prefix_end(all, n);
            prop_assert_eq!(t.count(Span::new(0, end)), n.min(words.len()));
        }
    }
}
