//! The unit cutter of a run: every document tokenised by the encoder's tokenizer and cut into its leaf
//! units by the experiment's unit rule (arbor_datasets::units), `max_tokens` the encoder's when unset.
//! Every artefact kind's code lists this file (experiments/src/artefact/mod.rs), since every unit vector,
//! tree and trained model reads the units it cuts: an edit here changes every kind's digest.

use anyhow::Context as _;
use arbor_datasets::{Corpus, TokenStarts, UnitConfig};
use arbor_eval::LeafIndex;
use arbor_models::{DefaultBackend, SentenceEncoder};

use crate::progress::bar;

/// The unit rule a run cuts by: the experiment's, with at most `max_tokens` word pieces (the encoder's
/// content limit when the experiment sets none).
pub fn unit_rule(units: &UnitConfig, encoder: &SentenceEncoder<DefaultBackend>) -> UnitConfig {
    UnitConfig { max_tokens: Some(units.max_tokens.unwrap_or_else(|| encoder.max_content_tokens())), ..*units }
}

/// Every document's leaf units, cut to `units` with the encoder's tokenizer (documents tokenized whole,
/// a few at a time).
pub fn leaf_index(corpus: &Corpus, units: &UnitConfig, encoder: &SentenceEncoder<DefaultBackend>) -> anyhow::Result<LeafIndex> {
    let pb = bar(corpus.documents.len(), "tokenizing");
    let mut tokens = Vec::with_capacity(corpus.documents.len());
    for chunk in corpus.documents.chunks(16) {
        let texts: Vec<&str> = chunk.iter().map(|d| d.text.as_str()).collect();
        tokens.extend(encoder.token_starts(&texts).into_iter().map(TokenStarts::new));
        pb.inc(chunk.len() as u64);
    }
    pb.finish_and_clear();
    LeafIndex::build(corpus, units, tokens).context("cannot cut the documents into leaf units")
}
