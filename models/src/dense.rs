//! The matched control of a trained retriever: plain dense retrieval, trained on the same queries with
//! the same InfoNCE as SproutRAG's L_ret (SproutRAG, Section 4) but without its tree, its SLLM or L_attn.
//! Its trainable part matches the method it controls:
//!
//! - the encoder fine-tuned (when the method fine-tunes it): units and queries are its pooled vectors;
//! - else a linear map on the frozen encoder's pooled vectors, started at the identity (`adapter`), the
//!   cheapest thing the training queries can move: both queries and units go through it, then L2 norm.

use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

use crate::bert::Bert;

#[derive(Module, Debug)]
pub struct DenseModel<B: Backend> {
    /// The fine-tuned encoder (`None`: frozen, outside the model, its vectors given).
    pub encoder: Option<Bert<B>>,
    /// The map over frozen vectors (`None` when the encoder is fine-tuned).
    pub adapter: Option<Linear<B>>,
}

impl<B: Backend> DenseModel<B> {
    /// With `encoder` to fine-tune, or (`None`) an identity-initialised `dim x dim` map over frozen vectors.
    pub fn new(dim: usize, encoder: Option<Bert<B>>, device: &B::Device) -> Self {
        let adapter = encoder.is_none().then(|| {
            let mut linear = LinearConfig::new(dim, dim).with_bias(false).init(device);
            let eye: Vec<f32> = (0..dim * dim).map(|i| if i / dim == i % dim { 1.0 } else { 0.0 }).collect();
            linear.weight = Param::from_tensor(Tensor::from_data(TensorData::new(eye, [dim, dim]), device));
            linear
        });
        DenseModel { encoder, adapter }
    }

    /// The vectors compared by cosine: `pooled` through the adapter (then L2-normalised), or as they are.
    ///
    /// # Shapes
    /// - `pooled`: `[rows, dim]` -> `[rows, dim]`
    pub fn embed(&self, pooled: Tensor<B, 2>) -> Tensor<B, 2> {
        match &self.adapter {
            None => pooled,
            Some(adapter) => {
                let out = adapter.forward(pooled);
                let norm = out.clone().powf_scalar(2.0).sum_dim(1).sqrt().clamp_min(1e-12);
                out / norm
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DefaultBackend as B;

    #[test]
    fn the_untrained_adapter_is_the_identity_on_unit_vectors() {
        let device = Default::default();
        let model = DenseModel::<B>::new(3, None, &device);
        let x = Tensor::<B, 2>::from_data(TensorData::new(vec![0.6f32, 0.8, 0.0, 0.0, 0.0, 1.0], [2, 3]), &device);
        let y = model.embed(x.clone()).into_data().to_vec::<f32>().unwrap();
        let x = x.into_data().to_vec::<f32>().unwrap();
        assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 1e-6), "{y:?}");
    }
}
