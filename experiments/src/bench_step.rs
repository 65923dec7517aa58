//! `arbor bench-step`: arbor's fine-tuning step timed on fixed batches of a real corpus, the batches
//! written to a file that PyTorch's side (`scripts/bench_torch_step.py`) runs exactly the same step on;
//! `scripts/bench_step.sh` runs both and prints the table.
//!
//! The step is the dense trainer's ([`arbor_trainers::bench`]) under the experiment's first `Dense` method
//! with a fine-tuned encoder: its batch size, `step_tokens`, frozen blocks, tau, learning rate and
//! optimizer. The batches are those of the training split's documents with the median and the largest
//! number of word pieces (among those with a full batch of queries): each document's first `batch_size`
//! training queries, once over the window of `step_tokens` and once over the whole median document. With a
//! `Rerank` method in the experiment, the reranker's step too ([`arbor_trainers::bench::rerank`]): its
//! `batch_size` questions from the median document on, each with its positive and `negatives` units. With
//! a `SproutRag` row whose SLLM trains with its encoder, SproutRAG's joint step too
//! ([`arbor_trainers::bench::joint`]): the median document's first `batch_size` questions under its own
//! `step_tokens`, its merge pairs, and the SLLM's and aggregation's initial weights for the other side;
//! with the row's `docs_per_step` above 1 (issue 62), a second joint case over that many documents (the
//! median and the next longer ones, each with its first `batch_size` questions), every other document's
//! units in L_ret and the row's document term. When the first `Dense` method draws its batches across
//! documents (`negatives: Corpus(..)`, issue 65), the large-batch step instead of the one-document cases
//! ([`arbor_trainers::bench::pairs`]): its `batch_size` questions, each with a passage of its positive unit
//! and the units after it to the encoder's `max_seq_length`, and their mined negatives, by GradCache with
//! its `grad_cache`. `--precision bf16` times every step in bf16 autocast (the CUDA build).

use std::path::PathBuf;

use anyhow::Context as _;
use arbor_files::atomic_write;
use arbor_models::DefaultBackend;
use arbor_models::bert::Precision;
use arbor_trainers::bench::joint::{FixedJointStep, JointStart, time_joint_steps};
use arbor_trainers::bench::pairs::{FixedPairs, passage_docs, time_pairs_steps};
use arbor_trainers::bench::rerank::{FixedRerankBatch, RerankHead, time_rerank_steps};
use arbor_trainers::bench::{FixedBatch, Shape, StepTiming, step_flops, time_steps};
use arbor_trainers::config::TrainConfig;
use arbor_trainers::data::{Part, TrainDoc};
use arbor_trainers::reranker::RerankerTraining;
use burn::backend::Autodiff;
use serde::Serialize;

use crate::cache::Cache;
use crate::experiment::Experiment;
use crate::methods::rerank::training_examples::pair_format;
use crate::methods::sproutrag::SproutRagConfig;
use crate::methods::training::{Needs, pretrained, train_docs, training_queries};
use crate::methods::{Context, Method};
use crate::run::{Prepared, load_corpus, prepare};
use crate::trained::Training;

#[derive(clap::Args, Debug)]
pub struct BenchStepArgs {
    /// The experiment whose first `Dense` method (encoder fine-tuned) sets the step and whose training split gives the batches
    pub experiment: PathBuf,
    /// Where the batches go (JSON: token ids, frozen vectors, the loss's rows, the step's settings)
    #[arg(long)]
    pub batches: PathBuf,
    /// Timed steps a batch, after one untimed warm-up step (the median is reported)
    #[arg(long, default_value_t = 3)]
    pub steps: usize,
    /// A folder of artefacts to reuse (the training documents' frozen vectors), as `train --cache`
    /// (default: beside the batches file, its name with the extension `cache`)
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// The encoder's arithmetic in every fine-tuning step timed (`F32` or `Bf16`: bf16 autocast, the CUDA
    /// build only), instead of each method's `training.precision`
    #[arg(long, value_parser = parse_precision)]
    pub precision: Option<Precision>,
}

