//! The sweep file: a base experiment and axes of overrides, expanded into one experiment per point of
//! their product (the first axis varies slowest).
//!
//! ```ron
//! Sweep(
//!     name: "beam-width",
//!     base: "../experiments/sproutrag-squad.ron",     // relative to the sweep file
//!     axes: [
//!         // one field, several values
//!         Values(path: "methods.search.beam_width", values: [1, 2, 3, 5, 8, 10]),
//!         // named points that set several fields together
//!         Points(name: "aggregation", points: [
//!             (label: "uniform, frozen", set: {"methods.aggregation": "Uniform", "methods.training.lr_aggregation": 0.0}),
//!         ]),
//!     ],
//! )
//! ```
//!
//! Values are written as in the experiment's data form (overrides.rs): a unit enum variant in quotes
//! (`"LastLayer"`), a variant with fields as a map (`{"Beam": (beam_width: 3)}`).
//!
//! `select: Some((metric: IeMean, method: 3))` makes the sweep a selection: every point runs on the
//! validation split, the point whose `methods[3]` row is best there is chosen, and that point alone is then
//! scored on the base's own split (test), once (runner.rs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use arbor_experiments::experiment::Experiment;
use serde::{Deserialize, Serialize};

use crate::overrides;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// Names the sweep folder: `<out>/<name>/`.
    pub name: String,
    /// The experiment every run starts from, relative to the sweep file.
    pub base: String,
    /// No axes: the base experiment alone, as one run.
    #[serde(default)]
    pub axes: Vec<Axis>,
    /// Choose one point on the validation split, then score it on the base's split once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<Select>,
}

/// How a sweep chooses its point: on the validation split (never on the split it reports), by one row's
/// figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Select {
    #[serde(default)]
    pub metric: SelectMetric,
    /// The row that decides: the base experiment's `methods[method]` (0-based).
    pub method: usize,
}

/// The figure a selection maximises.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SelectMetric {
    /// Character IE, the mean of IE@1, 3, 5.
    #[default]
    IeMean,
    Hit5,
    Ndcg10,
}

