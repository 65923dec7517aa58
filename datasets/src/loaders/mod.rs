//! Corpus loaders: every source format is read into the same [`Corpus`].
//!
//! | format | what it reads | gold evidence |
//! |---|---|---|
//! | [`Format::Jsonl`] | `documents.jsonl` + `queries.jsonl` (arbor's own format) | as given |
//! | [`Format::Squad`] | a SQuAD v1.1 JSON file; an article is a document | the sentences holding an answer |
//! | [`Format::Qasper`] | QASPER v0.3 (dict of papers) or the Hugging Face layout | evidence paragraphs and captions |
//! | [`Format::Beir`] | a BEIR folder: corpus.jsonl, queries.jsonl, qrels/*.tsv | whole documents |
//! | [`Format::LegalBenchRag`] | LegalBench-RAG as published: `corpus/<dataset>/*.txt`, `benchmarks/<dataset>.json` | its snippets |
//!
//! [`folder`] reads a folder of one's own files (text, Markdown, HTML, JSONL) without queries, for `arbor index`.

mod beir;
pub mod folder;
mod jsonl;
pub mod legalbench_rag;
mod python_random;
mod qasper;
mod squad;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::corpus::Corpus;
use crate::error::DataError;

pub use beir::load_beir;
pub use jsonl::load_jsonl;
pub use legalbench_rag::load_legalbench_rag;
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
    /// LegalBench-RAG as it is published (corpus/ and benchmarks/), the released script's sample of each
    /// dataset or all of it; every question split `test`.
    LegalBenchRag {
        #[serde(default)]
        selection: legalbench_rag::Selection,
    },
}

/// Loads a corpus from `path` in the given format.
pub fn load(format: &Format, path: &Path) -> Result<Corpus, DataError> {
    Ok(load_reporting(format, path)?.0)
}

/// Loads a corpus from `path` in the given format, with the lines saying what the loader kept and dropped
/// and why, where it says more than the corpus itself does (LegalBench-RAG's selection and quirks).
pub fn load_reporting(format: &Format, path: &Path) -> Result<(Corpus, Vec<String>), DataError> {
    let alone = |corpus: Result<Corpus, DataError>| corpus.map(|c| (c, Vec::new()));
    match format {
        Format::Jsonl => alone(load_jsonl(path)),
        Format::Squad { train_articles } => alone(load_squad(path, *train_articles)),
        Format::Qasper { split } => alone(load_qasper(path, split.as_deref())),
        Format::Beir { split } => alone(load_beir(path, split)),
        Format::LegalBenchRag { selection } => load_legalbench_rag(path, *selection),
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
