//! The unit tests of `arbor_experiments::methods::controls` (src/methods/controls.rs).

use arbor_experiments::experiment::Experiment;
use arbor_experiments::methods::Method;
use arbor_experiments::methods::Trains;
use arbor_experiments::methods::controls::*;
use std::path::Path;

fn methods(list: &str) -> Vec<Method> {
    let text = format!(r#"Experiment(name: "t", data: (format: Jsonl, path: "x"), methods: [{list}])"#);
    Experiment::parse(&text, Path::new("t.ron")).unwrap().methods
}

#[test]
fn trained_methods_get_their_controls_once_and_untrained_ones_none() {
    let sllm = |search: &str| format!("SproutRag((attention: Sllm, search: {search}, training: Some((schedule: (epochs: 2), lambda: 0.3))))");
    let list = methods(&format!("Flat, Bm25, {}, {}", sllm("Collapsed"), sllm("LeavesOnly")));
    let controls = matched(&list, &ControlKind::all());
    assert_eq!(controls.len(), 5, "dense, two exemplars, two fused");
    assert!(controls.iter().all(|(_, of)| of == &[2, 3]), "both search variants share one training: one set of controls");
    let Method::Dense(dense) = &controls[0].0 else { panic!("the dense control first") };
    assert_eq!((dense.training.schedule.epochs, dense.training.lambda), (2, 0.1), "epochs matched, the method's own terms not read");
    assert!(matched(&methods("Flat, Bm25"), &ControlKind::all()).is_empty());
    assert_eq!(matched(&list, &[ControlKind::Exemplars]).len(), 2);
    // A control already in the list is listed with the rows it controls; it does not control itself.
    let mut with_dense = list.clone();
    with_dense.push(controls[0].0.clone());
    let again = matched(&with_dense, &ControlKind::all());
    assert_eq!(again.len(), 5);
    assert_eq!(again[0], (controls[0].0.clone(), vec![2, 3]), "the listed dense row controls both SproutRAG rows, not itself");
    assert!(again[1..].iter().all(|(_, of)| of == &[2, 3, 4]), "the exemplars control the dense row too");
}

/// SproutRAG's joint training and its dense control: over the same training documents, both configs
/// give the same steps in every epoch (three documents' batches a step, issue 62), the same schedule over them (epochs, warmup, floor of steps),
/// and the same optimiser settings and window rule; only the method's own terms differ.
#[test]
fn sproutrags_control_takes_the_methods_batches_schedule_and_optimiser() {
    use arbor_datasets::{DocSpan, Span};
    use arbor_trainers::data::{TrainDoc, TrainQuery, epoch_steps};
    let query = |positive: usize| TrainQuery { text: String::new(), pooled: vec![], ids: vec![], positive, gold: vec![] };
    let docs: Vec<TrainDoc> = (0..5)
        .map(|d| TrainDoc {
            units: (0..4).map(|u| DocSpan { doc: d, span: Span::new(u, u + 1) }).collect(),
            pooled: vec![],
            ids: vec![],
            pairs: vec![],
            tokens: vec![],
            queries: (0..3 + d).map(|q| query(q % 4)).collect(),
        })
        .collect();
    let row = "SproutRag((attention: Sllm, training: Some((schedule: (epochs: 3, seed: 11, warmup_fraction: 0.2, weight_decay: 0.02, \
               grad_clip: 0.5), batch_size: 2, docs_per_step: 3, doc_loss: 0.5, freeze_encoder: false, lr_encoder: 3e-5, lr_new: 2e-3, tau: 0.07, step_tokens: Some(512), \
               frozen_layers: Some(2), hard_negatives: false, train_queries: Some(9), lambda: 0.3, \
               negatives: Mined((mine: Encoder, per_query: 2, skip: 1, top: 20, margin: Some(0.9))), validation: Corpus))))";
    let list = methods(&format!("Flat, {row}"));
    let Trains::Queries(method) = list[1].spec().trains() else { panic!("trained on queries") };
    let Method::Dense(dense) = &matched(&list, &[ControlKind::Dense])[0].0 else { panic!("a dense control") };
    let control = &dense.training;
    for epoch in 0..3 {
        let steps = |t: &arbor_trainers::config::TrainConfig| epoch_steps(&docs, t.batch_size, t.docs_per_step, t.schedule.seed, epoch);
        assert_eq!(steps(control), steps(&method), "epoch {epoch}");
        assert!(steps(&method).iter().any(|step| step.len() > 1), "steps of several documents");
    }
    assert_eq!(control.schedule_over(7), method.schedule_over(7), "epochs, warmup, decay, clipping");
    let optimiser = |t: &arbor_trainers::config::TrainConfig| (t.lr_encoder, t.lr_new, t.tau, t.freeze_encoder, t.frozen_layers);
    assert_eq!(optimiser(control), optimiser(&method));
    let data =
        |t: &arbor_trainers::config::TrainConfig| (t.split.clone(), t.train_queries, t.step_tokens, t.hard_negatives, t.min_steps, t.validation);
    assert_eq!(data(control), data(&method));
    // Negatives mined from the other documents: the same setting, so the same mined lists (mining
    // reads only the documents and the setting) and, batch by batch, the same draws.
    assert_eq!(control.negatives, method.negatives);
    assert!(matches!(method.negatives, arbor_trainers::negatives::Negatives::Mined(_)), "{:?}", method.negatives);
    let label = list[1].label();
    assert!(label.contains("2 Encoder negatives a query of ranks 1..20, margin 0.9 mined from the other documents"), "{label}");
    let control_label = Method::Dense(dense.clone()).label();
    assert!(control_label.contains("mined from the other documents"), "{control_label}");
    for label in [label, control_label] {
        assert!(label.contains("the epoch chosen over every validation document"), "{label}");
    }
    assert_eq!((control.lambda, method.lambda), (0.1, 0.3), "the method's own terms are not the control's");
    assert_eq!((control.doc_loss, method.doc_loss), (0.0, 0.5));
    assert!(Method::Dense(dense.clone()).label().contains("3 documents a step"));
}

/// SmartChunk's planner: its control trains at the planner's rate, queries per step, seed and epochs,
/// with the planner's floor of steps, per phase of its strategy, in batches across documents as the
/// planner's are.
#[test]
fn the_planners_control_reads_the_planners_own_training() {
    let planner = |strategy: &str| {
        methods(&format!(
            "SmartChunk((plan: Planner((training: (strategy: {strategy}, schedule: (epochs: 4, seed: 3), min_steps: 50, batch_size: 8, lr: 2e-3)))))"
        ))
    };
    for (strategy, phases) in [("Stitch", 1), ("SftRl", 2)] {
        let list = planner(strategy);
        let Method::Dense(dense) = &matched(&list, &[ControlKind::Dense])[0].0 else { panic!("a dense control") };
        let t = &dense.training;
        assert_eq!((t.lr_new, t.batch_size, t.schedule.seed, t.freeze_encoder), (2e-3, 8, 3, true), "{strategy}");
        assert_eq!((t.schedule.epochs, t.min_steps), (4 * phases, Some(50 * phases)), "{strategy}");
        assert!(t.negatives.corpus().is_some(), "the planner's batches mix documents, so its control's do: {:?}", t.negatives);
        // Its length is the planner's own steps, known once it has trained (`steps_of`: the run
        // records them, and the control runs exactly those).
        assert_eq!(dense.steps_of.as_deref(), Some(list[0].label().as_str()));
        let label = Method::Dense(dense.clone()).label();
        assert!(label.contains("as many steps as \"SmartChunk") && label.contains("across documents"), "{label}");
    }
}

#[test]
fn a_reranker_trained_on_a_sample_is_controlled_on_that_sample() {
    let list = methods("Flat, Rerank((over: Flat, training: (train_queries: Some(24), schedule: (epochs: 1, seed: 7), lr_encoder: 3e-5)))");
    let controls = matched(&list, &[ControlKind::Dense]);
    let Method::Dense(dense) = &controls[0].0 else { panic!("a dense control") };
    let t = &dense.training;
    assert_eq!((t.train_queries, t.schedule.seed, t.schedule.epochs, t.freeze_encoder, t.lr_encoder), (Some(24), 7, 1, false, 3e-5));
    // The control trains on the reranker's own training: its groups, batches, rate and blocks.
    let Method::Rerank(rerank) = &list[1] else { panic!("the reranker") };
    assert_eq!(dense.reranker.as_ref(), Some(&rerank.training), "the reranker's own training");
    // The exemplar controls look up the same sample.
    let exemplars = matched(&list, &[ControlKind::Exemplars]);
    assert!(exemplars.iter().all(|(m, _)| matches!(m, Method::Exemplars(e) if (e.train_queries, e.seed) == (Some(24), 7))));
    let text = r#"Experiment(name: "t", data: (format: Jsonl, path: "x"), methods: [Rerank((over: Flat, control: (step_tokens: Some(512))))])"#;
    let err = format!("{:#}", Experiment::parse(text, Path::new("t.ron")).unwrap_err());
    assert!(err.contains("control is gone"), "{err}");
    let text = r#"Experiment(name: "t", data: (format: Jsonl, path: "x"), methods: [Rerank((over: Flat, training: (max_queries: Some(24))))])"#;
    let err = format!("{:#}", Experiment::parse(text, Path::new("t.ron")).unwrap_err());
    assert!(err.contains("train_queries"), "{err}");
}
