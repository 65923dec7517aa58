//! Summaries, shared by RAPTOR's nodes and AutoContext's document headers (and later SmartChunk's
//! compressor targets). No generator model can be obtained here, so the default is extractive:
//!
//! - [`Extractive`]: the leaf units of the summarised text closest to their embedding centroid, taken in
//!   that order while they fit `max_tokens`, handed on in text order (centroid sentence selection, as in
//!   Radev et al.'s centroid-based summarisation). The summary is made of document spans, so what a
//!   RAPTOR node hands on is scored on the text like every other method's items.
//! - [`FromFile`]: precomputed summaries (a JSONL file of `{"id": ..., "summary": ...}`), so a user with a
//!   generator reproduces the papers' summaries. Ids: a document's id for a whole-document summary, else
//!   `<doc id>@<start>-<end>,...` (the byte spans summarised). A missing id is an error, and the inputs
//!   still needed are written as JSONL (`id`, `text`) beside the run so they can be generated.
//!
//! An OpenAI-compatible endpoint is not built: nothing outside the registries is reachable here, and a
//! summariser that cannot be run or tested would be scaffolding.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context as _;
use arbor_datasets::{Corpus, Span};
use arbor_eval::LeafIndex;
use arbor_eval::flat::dot;
use arbor_eval::raptor::Summary;
use serde::{Deserialize, Serialize};

/// Which summariser a method uses, in an experiment file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub enum SummariserConfig {
    /// Central leaf units (no generator model).
    #[default]
    Extractive,
    /// Precomputed summaries from a JSONL file (a path; `$ARBOR_DATA` is not expanded).
    File(String),
}

/// Writes a summary of some text of one document.
pub trait Summariser {
    /// How the summaries are made, for the report.
    fn describe(&self) -> String;
    /// A summary of the text of `spans` (in text order) of document `doc` in at most `max_tokens` tokens.
    fn summarise(&self, doc: usize, spans: &[Span], max_tokens: usize) -> anyhow::Result<Summary>;
}

impl SummariserConfig {
    /// A digest of what the summaries depend on beyond the corpus and the encoder (a file's content), for
    /// the keys of artefacts built from them.
    pub fn key(&self) -> anyhow::Result<String> {
        Ok(match self {
            SummariserConfig::Extractive => "extractive".into(),
            SummariserConfig::File(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("cannot read the summaries file {path}"))?;
                crate::cache::key(&("file", text))
            }
        })
    }

    /// The summariser, over the run's leaf units and their vectors; `needed` is where a file summariser
    /// lists the inputs it lacks.
    pub fn open<'a>(
        &self,
        corpus: &'a Corpus,
        leaves: &'a LeafIndex,
        unit_vectors: &'a [Vec<f32>],
        needed: PathBuf,
    ) -> anyhow::Result<Box<dyn Summariser + 'a>> {
        Ok(match self {
            SummariserConfig::Extractive => Box::new(Extractive { corpus, leaves, unit_vectors }),
            SummariserConfig::File(path) => Box::new(FromFile::load(Path::new(path), corpus, leaves, needed)?),
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

/// Summaries read from a JSONL file (see the module doc).
pub struct FromFile<'a> {
    path: PathBuf,
    summaries: HashMap<String, String>,
    corpus: &'a Corpus,
    leaves: &'a LeafIndex,
    needed: PathBuf,
    missing: Mutex<Vec<String>>,
}

#[derive(Deserialize)]
struct Line {
    id: String,
    summary: String,
}

impl<'a> FromFile<'a> {
    pub fn load(path: &Path, corpus: &'a Corpus, leaves: &'a LeafIndex, needed: PathBuf) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read the summaries file {}", path.display()))?;
        let mut summaries = HashMap::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let l: Line = serde_json::from_str(line).with_context(|| format!("{}:{}: not a {{\"id\", \"summary\"}} line", path.display(), i + 1))?;
            summaries.insert(l.id, l.summary);
        }
        Ok(FromFile { path: path.to_owned(), summaries, corpus, leaves, needed, missing: Mutex::new(Vec::new()) })
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
}

impl Summariser for FromFile<'_> {
    fn describe(&self) -> String {
        format!("precomputed summaries from {}", self.path.display())
    }

    fn summarise(&self, doc: usize, spans: &[Span], max_tokens: usize) -> anyhow::Result<Summary> {
        let id = Self::id(self.corpus, doc, spans);
        let Some(summary) = self.summaries.get(&id) else {
            let text: Vec<&str> = spans.iter().map(|s| &self.corpus.documents[doc].text[s.start..s.end]).collect();
            let mut missing = self.missing.lock().expect("not poisoned");
            missing.push(serde_json::json!({ "id": id, "text": text.join("\n") }).to_string());
            std::fs::write(&self.needed, missing.join("\n") + "\n").with_context(|| format!("cannot write {}", self.needed.display()))?;
            anyhow::bail!(
                "{} has no summary for {id:?} ({max_tokens} tokens wanted); the texts still to summarise are in {}",
                self.path.display(),
                self.needed.display()
            );
        };
        // A generated summary points into no span: it hands on the text it summarises.
        let tokens = spans.iter().map(|s| self.leaves.tokens.0[doc].count(*s)).sum();
        Ok(Summary { text: summary.clone(), spans: spans.to_vec(), tokens })
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
        let s = FromFile::load(&file, &corpus, &leaves, dir.join("needed.jsonl")).unwrap();
        let whole = [Span::new(0, corpus.documents[0].text.len())];
        assert_eq!(s.summarise(0, &whole, 50).unwrap().text, "Pets and stocks.");
        let err = s.summarise(0, &[Span::new(0, 10)], 50).unwrap_err().to_string();
        assert!(err.contains("\"d@0-10\""), "{err}");
        let needed = std::fs::read_to_string(dir.join("needed.jsonl")).unwrap();
        assert!(needed.contains("\"text\":\"Cats purr.\""), "{needed}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
