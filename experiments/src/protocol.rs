//! LegalBench-RAG's own protocol beside arbor's report (issue 87): for a corpus read as published
//! (`data.format: LegalBenchRag`), every row's precision@k and recall@k on characters at k = 1 .. 64, per
//! dataset and equally weighted (arbor_eval::scoring::characters, the released code's definitions), from
//! what each row handed on: `legalbench-rag.md` and `legalbench-rag.json` in the run folder, with the
//! paper's published figures beside them.

use std::collections::HashMap;
use std::path::Path;

use arbor_datasets::{Corpus, DocSpan, Span};
use arbor_eval::scoring::characters::{AtK, KS, at_k};
use arbor_eval::scoring::report::Report;
use arbor_eval::scoring::retrievals::Retrieval;
use arbor_files::atomic_write;

use crate::experiment::Experiment;
use crate::validation::collection;

/// The paper's published baseline (Pipitone & Alami 2024): text-embedding-3-large over recursive
/// 500-character chunks without a reranker, its four datasets' mean.
pub const PUBLISHED: &str = "Published (Pipitone & Alami 2024; text-embedding-3-large over recursive 500-character chunks, no \
    reranker; the mean of four datasets, CUAD among them): P@1 6.41, R@64 62.22.";

/// Each row's figures over the report's queries, in the report's row order.
pub fn figures(corpus: &Corpus, report: &Report, retrieved: &[Retrieval]) -> anyhow::Result<Vec<(String, AtK)>> {
    // Each query's dataset (its first document's collection) and gold, read once for every row.
    let asked: Vec<(String, Vec<DocSpan>)> = report
        .queries
        .iter()
        .map(|id| {
            let q = corpus.queries.iter().find(|q| &q.id == id).ok_or_else(|| anyhow::anyhow!("no query {id}"))?;
            let dataset = q.doc_ids.first().map(|d| collection(d)).filter(|c| !c.is_empty()).unwrap_or("all");
            Ok((dataset.to_owned(), corpus.gold(q)))
        })
        .collect::<anyhow::Result<_>>()?;
    let by_row: HashMap<(&str, &str), &Retrieval> = retrieved.iter().map(|r| ((r.method.as_str(), r.query.as_str()), r)).collect();
    let mut out = Vec::new();
    for method in &report.methods {
        let mut queries = Vec::with_capacity(asked.len());
        for (id, (dataset, gold)) in report.queries.iter().zip(&asked) {
            let Some(r) = by_row.get(&(method.name.as_str(), id.as_str())) else {
                anyhow::bail!("no retrieval of {:?} for query {id}", method.name);
            };
            let items: Vec<Vec<DocSpan>> = r
                .items
                .iter()
                .map(|item| {
                    let doc =
                        corpus.doc_index(&item.doc).ok_or_else(|| anyhow::anyhow!("an item of {:?} names document {:?}", method.name, item.doc))?;
                    Ok(item.spans.iter().map(|s| DocSpan { doc, span: Span::new(s[0], s[1]) }).collect())
                })
                .collect::<anyhow::Result<_>>()?;
            queries.push((dataset.clone(), items, gold.clone()));
        }
        out.push((method.name.clone(), at_k(corpus, &queries)));
    }
    Ok(out)
}

/// The section's Markdown: precision and recall at each k, the mean and then each dataset; a k past the
/// experiment's `top_k` (or read under a token budget) is marked, since fewer items were handed on.
pub fn markdown(exp: &Experiment, rows: &[(String, AtK)]) -> String {
    let top_k = exp.retrieval.top_k;
    let head = |what: &str| {
        let ks: Vec<String> = KS.iter().map(|k| if *k > top_k { format!("{what}@{k}*") } else { format!("{what}@{k}") }).collect();
        format!("| Method | {} |\n|---|{}\n", ks.join(" | "), "---:|".repeat(KS.len()))
    };
    let table = |pick: &dyn Fn(&AtK) -> Vec<(f64, f64)>, precision: bool| {
        let mut t = head(if precision { "P" } else { "R" });
        for (name, at) in rows {
            let cells: Vec<String> = pick(at).iter().map(|(p, r)| format!("{:.2}", if precision { p } else { r })).collect();
            t.push_str(&format!("| {name} | {} |\n", cells.join(" | ")));
        }
        t
    };
    let mut md = String::from("## LegalBench-RAG's protocol\n\n");
    md.push_str(
        "Precision and recall on characters of each row's first k items (the released code's definitions: retrieved \
         characters that are gold over retrieved characters; gold characters retrieved over gold characters), the mean \
         over each dataset's questions, then over the datasets, each weighted equally.\n\n",
    );
    if let Some(budget) = exp.retrieval.max_tokens {
        md.push_str(&format!("Items were handed on under a budget of {budget} tokens: a row's k items may be fewer than k. \n\n"));
    }
    if KS.iter().any(|&k| k > top_k) {
        md.push_str(&format!("\\* past the experiment's top_k of {top_k}: only {top_k} items were retrieved.\n\n"));
    }
    md.push_str(&format!("{PUBLISHED}\n\n"));
    let datasets: Vec<String> =
        rows.first().map(|r| r.1.datasets.iter().map(|d| format!("{} ({} questions)", d.0, d.1)).collect()).unwrap_or_default();
    md.push_str(&format!("### The mean of {}\n\n", datasets.join(", ")));
    md.push_str(&table(&|a: &AtK| a.mean.clone(), true));
    md.push('\n');
    md.push_str(&table(&|a: &AtK| a.mean.clone(), false));
    for (i, name) in datasets.iter().enumerate() {
        md.push_str(&format!("\n### {name}\n\n"));
        md.push_str(&table(&|a: &AtK| a.datasets[i].2.clone(), true));
        md.push('\n');
        md.push_str(&table(&|a: &AtK| a.datasets[i].2.clone(), false));
    }
    md
}

/// Writes `legalbench-rag.md` and `legalbench-rag.json` into the run folder `dir`; returns the Markdown.
pub fn write(dir: &Path, exp: &Experiment, corpus: &Corpus, report: &Report, retrieved: &[Retrieval]) -> anyhow::Result<String> {
    let rows = figures(corpus, report, retrieved)?;
    let md = markdown(exp, &rows);
    atomic_write(&dir.join("legalbench-rag.md"), md.as_bytes())?;
    let json = serde_json::json!({ "ks": KS, "top_k": exp.retrieval.top_k, "rows": rows.iter().map(|(n, a)| serde_json::json!({ "method": n, "figures": a })).collect::<Vec<_>>() });
    atomic_write(&dir.join("legalbench-rag.json"), serde_json::to_string_pretty(&json)?.as_bytes())?;
    Ok(md)
}
