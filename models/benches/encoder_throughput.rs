//! Encoder throughput, arbor vs PyTorch sentence-transformers, on the same machine in one run, on the same
//! sentences, batch 32, best of 3 runs for each side:
//!
//! - 512 sentences of 20-40 tokens (the fixture's sentences of that length, cycled; squad-mini);
//! - where `ARBOR_DATA` holds legalbench-rag-mini, the first 2,048 sentences of its contracts (arbor's
//!   sentence splitter, in document order, whitespace collapsed), the workload of issue 44's measurement.
//!
//! It prints one table: sentences and tokens a second per side, the ratio, and the torch and
//! sentence-transformers versions PyTorch ran with. PyTorch runs through scripts/bench_torch.py, with the
//! interpreter `$PYTHON` (default python3; it needs sentence-transformers); without it, arbor's rows are
//! printed alone.
//!
//!     PYTHON=/path/to/python ARBOR_DATA=../shared/data cargo bench --profile release -p arbor-models --bench encoder_throughput
//!
//! The encoder is all-MiniLM-L6-v2 unless `ARBOR_BENCH_MODEL` names another (`all-mpnet-base-v2`, or a
//! model folder of a family arbor reads), which both sides then run.
//!
//! `--profile release`: the build users run (the bench profile inherits it unchanged; until stop 78 it
//! compiled arbor-models at opt-level 1, about half the encoder's speed). The benchmark refuses any build
//! of arbor-models below opt-level 3.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use arbor_datasets::loaders::load_jsonl;
use arbor_datasets::sentences::split_sentences;
use arbor_models::{DefaultBackend, EncoderConfig, ModelSource, SentenceEncoder, default_device, hub};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCH: usize = 32;
const REPEATS: usize = 3;

/// One workload: its name and its sentences.
struct Workload {
    name: String,
    sentences: Vec<String>,
}

/// What PyTorch printed for one workload.
struct Torch {
    sentences_per_second: f64,
    versions: String,
}

fn main() -> anyhow::Result<()> {
    arbor_models::processor::ensure_release_build("cargo bench --profile release -p arbor-models --bench encoder_throughput")
        .map_err(anyhow::Error::msg)?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = std::env::var_os("ARBOR_BENCH_MODEL").map_or(ModelSource::AllMiniLmL6V2, |m| ModelSource::from_arg(Path::new(&m)));
    let config = EncoderConfig { model, ..EncoderConfig::default() };
    let encoder = SentenceEncoder::<DefaultBackend>::load(&config, &default_device())?;
    let mut workloads = vec![fixture_sentences(&root, &encoder)?];
    if let Some(data) = std::env::var_os("ARBOR_DATA") {
        // Relative to the repository (cargo runs a bench in its crate's folder).
        let legal = root.join(data).join("legalbench-rag-mini");
        if legal.is_dir() {
            workloads.push(contract_sentences(&legal)?);
        } else {
            println!("(ARBOR_DATA has no legalbench-rag-mini: its workload skipped)");
        }
    }
    let model_dir = hub::resolve(&config.model)?;
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let backend = std::any::type_name::<DefaultBackend>().rsplit("::").next().unwrap_or("").to_owned();
    println!("{}\n", arbor_models::processor::describe());
    println!("encoder: {:?} ({}, {} tokens read)\n", config.model, encoder.config.model_type, encoder.max_seq_length());
    println!(
        "| workload (batch {BATCH}, best of {REPEATS}, {threads} threads) | arbor ({backend}) sentences/s | tokens/s | PyTorch sentences/s | tokens/s | arbor / PyTorch |"
    );
    println!("|---|---|---|---|---|---|");
    let mut versions = None;
    for w in &workloads {
        let texts: Vec<&str> = w.sentences.iter().map(String::as_str).collect();
        let tokens: usize = encoder.tokenize(&texts).iter().map(Vec::len).sum();
        encoder.embed(&texts[..BATCH.min(texts.len())], BATCH, &mut |_| {}); // warm-up
        let mut best = f64::INFINITY;
        for _ in 0..REPEATS {
            let start = Instant::now();
            encoder.embed(&texts, BATCH, &mut |_| {});
            best = best.min(start.elapsed().as_secs_f64());
        }
        let arbor = texts.len() as f64 / best;
        let per_token = tokens as f64 / texts.len() as f64;
        let (torch, ratio) = match run_torch(&root, &python, &model_dir.path, &w.sentences) {
            Ok(t) => {
                versions = Some(t.versions);
                (
                    format!("{:.1} | {:.0}", t.sentences_per_second, t.sentences_per_second * per_token),
                    format!("{:.2}x", arbor / t.sentences_per_second),
                )
            }
            Err(e) => {
                versions.get_or_insert(format!("PyTorch rows skipped: {e}"));
                ("n/a | n/a".into(), "n/a".into())
            }
        };
        println!("| {} | {arbor:.1} | {:.0} | {torch} | {ratio} |", w.name, arbor * per_token);
    }
    println!("\nPyTorch: {}", versions.unwrap_or_default());
    Ok(())
}

