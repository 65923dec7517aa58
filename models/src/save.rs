//! Writes a [`Bert`] as a Hugging Face `model.safetensors`: the inverse of [`crate::bert::load_bert`], the names
//! of its family's checkpoint ([`Family::checkpoint`]: `modeling_bert.py`'s, `modeling_mpnet.py`'s) without a
//! prefix (as sentence-transformers saves an encoder), linear weights
//! transposed back to PyTorch's `[out, in]`, every tensor float32; the base checkpoint's pooler (which
//! arbor's mean-pooled [`Bert`] never runs) copied as it was, so that transformers finds every tensor of a
//! `BertModel`. What `arbor export` writes a fine-tuned encoder with; `load_bert` of the file gives the
//! same weights bit for bit.

use std::path::Path;

use burn::module::Param;
use burn::nn::{Embedding, LayerNorm, Linear};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};

use crate::bert::{Bert, Family};
use crate::error::ModelError;

/// One named tensor: its shape and values, row-major.
struct Named {
    name: String,
    shape: Vec<usize>,
    dtype: Dtype,
    bytes: Vec<u8>,
}

fn named<B: Backend, const D: usize>(name: String, tensor: Tensor<B, D>) -> Named {
    let shape = tensor.dims().to_vec();
    let values = tensor.into_data().convert::<f32>().to_vec::<f32>().expect("converted to f32");
    Named { name, shape, dtype: Dtype::F32, bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect() }
}

fn param<B: Backend, const D: usize>(p: &Param<Tensor<B, D>>) -> Tensor<B, D> {
    p.val()
}

fn linear<B: Backend>(out: &mut Vec<Named>, name: &str, l: &Linear<B>) {
    // Burn's [in, out] to PyTorch's [out, in].
    out.push(named(format!("{name}.weight"), param(&l.weight).transpose()));
    if let Some(bias) = &l.bias {
        out.push(named(format!("{name}.bias"), param(bias)));
    }
}

fn layer_norm<B: Backend>(out: &mut Vec<Named>, name: &str, n: &LayerNorm<B>) {
    out.push(named(format!("{name}.weight"), param(&n.gamma)));
    if let Some(beta) = &n.beta {
        out.push(named(format!("{name}.bias"), param(beta)));
    }
}

fn embedding<B: Backend>(out: &mut Vec<Named>, name: &str, e: &Embedding<B>) {
    out.push(named(format!("{name}.weight"), param(&e.weight)));
}

/// Every tensor of `bert` under its name in a checkpoint of `family`.
fn tensors<B: Backend>(bert: &Bert<B>, family: Family) -> Vec<Named> {
    let mut out = Vec::new();
    let e = &bert.embeddings;
    embedding(&mut out, "embeddings.word_embeddings", &e.word_embeddings);
    embedding(&mut out, "embeddings.position_embeddings", &e.position_embeddings);
    if let Some(types) = &e.token_type_embeddings {
        embedding(&mut out, "embeddings.token_type_embeddings", types);
    }
    layer_norm(&mut out, "embeddings.LayerNorm", &e.layer_norm);
    let names = family.checkpoint();
    for (i, layer) in bert.layers.iter().enumerate() {
        let [q, k, v, o, attention_norm, intermediate, output, output_norm] = names.layer_names(i);
        linear(&mut out, &q, &layer.query);
        linear(&mut out, &k, &layer.key);
        linear(&mut out, &v, &layer.value);
        linear(&mut out, &o, &layer.attention_output);
        layer_norm(&mut out, &attention_norm, &layer.attention_norm);
        linear(&mut out, &intermediate, &layer.intermediate);
        linear(&mut out, &output, &layer.output);
        layer_norm(&mut out, &output_norm, &layer.output_norm);
    }
    if let (Some(name), Some(table)) = (names.relative_attention_bias, &bert.relative_attention_bias) {
        embedding(&mut out, name, table);
    }
    out
}