fn parse_precision(s: &str) -> Result<Precision, String> {
    match s.to_ascii_lowercase().as_str() {
        "f32" | "float32" => Ok(Precision::F32),
        "bf16" | "bfloat16" => Ok(Precision::Bf16),
        _ => Err(format!("{s:?}: the precision is f32 or bf16")),
    }
}

/// The batches file both sides read.
#[derive(Debug, Serialize)]
struct Batches<'a> {
    /// The encoder's folder (config.json, model.safetensors): the weights both sides start from.
    model_dir: String,
    tau: f64,
    lr: f64,
    /// arbor's optimizer as Burn serialises its config: AdamW's betas, epsilon and weight decay, and the
    /// norm gradients are clipped to (`grad_clipping: {"Norm": x}`).
    optimizer: serde_json::Value,
    /// The embeddings and this many lower blocks keep their pretrained weights (no gradient).
    frozen_layers: usize,
    cases: Vec<Case<'a>>,
    /// The reranker's step, when the experiment has a reranker.
    #[serde(skip_serializing_if = "Option::is_none")]
    rerank: Option<RerankCase>,
    /// SproutRAG's joint steps (one document, then `docs_per_step` when above 1), when the experiment
    /// trains SproutRAG's SLLM with its encoder.
    joints: Vec<JointCase>,
    /// The large-batch step, when the first Dense method draws its batches across documents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pairs: Option<PairsCase>,
    /// The encoder's arithmetic in the dense, joint and large-batch steps (`F32` or `Bf16`).
    precision: Precision,
}

/// The large-batch step as the other side runs it (issue 65): the questions and passages of the batch,
/// the loss's targets and exclusions, GradCache's chunk; the dense step's tau, rate and optimizer.
#[derive(Debug, Serialize)]
struct PairsCase {
    name: String,
    /// Passages were cut at this many word pieces.
    max_pieces: usize,
    batch: FixedPairs,
}

/// SproutRAG's joint step as the other side runs it: its settings, the weights its new modules start
/// from, its documents' batches.
#[derive(Debug, Serialize)]
struct JointCase {
    name: String,
    lr_encoder: f64,
    lr_new: f64,
    lr_aggregation: f64,
    tau: f64,
    lambda: f64,
    eps: f64,
    /// The document term's weight (read over several documents only).
    doc_loss: f64,
    hard_negatives: bool,
    frozen_layers: usize,
    optimizer: serde_json::Value,
    start: JointStart,
    step: FixedJointStep,
}

/// The reranker's step as the other side runs it: its settings, the head it starts from, its pairs.
#[derive(Debug, Serialize)]
struct RerankCase {
    name: &'static str,
    lr_encoder: f64,
    lr_head: f64,
    /// The trunk's top blocks that learn; the embeddings and the blocks below keep their weights.
    trainable_layers: usize,
    optimizer: serde_json::Value,
    head: RerankHead,
    batch: FixedRerankBatch,
}

#[derive(Debug, Serialize)]
struct Case<'a> {
    name: &'static str,
    document: &'a str,
    batch: FixedBatch,
}

/// What one case's timing prints, one JSON line.
#[derive(Debug, Serialize)]
struct Timed<'a> {
    framework: &'static str,
    case: &'a str,
    threads: usize,
    units: usize,
    queries: usize,
    tokens: usize,
    median_ms: f64,
    ms: &'a [f64],
    tokens_per_s: f64,
    peak_rss_mib: Option<f64>,
    first_loss: f32,
    /// The step's model FLOPs ([`step_flops`]), in GFLOP, and what the median step achieved, in TFLOP/s.
    gflop: f64,
    tflops: f64,
    backend: &'static str,
}

