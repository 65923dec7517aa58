//! The unit tests of `arbor_experiments::experiment` (src/experiment.rs).

use arbor_experiments::experiment::*;
use std::path::Path;

const GOOD: &str = r#"Experiment(
    name: "t",
    data: (format: Jsonl, path: "$ARBOR_DATA/squad-long", split: Some("test")),
    methods: [Flat, Bm25],
)"#;

#[test]
fn defaults_fill_what_the_file_leaves_out_and_survive_a_round_trip() {
    let exp = Experiment::parse(GOOD, Path::new("t.ron")).unwrap();
    assert_eq!(exp.units.max_sentences, 2);
    assert_eq!(exp.units.max_tokens, None, "the encoder's limit");
    assert_eq!(exp.retrieval.top_k, 10);
    assert_eq!(exp.retrieval.max_tokens, Some(DEFAULT_MAX_TOKENS));
    assert_eq!(exp.encoder.batch_size, 32);
    let back = Experiment::parse(&exp.to_ron(), Path::new("back.ron")).unwrap();
    assert_eq!(back, exp);
}

#[test]
fn the_encoders_pooling_and_prompts_are_read_and_written_only_when_set() {
    let set = GOOD.replace("methods:", r#"encoder: (pooling: Some(Cls), prompts: Some((query: "query: "))), methods:"#);
    let exp = Experiment::parse(&set, Path::new("t.ron")).unwrap();
    assert_eq!(exp.encoder.pooling, Some(arbor_models::pooling::Pooling::Cls));
    assert_eq!(exp.encoder.prompts, Some(arbor_models::pooling::Prompts { query: "query: ".into(), passage: String::new() }));
    assert_eq!(Experiment::parse(&exp.to_ron(), Path::new("back.ron")).unwrap(), exp);
    let plain = Experiment::parse(GOOD, Path::new("t.ron")).unwrap().to_ron();
    assert!(!plain.contains("pooling") && !plain.contains("prompts"), "unset, they leave the file (and every key) as it was: {plain}");
}

#[test]
fn a_syntax_error_names_file_line_and_column() {
    let bad = GOOD.replace("[Flat, Bm25]", "[Flat Bm25]");
    let err = Experiment::parse(&bad, Path::new("x.ron")).unwrap_err().to_string();
    assert!(err.starts_with("x.ron:4:20:"), "{err}");
}

#[test]
fn training_corpora_are_refused_under_corpus_scope_and_named_once() {
    let lend = |sources: &str, scope: &str| {
        let text = GOOD
            .replace(r#"split: Some("test")"#, &format!(r#"split: Some("test"), train_with: [{sources}]"#))
            .replace("methods:", &format!("retrieval: (scope: {scope}), methods:"));
        Experiment::parse(&text, Path::new("x.ron"))
    };
    let squad = r#"(format: Jsonl, path: "$ARBOR_DATA/squad-long")"#;
    let exp = lend(squad, "QueryDocuments").unwrap();
    assert_eq!(exp.data.train_with[0].name(), "squad-long");
    assert_eq!(Experiment::parse(&exp.to_ron(), Path::new("back.ron")).unwrap(), exp);
    let err = lend(squad, "Corpus").unwrap_err().to_string();
    assert!(err.contains("QueryDocuments") && err.contains("--from"), "{err}");
    let err = lend(&format!("{squad}, {squad}"), "QueryDocuments").unwrap_err().to_string();
    assert!(err.contains("\"squad-long\" twice"), "{err}");
}

#[test]
fn unknown_fields_and_methods_are_rejected() {
    let err = Experiment::parse(&GOOD.replace("methods", "methodz"), Path::new("x.ron")).unwrap_err().to_string();
    assert!(err.contains("methodz"), "{err}");
    let err = Experiment::parse(&GOOD.replace("Bm25", "Bm26"), Path::new("x.ron")).unwrap_err().to_string();
    assert!(err.contains("Bm26"), "{err}");
}

#[test]
fn values_that_make_no_sense_are_errors_naming_the_field() {
    let with = |from: &str, to: &str| Experiment::parse(&GOOD.replace(from, to), Path::new("x.ron")).unwrap_err().to_string();
    assert!(with("methods:", "retrieval: (top_k: 0), methods:").contains("retrieval.top_k"));
    assert!(with("methods:", "units: (context: Some(0)), methods:").contains("units.context"));
    // Every training reads a unit as its evaluation does (its input: header, then piece, wherever the
    // encoder embeds units; the units' own text where token attention is read at both), so each trained
    // method takes a header.
    for trained in [
        "methods: [Dense((training: (schedule: (epochs: 1))))]",
        "methods: [Rerank((over: Flat))]",
        "methods: [SproutRag((attention: Sllm, training: Some((schedule: (epochs: 1)))))]",
        "methods: [SproutRag((training: Some((schedule: (epochs: 1)))))]",
        "methods: [SmartChunk((plan: Planner(())))]",
    ] {
        let file = GOOD.replace("methods: [Flat, Bm25]", &format!("units: (context: Some(32)), {trained}"));
        assert!(Experiment::parse(&file, Path::new("x.ron")).is_ok(), "{trained}");
    }
    assert!(Experiment::parse(&GOOD.replace("methods:", "units: (context: Some(32)), methods:"), Path::new("x.ron")).is_ok());
    for fraction in ["0.0", "1.0", "1.5"] {
        let err = with(r#"split: Some("test")"#, &format!(r#"split: Some("test"), validation: Some((fraction: {fraction}, seed: 0))"#));
        assert!(err.contains("data.validation.fraction"), "{err}");
    }
    let err = with("methods: [Flat, Bm25]", "methods: [SproutRag((attention: Sllm, training: Some((holdout_docs: 5))))]");
    assert!(err.contains("holdout_docs") && err.contains("data: (..., validation:"), "{err}");
    // The old shape of the training settings says where they moved, at the line and column.
    let err = with("methods: [Flat, Bm25]", "methods: [SproutRag((attention: Sllm, training: Some((epochs: 2))))]");
    assert!(err.starts_with("x.ron:4:") && err.contains("schedule: (epochs: ..)"), "{err}");
    // So does the old whole-sentence switch.
    let err = with("methods: [Flat, Bm25]", "retrieval: (whole_sentences: true), methods: [Flat]");
    assert!(err.contains("hand_on: WholeSentences"), "{err}");
    assert!(Experiment::parse(&GOOD.replace("methods:", "retrieval: (hand_on: Paragraphs), methods:"), Path::new("x.ron")).is_ok());
}

#[test]
fn two_rows_of_one_name_are_refused_and_a_rows_arithmetic_is_in_its_name() {
    let with = |methods: &str| Experiment::parse(&GOOD.replace("[Flat, Bm25]", methods), Path::new("x.ron"));
    let err = with("[Flat, Bm25, Flat]").unwrap_err().to_string();
    assert!(err.contains("method 0 and method 2") && err.contains("\"Flat (dense units)\""), "{err}");
    // A control listed as a method is that control's row (crate::run::rows), not a second one.
    let mut exp = with("[SproutRag((attention: Sllm, training: Some((schedule: (epochs: 1)))))]").unwrap();
    let controls = arbor_experiments::methods::controls::matched(&exp.methods, &exp.controls);
    exp.methods.push(controls[0].0.clone());
    exp.check().unwrap();
    assert_eq!(arbor_experiments::run::rows(&exp).len(), 1 + controls.len(), "the listed control's row is its own");
    // The same fine-tuned row in float32 and in bf16 autocast: two rows, the second named so.
    let tuned = |precision: &str| format!("Dense((training: (schedule: (epochs: 1), freeze_encoder: false, precision: {precision})))");
    let exp = with(&format!("[{}, {}]", tuned("F32"), tuned("Bf16"))).unwrap();
    let labels: Vec<String> = exp.methods.iter().map(|m| m.label()).collect();
    assert!(!labels[0].contains("bf16") && labels[1].ends_with(", bf16 autocast)"), "{labels:?}");
    assert_eq!(labels[0], labels[1].replace(", bf16 autocast", ""));
    // A row on a sample of the training questions beside a trained row whose control reads them all (a
    // learning curve's point): two rows, the sample named.
    let sampled = "Dense((training: (schedule: (epochs: 1), train_queries: Some(100))))";
    let exp = with(&format!("[SproutRag((attention: Sllm, training: Some((schedule: (epochs: 1))))), {sampled}]")).unwrap();
    assert!(exp.methods[1].label().contains(", a sample of 100 training questions"), "{}", exp.methods[1].label());
}
