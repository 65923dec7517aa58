//! `arbor inspect RUN_DIR`: one static HTML page per run (`RUN_DIR/inspect.html`, no server, opens from
//! disk) to read a run's errors: per query, the documents with the gold spans and each method's ranked
//! items highlighted in its own colour, every method's IE, the way beam search went down to each item of a
//! tree method, and the queries where two chosen methods differ most. It reads the run's experiment.ron
//! (to load the corpus), report.json and retrievals.jsonl; [`page`] renders.

pub mod page;

use std::path::{Path, PathBuf};

use anyhow::Context;
use arbor_eval::scoring::report::Report;
use arbor_eval::scoring::retrievals::{self, Retrieval};
use arbor_files::atomic_write;
use clap::Parser;

use crate::experiment::Experiment;

#[derive(Debug, Parser)]
pub struct InspectArgs {
    /// A run folder of `train`, `evaluate` or a sweep point
    pub run: PathBuf,
    /// The rows to show (a part of their name, as in the report; every row by default, at most 8)
    #[arg(long = "method")]
    pub methods: Vec<String>,
    /// The two rows whose disagreements are listed first (default: the first trained row and its first
    /// control, else the two best rows)
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub pair: Vec<String>,
    /// Where to write the page (default: RUN_DIR/inspect.html)
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The colours the rows are drawn in, one per shown row.
pub const MAX_ROWS: usize = 8;

pub fn inspect(args: &InspectArgs) -> anyhow::Result<()> {
    let out = args.out.clone().unwrap_or_else(|| args.run.join("inspect.html"));
    let shown = write_page(&args.run, &args.methods, &args.pair, &out)?;
    println!("{} queries, {} methods: {}", shown.0, shown.1, out.display());
    Ok(())
}

/// Renders the page of the run in `run` into `out`; returns (queries, rows) shown.
pub fn write_page(run: &Path, methods: &[String], pair: &[String], out: &Path) -> anyhow::Result<(usize, usize)> {
    let exp = Experiment::load(&run.join("experiment.ron")).with_context(|| format!("{} is not a run folder", run.display()))?;
    let report = crate::compare::load(run)?;
    let all = retrievals::read(run)?;
    let (corpus, _) = crate::run::load_corpus(&exp)?;
    let rows = choose_rows(&report, methods)?;
    let pair = choose_pair(&report, &rows, pair)?;
    let html = page::render(&page::Inputs { report: &report, corpus: &corpus, retrievals: &all, rows: &rows, pair });
    atomic_write(out, html.as_bytes()).with_context(|| format!("cannot write {}", out.display()))?;
    Ok((report.queries.len(), rows.len()))
}

/// The report rows named by `wanted` (each a part of exactly one row's name), or the first
/// [`MAX_ROWS`] rows.
fn choose_rows(report: &Report, wanted: &[String]) -> anyhow::Result<Vec<usize>> {
    if wanted.is_empty() {
        return Ok((0..report.methods.len().min(MAX_ROWS)).collect());
    }
    anyhow::ensure!(wanted.len() <= MAX_ROWS, "at most {MAX_ROWS} rows can be shown (--method given {} times)", wanted.len());
    wanted.iter().map(|w| find_row(report, w)).collect()
}

/// The one row whose name holds `part`; none or several is an error listing the rows.
fn find_row(report: &Report, part: &str) -> anyhow::Result<usize> {
    let hits: Vec<usize> = (0..report.methods.len()).filter(|&i| report.methods[i].name.contains(part)).collect();
    let names = || report.methods.iter().map(|m| format!("  {}", m.name)).collect::<Vec<_>>().join("\n");
    match hits[..] {
        [one] => Ok(one),
        [] => anyhow::bail!("no row of the run is named like {part:?}; its rows:\n{}", names()),
        _ => anyhow::bail!("{part:?} names {} rows; say which:\n{}", hits.len(), names()),
    }
}

/// The two rows (indices into the report) whose per-query differences are listed.
fn choose_pair(report: &Report, rows: &[usize], pair: &[String]) -> anyhow::Result<Option<(usize, usize)>> {
    if let [a, b] = pair {
        return Ok(Some((find_row(report, a)?, find_row(report, b)?)));
    }
    let m = &report.methods;
    let control_of = |t: usize| rows.iter().copied().find(|&c| m[c].role.controls().contains(&m[t].name));
    if let Some((t, c)) = rows.iter().find_map(|&t| m[t].role.is_trained().then(|| control_of(t).map(|c| (t, c))).flatten()) {
        return Ok(Some((t, c)));
    }
    let mut best: Vec<usize> = rows.to_vec();
    best.sort_by(|&a, &b| m[b].metrics.ie_mean.total_cmp(&m[a].metrics.ie_mean));
    Ok((best.len() >= 2).then(|| (best[0], best[1])))
}

/// The retrievals of row `name`, by query id.
pub fn of_row<'a>(all: &'a [Retrieval], name: &str) -> std::collections::HashMap<&'a str, &'a Retrieval> {
    all.iter().filter(|r| r.method == name).map(|r| (r.query.as_str(), r)).collect()
}
