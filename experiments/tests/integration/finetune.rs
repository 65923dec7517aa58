//! Fine-tuning the pretrained encoder with SproutRAG (`freeze_encoder: false`) on the committed fixture:
//! a few steps with the encoder inside the model and its own AdamW group, then indexing and queries
//! through the fine-tuned encoder; and the `vectors: Encoder` control, which reads the same trained model.

use std::path::Path;

use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::run;

const EXPERIMENT: &str = r#"Experiment(
    name: "finetune",
    data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test"), max_queries: Some(20)),
    methods: [
        SproutRag((
            attention: Sllm,
            search: Collapsed,
            model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None),
            training: Some((schedule: (epochs: 1, checkpoint_every: 1), batch_size: 256, freeze_encoder: false, lr_encoder: 2e-5)),
        )),
        SproutRag((
            attention: Sllm,
            search: Collapsed,
            vectors: Encoder,
            model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None),
            training: Some((schedule: (epochs: 1, checkpoint_every: 1), batch_size: 256, freeze_encoder: false, lr_encoder: 2e-5)),
        )),
    ],
    controls: [],
)"#;

#[test]
fn the_encoder_is_fine_tuned_in_its_own_optimizer_group() {
    std::env::set_current_dir(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))).unwrap();
    let exp = Experiment::parse(EXPERIMENT, Path::new("finetune.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (dir, report) = run(&exp, out.path(), false, None).unwrap();
    let m = &report.methods[0].metrics;
    assert!(m.ie_mean > 5.0 && m.hit[2] > 70.0, "IE {} hit@5 {}", m.ie_mean, m.hit[2]);
    // The control reads the same trained model: one training folder, one recorded model.
    let trainings: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_str().unwrap().starts_with("train-"))
        .collect();
    assert_eq!(trainings.len(), 1, "{trainings:?}");
    let models: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    assert_eq!(models.as_array().unwrap().len(), 1, "{models}");
    assert!(report.methods[1].name.contains("the encoder's vectors"), "{}", report.methods[1].name);
    // Both rows read the fine-tuned encoder's unit vectors from one cache folder (of the test article the 20
    // queries ask about), beside the frozen encoder's vectors of the four training articles.
    let mut units: Vec<usize> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_str().unwrap().starts_with("units-"))
        .map(|p| std::fs::read_dir(p).unwrap().count())
        .collect();
    units.sort();
    assert_eq!(units, [1, 4]);
    let train = &trainings[0];
    let state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(train.join("checkpoints/state.json")).unwrap()).unwrap();
    assert_eq!(state["complete"], true);
    let files: Vec<&str> = state["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(files.iter().any(|f| f.starts_with("optim-encoder-")), "{files:?}");
    let log = std::fs::read_to_string(train.join("log.jsonl")).unwrap();
    let steps = log.lines().filter(|l| l.contains("loss/ret")).count();
    assert_eq!(steps, 3, "one step per training article (3 of 4; one held back)");
    assert_eq!(log.lines().filter(|l| l.contains("lr/encoder")).count(), steps);
    // A frozen-encoder experiment asking for token-attention head weights cannot fine-tune.
    let bad = EXPERIMENT.replace("attention: Sllm", "attention: TokenBlocks(window_tokens: 256)");
    let err = Experiment::parse(&bad, Path::new("bad.ron")).unwrap_err().to_string();
    assert!(err.contains("needs attention: Sllm"), "{err}");
}

/// With the encoder frozen, `vectors: Encoder` leaves ranked flat are flat retrieval: the same vectors for
/// units and queries, so the same figures to the last digit.
#[test]
fn encoder_vectors_over_a_frozen_encoder_rank_leaves_as_flat() {
    std::env::set_current_dir(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))).unwrap();
    let text = r#"Experiment(
        name: "control",
        data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test"), max_queries: Some(40)),
        methods: [
            Flat,
            SproutRag((
                attention: Sllm,
                search: LeavesOnly,
                vectors: Encoder,
                model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None),
                training: Some((schedule: (epochs: 1, checkpoint_every: 1))),
            )),
        ],
        controls: [],
    )"#;
    let exp = Experiment::parse(text, Path::new("control.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (_, report) = run(&exp, out.path(), false, None).unwrap();
    let (flat, control) = (&report.methods[0].metrics, &report.methods[1].metrics);
    assert!(flat.ie_mean > 5.0, "flat IE {}", flat.ie_mean);
    assert_eq!(flat, control);
    assert_eq!(report.methods[0].tokens_per_query, report.methods[1].tokens_per_query);
    // The control needs the SLLM's attention (training), never a token-attention source.
    let bad = text
        .replace("attention: Sllm", "attention: TokenBlocks(window_tokens: 256)")
        .replace("training: Some((schedule: (epochs: 1, checkpoint_every: 1))),", "");
    let err = Experiment::parse(&bad, Path::new("bad.ron")).unwrap_err().to_string();
    assert!(err.contains("vectors: Encoder needs attention: Sllm"), "{err}");
}
