//! The metric columns every table reads: report.md's table ([`report`]), a sweep's table.md ([`SWEEP`])
//! and its table.csv ([`CSV`]). A new metric is one [`Column`] here and a place in the lists that show it.

use crate::scoring::report::MethodResult;

/// One figure of a method's row: how each table heads and prints it.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// The markdown tables' heading.
    pub heading: &'static str,
    /// table.csv's column name.
    pub csv: &'static str,
    /// The figure (None: not measured for this row, printed "n/a" in markdown and empty in CSV).
    pub value: fn(&MethodResult) -> Option<f64>,
    /// Decimals in markdown (CSV prints four).
    pub decimals: usize,
    /// Printed bold in markdown (the headline).
    pub bold: bool,
}

impl Column {
    const fn new(heading: &'static str, csv: &'static str, value: fn(&MethodResult) -> Option<f64>) -> Self {
        Column { heading, csv, value, decimals: 1, bold: false }
    }

    const fn decimals(self, decimals: usize) -> Self {
        Column { decimals, ..self }
    }

    const fn bold(self) -> Self {
        Column { bold: true, ..self }
    }

    /// The markdown cell of `row`.
    pub fn cell(&self, row: &MethodResult) -> String {
        match (self.value)(row) {
            Some(v) if self.bold => format!("**{v:.*}**", self.decimals),
            Some(v) => format!("{v:.*}", self.decimals),
            None => "n/a".into(),
        }
    }

    /// The CSV field of `row`.
    pub fn field(&self, row: &MethodResult) -> String {
        (self.value)(row).map_or(String::new(), |v| format!("{v:.4}"))
    }
}

pub const IE_1: Column = Column::new("IE@1", "ie@1", |r| Some(r.metrics.ie[0]));
pub const IE_3: Column = Column::new("IE@3", "ie@3", |r| Some(r.metrics.ie[1]));
pub const IE_5: Column = Column::new("IE@5", "ie@5", |r| Some(r.metrics.ie[2]));
pub const IE_MEAN: Column = Column::new("IE mean", "ie_mean", |r| Some(r.metrics.ie_mean)).bold();
pub const GENEROUS: Column = Column::new("ref. IE generous", "ref_generous_ie_mean", |r| Some(r.metrics.generous.ie_mean));
pub const STRICT: Column = Column::new("ref. IE strict", "ref_strict_ie_mean", |r| Some(r.metrics.strict.ie_mean));
pub const P_1: Column = Column::new("P@1", "precision@1", |r| Some(r.metrics.precision[0]));
pub const P_3: Column = Column::new("P@3", "precision@3", |r| Some(r.metrics.precision[1]));
pub const P_5: Column = Column::new("P@5", "precision@5", |r| Some(r.metrics.precision[2]));
pub const R_1: Column = Column::new("R@1", "recall@1", |r| Some(r.metrics.recall[0]));
pub const R_3: Column = Column::new("R@3", "recall@3", |r| Some(r.metrics.recall[1]));
pub const R_5: Column = Column::new("R@5", "recall@5", |r| Some(r.metrics.recall[2]));
pub const HIT_1: Column = Column::new("hit@1", "hit@1", |r| Some(r.metrics.hit[0]));
pub const HIT_3: Column = Column::new("hit@3", "hit@3", |r| Some(r.metrics.hit[1]));
pub const HIT_5: Column = Column::new("hit@5", "hit@5", |r| Some(r.metrics.hit[2]));
pub const NDCG_10: Column = Column::new("nDCG@10", "ndcg@10", |r| Some(r.metrics.ndcg10));
pub const EVIDENCE_R_5: Column = Column::new("evidence R@5", "evidence_recall@5", |r| Some(r.metrics.evidence_recall[2]));
pub const IOU_5: Column = Column::new("IoU@5", "iou@5", |r| Some(r.metrics.iou[2]));
pub const GENEROUS_P_5: Column = Column::new("ref. generous P@5", "ref_generous_precision@5", |r| Some(r.metrics.generous.precision[2]));
pub const GENEROUS_R_5: Column = Column::new("ref. generous R@5", "ref_generous_recall@5", |r| Some(r.metrics.generous.recall[2]));
pub const STRICT_P_5: Column = Column::new("ref. strict P@5", "ref_strict_precision@5", |r| Some(r.metrics.strict.precision[2]));
pub const STRICT_R_5: Column = Column::new("ref. strict R@5", "ref_strict_recall@5", |r| Some(r.metrics.strict.recall[2]));
pub const DOC_HIT_1: Column = Column::new("doc hit@1", "doc_hit@1", |r| Some(r.metrics.doc_hit[0]));
pub const DOC_HIT_5: Column = Column::new("doc hit@5", "doc_hit@5", |r| Some(r.metrics.doc_hit[1]));
pub const DOC_LEVEL: Column = Column::new("doc level kept", "documents_kept", |r| r.documents_kept);
pub const TOKENS: Column = Column::new("tokens/query", "tokens_per_query", |r| Some(r.tokens_per_query)).decimals(0);
pub const LATENCY_MEAN: Column = Column::new("latency ms (mean)", "latency_ms_mean", |r| Some(r.latency_ms.mean)).decimals(3);
pub const LATENCY_P50: Column = Column::new("latency ms (p50)", "latency_ms_p50", |r| Some(r.latency_ms.p50)).decimals(3);
pub const LATENCY_P95: Column = Column::new("latency ms (p95)", "latency_ms_p95", |r| Some(r.latency_ms.p95)).decimals(3);
pub const INDEX_MS: Column = Column::new("index ms/doc", "index_ms_per_doc", |r| r.index_ms_per_doc);

