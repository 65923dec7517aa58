//! Running a sweep: every expanded run is a normal run folder under `<out>/<sweep>/runs/<slug>/`; all
//! runs (and every sweep under the same `out`) share `<out>/shared/`, where embeddings, trained models and
//! trees are kept under keys of their settings, so runs that differ only in retrieval settings train and
//! index once. A run whose report is there is read back, not rerun, unless its corpus or encoder changed
//! since (the report's input digests differ from today's): then it runs again, so a table never mixes
//! figures from different data. An interrupted run continues (its training from the last checkpoint, its
//! trees from those already saved). The sweep folder gets the sweep file, `index.json`, `table.md`,
//! `table.csv` and `plots/*.svg`. A finished run made by other code (its report's source digest is not this
//! binary's) is rerun too: its artefacts are read back where their own code is unchanged.
//!
//! With `select`, every point runs on the validation split (`runs/<slug>,split=validation/`), the best one
//! by the chosen row's figure is picked from those reports alone, and only that point then runs on the
//! base's split (`runs/<slug>,split=test/`, its report saying it was chosen on validation): no test figure
//! of any other point is ever computed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use arbor_eval::Report;
use arbor_eval::scoring::report::Inputs;
use arbor_experiments::cache::{Cache, key};
use arbor_experiments::experiment::{Experiment, Selection};
use arbor_experiments::provenance::SOURCES;
use arbor_experiments::run::{current_inputs, rows as report_rows, run_in};
use arbor_experiments::trained::Training;
use arbor_experiments::validation::VALIDATION;
use arbor_files::atomic_write;
use serde::{Deserialize, Serialize};

use crate::sweep::{LoadedSweep, Select, SweepRun};
use crate::table::{self, Row};

/// What happened to one run of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEntry {
    pub slug: String,
    pub settings: Vec<(String, String)>,
    /// Relative to the sweep folder.
    pub dir: String,
    /// `ran` now, `reused` (finished before), or `rerun` (finished before on inputs that have changed).
    pub status: String,
    /// How long the run took when it ran.
    pub seconds: f64,
}

/// A finished sweep: its folder, its rows, and what was run now.
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    pub dir: PathBuf,
    pub axes: Vec<String>,
    pub runs: Vec<RunEntry>,
    pub rows: Vec<Row>,
    /// The evaluation setting of the first run, in words (its report's `setting`).
    pub setting: String,
    /// With `select`: the chosen point and its report on the base's split.
    pub selected: Option<Selected>,
    /// Every run's report, in the order of `runs` (their comparisons, for verdicts).
    pub reports: Vec<Report>,
}

/// The point a selection chose on validation, and its one scoring on the base's split.
#[derive(Debug, Clone)]
pub struct Selected {
    pub slug: String,
    /// The deciding row's figure on validation.
    pub validation: f64,
    pub report: Report,
}

/// The folder all sweeps under `out` share artefacts in.
pub fn shared_dir(out: &Path) -> PathBuf {
    out.join("shared")
}

