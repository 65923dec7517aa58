//! The unit tests of `arbor_experiments::methods::training` (src/methods/training.rs).

use arbor_datasets::{Corpus, DocSpan, Query, Span};
use arbor_experiments::methods::Method;
use arbor_experiments::methods::training::*;
use arbor_trainers::config::TrainConfig;

/// Rows that differ only in the devices their training runs on are two rows: the dense control's and
/// SproutRAG's names say the devices, and nothing when none are named.
#[test]
fn a_row_trained_on_devices_says_so() {
    let row = |text: &str| -> String { ron::from_str::<Method>(text).unwrap().label() };
    for method in [
        "Dense((training: (schedule: (epochs: 2{}), freeze_encoder: {})))",
        "SproutRag((attention: Sllm, training: Some((schedule: (epochs: 2{}), freeze_encoder: {}))))",
    ] {
        for frozen in ["true", "false"] {
            let with = |devices: &str| row(&method.replacen("{}", devices, 1).replacen("{}", frozen, 1));
            let (plain, two) = (with(""), with(", devices: Some([0, 0])"));
            assert!(!plain.contains("devices"), "{plain}");
            assert!(two.contains("Learner on devices [0, 0]") && two != plain, "{two}");
            let ddp = with(", devices: Some([0, 1]), data_parallel: Ddp");
            assert!(ddp.contains("Learner, DDP on devices [0, 1]"), "{ddp}");
        }
    }
}

#[test]
fn the_positive_unit_holds_most_gold_text() {
    let ds = |s, e| DocSpan { doc: 0, span: Span::new(s, e) };
    let units = [ds(0, 10), ds(11, 30), ds(31, 40)];
    assert_eq!(positive_unit(&units, &[ds(8, 25)]), Some(1));
    assert_eq!(positive_unit(&units, &[ds(41, 50)]), None);
}

/// Samples are the split's queries when large enough, have the size asked, are nested by seed, and
/// keep each document's queries in file order.
#[test]
fn training_samples_are_nested_and_drawn_by_the_seed() {
    use arbor_datasets::{Document, Evidence};
    let docs =
        (0..4).map(|d| Document { id: format!("d{d}"), title: String::new(), text: "x".repeat(50), sections: vec![], split: Some("train".into()) });
    let query = |i: usize| Query {
        id: format!("q{i}"),
        text: format!("question {i}"),
        doc_ids: vec![format!("d{}", i % 4)],
        evidence: vec![Evidence { doc_id: format!("d{}", i % 4), start: 0, end: 5 }],
        answers: vec![],
        split: Some(if i < 40 { "train" } else { "test" }.into()),
    };
    let corpus = Corpus::new(docs.collect(), (0..50).map(query).collect(), std::path::Path::new("t")).unwrap();
    let ids = |n: Option<usize>, seed: u64| -> Vec<String> {
        let mut t = TrainConfig { train_queries: n, ..TrainConfig::default() };
        t.schedule.seed = seed;
        let by_doc = training_queries(&corpus, &t);
        assert!(by_doc.values().all(|qs| qs.windows(2).all(|w| w[0].id[1..].parse::<u32>().unwrap() < w[1].id[1..].parse::<u32>().unwrap())));
        by_doc.values().flatten().map(|q| q.id.clone()).collect()
    };
    let all = ids(None, 0);
    assert_eq!(all.len(), 40, "the train split only");
    assert_eq!(ids(Some(40), 0), all);
    assert_eq!(ids(Some(1000), 0), all);
    let (small, large) = (ids(Some(10), 0), ids(Some(25), 0));
    assert_eq!((small.len(), large.len()), (10, 25));
    assert!(small.iter().all(|q| large.contains(q)), "nested");
    assert_ne!(ids(Some(10), 1), small, "another seed draws another sample");
    // The gold a sampled training reads (merge pairs, head-weight targets) is its sample's and nothing
    // else: the same questions and gold its control reads.
    let mut t = TrainConfig { train_queries: Some(10), ..TrainConfig::default() };
    t.schedule.seed = 0;
    let sampled = training_queries(&corpus, &t);
    let evidence = evidence_of(&corpus, &sampled);
    let read: usize = evidence.values().map(Vec::len).sum();
    assert_eq!(read, 10, "one gold snippet per sampled query, none from the other 30");
    for (d, qs) in &sampled {
        assert_eq!(evidence[d].len(), qs.len());
    }
}
