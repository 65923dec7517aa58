//! Content-addressed artefacts that runs share: unit and query embeddings, trained models, trees. Each
//! lives under `<root>/<kind>-<key>`, where the key is a digest of everything it was computed from, never
//! of a path or a position:
//!
//! | artefact | key |
//! |---|---|
//! | `units-<encoder>/<doc>-<texts>.vec` | the encoder's fingerprint (weights, tokenizer, config, token limit, kernel); the document key and the texts |
//! | `units-<encoder, trained model>/<doc>-<texts>.vec` | the encoder's fingerprint and the folder key of the trained model whose fine-tuned encoder pooled them; the document key and the texts |
//! | `queries-<key>.vec` | the encoder's fingerprint and the query texts |
//! | `train-<key>/` | the encoder, the method's settings, the training documents' keys and the training queries |
//! | `trees-<key>/<doc>.tree` | the encoder, the method's index settings, the trained model's key; the document key |
//! | `chunks-<key>/<doc>-<texts>.vec` | the encoder and a method's own chunking; the document key and the texts encoded |
//! | `raptor-<key>/<doc>.raptor` | the encoder, RAPTOR's tree settings, the summariser (a file's content; an endpoint's model, address and prompt); the document key |
//!
//! Every vector file also names a digest of the very texts it encodes (a chunk's text with whatever a
//! method writes before it: AutoContext's header, a summary), so a changed summariser or header can never
//! read back vectors of other texts, whatever the folder's key holds.
//!
//! A document key ([`Keys`]) digests the document's text and sections, the unit rules and the encoder
//! (its tokenizer cuts units to `max_tokens`). So an edited document gets new vectors and a new tree while
//! its unedited neighbours are reused, and a changed encoder or training set changes every key downstream.
//! Batch size is left out: it changes the order of floating-point sums, not what is computed.
//!
//! A run keeps its artefacts in its own folder; a sweep points all of its runs at one shared folder, so runs
//! that differ only in retrieval settings train once and index once. Files are written atomically, so an
//! interrupted run leaves complete files only, and the next one picks up what is there.
//!
//! Every kind of artefact has a version of the code that makes it (crate::artefact), part of its folder's key:
//! bumped when that code changes (tests/artefact_versions/ fails until it is), so artefacts made by older
//! code are never read back. Every file carries a checksum checked on read (arbor_files): a damaged or
//! cut-short artefact is rebuilt with a warning, never read silently and never a hard stop.
//!
//! For every per-document artefact, `build-times/<kind>-<key>/<file>.ms` records how long it took to build
//! (apart from the artefacts, whose folders hold nothing else), so a method's index time per document is
//! what building it cost even when a later run reads it back ([`BuildTime`]); an artefact without that
//! record (written before it existed) makes the time unknown, never zero.

use arbor_models::pooling::Role;
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use arbor_datasets::{Corpus, UnitConfig};
use arbor_eval::LeafIndex;
use arbor_eval::formats::vectors_io;
use arbor_eval::index::Chunks;
use arbor_files::atomic_write;
use arbor_models::{DefaultBackend, SentenceEncoder};
use serde::Serialize;
use sha2::{Digest, Sha256};

pub use crate::artefact::Artefact;
use crate::progress::bar;

pub struct Cache {
    pub root: PathBuf,
    /// What the artefacts read back so far took to build.
    reused: Cell<BuildTime>,
    /// Artefacts found damaged and rebuilt so far.
    rebuilt: Cell<usize>,
}

/// The recorded build time of artefacts read back from the cache.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BuildTime {
    /// Milliseconds, summed over the artefacts whose time is recorded.
    pub ms: f64,
    /// How many artefacts were read back with no recorded time.
    pub unrecorded: usize,
}

impl std::ops::Add for BuildTime {
    type Output = BuildTime;
    fn add(self, other: BuildTime) -> BuildTime {
        BuildTime { ms: self.ms + other.ms, unrecorded: self.unrecorded + other.unrecorded }
    }
}

impl std::ops::Sub for BuildTime {
    type Output = BuildTime;
    fn sub(self, earlier: BuildTime) -> BuildTime {
        BuildTime { ms: self.ms - earlier.ms, unrecorded: self.unrecorded - earlier.unrecorded }
    }
}

/// A short hex digest of `parts` (their JSON form).
pub fn key(parts: &impl Serialize) -> String {
    let mut hasher = Sha256::new();
    serde_json::to_writer(HashWriter(&mut hasher), parts).expect("settings serialise");
    crate::source_state::short_hex(&hasher.finalize())
}

/// A digest of a whole corpus as loaded (every document and query): what a run report names its data by.
pub fn corpus_digest(corpus: &Corpus) -> String {
    key(&(&corpus.documents, &corpus.queries))
}

/// Feeds serde_json's output into a hasher, so large inputs are digested without a copy.
struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The content keys of a run's inputs.
#[derive(Debug, Clone)]
pub struct Keys {
    /// The encoder's fingerprint.
    pub encoder: String,
    /// Each corpus document's key: its text and sections, the unit rules, the encoder.
    pub docs: Vec<String>,
}

