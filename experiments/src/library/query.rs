//! `arbor query INDEX "question"`: the stored units ranked in corpus scope (or within `--doc` documents)
//! by flat dense retrieval, BM25, their reciprocal rank fusion, or beam search over each document's
//! SproutRAG tree (an index built with `--trees`): the retrievers, settings and token
//! budget rule of the experiment runner, so a ranking here is the runner's for the same documents, method
//! and k. Each result names its document, its offsets in Unicode code points and in UTF-8 bytes, its score
//! and its text; `--json` prints one JSON object per query. `--queries FILE` asks one question per line
//! against one opened index; `--timings` reports opening and per-query latency on standard error.

use arbor_models::pooling::Role;
use std::borrow::Cow;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use arbor_datasets::span::char_offset;
use arbor_datasets::{Corpus, DocSpan, Document, TokenStarts};
use arbor_eval::formats::raptor_io;
use arbor_eval::index::{Chunks, Tokens};
use arbor_eval::retrievers::beam::BeamConfig;
use arbor_eval::retrievers::bm25::Bm25;
use arbor_eval::retrievers::flat::FlatDense;
use arbor_eval::retrievers::fusion::Fusion;
use arbor_eval::retrievers::hierarchy::AutoMerging;
use arbor_eval::retrievers::prefilter::Prefiltered;
use arbor_eval::retrievers::raptor::{RaptorRetriever, RaptorTree};
use arbor_eval::retrievers::tree_retrieval::{TreeRetriever, TreeSearch};
use arbor_eval::scoring::budget::spend;
use arbor_eval::structures::tree::Tree;
use arbor_eval::{Item, QueryInput, Retriever, Scope};
use arbor_store::Store;
use clap::{Parser, ValueEnum};
use serde::Serialize;

use super::EncoderArgs;
use super::trained::{ModelRecord, Tuned};
use crate::methods::MethodSpec;
use crate::methods::hierarchy::{HierarchyConfig, document_hierarchy};
use crate::methods::hybrid::HybridConfig;
use crate::methods::raptor::RaptorConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueryMethod {
    /// Dense cosine over the units (the experiments' `Flat`)
    Flat,
    /// BM25 over the units (`Bm25`)
    Bm25,
    /// BM25 and dense fused by reciprocal rank, k = 60 (`Hybrid(())`)
    Hybrid,
    /// Beam search over each document's SproutRAG tree, the best items of all (`SproutRag(())`; an index
    /// built with --trees)
    Sproutrag,
    /// Every node of every document's RAPTOR tree ranked together, the collapsed tree (`Raptor(())`; an
    /// index built with --raptor)
    Raptor,
    /// Dense over the units, a section replacing its units when more than half of them are retrieved;
    /// sections from each document's heading lines (`Hierarchy(())`; any index)
    Hierarchy,
}

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
    #[arg(long, value_enum, default_value_t = QueryMethod::Flat)]
    pub method: QueryMethod,
    /// Beam search's width for --method sproutrag
    #[arg(long, default_value_t = BeamConfig::default().beam_width)]
    pub beam_width: usize,
    /// For --method hybrid: how deep each ranking is read (the experiments' `Hybrid((depth: Some(N)))`;
    /// every unit by default, as `Hybrid(())`)
    #[arg(long)]
    pub depth: Option<usize>,
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

#[derive(Debug, Serialize)]
struct Answer<'a> {
    query: &'a str,
    method: &'a str,
    results: Vec<Hit>,
}

/// An opened index: its documents as a corpus, units as chunks, vectors and token starts.
pub struct Opened {
    pub corpus: Corpus,
    pub units: Chunks,
    pub vectors: Vec<Vec<f32>>,
    pub tokens: Tokens,
    /// Each document's SproutRAG tree as stored (its merges), when the index keeps trees; the trees
    /// themselves are built by the retriever that searches them.
    merges: Option<Vec<Option<Vec<(u32, u32)>>>>,
    /// Each document's RAPTOR tree as stored (`raptor_io` bytes), when the index keeps them.
    raptor: Option<Vec<Option<Vec<u8>>>>,
    encoder: String,
    /// The trained model it embeds with (`meta.model`), if any.
    model: Option<ModelRecord>,
}

