//! A run's report: report.json (every figure, every query's IE, the comparisons and the code that made
//! it) and report.md (the table a person reads), each written to a temporary file, fsynced, then renamed.
//!
//! Every report draws its comparisons the same way ([`Report::compare`]): each row against the best
//! untrained baseline, and each trained method against its matched controls, with the paired bootstrap
//! interval and randomization p-value of [`crate::scoring::stats`] on the per-query character IE, Holm-adjusted
//! over the report's comparisons. A difference "holds" only where the adjusted p is below 0.05.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::scoring::columns;
use crate::scoring::metrics::Metrics;
use crate::scoring::stats::{Paired, holm, paired};
use crate::structures::tree_shape::ShapeSummary;
use arbor_files::atomic_write;

/// What a row is, for the comparisons a report draws.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// A method that learns nothing from the corpus's training split.
    #[default]
    Untrained,
    /// A method trained on the training split.
    Trained,
    /// A matched control: the same training queries, epochs and units as the trained rows it names,
    /// without their method.
    Control { of: Vec<String> },
    /// A trained method of the experiment that is also the matched control of the trained rows it names
    /// (a fine-tuned dense row listed beside the SproutRAG rows it controls): compared as both.
    TrainedControl { of: Vec<String> },
}

impl Role {
    /// Trained on the training split: a trained method, listed as a control of others or not.
    pub fn is_trained(&self) -> bool {
        matches!(self, Role::Trained | Role::TrainedControl { .. })
    }

    /// The rows this one is the matched control of (none for a method that controls nothing).
    pub fn controls(&self) -> &[String] {
        match self {
            Role::Control { of } | Role::TrainedControl { of } => of,
            Role::Untrained | Role::Trained => &[],
        }
    }
}

/// Latency of retrieval per query, in milliseconds (query embedding excluded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
}

impl Latency {
    pub fn of(ms: &mut [f64]) -> Self {
        if ms.is_empty() {
            return Latency::default();
        }
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
        Latency { mean: ms.iter().sum::<f64>() / ms.len() as f64, p50: at(0.5), p95: at(0.95) }
    }
}

/// One method's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodResult {
    pub name: String,
    pub metrics: Metrics,
    pub latency_ms: Latency,
    /// Tokens of the text handed on (union of the top 5 items), per query.
    pub tokens_per_query: f64,
    /// Index build time per document (encoding included), in milliseconds; artefacts read back from a
    /// cache count at their recorded build time, and the time is None (unknown) where one was not recorded.
    pub index_ms_per_doc: Option<f64>,
    /// What the method built, in a sentence (tree depth and node counts, the summariser used, headings
    /// found), printed under the table.
    #[serde(default)]
    pub details: String,
    /// The shape of the method's trees (leaf depth, balance, contiguous nodes), for a method that
    /// searches trees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_shape: Option<ShapeSummary>,
    /// How often, in percent of the queries, a document level above the method's trees kept a gold
    /// document in its beam (issue 62; `None`: no document level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents_kept: Option<f64>,
    #[serde(default)]
    pub role: Role,
    /// Each query's IE mean (the mean of IE@1, 3, 5, in percent), in [`Report::queries`]' order: what the
    /// comparisons are computed from, kept so a table can be recomputed without rerunning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_query: Vec<f64>,
}

/// Why two rows are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Against {
    /// An untrained baseline: every row meets every one, so that no baseline is chosen by its figures.
    Untrained,
    /// The untrained baseline with the highest IE mean on the evaluated split (reports before every
    /// baseline was met; read back, never made).
    BestUntrained,
    /// A matched control of the trained row.
    MatchedControl,
    /// The same row in another run over the same queries (`arbor compare`).
    OtherRun,
    /// A row the experiment names as the comparator of every trained row (`compare_with`: the best row
    /// measured before, say), in the same Holm family.
    Comparator,
}

/// One paired comparison of a report's rows on character IE (row minus `against`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub row: String,
    pub against: String,
    pub why: Against,
    #[serde(flatten)]
    pub paired: Paired,
    /// p adjusted by Holm-Bonferroni over every comparison of the report.
    pub p_holm: f64,
}

