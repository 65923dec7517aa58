//! `reproduce [--sweeps DIR] [--out DIR]`: runs the sweeps behind the papers' tables (finished runs are
//! read back) and writes `<out>/reproduce/report.md` with each paper's numbers beside ours.

use std::path::PathBuf;

use clap::Parser;

// See experiments/src/bin/train.rs: mimalloc makes encoding about 20 % faster.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Regenerates the papers' tables on our data.
#[derive(Debug, Parser)]
struct Args {
    /// The folder holding the sweep files (table1.ron, beam-width.ron, ...)
    #[arg(long, default_value = "ablations")]
    sweeps: PathBuf,
    /// Where sweep folders go; the report is written to `<out>/reproduce/`
    #[arg(long, default_value = "runs")]
    out: PathBuf,
}

fn main() -> anyhow::Result<()> {
    arbor_experiments::alloc::keep_freed_memory();
    let args = Args::parse();
    let start = std::time::Instant::now();
    let dir = arbor_ablations::reproduce::reproduce(&args.sweeps, &args.out)?;
    println!("{}", std::fs::read_to_string(dir.join("report.md"))?);
    println!("report: {} ({:.1} s)", dir.join("report.md").display(), start.elapsed().as_secs_f64());
    Ok(())
}
