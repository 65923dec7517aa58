//! The unit tests of `arbor_experiments::methods::sproutrag` (src/methods/sproutrag/mod.rs).

use arbor_eval::structures::linkage::Linkage;
use arbor_experiments::cache::key;
use arbor_experiments::methods::MethodSpec;
use arbor_experiments::methods::dense::DenseConfig;
use arbor_experiments::methods::sproutrag::*;

/// The linkage is an index setting (its own trees, its own cache key, named in the row) but not a
/// model setting: one trained SLLM serves every linkage, and an unset linkage writes nothing.
#[test]
fn the_linkage_keys_the_trees_names_the_row_and_leaves_the_trained_model_alone() {
    let single: SproutRagConfig = ron::from_str("(attention: TokenBlocks(window_tokens: 256))").unwrap();
    let average: SproutRagConfig = ron::from_str("(attention: TokenBlocks(window_tokens: 256), linkage: Average)").unwrap();
    assert_eq!((single.linkage, average.linkage), (Linkage::Single, Linkage::Average));
    assert_ne!(single.index_key(), average.index_key());
    assert_eq!(key(&single.model_settings()), key(&average.model_settings()));
    assert!(average.label().contains("Average linkage") && !single.label().contains("linkage"), "{}", average.label());
    assert!(!ron::to_string(&single).unwrap().contains("linkage"));
}

/// Over SAC's inputs (`summary`) its matched control is the dense fine-tune over the same summaries
/// (named so); the summary keys index and model, leaves in context (read in the document's own windows,
/// with no summary) are refused, and a row without one writes nothing, so earlier keys stand.
#[test]
fn a_summary_reaches_the_control_the_keys_and_the_row() {
    let plain: SproutRagConfig = ron::from_str("(attention: Sllm, training: Some((freeze_encoder: false, negatives: Mined(()))))").unwrap();
    let headed: SproutRagConfig =
        ron::from_str("(attention: Sllm, summary: Some((summary_tokens: 32)), training: Some((freeze_encoder: false, negatives: Mined(()))))")
            .unwrap();
    headed.check().unwrap();
    let control = headed.dense_control().unwrap();
    assert_eq!(control.summary, headed.summary);
    assert_eq!(DenseConfig { summary: None, ..control.clone() }, plain.dense_control().unwrap());
    assert!(control.label().contains("units read after a 32-token document summary"), "{}", control.label());
    assert!(headed.label().contains("units read after a 32-token document summary") && !plain.label().contains("summary"));
    assert_ne!(key(&headed.model_settings()), key(&plain.model_settings()));
    assert!(!ron::to_string(&plain).unwrap().contains("summary"));
    let in_context: SproutRagConfig =
        ron::from_str("(attention: TokenBlocks(window_tokens: 256, leaf_vectors: InContext), summary: Some(()))").unwrap();
    assert!(in_context.check().unwrap_err().to_string().contains("leaf_vectors: InContext"));
    let zero: SproutRagConfig = ron::from_str("(summary: Some((summary_tokens: 0)))").unwrap();
    assert!(zero.check().unwrap_err().to_string().contains("summary_tokens"));
}

/// The joint step takes negatives mined from the other documents (`Mined`), not batches across
/// documents (`Corpus`); token-attention trees read none: each refusal names the field.
#[test]
fn sproutrag_takes_mined_negatives_and_refuses_what_its_step_cannot_read() {
    let config = |attention: &str, negatives: &str| -> SproutRagConfig {
        ron::from_str(&format!("(attention: {attention}, training: Some((negatives: {negatives})))")).unwrap()
    };
    config("Sllm", "Mined((per_query: 2))").check().unwrap();
    for (attention, negatives) in [("Sllm", "Corpus(())"), ("TokenBlocks(window_tokens: 256)", "Mined(())")] {
        let err = config(attention, negatives).check().unwrap_err().to_string();
        assert!(err.contains("training.negatives"), "{attention}, {negatives}: {err}");
    }
}
