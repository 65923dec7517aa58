//! A run's report: report.json (every figure) and report.md (the table a person reads), each written to
//! a temporary file, fsynced, then renamed into place.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::metrics::Metrics;

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
}

impl Report {
    pub fn markdown(&self) -> String {
        let mut md = format!("# {}\n\n{}\n\n", self.experiment, self.setting);
        md.push_str(
            "| method | IE@1 | IE@3 | IE@5 | IE mean | ref. IE generous | ref. IE strict | P@5 | R@5 | hit@1 | hit@5 | nDCG@10 | evidence R@5 | IoU@5 | tokens/query | latency ms (p50) | index ms/doc |\n",
        );
        md.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for r in &self.methods {
            let m = &r.metrics;
            md.push_str(&format!(
                "| {} | {:.1} | {:.1} | {:.1} | **{:.1}** | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {:.3} | {} |\n",
                r.name,
                m.ie[0],
                m.ie[1],
                m.ie[2],
                m.ie_mean,
                m.generous.ie_mean,
                m.strict.ie_mean,
                m.precision[2],
                m.recall[2],
                m.hit[0],
                m.hit[2],
                m.ndcg10,
                m.evidence_recall[2],
                m.iou[2],
                r.tokens_per_query,
                r.latency_ms.p50,
                r.index_ms_per_doc.map_or("n/a".into(), |ms| format!("{ms:.1}"))
            ));
        }
        let n = self.methods.first().map_or(0, |r| r.metrics.queries);
        let u = &self.units;
        md.push_str(&format!(
            "\n{n} queries, {} leaf units of at most {} tokens ({} over-long sentences cut; {} encoder inputs truncated, \
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
             - tokens/query: encoder tokens of the union of the top 5 items (what a reader is handed).\n\
             - index ms/doc: wall time to build the method's index (encoding included) per document, artefacts read back \
             from a cache counted at the time their first build took; n/a where one was built before such times were kept.\n",
            u.units, u.max_tokens, u.cut_sentences, u.truncated_inputs, u.unseen_tokens, u.tokens
        ));
        let details: Vec<String> = self.methods.iter().filter(|r| !r.details.is_empty()).map(|r| format!("- {}: {}\n", r.name, r.details)).collect();
        if !details.is_empty() {
            md.push_str(&format!("\nWhat each method built:\n\n{}", details.concat()));
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

/// Writes `bytes` to `path` through a temporary file in the same folder: write, fsync, rename, so a
/// crash leaves either the old file or the new one, never a torn one.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| std::io::Error::other(format!("{} names no file", path.display())))?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    // Make the rename itself durable.
    std::fs::File::open(dir)?.sync_all()
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
            units: UnitStats { units: 10, max_tokens: 254, cut_sentences: 1, truncated_inputs: 0, tokens: 900, unseen_tokens: 0 },
            methods: vec![MethodResult {
                name: "flat".into(),
                metrics: Metrics { ie_mean: 21.7, ..Default::default() },
                latency_ms: Latency::default(),
                tokens_per_query: 80.0,
                index_ms_per_doc: Some(1.0),
                details: "a tree".into(),
            }],
        };
        report.write(&dir).unwrap();
        report.write(&dir).unwrap();
        let back: Report = serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
        assert_eq!(back, report);
        assert!(std::fs::read_to_string(dir.join("report.md")).unwrap().contains("| flat |"));
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(leftovers, 2, "no temporary file is left behind");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
