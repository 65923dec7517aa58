//! Encoder throughput, arbor vs PyTorch sentence-transformers, on the same machine in one run.
//!
//! 512 sentences of 20-40 tokens (the fixture's 380 such sentences, cycled; squad-mini), batch 32, best of 3 runs for
//! each side; prints a table and the ratio. PyTorch runs through scripts/bench_torch.py (needs
//! `pip install sentence-transformers`); without it, arbor's row is printed alone.
//!
//!     cargo bench -p arbor-models --bench encoder_throughput

use std::process::Command;
use std::time::Instant;

use arbor_datasets::loaders::load_jsonl;
use arbor_datasets::sentences::split_sentences;
use arbor_models::{DefaultBackend, EncoderConfig, SentenceEncoder, default_device, hub};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const N: usize = 512;
const BATCH: usize = 32;
const REPEATS: usize = 3;

fn main() -> anyhow::Result<()> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus = load_jsonl(&root.join("experiments/fixtures/squad-mini"))?;
    let config = EncoderConfig::default();
    let encoder = SentenceEncoder::<DefaultBackend>::load(&config, &default_device())?;
    let mut sentences = Vec::new();
    for doc in &corpus.documents {
        for s in split_sentences(&doc.text) {
            let text = &doc.text[s.start..s.end];
            let tokens = encoder.tokenize(&[text])[0].len();
            if (20..=40).contains(&tokens) {
                sentences.push(text.to_owned());
            }
        }
    }
    anyhow::ensure!(!sentences.is_empty(), "the fixture has no sentence of 20-40 tokens");
    // The fixture holds fewer than 512 such sentences: cycle through them.
    let sentences: Vec<String> = sentences.iter().cycle().take(N).cloned().collect();
    let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
    encoder.embed(&texts[..BATCH], BATCH, &mut |_| {}); // warm-up
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        let start = Instant::now();
        encoder.embed(&texts, BATCH, &mut |_| {});
        best = best.min(start.elapsed().as_secs_f64());
    }
    let arbor = N as f64 / best;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("| encoder ({N} sentences of 20-40 tokens, batch {BATCH}, best of {REPEATS}) | sentences/s | threads |");
    println!("|---|---|---|");
    println!("| arbor (Burn ndarray, {}) | {arbor:.1} | {threads} |", std::any::type_name::<DefaultBackend>().rsplit("::").next().unwrap_or(""));
    let file = std::env::temp_dir().join(format!("arbor-bench-{}.txt", std::process::id()));
    std::fs::write(&file, sentences.join("\n") + "\n")?;
    let model_dir = hub::resolve(&config.model)?;
    let script = root.join("scripts/bench_torch.py");
    let out = Command::new("python3").arg(&script).arg(&file).arg(&model_dir.path).arg(BATCH.to_string()).arg(REPEATS.to_string()).output();
    let _ = std::fs::remove_file(&file);
    match out {
        Ok(out) if out.status.success() => {
            let v: serde_json::Value = serde_json::from_slice(out.stdout.trim_ascii())?;
            let torch = v["sentences_per_second"].as_f64().unwrap_or(f64::NAN);
            println!("| PyTorch sentence-transformers | {torch:.1} | {} |", v["threads"]);
            println!("\narbor / PyTorch = {:.2}x", arbor / torch);
        }
        Ok(out) => println!("\n(PyTorch row skipped: {})", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")),
        Err(e) => println!("\n(PyTorch row skipped: cannot run python3: {e})"),
    }
    Ok(())
}
