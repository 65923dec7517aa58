//! `arbor`: the umbrella command (`arbor embed`, `arbor data check`, `arbor evaluate`, `arbor train`, `arbor compare`, `arbor inspect`,
//! `arbor index`, `arbor query`, `arbor serve`, `arbor bench-step`, `arbor trace-forward`, `arbor export`, `arbor cpu`).

use arbor_experiments::bench_step::{BenchStepArgs, bench_step};
use arbor_experiments::cli::{EvaluateArgs, TrainArgs, evaluate, train};
use arbor_experiments::compare::{CompareArgs, compare};
use arbor_experiments::data_check::{DataCommand, data};
use arbor_experiments::embed::{EmbedArgs, embed};
use arbor_experiments::export::{ExportArgs, export};
use arbor_experiments::init_model::{InitModelArgs, init_model};
use arbor_experiments::inspect::{InspectArgs, inspect};
use arbor_experiments::library::index::{IndexArgs, index};
use arbor_experiments::library::query::{QueryArgs, query};
use arbor_experiments::library::serve::{ServeArgs, serve};
use arbor_experiments::trace::{TraceArgs, trace_forward};
use clap::{Parser, Subcommand};

// mimalloc reuses the large tensor buffers that glibc's malloc maps and unmaps on every op (about 20 %
// faster encoding here).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "arbor", about = "Learned hierarchical retrieval over long documents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Embed lines of text with the configured encoder; writes JSONL {"text", "embedding"}
    Embed(EmbedArgs),
    /// Evaluate an experiment file, training nothing
    Evaluate(EvaluateArgs),
    /// What a data folder holds as a format reads it (`arbor data check DIR --format F`)
    #[command(subcommand)]
    Data(DataCommand),
    /// Train (where a method trains) and evaluate an experiment file
    Train(TrainArgs),
    /// The rows two runs share, paired over their queries: differences, intervals, p-values
    Compare(CompareArgs),
    /// Write RUN_DIR/inspect.html: per query, the gold and each method's items highlighted, IE, beam paths
    Inspect(InspectArgs),
    /// Index a folder of one's own documents into an SQLite file (incremental: new, changed, removed files)
    Index(IndexArgs),
    /// Rank an index's units for a question: documents, character and byte offsets, scores, text
    Query(QueryArgs),
    /// Answer `arbor query`'s questions over HTTP (GET /query?q=..., POST /query), the JSON of `query --json`
    Serve(ServeArgs),
    /// Time the fine-tuning step on fixed batches of an experiment's training split, and write those batches for PyTorch's side (scripts/bench_step.sh)
    BenchStep(BenchStepArgs),
    /// The encoder's forward pass over a bench-step batches file's first case, every step written (safetensors) for scripts/trace_forward.py
    TraceForward(TraceArgs),
    /// Write a run's fine-tuned encoder (a Dense or SproutRAG row) as a sentence-transformers folder
    Export(ExportArgs),
    /// Write a randomly initialised encoder of the family and shape a config.json gives (for timing a step where the weights cannot travel)
    InitModel(InitModelArgs),
    /// The processor, the SIMD extensions the CPU kernels may use and the path the matrix products take
    Cpu,
}

fn main() -> anyhow::Result<()> {
    arbor_experiments::alloc::keep_freed_memory();
    match Cli::parse().command {
        Command::Embed(args) => embed(&args),
        Command::Evaluate(args) => evaluate(&args),
        Command::Data(command) => data(&command),
        Command::Train(args) => train(&args),
        Command::Compare(args) => compare(&args),
        Command::Inspect(args) => inspect(&args),
        Command::Index(args) => index(&args),
        Command::Query(args) => query(&args),
        Command::Serve(args) => serve(&args),
        Command::BenchStep(args) => bench_step(&args),
        Command::TraceForward(args) => trace_forward(&args),
        Command::Export(args) => export(&args),
        Command::InitModel(args) => init_model(&args),
        Command::Cpu => {
            println!("{}", arbor_models::processor::describe());
            Ok(())
        }
    }
}
