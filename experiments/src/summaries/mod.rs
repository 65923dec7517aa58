//! Summaries, shared by RAPTOR's nodes, AutoContext's document headers and SmartChunk's compressor
//! targets. No generator model can be obtained here, so the default is extractive:
//!
//! - [`Extractive`]: the leaf units of the summarised text closest to their embedding centroid, taken in
//!   that order while they fit `max_tokens`, handed on in text order (centroid sentence selection, as in
//!   Radev et al.'s centroid-based summarisation). The summary is made of document spans, so what a
//!   RAPTOR node hands on is scored on the text like every other method's items.
//! - [`ById`] over a file: precomputed summaries (a JSONL file of `{"id": ..., "summary": ...}`), so a user
//!   with a generator reproduces the papers' summaries. Ids: a document's id for a whole-document summary,
//!   else `<doc id>@<start>-<end>,...` (the byte spans summarised). A missing id is an error, and the
//!   inputs still needed are written as JSONL (`id`, `text`) beside the run so they can be generated.
//! - [`ById`] over an endpoint ([`endpoint`]): an OpenAI-compatible chat endpoint writes each summary
//!   missing from the run's record, `summaries-<key>.jsonl` in the cache folder (the file format above,
//!   appended and fsynced line by line). A rerun reads the record before asking again, and the record
//!   given as `File(..)` reproduces the run without the endpoint.

pub mod endpoint;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context as _;
use arbor_datasets::{Corpus, Span};
use arbor_eval::LeafIndex;
use arbor_eval::retrievers::flat::dot;
use arbor_eval::retrievers::raptor::Summary;
use serde::{Deserialize, Serialize};

use self::endpoint::{ChatEndpoint, EndpointConfig};

/// Which summariser a method uses, in an experiment file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub enum SummariserConfig {
    /// Central leaf units (no generator model).
    #[default]
    Extractive,
    /// Precomputed summaries from a JSONL file (a path; `$ARBOR_DATA` is not expanded).
    File(String),
    /// An OpenAI-compatible chat endpoint (never needed: the extractive default or a file serve offline).
    Endpoint(EndpointConfig),
}

/// Writes a summary of some text of one document.
pub trait Summariser {
    /// How the summaries are made, for the report.
    fn describe(&self) -> String;
    /// A summary of the text of `spans` (in text order) of document `doc` in at most `max_tokens` tokens.
    fn summarise(&self, doc: usize, spans: &[Span], max_tokens: usize) -> anyhow::Result<Summary>;
}

impl SummariserConfig {
    /// A digest of what the summaries depend on beyond the corpus and the encoder (a file's content; the
    /// endpoint's model, address and prompt), for the keys of artefacts built from them.
    pub fn key(&self) -> anyhow::Result<String> {
        Ok(match self {
            SummariserConfig::Extractive => "extractive".into(),
            SummariserConfig::File(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("cannot read the summaries file {path}"))?;
                crate::cache::key(&("file", text))
            }
            SummariserConfig::Endpoint(e) => crate::cache::key(&("endpoint", &e.url, &e.model, &e.prompt, e.temperature)),
        })
    }

    /// What can be checked before a run starts: an endpoint's address, key variable and prompt.
    pub fn check(&self) -> anyhow::Result<()> {
        match self {
            SummariserConfig::Endpoint(e) => e.check(),
            _ => Ok(()),
        }
    }

    /// The summariser, over the run's leaf units and their vectors; `root` is the cache folder, where
    /// a file summariser lists the inputs it lacks and an endpoint's record is kept.
    pub fn open<'a>(
        &self,
        corpus: &'a Corpus,
        leaves: &'a LeafIndex,
        unit_vectors: &'a [Vec<f32>],
        root: &Path,
    ) -> anyhow::Result<Box<dyn Summariser + 'a>> {
        let needed = root.join("summaries-needed.jsonl");
        Ok(match self {
            SummariserConfig::Extractive => Box::new(Extractive { corpus, leaves, unit_vectors }),
            SummariserConfig::File(path) => Box::new(ById::from_file(Path::new(path), corpus, leaves, needed)?),
            SummariserConfig::Endpoint(e) => {
                let record = root.join(format!("summaries-{}.jsonl", self.key()?));
                Box::new(ById::from_endpoint(e.connect()?, record, corpus, leaves, needed)?)
            }
        })
    }
}

