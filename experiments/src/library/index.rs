//! `arbor index DIR --into INDEX`: brings the index in line with the folder. New files are added, files
//! whose text changed (by SHA-256 of title and text) are indexed again, files gone from the folder are
//! removed; nothing else is touched. Each document is cut into leaf units (a new index: the experiments'
//! default rule, at most N sentences of a paragraph, cut to the encoder's limit, a cut table's pieces read
//! after its head, `super::unit_rule`; an index built before keeps the plain rule it holds), encoded, and
//! written in one transaction,
//! so a kill loses at most the document in flight. With `--trees` each document's SproutRAG tree (the
//! default row's: token attention, uniform head weights) is built and stored with it. `--remove KEY` removes one document (or every
//! document of a JSONL file). Unreadable, empty and unknown files are listed by path and counted.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use arbor_datasets::loaders::folder::{FileDocument, read_folder};
use arbor_datasets::{Corpus, Document, TokenStarts, UnitConfig};
use arbor_eval::LeafIndex;
use arbor_models::{DefaultBackend, SentenceEncoder};
use arbor_store::{DocumentRow, Meta, Store, UnitRow};
use clap::Parser;
use sha2::{Digest, Sha256};

use super::approximate::{self, Approximating};
use super::structures::{Builder, Kept, RAPTOR, TREES};
use super::trained::Tuned;
use super::{EncoderArgs, rule_name, unit_rule};
use crate::methods::MethodSpec;
use crate::methods::document_summary::header_name;
use crate::provenance::utc_stamp;

#[derive(Debug, Parser)]
pub struct IndexArgs {
    /// The folder of documents (.txt, .md, .html, .jsonl), read recursively
    pub dir: Option<PathBuf>,
    /// The index file (SQLite), created if missing
    #[arg(long)]
    pub into: PathBuf,
    /// Remove this document (its key as `arbor query` prints it: the path below the folder) and stop
    #[arg(long)]
    pub remove: Vec<String>,
    /// At most this many sentences of one paragraph per unit (a new index; default 2, the experiments'
    /// default; with --from, the run's rule); an existing index keeps the rule it was built with
    #[arg(long)]
    pub max_sentences: Option<usize>,
    /// Also build SproutRAG's attention-guided tree of every document (the untrained default row:
    /// token attention, uniform head weights), for `arbor query --method sproutrag`; about doubles the
    /// indexing time. Given to an index without trees, it builds the trees of the documents it holds
    /// (from their stored units and vectors); from then on the index keeps trees.
    #[arg(long)]
    pub trees: bool,
    /// Also build RAPTOR's tree of every document (the default `Raptor(())` row: 100-token leaves packed
    /// from sentences, clusters by PCA + Gaussian mixtures, extractive summaries), for `arbor query
    /// --method raptor`. Given to an index without them, it builds them for the documents it holds.
    #[arg(long)]
    pub raptor: bool,
    /// Embed with a trained model of this run folder (a `train` run), as the run's row embeds: a dense
    /// row's fine-tuned encoder or map over the frozen one, the student distilled from the reranker
    /// (`Distill`), a fine-tuned SAC's encoder over every unit read after its document's summary (written
    /// for each new document as the run wrote it), a trained SproutRAG row's vectors and trees (its SLLM or
    /// learned head weights), or a reranked row's reranker over the pretrained encoder's vectors. Fixed when
    /// the index is created.
    #[arg(long)]
    pub from: Option<PathBuf>,
    /// With --from: the row whose model to use (a part of its name: "Dense", "SAC", "distilled",
    /// "SproutRAG trained", "+ reranker")
    #[arg(long, default_value = "Dense")]
    pub row: String,
    /// Keep an approximate nearest-neighbour index beside the index (INDEX.hnsw, an HNSW graph), through
    /// which `arbor query` searches unless `--exact`: auto from 100,000 units, where exact search is past
    /// 20 ms a question on 2 cores; kept in line with every later `arbor index`. Without a folder
    /// (`arbor index --into INDEX --approximate on`), only the approximate index is brought in line
    #[arg(long, value_enum)]
    pub approximate: Option<Approximating>,
    #[command(flatten)]
    pub encoder: EncoderArgs,
}