/// The fixture's sentences of 20-40 tokens, cycled to 512.
fn fixture_sentences(root: &Path, encoder: &SentenceEncoder<DefaultBackend>) -> anyhow::Result<Workload> {
    const N: usize = 512;
    let corpus = load_jsonl(&root.join("experiments/fixtures/squad-mini"))?;
    let mut sentences = Vec::new();
    for doc in &corpus.documents {
        for s in split_sentences(&doc.text) {
            let text = &doc.text[s.start..s.end];
            if (20..=40).contains(&encoder.tokenize(&[text])[0].len()) {
                sentences.push(text.to_owned());
            }
        }
    }
    anyhow::ensure!(!sentences.is_empty(), "the fixture has no sentence of 20-40 tokens");
    // The fixture holds fewer than 512 such sentences: cycle through them.
    let sentences = sentences.iter().cycle().take(N).cloned().collect();
    Ok(Workload { name: format!("{N} sentences of 20-40 tokens (squad-mini)"), sentences })
}

/// The first 2,048 sentences of legalbench-rag-mini's contracts, in document order.
fn contract_sentences(dir: &Path) -> anyhow::Result<Workload> {
    const N: usize = 2048;
    let corpus = load_jsonl(dir)?;
    let sentences: Vec<String> = corpus
        .documents
        .iter()
        .flat_map(|doc| split_sentences(&doc.text).into_iter().map(|s| doc.text[s.start..s.end].split_whitespace().collect::<Vec<_>>().join(" ")))
        .filter(|s| !s.is_empty())
        .take(N)
        .collect();
    anyhow::ensure!(sentences.len() == N, "legalbench-rag-mini has {} sentences, fewer than {N}", sentences.len());
    Ok(Workload { name: format!("the first {N} sentences of legalbench-rag-mini's contracts"), sentences })
}

/// scripts/bench_torch.py on the sentences: PyTorch's sentences a second and the versions it ran with.
fn run_torch(root: &Path, python: &str, model: &Path, sentences: &[String]) -> anyhow::Result<Torch> {
    let file = std::env::temp_dir().join(format!("arbor-bench-{}.txt", std::process::id()));
    std::fs::write(&file, sentences.join("\n") + "\n")?;
    let out =
        Command::new(python).arg(root.join("scripts/bench_torch.py")).arg(&file).arg(model).arg(BATCH.to_string()).arg(REPEATS.to_string()).output();
    let _ = std::fs::remove_file(&file);
    let out = out.map_err(|e| anyhow::anyhow!("cannot run {python}: {e}"))?;
    anyhow::ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("bench_torch.py failed"));
    let v: serde_json::Value = serde_json::from_slice(out.stdout.trim_ascii())?;
    Ok(Torch {
        sentences_per_second: v["sentences_per_second"].as_f64().unwrap_or(f64::NAN),
        versions: format!(
            "torch {}, sentence-transformers {}, {} threads",
            v["torch"].as_str().unwrap_or("?"),
            v["sentence_transformers"].as_str().unwrap_or("?"),
            v["threads"]
        ),
    })
}