/// Centroid-based extractive summaries (see the module doc).
pub struct Extractive<'a> {
    pub corpus: &'a Corpus,
    pub leaves: &'a LeafIndex,
    /// The encoder's vector of every leaf unit of the documents summarised.
    pub unit_vectors: &'a [Vec<f32>],
}

impl Summariser for Extractive<'_> {
    fn describe(&self) -> String {
        "extractive (the leaf units nearest the summarised text's embedding centroid; no generator model can be obtained here)".into()
    }

    fn summarise(&self, doc: usize, spans: &[Span], max_tokens: usize) -> anyhow::Result<Summary> {
        let units = &self.leaves.units;
        let region = match (spans.first(), spans.last()) {
            (Some(first), Some(last)) => first.cover(last),
            _ => anyhow::bail!("nothing to summarise in document {:?}", self.corpus.documents[doc].id),
        };
        let candidates: Vec<usize> = units.by_doc[doc].clone().filter(|&u| spans.iter().any(|s| s.overlaps(&units.spans[u].span))).collect();
        anyhow::ensure!(!candidates.is_empty(), "no leaf unit inside the text summarised in document {:?}", self.corpus.documents[doc].id);
        let dim = self.unit_vectors[candidates[0]].len();
        let mut centroid = vec![0.0f32; dim];
        for &u in &candidates {
            centroid.iter_mut().zip(&self.unit_vectors[u]).for_each(|(c, v)| *c += v);
        }
        let mut ranked: Vec<(usize, f32)> = candidates.iter().map(|&u| (u, dot(&centroid, &self.unit_vectors[u]))).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let tokens = &self.leaves.tokens.0[doc];
        let clip = |u: usize| {
            let s = units.spans[u].span;
            Span::new(s.start.max(region.start), s.end.min(region.end))
        };
        let mut chosen: Vec<Span> = Vec::new();
        let mut used = 0;
        for &(u, _) in &ranked {
            let span = clip(u);
            let t = tokens.count(span);
            if used + t <= max_tokens {
                chosen.push(span);
                used += t;
            }
        }
        if chosen.is_empty() {
            // The most central unit alone is longer than the summary: its first max_tokens tokens.
            let span = clip(ranked[0].0);
            let cut = Span::new(span.start, tokens.prefix_end(span, max_tokens));
            used = tokens.count(cut);
            chosen.push(cut);
        }
        chosen.sort();
        let text = &self.corpus.documents[doc].text;
        Ok(Summary { text: chosen.iter().map(|s| text[s.start..s.end].trim()).collect::<Vec<_>>().join(" "), spans: chosen, tokens: used })
    }
}

/// Summaries found by their id (see the module doc): read from a file, or asked of an endpoint and
/// recorded.
pub struct ById<'a> {
    source: String,
    summaries: Mutex<HashMap<String, String>>,
    /// The endpoint and the record its answers are appended to.
    generator: Option<(ChatEndpoint, PathBuf)>,
    corpus: &'a Corpus,
    leaves: &'a LeafIndex,
    needed: PathBuf,
    missing: Mutex<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
struct Line {
    id: String,
    summary: String,
}

/// The `{"id", "summary"}` lines of `text` (from `path`); `torn_tail` drops a last line without its
/// newline (a record whose writer stopped in the middle of a line: that summary is asked again).
fn read_lines(text: &str, path: &Path, torn_tail: bool) -> anyhow::Result<HashMap<String, String>> {
    let complete = match torn_tail {
        true => &text[..text.rfind('\n').map_or(0, |i| i + 1)],
        false => text,
    };
    let mut summaries = HashMap::new();
    for (i, line) in complete.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let l: Line = serde_json::from_str(line).with_context(|| format!("{}:{}: not a {{\"id\", \"summary\"}} line", path.display(), i + 1))?;
        summaries.insert(l.id, l.summary);
    }
    Ok(summaries)
}

