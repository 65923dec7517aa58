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

/// One training serves both checks (a reranker's training is the slowest step of this file): the reranker
/// and its matched control trained once, then the run folder reloaded.
#[test]
fn a_trained_reranker_reloads_from_its_run_folder_and_its_control_takes_its_steps() {
    std::env::set_current_dir(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))).unwrap();
    let exp = Experiment::parse(&EXPERIMENT.replace("controls: [],", "controls: [Dense],"), Path::new("rerank.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (dir, trained) = run(&exp, out.path(), false, None).unwrap();
    let (flat, reranked) = (&trained.methods[0].metrics, &trained.methods[1].metrics);
    assert_ne!(flat, reranked, "the reranker reorders flat's candidates");
    assert!(reranked.hit[2] > 50.0, "hit@5 {}", reranked.hit[2]);
    let models: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    assert_eq!(models.len(), 2);
    let log = |m: &serde_json::Value| std::fs::read_to_string(Path::new(m["dir"].as_str().unwrap()).join("log.jsonl")).unwrap();
    let reranker_log = log(&models[0]);
    assert!(reranker_log.contains("eval/hit1") && reranker_log.contains("train/gamma") && reranker_log.contains("lr/encoder"), "{reranker_log}");
    // The reranker's matched control trains on the reranker's own groups: as many steps over the same
    // sample, its log the reranker's held-out figures; its row says what it is.
    assert_eq!(trained.methods.len(), 3);
    let control = &trained.methods[2];
    assert!(control.name.contains("on the reranker's groups") && control.name.contains("top 1 blocks"), "{}", control.name);
    let steps = |m: &serde_json::Value| -> u64 {
        let state = Path::new(m["dir"].as_str().unwrap()).join("checkpoints/state.json");
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(state).unwrap()).unwrap()["step"].as_u64().unwrap()
    };
    assert_eq!(steps(&models[0]), steps(&models[1]), "the same steps: 24 queries in batches of 4, one epoch");
    let control_log = log(&models[1]);
    assert!(control_log.contains("eval/loss") && control_log.contains("loss/rank") && control_log.contains("lr/encoder"), "{control_log}");
    // A fresh cache: nothing but the earlier run's checkpoints can give the models back.
    let (_, again) = evaluate_only(&exp, out.path(), Some(&dir), Some(&out.path().join("fresh-cache"))).unwrap();
    assert_eq!(&again.methods[1].metrics, reranked);
    assert_eq!(again.methods[2].metrics, control.metrics);
}
