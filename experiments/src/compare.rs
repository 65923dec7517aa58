//! `arbor compare A B [--row R]... [--against S]`: the rows two runs share (or rows R of A against row S
//! of B), paired over their queries (see `arbor_eval::scoring::across`), printed as a markdown table. A
//! and B are run folders or report.json files.

use std::path::{Path, PathBuf};

use anyhow::Context;
use arbor_eval::scoring::across::{across, markdown};
use arbor_eval::scoring::report::Report;
use clap::Parser;

#[derive(Debug, Parser)]
pub struct CompareArgs {
    /// Run A: a run folder or its report.json.
    pub a: PathBuf,
    /// Run B, the same way.
    pub b: PathBuf,
    /// Compare only these rows (by name, as in the reports); every row both runs hold by default.
    #[arg(long = "row")]
    pub rows: Vec<String>,
    /// Compare them with this row of B instead of their namesakes (with A = B: two rows of one run).
    #[arg(long)]
    pub against: Option<String>,
}

/// A report from a run folder or a report.json file.
pub fn load(path: &Path) -> anyhow::Result<Report> {
    let file = if path.is_dir() { path.join("report.json") } else { path.to_owned() };
    let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read the report {}", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not an arbor report.json", file.display()))
}

pub fn compare(args: &CompareArgs) -> anyhow::Result<()> {
    let (a, b) = (load(&args.a)?, load(&args.b)?);
    let comparisons = across(&a, &b, &args.rows, args.against.as_deref()).map_err(anyhow::Error::msg)?;
    let commit = |r: &Report| r.provenance.as_ref().map_or("unrecorded".to_owned(), |p| p.commit.clone());
    println!("A: {} ({}; code {})", args.a.display(), a.experiment, commit(&a));
    println!("B: {} ({}; code {})\n", args.b.display(), b.experiment, commit(&b));
    print!("{}", markdown(&a, &b, &comparisons));
    Ok(())
}
