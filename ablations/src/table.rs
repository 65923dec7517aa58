//! A sweep's results as rows (one per run and method), written as a markdown table, a CSV file and SVG
//! charts of each headline metric against the first axis.

use std::collections::BTreeMap;

use arbor_eval::MethodResult;
use arbor_eval::scoring::columns;
use arbor_experiments::methods::Method;
use serde::{Deserialize, Serialize};

use crate::plot::{Chart, Series, XAxis};

/// One method of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The run's folder name under `runs/`.
    pub run: String,
    /// (axis, value) of the run.
    pub settings: Vec<(String, String)>,
    /// The row's method, as the experiment (or its matched controls) set it.
    pub method: Method,
    /// What the method is, without its numeric settings (a line in the plots): `Method::kind`.
    pub kind: String,
    /// The method's position in the experiment (1-based) when several of its methods are of one kind.
    pub instance: Option<usize>,
    pub result: MethodResult,
}

impl Row {
    /// The method's kind, and its position when the kind repeats in a run (a plot line's name).
    pub fn method_name(&self) -> String {
        match self.instance {
            Some(i) => format!("{} #{i}", self.kind),
            None => self.kind.clone(),
        }
    }
}

/// The markdown table: the axes, the method, the headline figures.
pub fn markdown(axes: &[String], rows: &[Row]) -> String {
    let mut md = String::from("|");
    for a in axes {
        md.push_str(&format!(" {a} |"));
    }
    md.push_str(&format!(" method |{}\n|", columns::headings(&columns::SWEEP)));
    md.push_str(&"---|".repeat(axes.len() + 1 + columns::SWEEP.len()));
    md.push('\n');
    for r in rows {
        md.push('|');
        for (_, v) in &r.settings {
            md.push_str(&format!(" {v} |"));
        }
        md.push_str(&format!(" {} |{}\n", r.result.name, columns::cells(&columns::SWEEP, &r.result)));
    }
    md
}

/// Every figure of every row, one line each.
pub fn csv(axes: &[String], rows: &[Row]) -> String {
    let mut out: Vec<String> = axes.iter().map(|a| quote(a)).collect();
    out.extend(["run", "method", "label", "queries"].map(String::from));
    out.extend(columns::CSV.iter().map(|c| c.csv.to_owned()));
    let mut text = out.join(",") + "\n";
    for r in rows {
        let mut line: Vec<String> = r.settings.iter().map(|(_, v)| quote(v)).collect();
        line.extend([quote(&r.run), quote(&r.method_name()), quote(&r.result.name), r.result.metrics.queries.to_string()]);
        line.extend(columns::CSV.iter().map(|c| c.field(&r.result)));
        text.push_str(&(line.join(",") + "\n"));
    }
    text
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_owned() }
}

/// The headline metrics a sweep plots, as (file stem, title, value).
type Metric = (&'static str, &'static str, fn(&MethodResult) -> f64);
pub const PLOTTED: [Metric; 5] = [
    ("ie-mean", "IE mean (of @1, @3, @5)", |r| r.metrics.ie_mean),
    ("ie-at-1", "IE@1", |r| r.metrics.ie[0]),
    ("ie-at-3", "IE@3", |r| r.metrics.ie[1]),
    ("ie-at-5", "IE@5", |r| r.metrics.ie[2]),
    ("latency", "retrieval latency per query, ms (p50)", |r| r.latency_ms.p50),
];

