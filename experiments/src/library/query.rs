//! `arbor query INDEX "question"`: the stored units ranked in corpus scope (or within `--doc` documents)
//! by any method an index can serve, named as an experiment file names it (`--method Flat`, `--method
//! 'Hybrid((depth: Some(100)))'`, `--method 'SproutRag((search: Beam((beam_width: 3))))'`, or a bare name
//! for its defaults): each method serves itself ([`crate::methods::MethodSpec::serve`]) with the retrievers, settings and
//! token budget rule of its experiment row, so a ranking here is the runner's for the same documents,
//! method and k. SproutRAG's and RAPTOR's trees come from an index built with `--trees` / `--raptor`, a
//! trained SproutRAG row's and a reranker from an index built `--from` the run that trained them.
//! Each result names its document, its offsets in Unicode code points and in UTF-8 bytes, its score and
//! its text; under the index's default unit rule an item holding part of a cut table is handed on as the
//! whole table with its head, as `evaluate` hands it on (`retrieval: (hand_on: Tables)`); `--json` prints
//! one JSON object per query. `--queries FILE` asks one question per line
//! against one opened index; `--timings` reports opening and per-query latency on standard error.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use arbor_datasets::DocSpan;
use arbor_datasets::span::char_offset;
use arbor_eval::retrievers::approximate::Neighbours;
use arbor_eval::scoring::runner::hand_on;
use arbor_eval::{Item, QueryInput, Retriever};
use arbor_models::{DefaultBackend, SentenceEncoder};
use arbor_store::Store;
use clap::Parser;
use serde::Serialize;

use super::EncoderArgs;
use super::approximate::{Nearest, SearchArgs};
use super::trained::{ModelRecord, Tuned};
use crate::methods::{Method, Served, Serving};
use crate::stored::StoredIndex;

#[derive(Debug, Parser)]
pub struct QueryArgs {
    /// The index file built by `arbor index`
    pub index: PathBuf,
    /// The question (or give --queries)
    pub query: Option<String>,
    /// Ask every line of this file, in order
    #[arg(long)]
    pub queries: Option<PathBuf>,
    #[arg(short = 'k', long, default_value_t = 5)]
    pub k: usize,
    /// The method, as an experiment file writes it: Flat, Bm25, 'Hybrid((depth: Some(100)))', Hierarchy(()),
    /// 'SproutRag((search: Beam((beam_width: 3))))' (an index built with --trees, or --from a trained
    /// SproutRAG row: `sproutrag` is then that row), Raptor(()) (--raptor), Rerank(()) (--from a reranked
    /// row: that row); a bare name (flat, hybrid, sproutrag, ...) for its defaults
    #[arg(long, default_value = "Flat")]
    pub method: Method,
    /// Rank only the units of these documents (keys as printed); every document by default
    #[arg(long)]
    pub doc: Vec<String>,
    /// Hand on at most this many tokens (the experiments' budget rule: a too-large item gives way to its parts)
    #[arg(long)]
    pub max_tokens: Option<usize>,
    /// One JSON object per query on standard output
    #[arg(long)]
    pub json: bool,
    /// Opening time and per-query latency (p50, p99) on standard error
    #[arg(long)]
    pub timings: bool,
    #[command(flatten)]
    pub encoder: EncoderArgs,
    #[command(flatten)]
    pub search: SearchArgs,
}

/// One ranked result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub rank: usize,
    pub document: String,
    pub score: f32,
    /// For SproutRAG: the node, the leaves under it and its depth below the root (0 = the root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeAt>,
    /// For RAPTOR: the node's layer (0 = a leaf chunk, 1 = a summary of leaves, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<usize>,
    /// Its pieces of text (one for a unit), with both kinds of offsets.
    pub spans: Vec<Located>,
    /// The text handed on (pieces joined by a blank line).
    pub text: String,
}

/// Where a tree item sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NodeAt {
    pub node: usize,
    pub leaves: usize,
    pub depth: usize,
}

/// A piece of a document: `[start, end)` in Unicode code points and in UTF-8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Located {
    pub chars: [usize; 2],
    pub bytes: [usize; 2],
}

/// What `arbor query --json` prints for one question (and `arbor serve` answers).
#[derive(Debug, Serialize)]
pub struct Answer<'a> {
    pub query: &'a str,
    /// The method as an experiment file writes it.
    pub method: &'a str,
    pub results: Vec<Hit>,
}

