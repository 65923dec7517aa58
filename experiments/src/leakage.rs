//! No path from what is scored into training: the fair rules of arbor as refusals, not conventions.
//! Before any index is built, [`check`] refuses
//!
//! - a method that reads the test split or the validation split (which chooses every trainer's epoch) for
//!   training or look-up, naming the setting (`training.split`, `plan: Planner((split))`, ...);
//! - where that method reads its split in this run (it trains, under `train`; exemplars look up in any
//!   run): evaluated queries of the training split (`data.split: None`, or the same split);
//!   a query of the training split asked against a document of another split; and a document the
//!   training reads (its split's documents, and those of its queries) among the documents ranked for the
//!   evaluated queries.
//!
//! Under `evaluate --from RUN_DIR` nothing trains: each model carries what its training read (written by
//! the run that trained it: [`TrainedModel::trained_on`], [`TrainedModel::trained_on_questions`],
//! [`TrainedModel::trained_on_sketches`]), and [`check_models`] refuses one that read a document or a
//! question this run scores, by content rather than bytes:
//!
//! - the same text: both compared after Unicode NFKC (ligatures, full-width forms), lower case, words
//!   hyphenated across a line end joined, and punctuation and whitespace dropped ([`words`]), so the same
//!   contract extracted again, or a question re-cased or re-punctuated, is the same text;
//! - a near-duplicate: a scored document that holds most of a trained-on document, or is mostly held in
//!   one (a section of it, the same filing with page headers), by the containment of their 8-word shingles,
//!   estimated on the shingles whose hash is 0 modulo 16 (a sample that keeps containment unbiased at any
//!   length; Broder 1997). Refused at `contamination: (near_duplicate: 0.8)` by default (an experiment's
//!   setting); documents of fewer than [`MIN_SAMPLES`] sampled shingles (about 64 words) are compared by
//!   their text only.
//!
//! Records written before a key was kept are compared by what they hold (the whitespace-normalised or the
//! exact text) and reported as checked that far; a model recorded before arbor kept its documents is
//! reported as unchecked.

use std::collections::{HashMap, HashSet};

use anyhow::bail;
use arbor_datasets::Corpus;
use unicode_normalization::UnicodeNormalization;

use crate::cache::key;
pub use crate::experiment::Contamination;
use crate::experiment::Experiment;
use crate::methods::{Method, Trains};
use crate::trained::{EarlierRun, TrainedModel};
use crate::validation::VALIDATION;

/// Refuses the rows of `exp` (its methods and their controls) that would read what `evaluated` (the
/// documents ranked for the scored queries) holds; `trains`: models may be trained in this run.
pub fn check(exp: &Experiment, rows: &[Method], corpus: &Corpus, evaluated: &[usize], trains: bool) -> anyhow::Result<()> {
    let evaluated: HashSet<usize> = evaluated.iter().copied().collect();
    let scored = corpus.eval_queries(exp.data.split.as_deref());
    for method in rows {
        let spec = method.spec();
        let label = spec.label();
        let reads_now = trains || matches!(spec.trains(), Trains::LooksUp(_));
        for (field, split) in spec.reads_splits() {
            if split == "test" || split == VALIDATION {
                bail!(
                    "{label:?}: {field} is {split:?}: no method trains on or looks up the {} (set it to \"train\")",
                    if split == "test" { "test split" } else { "validation split, which chooses every trainer's epoch" }
                );
            }
            if !reads_now {
                continue;
            }
            match exp.data.split.as_deref() {
                _ if !scored.iter().any(|q| q.split.as_deref() == Some(split.as_str())) => {}
                None => bail!(
                    "data.split is None: every query is scored, those of split {split:?} included, which {label:?} reads \
                     ({field}): score a split it never reads (data.split: Some(\"test\"))"
                ),
                Some(s) if s == split => {
                    bail!("data.split is {s:?}, the split {label:?} reads ({field}): its rows would be scored on their own training data")
                }
                _ => {}
            }
            let both: Vec<usize> = read_documents(corpus, &split)?.into_iter().filter(|d| evaluated.contains(d)).collect();
            if let Some(&d) = both.first() {
                bail!(
                    "{label:?} reads {} document(s) of split {split:?} ({field}) that the evaluated queries rank, e.g. {:?}: \
                     a document is either trained on or scored",
                    both.len(),
                    corpus.documents[d].id
                );
            }
        }
    }
    Ok(())
}

/// The documents a training on `split` reads: the split's documents and those its queries are asked
/// against or hold gold in. An error names a query of the split asked against a document of another one.
pub fn read_documents(corpus: &Corpus, split: &str) -> anyhow::Result<Vec<usize>> {
    let mut docs: Vec<usize> = (0..corpus.documents.len()).filter(|&d| corpus.documents[d].split.as_deref() == Some(split)).collect();
    for q in corpus.queries.iter().filter(|q| q.split.as_deref() == Some(split)) {
        for d in corpus.query_docs(q).into_iter().chain(corpus.gold(q).iter().map(|g| g.doc)) {
            if let Some(other) = corpus.documents[d].split.as_deref().filter(|&s| s != split) {
                bail!(
                    "query {:?} of split {split:?} is asked against document {:?} of split {other:?}: a training query reads \
                     only documents of its own split (fix the corpus's splits)",
                    q.id,
                    corpus.documents[d].id
                );
            }
            docs.push(d);
        }
    }
    docs.sort_unstable();
    docs.dedup();
    Ok(docs)
}