/// Runs (or reads back) every run of `loaded` under `out`, then writes the index, table and plots.
pub fn run_sweep(loaded: &LoadedSweep, out: &Path) -> anyhow::Result<SweepOutcome> {
    let dir = out.join(&loaded.sweep.name);
    std::fs::create_dir_all(dir.join("runs")).with_context(|| format!("cannot create {}", dir.display()))?;
    atomic_write(&dir.join("sweep.ron"), loaded.text.as_bytes())?;
    atomic_write(&dir.join("base.ron"), loaded.base.to_ron().as_bytes())?;
    let cache = Cache::new(shared_dir(out));
    let axes: Vec<String> = loaded.sweep.axes.iter().map(|a| a.name()).collect();
    // How long finished runs took when they ran (kept across invocations).
    let before: Vec<RunEntry> = std::fs::read_to_string(dir.join("index.json")).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let (mut entries, mut rows, mut setting, mut units) = (Vec::new(), Vec::new(), String::new(), Vec::new());
    // Today's input digests, per corpus and encoder (runs of a sweep mostly share one).
    let mut inputs: HashMap<String, Inputs> = HashMap::new();
    let points: Vec<SweepRun> = match loaded.sweep.select {
        None => loaded.runs.iter().cloned().map(every_point_on_test).collect(),
        Some(_) => loaded.runs.iter().map(|r| on_split(r, VALIDATION, Selection::Fixed)).collect(),
    };
    let mut reports = Vec::new();
    let total = points.len() + usize::from(loaded.sweep.select.is_some());
    for (i, run) in points.iter().enumerate() {
        let (report, entry) = run_point(run, &dir, &cache, &mut inputs, &before, (i + 1, total), &loaded.sweep.name)?;
        if i == 0 {
            setting = report.setting.clone();
        }
        units.push((run.slug.clone(), report.units.clone()));
        rows.extend(rows_of(run, report.clone())?);
        entries.push(entry);
        reports.push(report);
    }
    let mut selected = None;
    if let Some(select) = loaded.sweep.select {
        let (chosen, value) = choose(&reports, select)?;
        let split = loaded.base.data.split.clone().unwrap_or_else(|| "all".into());
        eprintln!("selected on validation: {} ({:?} {value:.2}); scoring it on {split} once", loaded.runs[chosen].slug, select.metric);
        let run = on_split(&loaded.runs[chosen], &split, Selection::Validation);
        let (report, entry) = run_point(&run, &dir, &cache, &mut inputs, &before, (total, total), &loaded.sweep.name)?;
        units.push((run.slug.clone(), report.units.clone()));
        rows.extend(rows_of(&run, report.clone())?);
        entries.push(entry);
        reports.push(report.clone());
        selected = Some(Selected { slug: loaded.runs[chosen].slug.clone(), validation: value, report });
    }
    atomic_write(&dir.join("index.json"), serde_json::to_string_pretty(&entries)?.as_bytes())?;
    let mut md = format!("# Sweep `{}`\n\nBase experiment: `{}` ({}).\n\n", loaded.sweep.name, loaded.sweep.base, loaded.path.display());
    if let (Some(select), Some(s)) = (loaded.sweep.select, &selected) {
        md.push_str(&format!(
            "**Selection on validation.** Every point ran on the validation split; the point whose row `{}` had the best \
             {:?} there ({:.2}) is `{}`, and it alone was then scored on the base's split, once (the rows with split = \
             {}). No other point has a test figure.\n\n",
            s.report.methods.get(select.method).map_or("?", |r| r.name.as_str()),
            select.metric,
            s.validation,
            s.slug,
            loaded.base.data.split.as_deref().unwrap_or("all"),
        ));
    }
    let mut axes = axes;
    if loaded.sweep.select.is_some() {
        axes.push("split".into());
    }
    md.push_str(&table::markdown(&axes, &rows));
    if let Some(s) = &selected {
        md.push_str(&format!("\n## The selected point on {}\n\n", loaded.base.data.split.as_deref().unwrap_or("all")));
        md.push_str(&s.report.comparisons_markdown());
    }
    let x_values: Vec<String> = first_axis_values(&points);
    let charts = table::charts(&loaded.sweep.name, &axes, &x_values, &rows);
    if !charts.is_empty() {
        std::fs::create_dir_all(dir.join("plots"))?;
        md.push('\n');
    }
    for (stem, chart) in &charts {
        atomic_write(&dir.join(format!("plots/{stem}.svg")), chart.svg().as_bytes())?;
        md.push_str(&format!("![{}](plots/{stem}.svg)\n", chart.title));
    }
    if !setting.is_empty() {
        md.push_str(&format!("\nSetting of the first run: {setting}\n"));
    }
    md.push_str("\n| run | leaf units | max tokens per unit | over-long sentences cut (tables) | encoder inputs truncated | unit tokens unseen |\n|---|---|---|---|---|---|\n");
    for (slug, u) in &units {
        md.push_str(&format!(
            "| {slug} | {} | {} | {} ({}) | {} | {} of {} |\n",
            u.units, u.max_tokens, u.cut_sentences, u.cut_tables, u.truncated_inputs, u.unseen_tokens, u.tokens
        ));
    }
    atomic_write(&dir.join("table.md"), md.as_bytes())?;
    atomic_write(&dir.join("table.csv"), table::csv(&axes, &rows).as_bytes())?;
    Ok(SweepOutcome { dir, axes, runs: entries, rows, setting, selected, reports })
}

/// Runs one point (or reads it back when it finished with today's inputs and code) into `runs/<slug>/`.
#[allow(clippy::too_many_arguments)]
fn run_point(
    run: &SweepRun,
    dir: &Path,
    cache: &Cache,
    inputs: &mut HashMap<String, Inputs>,
    before: &[RunEntry],
    (at, total): (usize, usize),
    sweep: &str,
) -> anyhow::Result<(Report, RunEntry)> {
    let run_dir = dir.join("runs").join(&run.slug);
    let start = Instant::now();
    let exp = &run.experiment;
    let today = match inputs.entry(key(&(&exp.data, exp.data.resolved_path()?, &exp.encoder))) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => e.insert(current_inputs(exp)?),
    };
    let same_code = |r: &Report| r.provenance.as_ref().is_some_and(|p| p.source_digest == SOURCES);
    let (report, status) = match finished(&run_dir, exp)? {
        Some(report) if report.inputs == *today && same_code(&report) => (report, "reused"),
        earlier => {
            let status = match earlier {
                Some(report) => {
                    let why = if report.inputs != *today { "its corpus or encoder changed" } else { "it was made by other code" };
                    eprintln!("{}: {why} since it ran: running it again", run_dir.display());
                    "rerun"
                }
                None => "ran",
            };
            eprintln!("[{at}/{total}] {sweep}: {}", run.slug);
            (run_in(exp, &run_dir, cache, &Training::Allowed).with_context(|| format!("sweep run {}", run_dir.display()))?, status)
        }
    };
    let mut seconds = start.elapsed().as_secs_f64();
    match status {
        "reused" => seconds = before.iter().find(|e| e.slug == run.slug).map_or(0.0, |e| e.seconds),
        _ => eprintln!("[{at}/{total}] {} done in {seconds:.0} s", run.slug),
    }
    let entry =
        RunEntry { slug: run.slug.clone(), settings: run.settings.clone(), dir: format!("runs/{}", run.slug), status: status.into(), seconds };
    Ok((report, entry))
}

