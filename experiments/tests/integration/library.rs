//! `arbor index` / `arbor query` end to end through the binary, on the fixture's articles saved as text
//! files: the query's JSON ranking equals the experiment runner's for the same documents, method and k;
//! adding, changing and removing files touches only them; a kill during indexing loses at most the
//! document in flight and a rerun completes the index; errors name what is wrong (`arbor serve`: serve.rs).

use std::path::Path;
use std::process::Command;

use arbor_eval::scoring::retrievals;
use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::evaluate_only;
use arbor_store::{Meta, Store};
use serde_json::Value;

use crate::common::{Ranked, arbor, ok, same_ranking, workspace};

/// The fixture's articles: (file name, text), named so that file order is the fixture's order.
pub fn articles() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(workspace().join("experiments/fixtures/squad-mini/documents.jsonl")).unwrap();
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            let d: Value = serde_json::from_str(l).unwrap();
            let id: String = d["id"].as_str().unwrap().chars().filter(|c| c.is_alphanumeric()).take(12).collect();
            (format!("{i:02}-{id}.txt"), d["text"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The same articles as an arbor JSONL corpus whose document ids are the file names, with the fixture's
/// questions, and an experiment ranking every unit of every article (corpus scope) by flat, BM25,
/// hybrid and the untrained SproutRAG, k = 10, no token budget, under the index's unit rule (the
/// experiments' default).
fn experiment(dir: &Path, files: &[(String, String)]) -> Experiment {
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    let fixture = workspace().join("experiments/fixtures/squad-mini");
    let old: Vec<String> = std::fs::read_to_string(fixture.join("documents.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_owned())
        .collect();
    let rename = |id: &str| files[old.iter().position(|o| o == id).unwrap()].0.clone();
    let docs: Vec<String> = files.iter().map(|(name, text)| serde_json::json!({"id": name, "text": text}).to_string()).collect();
    std::fs::write(corpus.join("documents.jsonl"), docs.join("\n")).unwrap();
    let queries: Vec<String> = std::fs::read_to_string(fixture.join("queries.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut q: Value = serde_json::from_str(l).unwrap();
            q["doc_ids"] = q["doc_ids"].as_array().unwrap().iter().map(|d| Value::from(rename(d.as_str().unwrap()))).collect();
            for e in q["evidence"].as_array_mut().unwrap() {
                e["doc_id"] = Value::from(rename(e["doc_id"].as_str().unwrap()));
            }
            q.to_string()
        })
        .collect();
    std::fs::write(corpus.join("queries.jsonl"), queries.join("\n")).unwrap();
    let ron = format!(
        "(name: \"library\", data: (format: Jsonl, path: {:?}, max_queries: Some(12), validation: None),
          retrieval: (scope: Corpus, top_k: 10, max_tokens: None), methods: [Flat, Bm25, Hybrid(()), SproutRag(()), Raptor(()), Hierarchy(())])",
        corpus.display().to_string()
    );
    Experiment::parse(&ron, Path::new("library.ron")).unwrap()
}

/// `files` written into a new folder `docs` under `dir`.
pub fn written(dir: &Path, files: &[(String, String)]) -> std::path::PathBuf {
    let folder = dir.join("docs");
    std::fs::create_dir(&folder).unwrap();
    for (name, text) in files {
        std::fs::write(folder.join(name), text).unwrap();
    }
    folder
}

/// An answer of `arbor query --json` as a ranking.
fn ranked(answer: &Value) -> Vec<Ranked> {
    let bytes = |h: &Value| -> Vec<[usize; 2]> {
        h["spans"].as_array().unwrap().iter().map(|s| [0, 1].map(|i| s["bytes"][i].as_u64().unwrap() as usize)).collect()
    };
    answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["document"].as_str().unwrap().to_owned(), bytes(h), h["score"].as_f64().unwrap() as f32))
        .collect()
}

/// What a run handed on for one query as a ranking, its documents named by `key`.
fn ranked_in_run(run: &retrievals::Retrieval, key: impl Fn(&str) -> String) -> Vec<Ranked> {
    run.items.iter().map(|i| (key(&i.doc), i.spans.clone(), i.score)).collect()
}

/// `arbor ARGS`'s standard error, the command having failed.
fn err(args: &[&str]) -> String {
    let out = arbor(args);
    assert!(!out.status.success(), "arbor {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn index_query_add_change_and_remove() {
    let tmp = tempfile::tempdir().unwrap();
    let files = articles();
    let folder = written(tmp.path(), &files);
    std::fs::write(folder.join("empty.txt"), "\n").unwrap();
    let index = tmp.path().join("docs.arbor");
    let (folder_s, index_s) = (folder.to_str().unwrap(), index.to_str().unwrap());
    let first = arbor(&["index", folder_s, "--into", index_s, "--trees", "--raptor"]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let said = String::from_utf8_lossy(&first.stdout);
    assert!(said.starts_with("6 added, 0 changed, 0 removed, 0 unchanged, 1 skipped"), "{said}");
    assert!(String::from_utf8_lossy(&first.stderr).contains("empty.txt: holds no text"));

    // The runner's ranking for the same documents, method and k, query by query.
    let exp = experiment(tmp.path(), &files);
    let (run, report) = evaluate_only(&exp, &tmp.path().join("runs"), None, None).unwrap();
    let handed = retrievals::read(&run).unwrap();
    let corpus = arbor_experiments::run::load_corpus(&exp).unwrap().0;
    let questions: Vec<&str> = report.queries.iter().map(|id| corpus.queries.iter().find(|q| &q.id == id).unwrap().text.as_str()).collect();
    let qfile = tmp.path().join("questions.txt");
    std::fs::write(&qfile, questions.join("\n")).unwrap();
    for (method, row) in ["flat", "bm25", "hybrid", "sproutrag", "raptor", "hierarchy"].iter().zip(&report.methods) {
        let answers = ok(&["query", index_s, "--queries", qfile.to_str().unwrap(), "-k", "10", "--method", method, "--json"]);
        let answers: Vec<Value> = answers.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(answers.len(), questions.len());
        for (answer, id) in answers.iter().zip(&report.queries) {
            let expected = handed.iter().find(|r| &r.query == id && r.method == row.name).unwrap();
            let (got, want) = (ranked(answer), ranked_in_run(expected, |d| d.to_owned()));
            assert_eq!(got.len(), want.len(), "{method} {id}");
            // A tree's items say where they sit: depth and leaves as the beam path of the run has them.
            for (h, i) in answer["results"].as_array().unwrap().iter().zip(&expected.items) {
                match i.path.last() {
                    Some(last) => assert_eq!(
                        (h["node"]["depth"].as_u64(), h["node"]["leaves"].as_u64()),
                        (Some(i.path.len() as u64 - 1), Some(last.leaves as u64))
                    ),
                    None => assert!(h.get("node").is_none()),
                }
                // RAPTOR's items say their layer (0: a leaf chunk), and only RAPTOR's.
                assert_eq!(h.get("layer").is_some_and(Value::is_u64), *method == "raptor", "{method}");
            }
            same_ranking(&got, &want).unwrap_or_else(|e| panic!("{method} query {id}: {e}"));
        }
    }
    // Character offsets count code points: the text at them is the text at the byte offsets.
    let one: Value = serde_json::from_str(&ok(&["query", index_s, questions[0], "--json", "-k", "1"])).unwrap();
    let hit = &one["results"][0];
    let text = &files.iter().find(|f| f.0 == hit["document"].as_str().unwrap()).unwrap().1;
    let [cs, ce] = [0, 1].map(|i| hit["spans"][0]["chars"][i].as_u64().unwrap() as usize);
    let by_chars: String = text.chars().skip(cs).take(ce - cs).collect();
    assert_eq!(by_chars, hit["text"].as_str().unwrap());

    // Incremental: one new file, one changed, one deleted, one removed by key; the rest untouched.
    let before = Store::open(&index).unwrap().list().unwrap();
    std::fs::write(folder.join("07-new.md"), "# Notes\n\nA new file about tidal power stations.").unwrap();
    std::fs::write(folder.join(&files[0].0), format!("{} An added sentence.", files[0].1)).unwrap();
    std::fs::remove_file(folder.join(&files[1].0)).unwrap();
    let said = ok(&["index", folder_s, "--into", index_s]);
    assert!(said.starts_with("1 added, 1 changed, 1 removed, 4 unchanged, 1 skipped"), "{said}");
    let after = Store::open(&index).unwrap().list().unwrap();
    for (name, _) in &files[2..] {
        let at = |list: &[arbor_store::Listed]| list.iter().find(|l| &l.key == name).unwrap().clone();
        assert_eq!(at(&before), at(&after), "{name} was not touched");
    }
    assert!(ok(&["index", folder_s, "--into", index_s]).starts_with("0 added, 0 changed, 0 removed, 6 unchanged"));
    assert!(ok(&["index", "--into", index_s, "--remove", &files[2].0]).starts_with("removed"));
    let keys: Vec<String> = Store::open(&index).unwrap().list().unwrap().into_iter().map(|l| l.key).collect();
    assert_eq!(keys, [files[0].0.as_str(), &files[3].0, &files[4].0, &files[5].0, "07-new.md"]);

    // Errors: an unknown document, an unknown key to remove, an index built by another encoder.
    assert!(err(&["query", index_s, "x", "--doc", "nope.txt"]).contains("no document \"nope.txt\""));
    assert!(err(&["index", "--into", index_s, "--remove", "nope.txt"]).contains("no document \"nope.txt\""));
    let mut store = Store::open(&index).unwrap();
    let meta = store.meta().unwrap().unwrap();
    store.set_meta(&Meta { encoder: "another".into(), ..meta }).unwrap();
    drop(store);
    assert!(err(&["query", index_s, "x"]).contains("was built by encoder another"));
}

/// A kill while indexing 6 files (two copies of three articles): every document the index holds is whole, and a rerun finishes; trees
/// asked later are built from the stored units. (Apart from the test above so that the two run at once.)
#[test]
fn a_kill_mid_index_leaves_whole_documents_and_a_rerun_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let files = articles().split_off(3);
    let folder = written(tmp.path(), &files);
    let index = tmp.path().join("docs.arbor");
    ok(&["index", folder.to_str().unwrap(), "--into", index.to_str().unwrap()]);
    let question = "What powers a tidal station?";
    let big = tmp.path().join("big");
    std::fs::create_dir(&big).unwrap();
    for copy in 0..2 {
        for (name, text) in &files {
            std::fs::write(big.join(format!("{copy}-{name}")), format!("Copy {copy}.\n\n{text}")).unwrap();
        }
    }
    let killed = tmp.path().join("killed.arbor");
    let mut child =
        Command::new(env!("CARGO_BIN_EXE_arbor")).args(["index", big.to_str().unwrap(), "--into", killed.to_str().unwrap()]).spawn().unwrap();
    let held = loop {
        std::thread::sleep(std::time::Duration::from_millis(20));
        if let Ok(list) = Store::open(&killed).and_then(|s| s.list())
            && !list.is_empty()
        {
            break list.len();
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let store = Store::open(&killed).unwrap();
    assert_eq!(store.integrity().unwrap(), "ok");
    let counts = store.unit_counts().unwrap();
    assert!(counts.len() >= held && counts.len() < 6, "killed after {} of 6 documents", counts.len());
    let whole = Store::open(&index).unwrap().unit_counts().unwrap();
    let units_of = |name: &str| whole.iter().find(|(k, _)| k == name).map(|c| c.1);
    for (key, n) in &counts {
        assert!(*n > 0, "{key} was stored without its units");
        // Copies of the articles left as they were have the article's units and the "Copy" line's.
        if let Some(orig) = files.iter().find(|f| f.0 == key[2..]).and_then(|f| units_of(&f.0)) {
            assert_eq!(*n, orig + 1, "{key}");
        }
    }
    drop(store);
    let said = ok(&["index", big.to_str().unwrap(), "--into", killed.to_str().unwrap()]);
    assert!(said.starts_with(&format!("{} added, 0 changed, 0 removed, {} unchanged", 6 - counts.len(), counts.len())), "{said}");
    assert_eq!(Store::open(&killed).unwrap().list().unwrap().len(), 6);
    assert!(err(&["query", killed.to_str().unwrap(), "x", "--method", "sproutrag"]).contains("keeps no trees"));
    assert!(err(&["query", killed.to_str().unwrap(), "x", "--method", "raptor"]).contains("keeps no RAPTOR trees"));
    // A method an index cannot serve says so: a trained row, or trees other than the stored ones.
    let killed_s = killed.to_str().unwrap();
    assert!(err(&["query", killed_s, "x", "--method", "Dense((training: ()))"]).contains("cannot serve"));
    assert!(err(&["query", killed_s, "x", "--method", "Rse(())"]).contains("cannot serve"));
    let linked = err(&["query", killed_s, "x", "--method", "SproutRag((linkage: Average))"]);
    assert!(linked.contains("needs trees built otherwise"), "{linked}");
    assert!(err(&["query", killed_s, "x", "--method", "Hybrid((dept: 1))"]).contains("dept"));
    // Trees asked later are built for the stored documents, from their stored units and vectors.
    let said = ok(&["index", big.to_str().unwrap(), "--into", killed.to_str().unwrap(), "--trees", "--raptor"]);
    assert!(said.starts_with("0 added, 0 changed, 0 removed, 6 unchanged") && said.contains("12 trees added"), "{said}");
    for method in ["sproutrag", "raptor", "SproutRag((search: Beam((beam_width: 2))))", "Raptor((search: Traversal(top_k: 3)))"] {
        let found: Value = serde_json::from_str(&ok(&["query", killed.to_str().unwrap(), question, "--method", method, "--json"])).unwrap();
        assert_eq!(found["results"].as_array().unwrap().len(), 5, "{method}");
    }
}

/// A new index cuts by the experiments' default unit rule (issue 63): over a 10-K's statements as pdftotext
/// lays them out, `arbor query` ranks as `evaluate` does on the same text, an item holding part of a cut
/// table handed on as the whole table with its head, under the same token budget. An index built with the
/// plain rule keeps it, and says so.
#[test]
fn an_index_of_a_filing_ranks_and_hands_on_tables_as_evaluate_does() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = workspace().join("experiments/fixtures/filing-pdftotext-mini");
    let folder = tmp.path().join("filing");
    std::fs::create_dir(&folder).unwrap();
    std::fs::copy(fixture.join("documents.jsonl"), folder.join("documents.jsonl")).unwrap();
    let index = tmp.path().join("filing.arbor");
    let index_s = index.to_str().unwrap();
    ok(&["index", folder.to_str().unwrap(), "--into", index_s]);
    let rule: Value = serde_json::from_str(&Store::open(&index).unwrap().meta().unwrap().unwrap().units).unwrap();
    assert_eq!(rule["context"], Value::from(64), "the default rule: {rule}");

    let ron = format!(
        "(name: \"filing\", data: (format: Jsonl, path: {:?}, split: Some(\"test\")), retrieval: (scope: Corpus, top_k: 10, max_tokens: Some(300)), methods: [Flat, Bm25])",
        fixture.display().to_string()
    );
    let exp = Experiment::parse(&ron, Path::new("filing.ron")).unwrap();
    let (run, report) = evaluate_only(&exp, &tmp.path().join("runs"), None, None).unwrap();
    assert!(report.units.cut_tables > 0 && report.setting.contains("handed on as the whole table"), "{}", report.setting);
    let handed = retrievals::read(&run).unwrap();
    let corpus = arbor_experiments::run::load_corpus(&exp).unwrap().0;
    let qfile = tmp.path().join("questions.txt");
    let questions: Vec<&str> = report.queries.iter().map(|id| corpus.queries.iter().find(|q| &q.id == id).unwrap().text.as_str()).collect();
    std::fs::write(&qfile, questions.join("\n")).unwrap();
    let mut whole_tables = 0;
    for (method, row) in ["flat", "bm25"].iter().zip(&report.methods) {
        let answers = ok(&["query", index_s, "--queries", qfile.to_str().unwrap(), "-k", "10", "--max-tokens", "300", "--method", method, "--json"]);
        for (answer, id) in answers.lines().zip(&report.queries) {
            let expected = handed.iter().find(|r| &r.query == id && r.method == row.name).unwrap();
            let got = ranked(&serde_json::from_str(answer).unwrap());
            let want = ranked_in_run(expected, |d| format!("documents.jsonl#{d}"));
            same_ranking(&got, &want).unwrap_or_else(|e| panic!("{method} query {id}: {e}"));
            whole_tables += got.iter().filter(|(_, spans, _)| spans.len() > 1).count();
        }
    }
    assert!(whole_tables > 0, "some item is a table handed on with its head");

    // An index of the plain rule (as built before the default) keeps it: its items are handed on as ranked.
    let mut store = Store::open(&index).unwrap();
    let meta = store.meta().unwrap().unwrap();
    let plain = serde_json::to_string(&arbor_datasets::UnitConfig { context: None, ..serde_json::from_str(&meta.units).unwrap() }).unwrap();
    store.set_meta(&Meta { units: plain, ..meta }).unwrap();
    drop(store);
    let said = arbor(&["index", folder.to_str().unwrap(), "--into", index_s]);
    assert!(String::from_utf8_lossy(&said.stderr).contains("holds the plain unit rule"), "{}", String::from_utf8_lossy(&said.stderr));
    assert!(err(&["index", folder.to_str().unwrap(), "--into", index_s, "--max-sentences", "1"]).contains("at most 2 sentences, not 1"));
}