impl Comparison {
    /// "holds" (better, significant), "worse" (significant the other way) or "not significant", at 0.05
    /// after Holm's adjustment.
    pub fn verdict(&self) -> &'static str {
        match (self.p_holm < 0.05, self.paired.difference > 0.0) {
            (true, true) => "holds",
            (true, false) => "worse",
            (false, _) => "not significant",
        }
    }

    /// Its table cells: Δ IE mean | 95 % interval | p | p (Holm) | verdict.
    pub fn cells(&self) -> String {
        let p = &self.paired;
        format!("{:+.2} | [{:+.2}, {:+.2}] | {:.4} | {:.4} | {}", p.difference, p.low, p.high, p.p, self.p_holm, self.verdict())
    }
}

/// The code and machine that made a report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// arbor's version (the workspace's).
    pub version: String,
    /// The git commit the binary was built from (`unknown` outside a git checkout).
    pub commit: String,
    /// Whether the checkout had changes not committed: when the run started where the binary could look
    /// at its checkout ([`Provenance::checkout`]), else when the binary was built.
    pub dirty: bool,
    /// A digest of the workspace's sources as built (what a dirty checkout held).
    pub source_digest: String,
    /// A digest of Cargo.lock: every dependency's version.
    pub cargo_lock: String,
    /// The command line.
    pub command: Vec<String>,
    /// The tensor backend.
    pub backend: String,
    /// The cores the process could use.
    pub cores: usize,
    /// When the run started (UTC, `YYYYMMDD-HHMMSS`).
    pub started: String,
    /// The checkout the binary was built from, as the run found it: whether it still holds the sources the
    /// binary was built from (else the figures come from other code than the checkout shows). `None` where
    /// the binary runs away from its checkout, and in reports made before it was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout: Option<String>,
}

/// What a run's figures were computed from: a finished run whose inputs differ from today's is stale.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inputs {
    /// A digest of the corpus: every document and query, as loaded.
    pub corpus: String,
    /// A digest of the encoder: its weights, tokenizer and config files, and its token limit.
    pub encoder: String,
}

/// The leaf units evaluated, and what the encoder saw of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitStats {
    /// Leaf units of the evaluated documents.
    pub units: usize,
    /// The token limit the units were cut to (the encoder's tokens, special tokens not counted).
    pub max_tokens: usize,
    /// Sentences longer than `max_tokens`, each cut into several units.
    pub cut_sentences: usize,
    /// Those of them that are tables (arbor_datasets::units).
    #[serde(default)]
    pub cut_tables: usize,
    /// Units and queries longer than the encoder reads, so truncated by it (0 unless `max_tokens` is
    /// set above the encoder's limit).
    pub truncated_inputs: usize,
    /// Tokens of the units, and those of them past the encoder's limit (never seen by it).
    #[serde(default)]
    pub tokens: usize,
    #[serde(default)]
    pub unseen_tokens: usize,
}

/// The evaluation of one run: every method on the same queries and gold spans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub experiment: String,
    /// What was evaluated: corpus, split, unit and scope settings, in words.
    pub setting: String,
    #[serde(default)]
    pub inputs: Inputs,
    #[serde(default)]
    pub units: UnitStats,
    pub methods: Vec<MethodResult>,
    /// How the configuration of the trained rows was chosen, in words (on validation, or by looking at
    /// test: then its test figures are optimistic, and the report says so).
    #[serde(default)]
    pub selection: String,
    /// The evaluated queries' ids, in the order of every row's `per_query`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queries: Vec<String>,
    #[serde(default)]
    pub comparisons: Vec<Comparison>,
    /// The rows every trained row is also compared with (the experiment's `compare_with`), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparators: Vec<String>,
    /// None in reports written before provenance was recorded.
    #[serde(default)]
    pub provenance: Option<Provenance>,
}

