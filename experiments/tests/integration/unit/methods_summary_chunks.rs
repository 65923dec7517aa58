//! The unit tests of `arbor_experiments::methods::summary_chunks` (src/methods/summary_chunks.rs).

use arbor_experiments::methods::Method;
use arbor_experiments::methods::dense::DenseConfig;
use arbor_experiments::methods::{MethodSpec, Trains};

/// A trained SAC fine-tunes over the leaf units only, trains as its matched control does (the dense
/// fine-tune on the same settings), and says so in its row; untrained SAC trains nothing.
#[test]
fn a_trained_sac_is_its_controls_fine_tune_over_headed_units() {
    let parse = |text: &str| ron::from_str::<Method>(text).unwrap();
    let windows = parse("SummaryChunks((chunks: Windows(tokens: 128), training: Some(())))");
    let err = windows.spec().check().unwrap_err().to_string();
    assert!(err.contains("chunks: Units"), "{err}");
    let trained = parse("SummaryChunks((training: Some((schedule: (epochs: 3), freeze_encoder: false, negatives: Corpus((per_query: 0))))))");
    trained.spec().check().unwrap();
    let Trains::Queries(training) = trained.spec().trains() else { panic!("a trained SAC learns from the queries") };
    let control = trained.spec().dense_control().unwrap();
    assert_eq!(control, DenseConfig::matching(&training));
    let label = trained.label();
    assert!(label.starts_with("SAC: leaf units with a 64-token document summary, encoder fine-tuned at"), "{label}");
    assert!(label.ends_with(control.label().strip_prefix("Dense, ").unwrap()), "{label}");
    assert!(matches!(parse("SummaryChunks(())").spec().trains(), Trains::No));
    let old = parse("SummaryChunks((training: Some((holdout_docs: Some(2)))))");
    assert!(old.spec().check().unwrap_err().to_string().contains("holdout_docs"));
}

/// Issue 86: a bf16 row's matched control trains in bf16 as well (it was built in float32).
#[test]
fn the_matched_control_keeps_the_rows_precision() {
    let training = arbor_trainers::config::TrainConfig { precision: arbor_models::bert::Precision::Bf16, ..Default::default() };
    assert_eq!(DenseConfig::matching(&training).training.precision, arbor_models::bert::Precision::Bf16);
    let trained = ron::from_str::<Method>("SummaryChunks((training: Some((precision: Bf16))))").unwrap();
    let Trains::Queries(training) = trained.spec().trains() else { panic!("a trained SAC learns from the queries") };
    assert_eq!(trained.spec().dense_control().unwrap().training.precision, training.precision);
}