/// A point of a sweep without `select`: its report says that every point was scored on its split (a
/// configuration the file fixed as chosen on test stays so).
fn every_point_on_test(mut run: SweepRun) -> SweepRun {
    if run.experiment.selection == Selection::Fixed {
        run.experiment.selection = Selection::EveryPointOnTest;
    }
    run
}

/// `run` evaluated on `split`: its slug and settings say so, and its report says how it was chosen.
fn on_split(run: &SweepRun, split: &str, selection: Selection) -> SweepRun {
    let mut experiment = run.experiment.clone();
    experiment.data.split = Some(split.to_owned());
    experiment.selection = selection;
    let mut settings = run.settings.clone();
    settings.push(("split".into(), split.to_owned()));
    let slug = format!("{},split={split}", run.slug);
    experiment.name = format!("{}--split={split}", run.experiment.name);
    SweepRun { slug, settings, experiment }
}

/// The point whose deciding row is best on validation (the first of equals), and that figure. It reads the
/// validation reports alone: the selection cannot see a test figure.
pub fn choose(validation: &[Report], select: Select) -> anyhow::Result<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    for (i, report) in validation.iter().enumerate() {
        let row = report.methods.get(select.method).with_context(|| format!("select.method {} names no row of the report", select.method))?;
        let value = select.metric.of(&row.metrics);
        if best.is_none_or(|(_, b)| value > b) {
            best = Some((i, value));
        }
    }
    best.context("a selection needs at least one point")
}

/// The report of a run that finished with this very experiment; an error if the folder holds another one.
fn finished(run_dir: &Path, exp: &Experiment) -> anyhow::Result<Option<Report>> {
    let (saved, report) = (run_dir.join("experiment.ron"), run_dir.join("report.json"));
    if !saved.exists() {
        return Ok(None);
    }
    let mut before = Experiment::load(&saved)?;
    // A point run before sweeps labelled their points is the same run; its report is relabelled.
    if before.selection == Selection::Fixed && exp.selection == Selection::EveryPointOnTest {
        before.selection = Selection::EveryPointOnTest;
    }
    anyhow::ensure!(
        before == *exp,
        "{} was run with a different experiment (the sweep or its base changed): move it away, or run the sweep with another --out",
        run_dir.display()
    );
    if !report.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&report)?;
    let mut report: Report = serde_json::from_str(&text).with_context(|| format!("{} is damaged: delete it to rerun", report.display()))?;
    report.selection = exp.selection.describe(exp.data.split.as_deref());
    Ok(Some(report))
}

/// One row per method and matched control; rows of the same kind are told apart by their position.
fn rows_of(run: &SweepRun, report: Report) -> anyhow::Result<Vec<Row>> {
    let methods = report_rows(&run.experiment);
    anyhow::ensure!(
        report.methods.len() == methods.len(),
        "the report of {} lists {} rows, the experiment makes {}",
        run.slug,
        report.methods.len(),
        methods.len()
    );
    let kinds: Vec<String> = methods.iter().map(|(m, _)| m.kind()).collect();
    Ok(report
        .methods
        .into_iter()
        .zip(methods)
        .enumerate()
        .map(|(i, (result, (method, _)))| {
            let instance = (kinds.iter().filter(|k| **k == kinds[i]).count() > 1).then_some(i + 1);
            Row { run: run.slug.clone(), settings: run.settings.clone(), method, kind: kinds[i].clone(), instance, result }
        })
        .collect())
}

fn first_axis_values(runs: &[SweepRun]) -> Vec<String> {
    let mut values: Vec<String> = Vec::new();
    for r in runs {
        if let Some((_, v)) = r.settings.first()
            && !values.contains(v)
        {
            values.push(v.clone());
        }
    }
    values
}