impl Report {
    /// Draws the report's comparisons from its rows' per-query IE: every row against every untrained
    /// baseline (two baselines once: the later row against the earlier), every trained row against each
    /// of its controls and each named comparator (`comparators`; not itself, nor a control met already);
    /// Holm over all of them. No comparator is chosen by a figure of the evaluated split
    /// (picking the best baseline on it would make a "worse than the baseline" verdict anti-conservative).
    pub fn compare(&mut self) {
        let rows = &self.methods;
        let usable = |r: &MethodResult| r.per_query.len() == self.queries.len() && !self.queries.is_empty();
        let mut pairs: Vec<(&MethodResult, &MethodResult, Against)> = Vec::new();
        for (i, row) in rows.iter().enumerate().filter(|(_, r)| usable(r)) {
            let baselines = rows.iter().enumerate().filter(|&(j, b)| j != i && b.role == Role::Untrained && usable(b));
            let once = |&(j, _): &(usize, &MethodResult)| row.role != Role::Untrained || j < i;
            pairs.extend(baselines.filter(once).map(|(_, b)| (row, b, Against::Untrained)));
        }
        for control in rows.iter().filter(|r| usable(r)) {
            let of = control.role.controls();
            pairs.extend(rows.iter().filter(|r| of.contains(&r.name) && usable(r)).map(|r| (r, control, Against::MatchedControl)));
        }
        // A named comparator meets every trained row it has not met already: an untrained one met them all
        // as their baseline, a control the rows it controls.
        let named = rows.iter().filter(|r| self.comparators.contains(&r.name) && r.role != Role::Untrained && usable(r));
        for comparator in named {
            let controlled = comparator.role.controls();
            let trained = rows.iter().filter(|r| r.role.is_trained() && r.name != comparator.name && usable(r) && !controlled.contains(&r.name));
            pairs.extend(trained.map(|r| (r, comparator, Against::Comparator)));
        }
        let tested: Vec<Paired> = pairs.iter().map(|(a, b, _)| paired(&a.per_query, &b.per_query)).collect();
        let adjusted = holm(&tested.iter().map(|t| t.p).collect::<Vec<_>>());
        self.comparisons = pairs
            .iter()
            .zip(tested)
            .zip(adjusted)
            .map(|(((a, b, why), paired), p_holm)| Comparison { row: a.name.clone(), against: b.name.clone(), why: *why, paired, p_holm })
            .collect();
    }

    pub fn markdown(&self) -> String {
        let mut md = format!("# {}\n\n{}\n\n", self.experiment, self.setting);
        if !self.selection.is_empty() {
            md.push_str(&format!("**Configuration:** {}\n\n", self.selection));
        }
        // Document hits tell methods apart only when a query may rank other documents than its own (a mean
        // of 100s may fall short of 100 by rounding).
        let doc_hits = self.methods.iter().any(|r| r.metrics.doc_hit[0] < 100.0 - 1e-6 && r.metrics.queries > 0 && r.metrics.doc_hit != [0.0; 2]);
        let columns = columns::report(doc_hits, self.methods.iter().any(|r| r.documents_kept.is_some()));
        md.push_str(&format!("| method | role |{}\n|{}\n", columns::headings(&columns), "---|".repeat(columns.len() + 2)));
        for r in &self.methods {
            md.push_str(&format!("| {} | {} |{}\n", r.name, role_cell(&r.role, &self.methods), columns::cells(&columns, r)));
        }
        let n = self.methods.first().map_or(0, |r| r.metrics.queries);
        let u = &self.units;
        md.push_str(&format!(
            "\n{n} queries, {} leaf units of at most {} tokens ({} over-long sentences cut, {} of them tables; {} encoder inputs truncated, \
             {} of {} unit tokens unseen). \
             Metrics in percent, each a mean over queries of a figure at k = 1, 3, 5; \"IE\" columns are the mean of IE@1, \
             IE@3 and IE@5.\n\n\
             - **IE** (characters): IE@k = character recall@k x character precision@k of the top k items against the gold \
             spans (SproutRAG, Table 1, read on text): an item is worth the gold text it holds and costs all of its text.\n\
             - **ref. IE generous**: the SproutRAG reference code's id reading (precision = hits / k, recall = hits / relevant), \
             an item overlapping gold being a hit and recall the share of gold spans overlapped. It does not see item size.\n\
             - **ref. IE strict**: the same, only an item that is itself a gold leaf unit (a unit overlapping gold) being a \
             hit, recall = hits / gold leaf units.\n\
             - **IoU@5**: characters of the top 5 items that are gold over the characters of their union with the gold \
             (Chroma's chunking evaluation).\n\
             - **doc hit@k** (corpus scope): a gold document among the first k distinct documents ranked.\n\
             - **doc level kept** (a document level above the trees): a gold document among the documents its beam kept.\n\
             - tokens/query: encoder tokens of the union of the top 5 items (what a reader is handed).\n\
             - index ms/doc: wall time to build the method's index (encoding included) per document, artefacts read back \
             from a cache counted at the time their first build took; n/a where one was built before such times were kept.\n",
            u.units, u.max_tokens, u.cut_sentences, u.cut_tables, u.truncated_inputs, u.unseen_tokens, u.tokens
        ));
        md.push_str(&self.comparisons_markdown());
        let details: Vec<String> = self.methods.iter().filter(|r| !r.details.is_empty()).map(|r| format!("- {}: {}\n", r.name, r.details)).collect();
        if !details.is_empty() {
            md.push_str(&format!("\nWhat each method built:\n\n{}", details.concat()));
        }
        if let Some(p) = &self.provenance {
            md.push_str(&format!(
                "\n## Provenance\n\n- arbor {}, commit `{}`{}, sources `{}`, Cargo.lock `{}`\n- command: `{}`\n- backend {}, {} cores; started {} UTC\n\
                 - inputs: corpus `{}`, encoder `{}`\n{}",
                p.version,
                p.commit,
                if p.dirty { " with uncommitted changes" } else { "" },
                p.source_digest,
                p.cargo_lock,
                p.command.join(" "),
                p.backend,
                p.cores,
                p.started,
                self.inputs.corpus,
                self.inputs.encoder,
                p.checkout.as_ref().map_or(String::new(), |c| format!("- checkout: {c}\n")),
            ));
        }
        md
    }

