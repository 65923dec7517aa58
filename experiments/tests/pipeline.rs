//! The whole evaluation pipeline on the committed fixture: experiment file -> corpus -> units -> encoder
//! -> flat and BM25 -> report in a run folder.

use std::path::Path;

use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::run;

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

#[test]
fn quickstart_writes_a_run_folder_with_a_sane_report() {
    std::env::set_current_dir(workspace()).unwrap();
    let exp = Experiment::load(Path::new("experiments/quickstart.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (dir, report) = run(&exp, out.path(), false).unwrap();
    assert!(dir.starts_with(out.path().join("quickstart")));
    let saved = Experiment::load(&dir.join("experiment.ron")).unwrap();
    assert_eq!(saved, exp, "the run folder reproduces the experiment");
    assert!(dir.join("report.md").is_file() && dir.join("report.json").is_file());
    assert_eq!(report.methods.len(), 5);
    for m in &report.methods {
        assert_eq!(m.metrics.queries, 200, "{}", m.name);
        // Far above chance (a random unit of ~125 per article: IE well under 1) and below perfect.
        assert!(m.metrics.ie_mean > 5.0 && m.metrics.ie_mean < 60.0, "{}: IE {}", m.name, m.metrics.ie_mean);
        assert!(m.metrics.hit[2] > 70.0, "{}: hit@5 {}", m.name, m.metrics.hit[2]);
        assert!(m.tokens_per_query > 50.0);
    }
    // SproutRAG's trees are in the run folder, one per test article and index, and reload.
    let folders = |kind: &str| -> Vec<std::path::PathBuf> {
        let mut found: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() && p.file_name().unwrap().to_str().unwrap().starts_with(&format!("{kind}-")))
            .collect();
        found.sort();
        found
    };
    assert_eq!(folders("trees").len(), 3, "one index per attention source and head weights");
    for index in folders("trees") {
        let trees: Vec<_> = std::fs::read_dir(index).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(trees.len(), 2);
        for path in trees {
            let tree = arbor_eval::tree_io::load(&path).unwrap();
            assert_eq!(tree.leaves_under(tree.root()).count(), tree.num_leaves());
        }
    }
    // Training left its checkpoint, its log (one line per step plus the per-epoch evaluations) and
    // TensorBoard events.
    // Two trainings: the head weights over token attention, and the SLLM (the one with InfoNCE).
    let trained = folders("train");
    assert_eq!(trained.len(), 2);
    let train = trained.iter().find(|t| std::fs::read_to_string(t.join("log.jsonl")).unwrap().contains("loss/ret")).unwrap();
    let weights = trained.iter().find(|t| *t != train).unwrap();
    let log = std::fs::read_to_string(weights.join("log.jsonl")).unwrap();
    let entropy: Vec<f64> = log.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["head_weight_entropy"].as_f64()).collect();
    assert!(entropy.last().unwrap() < &(72f64.ln() - 1e-3), "the learned head weights moved off uniform: {entropy:?}");
    let state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(train.join("checkpoints/state.json")).unwrap()).unwrap();
    let steps = state["step"].as_u64().unwrap() as usize;
    assert!(steps > 0);
    let log = std::fs::read_to_string(train.join("log.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().filter(|l| l.get("loss/ret").is_some()).count(), steps);
    let evals: Vec<f64> = lines.iter().filter_map(|l| l["eval/ie_mean"].as_f64()).collect();
    assert_eq!(evals.len(), 3, "one evaluation per epoch");
    assert!(evals.iter().all(|&ie| ie > 5.0), "{evals:?}");
    // Epoch means of both loss terms go down (single batches are too noisy to compare).
    for term in ["loss/ret", "loss/attn_weighted"] {
        let mean = |epoch: f64| {
            let v: Vec<f64> = lines.iter().filter(|l| l["epoch"].as_f64() == Some(epoch)).filter_map(|l| l[term].as_f64()).collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        assert!(mean(2.0) < mean(0.0), "{term}: epoch 0 mean {} -> epoch 2 mean {}", mean(0.0), mean(2.0));
    }
    assert!(std::fs::read_dir(train.join("tb")).unwrap().count() >= 1);
    assert_eq!(state["complete"], true);

    // --resume on a finished run recomputes nothing: embeddings, the trained model and the trees are read
    // back, and every figure comes out the same.
    let modified = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let a_tree = std::fs::read_dir(&folders("trees")[0]).unwrap().next().unwrap().unwrap().path();
    let before = (modified(&a_tree), modified(&train.join("checkpoints/state.json")), log.len());
    let (again, second) = run(&exp, out.path(), true).unwrap();
    assert_eq!(again, dir);
    let after = (modified(&a_tree), modified(&train.join("checkpoints/state.json")), std::fs::read_to_string(train.join("log.jsonl")).unwrap().len());
    assert_eq!(before, after, "nothing was rebuilt or retrained");
    for (a, b) in report.methods.iter().zip(&second.methods) {
        assert_eq!(a.metrics, b.metrics, "{}", a.name);
    }
}

#[test]
fn a_missing_corpus_is_reported_with_its_path() {
    let text = r#"Experiment(name: "x", data: (format: Jsonl, path: "/nonexistent/corpus"), methods: [Bm25])"#;
    let exp = Experiment::parse(text, Path::new("x.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = format!("{:#}", run(&exp, out.path(), false).unwrap_err());
    assert!(err.contains("/nonexistent/corpus/documents.jsonl"), "{err}");
}

#[test]
fn the_data_root_is_required_when_the_path_names_it() {
    let text = r#"Experiment(name: "x", data: (format: Jsonl, path: "$ARBOR_DATA/squad-long"), methods: [Bm25])"#;
    let exp = Experiment::parse(text, Path::new("x.ron")).unwrap();
    if std::env::var_os("ARBOR_DATA").is_none() {
        let err = format!("{:#}", exp.data.resolved_path().unwrap_err());
        assert!(err.contains("set ARBOR_DATA"), "{err}");
    }
}
