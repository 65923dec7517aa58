//! Indexing time and peak memory per document against document length, for flat dense retrieval, BM25
//! and untrained SproutRAG over token attention, its leaves encoded alone or in context (the scale
//! benchmark). Long documents are the
//! committed 10-K excerpt (experiments/fixtures/filing-mini) repeated paragraph by paragraph up to 1k,
//! 10k, 50k and 200k words. Each (length, method) runs the real pipeline (`run_in`: units cut to the
//! encoder, embeddings, the method's index) in a process of its own, so its peak memory (VmHWM, which
//! includes the encoder's weights) is its own. Prints a table.
//!
//!     cargo bench --profile release -p arbor-experiments --bench scale
//!     ARBOR_SCALE_WORDS=1000,10000 cargo bench --profile release -p arbor-experiments --bench scale    # fewer lengths
//!
//! `--profile release`: the build users run (the bench profile inherits it unchanged since stop 78); the
//! benchmark refuses a build of the encoder's crate below opt-level 3.

use std::path::Path;
use std::process::Command;

use arbor_experiments::cache::Cache;
use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::run_in;
use arbor_experiments::trained::Training;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const METHODS: [(&str, &str); 4] = [
    ("flat", "Flat"),
    ("BM25", "Bm25"),
    ("SproutRAG token attention", "SproutRag((attention: TokenBlocks(window_tokens: 256), search: Beam((beam_width: 5))))"),
    (
        "SproutRAG token attention, leaves in context",
        "SproutRag((attention: TokenBlocks(window_tokens: 256, leaf_vectors: InContext), search: Beam((beam_width: 5))))",
    ),
];

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--child") {
        return child(args[at + 1].parse()?, args[at + 2].parse()?);
    }
    arbor_models::processor::ensure_release_build("cargo bench --profile release -p arbor-experiments --bench scale").map_err(anyhow::Error::msg)?;
    let words: Vec<usize> = std::env::var("ARBOR_SCALE_WORDS")
        .unwrap_or_else(|_| "1000,10000,50000,200000".into())
        .split(',')
        .map(|w| w.trim().parse())
        .collect::<Result<_, _>>()?;
    println!("| words | units | method | index s | peak memory MB |");
    println!("|---|---|---|---|---|");
    for &w in &words {
        for m in 0..METHODS.len() {
            let out = Command::new(std::env::current_exe()?).args(["--child", &w.to_string(), &m.to_string()]).output()?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            let Some(line) = stdout.lines().find_map(|l| l.strip_prefix("RESULT ")) else {
                anyhow::bail!("{w} words, {}: {}", METHODS[m].0, String::from_utf8_lossy(&out.stderr));
            };
            let f: Vec<&str> = line.split(' ').collect();
            println!("| {w} | {} | {} | {} | {} |", f[0], METHODS[m].0, f[1], f[2]);
        }
    }
    Ok(())
}

/// One (length, method) run; prints `RESULT <units> <index seconds> <peak MB>`.
fn child(words: usize, method: usize) -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = std::fs::read_to_string(root.join("fixtures/filing-mini/documents.jsonl"))?;
    let doc: serde_json::Value = serde_json::from_str(fixture.lines().next().expect("one document"))?;
    let paragraphs: Vec<&str> = doc["text"].as_str().expect("text").split("\n\n").filter(|p| !p.trim().is_empty()).collect();
    let (mut text, mut count) = (String::new(), 0);
    for p in paragraphs.iter().cycle() {
        if count >= words {
            break;
        }
        text.push_str(p);
        text.push_str("\n\n");
        count += p.split_whitespace().count();
    }
    let tmp = tempfile::tempdir()?;
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data)?;
    let document = serde_json::json!({ "id": "long", "title": "", "text": text, "split": "test" });
    let query = serde_json::json!({ "id": "q", "text": "income tax credit carry-forwards", "doc_ids": ["long"],
        "evidence": [{ "doc_id": "long", "start": 0, "end": 40 }], "answers": [], "split": "test" });
    std::fs::write(data.join("documents.jsonl"), format!("{document}\n"))?;
    std::fs::write(data.join("queries.jsonl"), format!("{query}\n"))?;
    let ron = format!(
        "Experiment(name: \"scale\", data: (format: Jsonl, path: {:?}), units: (max_sentences: 2), methods: [{}])",
        data.display().to_string(),
        METHODS[method].1
    );
    let exp = Experiment::parse(&ron, &tmp.path().join("scale.ron"))?;
    let run = tmp.path().join("run");
    let report = run_in(&exp, &run, &Cache::new(&run), &Training::Allowed)?;
    let peak_mib = arbor_trainers::bench::peak_rss_mib().unwrap_or(f64::NAN);
    let units = report.units.units;
    println!("RESULT {units} {:.1} {:.0}", report.methods[0].index_ms_per_doc.unwrap_or(f64::NAN) / 1000.0, peak_mib);
    Ok(())
}
