//! `evaluate FILE.ron [--out DIR]`: evaluates the experiment's methods and writes a run folder.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    arbor_experiments::cli::run_experiment(&arbor_experiments::cli::RunArgs::parse())
}