/// A ranked item as a result: its document, offsets of both kinds, text, and where it sits in a tree.
pub fn hit(index: &StoredIndex, rank: usize, item: &Item, retriever: &dyn Retriever, query: &QueryInput) -> Hit {
    let layer = item.node.and(retriever.layer(item));
    let doc = item.spans.first().map_or(0, |s| s.doc);
    let text = &index.corpus.documents[doc].text;
    let spans: Vec<Located> = item
        .spans
        .iter()
        .map(|s: &DocSpan| Located { chars: [char_offset(text, s.span.start), char_offset(text, s.span.end)], bytes: [s.span.start, s.span.end] })
        .collect();
    let pieces: Vec<&str> = item.spans.iter().map(|s| &text[s.span.start..s.span.end]).collect();
    let node = item.node.and_then(|n| {
        let path = retriever.path(query, n)?;
        Some(NodeAt { node: n.node, leaves: path.last()?.leaves, depth: path.len() - 1 })
    });
    Hit { rank, document: index.corpus.documents[doc].id.clone(), score: item.score, node, layer, spans, text: pieces.join("\n\n") }
}

/// An index opened to answer questions: its documents, units and trees, the encoder that built it, and
/// the trained model it embeds with, if any (`arbor query` and `arbor serve` share it).
pub struct Opened {
    pub index: StoredIndex,
    pub encoder: SentenceEncoder<DefaultBackend>,
    /// The encoder's batch size (`--batch-size`).
    pub batch: usize,
    tuned: Option<Tuned>,
    /// The approximate index beside it, when it keeps a fresh one and exact search is not asked.
    nearest: Option<Nearest>,
}

impl Opened {
    /// Opens the index at `path` with the encoder `encoder` names; another encoder than the one that built it
    /// is refused with both fingerprints. Dense search goes through the approximate index it keeps, if any,
    /// unless `search.exact`.
    pub fn open(path: &Path, args: &EncoderArgs, search: &SearchArgs) -> anyhow::Result<Self> {
        let store = Store::open_existing(path)?;
        // The index and the graph's unit ids read as one state of the store: an `arbor index` committing
        // meanwhile cannot map the graph's ids onto positions of another set of units (the graph itself
        // is judged against that state's generation, and searched exactly when it is not current).
        let (index, nearest) = store.snapshot(|s| Ok((StoredIndex::read(s)?, Nearest::open(path, s, search.exact)?)))?;
        let encoder = args.load()?;
        anyhow::ensure!(
            encoder.fingerprint == index.encoder,
            "{} was built by encoder {}, but the encoder loaded now is {}: query it with the encoder that built it (--model), or index again into a new file",
            path.display(),
            index.encoder,
            encoder.fingerprint
        );
        let record: Option<ModelRecord> = index.model.as_deref().map(serde_json::from_str).transpose().context("meta.model is damaged")?;
        let tuned = record.map(|record| Tuned::load(record, &encoder)).transpose()?;
        Ok(Opened { index, encoder, batch: args.batch_size.max(1), tuned, nearest })
    }

    /// The trained row of a run the index was built from, if any.
    pub fn record(&self) -> Option<&ModelRecord> {
        self.tuned.as_ref().map(|t| &t.record)
    }

    /// The index as methods serve themselves over it.
    pub fn serving(&self) -> Serving<'_> {
        let row = self.record().and_then(|r| r.row.as_ref().map(|row| (row, r.dir.as_path())));
        let neighbours = self.nearest.as_ref().map(|n| n as &dyn Neighbours);
        Serving { index: &self.index, encoder: &self.encoder, batch: self.batch, row, neighbours }
    }

    /// The results of `question` by `served` (a method this index serves) within `docs`: the top `k` items
    /// handed on under `max_tokens` as `evaluate` hands them on.
    pub fn ask(&self, served: &Served, question: &str, k: usize, docs: &[usize], max_tokens: Option<usize>) -> Vec<Hit> {
        self.search(served, question, self.embed(served, question), k, docs, max_tokens)
    }

    /// The question's vector, when `served` reads one (the encoder's, or the index's trained model's).
    pub fn embed(&self, served: &Served, question: &str) -> Option<Vec<f32>> {
        served.embeds_queries.then(|| match &self.tuned {
            Some(t) => t.queries(&self.encoder, &[question], 1).remove(0),
            None => self.encoder.embed_queries(&[question], 1, &mut |_| {}).remove(0),
        })
    }

    /// [`Opened::ask`] with the question's vector given ([`Opened::embed`]).
    pub fn search(
        &self,
        served: &Served,
        question: &str,
        embedding: Option<Vec<f32>>,
        k: usize,
        docs: &[usize],
        max_tokens: Option<usize>,
    ) -> Vec<Hit> {
        let input = QueryInput { text: question.to_owned(), docs: docs.to_vec(), embedding };
        let (index, retriever) = (&self.index, served.retriever.as_ref());
        let (_, items) = hand_on(retriever, &input, k, index.parents.as_ref(), max_tokens, &index.tokens, &index.corpus);
        items.iter().enumerate().map(|(i, item)| hit(index, i + 1, item, retriever, &input)).collect()
    }
}

