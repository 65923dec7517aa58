//! Loads a Hugging Face `model.safetensors` of any family arbor reads into [`Bert`], name by name.
//!
//! Checkpoint names (with the family's optional task-model prefix, such as `bert.`) map to fields by the
//! family's [`Checkpoint`](super::families::Checkpoint): `embeddings.{word,position,token_type}_embeddings.weight` (no token types in
//! MPNet), `embeddings.LayerNorm.{weight,bias}`, and per layer the eight names of [`Checkpoint::layer`](super::families::Checkpoint::layer)
//! (BERT's `attention.self.query` is MPNet's `attention.attn.q`), and MPNet's
//! `encoder.relative_attention_bias`. PyTorch stores a linear weight as `[out, in]`; Burn's [`Linear`]
//! holds `[in, out]`, so weights are transposed once here, on the host.

use std::path::Path;

use burn::module::Param;
use burn::nn::{Embedding, LayerNorm, LayerNormConfig, Linear};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use safetensors::{Dtype, SafeTensors};

use super::config::BertConfig;
use super::model::{Bert, BertEmbeddings, BertLayer};
use crate::error::ModelError;

/// Reads `path` and builds a [`Bert`] of `config`'s family with its weights on `device`. The family is
/// checked first: a `model_type` arbor does not read is refused before the file is opened.
pub fn load_bert<B: Backend>(config: &BertConfig, path: &Path, device: &B::Device) -> Result<Bert<B>, ModelError> {
    let family = config.family().map_err(|m| ModelError::weights(&path.with_file_name("config.json"), m))?;
    let names = family.checkpoint();
    let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
    let st = SafeTensors::deserialize(&bytes).map_err(|e| ModelError::weights(path, e.to_string()))?;
    let prefix = names.prefixes.iter().find(|p| st.names().iter().any(|n| n.starts_with(&format!("{p}embeddings.")))).copied().unwrap_or("");
    let w = Weights { st: &st, path, prefix, device };
    let (eps, h, ff) = (config.layer_norm_eps, config.hidden_size, config.intermediate_size);
    let embeddings = BertEmbeddings {
        word_embeddings: w.embedding("embeddings.word_embeddings", [config.vocab_size, h])?,
        position_embeddings: w.embedding("embeddings.position_embeddings", [config.max_position_embeddings, h])?,
        token_type_embeddings: match names.token_types {
            true => Some(w.embedding("embeddings.token_type_embeddings", [config.type_vocab_size, h])?),
            false => None,
        },
        layer_norm: w.layer_norm("embeddings.LayerNorm", h, eps)?,
        position_offset: config.position_offset(),
    };
    let layers = (0..config.num_hidden_layers)
        .map(|i| {
            let [q, k, v, o, attention_norm, intermediate, output, output_norm] = names.layer_names(i);
            Ok(BertLayer {
                query: w.linear(&q, h, h)?,
                key: w.linear(&k, h, h)?,
                value: w.linear(&v, h, h)?,
                attention_output: w.linear(&o, h, h)?,
                attention_norm: w.layer_norm(&attention_norm, h, eps)?,
                intermediate: w.linear(&intermediate, h, ff)?,
                output: w.linear(&output, ff, h)?,
                output_norm: w.layer_norm(&output_norm, h, eps)?,
                num_heads: config.num_attention_heads,
            })
        })
        .collect::<Result<_, ModelError>>()?;
    let relative_attention_bias = match names.relative_attention_bias {
        Some(name) => Some(w.embedding(name, [config.relative_attention_num_buckets, config.num_attention_heads])?),
        None => None,
    };
    Ok(Bert { embeddings, layers, relative_attention_bias })
}

struct Weights<'a, B: Backend> {
    st: &'a SafeTensors<'a>,
    path: &'a Path,
    prefix: &'a str,
    device: &'a B::Device,
}

impl<B: Backend> Weights<'_, B> {
    /// The named tensor as f32 values, checked against the expected shape.
    fn values(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let full = format!("{}{name}", self.prefix);
        let view = self.st.tensor(&full).map_err(|_| ModelError::weights(self.path, format!("tensor {full:?} is missing")))?;
        if view.shape() != shape {
            return Err(ModelError::weights(self.path, format!("tensor {full:?} has shape {:?}, expected {shape:?}", view.shape())));
        }
        let data = view.data();
        let values = match view.dtype() {
            Dtype::F32 => data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
            // bf16 is the upper half of an f32; f16 goes through its own conversion.
            Dtype::BF16 => data.chunks_exact(2).map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16)).collect(),
            Dtype::F16 => data.chunks_exact(2).map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]]))).collect(),
            other => return Err(ModelError::weights(self.path, format!("tensor {full:?} has unsupported dtype {other:?}"))),
        };
        Ok(values)
    }

    fn tensor<const D: usize>(&self, values: Vec<f32>, shape: [usize; D]) -> Tensor<B, D> {
        Tensor::from_data(TensorData::new(values, shape), self.device)
    }

    fn linear(&self, name: &str, d_in: usize, d_out: usize) -> Result<Linear<B>, ModelError> {
        let w = self.values(&format!("{name}.weight"), &[d_out, d_in])?;
        let mut t = vec![0.0; w.len()];
        for o in 0..d_out {
            for i in 0..d_in {
                t[i * d_out + o] = w[o * d_in + i];
            }
        }
        let bias = self.values(&format!("{name}.bias"), &[d_out])?;
        Ok(Linear { weight: Param::from_tensor(self.tensor(t, [d_in, d_out])), bias: Some(Param::from_tensor(self.tensor(bias, [d_out]))) })
    }

    fn layer_norm(&self, name: &str, d: usize, eps: f64) -> Result<LayerNorm<B>, ModelError> {
        // Older checkpoints name the LayerNorm parameters gamma / beta.
        let (w, b) = if self.st.tensor(&format!("{}{name}.gamma", self.prefix)).is_ok() { ("gamma", "beta") } else { ("weight", "bias") };
        let mut norm = LayerNormConfig::new(d).with_epsilon(eps).init(self.device);
        norm.gamma = Param::from_tensor(self.tensor(self.values(&format!("{name}.{w}"), &[d])?, [d]));
        norm.beta = Some(Param::from_tensor(self.tensor(self.values(&format!("{name}.{b}"), &[d])?, [d])));
        Ok(norm)
    }

    fn embedding(&self, name: &str, shape: [usize; 2]) -> Result<Embedding<B>, ModelError> {
        Ok(Embedding { weight: Param::from_tensor(self.tensor(self.values(&format!("{name}.weight"), &shape)?, shape)) })
    }
}

/// IEEE half precision to f32.
fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let frac = (h & 0x3ff) as u32;
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: renormalise.
            let shift = frac.leading_zeros() - 21;
            sign | ((127 - 15 + 1 - shift) << 23) | ((frac << shift) & 0x3ff) << 13
        }
        (0x1f, _) => sign | 0x7f80_0000 | (frac << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (frac << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::f16_to_f32;

    #[test]
    fn half_precision_values_convert_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x0200), 2f32.powi(-15));
        assert!(f16_to_f32(0x7c00).is_infinite());
    }
}
