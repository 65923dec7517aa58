//! `ablate SWEEP.ron [--out DIR]`: runs every point of a sweep (finished runs are read back), then prints
//! its table and where the sweep folder, table and plots are.

use std::path::PathBuf;

use arbor_ablations::runner::run_sweep;
use arbor_ablations::sweep::LoadedSweep;
use clap::Parser;

// See experiments/src/bin/train.rs: mimalloc makes encoding about 20 % faster.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs a sweep over experiment settings and writes its table and plots.
#[derive(Debug, Parser)]
struct Args {
    /// The sweep file (RON), e.g. ablations/beam-width.ron
    sweep: PathBuf,
    /// Where sweep folders go (`<out>/<sweep name>/`), with artefacts shared in `<out>/shared/`
    #[arg(long, default_value = "runs")]
    out: PathBuf,
}

fn main() -> anyhow::Result<()> {
    arbor_experiments::alloc::keep_freed_memory();
    let args = Args::parse();
    let start = std::time::Instant::now();
    let loaded = LoadedSweep::load(&args.sweep)?;
    let outcome = run_sweep(&loaded, &args.out)?;
    println!("{}", std::fs::read_to_string(outcome.dir.join("table.md"))?);
    let ran = outcome.runs.iter().filter(|r| r.status == "ran").count();
    println!(
        "{} runs ({ran} run now, {} finished before) in {:.1} s; sweep folder: {}",
        outcome.runs.len(),
        outcome.runs.len() - ran,
        start.elapsed().as_secs_f64(),
        outcome.dir.display()
    );
    Ok(())
}