impl Timed<'_> {
    /// Prints a case's line: its `[units, queries, tokens]` (units: the reranker's pairs), its timing and the
    /// step's model FLOPs.
    fn print(case: &str, threads: usize, [units, queries, tokens]: [usize; 3], timing: &StepTiming, flops: f64) -> anyhow::Result<()> {
        let median_ms = timing.median_ms();
        let line = Timed {
            framework: "arbor",
            case,
            threads,
            units,
            queries,
            tokens,
            median_ms,
            ms: &timing.ms,
            tokens_per_s: tokens as f64 / (median_ms / 1e3),
            peak_rss_mib: timing.peak_rss_mib,
            first_loss: timing.first_loss,
            gflop: flops / 1e9,
            tflops: flops / (median_ms / 1e3) / 1e12,
            backend: arbor_models::backend::NAME,
        };
        println!("{}", serde_json::to_string(&line)?);
        Ok(())
    }
}

pub fn bench_step(args: &BenchStepArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.steps > 0, "--steps must be at least 1");
    let exp = Experiment::load(&args.experiment)?;
    let mut training = step_settings(&exp)?;
    training.precision = args.precision.unwrap_or(training.precision);
    let (corpus, _) = load_corpus(&exp)?;
    let Prepared { encoder, leaves, keys, .. } = prepare(&exp, &corpus)?;
    let cache = Cache::new(args.cache.clone().unwrap_or_else(|| args.batches.with_extension("cache")));
    let ctx = Context::new(&corpus, &leaves, &keys, &encoder, &exp.encoder, &cache, &Training::Allowed, &[], &[], exp.retrieval.scope);
    let by_doc = training_queries(&corpus, &training);
    let joint = joint_settings(&exp);
    // The joint step reads its rule's gold merge pairs (L_attn); the dense step reads none.
    let merge_pairs = joint.as_ref().map(|(t, _)| t.merge_pairs);
    let docs = train_docs(&ctx, &by_doc, &training.split, Needs { ids: true, vae_tokens: false, merge_pairs, headers: None })?;
    let names: Vec<&str> = by_doc.keys().map(|&d| corpus.documents[d].id.as_str()).collect();
    let (median, long) = median_and_longest(&docs, training.batch_size)
        .with_context(|| format!("no document of training split {:?} has a training query", training.split))?;
    let plan = match (training.step_tokens, training.negatives.corpus()) {
        // Batches across documents: the large-batch case alone, below.
        (_, Some(_)) => vec![],
        (Some(_), None) => vec![
            ("median document, window", median, training.step_tokens),
            ("median document, whole", median, None),
            ("long document, window", long, training.step_tokens),
        ],
        (None, None) => vec![("median document, whole", median, None)],
    };
    let tune = pretrained(&ctx)?;
    let threads = rayon::current_num_threads();
    let pairs = match training.negatives.corpus() {
        Some(_) => {
            let max_pieces = encoder.max_seq_length();
            let passages = passage_docs(&docs, training.batch_size, max_pieces);
            let (timing, batch) = time_pairs_steps::<Autodiff<DefaultBackend>>(&training, &corpus, &tune, &passages, args.steps)?;
            let chunk = batch.chunk.map_or_else(|| "one pass".to_string(), |c| format!("GradCache chunks of {c}"));
            let name = format!("{} questions x {max_pieces}-piece passages, {chunk}, {:?}", batch.queries.len(), training.precision);
            let flops = step_flops(Shape::of(&tune.bert), training.frozen_layers.unwrap_or(0), &[&batch.queries, &batch.passages]);
            // GradCache runs the encoder forward once more without a graph: a third more than the plain step's FLOPs.
            let flops = flops * if batch.chunk.is_some() { 4.0 / 3.0 } else { 1.0 };
            Timed::print(&name, threads, [batch.passages.len(), batch.queries.len(), batch.tokens()], &timing, flops)?;
            Some(PairsCase { name, max_pieces, batch })
        }
        None => None,
    };
    let mut cases = Vec::with_capacity(plan.len());
    for (name, d, step_tokens) in plan {
        let doc = &docs[d];
        let queries: Vec<usize> = (0..doc.queries.len().min(training.batch_size)).collect();
        let batch = FixedBatch::new(doc, &queries, step_tokens);
        let config = TrainConfig { step_tokens, ..training.clone() };
        let timing = time_steps::<Autodiff<DefaultBackend>>(&config, &tune, doc, &queries, args.steps)?;
        let flops = step_flops(Shape::of(&tune.bert), config.frozen_layers.unwrap_or(0), &[&batch.queries, &batch.window]);
        Timed::print(name, threads, [batch.window.len(), queries.len(), batch.tokens()], &timing, flops)?;
        cases.push(Case { name, document: names[d], batch });
    }
    let rerank = match rerank_settings(&exp) {
        Some(config) => {
            let format = pair_format(&encoder, &config);
            let batch = FixedRerankBatch::new(&docs, &rerank_queries(&docs, median, config.batch_size), config.negatives, format);
            let (timing, head) = time_rerank_steps::<Autodiff<DefaultBackend>>(&config, &tune, &batch, args.steps)?;
            let name = "reranker, pairs";
            let layers = tune.bert.layers.len();
            let flops = step_flops(Shape::of(&tune.bert), layers - config.trainable_layers.min(layers), &[&batch.pairs]);
            Timed::print(name, threads, [batch.pairs.len(), batch.pairs.len() / batch.group, batch.tokens()], &timing, flops)?;
            let optimizer = serde_json::to_value(arbor_trainers::adamw::config(&config.schedule))?;
            let (lr_encoder, lr_head, trainable_layers) = (config.lr_encoder, config.lr_head, config.trainable_layers);
            Some(RerankCase { name, lr_encoder, lr_head, trainable_layers, optimizer, head, batch })
        }
        None => None,
    };
    let mut joints = Vec::new();
    if let Some((mut config, sproutrag)) = joint {
        config.precision = args.precision.unwrap_or(config.precision);
        let mut sizes = vec![1];
        if config.docs_per_step > 1 {
            sizes.push(config.docs_per_step);
        }
        for size in sizes {
            let picked = step_documents(&docs, median, config.batch_size, size);
            let queries: Vec<Vec<usize>> = picked.iter().map(|&d| (0..docs[d].queries.len().min(config.batch_size)).collect()).collect();
            let parts: Vec<Part<'_>> = picked.iter().zip(&queries).map(|(&d, q)| Part { doc: &docs[d], queries: q }).collect();
            let step = FixedJointStep::new(&parts, &config);
            let tuned = (&tune, encoder.config.vocab_size);
            let (timing, start) =
                time_joint_steps::<Autodiff<DefaultBackend>>(&config, &sproutrag.model, sproutrag.aggregation, tuned, &parts, args.steps)?;
            let scope = match (size, config.step_tokens) {
                (1, Some(_)) => "median document, window".to_string(),
                (1, None) => "median document, whole".to_string(),
                (n, Some(_)) => format!("{n} documents, windows"),
                (n, None) => format!("{n} documents, whole"),
            };
            let name = format!("SproutRAG joint step, {scope}");
            let sides: Vec<&[Vec<u32>]> = step.documents.iter().flat_map(|d| [&d.batch.queries[..], &d.batch.window[..]]).collect();
            let flops = step_flops(Shape::of(&tune.bert), config.frozen_layers.unwrap_or(0), &sides);
            let units = parts.iter().map(|p| p.doc.units.len()).sum();
            Timed::print(&name, threads, [units, queries.iter().map(Vec::len).sum(), step.tokens()], &timing, flops)?;
            joints.push(JointCase {
                name,
                lr_encoder: config.lr_encoder,
                lr_new: config.lr_new,
                lr_aggregation: config.lr_aggregation,
                tau: config.tau,
                lambda: config.lambda,
                eps: config.eps,
                doc_loss: config.doc_loss,
                hard_negatives: config.hard_negatives,
                frozen_layers: config.frozen_layers.unwrap_or(0),
                optimizer: serde_json::to_value(arbor_trainers::adamw::config(&config.schedule))?,
                start,
                step,
            });
        }
    }
    let file = Batches {
        model_dir: arbor_models::hub::resolve(&exp.encoder.model)?.path.display().to_string(),
        tau: training.tau,
        lr: training.lr_encoder,
        optimizer: serde_json::to_value(arbor_trainers::adamw::config(&training.schedule))?,
        frozen_layers: training.frozen_layers.unwrap_or(0),
        cases,
        rerank,
        joints,
        pairs,
        precision: training.precision,
    };
    atomic_write(&args.batches, serde_json::to_string(&file)?.as_bytes()).with_context(|| format!("cannot write {}", args.batches.display()))
}

