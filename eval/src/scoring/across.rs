//! The same rows of two runs over the same queries, paired (`arbor compare A B`): what a change of
//! settings that no single report holds (the unit rule, the encoder, the corpus's rendering) does to each
//! method. Each row's per-query IE in run A against run B, matched by query id: the difference in IE mean,
//! its paired bootstrap 95 % interval and randomization p-value ([`super::stats`]), Holm-adjusted over
//! the rows compared, the verdict as in a report.

use std::collections::HashMap;

use crate::scoring::report::{Against, Comparison, Report};
use crate::scoring::stats::{holm, paired};

/// Each row of `a` that `b` also has (or those named in `rows`), A minus B, paired by query id; with
/// `against`, each of them against that one row of B (two rows of one run: A = B). An error when the runs
/// scored different queries, a named row is missing, or a row lacks per-query figures.
pub fn across(a: &Report, b: &Report, rows: &[String], against: Option<&str>) -> Result<Vec<Comparison>, String> {
    let at: HashMap<&str, usize> = b.queries.iter().enumerate().map(|(i, q)| (q.as_str(), i)).collect();
    let common = a.queries.iter().filter(|q| at.contains_key(q.as_str())).count();
    if a.queries.is_empty() || common != a.queries.len() || common != b.queries.len() {
        return Err(format!(
            "the runs did not score the same queries (A {}, B {}, {common} in common): a paired comparison needs the same ones",
            a.queries.len(),
            b.queries.len()
        ));
    }
    let names: Vec<&str> = match rows.is_empty() {
        true => a.methods.iter().map(|m| m.name.as_str()).filter(|n| b.methods.iter().any(|m| m.name == *n)).collect(),
        false => rows.iter().map(String::as_str).collect(),
    };
    let mut tested = Vec::new();
    for name in &names {
        let find = |r: &'_ Report, run: &str, name: &str| {
            let row = r.methods.iter().find(|m| m.name == name).ok_or_else(|| format!("run {run} has no row `{name}`"))?;
            match row.per_query.len() == r.queries.len() {
                true => Ok(row.per_query.clone()),
                false => Err(format!("row `{name}` of run {run} has no per-query figures (a report written before they were kept)")),
            }
        };
        let other = against.unwrap_or(name);
        let (x, y) = (find(a, "A", name)?, find(b, "B", other)?);
        let y: Vec<f64> = a.queries.iter().map(|q| y[at[q.as_str()]]).collect();
        tested.push(((*name).to_owned(), other.to_owned(), paired(&x, &y)));
    }
    let adjusted = holm(&tested.iter().map(|(_, _, t)| t.p).collect::<Vec<_>>());
    Ok(tested
        .into_iter()
        .zip(adjusted)
        .map(|((row, against, paired), p_holm)| Comparison { row, against, why: Against::OtherRun, paired, p_holm })
        .collect())
}

/// The comparisons as a markdown table, each run's IE mean beside the difference.
pub fn markdown(a: &Report, b: &Report, comparisons: &[Comparison]) -> String {
    let ie = |r: &Report, name: &str| r.methods.iter().find(|m| m.name == name).map_or(f64::NAN, |m| m.metrics.ie_mean);
    let mut md = String::from(
        "| row (A) | against (B) | IE mean A | IE mean B | Δ (A - B) | 95 % interval | p | p (Holm) | verdict |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in comparisons {
        md.push_str(&format!("| {} | {} | {:.1} | {:.1} | {} |\n", c.row, c.against, ie(a, &c.row), ie(b, &c.against), c.cells()));
    }
    md.push_str(&format!(
        "\nPaired over the {} queries both runs scored; p (Holm) adjusted over the {} rows compared.\n",
        a.queries.len(),
        comparisons.len()
    ));
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scoring::metrics::Metrics;
    use crate::scoring::report::{Inputs, Latency, MethodResult, Role, UnitStats};

    fn report(queries: &[&str], rows: &[(&str, Vec<f64>)]) -> Report {
        Report {
            experiment: "t".into(),
            setting: String::new(),
            inputs: Inputs::default(),
            units: UnitStats::default(),
            methods: rows
                .iter()
                .map(|(name, per_query)| MethodResult {
                    name: (*name).into(),
                    metrics: Metrics { ie_mean: per_query.iter().sum::<f64>() / per_query.len() as f64, ..Default::default() },
                    latency_ms: Latency::default(),
                    tokens_per_query: 0.0,
                    index_ms_per_doc: None,
                    details: String::new(),
                    tree_shape: None,
                    documents_kept: None,
                    role: Role::Untrained,
                    per_query: per_query.clone(),
                })
                .collect(),
            selection: String::new(),
            queries: queries.iter().map(|q| (*q).into()).collect(),
            comparisons: vec![],
            comparators: vec![],
            provenance: None,
        }
    }

    #[test]
    fn rows_are_paired_by_query_id_whatever_the_order() {
        let a = report(&["q1", "q2", "q3"], &[("flat", vec![3.0, 5.0, 7.0]), ("bm25", vec![1.0, 1.0, 1.0]), ("only A", vec![0.0; 3])]);
        // B lists the same queries in another order: flat is 1 lower on each, bm25 the same.
        let b = report(&["q3", "q1", "q2"], &[("bm25", vec![1.0, 1.0, 1.0]), ("flat", vec![6.0, 2.0, 4.0])]);
        let c = across(&a, &b, &[], None).unwrap();
        assert_eq!(c.iter().map(|c| c.row.as_str()).collect::<Vec<_>>(), ["flat", "bm25"]);
        assert!((c[0].paired.difference - 1.0).abs() < 1e-12 && c[0].paired.low == 1.0 && c[0].paired.high == 1.0);
        // Three queries: the smallest exact p of a sign-flip test is 2 / 8.
        assert!((c[0].paired.p - 0.25).abs() < 1e-12, "{}", c[0].paired.p);
        assert_eq!(c[1].paired.difference, 0.0);
        assert!(markdown(&a, &b, &c).contains("| flat | flat | 5.0 | 4.0 | +1.00 |"));
        // Two rows of one run: flat against bm25 in A itself.
        let within = across(&a, &a, &["flat".into()], Some("bm25")).unwrap();
        assert_eq!((within[0].against.as_str(), within[0].paired.difference), ("bm25", 4.0));
    }

    #[test]
    fn different_queries_or_a_missing_row_are_errors() {
        let a = report(&["q1", "q2"], &[("flat", vec![1.0, 2.0])]);
        let b = report(&["q1", "q3"], &[("flat", vec![1.0, 2.0])]);
        assert!(across(&a, &b, &[], None).unwrap_err().contains("1 in common"));
        assert!(across(&a, &a, &["bm25".into()], None).unwrap_err().contains("no row `bm25`"));
        assert!(across(&a, &a, &[], Some("bm25")).unwrap_err().contains("run B has no row `bm25`"));
    }
}
