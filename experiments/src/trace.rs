//! `arbor trace-forward`: the encoder's forward pass over the first case of a `arbor bench-step` batches
//! file, every step's result written as float32 ([`arbor_models::bert::trace`]), so that two builds (the
//! CUDA build and the CPU build on one machine) or a build and PyTorch (`scripts/trace_forward.py torch`
//! on the same file) can be compared step by step (`scripts/trace_forward.py compare`): where a first loss
//! parts from PyTorch's (issue 65; `scripts/gpu-check.sh` check 7). Burn's module forward runs on every
//! build (the CPU build's training step runs its own hand-written one, which the trainers' tests hold to
//! it), mean-pooled as the benchmark's step pools, in the file's precision.

use std::path::PathBuf;

use anyhow::Context as _;
use arbor_files::atomic_write;
use arbor_models::DefaultBackend;
use arbor_models::bert::trace::{to_safetensors, trace_side};
use arbor_models::bert::{Precision, load_bert};
use arbor_models::encoder::read_config;
use arbor_models::pooling::Pooling;
use serde::Deserialize;

#[derive(clap::Args, Debug)]
pub struct TraceArgs {
    /// A batches file written by `arbor bench-step --batches` (its encoder folder, precision and first case)
    pub batches: PathBuf,
    /// Where the trace goes (safetensors: one float32 tensor a step, `queries.*` and `window.*`)
    #[arg(long)]
    pub out: PathBuf,
}

/// What the trace reads of a batches file.
#[derive(Deserialize)]
struct Batches {
    model_dir: PathBuf,
    #[serde(default)]
    precision: Precision,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    batch: Sides,
}

#[derive(Deserialize)]
struct Sides {
    queries: Vec<Vec<u32>>,
    window: Vec<Vec<u32>>,
}

pub fn trace_forward(args: &TraceArgs) -> anyhow::Result<()> {
    let what = "a batches file of `arbor bench-step --batches`";
    let text = std::fs::read_to_string(&args.batches).with_context(|| format!("reading {}: {what}", args.batches.display()))?;
    let batches: Batches = serde_json::from_str(&text).with_context(|| format!("{}: not {what}", args.batches.display()))?;
    let case = batches.cases.first().with_context(|| format!("{}: holds no case", args.batches.display()))?;
    let dir = &batches.model_dir;
    let config = read_config(dir)?;
    let device = Default::default();
    let precision = batches.precision;
    precision.ensure_supported::<DefaultBackend>(&device).map_err(|e| anyhow::anyhow!("{}: {e}", args.batches.display()))?;
    let bert = load_bert::<DefaultBackend>(&config, &dir.join("model.safetensors"), &device)?;
    let mut traced = Vec::new();
    for (side, rows) in [("queries", &case.batch.queries), ("window", &case.batch.window)] {
        let rows: Vec<&[u32]> = rows.iter().map(Vec::as_slice).collect();
        traced.extend(trace_side(&bert, &rows, side, Pooling::Mean, precision, &device));
    }
    atomic_write(&args.out, &to_safetensors(&traced)?).with_context(|| format!("writing {}", args.out.display()))?;
    println!("{}: {} steps of case {:?} ({}, {precision:?}) traced", args.out.display(), traced.len(), case.name, arbor_models::backend::NAME);
    Ok(())
}
