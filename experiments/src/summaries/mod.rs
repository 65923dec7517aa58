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

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::{Document, Query, TokenStarts};

    fn setup() -> (Corpus, LeafIndex) {
        let text = "Cats purr.\n\nDogs bark loudly.\n\nCats nap.\n\nStocks fell today.";
        let doc = Document { id: "d".into(), title: String::new(), text: text.into(), sections: vec![], split: None };
        let corpus = Corpus::new(vec![doc], Vec::<Query>::new(), Path::new("t")).unwrap();
        let tokens = vec![TokenStarts::words(text)];
        let leaves = LeafIndex::build(&corpus, &Default::default(), tokens).unwrap();
        (corpus, leaves)
    }

    #[test]
    fn extractive_summaries_take_central_units_in_text_order_within_the_budget() {
        let (corpus, leaves) = setup();
        let vectors = vec![vec![1.0, 0.0], vec![0.6, 0.8], vec![0.98, 0.2], vec![0.0, 1.0]];
        let s = Extractive { corpus: &corpus, leaves: &leaves, unit_vectors: &vectors };
        let all: Vec<Span> = leaves.units.spans.iter().map(|u| u.span).collect();
        // Centroid (2.58, 2.0): units 1 (0.6, 0.8) and 2 score highest; 2 + 3 tokens fit 5.
        let got = s.summarise(0, &all, 5).unwrap();
        assert_eq!(got.text, "Dogs bark loudly. Cats nap.");
        assert_eq!(got.tokens, 5);
        // Of the first three units only: the centroid is (2.58, 1.0), unit 2 is nearest.
        let got = s.summarise(0, &all[..3], 2).unwrap();
        assert_eq!(got.text, "Cats nap.");
        // A budget smaller than any unit: the most central one, cut.
        let got = s.summarise(0, &all[1..2], 2).unwrap();
        assert_eq!((got.text.as_str(), got.tokens), ("Dogs bark", 2));
    }

    #[test]
    fn file_summaries_are_found_by_id_and_missing_ones_listed() {
        let (corpus, leaves) = setup();
        let dir = std::env::temp_dir().join(format!("arbor-summaries-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.jsonl");
        std::fs::write(&file, "{\"id\": \"d\", \"summary\": \"Pets and stocks.\"}\n").unwrap();
        let s = ById::from_file(&file, &corpus, &leaves, dir.join("needed.jsonl")).unwrap();
        let whole = [Span::new(0, corpus.documents[0].text.len())];
        assert_eq!(s.summarise(0, &whole, 50).unwrap().text, "Pets and stocks.");
        let err = s.summarise(0, &[Span::new(0, 10)], 50).unwrap_err().to_string();
        assert!(err.contains("\"d@0-10\""), "{err}");
        let needed = std::fs::read_to_string(dir.join("needed.jsonl")).unwrap();
        assert!(needed.contains("\"text\":\"Cats purr.\""), "{needed}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn endpoint_summaries_are_recorded_and_read_back_instead_of_asked_again() {
        let (corpus, leaves) = setup();
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("summaries-k.jsonl");
        // The server answers one request only: a second would find no one listening.
        let (url, seen) = endpoint::tests::serve(1, |_| (200, endpoint::tests::completion("Pets.")));
        let config = EndpointConfig { url, model: "m".into(), api_key_env: None, prompt: "{text}".into(), temperature: 0.0, timeout_secs: 10 };
        let open = || ById::from_endpoint(config.connect().unwrap(), record.clone(), &corpus, &leaves, dir.path().join("needed.jsonl")).unwrap();
        let spans = [leaves.units.spans[0].span, leaves.units.spans[2].span];
        let s = open();
        let got = s.summarise(0, &spans, 20).unwrap();
        assert_eq!((got.text.as_str(), got.spans.as_slice(), got.tokens), ("Pets.", &spans[..], 4));
        assert_eq!(seen.recv().unwrap().1["messages"][1]["content"], "Cats purr.\nCats nap.");
        assert_eq!(s.summarise(0, &spans, 20).unwrap().text, "Pets.", "asked once");
        assert_eq!(std::fs::read_to_string(&record).unwrap(), "{\"id\":\"d@0-10,31-40\",\"summary\":\"Pets.\"}\n");
        // A later run reads the record; a line cut short by a stopped writer is dropped, not misread.
        std::fs::write(&record, "{\"id\":\"d@0-10,31-40\",\"summary\":\"Pets.\"}\n{\"id\":\"d\",\"summ").unwrap();
        assert_eq!(open().summarise(0, &spans, 20).unwrap().text, "Pets.");
        assert!(open().summaries.lock().unwrap().get("d").is_none());
        // The record is a summaries file: it reproduces the run without the endpoint.
        let file = ById::from_file(&record, &corpus, &leaves, dir.path().join("needed.jsonl"));
        assert!(file.is_err(), "a torn record is not a clean file");
        std::fs::write(&record, "{\"id\":\"d@0-10,31-40\",\"summary\":\"Pets.\"}\n").unwrap();
        let file = ById::from_file(&record, &corpus, &leaves, dir.path().join("needed.jsonl")).unwrap();
        assert_eq!(file.summarise(0, &spans, 20).unwrap().text, "Pets.");
    }
}
