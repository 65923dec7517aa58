//! The encoder families by `model_type` (issue 85) against PyTorch: for RoBERTa, XLM-RoBERTa and MPNet, a
//! small randomly initialised model of the family saved as a sentence-transformers folder
//! (tests/fixtures/tiny-{roberta,xlm-roberta,mpnet}, made by scripts/make_family_fixtures.py), with
//! sentence-transformers' token ids and vectors and PyTorch's loss and gradients for it. arbor reads each
//! folder by its config.json's `model_type`, tokenizes alike, and every path that computes a vector (the
//! CPU kernel, Burn's module, the fine-tuning step's hand-written passes) gives PyTorch's; the hand-written
//! gradients equal PyTorch's within 1e-4 of their norm, MPNet's relative position bias's included; an
//! export loads back bit for bit; a family arbor does not read is refused by name before any weight is read.

use std::path::PathBuf;

use arbor_models::bert::{Bert, Family, autodiff};
use arbor_models::pooling::{Pooling, Role};
use arbor_models::{DefaultBackend, EncoderConfig, ModelSource, SentenceEncoder};
use burn::backend::Autodiff;
use burn::module::Param;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};
use serde_json::Value;

use super::pooling::{check, rows};

type A = Autodiff<DefaultBackend>;

const FAMILIES: [(&str, Family); 3] = [("roberta", Family::Roberta), ("xlm-roberta", Family::XlmRoberta), ("mpnet", Family::Mpnet)];

fn folder(family: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/tiny-{family}"))
}

fn expected(family: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(folder(family).join("expected.json")).unwrap()).unwrap()
}

fn config(family: &str) -> EncoderConfig {
    EncoderConfig { model: ModelSource::Dir(folder(family)), ..EncoderConfig::default() }
}

fn sentences(want: &Value) -> Vec<String> {
    serde_json::from_value(want["sentences"].clone()).unwrap()
}

#[test]
fn each_family_tokenizes_and_embeds_as_sentence_transformers() {
    for (name, family) in FAMILIES {
        let want = expected(name);
        let texts = sentences(&want);
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encoder = SentenceEncoder::<DefaultBackend>::load(&config(name), &Default::default()).unwrap();
        assert_eq!(encoder.config.family(), Ok(family));
        let ids: Vec<Vec<u32>> = serde_json::from_value(want["ids"].clone()).unwrap();
        assert_eq!(encoder.tokenize(&texts), ids, "{name}: token ids");
        // Cut as sentence-transformers cuts: the head, then the closing token, at the family's token limit
        // (64: the position table's 66 rows past the offset of 2).
        let long = encoder.tokenize(&[texts[2].repeat(4).as_str()]).remove(0);
        assert_eq!((long.len(), long.last()), (64, ids[2].last()), "{name}: a long text's ids");
        check(&encoder, Role::Passage, &texts, &rows(&want["vectors"]), name);
    }
}

/// A parameter's gradient in PyTorch's layout: Burn's linear weights `[in, out]` transposed to `[out, in]`.
fn grad_of<const D: usize>(p: &Param<Tensor<A, D>>, grads: &<A as AutodiffBackend>::Gradients, transpose: bool) -> Vec<f32> {
    let g = p.val().grad(grads).expect("the parameter has a gradient");
    let dims = g.dims();
    let values = g.into_data().to_vec::<f32>().unwrap();
    match (transpose, D) {
        (true, 2) => (0..dims[1]).flat_map(|o| (0..dims[0]).map(move |i| (i, o))).map(|(i, o)| values[i * dims[1] + o]).collect(),
        _ => values,
    }
}

/// The gradient of the checkpoint's tensor `name` (of those scripts/make_family_fixtures.py records).
fn named_grad(bert: &Bert<A>, name: &str, grads: &<A as AutodiffBackend>::Gradients) -> Vec<f32> {
    match name {
        "embeddings.LayerNorm.weight" => grad_of(&bert.embeddings.layer_norm.gamma, grads, false),
        "embeddings.token_type_embeddings.weight" => grad_of(&bert.embeddings.token_type_embeddings.as_ref().unwrap().weight, grads, false),
        "encoder.relative_attention_bias.weight" => grad_of(&bert.relative_attention_bias.as_ref().unwrap().weight, grads, false),
        "encoder.layer.0.attention.self.query.weight" | "encoder.layer.0.attention.attn.q.weight" => {
            grad_of(&bert.layers[0].query.weight, grads, true)
        }
        "encoder.layer.1.output.dense.weight" => grad_of(&bert.layers[1].output.weight, grads, true),
        other => panic!("no parameter for {other}"),
    }
}

fn relative_error(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    let norm = |v: &mut dyn Iterator<Item = f32>| v.map(|x| x * x).sum::<f32>().sqrt();
    norm(&mut got.iter().zip(want).map(|(a, b)| a - b)) / norm(&mut want.iter().copied()).max(1e-12)
}

