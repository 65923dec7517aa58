//! Issue 87: LegalBench-RAG as published (the hand-written fixture in datasets/fixtures/legalbench-rag),
//! read by `data.format: LegalBenchRag`, evaluated with its own protocol: the run folder's
//! legalbench-rag.md and .json hold every row's precision@k and recall@k on characters, per dataset and
//! equally weighted, equal to the figures computed here from what each row handed on; `arbor data check`
//! prints what the folder holds.

use std::path::Path;

use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::evaluate_only;
use serde_json::Value;

use crate::common::{ok, workspace};

#[test]
fn a_published_legalbench_rag_is_scored_by_its_own_protocol() {
    std::env::set_current_dir(workspace()).unwrap();
    let text = r#"Experiment(name: "lbr", data: (format: LegalBenchRag(), path: "datasets/fixtures/legalbench-rag", split: Some("test")),
        units: (max_sentences: 1), retrieval: (scope: Corpus, top_k: 8, max_tokens: None), controls: [], methods: [Flat, Bm25, Chunks(RecursiveCharacters(size: 120))])"#;
    let exp = Experiment::parse(text, Path::new("lbr.ron")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (dir, report) = evaluate_only(&exp, tmp.path(), None, None).unwrap();
    assert_eq!(report.queries.len(), 194 + 2 + 2);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("legalbench-rag.json")).unwrap()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    // The figures by hand from retrievals.jsonl: the first k items' spans against the gold, in characters.
    let corpus = arbor_experiments::run::load_corpus(&exp).unwrap().0;
    let handed = arbor_eval::scoring::retrievals::read(&dir).unwrap();
    for (row, method) in rows.iter().zip(&report.methods) {
        assert_eq!(row["method"], method.name.as_str());
        let datasets = row["figures"]["datasets"].as_array().unwrap();
        assert_eq!(datasets.iter().map(|d| d[0].as_str().unwrap()).collect::<Vec<_>>(), ["privacy_qa", "contractnli", "maud"]);
        for (k_at, k) in [1usize, 2, 4, 8].iter().enumerate() {
            let mut means = Vec::new();
            for dataset in ["privacy_qa", "contractnli", "maud"] {
                let (mut p, mut r, mut n) = (0.0, 0.0, 0.0);
                for h in handed.iter().filter(|h| h.method == method.name && h.query.starts_with(dataset)) {
                    let q = corpus.queries.iter().find(|q| q.id == h.query).unwrap();
                    let chars = |doc: &str, s: usize, e: usize| corpus.documents[corpus.doc_index(doc).unwrap()].text[s..e].chars().count() as f64;
                    let (mut got, mut common) = (0.0, 0.0);
                    for item in h.items.iter().take(*k) {
                        for s in &item.spans {
                            got += chars(&item.doc, s[0], s[1]);
                            for g in q.evidence.iter().filter(|g| g.doc_id == item.doc) {
                                let (a, b) = (s[0].max(g.start), s[1].min(g.end));
                                if b > a {
                                    common += chars(&item.doc, a, b);
                                }
                            }
                        }
                    }
                    let want: f64 = q.evidence.iter().map(|g| chars(&g.doc_id, g.start, g.end)).sum();
                    p += if got > 0.0 { common / got } else { 0.0 };
                    r += common / want;
                    n += 1.0;
                }
                means.push((100.0 * p / n, 100.0 * r / n));
            }
            let mean = row["figures"]["mean"][k_at].as_array().unwrap();
            let want_p = means.iter().map(|m| m.0).sum::<f64>() / 3.0;
            let want_r = means.iter().map(|m| m.1).sum::<f64>() / 3.0;
            assert!((mean[0].as_f64().unwrap() - want_p).abs() < 1e-9, "{} P@{k}: {mean:?} vs {want_p}", method.name);
            assert!((mean[1].as_f64().unwrap() - want_r).abs() < 1e-9, "{} R@{k}: {mean:?} vs {want_r}", method.name);
        }
        // Recall grows with k; eight one-sentence items of a tiny corpus find most of the gold.
        let recall: Vec<f64> = (0..7).map(|i| row["figures"]["mean"][i][1].as_f64().unwrap()).collect();
        assert!(recall.windows(2).all(|w| w[1] >= w[0] - 1e-9) && recall[3] > 50.0, "{recall:?}");
    }
    let md = std::fs::read_to_string(dir.join("legalbench-rag.md")).unwrap();
    assert!(md.contains("P@16*") && md.contains("only 8 items were retrieved") && md.contains("P@1 6.41, R@64 62.22"), "{md}");
    assert!(md.contains("### maud (2 questions)"), "{md}");
    // `arbor data check` says what the folder holds, the loader's drops and quirks first.
    let said = ok(&["data", "check", "datasets/fixtures/legalbench-rag", "--format", "LegalBenchRag(selection: Mini)"]);
    for line in [
        "maud: 4 questions, all of them read, 2 kept (1 dropped: a snippet's answer is not the text at its span; 1 dropped",
        "contractnli: 3 documents",
        "194 questions (194 test)",
    ] {
        assert!(said.contains(line), "{line:?} not in:\n{said}");
    }
}