    /// The comparisons as a table, with what they mean; a sentence when there are none.
    pub fn comparisons_markdown(&self) -> String {
        let trained = self.methods.iter().any(|r| r.role.is_trained());
        let controlled = |name: &str| self.methods.iter().any(|r| r.role.controls().iter().any(|o| o == name));
        let mut md = String::from("\n## Differences in IE mean, with their uncertainty\n\n");
        if self.comparisons.is_empty() {
            md.push_str("No comparison: the report has fewer than two rows with per-query figures.\n");
        } else {
            md.push_str("| row | against | Δ IE mean | 95 % interval | p | p (Holm) | verdict |\n|---|---|---|---|---|---|---|\n");
            for c in &self.comparisons {
                let why = match c.why {
                    Against::Untrained => "untrained baseline",
                    Against::BestUntrained => "best untrained baseline",
                    Against::MatchedControl => "its matched control",
                    Against::OtherRun => "the other run",
                    Against::Comparator => "named comparator",
                };
                md.push_str(&format!("| {} | {} ({why}) | {} |\n", c.row, c.against, c.cells()));
            }
            md.push_str(&format!(
                "\nPaired over the {} queries on their character IE mean: the bootstrap 95 % percentile interval of the \
                 difference ({} resamples) and Fisher's two-sided randomization test ({} sign flips, exact when fewer \
                 suffice), seed {:#x}; p (Holm) is adjusted over the {} comparisons of this report. Every row meets every \
                 untrained baseline (none is chosen by its figures), every trained row each of its matched controls and each \
                 comparator the experiment names. A \
                 difference holds only where p (Holm) < 0.05; the id readings are not tested.\n",
                self.queries.len(),
                crate::scoring::stats::RESAMPLES,
                crate::scoring::stats::RESAMPLES,
                crate::scoring::stats::SEED,
                self.comparisons.len()
            ));
        }
        let uncontrolled: Vec<&str> = self.methods.iter().filter(|r| r.role.is_trained() && !controlled(&r.name)).map(|r| r.name.as_str()).collect();
        if trained && !uncontrolled.is_empty() {
            md.push_str(&format!(
                "\n**No matched control** for {}: a margin over untrained baselines includes whatever any use of the \
                 training data gives, and says nothing about the method itself.\n",
                uncontrolled.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        md
    }

    /// Writes report.json and report.md into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        atomic_write(&dir.join("report.json"), json.as_bytes())?;
        atomic_write(&dir.join("report.md"), self.markdown().as_bytes())
    }
}

/// A row's role as a table cell: a control names the rows it controls by number.
fn role_cell(role: &Role, rows: &[MethodResult]) -> String {
    match role {
        Role::Untrained => "untrained".into(),
        Role::Trained => "trained".into(),
        Role::Control { of } => format!("control of row {}", row_numbers(of, rows)),
        Role::TrainedControl { of } => format!("trained; control of row {}", row_numbers(of, rows)),
    }
}

/// The table's row numbers (from 1) of the rows named `of`.
fn row_numbers(of: &[String], rows: &[MethodResult]) -> String {
    let at: Vec<String> = of.iter().filter_map(|o| rows.iter().position(|r| &r.name == o)).map(|i| format!("{}", i + 1)).collect();
    at.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles() {
        let l = Latency::of(&mut [5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((l.mean, l.p50, l.p95), (3.0, 3.0, 5.0));
    }

    #[test]
    fn report_round_trips_through_json_and_replaces_files_whole() {
        let dir = std::env::temp_dir().join(format!("arbor-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let report = Report {
            experiment: "t".into(),
            setting: "s".into(),
            inputs: Inputs { corpus: "c".into(), encoder: "e".into() },
            units: UnitStats { units: 10, max_tokens: 254, cut_sentences: 1, cut_tables: 0, truncated_inputs: 0, tokens: 900, unseen_tokens: 0 },
            methods: vec![MethodResult {
                name: "flat".into(),
                metrics: Metrics { ie_mean: 21.7, ..Default::default() },
                latency_ms: Latency::default(),
                tokens_per_query: 80.0,
                index_ms_per_doc: Some(1.0),
                details: "a tree".into(),
                tree_shape: None,
                documents_kept: None,
                role: Role::Untrained,
                per_query: vec![20.0, 23.4],
            }],
            selection: String::new(),
            queries: vec!["q1".into(), "q2".into()],
            comparisons: vec![],
            comparators: vec![],
            provenance: Some(Provenance { commit: "abc".into(), ..Default::default() }),
        };
        report.write(&dir).unwrap();
        report.write(&dir).unwrap();
        let back: Report = serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
        assert_eq!(back, report);
        assert!(std::fs::read_to_string(dir.join("report.md")).unwrap().contains("| flat |"));
        assert!(std::fs::read_to_string(dir.join("report.md")).unwrap().contains("commit `abc`"));
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(leftovers, 2, "no temporary file is left behind");
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn row(name: &str, role: Role, per_query: Vec<f64>) -> MethodResult {
        let n = per_query.len() as f64;
        MethodResult {
            name: name.into(),
            metrics: Metrics { ie_mean: per_query.iter().sum::<f64>() / n, queries: per_query.len(), ..Default::default() },
            latency_ms: Latency::default(),
            tokens_per_query: 0.0,
            index_ms_per_doc: None,
            details: String::new(),
            tree_shape: None,
            documents_kept: None,
            role,
            per_query,
        }
    }

    /// A report of `methods` over `queries`, not yet compared.
    fn report_of(methods: Vec<MethodResult>, queries: Vec<String>) -> Report {
        Report {
            experiment: "t".into(),
            setting: String::new(),
            inputs: Inputs::default(),
            units: UnitStats::default(),
            methods,
            selection: String::new(),
            queries,
            comparisons: vec![],
            comparators: vec![],
            provenance: None,
        }
    }

    #[test]
    fn every_row_meets_every_untrained_baseline_and_trained_rows_their_controls() {
        let queries: Vec<String> = (0..30).map(|i| format!("q{i}")).collect();
        let flat: Vec<f64> = (0..30).map(|i| (i % 3) as f64).collect();
        let bm25: Vec<f64> = (0..30).map(|i| (i % 3) as f64 + 1.0).collect();
        let trained: Vec<f64> = bm25.iter().map(|x| x + 5.0).collect();
        let control: Vec<f64> = bm25.iter().map(|x| x + 4.9).collect();
        let mut report = report_of(
            vec![
                row("flat", Role::Untrained, flat),
                row("bm25", Role::Untrained, bm25),
                row("sprout", Role::Trained, trained.clone()),
                row("control", Role::Control { of: vec!["sprout".into()] }, control),
                row("lone", Role::Trained, trained),
            ],
            queries,
        );
        report.compare();
        let pairs: Vec<(&str, &str, Against)> = report.comparisons.iter().map(|c| (c.row.as_str(), c.against.as_str(), c.why)).collect();
        assert_eq!(
            pairs,
            [
                ("bm25", "flat", Against::Untrained),
                ("sprout", "flat", Against::Untrained),
                ("sprout", "bm25", Against::Untrained),
                ("control", "flat", Against::Untrained),
                ("control", "bm25", Against::Untrained),
                ("lone", "flat", Against::Untrained),
                ("lone", "bm25", Against::Untrained),
                ("sprout", "control", Against::MatchedControl),
            ]
        );
        // +5 on every query against BM25 holds; +0.1 on every query against the control holds too (a
        // constant difference is as significant as 30 queries allow); BM25 is ahead of flat.
        assert_eq!(report.comparisons[2].verdict(), "holds");
        assert!((report.comparisons[7].paired.difference - 0.1).abs() < 1e-9);
        assert_eq!(report.comparisons[0].verdict(), "holds");
        // Holm over every comparison: the adjusted p is never below the raw one.
        assert!(report.comparisons.iter().all(|c| c.p_holm >= c.paired.p));
        let md = report.markdown();
        assert!(md.contains("| control | control of row 3 |"), "{md}");
        assert!(md.contains("**No matched control** for `lone`"), "{md}");
        assert!(!md.contains("`sprout`,"), "sprout has its control");
    }

    /// Rows over 20 queries whose per-query figures are one pattern shifted by each row's offset.
    fn shifted(rows: Vec<(&str, Role, f64)>) -> Report {
        let queries: Vec<String> = (0..20).map(|i| format!("q{i}")).collect();
        let base: Vec<f64> = (0..20).map(|i| (i % 4) as f64).collect();
        report_of(rows.into_iter().map(|(name, role, d)| row(name, role, base.iter().map(|x| x + d).collect())).collect(), queries)
    }

    /// A named comparator (issue 62: the best row measured before) meets every trained row but itself,
    /// after the baselines and controls, in the same Holm family; untrained rows do not meet it.
    #[test]
    fn a_named_comparator_meets_every_trained_row() {
        let rows = || {
            shifted(vec![
                ("flat", Role::Untrained, 0.0),
                ("sac tuned", Role::Trained, 3.0),
                ("sprout", Role::Trained, 1.0),
                ("control", Role::Control { of: vec!["sprout".into()] }, 2.0),
            ])
        };
        let mut report = rows();
        report.comparators = vec!["sac tuned".into()];
        report.compare();
        let named: Vec<(&str, &str)> =
            report.comparisons.iter().filter(|c| c.why == Against::Comparator).map(|c| (c.row.as_str(), c.against.as_str())).collect();
        assert_eq!(named, [("sprout", "sac tuned")]);
        assert_eq!(report.comparisons.len(), 3 + 1 + 1, "three against flat, one control, one comparator");
        assert_eq!(report.comparisons.last().unwrap().verdict(), "worse");
        assert!(report.markdown().contains("| sprout | sac tuned (named comparator) |"));
        // Naming an untrained row adds nothing: every trained row met it as its baseline.
        let mut untrained = rows();
        untrained.comparators = vec!["flat".into()];
        untrained.compare();
        assert_eq!(untrained.comparisons.len(), 3 + 1);
        assert!(untrained.comparisons.iter().all(|c| c.why != Against::Comparator));
    }

    #[test]
    fn a_trained_row_that_controls_others_is_compared_as_both() {
        let mut report = shifted(vec![
            ("flat", Role::Untrained, 0.0),
            ("dense", Role::TrainedControl { of: vec!["sprout".into()] }, 2.0),
            ("sprout", Role::Trained, 1.0),
            ("exemplars", Role::Control { of: vec!["dense".into(), "sprout".into()] }, 3.0),
        ]);
        report.compare();
        let pairs: Vec<(&str, &str)> =
            report.comparisons.iter().filter(|c| c.why == Against::MatchedControl).map(|c| (c.row.as_str(), c.against.as_str())).collect();
        assert_eq!(pairs, [("sprout", "dense"), ("dense", "exemplars"), ("sprout", "exemplars")]);
        assert_eq!(report.comparisons.iter().find(|c| (c.row.as_str(), c.against.as_str()) == ("sprout", "dense")).unwrap().verdict(), "worse");
        let md = report.markdown();
        assert!(md.contains("| dense | trained; control of row 3 |"), "{md}");
        assert!(!md.contains("No matched control"), "both trained rows have controls: {md}");
    }
}