/// The key runs before stop 89 recorded ([`content_key`] since): the text with its runs of whitespace read
/// as one space and its ends trimmed.
pub fn text_key(text: &str) -> String {
    key(&("normalised", text.split_whitespace().collect::<Vec<_>>().join(" ")))
}

/// The key runs recorded before whitespace was normalised: the exact text.
pub fn exact_key(text: &str) -> String {
    key(&text)
}

/// A text's words as contamination compares them: Unicode NFKC, soft hyphens dropped, a word hyphenated
/// across a line end joined (`con-\ntract`), lower case, the maximal runs of letters and digits.
pub fn words(text: &str) -> Vec<String> {
    let folded: String = text.nfkc().filter(|&c| c != '\u{ad}').collect::<String>().to_lowercase();
    let chars: Vec<char> = folded.chars().collect();
    let mut joined = String::with_capacity(folded.len());
    let mut i = 0;
    while i < chars.len() {
        // "x-" then spaces, one line end, spaces, then a letter: the hyphen and the break are dropped.
        if chars[i] == '-' && i > 0 && chars[i - 1].is_alphabetic() {
            let mut j = i + 1;
            while j < chars.len() && matches!(chars[j], ' ' | '\t' | '\r') {
                j += 1;
            }
            if j < chars.len() && chars[j] == '\n' {
                j += 1;
                while j < chars.len() && matches!(chars[j], ' ' | '\t' | '\r') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_alphabetic() {
                    i = j;
                    continue;
                }
            }
        }
        joined.push(chars[i]);
        i += 1;
    }
    joined.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_owned).collect()
}

/// A text's content key: its [`words`], so that a re-extracted document or a re-cased, re-punctuated
/// question has the key of the original.
pub fn content_key(text: &str) -> String {
    key_of_words(&words(text))
}

fn key_of_words(words: &[String]) -> String {
    key(&("words", words.join(" ")))
}

/// The words of a shingle, and one in how many shingles a sketch keeps.
pub const SHINGLE_WORDS: usize = 8;
pub const SAMPLE_ONE_IN: u64 = 16;
/// The fewest sampled shingles a containment is estimated from.
pub const MIN_SAMPLES: usize = 4;

/// A document's sketch: the hashes (upper 32 bits of FNV-1a over the shingle's words) of its 8-word
/// shingles whose hash is 0 modulo [`SAMPLE_ONE_IN`], sorted and distinct. The same sampling for every
/// document, so the shared samples of two sketches estimate the shingles they share.
pub fn sketch(text: &str) -> Vec<u32> {
    sketch_of_words(&words(text))
}

fn sketch_of_words(words: &[String]) -> Vec<u32> {
    let mut samples: Vec<u32> = words.windows(SHINGLE_WORDS).map(fnv1a).filter(|h| h % SAMPLE_ONE_IN == 0).map(|h| (h >> 32) as u32).collect();
    samples.sort_unstable();
    samples.dedup();
    samples
}

fn fnv1a(words: &[String]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, w) in words.iter().enumerate() {
        for b in (if i > 0 { " " } else { "" }).bytes().chain(w.bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The larger containment of two sketches, either way (shared samples over the smaller side that has at
/// least [`MIN_SAMPLES`]); 0 when neither has.
pub fn containment(a: &[u32], b: &[u32]) -> f64 {
    either_way(shared(a, b), a.len(), b.len())
}

/// `shared` samples over the smaller of two sketches' sizes that has at least [`MIN_SAMPLES`].
fn either_way(shared: usize, a: usize, b: usize) -> f64 {
    [a, b].into_iter().filter(|&n| n >= MIN_SAMPLES).map(|n| shared as f64 / n as f64).fold(0.0, f64::max)
}

fn shared(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => (n, i, j) = (n + 1, i + 1, j + 1),
        }
    }
    n
}

/// A document's [`content_key`] and [`sketch`], its words read once.
fn key_and_sketch(text: &str) -> (String, Vec<u32>) {
    let words = words(text);
    (key_of_words(&words), sketch_of_words(&words))
}

/// What a training read, as its model records it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrainedOn {
    /// The documents' [`content_key`]s, sorted.
    pub documents: Vec<String>,
    /// The questions' [`content_key`]s, sorted.
    pub questions: Vec<String>,
    /// The documents' [`sketch`]es, one a document read, in corpus order (not `documents`' order).
    pub sketches: Vec<Vec<u32>>,
}