impl Keys {
    /// `units` are the resolved unit rules (`max_tokens` set).
    pub fn new(corpus: &Corpus, units: &UnitConfig, encoder: &str) -> Self {
        let docs = corpus.documents.iter().map(|d| key(&(encoder, units, &d.text, &d.sections))).collect();
        Keys { encoder: encoder.to_owned(), docs }
    }

    /// One key for a set of documents (in the given order).
    pub fn of_docs(&self, docs: &[usize]) -> String {
        key(&docs.iter().map(|&d| &self.docs[d]).collect::<Vec<_>>())
    }
}

impl Cache {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Cache { root: root.into(), reused: Cell::new(BuildTime::default()), rebuilt: Cell::new(0) }
    }

    /// How many artefacts were found damaged (or cut short) and rebuilt so far.
    pub fn rebuilt(&self) -> usize {
        self.rebuilt.get()
    }

    /// Says, on one warning line, that the artefact at `path` cannot be read back and is being rebuilt.
    fn rebuilding(&self, path: &Path, why: &dyn std::fmt::Display) {
        eprintln!("warning: {}: {why}: rebuilding it", path.display());
        self.rebuilt.set(self.rebuilt.get() + 1);
    }

    /// The build time of every artefact read back so far (a running total: callers take differences).
    pub fn reused(&self) -> BuildTime {
        self.reused.get()
    }

    /// Where the build time of `artefact` (a file in one of the cache's folders) is recorded:
    /// `build-times/<folder>/<file>.ms`.
    fn build_time_path(&self, artefact: &Path) -> PathBuf {
        let relative = artefact.strip_prefix(&self.root).unwrap_or(artefact);
        let mut name = self.root.join("build-times").join(relative).into_os_string();
        name.push(".ms");
        PathBuf::from(name)
    }

    /// Records that `artefact` took `ms` to build.
    fn record_build(&self, artefact: &Path, ms: f64) -> anyhow::Result<()> {
        let path = self.build_time_path(artefact);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        atomic_write(&path, format!("{ms}\n").as_bytes()).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Adds the build time recorded beside `artefact`, just read back, to the running total.
    fn note_reused(&self, artefact: &Path) {
        let recorded = std::fs::read_to_string(self.build_time_path(artefact)).ok().and_then(|s| s.trim().parse::<f64>().ok());
        let mut total = self.reused.get();
        match recorded {
            Some(ms) => total.ms += ms,
            None => total.unrecorded += 1,
        }
        self.reused.set(total);
    }

    /// The artefact at `path`: read back with `load` if it is there and sound, else made with `build`
    /// (a damaged one with a warning), saved with `save` and its build time recorded beside it.
    pub fn load_or_build<T>(
        &self,
        path: &Path,
        load: impl FnOnce(&Path) -> anyhow::Result<T>,
        build: impl FnOnce() -> anyhow::Result<T>,
        save: impl FnOnce(&T, &Path) -> anyhow::Result<()>,
    ) -> anyhow::Result<T> {
        if path.exists() {
            match load(path) {
                Ok(value) => {
                    self.note_reused(path);
                    return Ok(value);
                }
                Err(e) => self.rebuilding(path, &e),
            }
        }
        let start = Instant::now();
        let value = build()?;
        save(&value, path)?;
        self.record_build(path, start.elapsed().as_secs_f64() * 1e3)?;
        Ok(value)
    }

    /// The folder of one artefact, `<folder>-<key of the code's version and key>`, created if missing.
    pub fn dir(&self, kind: Artefact, key: &str) -> anyhow::Result<PathBuf> {
        let dir = self.root.join(format!("{}-{}", kind.folder(), versioned(kind, key)));
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(dir)
    }

    /// The encoder's vector of every shared leaf unit of `docs`, by global unit index (other units stay
    /// empty), in `units-<encoder>/`.
    pub fn unit_embeddings(
        &self,
        encoder: &SentenceEncoder<DefaultBackend>,
        corpus: &Corpus,
        index: &LeafIndex,
        keys: &Keys,
        docs: &[usize],
        batch: usize,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        let dir = self.dir(Artefact::Units, &key(&keys.encoder))?;
        self.chunk_embeddings(&dir, &|t, p| encoder.embed(t, batch, p), &index.units, keys, docs, &|c| index.units.input(corpus, c).into_owned())
    }

    /// The vector `embed` gives `text(c)` for every chunk `c` of `docs` (others stay empty), saved in `dir`
    /// (whose name keys the chunking and the encoder's weights) per document under its key and a digest of
    /// its chunks' texts; documents already saved are read back, the rest are encoded a few at a time, each
    /// saved as soon as it is done. `embed` takes texts and a progress counter.
    pub fn chunk_embeddings(
        &self,
        dir: &Path,
        embed: &dyn Fn(&[&str], &mut dyn FnMut(usize)) -> Vec<Vec<f32>>,
        chunks: &Chunks,
        keys: &Keys,
        docs: &[usize],
        text: &dyn Fn(usize) -> String,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut names = vec![String::new(); keys.docs.len()];
        for &d in docs {
            let texts: Vec<String> = chunks.by_doc[d].clone().map(text).collect();
            names[d] = format!("{}-{}.vec", keys.docs[d], key(&texts));
        }
        let path = |d: usize| dir.join(&names[d]);
        let mut out = vec![Vec::new(); chunks.len()];
        let mut missing = Vec::new();
        for &d in docs {
            let range = chunks.by_doc[d].clone();
            if !path(d).exists() {
                missing.push(d);
                continue;
            }
            match vectors_io::load(&path(d)) {
                Ok(rows) if rows.len() == range.len() => {
                    for (c, v) in range.zip(rows) {
                        out[c] = v;
                    }
                    self.note_reused(&path(d));
                }
                Ok(rows) => {
                    self.rebuilding(&path(d), &format!("it holds {} vectors for {} chunks", rows.len(), range.len()));
                    missing.push(d);
                }
                Err(e) => {
                    self.rebuilding(&path(d), &e);
                    missing.push(d);
                }
            }
        }
        let total: usize = missing.iter().map(|&d| chunks.by_doc[d].len()).sum();
        if total == 0 {
            return Ok(out);
        }
        let pb = bar(total, "embedding chunks");
        for group in missing.chunks(8) {
            let start = Instant::now();
            let ids: Vec<usize> = group.iter().flat_map(|&d| chunks.by_doc[d].clone()).collect();
            let texts: Vec<String> = ids.iter().map(|&c| text(c)).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = embed(&refs, &mut |n| pb.inc(n as u64));
            // The group's time, shared among its documents by their number of chunks.
            let per_chunk = start.elapsed().as_secs_f64() * 1e3 / ids.len().max(1) as f64;
            for (c, v) in ids.into_iter().zip(vectors) {
                out[c] = v;
            }
            for &d in group {
                vectors_io::save(&out[chunks.by_doc[d].clone()], &path(d))?;
                self.record_build(&path(d), per_chunk * chunks.by_doc[d].len() as f64)?;
            }
        }
        pb.finish_and_clear();
        Ok(out)
    }

    /// The encoder's vectors of `texts` (queries), saved as `queries-<key>.vec` under a key of the encoder
    /// and the texts; `what` names them on the progress bar.
    pub fn text_embeddings(
        &self,
        encoder: &SentenceEncoder<DefaultBackend>,
        role: Role,
        batch: usize,
        texts: &[&str],
        what: &str,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        // The role's prompt is read with the texts (none by default, which keeps the key it had before prompts).
        let key = match encoder.prompt(role) {
            "" => key(&(&encoder.fingerprint, texts)),
            prompt => key(&(&encoder.fingerprint, prompt, texts)),
        };
        let path = self.root.join(format!("queries-{}.vec", versioned(Artefact::Queries, &key)));
        if path.exists() {
            match vectors_io::load(&path) {
                Ok(rows) if rows.len() == texts.len() => return Ok(rows),
                Ok(rows) => self.rebuilding(&path, &format!("it holds {} vectors for {} texts", rows.len(), texts.len())),
                Err(e) => self.rebuilding(&path, &e),
            }
        }
        let pb = bar(texts.len(), &format!("embedding {what}"));
        let vectors = encoder.embed_as(encoder.kernel(), role, texts, batch, &mut |n| pb.inc(n as u64));
        pb.finish_and_clear();
        std::fs::create_dir_all(&self.root)?;
        vectors_io::save(&vectors, &path)?;
        Ok(vectors)
    }
}

/// The versions recorded against their code's digest (tests/artefact_versions writes it).
const RECORDED: &str = include_str!("../artefact-versions.txt");

/// The key of an artefact of `kind` under `key`, with the version of the code that makes it. A version
/// not yet recorded (code between a bump and its bless, when the version's code is still moving) keys its
/// artefacts by the exact sources too, so that two codes never share a version's artefacts.
fn versioned(kind: Artefact, key_: &str) -> String {
    versioned_under(kind, key_, arbor_models::backend::NAME, RECORDED, env!("ARBOR_SOURCES"))
}

/// `versioned` with its parts given: the backend that computes the numbers is part of every key (the
/// flex build's bf16 kernels, ndarray's and CUDA's give other floats), so two builds share no artefact.
pub fn versioned_under(kind: Artefact, key_: &str, backend: &str, lock: &str, sources: &str) -> String {
    let version = kind.version().to_string();
    let recorded = lock.lines().filter(|l| !l.starts_with('#')).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() == 3 && f[0] == kind.name() && f[1] == version
    });
    match recorded {
        true => key(&(kind.name(), kind.version(), key_, backend)),
        false => key(&(kind.name(), kind.version(), key_, backend, "not recorded: the sources", sources)),
    }
}
