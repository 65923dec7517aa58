//! `train FILE.ron [--out DIR]`: trains the experiment's methods, then evaluates them. Methods without
//! training (flat, BM25) are evaluated directly.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    arbor_experiments::cli::run_experiment(&arbor_experiments::cli::RunArgs::parse())
}