/// What one `arbor index` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
    pub unchanged: usize,
    pub skipped: usize,
    /// Units and words encoded.
    pub units: usize,
    pub words: usize,
    /// Trees built for documents already stored without one.
    pub trees: usize,
}

pub fn index(args: &IndexArgs) -> anyhow::Result<()> {
    let start = Instant::now();
    let mut store = Store::open(&args.into)?;
    if !args.remove.is_empty() {
        for key in &args.remove {
            let n = remove(&mut store, key)?;
            println!("removed {key} ({n} document{}) from {}", if n == 1 { "" } else { "s" }, args.into.display());
        }
        return keep_approximate(args, &store);
    }
    if args.dir.is_none() && args.approximate.is_some() {
        return keep_approximate(args, &store);
    }
    let dir = args.dir.as_deref().context("name the folder to index (arbor index DIR --into INDEX), or --remove KEY")?;
    let out = update(&mut store, dir, args)?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{} added, {} changed, {} removed, {} unchanged, {} skipped: {} ({} documents); {} units, {} words encoded, {} trees added to stored documents, in {secs:.1} s ({:.0} words/s)",
        out.added,
        out.changed,
        out.removed,
        out.unchanged,
        out.skipped,
        args.into.display(),
        store.list()?.len(),
        out.units,
        out.words,
        out.trees,
        out.words as f64 / secs.max(1e-9)
    );
    keep_approximate(args, &store)
}

/// The approximate index brought in line with the stored units, as `--approximate` asks.
fn keep_approximate(args: &IndexArgs, store: &Store) -> anyhow::Result<()> {
    if store.meta()?.is_some()
        && let Some(done) = approximate::keep(&args.into, store, args.approximate.unwrap_or_default())?
    {
        println!("{done}");
    }
    Ok(())
}

/// Removes `key`, or every `key#id` of a JSONL file; none is an error naming the index's documents.
fn remove(store: &mut Store, key: &str) -> anyhow::Result<usize> {
    let keys: Vec<String> = store.list()?.into_iter().map(|l| l.key).filter(|k| k == key || k.starts_with(&format!("{key}#"))).collect();
    if keys.is_empty() {
        let held: Vec<String> = store.list()?.into_iter().take(5).map(|l| l.key).collect();
        anyhow::bail!("the index holds no document {key:?} (keys are paths below the indexed folder, e.g. {})", held.join(", "));
    }
    for k in &keys {
        store.remove(k)?;
    }
    Ok(keys.len())
}

