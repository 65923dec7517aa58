//! The reranking stage on the committed fixture: a cross-encoder trained on a few training questions
//! reranks flat's candidates, a bi-encoder is distilled from it, and `evaluate --from` the run folder
//! reloads both from their checkpoints and scores every query exactly as the freshly trained models did;
//! an index built `--from` the run ranks as each of them did.

use std::path::Path;

use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::{evaluate_only, run};

const EXPERIMENT: &str = r#"Experiment(
    name: "rerank",
    data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test"), max_queries: Some(20)),
    methods: [
        Flat,
        Rerank((over: Flat, candidates: 8, training: (schedule: (epochs: 1, checkpoint_every: 4), train_queries: Some(12), negatives: 3, hard_negatives: 6, trainable_layers: 1))),
        Distill((teacher: (schedule: (epochs: 1, checkpoint_every: 4), train_queries: Some(12), negatives: 3, hard_negatives: 6, trainable_layers: 1))),
    ],
    controls: [],
)"#;

/// The fixture with every eighth training question only, in a folder under `dir`: the validation
/// documents carved from the training ones then hold a few dozen questions, not 183, which the reranker's,
/// the student's and the control's held-out readings each score (most of this test's time otherwise).
fn thinned(dir: &Path) -> std::path::PathBuf {
    let fixture = Path::new("experiments/fixtures/squad-mini");
    let to = dir.join("squad-thinned");
    std::fs::create_dir(&to).unwrap();
    std::fs::copy(fixture.join("documents.jsonl"), to.join("documents.jsonl")).unwrap();
    let queries = std::fs::read_to_string(fixture.join("queries.jsonl")).unwrap();
    let mut train = 0;
    let kept: Vec<&str> = queries
        .lines()
        .filter(|l| {
            let is_train = l.contains(r#""split": "train""#);
            train += usize::from(is_train);
            !is_train || train % 8 == 1
        })
        .collect();
    std::fs::write(to.join("queries.jsonl"), kept.join("\n")).unwrap();
    to
}

/// One training serves every check (a reranker's training is the slowest step of this file): the reranker,
/// the student distilled from it and their matched control (one, the same for both) trained once, then the
/// run folder reloaded.
#[test]
fn a_trained_reranker_reloads_from_its_run_folder_and_its_control_takes_its_steps() {
    std::env::set_current_dir(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))).unwrap();
    let out = tempfile::tempdir().unwrap();
    let corpus = thinned(out.path());
    let text = EXPERIMENT.replace("controls: [],", "controls: [Dense],").replace("experiments/fixtures/squad-mini", corpus.to_str().unwrap());
    let exp = Experiment::parse(&text, Path::new("rerank.ron")).unwrap();
    let (dir, trained) = run(&exp, out.path(), false, None).unwrap();
    let (flat, reranked) = (&trained.methods[0].metrics, &trained.methods[1].metrics);
    assert_ne!(flat, reranked, "the reranker reorders flat's candidates");
    assert!(reranked.hit[2] > 50.0, "hit@5 {}", reranked.hit[2]);
    let models: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    let model = |row: &str| models.iter().find(|m| m["method"].as_str().unwrap().starts_with(row)).unwrap_or_else(|| panic!("{row}: {models:?}"));
    let teacher = model("Flat (dense units) + reranker");
    let dirs: std::collections::HashSet<&str> = models.iter().map(|m| m["dir"].as_str().unwrap()).collect();
    assert_eq!(dirs.len(), 3, "one reranker (the Rerank row and the teacher recorded once), the student, the control: {models:?}");
    let log = |m: &serde_json::Value| std::fs::read_to_string(Path::new(m["dir"].as_str().unwrap()).join("log.jsonl")).unwrap();
    let reranker_log = log(teacher);
    assert!(reranker_log.contains("eval/hit1") && reranker_log.contains("train/gamma") && reranker_log.contains("lr/encoder"), "{reranker_log}");
    // The reranker's matched control trains on the reranker's own groups: as many steps over the same
    // sample, its log the reranker's held-out figures; its row says what it is. It controls the student too.
    assert_eq!(trained.methods.len(), 4);
    let (student, control) = (&trained.methods[2], &trained.methods[3]);
    assert!(control.name.contains("on the reranker's groups") && control.name.contains("top 1 blocks"), "{}", control.name);
    assert!(student.name.contains("distilled") && student.name.contains("MarginMSE"), "{}", student.name);
    let steps = |m: &serde_json::Value| -> u64 {
        let state = Path::new(m["dir"].as_str().unwrap()).join("checkpoints/state.json");
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(state).unwrap()).unwrap()["step"].as_u64().unwrap()
    };
    let (student_model, control_model) = (model("Dense, encoder distilled"), model("Dense, encoder fine-tuned"));
    assert_eq!(steps(teacher), steps(control_model), "the same steps: 12 queries in batches of 4, one epoch");
    assert_eq!(steps(student_model), steps(control_model));
    let control_log = log(control_model);
    assert!(control_log.contains("eval/loss") && control_log.contains("loss/rank") && control_log.contains("lr/encoder"), "{control_log}");
    let student_log = log(student_model);
    assert!(student_log.contains("eval/loss") && student_log.contains("loss/margin_mse") && !student_log.contains("loss/rank"), "{student_log}");
    assert_ne!(student.metrics, control.metrics, "the teacher's scores change what the student learns");
    // The student leaves arbor as a sentence-transformers folder.
    let to = out.path().join("student");
    crate::common::ok(&["export", dir.to_str().unwrap(), "--row", &student.name, "--to", to.to_str().unwrap()]);
    assert!(to.join("model.safetensors").is_file() && to.join("modules.json").is_file());
    // It serves an index of the same articles (issue 63): `arbor query` ranks as its row did in the run.
    crate::common::an_index_from_the_run_ranks_as_its_row(&dir, &corpus, "distilled", &student.name, 10);
    // So does the reranker over flat's candidates, its index holding the pretrained encoder's vectors.
    let row = &trained.methods[1].name;
    crate::common::an_index_from_the_run_ranks_as_its_row(&dir, &corpus, row, row, 10);
    // A fresh cache: nothing but the earlier run's checkpoints can give the models back.
    let (_, again) = evaluate_only(&exp, out.path(), Some(&dir), Some(&out.path().join("fresh-cache"))).unwrap();
    assert_eq!(&again.methods[1].metrics, reranked);
    assert_eq!(again.methods[2].metrics, student.metrics);
    assert_eq!(again.methods[3].metrics, control.metrics);
}
