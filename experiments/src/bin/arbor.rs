//! `arbor`: the umbrella command (`arbor embed`, `arbor evaluate`, `arbor train`, `arbor compare`).

use arbor_experiments::cli::{EvaluateArgs, TrainArgs, evaluate, train};
use arbor_experiments::compare::{CompareArgs, compare};
use arbor_experiments::embed::{EmbedArgs, embed};
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
    /// Train (where a method trains) and evaluate an experiment file
    Train(TrainArgs),
    /// The rows two runs share, paired over their queries: differences, intervals, p-values
    Compare(CompareArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Embed(args) => embed(&args),
        Command::Evaluate(args) => evaluate(&args),
        Command::Train(args) => train(&args),
        Command::Compare(args) => compare(&args),
    }
}