impl<'a> ById<'a> {
    /// Whether a summary of `id` is held (read from the file or the record, or written this run).
    pub fn holds(&self, id: &str) -> bool {
        self.summaries.lock().expect("summaries lock").contains_key(id)
    }

    pub fn from_file(path: &Path, corpus: &'a Corpus, leaves: &'a LeafIndex, needed: PathBuf) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read the summaries file {}", path.display()))?;
        let summaries = read_lines(&text, path, false)?;
        let source = format!("precomputed summaries from {}", path.display());
        Ok(ById { source, summaries: Mutex::new(summaries), generator: None, corpus, leaves, needed, missing: Mutex::new(Vec::new()) })
    }

    /// Summaries from `endpoint`, those already in `record` read back.
    pub fn from_endpoint(
        endpoint: ChatEndpoint,
        record: PathBuf,
        corpus: &'a Corpus,
        leaves: &'a LeafIndex,
        needed: PathBuf,
    ) -> anyhow::Result<Self> {
        let summaries = match std::fs::read_to_string(&record) {
            Ok(text) => read_lines(&text, &record, true)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read the summary record {}", record.display())),
        };
        let source = format!("written by {}, recorded in {}", endpoint.describe(), record.display());
        Ok(ById {
            source,
            summaries: Mutex::new(summaries),
            generator: Some((endpoint, record)),
            corpus,
            leaves,
            needed,
            missing: Mutex::new(Vec::new()),
        })
    }

    /// The id of a summary of `spans` of document `doc`.
    pub fn id(corpus: &Corpus, doc: usize, spans: &[Span]) -> String {
        let d = &corpus.documents[doc];
        if spans.first().is_some_and(|f| f.start == 0) && spans.last().is_some_and(|l| l.end >= d.text.trim_end().len()) && spans.len() == 1 {
            return d.id.clone();
        }
        let ranges: Vec<String> = spans.iter().map(|s| format!("{}-{}", s.start, s.end)).collect();
        format!("{}@{}", d.id, ranges.join(","))
    }

    /// The summary of `id`, found, or asked of the endpoint and appended to the record.
    fn find(&self, id: &str, text: impl FnOnce() -> String, max_tokens: usize) -> anyhow::Result<Option<String>> {
        if let Some(summary) = self.summaries.lock().expect("not poisoned").get(id) {
            return Ok(Some(summary.clone()));
        }
        let Some((endpoint, record)) = &self.generator else { return Ok(None) };
        let summary = endpoint.summarise(&text(), max_tokens).with_context(|| format!("summarising {id:?}"))?;
        let line = serde_json::to_string(&Line { id: id.to_owned(), summary: summary.clone() })? + "\n";
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(record)
            .with_context(|| format!("cannot open the summary record {}", record.display()))?;
        file.write_all(line.as_bytes()).and_then(|_| file.sync_all()).with_context(|| format!("cannot append to {}", record.display()))?;
        self.summaries.lock().expect("not poisoned").insert(id.to_owned(), summary.clone());
        Ok(Some(summary))
    }
}

impl Summariser for ById<'_> {
    fn describe(&self) -> String {
        self.source.clone()
    }

    fn summarise(&self, doc: usize, spans: &[Span], max_tokens: usize) -> anyhow::Result<Summary> {
        let id = Self::id(self.corpus, doc, spans);
        let text = || spans.iter().map(|s| &self.corpus.documents[doc].text[s.start..s.end]).collect::<Vec<_>>().join("\n");
        let Some(summary) = self.find(&id, text, max_tokens)? else {
            let mut missing = self.missing.lock().expect("not poisoned");
            missing.push(serde_json::json!({ "id": id, "text": text() }).to_string());
            std::fs::write(&self.needed, missing.join("\n") + "\n").with_context(|| format!("cannot write {}", self.needed.display()))?;
            anyhow::bail!(
                "no summary for {id:?} ({max_tokens} tokens wanted) in the {}; the texts still to summarise are in {}",
                self.source,
                self.needed.display()
            );
        };
        // A generated summary points into no span: it hands on the text it summarises.
        let tokens = spans.iter().map(|s| self.leaves.tokens.0[doc].count(*s)).sum();
        Ok(Summary { text: summary, spans: spans.to_vec(), tokens })
    }
}