/// The training settings of `exp`'s first `Dense` method that fine-tunes its encoder.
fn step_settings(exp: &Experiment) -> anyhow::Result<TrainConfig> {
    let dense = exp.methods.iter().find_map(|m| match m {
        Method::Dense(c) if !c.training.freeze_encoder && c.reranker.is_none() => Some(c.training.clone()),
        _ => None,
    });
    dense.with_context(|| format!("{}: bench-step times the first Dense method with `freeze_encoder: false`, and this experiment has none", exp.name))
}

/// The training and model settings of `exp`'s first SproutRAG row whose SLLM trains with its encoder, if any.
fn joint_settings(exp: &Experiment) -> Option<(TrainConfig, SproutRagConfig)> {
    exp.methods.iter().find_map(|m| match m {
        Method::SproutRag(c) if c.is_trained() => c.training.clone().filter(|t| !t.freeze_encoder).map(|t| (t, c.clone())),
        _ => None,
    })
}

/// The training settings of `exp`'s first reranker, if any.
fn rerank_settings(exp: &Experiment) -> Option<RerankerTraining> {
    exp.methods.iter().find_map(|m| match m {
        Method::Rerank(r) => Some(r.training.clone()),
        _ => None,
    })
}

/// `batch_size` (document, query) pairs for the reranker's step: the queries of document `first`, then of
/// the documents after it (the reranker's batches mix documents).
fn rerank_queries(docs: &[TrainDoc], first: usize, batch_size: usize) -> Vec<(usize, usize)> {
    (first..docs.len()).chain(0..first).flat_map(|d| (0..docs[d].queries.len()).map(move |q| (d, q))).take(batch_size).collect()
}

