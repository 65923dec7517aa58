//! One's own documents, outside any benchmark: `arbor index DIR --into INDEX` ([`index`]) cuts a folder's
//! files into leaf units as experiments do, encodes them and stores documents, units (byte and character
//! offsets) and vectors in an SQLite file (`arbor_store`), one transaction per document, incrementally by
//! content digest; `arbor query INDEX "question"` ([`query`]) ranks the stored units with the same
//! retrievers and token budget the experiment runner uses (flat dense, BM25, hybrid, SproutRAG's beam
//! search, RAPTOR's collapsed tree), in corpus scope; `arbor serve INDEX` ([`serve`]) answers the same over
//! HTTP; [`approximate`]: the approximate index a large index keeps. [`structures`]: the per-document trees an index keeps;
//! [`trained`]: a run's trained row (a dense model, a trained SproutRAG row, a reranker) as the index's.

pub mod approximate;
pub mod index;
pub mod query;
pub mod serve;
pub mod structures;
pub mod trained;

use std::path::PathBuf;

use arbor_datasets::UnitConfig;
use arbor_models::{DefaultBackend, EncoderConfig, ModelSource, SentenceEncoder, default_device};
use clap::Args;

/// The encoder options `index` and `query` share.
#[derive(Debug, Clone, Args)]
pub struct EncoderArgs {
    /// A Hugging Face model directory, or all-mpnet-base-v2 (fetched into $ARBOR_HOME; default:
    /// all-MiniLM-L6-v2, fetched likewise)
    #[arg(long)]
    pub model: Option<PathBuf>,
    #[arg(long, default_value_t = 32)]
    pub batch_size: usize,
}

impl EncoderArgs {
    pub fn config(&self) -> EncoderConfig {
        EncoderConfig {
            model: self.model.as_deref().map_or(ModelSource::AllMiniLmL6V2, ModelSource::from_arg),
            batch_size: self.batch_size.max(1),
            ..EncoderConfig::default()
        }
    }

    pub fn load(&self) -> anyhow::Result<SentenceEncoder<DefaultBackend>> {
        Ok(arbor_models::SentenceEncoder::<DefaultBackend>::load(&self.config(), &default_device())?)
    }
}

/// The unit rule of a new index: the experiments' default (at most `max_sentences` sentences of one
/// paragraph, cut to what the encoder reads, a cut table's pieces read after its head; `units: ()`), so
/// that `arbor query` ranks and hands on as `evaluate` does on the same documents; stored as JSON in the
/// index, which every later run keeps. An index built before holds the plain rule (`context: None`).
pub fn unit_rule(max_sentences: usize, encoder: &SentenceEncoder<DefaultBackend>) -> UnitConfig {
    crate::leaves::unit_rule(&UnitConfig { max_sentences, ..UnitConfig::default() }, encoder)
}

/// How `rule` reads, for messages: the default, or the plain rule of an index built before it.
pub fn rule_name(rule: &UnitConfig) -> &'static str {
    match rule.context {
        Some(_) => "the default unit rule (a cut table read after its head and handed on whole)",
        None => "the plain unit rule of an index built before the default (no table head; items handed on as ranked)",
    }
}
