//! A sweep end to end on the committed fixture: two beam widths over one trained model, then a rerun that
//! finds everything done, then an interrupted run (its report lost) that is redone without retraining.

use std::path::{Path, PathBuf};

use arbor_ablations::runner::{run_sweep, shared_dir};
use arbor_ablations::sweep::LoadedSweep;

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

const BASE: &str = r#"Experiment(
    name: "fixture",
    data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test"), max_queries: Some(40)),
    methods: [
        Flat,
        SproutRag((
            attention: Sllm,
            search: Beam((beam_width: 5)),
            model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None),
            training: Some((schedule: (epochs: 1, checkpoint_every: 5), batch_size: 16, lr_new: 1e-3)),
        )),
    ],
    controls: [],
)"#;

fn folders(dir: &Path, kind: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_str().unwrap().starts_with(&format!("{kind}-")))
        .collect()
}

fn statuses(dir: &Path) -> Vec<String> {
    let index: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    index.as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_beam_width_sweep_trains_once_and_resumes() {
    std::env::set_current_dir(workspace()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("base.ron"), BASE).unwrap();
    let sweep_file = tmp.path().join("sweep.ron");
    std::fs::write(&sweep_file, r#"Sweep(name: "bw", base: "base.ron", axes: [Values(path: "methods.search.beam_width", values: [1, 5])])"#).unwrap();
    let out = tmp.path().join("out");
    let loaded = LoadedSweep::load(&sweep_file).unwrap();
    let first = run_sweep(&loaded, &out).unwrap();
    assert_eq!(statuses(&first.dir), ["ran", "ran"]);
    assert_eq!(first.rows.len(), 4, "two runs x two methods");
    // One training and one set of trees serve both beam widths.
    let shared = shared_dir(&out);
    let trained = folders(&shared, "train");
    assert_eq!(trained.len(), 1);
    assert_eq!(folders(&shared, "trees").len(), 1);
    let steps = std::fs::read_to_string(trained[0].join("log.jsonl")).unwrap().lines().filter(|l| l.contains("loss/ret")).count();
    let state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(trained[0].join("checkpoints/state.json")).unwrap()).unwrap();
    assert_eq!(steps, state["step"].as_u64().unwrap() as usize, "trained once: one log line per step");
    // The sweep folder: the sweep file, a table with a row per run and method, a CSV, the plots.
    for file in ["sweep.ron", "base.ron", "table.md", "table.csv", "plots/ie-mean.svg", "plots/latency.svg", "runs/beam_width=1/report.json"] {
        assert!(first.dir.join(file).is_file(), "{file}");
    }
    assert_eq!(std::fs::read_to_string(first.dir.join("table.csv")).unwrap().lines().count(), 5);
    // Flat does not depend on the beam width; the tree's results come from the right runs.
    let flat: Vec<_> = first.rows.iter().filter(|r| r.method == arbor_experiments::methods::Method::Flat).map(|r| r.result.metrics.clone()).collect();
    assert_eq!(flat[0], flat[1]);
    assert!(first.rows.iter().any(|r| r.result.name.contains("beam b=1")) && first.rows.iter().any(|r| r.result.name.contains("beam b=5")));

    // Rerun: everything is found finished, nothing is recomputed.
    let again = run_sweep(&loaded, &out).unwrap();
    assert_eq!(statuses(&again.dir), ["reused", "reused"]);
    assert_eq!(again.rows, first.rows);

    // An interrupted run (no report yet) is run again; the model is read back, not retrained.
    std::fs::remove_file(first.dir.join("runs/beam_width=5/report.json")).unwrap();
    let log_before = std::fs::read_to_string(trained[0].join("log.jsonl")).unwrap();
    let resumed = run_sweep(&loaded, &out).unwrap();
    assert_eq!(statuses(&resumed.dir), ["reused", "ran"]);
    assert_eq!(std::fs::read_to_string(trained[0].join("log.jsonl")).unwrap(), log_before);
    let metrics = |rows: &[arbor_ablations::table::Row]| rows.iter().map(|r| r.result.metrics.clone()).collect::<Vec<_>>();
    assert_eq!(metrics(&resumed.rows), metrics(&first.rows));

    // A changed base is not mixed with the old runs.
    std::fs::write(tmp.path().join("base.ron"), BASE.replace("Some(40)", "Some(30)")).unwrap();
    let err = format!("{:#}", run_sweep(&LoadedSweep::load(&sweep_file).unwrap(), &out).unwrap_err());
    assert!(err.contains("different experiment"), "{err}");
}

/// A one-document corpus of single-sentence paragraphs; the query asks for the Saturn sentence, which is
/// paragraph `at`.
fn write_corpus(dir: &Path, at: usize) {
    let mut paragraphs = vec![
        "The river flows north through the valley.",
        "Bakers rise before dawn to knead the dough.",
        "The committee approved the annual budget.",
        "Volcanic soil is rich in minerals.",
        "The violin was made in Cremona.",
    ];
    let gold = "Saturn has the most spectacular rings.";
    paragraphs.insert(at, gold);
    let text = paragraphs.join("\n\n");
    let start = text.find(gold).unwrap();
    let doc = serde_json::json!({"id": "d", "title": "t", "text": text, "split": "test"});
    let query = serde_json::json!({"id": "q", "text": "Which planet has the most spectacular rings?", "doc_ids": ["d"],
        "evidence": [{"doc_id": "d", "start": start, "end": start + gold.len()}], "split": "test"});
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("documents.jsonl"), format!("{doc}\n")).unwrap();
    std::fs::write(dir.join("queries.jsonl"), format!("{query}\n")).unwrap();
}