/// The documents with at least `batch_size` training queries (all documents with a query when none has
/// that many), shortest first by word pieces.
fn by_length(docs: &[TrainDoc], batch_size: usize) -> Vec<usize> {
    let full: Vec<usize> = (0..docs.len()).filter(|&d| docs[d].queries.len() >= batch_size).collect();
    let mut pool = match full.is_empty() {
        true => (0..docs.len()).filter(|&d| !docs[d].queries.is_empty()).collect(),
        false => full,
    };
    pool.sort_by_key(|&d| length_key(docs, d));
    pool
}

/// The documents of a joint step of `size` documents (fewer when the pool has fewer): `median` (the dense
/// cases' document, so the one-document case reads it as they do), then the documents with a full batch of
/// the row's `batch_size` (all with a query when none has one) that are longer than it, shortest first,
/// then the shortest ones.
pub fn step_documents(docs: &[TrainDoc], median: usize, batch_size: usize, size: usize) -> Vec<usize> {
    let order = by_length(docs, batch_size);
    let longer = order.partition_point(|&d| length_key(docs, d) <= length_key(docs, median));
    let others = order[longer..].iter().chain(&order[..longer]).copied().filter(|&d| d != median);
    std::iter::once(median).chain(others).take(size).collect()
}

/// What [`by_length`] orders documents by: word pieces, then position.
fn length_key(docs: &[TrainDoc], d: usize) -> (usize, usize) {
    (docs[d].ids.iter().map(Vec::len).sum(), d)
}

/// The documents of median and of largest word-piece count among those with at least `batch_size` training
/// queries (all documents with a query when none has that many).
pub fn median_and_longest(docs: &[TrainDoc], batch_size: usize) -> Option<(usize, usize)> {
    let pool = by_length(docs, batch_size);
    Some((*pool.get(pool.len().checked_sub(1)? / 2)?, *pool.last()?))
}