/// report.md's table after the method and its role; in corpus scope (where a query may rank other
/// documents than its own) the document hits go before tokens/query, and where a row has a document
/// level above its trees, how often its beam kept a gold document.
pub fn report(doc_hits: bool, doc_level: bool) -> Vec<Column> {
    let mut columns = vec![IE_1, IE_3, IE_5, IE_MEAN, GENEROUS, STRICT, P_5, R_5, HIT_1, HIT_5, NDCG_10, EVIDENCE_R_5, IOU_5];
    if doc_hits {
        columns.extend([DOC_HIT_1, DOC_HIT_5]);
    }
    if doc_level {
        columns.push(DOC_LEVEL);
    }
    columns.extend([TOKENS, LATENCY_P50, INDEX_MS]);
    columns
}

/// A sweep's table.md, after its axes and the method.
pub const SWEEP: [Column; 10] = [IE_1, IE_3, IE_5, IE_MEAN, GENEROUS, STRICT, HIT_5, EVIDENCE_R_5, TOKENS, LATENCY_P50];

/// A sweep's table.csv: every figure of a row.
pub const CSV: [Column; 30] = [
    IE_1,
    IE_3,
    IE_5,
    IE_MEAN,
    P_1,
    P_3,
    P_5,
    R_1,
    R_3,
    R_5,
    HIT_1,
    HIT_3,
    HIT_5,
    EVIDENCE_R_5,
    GENEROUS,
    GENEROUS_P_5,
    GENEROUS_R_5,
    STRICT,
    STRICT_P_5,
    STRICT_R_5,
    NDCG_10,
    IOU_5,
    DOC_HIT_1,
    DOC_HIT_5,
    DOC_LEVEL,
    TOKENS,
    LATENCY_MEAN,
    LATENCY_P50,
    LATENCY_P95,
    INDEX_MS,
];

/// The markdown heading cells of `columns` (" a | b |").
pub fn headings(columns: &[Column]) -> String {
    columns.iter().map(|c| format!(" {} |", c.heading)).collect()
}

/// The markdown cells of `row` under `columns` (" 1.0 | 2.0 |").
pub fn cells(columns: &[Column], row: &MethodResult) -> String {
    columns.iter().map(|c| format!(" {} |", c.cell(row))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scoring::report::Latency;

    fn row() -> MethodResult {
        let mut r: MethodResult = serde_json::from_value(serde_json::json!({
            "name": "flat", "metrics": serde_json::to_value(crate::scoring::metrics::Metrics::mean(&[])).unwrap(),
            "latency_ms": Latency { mean: 1.0, p50: 0.5, p95: 2.0 }, "tokens_per_query": 412.6, "index_ms_per_doc": null,
        }))
        .unwrap();
        r.metrics.ie_mean = 12.345;
        r
    }

    #[test]
    fn cells_print_each_figure_at_its_precision_and_unknown_as_n_a() {
        let r = row();
        assert_eq!(cells(&[IE_MEAN, TOKENS, LATENCY_P50, INDEX_MS], &r), " **12.3** | 413 | 0.500 | n/a |");
        assert_eq!(IE_MEAN.field(&r), "12.3450");
        assert_eq!(INDEX_MS.field(&r), "");
    }

    #[test]
    fn every_column_a_table_shows_is_in_the_csv_once() {
        let names: Vec<&str> = CSV.iter().map(|c| c.csv).collect();
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "a CSV column named twice");
        for c in report(true, true).iter().chain(&SWEEP) {
            assert!(names.contains(&c.csv), "{} is shown but not in table.csv", c.heading);
        }
        assert_eq!(report(false, false).len() + 2, report(true, false).len());
        assert_eq!(report(true, false).len() + 1, report(true, true).len());
    }
}