/// What a method reading `splits` trains on (the validation split's included: every trainer reads it to
/// choose its epoch): the keys and sketches of its documents, the keys of its questions.
pub fn trained_on(corpus: &Corpus, splits: &[(&str, String)]) -> anyhow::Result<TrainedOn> {
    let read: Vec<&str> = splits.iter().map(|(_, s)| s.as_str()).chain([VALIDATION]).collect();
    let mut docs = Vec::new();
    for split in &read {
        docs.extend(read_documents(corpus, split)?);
    }
    docs.sort_unstable();
    docs.dedup();
    let sorted = |mut keys: Vec<String>| -> Vec<String> {
        keys.sort();
        keys.dedup();
        keys
    };
    // One sketch a document, an empty one for a text too short to sample: an empty list means a record made
    // before sketches were kept.
    let (documents, sketches): (Vec<String>, Vec<Vec<u32>>) = docs.iter().map(|&d| key_and_sketch(&corpus.documents[d].text)).unzip();
    let documents = sorted(documents);
    let questions = corpus.queries.iter().filter(|q| q.split.as_deref().is_some_and(|s| read.contains(&s))).map(|q| content_key(&q.text)).collect();
    Ok(TrainedOn { documents, questions: sorted(questions), sketches })
}

/// What [`check_models`] could not check: models that recorded no documents (made before arbor kept
/// them), and models that recorded no sketches (compared by text only).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unchecked {
    pub models: Vec<String>,
    pub near_duplicates: Vec<String>,
}

/// Under `evaluate --from`: refuses a model of `earlier` that trained on a document of `evaluated` or a
/// question of `questions` (the scored ones): the same words, or (documents) a near-duplicate at
/// `limits.near_duplicate`. Records written before a key was kept are compared by the keys they hold.
pub fn check_models(
    models: &[TrainedModel],
    earlier: &EarlierRun,
    corpus: &Corpus,
    evaluated: &[usize],
    questions: &[&str],
    limits: &Contamination,
) -> anyhow::Result<Unchecked> {
    let mut scored: HashSet<String> = HashSet::new();
    let mut sketches: Vec<Vec<u32>> = Vec::with_capacity(evaluated.len());
    for text in evaluated.iter().map(|&d| corpus.documents[d].text.as_str()) {
        let (content, sketch) = key_and_sketch(text);
        scored.extend([content, text_key(text), exact_key(text)]);
        sketches.push(sketch);
    }
    let asked: HashSet<String> = questions.iter().flat_map(|q| [content_key(q), text_key(q)]).collect();
    let mut unchecked = Unchecked::default();
    for m in models {
        let Some(from) = earlier.models.iter().find(|e| e.dir == m.dir) else { continue };
        if from.trained_on.is_empty() {
            unchecked.models.push(m.method.clone());
            continue;
        }
        let overlap = from.trained_on.iter().filter(|k| scored.contains(*k)).count();
        let questions = from.trained_on_questions.iter().filter(|k| asked.contains(*k)).count();
        if overlap > 0 || questions > 0 {
            bail!(
                "--from {}: the model of {:?} trained on {overlap} of the documents and {questions} of the questions this run scores \
                 (the same words, after Unicode NFKC, case, punctuation and line-end hyphens): score it on documents and questions its \
                 training never read",
                earlier.dir.display(),
                m.method
            );
        }
        if from.trained_on_sketches.is_empty() {
            unchecked.near_duplicates.push(m.method.clone());
            continue;
        }
        if let Some((d, c)) = nearest_duplicate(&sketches, &from.trained_on_sketches)
            && c >= limits.near_duplicate
        {
            bail!(
                "--from {}: the model of {:?} trained on a near-duplicate of the scored document {:?} ({:.0} % of the 8-word \
                 shingles of one of the two are in the other; contamination.near_duplicate is {}): score it on documents its \
                 training never read",
                earlier.dir.display(),
                m.method,
                corpus.documents[evaluated[d]].id,
                c * 100.0,
                limits.near_duplicate
            );
        }
    }
    Ok(unchecked)
}

/// The scored document (by position in `scored`) closest to any trained-on one, and that containment.
fn nearest_duplicate(scored: &[Vec<u32>], trained: &[Vec<u32>]) -> Option<(usize, f64)> {
    let mut holders: HashMap<u32, Vec<usize>> = HashMap::new();
    for (t, s) in trained.iter().enumerate() {
        for &h in s {
            holders.entry(h).or_default().push(t);
        }
    }
    let mut best: Option<(usize, f64)> = None;
    for (d, s) in scored.iter().enumerate() {
        let mut shared: HashMap<usize, usize> = HashMap::new();
        for h in s {
            for &t in holders.get(h).into_iter().flatten() {
                *shared.entry(t).or_default() += 1;
            }
        }
        for (t, n) in shared {
            let c = either_way(n, s.len(), trained[t].len());
            if best.is_none_or(|(_, b)| c > b) {
                best = Some((d, c));
            }
        }
    }
    best
}