/// The loss `Σ pooled ⊙ R` of the fixture's sentences through `pool` and its gradients, beside PyTorch's.
fn loss_and_grads(name: &str, pool: &dyn Fn(&Bert<A>, &[&[u32]]) -> Tensor<A, 2>) -> Vec<(String, f32)> {
    let want = expected(name);
    let encoder = SentenceEncoder::<A>::load(&config(name), &Default::default()).unwrap();
    let texts = sentences(&want);
    let ids = encoder.tokenize(&texts.iter().map(String::as_str).collect::<Vec<_>>());
    let rows: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let pooled = pool(&encoder.bert, &rows);
    let [n, h] = pooled.dims();
    let r: Vec<f32> = (0..n * h).map(|k| ((k * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
    let loss = (pooled * Tensor::<A, 2>::from_data(TensorData::new(r, [n, h]), &Default::default())).sum();
    let value = loss.clone().into_scalar();
    let torch = want["loss"].as_f64().unwrap() as f32;
    assert!((value - torch).abs() <= 1e-5 * torch.abs().max(1.0), "{name}: loss {value} against PyTorch's {torch}");
    let grads = loss.backward();
    let mut errors = vec![("loss".to_owned(), (value - torch).abs())];
    for (param, torch) in want["grads"].as_object().unwrap() {
        let torch: Vec<f32> = torch.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        errors.push((param.clone(), relative_error(&named_grad(&encoder.bert, param, &grads), &torch)));
    }
    errors
}

#[test]
fn the_hand_written_step_gives_pytorchs_loss_and_gradients_for_every_family() {
    for (name, _) in FAMILIES {
        let hand = |bert: &Bert<A>, rows: &[&[u32]]| autodiff::pool_ids(bert, None, rows, eps(name), Pooling::Mean).unwrap();
        for (param, error) in loss_and_grads(name, &hand) {
            assert!(error <= 1e-4, "{name}: {param}'s gradient off PyTorch's by {error:.2e} of its norm");
        }
    }
}

/// Burn's own autodiff through the module (the GPU builds' path) agrees too, to what its GELU's backward
/// (the tanh approximation's derivative, where PyTorch and the hand-written pass take the exact one) allows.
#[test]
fn burns_autodiff_through_the_module_gives_pytorchs_gradients_for_every_family() {
    for (name, _) in FAMILIES {
        let burn = |bert: &Bert<A>, rows: &[&[u32]]| arbor_models::encoder::pool_ids(bert, rows, &Default::default(), Pooling::Mean);
        for (param, error) in loss_and_grads(name, &burn) {
            assert!(error <= 3e-3, "{name}: {param}'s gradient off PyTorch's by {error:.2e} of its norm");
        }
    }
}

fn eps(name: &str) -> f64 {
    let config: Value = serde_json::from_str(&std::fs::read_to_string(folder(name).join("config.json")).unwrap()).unwrap();
    config["layer_norm_eps"].as_f64().unwrap()
}

#[test]
fn mpnets_buckets_are_pytorchs_for_every_distance() {
    let want: Vec<usize> = serde_json::from_value(expected("mpnet")["buckets"].clone()).unwrap();
    let got: Vec<usize> = (-600..=600).map(|d| arbor_models::bert::families::mpnet::bucket(d, 32)).collect();
    assert_eq!(got, want);
}

/// Every float parameter's values, in the module's order.
struct Values(Vec<Vec<f32>>);

impl burn::module::ModuleVisitor<DefaultBackend> for Values {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<DefaultBackend, D>>) {
        self.0.push(param.val().into_data().to_vec::<f32>().unwrap());
    }
}

#[test]
fn each_familys_export_loads_back_bit_for_bit() {
    use burn::module::Module;
    for (name, family) in FAMILIES {
        let encoder = SentenceEncoder::<DefaultBackend>::load(&config(name), &Default::default()).unwrap();
        let base = std::fs::read(folder(name).join("model.safetensors")).unwrap();
        let bytes = arbor_models::save::bert_safetensors(&encoder.bert, family, Some(&base)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        std::fs::write(&path, bytes).unwrap();
        let back = arbor_models::bert::load_bert::<DefaultBackend>(&encoder.config, &path, &Default::default()).unwrap();
        let flat = |b: &Bert<DefaultBackend>| {
            let mut values = Values(Vec::new());
            b.visit(&mut values);
            values.0
        };
        assert_eq!(flat(&back), flat(&encoder.bert), "{name}");
        // Word, position, token-type tables (MPNet: the relative bias instead), the norm's 2, 16 a block.
        assert_eq!(flat(&back).len(), 5 + 2 * 16, "{name}");
    }
}

#[test]
fn a_family_arbor_does_not_read_is_refused_by_name_before_any_weight_is_read() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["tokenizer.json", "config.json"] {
        std::fs::copy(folder("mpnet").join(file), dir.path().join(file)).unwrap();
    }
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("config.json")).unwrap()).unwrap();
    config["model_type"] = "gpt2".into();
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    // Not weights at all: a refusal that read them would say so instead.
    std::fs::write(dir.path().join("model.safetensors"), b"not a safetensors file").unwrap();
    let config = EncoderConfig { model: ModelSource::Dir(dir.path().to_owned()), ..EncoderConfig::default() };
    let err = SentenceEncoder::<DefaultBackend>::load(&config, &Default::default()).err().expect("refused").to_string();
    assert!(err.contains("config.json") && err.contains("\"gpt2\"") && err.contains("bert, roberta, xlm-roberta, mpnet"), "{err}");
}
