//! The reranking stage on the committed fixture: a cross-encoder trained on a few training questions
//! reranks flat's candidates, and `evaluate --from` the run folder reloads it from its checkpoint and
//! scores every query exactly as the freshly trained model did.

use std::path::Path;

use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::{evaluate_only, run};

const EXPERIMENT: &str = r#"Experiment(
    name: "rerank",
    data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test"), max_queries: Some(30)),
    methods: [
        Flat,
        Rerank((over: Flat, candidates: 8, training: (schedule: (epochs: 1, checkpoint_every: 4), train_queries: Some(24), negatives: 3, hard_negatives: 6, trainable_layers: 1))),
    ],
    controls: [],
)"#;

#[test]
fn a_trained_reranker_reloads_from_its_run_folder_to_identical_results() {
    std::env::set_current_dir(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))).unwrap();
    let exp = Experiment::parse(EXPERIMENT, Path::new("rerank.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (dir, trained) = run(&exp, out.path(), false, None).unwrap();
    let (flat, reranked) = (&trained.methods[0].metrics, &trained.methods[1].metrics);
    assert_ne!(flat, reranked, "the reranker reorders flat's candidates");
    assert!(reranked.hit[2] > 50.0, "hit@5 {}", reranked.hit[2]);
    let models: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    let train_dir = Path::new(models[0]["dir"].as_str().unwrap());
    let log = std::fs::read_to_string(train_dir.join("log.jsonl")).unwrap();
    assert!(log.contains("eval/hit1") && log.contains("train/gamma") && log.contains("lr/encoder"), "{log}");
    // A fresh cache: nothing but the earlier run's checkpoint can give the reranker back.
    let (_, again) = evaluate_only(&exp, out.path(), Some(&dir), Some(&out.path().join("fresh-cache"))).unwrap();
    assert_eq!(&again.methods[1].metrics, reranked);
}