impl Opened {
    pub fn read(store: &Store) -> anyhow::Result<Self> {
        let meta = store.meta()?.context("the index holds no document yet: add some with `arbor index DIR --into INDEX`")?;
        let stored = store.load()?;
        let (mut documents, mut per_doc, mut vectors, mut tokens, mut headers) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut merges, mut raptor) = (Vec::new(), Vec::new());
        for d in stored {
            merges.push(d.merges);
            raptor.push(d.raptor);
            per_doc.push(d.units.iter().map(|u| u.span).collect::<Vec<_>>());
            headers.extend(d.units.iter().map(|u| u.header.clone()));
            vectors.extend(d.units.into_iter().map(|u| u.vector));
            tokens.push(TokenStarts::new(d.tokens));
            documents.push(Document { id: d.key, title: d.title, text: d.text, sections: Vec::new(), split: None });
        }
        let mut units = Chunks::from_docs(per_doc);
        if headers.iter().any(|h| !h.is_empty()) {
            units.headers = headers;
        }
        let corpus = Corpus::new(documents, Vec::new(), std::path::Path::new("index"))?;
        let merges = (!meta.trees.is_empty()).then_some(merges);
        let raptor = (!meta.raptor.is_empty()).then_some(raptor);
        let model = (!meta.model.is_empty()).then(|| serde_json::from_str(&meta.model)).transpose().context("meta.model is damaged")?;
        Ok(Opened { corpus, units, vectors, tokens: Tokens(tokens), merges, raptor, encoder: meta.encoder, model })
    }

    /// The retriever of `method` over every stored unit; beam search reads `beam_width`, fusion `depth`.
    pub fn retriever(&self, method: QueryMethod, beam_width: usize, depth: Option<usize>) -> anyhow::Result<Box<dyn Retriever + '_>> {
        let all: Vec<usize> = (0..self.corpus.documents.len()).collect();
        // Exact flat search, in two passes (8-bit codes, then the full vectors of the few that can be in
        // the top k): the runner's `Flat` ranking at a quarter of the reading.
        let flat =
            || Prefiltered::new(FlatDense { name: "Flat".into(), chunks: Cow::Borrowed(&self.units), embeddings: Cow::Borrowed(&self.vectors[..]) });
        let bm25 = || Bm25::build(&self.corpus, &self.units, Scope::Corpus, &all);
        Ok(match method {
            QueryMethod::Flat => Box::new(flat()),
            QueryMethod::Bm25 => Box::new(bm25()),
            QueryMethod::Hybrid => {
                let config = HybridConfig { depth, ..HybridConfig::default() };
                config.check()?;
                Box::new(Fusion {
                    name: "Hybrid".into(),
                    parts: vec![Box::new(bm25()), Box::new(flat())],
                    chunks: Cow::Borrowed(&self.units),
                    k_rrf: config.k_rrf,
                    depth: config.depth.unwrap_or(usize::MAX),
                })
            }
            QueryMethod::Sproutrag => {
                let merges = self.merges.as_ref().context("this index keeps no trees: build them with `arbor index DIR --into INDEX --trees`")?;
                all_built(merges)?;
                anyhow::ensure!(beam_width > 0, "--beam-width must be at least 1");
                let trees = merges.iter().enumerate().map(|(d, m)| m.clone().map(|m| self.tree(d, m))).collect();
                let search = TreeSearch::Beam(BeamConfig { beam_width, ..BeamConfig::default() });
                Box::new(TreeRetriever { name: "SproutRAG".into(), trees, leaves: &self.units, search })
            }
            QueryMethod::Raptor => {
                let stored =
                    self.raptor.as_ref().context("this index keeps no RAPTOR trees: build them with `arbor index DIR --into INDEX --raptor`")?;
                all_built(stored)?;
                let trees = stored
                    .iter()
                    .zip(&self.corpus.documents)
                    .map(|(bytes, doc)| {
                        bytes
                            .as_deref()
                            .map(|b| raptor_io::decode(b).map_err(|e| anyhow::anyhow!("the RAPTOR tree of {} is damaged: {e}", doc.id)))
                            .transpose()
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                let leaves = Chunks::from_docs(trees.iter().map(|t| t.as_ref().map_or_else(Vec::new, |t: &RaptorTree| t.leaf_spans())));
                let config = RaptorConfig::default();
                Box::new(RaptorRetriever { name: "RAPTOR".into(), trees, leaves: Cow::Owned(leaves), search: config.search() })
            }
            QueryMethod::Hierarchy => {
                let trees = self.corpus.documents.iter().enumerate().map(|(d, doc)| Some(document_hierarchy(doc, &self.units, d).0)).collect();
                Box::new(AutoMerging {
                    name: "Heading hierarchy".into(),
                    trees,
                    chunks: Cow::Borrowed(&self.units),
                    embeddings: Cow::Borrowed(&self.vectors[..]),
                    ratio: HierarchyConfig::default().ratio,
                })
            }
        })
    }

    /// Document `d`'s tree from its stored merges, over its units and their vectors.
    fn tree(&self, d: usize, merges: Vec<(u32, u32)>) -> Tree {
        let units = self.units.by_doc[d].clone();
        let leaves: Vec<f32> = self.vectors[units.clone()].concat();
        let dim = self.vectors.first().map_or(0, Vec::len);
        Tree::from_merges(self.units.spans[units].to_vec(), &leaves, dim, merges)
    }

    /// The corpus indices of the documents `keys` (every document when empty); an unknown key is an error.
    pub fn scope(&self, keys: &[String]) -> anyhow::Result<Vec<usize>> {
        if keys.is_empty() {
            return Ok((0..self.corpus.documents.len()).collect());
        }
        keys.iter().map(|k| self.corpus.doc_index(k).with_context(|| format!("the index holds no document {k:?}"))).collect()
    }

    /// A ranked item as a result: its document, offsets of both kinds, text, and where it sits in a tree.
    pub fn hit(&self, rank: usize, item: &Item, retriever: &dyn Retriever, query: &QueryInput) -> Hit {
        let layer = item.node.and(retriever.layer(item));
        let doc = item.spans.first().map_or(0, |s| s.doc);
        let text = &self.corpus.documents[doc].text;
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
        Hit { rank, document: self.corpus.documents[doc].id.clone(), score: item.score, node, layer, spans, text: pieces.join("\n\n") }
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
    anyhow::ensure!(args.k > 0, "-k must be at least 1");
    let start = Instant::now();
    let store = Store::open_existing(&args.index)?;
    let opened = Opened::read(&store)?;
    let encoder = args.encoder.load()?;
    anyhow::ensure!(
        encoder.fingerprint == opened.encoder,
        "{} was built by encoder {}, but the encoder loaded now is {}: query it with the encoder that built it (--model), or index again into a new file",
        args.index.display(),
        opened.encoder,
        encoder.fingerprint
    );
    let tuned = opened.model.clone().map(|record| Tuned::load(record, &encoder)).transpose()?;
    let docs = opened.scope(&args.doc)?;
    let retriever = opened.retriever(args.method, args.beam_width, args.depth)?;
    let opening = start.elapsed().as_secs_f64() * 1e3;
    let mut latencies = Vec::with_capacity(questions.len());
    for question in &questions {
        let t = Instant::now();
        let embedding = (args.method != QueryMethod::Bm25).then(|| match &tuned {
            Some(t) => t.embed(&encoder, Role::Query, &[question], 1).remove(0),
            None => encoder.embed_queries(&[question], 1, &mut |_| {}).remove(0),
        });
        let input = QueryInput { text: question.clone(), docs: docs.clone(), embedding };
        let mut items = retriever.retrieve(&input, args.k);
        if let Some(budget) = args.max_tokens {
            items = spend(items, budget, retriever.as_ref(), &input, &opened.tokens, &opened.corpus);
        }
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        let results: Vec<Hit> = items.iter().enumerate().map(|(i, item)| opened.hit(i + 1, item, retriever.as_ref(), &input)).collect();
        print(question, args, results)?;
    }
    if args.timings {
        latencies.sort_by(f64::total_cmp);
        let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
        eprintln!(
            "opened in {opening:.0} ms ({} documents, {} units); {} queries: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            opened.corpus.documents.len(),
            opened.units.len(),
            latencies.len(),
            at(0.5),
            at(0.99),
            at(1.0)
        );
    }
    Ok(())
}

/// Every document has its tree (an index whose `arbor index` was killed while building them has not).
fn all_built<T>(trees: &[Option<T>]) -> anyhow::Result<()> {
    let bare = trees.iter().filter(|m| m.is_none()).count();
    anyhow::ensure!(bare == 0, "{bare} documents of the index have no tree yet (an interrupted `arbor index`): run it again");
    Ok(())
}

fn print(question: &str, args: &QueryArgs, results: Vec<Hit>) -> anyhow::Result<()> {
    if args.json {
        // The method as the command line names it.
        let value = args.method.to_possible_value().expect("every method is a value of --method");
        println!("{}", serde_json::to_string(&Answer { query: question, method: value.get_name(), results })?);
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
