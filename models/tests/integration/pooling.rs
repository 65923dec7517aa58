//! Pooling and prompts against sentence-transformers (issue 43): a small randomly initialised BERT saved
//! as a sentence-transformers folder that pools by CLS and carries query and document prompts
//! (tests/fixtures/tiny-bert-cls, made by scripts/make_pooling_fixture.py), and sentence-transformers' own
//! vectors for it: `encode_query` and `encode_document` under CLS, last-token and mean pooling, and plain
//! `encode` without a prompt. arbor reads the folder's pooling and prompts, and the experiment's
//! settings replace them; each kernel and the fine-tuning path give sentence-transformers' vectors.

use std::path::PathBuf;

use arbor_models::encoder::{Kernel, pool_ids};
use arbor_models::pooling::{Pooling, Prompts, Role};
use arbor_models::{DefaultBackend, EncoderConfig, ModelSource, SentenceEncoder, default_device};
use serde_json::Value;

fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-bert-cls")
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(folder().join("expected.json")).unwrap()).unwrap()
}

pub(crate) fn rows(v: &Value) -> Vec<Vec<f32>> {
    v.as_array().unwrap().iter().map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()).collect()
}

fn load(pooling: Option<Pooling>, prompts: Option<Prompts>) -> SentenceEncoder<DefaultBackend> {
    let config = EncoderConfig { model: ModelSource::Dir(folder()), pooling, prompts, ..EncoderConfig::default() };
    SentenceEncoder::load(&config, &default_device()).expect("the fixture loads")
}

pub(crate) fn assert_close(got: &[Vec<f32>], want: &[Vec<f32>], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let worst = g.iter().zip(w).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "{what}: sentence {i} off by {worst}");
    }
}

/// Every way arbor computes a vector: the encoder's kernel, Burn's module, and the fine-tuning path.
pub(crate) fn check(encoder: &SentenceEncoder<DefaultBackend>, role: Role, texts: &[&str], want: &[Vec<f32>], what: &str) {
    let pooling = encoder.pipeline.pooling;
    assert_close(&encoder.embed_as(encoder.kernel(), role, texts, 4, &mut |_| {}), want, &format!("{what}, kernel"));
    let burn = Kernel::Burn(encoder.bert.clone(), pooling);
    assert_close(&encoder.embed_as(&burn, role, texts, 4, &mut |_| {}), want, &format!("{what}, burn"));
    let ids = encoder.tokenize_as(role, texts);
    let pooled = pool_ids(&encoder.bert, &ids.iter().map(Vec::as_slice).collect::<Vec<_>>(), &default_device(), pooling);
    let dim = encoder.dim();
    let trained: Vec<Vec<f32>> = pooled.into_data().to_vec::<f32>().unwrap().chunks(dim).map(<[f32]>::to_vec).collect();
    assert_close(&trained, want, &format!("{what}, fine-tuning path"));
}

#[test]
fn the_folders_cls_pooling_and_prompts_give_sentence_transformers_vectors() {
    let want = expected();
    let texts: Vec<String> = serde_json::from_value(want["sentences"].clone()).unwrap();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let encoder = load(None, None);
    assert_eq!(encoder.pipeline.pooling, Pooling::Cls);
    assert_eq!((encoder.prompt(Role::Query), encoder.prompt(Role::Passage)), ("query: ", "passage: "));
    check(&encoder, Role::Query, &texts, &rows(&want["cls"]["query"]), "cls, queries");
    check(&encoder, Role::Passage, &texts, &rows(&want["cls"]["document"]), "cls, passages");
    assert_close(&encoder.embed_queries(&texts, 3, &mut |_| {}), &rows(&want["cls"]["query"]), "embed_queries");
    assert_close(&encoder.embed(&texts, 3, &mut |_| {}), &rows(&want["cls"]["document"]), "embed");
    let passage = encoder.tokenize(&["x"])[0].len();
    assert_eq!(encoder.max_content_tokens(), encoder.max_seq_length() - (passage - 1), "the passage prompt's tokens leave less room");
}

#[test]
fn the_experiments_pooling_and_prompts_replace_the_folders() {
    let want = expected();
    let texts: Vec<String> = serde_json::from_value(want["sentences"].clone()).unwrap();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let none = load(None, Some(Prompts::default()));
    check(&none, Role::Query, &texts, &rows(&want["cls"]["none"]), "cls, no prompt");
    for (pooling, name) in [(Pooling::LastToken, "lasttoken"), (Pooling::Mean, "mean")] {
        let encoder = load(Some(pooling), None);
        check(&encoder, Role::Query, &texts, &rows(&want[name]["query"]), &format!("{name}, queries"));
        check(&encoder, Role::Passage, &texts, &rows(&want[name]["document"]), &format!("{name}, passages"));
    }
    let fingerprints = [load(None, None), none, load(Some(Pooling::Mean), Some(Prompts::default()))].map(|e| e.fingerprint);
    assert!(
        fingerprints[0] != fingerprints[1] && fingerprints[1] != fingerprints[2] && fingerprints[0] != fingerprints[2],
        "each pipeline its own fingerprint"
    );
    let config = |pooling, prompts| EncoderConfig { model: ModelSource::Dir(folder()), pooling, prompts, ..EncoderConfig::default() };
    assert_eq!(
        arbor_models::encoder::fingerprint(&config(None, None)).unwrap(),
        fingerprints[0],
        "the fingerprint without loading is the loaded one's"
    );
    assert_eq!(arbor_models::encoder::fingerprint(&config(Some(Pooling::Mean), Some(Prompts::default()))).unwrap(), fingerprints[2]);
}
