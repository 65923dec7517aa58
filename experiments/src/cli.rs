//! Command-line arguments shared by the binaries.

use std::path::PathBuf;

use clap::Parser;

use arbor_eval::Report;

use crate::experiment::Experiment;

/// Trains (where a method trains) and evaluates an experiment file, and writes a run folder.
#[derive(Debug, Parser)]
pub struct TrainArgs {
    /// The experiment file (RON), e.g. experiments/quickstart.ron
    pub experiment: PathBuf,
    /// Where run folders go: `<out>/<name>/<timestamp>`
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Continue the newest run of this experiment from its last checkpoint
    #[arg(long)]
    pub resume: bool,
    /// Keep embeddings, trained models and trees in this folder, shared between runs, instead of in the
    /// run folder (safe: every artefact is keyed by what it was computed from)
    #[arg(long)]
    pub cache: Option<PathBuf>,
}

/// Evaluates an experiment file without training anything, and writes a run folder.
#[derive(Debug, Parser)]
pub struct EvaluateArgs {
    /// The experiment file (RON)
    pub experiment: PathBuf,
    /// Where run folders go: `<out>/<name>/<timestamp>`
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// A run folder of `train` whose trained models the experiment's trained methods use (on this
    /// experiment's data, which may be another corpus)
    #[arg(long)]
    pub from: Option<PathBuf>,
    /// As for `train --cache`
    #[arg(long)]
    pub cache: Option<PathBuf>,
}

pub fn train(args: &TrainArgs) -> anyhow::Result<()> {
    let exp = Experiment::load(&args.experiment)?;
    let (dir, report) = crate::run::run(&exp, &args.out, args.resume, args.cache.as_deref())?;
    print(&report, &dir);
    Ok(())
}

pub fn evaluate(args: &EvaluateArgs) -> anyhow::Result<()> {
    let exp = Experiment::load(&args.experiment)?;
    let (dir, report) = crate::run::evaluate_only(&exp, &args.out, args.from.as_deref(), args.cache.as_deref())?;
    print(&report, &dir);
    Ok(())
}

fn print(report: &Report, dir: &std::path::Path) {
    println!("{}", report.markdown());
    println!("run folder: {}", dir.display());
}