/// `bert`'s weights as the bytes of a `model.safetensors` file of `family`, with the pooler of `base`
/// (the bytes of the checkpoint it was fine-tuned from), when it has one.
pub fn bert_safetensors<B: Backend>(bert: &Bert<B>, family: Family, base: Option<&[u8]>) -> Result<Vec<u8>, ModelError> {
    let mut tensors = tensors(bert, family);
    if let Some(base) = base {
        let base = SafeTensors::deserialize(base).map_err(|e| ModelError::weights(Path::new("model.safetensors"), e.to_string()))?;
        let unprefixed = |name: &str| family.checkpoint().prefixes.iter().find_map(|p| name.strip_prefix(p)).unwrap_or(name).to_owned();
        for (name, view) in base.tensors() {
            if let Some(rest) = unprefixed(&name).strip_prefix("pooler.") {
                tensors.push(Named {
                    name: format!("pooler.{rest}"),
                    shape: view.shape().to_vec(),
                    dtype: view.dtype(),
                    bytes: view.data().to_vec(),
                });
            }
        }
    }
    let views = tensors
        .iter()
        .map(|t| {
            Ok((
                t.name.clone(),
                TensorView::new(t.dtype, t.shape.clone(), &t.bytes).map_err(|e| ModelError::weights(Path::new(&t.name), e.to_string()))?,
            ))
        })
        .collect::<Result<Vec<_>, ModelError>>()?;
    let metadata = std::collections::HashMap::from([("format".to_owned(), "pt".to_owned())]);
    safetensors::serialize(views, Some(metadata)).map_err(|e| ModelError::weights(Path::new("model.safetensors"), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bert::model::{BertEmbeddings, BertLayer};
    use crate::bert::{BertConfig, load_bert};
    use burn::nn::{EmbeddingConfig, LayerNormConfig};

    type B = crate::DefaultBackend;

    fn tiny() -> (BertConfig, Bert<B>) {
        let config: BertConfig = serde_json::from_str(
            r#"{"vocab_size": 11, "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 12, "max_position_embeddings": 16}"#,
        )
        .unwrap();
        let device = Default::default();
        let norm = || {
            let mut n = LayerNormConfig::new(8).with_epsilon(1e-12).init::<B>(&device);
            // Not the init's 1 and 0: the test must see gamma and beta each land in their own place.
            n.gamma = Param::from_tensor(Tensor::random([8], burn::tensor::Distribution::Default, &device));
            n.beta = Some(Param::from_tensor(Tensor::random([8], burn::tensor::Distribution::Default, &device)));
            n
        };
        let embeddings = BertEmbeddings {
            word_embeddings: EmbeddingConfig::new(11, 8).init(&device),
            position_embeddings: EmbeddingConfig::new(16, 8).init(&device),
            token_type_embeddings: Some(EmbeddingConfig::new(2, 8).init(&device)),
            layer_norm: norm(),
            position_offset: 0,
        };
        let layers = (0..2)
            .map(|_| {
                let mut layer = BertLayer::<B>::init(8, 2, 12, 1e-12, &device);
                layer.attention_norm = norm();
                layer.output_norm = norm();
                layer
            })
            .collect();
        (config, Bert { embeddings, layers, relative_attention_bias: None })
    }

    fn flat(bert: &Bert<B>) -> Vec<(String, Vec<usize>, Vec<u8>)> {
        tensors(bert, Family::Bert).into_iter().map(|t| (t.name, t.shape, t.bytes)).collect()
    }

    #[test]
    fn a_saved_bert_loads_back_bit_for_bit() {
        let (config, bert) = tiny();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        // A base checkpoint with a prefixed pooler in float16: copied under BertModel's name, as it was.
        let pooler = [0u8, 60, 0, 188];
        let view = TensorView::new(Dtype::F16, vec![2], &pooler).unwrap();
        let base = safetensors::serialize([("bert.pooler.dense.bias", view)], None).unwrap();
        std::fs::write(&path, bert_safetensors(&bert, Family::Bert, Some(&base)).unwrap()).unwrap();
        let back = load_bert::<B>(&config, &path, &Default::default()).unwrap();
        assert_eq!(flat(&back), flat(&bert));
        let bytes = std::fs::read(&path).unwrap();
        let file = SafeTensors::deserialize(&bytes).unwrap();
        let copied = file.tensor("pooler.dense.bias").unwrap();
        assert_eq!((copied.dtype(), copied.data()), (Dtype::F16, &pooler[..]));
        assert_eq!(file.len(), 5 + 2 * 16 + 1);
        // The names and shapes PyTorch's BertModel reads: 4 embedding tensors and 16 a layer, [out, in].
        let names: Vec<(String, Vec<usize>)> = flat(&bert).into_iter().map(|(n, s, _)| (n, s)).collect();
        assert_eq!(names.len(), 5 + 2 * 16);
        assert!(names.contains(&("encoder.layer.1.intermediate.dense.weight".into(), vec![12, 8])));
        assert!(names.contains(&("encoder.layer.0.output.dense.weight".into(), vec![8, 12])));
        assert!(names.contains(&("embeddings.LayerNorm.bias".into(), vec![8])));
    }
}