/// Brings `store` in line with the folder `dir`.
pub fn update(store: &mut Store, dir: &Path, args: &IndexArgs) -> anyhow::Result<Outcome> {
    let (docs, skipped) = read_folder(dir).with_context(|| format!("cannot read the folder {}", dir.display()))?;
    for s in &skipped {
        eprintln!("skipped {}: {}", s.file.display(), s.reason);
    }
    let held_rule = held_rule(store, args.max_sentences)?;
    let held: HashMap<String, String> = store.list()?.into_iter().map(|l| (l.key, l.digest)).collect();
    let mut out = Outcome { skipped: skipped.len(), ..Outcome::default() };
    let present: HashSet<&str> = docs.iter().map(|d| d.key.as_str()).collect();
    let gone: Vec<&String> = held.keys().filter(|k| !present.contains(k.as_str())).collect();
    for key in gone {
        store.remove(key)?;
        out.removed += 1;
    }
    let todo: Vec<(&FileDocument, String)> = docs.iter().map(|d| (d, digest(d))).filter(|(d, dg)| held.get(&d.key) != Some(dg)).collect();
    out.unchanged = docs.len() - todo.len();
    let asked = Kept { trees: args.trees, raptor: args.raptor };
    let missing = asked.and_held(store.meta()?.as_ref()).structures().into_iter().map(|s| store.without(s)).collect::<anyhow::Result<Vec<_>>>()?;
    if todo.is_empty() && missing.iter().all(Vec::is_empty) {
        return Ok(out);
    }
    let encoder = args.encoder.load()?;
    let rule = match (held_rule, &args.from) {
        (Some(held), _) => held,
        (None, Some(run)) => run_rule(run, args.max_sentences, &encoder)?,
        (None, None) => unit_rule(args.max_sentences.unwrap_or(UnitConfig::default().max_sentences), &encoder),
    };
    let tuned = args.from.as_deref().map(|run| Tuned::from_run(run, &args.row, &encoder)).transpose()?;
    // A trained SproutRAG row's trees come with its vectors; the untrained row's read the pretrained encoder's.
    let row_trees = tuned.as_ref().and_then(|t| t.record.trees()).map(|row| row.label());
    // A reranked row's index holds the pretrained encoder's vectors, over which the untrained trees are built.
    let pretrained = tuned.as_ref().is_none_or(|t| t.record.reranks());
    anyhow::ensure!(
        !(args.trees && !pretrained && row_trees.is_none()),
        "--trees builds the untrained row's trees over the pretrained encoder's vectors: not with --from a dense row \
         (--from a trained SproutRAG row keeps that row's trees)"
    );
    anyhow::ensure!(
        !args.raptor || pretrained,
        "--raptor embeds with the pretrained encoder, as the experiment row does: not with --from a row that embeds otherwise"
    );
    let asked = Kept { trees: asked.trees || row_trees.is_some(), ..asked };
    let model = tuned.as_ref().map(|t| serde_json::to_string(&t.record)).transpose()?.unwrap_or_default();
    let dim = tuned.as_ref().map_or(encoder.dim(), |t| t.dim(&encoder));
    let kept = check_meta(store, (&encoder, dim), &rule, (asked, row_trees.unwrap_or_else(|| TREES.to_owned())), model)?;
    let batch = args.encoder.batch_size.max(1);
    let builder = Builder { encoder: &encoder, rule: &rule, batch };
    let embed = |doc: (&Corpus, &LeafIndex, &str), texts: &[&str]| match &tuned {
        Some(t) => t.document(&encoder, doc, texts, batch),
        None => Ok((encoder.embed(texts, batch, &mut |_| {}), None)),
    };
    let pb = crate::progress::bar(todo.len(), "indexing");
    for (doc, digest) in todo {
        let mut new = encode(doc, digest, &encoder, &embed, &rule)?;
        builder.complete(&mut new, kept)?;
        out.units += new.units.len();
        out.words += doc.text.split_whitespace().count();
        store.put(&new, &utc_stamp(std::time::SystemTime::now()))?;
        if held.contains_key(&doc.key) {
            out.changed += 1
        } else {
            out.added += 1
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    for s in kept.structures() {
        out.trees += builder.add_missing(store, s)?;
    }
    Ok(out)
}

/// The unit rule `store` holds, if it holds documents: an index built before the default holds the plain
/// rule and keeps it (said on standard error); `max_sentences`, if given, must be its.
fn held_rule(store: &Store, max_sentences: Option<usize>) -> anyhow::Result<Option<UnitConfig>> {
    let Some(meta) = store.meta()? else { return Ok(None) };
    let held = crate::stored::unit_rule(&meta)?;
    if let Some(n) = max_sentences.filter(|&n| n != held.max_sentences) {
        anyhow::bail!("this index cuts units of at most {} sentences, not {n}: index into a new file", held.max_sentences);
    }
    if held.context.is_none() {
        eprintln!("this index holds {}; index into a new file for the default", rule_name(&held));
    }
    Ok(Some(held))
}

/// The unit rule of the run a new index embeds `--from`: its experiment's, which its model was trained and
/// scored on, so that the index ranks as the row did; `max_sentences`, if given, must be its.
fn run_rule(run: &Path, max_sentences: Option<usize>, encoder: &SentenceEncoder<DefaultBackend>) -> anyhow::Result<UnitConfig> {
    let units = crate::experiment::Experiment::load(&run.join("experiment.ron"))?.units;
    if let Some(n) = max_sentences.filter(|&n| n != units.max_sentences) {
        anyhow::bail!("the run {} cut units of at most {} sentences, not {n}: its models serve that rule", run.display(), units.max_sentences);
    }
    Ok(crate::leaves::unit_rule(&units, encoder))
}

/// SHA-256 of a document's title (after its length) and text, in hex.
fn digest(doc: &FileDocument) -> String {
    let mut h = Sha256::new();
    h.update((doc.title.len() as u64).to_le_bytes());
    h.update(doc.title.as_bytes());
    h.update(doc.text.as_bytes());
    arbor_files::hex(&h.finalize())
}

/// Records the encoder (and the width of the vectors stored), unit rule and trees (and how the SproutRAG
/// trees are made, `trees`) in a new index; an index built with other ones is an error. Whether the index
/// keeps trees.
fn check_meta(
    store: &mut Store,
    (encoder, dim): (&SentenceEncoder<DefaultBackend>, usize),
    rule: &UnitConfig,
    (asked, trees): (Kept, String),
    model: String,
) -> anyhow::Result<Kept> {
    let units = serde_json::to_string(rule)?;
    let named = |on: bool, name: &str| if on { name.to_owned() } else { String::new() };
    let here = Meta {
        arbor_version: env!("CARGO_PKG_VERSION").into(),
        encoder: encoder.fingerprint.clone(),
        units,
        dim,
        trees: named(asked.trees, &trees),
        raptor: named(asked.raptor, RAPTOR),
        model,
    };
    let Some(m) = store.meta()? else {
        store.set_meta(&here)?;
        return Ok(asked);
    };
    if m.encoder != here.encoder {
        anyhow::bail!("this index was built by encoder {}, not the one loaded now ({}): index into a new file", m.encoder, here.encoder)
    }
    anyhow::ensure!(m.units == here.units, "this index cuts units by {}, not {}: index into a new file", m.units, here.units);
    if m.model != here.model {
        let name = |m: &str| if m.is_empty() { "the encoder itself".to_owned() } else { m.to_owned() };
        anyhow::bail!("this index embeds with {}, not {}: index into a new file", name(&m.model), name(&here.model))
    }
    // Trees asked of an index without them: from now on it keeps them (`Builder::add_missing` builds them).
    let kept = asked.and_held(Some(&m));
    let updated = Meta { trees: named(kept.trees, &trees), raptor: named(kept.raptor, RAPTOR), ..m.clone() };
    if updated != m {
        store.set_meta(&updated)?;
    }
    Ok(kept)
}

/// What a run over the same text names `doc` (a summary's header starts with it): its title, else its id,
/// which for a line of a JSONL corpus is the line's `id` (the key without `path#`).
fn run_name(doc: &FileDocument) -> &str {
    let file = doc.file.file_name().map(|f| format!("{}#", f.to_string_lossy()));
    let id = file.and_then(|f| doc.key.find(&f).map(|at| &doc.key[at + f.len()..]));
    header_name(&doc.title, id.unwrap_or(&doc.key))
}

/// What `embed` makes of a document: its units' vectors, and the merges of a trained SproutRAG row's tree.
type Embedded = (Vec<Vec<f32>>, Option<Vec<(u32, u32)>>);

/// One document cut into units and encoded (`embed`: the units' vectors, and a trained row's tree, from the
/// document, its units and its name, and their inputs), ready to store.
fn encode(
    doc: &FileDocument,
    digest: String,
    encoder: &SentenceEncoder<DefaultBackend>,
    embed: &dyn Fn((&Corpus, &LeafIndex, &str), &[&str]) -> anyhow::Result<Embedded>,
    rule: &UnitConfig,
) -> anyhow::Result<DocumentRow> {
    let one = Document { id: doc.key.clone(), title: doc.title.clone(), text: doc.text.clone(), sections: Vec::new(), split: None };
    let corpus = Corpus::new(vec![one], Vec::new(), &doc.file)?;
    let mut tokens = encoder.token_starts(&[&doc.text]).remove(0);
    tokens.sort_unstable();
    let leaves = LeafIndex::build(&corpus, rule, vec![TokenStarts::new(tokens.clone())])
        .with_context(|| format!("cannot cut {} into units", doc.file.display()))?;
    let inputs: Vec<String> = (0..leaves.units.len()).map(|c| leaves.units.input(&corpus, c).into_owned()).collect();
    let texts: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let (vectors, merges) = embed((&corpus, &leaves, run_name(doc)), &texts)?;
    let units = (0..leaves.units.len())
        .zip(vectors)
        .map(|(c, vector)| UnitRow { span: leaves.units.spans[c].span, header: leaves.units.headers.get(c).cloned().unwrap_or_default(), vector })
        .collect();
    Ok(DocumentRow {
        key: doc.key.clone(),
        file: doc.file.display().to_string(),
        digest,
        title: doc.title.clone(),
        text: doc.text.clone(),
        tokens,
        units,
        merges,
        raptor: None,
    })
}
