//! Issue 62 on the committed fixture: SproutRAG's joint step over several documents with the document
//! term, its matched control reading the same steps, and the document level above the trees, every
//! article of the test split ranked.

use std::path::Path;

use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::run;

/// Two documents a step with the document term train end to end (the term in the log, the setting in
/// both labels); the same model under a document level keeping one article hands on that article's units
/// first, so how often its beam kept a gold article is the row's document hit@1, and only that row
/// reports the figure; the first row, named the comparator (`compare_with`), meets the second.
#[test]
fn a_step_over_documents_and_a_document_level_run_end_to_end() {
    std::env::set_current_dir(crate::common::workspace()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let corpus = crate::finetune::short_articles(tmp.path(), 3000);
    let trained = |documents: &str| {
        format!(
            "SproutRag((attention: Sllm, search: LeavesOnly, {documents}
                model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None),
                training: Some((batch_size: 4, docs_per_step: 2, doc_loss: 1.0, lr_new: 1e-3, schedule: (epochs: 2, checkpoint_every: 100)))))"
        )
    };
    let text = format!(
        r#"Experiment(name: "hierarchy", data: (format: Jsonl, path: {:?}, split: Some("test")), units: (max_sentences: 2),
            retrieval: (scope: Corpus, top_k: 10), methods: [{}, {}], controls: [Dense], compare_with: [0])"#,
        corpus.display().to_string(),
        trained(""),
        trained("documents: Some((beam_docs: 1)),")
    );
    let (dir, report) = run(&Experiment::parse(&text, Path::new("hierarchy.ron")).unwrap(), &tmp.path().join("runs"), false, None).unwrap();
    let names: Vec<&str> = report.methods.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names.len(), 3, "two rows and their one control: {names:?}");
    assert!(names.iter().all(|n| n.contains("2 documents a step")), "{names:?}");
    assert!(names[0].contains("document term x1") && !names[2].contains("document term"), "{names:?}");
    assert!(names[1].contains("document level: top 1 by LeafMean"), "{}", names[1]);
    let named: Vec<(&str, &str)> = report
        .comparisons
        .iter()
        .filter(|c| c.why == arbor_eval::scoring::report::Against::Comparator)
        .map(|c| (c.row.as_str(), c.against.as_str()))
        .collect();
    assert_eq!(named, [(names[1], names[0])], "the named comparator meets the other trained row");
    let level = &report.methods[1];
    assert_eq!(report.methods[0].documents_kept, None);
    let kept = level.documents_kept.expect("the document level's figure");
    assert!((kept - level.metrics.doc_hit[0]).abs() < 1e-9, "kept {kept} against doc hit@1 {}", level.metrics.doc_hit[0]);
    let ranked = crate::finetune::rankings(&dir);
    let per_query = &ranked[names[1]];
    assert!(!per_query.is_empty());
    for (query, items) in per_query {
        let first = &items[0].0;
        let run = items.iter().take_while(|i| &i.0 == first).count();
        assert!(items[run..].iter().all(|i| &i.0 != first), "query {query}: the kept article's units come first, together");
        assert!(run >= 2, "query {query}: one article's units, then the next's");
    }
    let models: Vec<arbor_experiments::trained::TrainedModel> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    let model = models.iter().find(|m| m.method == names[0]).expect("the trained model's record");
    let log = std::fs::read_to_string(model.dir.join("log.jsonl")).unwrap();
    assert!(log.contains("loss/doc_weighted"), "the document term is in the log");
}

/// The same document level above RAPTOR and the heading hierarchy (untrained rows, every article of the
/// test split ranked): with one article kept, by its leaves' mean, its top layer or its summary's vector,
/// each row hands on that article's items first, together, and its figure is its document hit@1; the
/// rows without a level report none. A level a row cannot make is refused when the file is read.
#[test]
fn the_document_level_stands_above_raptor_and_the_heading_hierarchy() {
    std::env::set_current_dir(crate::common::workspace()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let corpus = crate::finetune::short_articles(tmp.path(), 3000);
    let experiment = |methods: &str| {
        format!(
            r#"Experiment(name: "levels", data: (format: Jsonl, path: {:?}, split: Some("test")), units: (max_sentences: 2),
                retrieval: (scope: Corpus, top_k: 10), methods: [{methods}])"#,
            corpus.display().to_string()
        )
    };
    let methods = "Raptor(()), Raptor((documents: Some((beam_docs: 1, vector: Root)))), Raptor((documents: Some((beam_docs: 1, vector: Summary)))), \
                   Hierarchy(()), Hierarchy((documents: Some((beam_docs: 1, vector: LeafMean))))";
    let (dir, report) =
        run(&Experiment::parse(&experiment(methods), Path::new("levels.ron")).unwrap(), &tmp.path().join("runs"), false, None).unwrap();
    let ranked = crate::finetune::rankings(&dir);
    for (i, row) in report.methods.iter().enumerate() {
        let leveled = row.name.contains("document level: top 1");
        assert_eq!(leveled, [1, 2, 4].contains(&i), "{}", row.name);
        if !leveled {
            assert_eq!(row.documents_kept, None, "{}", row.name);
            continue;
        }
        let kept = row.documents_kept.expect("the document level's figure");
        assert!((kept - row.metrics.doc_hit[0]).abs() < 1e-9, "{}: kept {kept} against doc hit@1 {}", row.name, row.metrics.doc_hit[0]);
        for (query, items) in &ranked[&row.name] {
            let first = &items[0].0;
            let run = items.iter().take_while(|i| &i.0 == first).count();
            assert!(items[run..].iter().all(|i| &i.0 != first), "{}, query {query}: the kept article's items come first, together", row.name);
        }
    }
    for (method, refused) in [
        ("Hierarchy((documents: Some((vector: Root))))", "needs an embedded root"),
        ("Raptor((documents: Some((beam_docs: 0))))", "beam_docs must be at least 1"),
        (
            "SproutRag((attention: Sllm, documents: Some((vector: Summary)), training: Some((schedule: (epochs: 1)))))",
            "queries are not the frozen encoder's",
        ),
    ] {
        let err = format!("{:#}", Experiment::parse(&experiment(method), Path::new("levels.ron")).unwrap_err());
        assert!(err.contains(refused), "{method}: {err}");
    }
}
