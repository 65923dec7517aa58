//! The sentence-level transformer (SLLM) of SproutRAG (Section 2.1): a transformer over the unit vectors
//! of one whole document (no 512-token cap: its sequence is units, not tokens). It returns contextual unit
//! embeddings e_i and the attention probabilities A^{(l,h)} between units for every layer and head, the
//! input of [`crate::aggregator::HeadAggregator`]. The paper's SLLM is a 1.3B SentenceVAE model; arbor's
//! is sized by config (small on a CPU). Its blocks are [`BertLayer`]s (post-norm, exact GELU) trained from
//! scratch; unit order enters through sinusoidal position encodings, so any document length works.

use burn::module::Module;
use burn::nn::Initializer;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::bert::model::{BertLayer, padding_bias};

/// The epsilon of the SLLM's layer norms.
pub const LAYER_NORM_EPS: f64 = 1e-12;

/// Sizes of the sentence-level transformer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SllmConfig {
    pub layers: usize,
    pub heads: usize,
    pub d_model: usize,
    pub d_ff: usize,
}

impl Default for SllmConfig {
    fn default() -> Self {
        SllmConfig { layers: 2, heads: 4, d_model: 256, d_ff: 512 }
    }
}

#[derive(Module, Debug)]
pub struct Sllm<B: Backend> {
    /// Unit vector (z) to model width.
    pub input: Linear<B>,
    pub layers: Vec<BertLayer<B>>,
    /// Model width back to the input space, initialised to zero: e_i = x_i + output(h_i), so an untrained
    /// SLLM leaves the pretrained encoder's embedding space as it is and training learns a correction.
    pub output: Linear<B>,
}

/// What the SLLM returns for a batch of documents.
#[derive(Debug, Clone)]
pub struct SllmOutput<B: Backend> {
    /// Contextual unit embeddings in the input space, `[batch, units, d_input]`.
    pub embeddings: Tensor<B, 3>,
    /// Per layer, attention between units, `[batch, heads, units, units]`.
    pub attentions: Vec<Tensor<B, 4>>,
}

impl SllmConfig {
    pub fn init<B: Backend>(&self, d_input: usize, device: &B::Device) -> Sllm<B> {
        Sllm {
            input: LinearConfig::new(d_input, self.d_model).init(device),
            layers: (0..self.layers).map(|_| BertLayer::init(self.d_model, self.heads, self.d_ff, LAYER_NORM_EPS, device)).collect(),
            output: LinearConfig::new(self.d_model, d_input).with_initializer(Initializer::Zeros).init(device),
        }
    }
}

impl<B: Backend> Sllm<B> {
    /// # Shapes
    /// - `units`: `[batch, units, d_input]`; `mask`: `[batch, units]`, true on real units
    pub fn forward(&self, units: Tensor<B, 3>, mask: Tensor<B, 2, Bool>) -> SllmOutput<B> {
        let [_, n, _] = units.dims();
        let device = units.device();
        let x = self.input.forward(units.clone());
        let d_model = x.dims()[2];
        let mut x = x + sinusoidal::<B>(n, d_model, &device).unsqueeze::<3>(); // [batch, units, d_model]
        let key_bias = padding_bias(mask);
        let mut attentions = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            let (out, probs) = layer.forward(x, key_bias.clone());
            x = out;
            attentions.push(probs);
        }
        SllmOutput { embeddings: units + self.output.forward(x), attentions }
    }

    /// One document: unit embeddings `[units, d_input]` and attention `[layers, heads, units, units]`.
    pub fn document(&self, units: Tensor<B, 2>) -> (Tensor<B, 2>, Tensor<B, 4>) {
        let [n, _] = units.dims();
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(vec![true; n], [1, n]), &units.device());
        let out = self.forward(units.unsqueeze::<3>(), mask);
        let attention = Tensor::stack::<5>(out.attentions, 0).squeeze_dim::<4>(1);
        (out.embeddings.squeeze_dim::<2>(0), attention)
    }
}

/// Sinusoidal position encodings (Vaswani et al., 2017), `[positions, dim]`.
pub(crate) fn sinusoidal<B: Backend>(positions: usize, dim: usize, device: &B::Device) -> Tensor<B, 2> {
    let mut v = vec![0.0f32; positions * dim];
    for p in 0..positions {
        for i in 0..dim {
            let angle = p as f64 / 10_000f64.powf((2 * (i / 2)) as f64 / dim as f64);
            v[p * dim + i] = if i % 2 == 0 { angle.sin() } else { angle.cos() } as f32;
        }
    }
    Tensor::from_data(TensorData::new(v, [positions, dim]), device)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DefaultBackend as B;
    use burn::tensor::Distribution;

    #[test]
    fn a_thousand_unit_document_gives_embeddings_and_row_stochastic_attention() {
        let device = Default::default();
        let config = SllmConfig { layers: 2, heads: 3, d_model: 24, d_ff: 48 };
        let sllm = config.init::<B>(16, &device);
        let n = 1200;
        let (e, a) = sllm.document(Tensor::random([n, 16], Distribution::Normal(0.0, 1.0), &device));
        assert_eq!(e.dims(), [n, 16]);
        assert_eq!(a.dims(), [2, 3, n, n]);
        let rows = a.sum_dim(3).into_data().to_vec::<f32>().unwrap();
        assert!(rows.iter().all(|r| (r - 1.0).abs() < 1e-3));
    }

    #[test]
    fn an_untrained_sllm_returns_its_inputs() {
        let device = Default::default();
        let sllm = SllmConfig { layers: 1, heads: 2, d_model: 8, d_ff: 16 }.init::<B>(4, &device);
        let x = Tensor::<B, 2>::random([5, 4], Distribution::Default, &device);
        let (e, _) = sllm.document(x.clone());
        assert_eq!(e.into_data(), x.into_data());
    }

    #[test]
    fn padding_units_receive_no_attention() {
        let device = Default::default();
        let sllm = SllmConfig { layers: 1, heads: 2, d_model: 8, d_ff: 16 }.init::<B>(4, &device);
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(vec![true, true, false], [1, 3]), &device);
        let out = sllm.forward(Tensor::random([1, 3, 4], Distribution::Default, &device), mask);
        let a = out.attentions[0].clone().into_data().to_vec::<f32>().unwrap();
        assert!(a.chunks(3).all(|row| row[2] < 1e-6));
    }
}