#[test]
fn an_edited_corpus_gets_fresh_vectors_and_its_finished_runs_are_rerun() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_corpus(&data, 3);
    let base = format!(
        r#"Experiment(name: "edit", data: (format: Jsonl, path: "{}", split: Some("test")), units: (max_sentences: 1), methods: [Flat])"#,
        data.display()
    );
    std::fs::write(tmp.path().join("base.ron"), base).unwrap();
    let sweep_file = tmp.path().join("sweep.ron");
    let sweep = |values: &str| format!(r#"Sweep(name: "k", base: "base.ron", axes: [Values(path: "retrieval.top_k", values: [{values}])])"#);
    std::fs::write(&sweep_file, sweep("5")).unwrap();
    let out = tmp.path().join("out");
    let first = run_sweep(&LoadedSweep::load(&sweep_file).unwrap(), &out).unwrap();
    assert_eq!(first.rows[0].result.metrics.ie[0], 100.0, "the query is the gold sentence's paraphrase");

    // The gold sentence moves to the first paragraph (same number of units); the sweep grows a point.
    write_corpus(&data, 0);
    std::fs::write(&sweep_file, sweep("5, 1")).unwrap();
    let second = run_sweep(&LoadedSweep::load(&sweep_file).unwrap(), &out).unwrap();
    assert_eq!(statuses(&second.dir), ["rerun", "ran"], "the finished run is redone, not mixed in");
    for row in &second.rows {
        assert_eq!(row.result.metrics.ie[0], 100.0, "{}: vectors of the edited text", row.run);
    }
    // The edited document has vectors of its own; the old ones stay under the old text's key.
    let units = folders(&shared_dir(&out), "units");
    assert_eq!(units.len(), 1);
    assert_eq!(std::fs::read_dir(&units[0]).unwrap().count(), 2);
    // A fresh run of the edited corpus agrees.
    let exp = arbor_experiments::experiment::Experiment::load(&tmp.path().join("base.ron")).unwrap();
    let (_, fresh) = arbor_experiments::run::run(&exp, &tmp.path().join("fresh"), false, None).unwrap();
    assert_eq!(fresh.methods[0].metrics, second.rows[0].result.metrics);
}

