//! Token starts are byte offsets into the text, so a span's tokens can be counted from the document's
//! tokenization alone and agree with tokenizing the span's text.

use arbor_datasets::{Span, TokenStarts};
use arbor_models::{DefaultBackend, EncoderConfig, SentenceEncoder, default_device};

#[test]
fn token_starts_are_byte_offsets_and_count_spans_as_the_tokenizer_does() {
    let encoder = SentenceEncoder::<DefaultBackend>::load(&EncoderConfig::default(), &default_device()).unwrap();
    let text = "Café prices rose 3.7% in 2017 — see Table 2.\nrevenue | 1279 | 1278\nThe naïve model's résumé was reviewed.";
    let starts = encoder.token_starts(&[text]).remove(0);
    assert!(starts.iter().all(|&s| text.is_char_boundary(s as usize)));
    let tokens = TokenStarts::new(starts);
    assert_eq!(tokens.count(Span::new(0, text.len())), encoder.count_tokens(text));
    for line in text.lines() {
        let start = line.as_ptr() as usize - text.as_ptr() as usize;
        assert_eq!(tokens.count(Span::new(start, start + line.len())), encoder.count_tokens(line), "{line}");
    }
    assert_eq!(encoder.max_content_tokens(), 254, "all-MiniLM-L6-v2 reads 256 tokens with [CLS] and [SEP]");
}