impl SelectMetric {
    pub fn of(self, m: &arbor_eval::Metrics) -> f64 {
        match self {
            SelectMetric::IeMean => m.ie_mean,
            SelectMetric::Hit5 => m.hit[2],
            SelectMetric::Ndcg10 => m.ndcg10,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Axis {
    /// One field set to each of `values` in turn; named after the path's last field unless `name` is given.
    Values {
        path: String,
        values: Vec<ron::Value>,
        #[serde(default)]
        name: Option<String>,
    },
    /// Named points, each setting several fields.
    Points { name: String, points: Vec<Point> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Point {
    pub label: String,
    pub set: BTreeMap<String, ron::Value>,
}

/// One run of a sweep: where it sits on each axis, and its experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRun {
    /// Folder name under `runs/`: `beam_width=5`, `aggregation=uniform-frozen,lambda=0.5`.
    pub slug: String,
    /// (axis name, value label), one per axis.
    pub settings: Vec<(String, String)>,
    pub experiment: Experiment,
}

/// A sweep file read and expanded.
#[derive(Debug, Clone)]
pub struct LoadedSweep {
    pub sweep: Sweep,
    pub path: PathBuf,
    pub text: String,
    pub base: Experiment,
    pub runs: Vec<SweepRun>,
}

impl Axis {
    pub fn name(&self) -> String {
        match self {
            Axis::Values { name: Some(name), .. } | Axis::Points { name, .. } => name.clone(),
            Axis::Values { path, name: None, .. } => path.rsplit('.').next().unwrap_or(path).split('[').next().unwrap_or(path).to_owned(),
        }
    }

    /// Each point of the axis: its label and the fields it sets.
    fn points(&self) -> Vec<(String, Vec<(String, ron::Value)>)> {
        match self {
            Axis::Values { path, values, .. } => values.iter().map(|v| (label(v), vec![(path.clone(), v.clone())])).collect(),
            Axis::Points { points, .. } => points.iter().map(|p| (p.label.clone(), p.set.clone().into_iter().collect())).collect(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Axis::Values { values, .. } => values.len(),
            Axis::Points { points, .. } => points.len(),
        }
    }
}

/// A value as a short label: `5`, `0.1`, `LastLayer`, `None`, `{"Beam":{"beam_width":3}}`.
pub fn label(v: &ron::Value) -> String {
    match v {
        ron::Value::String(s) => s.clone(),
        ron::Value::Option(None) => "None".into(),
        ron::Value::Option(Some(inner)) => label(inner),
        other => serde_json::to_string(other).unwrap_or_else(|_| format!("{other:?}")),
    }
}

impl LoadedSweep {
    /// Reads a sweep file and its base experiment and expands the runs; every run's experiment is checked.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read sweep file {}", path.display()))?;
        let sweep: Sweep =
            ron::from_str(&text).map_err(|e| anyhow::anyhow!("{}:{}:{}: {}", path.display(), e.span.start.line, e.span.start.col, e.code))?;
        let base_path = path.parent().unwrap_or(Path::new("")).join(&sweep.base);
        let base = Experiment::load(&base_path).with_context(|| format!("the base experiment of sweep {}", path.display()))?;
        let runs = expand(&sweep, &base)?;
        if let Some(select) = &sweep.select {
            anyhow::ensure!(
                select.method < base.methods.len(),
                "{}: select.method {} names no method (the base has {})",
                path.display(),
                select.method,
                base.methods.len()
            );
            anyhow::ensure!(
                base.data.validation.is_some(),
                "{}: select needs the base's data.validation (the split points are compared on)",
                path.display()
            );
            anyhow::ensure!(
                base.data.split.as_deref() != Some(arbor_experiments::validation::VALIDATION),
                "{}: the base is already evaluated on validation; select scores the chosen point on the base's split",
                path.display()
            );
            anyhow::ensure!(
                base.data.split.is_some(),
                "{}: select needs the base's data.split, the split the chosen point is scored on once (e.g. Some(\"test\")); \
                 with None every query would be scored, the validation queries that chose it included",
                path.display()
            );
        }
        Ok(LoadedSweep { sweep, path: path.to_owned(), text, base, runs })
    }
}

/// Every point of the product of the axes, applied to `base`.
pub fn expand(sweep: &Sweep, base: &Experiment) -> anyhow::Result<Vec<SweepRun>> {
    if sweep.name.is_empty() || sweep.name.contains(['/', '\\']) {
        bail!("sweep name {:?} must be a non-empty folder name", sweep.name);
    }
    let mut names = Vec::new();
    for axis in &sweep.axes {
        let name = axis.name();
        if axis.len() == 0 {
            bail!("axis `{name}` has no values");
        }
        if names.contains(&name) {
            bail!("two axes are named `{name}`: give one a name");
        }
        names.push(name);
        for (label, set) in axis.points() {
            for (path, value) in &set {
                if contains_unit(value) {
                    bail!(
                        "axis `{}`, value `{label}` of `{path}`: write an enum variant in quotes (\"LastLayer\"), \
                         and a variant with fields as a map ({{\"Beam\": (beam_width: 3)}})",
                        axis.name()
                    );
                }
            }
        }
    }
    let base_json = serde_json::to_value(base).expect("an experiment serialises");
    let mut runs: Vec<SweepRun> = Vec::new();
    for at in odometer(&sweep.axes.iter().map(Axis::len).collect::<Vec<_>>()) {
        let mut json = base_json.clone();
        let mut settings = Vec::new();
        for (axis, &i) in sweep.axes.iter().zip(&at) {
            let (label, set) = axis.points().swap_remove(i);
            for (path, value) in set {
                let value = serde_json::to_value(&value).context("a sweep value")?;
                overrides::set(&mut json, &path, &value).map_err(|e| anyhow::anyhow!("axis `{}`: {e}", axis.name()))?;
            }
            settings.push((axis.name(), label));
        }
        let mut slug = match settings.is_empty() {
            true => "base".to_owned(),
            false => settings.iter().map(|(n, l)| format!("{n}={}", folder_safe(l))).collect::<Vec<_>>().join(","),
        };
        if runs.iter().any(|r| r.slug == slug) {
            slug = format!("{slug}-{}", runs.len());
        }
        let mut experiment: Experiment = serde_json::from_value(json).map_err(|e| anyhow::anyhow!("sweep run {slug}: {e}"))?;
        experiment.name = format!("{}--{slug}", sweep.name);
        experiment.check().with_context(|| format!("sweep run {slug}"))?;
        runs.push(SweepRun { slug, settings, experiment });
    }
    Ok(runs)
}

/// Every index combination of axes with these lengths, the last varying fastest.
fn odometer(lens: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for &n in lens {
        out = out.into_iter().flat_map(|prefix| (0..n).map(move |i| [prefix.clone(), vec![i]].concat())).collect();
    }
    out
}

fn contains_unit(v: &ron::Value) -> bool {
    match v {
        ron::Value::Unit => true,
        ron::Value::Seq(items) => items.iter().any(contains_unit),
        ron::Value::Map(map) => map.iter().any(|(k, v)| contains_unit(k) || contains_unit(v)),
        ron::Value::Option(Some(inner)) => contains_unit(inner),
        _ => false,
    }
}

fn folder_safe(label: &str) -> String {
    let s: String = label.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '-' }).collect();
    let s = s.trim_matches('-').to_owned();
    if s.is_empty() { "x".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"Experiment(
        name: "b",
        data: (format: Jsonl, path: "corpus"),
        methods: [
            Flat,
            SproutRag((attention: TokenBlocks(window_tokens: 256), search: Beam((beam_width: 5)))),
        ],
    )"#;

    fn base() -> Experiment {
        Experiment::parse(BASE, Path::new("base.ron")).unwrap()
    }

    fn sweep(axes: &str) -> Sweep {
        ron::from_str(&format!(r#"Sweep(name: "s", base: "base.ron", axes: [{axes}])"#)).unwrap()
    }

    fn beam_width(e: &Experiment) -> usize {
        let json = serde_json::to_value(e).unwrap();
        json["methods"][1]["SproutRag"]["search"]["Beam"]["beam_width"].as_u64().unwrap() as usize
    }

    #[test]
    fn axes_expand_to_their_product_first_axis_slowest() {
        let s = sweep(r#"Values(path: "methods.search.beam_width", values: [1, 5, 10]), Values(path: "units.max_sentences", values: [1, 2])"#);
        let runs = expand(&s, &base()).unwrap();
        assert_eq!(runs.len(), 6);
        let got: Vec<(usize, usize)> = runs.iter().map(|r| (beam_width(&r.experiment), r.experiment.units.max_sentences)).collect();
        assert_eq!(got, vec![(1, 1), (1, 2), (5, 1), (5, 2), (10, 1), (10, 2)]);
        assert_eq!(runs[3].slug, "beam_width=5,max_sentences=2");
        assert_eq!(runs[3].settings, vec![("beam_width".into(), "5".into()), ("max_sentences".into(), "2".into())]);
        assert_eq!(runs[3].experiment.name, "s--beam_width=5,max_sentences=2");
        assert_eq!(runs[3].experiment.methods[0], base().methods[0], "other fields stay as in the base");
    }

    #[test]
    fn points_set_several_fields_and_enum_values_are_quoted() {
        let s = sweep(
            r#"Points(name: "agg", points: [
                (label: "last layer", set: {"methods.aggregation": "LastLayer", "methods.search": "Collapsed"}),
                (label: "beam 3", set: {"methods.search": {"Beam": (beam_width: 3)}}),
            ])"#,
        );
        let runs = expand(&s, &base()).unwrap();
        assert_eq!(runs.iter().map(|r| r.slug.as_str()).collect::<Vec<_>>(), ["agg=last-layer", "agg=beam-3"]);
        let arbor_experiments::experiment::Method::SproutRag(c) = &runs[0].experiment.methods[1] else { panic!() };
        assert_eq!(c.aggregation, arbor_models::aggregator::AggregationInit::LastLayer);
        assert_eq!(c.search, arbor_eval::retrievers::tree_retrieval::TreeSearch::Collapsed);
        assert_eq!(beam_width(&runs[1].experiment), 3);
        let no_axes = expand(&sweep(""), &base()).unwrap();
        assert_eq!((no_axes.len(), no_axes[0].slug.as_str()), (1, "base"));
    }

    #[test]
    fn bad_sweeps_are_rejected_with_the_reason() {
        let err = |axes: &str| format!("{:#}", expand(&sweep(axes), &base()).unwrap_err());
        let e = err(r#"Values(path: "methods.search.beam_widht", values: [1])"#);
        assert!(e.contains("no field `beam_widht`") && e.contains("beam_width"), "{e}");
        let e = err(r#"Values(path: "methods.aggregation", values: [LastLayer])"#);
        assert!(e.contains("in quotes"), "{e}");
        let e = err(r#"Values(path: "methods.search.beam_width", values: ["wide"])"#);
        assert!(e.contains("beam_width=wide") && e.contains("invalid type"), "{e}");
        let e = err(r#"Values(path: "methods.search.beam_width", values: [0])"#);
        assert!(e.contains("at least 1"), "{e}");
        let e = err(r#"Values(path: "units.max_sentences", values: [])"#);
        assert!(e.contains("no values"), "{e}");
        let e = err(r#"Values(path: "units.max_sentences", values: [1]), Values(path: "units.max_sentences", values: [2])"#);
        assert!(e.contains("two axes"), "{e}");
    }

    #[test]
    fn a_setting_left_at_its_default_is_reached_by_an_indexed_path() {
        let trained = r#"Experiment(name: "b", data: (format: Jsonl, path: "corpus"), methods: [
            Flat, SproutRag((attention: Sllm, training: Some((lambda: 0.1)))),
        ])"#;
        let sllm = Experiment::parse(trained, Path::new("base.ron")).unwrap();
        let runs = expand(&sweep(r#"Values(path: "methods[1].training.node_loss", values: [0.0, 0.3])"#), &sllm).unwrap();
        let node_loss = |e: &Experiment| match &e.methods[1] {
            arbor_experiments::experiment::Method::SproutRag(c) => c.training.as_ref().map(|t| t.node_loss),
            _ => None,
        };
        assert_eq!(runs.iter().map(|r| node_loss(&r.experiment)).collect::<Vec<_>>(), [Some(0.0), Some(0.3)]);
        // A misspelt setting is added to the data, then refused by the experiment's reading.
        let e = format!("{:#}", expand(&sweep(r#"Values(path: "methods[1].training.node_los", values: [0.3])"#), &sllm).unwrap_err());
        assert!(e.contains("unknown field `node_los`") && e.contains("node_loss"), "{e}");
        // So is one inside an enum variant's fields (`TokenBlocks(window_tokens: ..)`).
        let e = format!("{:#}", expand(&sweep(r#"Values(path: "methods[1].attention.window_tokns", values: [3])"#), &base()).unwrap_err());
        assert!(e.contains("unknown field `window_tokns`") && e.contains("window_tokens"), "{e}");
    }

    #[test]
    fn a_sweep_file_with_a_syntax_error_names_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("base.ron"), BASE).unwrap();
        let path = dir.path().join("s.ron");
        std::fs::write(&path, "Sweep(\n  name: \"s\",\n  base: \"base.ron\"\n  axes: [],\n)").unwrap();
        let e = format!("{:#}", LoadedSweep::load(&path).unwrap_err());
        assert!(e.contains("s.ron:4:3"), "{e}");
        std::fs::write(&path, r#"Sweep(name: "s", base: "base.ron", axes: [Values(path: "units.max_sentences", values: [1, 3])])"#).unwrap();
        let loaded = LoadedSweep::load(&path).unwrap();
        assert_eq!(loaded.runs.len(), 2);
        assert_eq!(loaded.base, base());
        // A selection scores its chosen point on the base's split: a base with none (as BASE) is refused.
        std::fs::write(
            &path,
            r#"Sweep(name: "s", base: "base.ron", axes: [Values(path: "units.max_sentences", values: [1, 3])], select: Some((metric: IeMean, method: 0)))"#,
        )
        .unwrap();
        let e = format!("{:#}", LoadedSweep::load(&path).unwrap_err());
        assert!(e.contains("select needs the base's data.split"), "{e}");
    }
}
