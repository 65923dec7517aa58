//! The encoder's forward pass observed step by step (issue 65's numerics: where a build's first loss
//! leaves PyTorch's): Burn's module forward ([`Bert::embed`], [`Bert::forward_from_observed`],
//! [`Pooling::pool`], as the training path's `pool_ids_in` runs them) over one side of a fine-tuning batch, every intermediate kept as float32 under the
//! name of the transformers module that computes it, so that `scripts/trace_forward.py compare` can set two
//! builds, or a build and PyTorch, side by side and name the first step where they part.
//!
//! Names, for a side `S` (`queries` or `window`) and block `l`: `S.mask` (1 on real tokens, `[rows,
//! tokens]`), `S.embeddings` (`[rows * tokens, hidden]`, after the embeddings' layer norm),
//! `S.l.query` ... `S.l.output_norm` (as [`BertLayer::forward_observed`] names them, `[rows * tokens,
//! features]`), `S.pooled` (pooled and L2-normalised, `[rows, hidden]`: what the loss reads).
//!
//! [`BertLayer::forward_observed`]: super::model::BertLayer::forward_observed

use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

use super::{Bert, Precision};
use crate::encoder::pad_ids;
use crate::pooling::Pooling;

/// One observed tensor: its name, shape and float32 values (row-major).
#[derive(Debug, Clone, PartialEq)]
pub struct Traced {
    pub name: String,
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

impl Traced {
    fn of<B: Backend, const D: usize>(name: String, t: &Tensor<B, D>) -> Traced {
        let data: TensorData = t.clone().into_data().convert::<f32>();
        Traced { name, shape: data.shape.to_vec(), values: data.to_vec::<f32>().expect("converted to float32") }
    }
}

/// `traced` as a safetensors file's bytes (float32 tensors under their names, in any order: the format
/// sorts them), which PyTorch's side reads with `safetensors.torch.load_file`.
pub fn to_safetensors(traced: &[Traced]) -> Result<Vec<u8>, safetensors::SafeTensorError> {
    let bytes: Vec<Vec<u8>> = traced.iter().map(|t| t.values.iter().flat_map(|v| v.to_le_bytes()).collect()).collect();
    let views = traced
        .iter()
        .zip(&bytes)
        .map(|(t, b)| Ok((t.name.clone(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, t.shape.clone(), b)?)))
        .collect::<Result<Vec<_>, safetensors::SafeTensorError>>()?;
    safetensors::tensor::serialize(views, None)
}

/// Token-id `rows` (one side of a batch, padded to its longest row as the step pads them) through `bert`
/// with its products in `precision`, pooled by `pooling`: every step's result, named under `side`.
pub fn trace_side<B: Backend>(
    bert: &Bert<B>,
    rows: &[&[u32]],
    side: &str,
    pooling: Pooling,
    precision: Precision,
    device: &B::Device,
) -> Vec<Traced> {
    let (ids, mask) = pad_ids::<B>(rows, device);
    let [batch, tokens] = ids.dims();
    let mut traced = vec![Traced::of(format!("{side}.mask"), &mask.clone().float())];
    let x = bert.embed(ids);
    let hidden = x.dims()[2];
    traced.push(Traced::of(format!("{side}.embeddings"), &x.clone().reshape([batch * tokens, hidden])));
    let mut observe = |l, name, t: &Tensor<B, 2>| traced.push(Traced::of(format!("{side}.{l}.{name}"), t));
    let hidden = bert.forward_from_observed(x, mask.clone(), 0, false, precision, &mut observe).hidden;
    traced.push(Traced::of(format!("{side}.pooled"), &pooling.pool(hidden, mask)));
    traced
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::DefaultBackend;
    use crate::bert::BertConfig;
    use crate::bert::load_bert;
    use crate::encoder::pool_ids;

    type B = DefaultBackend;

    /// On the tiny CLS fixture's random BERT (two blocks): the trace holds the mask, the embeddings, nine
    /// steps a block and the pooled vectors, in the order the forward computes them; its pooled vectors are
    /// the training path's ([`pool_ids`]) and each block's last step is the next block's input (block 0's
    /// query is a linear map of the embeddings: checked through the block's own weights).
    #[test]
    fn a_trace_names_every_step_and_ends_in_the_steps_vectors() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-bert-cls");
        let config: BertConfig = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
        let device = Default::default();
        let bert = load_bert::<B>(&config, &dir.join("model.safetensors"), &device).unwrap();
        let rows: [&[u32]; 2] = [&[2, 40, 41, 3], &[2, 50, 3]];
        let traced = trace_side(&bert, &rows, "queries", Pooling::Mean, Precision::F32, &device);
        let steps = ["query", "key", "value", "context", "attention_output", "attention_norm", "intermediate", "output", "output_norm"];
        let mut names = vec!["queries.mask".to_owned(), "queries.embeddings".to_owned()];
        names.extend((0..bert.layers.len()).flat_map(|l| steps.map(|s| format!("queries.{l}.{s}"))));
        names.push("queries.pooled".to_owned());
        assert_eq!(traced.iter().map(|t| t.name.clone()).collect::<Vec<_>>(), names);
        let at = |name: &str| traced.iter().find(|t| t.name == name).unwrap();
        assert_eq!(at("queries.mask").values, [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0]);
        assert_eq!(at("queries.1.intermediate").shape, [8, config.intermediate_size]);

        let pooled = pool_ids(&bert, &rows, &device, Pooling::Mean).into_data().to_vec::<f32>().unwrap();
        assert_eq!(at("queries.pooled").values, pooled);
        // Block 0's query projection of the traced embeddings is the traced query.
        let embeddings = Tensor::<B, 2>::from_data(TensorData::new(at("queries.embeddings").values.clone(), [8, config.hidden_size]), &device);
        let query = bert.layers[0].query.forward(embeddings).into_data().to_vec::<f32>().unwrap();
        let worst = query.iter().zip(&at("queries.0.query").values).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "{worst}");

        // Written as safetensors and read back: the same names, shapes and values.
        let bytes = to_safetensors(&traced).unwrap();
        let read = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        for t in &traced {
            let view = read.tensor(&t.name).unwrap();
            assert_eq!(view.shape(), t.shape.as_slice(), "{}", t.name);
            let values: Vec<f32> = view.data().chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
            assert_eq!(values, t.values, "{}", t.name);
        }
    }
}
