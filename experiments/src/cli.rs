//! Command-line arguments shared by the binaries.

use std::path::PathBuf;

use clap::Parser;

use crate::experiment::Experiment;

/// Runs an experiment file and writes a run folder.
#[derive(Debug, Parser)]
pub struct RunArgs {
    /// The experiment file (RON), e.g. experiments/quickstart.ron
    pub experiment: PathBuf,
    /// Where run folders go: <out>/<name>/<timestamp>
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Continue the newest run of this experiment from its last checkpoint
    #[arg(long)]
    pub resume: bool,
}

/// Loads the experiment, runs it, prints the report table and where the run folder is.
pub fn run_experiment(args: &RunArgs) -> anyhow::Result<()> {
    let exp = Experiment::load(&args.experiment)?;
    let (dir, report) = crate::run::run(&exp, &args.out, args.resume)?;
    println!("{}", report.markdown());
    println!("run folder: {}", dir.display());
    Ok(())
}