/// One chart per plotted metric against the first axis (`x_values`, in sweep order): one line per method
/// and combination of the other axes. No axes: no charts.
pub fn charts(sweep: &str, axes: &[String], x_values: &[String], rows: &[Row]) -> Vec<(&'static str, Chart)> {
    let Some(x_axis) = axes.first() else { return Vec::new() };
    let numeric: Option<Vec<f64>> = x_values.iter().map(|v| v.parse().ok()).collect();
    let x_of = |label: &str| -> f64 {
        let i = x_values.iter().position(|v| v == label).expect("a value of the first axis");
        numeric.as_ref().map_or(i as f64, |n| n[i])
    };
    PLOTTED
        .iter()
        .map(|&(stem, title, value)| {
            let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
            let mut order: Vec<String> = Vec::new();
            for r in rows {
                let others: Vec<String> = r.settings[1..].iter().map(|(a, v)| format!("{a}={v}")).collect();
                let name = if others.is_empty() { r.method_name() } else { format!("{} ({})", r.method_name(), others.join(", ")) };
                if !lines.contains_key(&name) {
                    order.push(name.clone());
                }
                lines.entry(name).or_default().push((x_of(&r.settings[0].1), value(&r.result)));
            }
            let series = order.into_iter().map(|name| Series { points: lines.remove(&name).expect("collected"), name }).collect();
            let x = if numeric.is_some() { XAxis::Numeric } else { XAxis::Categories(x_values.to_vec()) };
            (stem, Chart { title: format!("{sweep}: {title}"), x_label: x_axis.clone(), y_label: title.to_owned(), x, series })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_eval::Metrics;
    use arbor_eval::scoring::report::Latency;

    /// A method from its RON form.
    pub(crate) fn method(ron: &str) -> Method {
        ron::from_str(ron).unwrap()
    }

    fn flat() -> Method {
        Method::Flat
    }

    fn tree() -> Method {
        method("SproutRag((attention: Sllm, training: Some(())))")
    }

    fn row(b: &str, lambda: &str, method: Method, ie: f64) -> Row {
        let kind = method.kind();
        Row {
            run: format!("b={b},lambda={lambda}"),
            settings: vec![("beam_width".into(), b.into()), ("lambda".into(), lambda.into())],
            method,
            kind: kind.clone(),
            instance: None,
            result: MethodResult {
                name: format!("{kind}, b={b}"),
                metrics: Metrics { ie_mean: ie, queries: 3, ..Default::default() },
                latency_ms: Latency::default(),
                tokens_per_query: 100.0,
                index_ms_per_doc: Some(1.0),
                details: String::new(),
                tree_shape: None,
                documents_kept: None,
                role: Default::default(),
                per_query: vec![],
            },
        }
    }

    #[test]
    fn charts_draw_one_line_per_method_and_other_setting() {
        let rows = [
            row("1", "0.1", flat(), 20.0),
            row("1", "0.1", tree(), 8.0),
            row("1", "1", tree(), 9.0),
            row("5", "0.1", flat(), 20.0),
            row("5", "0.1", tree(), 12.0),
            row("5", "1", tree(), 13.0),
        ];
        let axes = ["beam_width".to_owned(), "lambda".to_owned()];
        let drawn = charts("s", &axes, &["1".into(), "5".into()], &rows);
        assert_eq!(drawn.len(), PLOTTED.len());
        let (stem, ie) = &drawn[0];
        assert_eq!(*stem, "ie-mean");
        assert_eq!(ie.x, XAxis::Numeric);
        let names: Vec<&str> = ie.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Flat (lambda=0.1)", "SproutRAG trained, beam (lambda=0.1)", "SproutRAG trained, beam (lambda=1)"]);
        assert_eq!(ie.series[1].points, vec![(1.0, 8.0), (5.0, 12.0)]);
        assert!(charts("s", &[], &[], &rows).is_empty());
    }

    #[test]
    fn tables_have_a_row_per_method_and_run_and_quote_csv_fields() {
        let rows = [row("1", "0.1", flat(), 20.0), row("5", "0.1", tree(), 12.0)];
        let axes = ["beam_width".to_owned(), "lambda".to_owned()];
        let md = markdown(&axes, &rows);
        assert_eq!(md.lines().count(), 4);
        assert!(md.lines().nth(3).unwrap().starts_with("| 5 | 0.1 | SproutRAG trained, beam, b=5 | "), "{md}");
        let csv = csv(&axes, &rows);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[2].starts_with("5,0.1,\"b=5,lambda=0.1\",\"SproutRAG trained, beam\",\"SproutRAG trained, beam, b=5\",3,"), "{}", lines[2]);
        // Row 1's run ("b=1,lambda=0.1") and label ("Flat, b=1") each hold one quoted comma.
        assert_eq!(lines[0].split(',').count(), lines[1].split(',').count() - 2);
    }
}
