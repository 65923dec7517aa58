//! The unit tests of `arbor_experiments::run` (src/run.rs).

use arbor_datasets::{Corpus, Document, Evidence, Query};
use arbor_experiments::run::*;
use std::path::Path;

fn doc(id: &str, split: Option<&str>) -> Document {
    Document { id: id.into(), title: String::new(), text: "Some text.".into(), sections: vec![], split: split.map(String::from) }
}

fn query(id: &str, docs: &[&str], split: Option<&str>) -> Query {
    Query {
        id: id.into(),
        text: "q".into(),
        doc_ids: docs.iter().map(|d| d.to_string()).collect(),
        evidence: vec![Evidence { doc_id: docs[0].into(), start: 0, end: 4 }],
        answers: vec![],
        split: split.map(String::from),
    }
}

fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<&str> {
    items.iter().map(id).collect()
}

#[test]
fn collections_keep_their_documents_and_the_queries_asked_against_them() {
    let corpus = || {
        let docs = vec![doc("nda/a", None), doc("maud/b", None), doc("nda/c", None), doc("plain", None)];
        let queries =
            vec![query("1", &["nda/a"], None), query("2", &["maud/b"], None), query("3", &["nda/c", "maud/b"], None), query("4", &["nda/c"], None)];
        Corpus::new(docs, queries, Path::new("t")).unwrap()
    };
    let kept = keep_collections(corpus(), &["nda".into()], Path::new("t")).unwrap();
    assert_eq!(ids(&kept.documents, |d| &d.id), ["nda/a", "nda/c"]);
    assert_eq!(ids(&kept.queries, |q| &q.id), ["1", "4"]);
    let err = keep_collections(corpus(), &["cuad".into()], Path::new("t")).unwrap_err().to_string();
    assert!(err.contains("keeps no document"), "{err}");
}

#[test]
fn training_corpora_lend_their_train_split_alone_ahead_of_the_own_documents() {
    let own = Corpus::new(
        vec![doc("x", Some("train")), doc("y", Some("test"))],
        vec![query("q1", &["x"], Some("train")), query("q2", &["y"], Some("test"))],
        Path::new("own"),
    )
    .unwrap();
    // A lent corpus has ids of its own that clash with ours ("x"), a test document and query, a
    // query across a train and a test document, and a query whose split is left to its document's.
    let lent = Corpus::new(
        vec![doc("x", Some("train")), doc("t", Some("test")), doc("u", Some("train"))],
        vec![
            query("q1", &["x"], Some("train")),
            query("q3", &["t"], Some("test")),
            query("q4", &["u", "t"], Some("train")),
            query("q5", &["u"], None),
        ],
        Path::new("lent"),
    )
    .unwrap();
    let (merged, own_from) = with_training_corpora(own, vec![("squad".into(), lent)], Path::new("own")).unwrap();
    assert_eq!(own_from, 2);
    assert_eq!(ids(&merged.documents, |d| &d.id), ["squad:x", "squad:u", "x", "y"]);
    assert_eq!(ids(&merged.queries, |q| &q.id), ["squad:q1", "squad:q5", "q1", "q2"]);
    assert_eq!(merged.queries[1].split.as_deref(), Some("train"));
    assert_eq!(merged.gold(&merged.queries[1])[0].doc, 1, "evidence follows its renamed document");
    // The lent queries train (split "train") but are not the corpus's own.
    let train: Vec<&str> = merged.eval_queries(Some("train")).iter().map(|q| q.id.as_str()).collect();
    assert_eq!(train, ["squad:q1", "squad:q5", "q1"]);
    let none = Corpus::new(vec![doc("t", Some("test"))], vec![], Path::new("lent")).unwrap();
    let only_own = Corpus::new(vec![doc("x", None)], vec![], Path::new("own")).unwrap();
    let err = with_training_corpora(only_own, vec![("covid".into(), none)], Path::new("own")).unwrap_err().to_string();
    assert!(err.contains("covid has no document of split \"train\""), "{err}");
}

/// The default CPU build computes in float32 only: `train` of a file with a bf16 row refuses before any row
/// trains or any folder is made, naming the row, the build and the builds that can (burn-flex's on a CPU);
/// the float32 rows of the same file pass.
#[test]
#[cfg(not(any(feature = "cuda", feature = "wgpu", feature = "flex")))]
fn a_row_this_build_cannot_train_is_refused_before_anything_trains() {
    let tuned = |precision: &str| format!("Dense((training: (schedule: (epochs: 1), freeze_encoder: false, precision: {precision})))");
    let file = |methods: String| {
        let text = format!(r#"Experiment(name: "bf16", data: (format: Jsonl, path: "experiments/fixtures/squad-mini"), methods: [{methods}])"#);
        arbor_experiments::experiment::Experiment::parse(&text, Path::new("bf16.ron")).unwrap()
    };
    let out = tempfile::tempdir().unwrap();
    let err = run(&file(format!("Flat, {}, {}", tuned("F32"), tuned("Bf16"))), out.path(), false, None).unwrap_err().to_string();
    assert!(
        err.contains("bf16 autocast")
            && err.contains("training.precision: Bf16")
            && err.contains(arbor_models::backend::NAME)
            && err.contains("--features flex"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "no run folder");
    trainable_here(&file(format!("Flat, {}", tuned("F32")))).unwrap();
}

/// A build without `--features ddp` runs no DDP: `train` of a file with a row whose schedule asks for it
/// (the dense control's training, or a schedule nested in a SmartChunk planner's settings) refuses before any
/// row trains, naming the row and the feature; the same rows on one device under `MultiDevice` pass.
#[test]
#[cfg(not(feature = "ddp"))]
fn a_ddp_row_is_refused_before_anything_trains_on_a_build_without_ddp() {
    let file = |methods: &str| {
        let text = format!(r#"Experiment(name: "ddp", data: (format: Jsonl, path: "experiments/fixtures/squad-mini"), methods: [Flat, {methods}])"#);
        arbor_experiments::experiment::Experiment::parse(&text, Path::new("ddp.ron")).unwrap()
    };
    let dense: fn(&str) -> String =
        |parallel| format!("Dense((training: (schedule: (epochs: 1, devices: Some([0]){parallel}), freeze_encoder: false)))");
    let planner: fn(&str) -> String =
        |parallel| format!("SmartChunk((plan: Planner((training: (strategy: Sft, schedule: (epochs: 1, devices: Some([0]){parallel}))))))");
    let out = tempfile::tempdir().unwrap();
    for (row, named) in [(dense, "Learner, DDP on devices [0]"), (planner, "SmartChunk")] {
        let err = run(&file(&row(", data_parallel: Ddp")), out.path(), false, None).unwrap_err().to_string();
        assert!(err.contains(named) && err.contains("--features ddp") && err.contains("Nothing was trained"), "{err}");
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "no run folder");
        trainable_here(&file(&row(""))).unwrap();
    }
}