/// Two training documents (one becomes validation: fraction 0.5) whose gold is one sentence, and a test
/// document whose gold is a whole two-sentence paragraph: units of one sentence win on validation, units of
/// two on test.
fn write_selection_corpus(dir: &Path) {
    let doc =
        |id: &str, split: &str, paragraphs: [&str; 2]| serde_json::json!({"id": id, "title": id, "text": paragraphs.join("\n\n"), "split": split});
    let docs = [
        doc(
            "a",
            "train",
            [
                "Saturn has bright rings of ice. The weather today is mild and calm.",
                "Jupiter is the largest planet of all. Bakers rise early in the morning.",
            ],
        ),
        doc(
            "b",
            "train",
            [
                "Mercury orbits closest to the sun. Farmers sell apples at the market.",
                "Venus spins backwards very slowly. The train left the station late.",
            ],
        ),
        doc(
            "t",
            "test",
            ["The violin was made in Cremona. Its maple back is carved by hand.", "Rivers flow north in spring. Snow melts on the high hills."],
        ),
    ];
    let query = |id: &str, doc: &serde_json::Value, text: &str, gold: &str| {
        let body = doc["text"].as_str().unwrap();
        let start = body.find(gold).unwrap();
        serde_json::json!({"id": id, "text": text, "doc_ids": [doc["id"]], "split": doc["split"],
            "evidence": [{"doc_id": doc["id"], "start": start, "end": start + gold.len()}]})
    };
    let queries = [
        query("qa", &docs[0], "Which planet has bright rings of ice?", "Saturn has bright rings of ice."),
        query("qb", &docs[1], "Which planet orbits closest to the sun?", "Mercury orbits closest to the sun."),
        query(
            "qt",
            &docs[2],
            "Where was the violin made, and how is its maple back carved?",
            "The violin was made in Cremona. Its maple back is carved by hand.",
        ),
    ];
    std::fs::create_dir_all(dir).unwrap();
    let lines = |items: &[serde_json::Value]| items.iter().map(|v| format!("{v}\n")).collect::<String>();
    std::fs::write(dir.join("documents.jsonl"), lines(&docs)).unwrap();
    std::fs::write(dir.join("queries.jsonl"), lines(&queries)).unwrap();
}

#[test]
fn selection_reads_validation_alone_and_scores_the_chosen_point_on_test_once() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    write_selection_corpus(&data);
    let base = format!(
        r#"Experiment(name: "sel", data: (format: Jsonl, path: "{}", split: Some("test"), validation: Some((fraction: 0.5, seed: 0))), methods: [Bm25])"#,
        data.display()
    );
    std::fs::write(tmp.path().join("base.ron"), &base).unwrap();
    let sweep_file = tmp.path().join("sweep.ron");
    let axis = r#"Values(path: "units.max_sentences", values: [2, 1])"#;
    std::fs::write(&sweep_file, format!(r#"Sweep(name: "sel", base: "base.ron", axes: [{axis}], select: Some((metric: IeMean, method: 0)))"#))
        .unwrap();
    let out = tmp.path().join("out");
    let outcome = run_sweep(&LoadedSweep::load(&sweep_file).unwrap(), &out).unwrap();
    let selected = outcome.selected.expect("a selection");
    assert_eq!(selected.slug, "max_sentences=1", "one-sentence units win on validation");
    let slugs: Vec<String> = outcome.runs.iter().map(|r| r.slug.clone()).collect();
    assert_eq!(slugs, ["max_sentences=2,split=validation", "max_sentences=1,split=validation", "max_sentences=1,split=test"]);
    assert!(!out.join("sel/runs/max_sentences=2,split=test").exists(), "no other point is scored on test");
    assert!(selected.report.selection.contains("chosen on the validation split"), "{}", selected.report.selection);
    assert!(selected.report.setting.contains("split test"), "{}", selected.report.setting);
    // On test the other point would have won: the selection did not look.
    let mut other = arbor_experiments::experiment::Experiment::parse(&base, Path::new("base.ron")).unwrap();
    other.units.max_sentences = 2;
    let (_, two) = arbor_experiments::run::run(&other, &tmp.path().join("check"), false, None).unwrap();
    let (chosen, better) = (selected.report.methods[0].metrics.ie_mean, two.methods[0].metrics.ie_mean);
    assert!(better > chosen, "test optimum {better} (two sentences) differs from the chosen point's {chosen}");
    let table = std::fs::read_to_string(outcome.dir.join("table.md")).unwrap();
    assert!(table.contains("Selection on validation") && table.contains("| 1 | test |"), "{table}");
}

#[test]
fn every_shipped_sweep_expands() {
    let dir = workspace().join("ablations");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if path.extension().is_some_and(|e| e == "ron") && text.contains("Sweep(") {
            let loaded = LoadedSweep::load(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            assert!(!loaded.runs.is_empty());
            seen += 1;
        }
    }
    assert!(seen >= 7, "{seen} sweep files");
    for file in arbor_ablations::reproduce::SWEEPS {
        assert!(dir.join(file).is_file(), "reproduce needs {file}");
    }
}
