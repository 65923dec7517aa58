//! Corpus loaders: every source format is read into the same [`Corpus`].
//!
//! | format | what it reads | gold evidence |
//! |---|---|---|
//! | [`Format::Jsonl`] | `documents.jsonl` + `queries.jsonl` (arbor's own format) | as given |
//! | [`Format::Squad`] | a SQuAD v1.1 JSON file; an article is a document | the sentences holding an answer |
//! | [`Format::Qasper`] | QASPER v0.3 (dict of papers) or the Hugging Face layout | evidence paragraphs and captions |
//! | [`Format::Beir`] | a BEIR folder: corpus.jsonl, queries.jsonl, qrels/*.tsv | whole documents |
//!
//! [`folder`] reads a folder of one's own files (text, Markdown, HTML, JSONL) without queries, for `arbor index`.

mod beir;
pub mod folder;
mod jsonl;
mod qasper;
mod squad;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::corpus::Corpus;
use crate::error::DataError;

pub use beir::load_beir;
pub use jsonl::load_jsonl;
pub use qasper::load_qasper;
pub use squad::load_squad;

/// The on-disk layout of a corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Format {
    /// A folder with `documents.jsonl` and `queries.jsonl`.
    Jsonl,
    /// A SQuAD v1.1 JSON file. The first `train_articles` articles (file order) are split `train`, the
    /// rest `test` (split by article, never by question); `None` leaves splits unset.
    Squad { train_articles: Option<usize> },
    /// A QASPER JSON file, either layout; every query gets the split named here, if any.
    Qasper { split: Option<String> },
    /// A BEIR folder; queries are read from `qrels/<split>.tsv`.
    Beir { split: String },
}

/// Loads a corpus from `path` in the given format.
pub fn load(format: &Format, path: &Path) -> Result<Corpus, DataError> {
    match format {
        Format::Jsonl => load_jsonl(path),
        Format::Squad { train_articles } => load_squad(path, *train_articles),
        Format::Qasper { split } => load_qasper(path, split.as_deref()),
        Format::Beir { split } => load_beir(path, split),
    }
}

/// Parses each non-empty line of a JSONL file, naming file and line on failure.
pub(crate) fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, DataError> {
    let text = crate::error::read_utf8(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(line).map_err(|e| crate::error::json_error(path, i, &e))?);
    }
    Ok(out)
}