pub fn query(args: &QueryArgs) -> anyhow::Result<()> {
    let questions: Vec<String> = match (&args.query, &args.queries) {
        (Some(q), None) => vec![q.clone()],
        (None, Some(file)) => std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect(),
        _ => anyhow::bail!("give one question, or --queries FILE, not both"),
    };
    anyhow::ensure!(!questions.is_empty(), "no question to ask: the file holds only blank lines");
    anyhow::ensure!(args.k > 0, "-k must be at least 1");
    let start = Instant::now();
    let opened = Opened::open(&args.index, &args.encoder, &args.search)?;
    let docs = opened.index.scope(&args.doc)?;
    let served = args.method.spec().serve(&opened.serving())?;
    let opening = start.elapsed().as_secs_f64() * 1e3;
    // Per question: the whole answer, and its search after the question's vector.
    let (mut latencies, mut searches) = (Vec::with_capacity(questions.len()), Vec::with_capacity(questions.len()));
    for question in &questions {
        let t = Instant::now();
        let embedding = opened.embed(&served, question);
        let s = Instant::now();
        let results = opened.search(&served, question, embedding, args.k, &docs, args.max_tokens);
        searches.push(s.elapsed().as_secs_f64() * 1e3);
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        print(question, args, results)?;
    }
    if args.timings {
        let (all, search) = (Quantiles::of(latencies), Quantiles::of(searches));
        eprintln!(
            "opened in {opening:.0} ms ({} documents, {} units, {} search); {} queries: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; \
             the search after the question's vector p50 {:.1} ms, p99 {:.1} ms",
            opened.index.corpus.documents.len(),
            opened.index.units.len(),
            if opened.nearest.is_some() { "approximate" } else { "exact" },
            questions.len(),
            all.at(0.5),
            all.at(0.99),
            all.at(1.0),
            search.at(0.5),
            search.at(0.99)
        );
    }
    Ok(())
}

/// Latencies, sorted, read at quantiles.
struct Quantiles(Vec<f64>);

impl Quantiles {
    fn of(mut ms: Vec<f64>) -> Self {
        ms.sort_by(f64::total_cmp);
        Quantiles(ms)
    }

    fn at(&self, q: f64) -> f64 {
        self.0[((self.0.len() - 1) as f64 * q).round() as usize]
    }
}

fn print(question: &str, args: &QueryArgs, results: Vec<Hit>) -> anyhow::Result<()> {
    if args.json {
        // The method as an experiment file writes it.
        let method = ron::to_string(&args.method)?;
        println!("{}", serde_json::to_string(&Answer { query: question, method: &method, results })?);
        return Ok(());
    }
    println!("{question}");
    for h in results {
        let at: Vec<String> = h.spans.iter().map(|s| format!("chars {}-{} (bytes {}-{})", s.chars[0], s.chars[1], s.bytes[0], s.bytes[1])).collect();
        let node = match (h.node, h.layer) {
            (Some(n), _) => format!("  node {} ({} leaves, depth {})", n.node, n.leaves, n.depth),
            (None, Some(layer)) => format!("  layer {layer}"),
            _ => String::new(),
        };
        println!("{:>3}. {}  {}  score {:.4}{node}", h.rank, h.document, at.join(", "), h.score);
        for line in h.text.lines() {
            println!("     {line}");
        }
    }
    println!();
    Ok(())
}
