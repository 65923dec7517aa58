//! What every method handed on for every query of a run, after the token budget: `retrievals.jsonl` in
//! the run folder, one [`Retrieval`] per line (rows in report order, queries in report order). `arbor
//! inspect` reads it beside the corpus; spans are UTF-8 byte offsets into the named document's text.

use std::io::{BufRead, Write};
use std::path::Path;

use anyhow::Context;
use arbor_datasets::Corpus;
use serde::{Deserialize, Serialize};

use crate::index::{Item, QueryInput, Retriever, Step};
use arbor_files::atomic_write;

pub const FILE: &str = "retrievals.jsonl";

/// One method's ranked items for one query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retrieval {
    pub method: String,
    pub query: String,
    /// The query's IE (percent, mean over its readings), as in the report's `per_query`.
    pub ie: f64,
    pub items: Vec<Handed>,
}

/// One ranked item: its document, byte spans, score, and for a hierarchy the node and the way down to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handed {
    pub doc: String,
    pub spans: Vec<[usize; 2]>,
    pub score: f32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<Step>,
}

impl Handed {
    pub fn of(item: &Item, retriever: &dyn Retriever, query: &QueryInput, corpus: &Corpus) -> Self {
        let doc = item.spans.first().map_or(String::new(), |s| corpus.documents[s.doc].id.clone());
        Handed {
            doc,
            spans: item.spans.iter().map(|s| [s.span.start, s.span.end]).collect(),
            score: item.score,
            node: item.node.map(|n| n.node),
            path: item.node.and_then(|n| retriever.path(query, n)).unwrap_or_default(),
        }
    }
}

/// Writes every retrieval to `dir/retrievals.jsonl` (atomically).
pub fn write(dir: &Path, all: &[Retrieval]) -> anyhow::Result<()> {
    let mut bytes = Vec::new();
    for r in all {
        serde_json::to_writer(&mut bytes, r)?;
        bytes.write_all(b"\n")?;
    }
    let path = dir.join(FILE);
    atomic_write(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// Reads `dir/retrievals.jsonl`; a damaged line is an error naming its number.
pub fn read(dir: &Path) -> anyhow::Result<Vec<Retrieval>> {
    let path = dir.join(FILE);
    let file = std::fs::File::open(&path)
        .with_context(|| format!("cannot open {} (runs made before retrievals were recorded have none: rerun the experiment)", path.display()))?;
    std::io::BufReader::new(file)
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let line = line.with_context(|| format!("cannot read {}", path.display()))?;
            serde_json::from_str(&line).with_context(|| format!("{} line {}", path.display(), i + 1))
        })
        .collect()
}
