//! SmartChunk's Chunk Compression Encoder E (Section 4.1, "Chunk Compression Encoder"; Section 4.3): one
//! embedding for a higher-level chunk from the embeddings of the chunks it is made of, without writing
//! (or encoding) a summary of its text. Trained to the encoder's embedding of the chunk's summary with
//! `L_comp = ||e_comp - e_gt||^2` (`arbor_losses::compression_mse`).
//!
//! Ours is a small set transformer with a pooling token: the input vectors (no positions: a set of any
//! size) go through [`BertLayer`]s after a learned pooling token, and the token's final state corrects the
//! inputs' mean,
//!
//! ```text
//! e_comp = normalise( mean_i x_i + W_out h_pool )
//! ```
//!
//! with `W_out` initialised to zero, so an untrained compressor is the normalised mean of its inputs
//! (mean pooling, the plain way to embed a chunk from its parts) and training learns what the summary
//! adds to it.

use burn::module::{Module, Param};
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::bert::model::{BertLayer, padding_bias};

/// Sizes of the compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressorConfig {
    pub layers: usize,
    pub heads: usize,
    pub d_model: usize,
    pub d_ff: usize,
}

impl Default for CompressorConfig {
    fn default() -> Self {
        CompressorConfig { layers: 2, heads: 4, d_model: 128, d_ff: 256 }
    }
}

#[derive(Module, Debug)]
pub struct Compressor<B: Backend> {
    pub input: Linear<B>,
    /// The pooling token, `[d_model]`.
    pub pool: Param<Tensor<B, 1>>,
    pub layers: Vec<BertLayer<B>>,
    pub output: Linear<B>,
}

impl CompressorConfig {
    pub fn init<B: Backend>(&self, d_input: usize, device: &B::Device) -> Compressor<B> {
        Compressor {
            input: LinearConfig::new(d_input, self.d_model).init(device),
            pool: Initializer::Normal { mean: 0.0, std: 0.02 }.init([self.d_model], device),
            layers: (0..self.layers).map(|_| BertLayer::init(self.d_model, self.heads, self.d_ff, 1e-12, device)).collect(),
            output: LinearConfig::new(self.d_model, d_input).with_initializer(Initializer::Zeros).init(device),
        }
    }
}

impl<B: Backend> Compressor<B> {
    /// # Shapes
    /// - `parts`: `[batch, parts, d_input]`, a chunk's parts padded to the longest; `mask`: `[batch, parts]`,
    ///   true on real parts (each row has at least one); returns `[batch, d_input]`, unit length.
    pub fn forward(&self, parts: Tensor<B, 3>, mask: Tensor<B, 2, Bool>) -> Tensor<B, 2> {
        let [batch, n, _] = parts.dims();
        let device = parts.device();
        let weights = mask.clone().float().unsqueeze_dim::<3>(2); // [batch, parts, 1]
        let mean = (parts.clone() * weights.clone()).sum_dim(1).squeeze_dim::<2>(1) / weights.sum_dim(1).squeeze_dim::<2>(1);
        let x = self.input.forward(parts);
        let d_model = x.dims()[2];
        let pool = self.pool.val().reshape([1, 1, d_model]).repeat_dim(0, batch);
        let mut x = Tensor::cat(vec![pool, x], 1); // [batch, 1 + parts, d_model]
        let pool_mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(vec![true; batch], [batch, 1]), &device);
        let with_pool = Tensor::cat(vec![pool_mask, mask], 1);
        let key_bias = padding_bias(with_pool);
        debug_assert_eq!(key_bias.dims()[3], n + 1);
        for layer in &self.layers {
            x = layer.forward(x, key_bias.clone()).0;
        }
        let h_pool = x.narrow(1, 0, 1).reshape([batch, d_model]);
        normalise(mean + self.output.forward(h_pool))
    }
}

/// Rows scaled to unit length.
fn normalise<B: Backend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
    let norm = x.clone().powi_scalar(2).sum_dim(1).sqrt().clamp_min(1e-12);
    x / norm
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DefaultBackend as B;
    use burn::tensor::Distribution;

    #[test]
    fn untrained_it_is_the_normalised_mean_of_the_real_parts_and_padding_is_ignored() {
        let device = Default::default();
        let c = CompressorConfig { layers: 1, heads: 2, d_model: 8, d_ff: 16 }.init::<B>(4, &device);
        let parts =
            Tensor::<B, 3>::from_data(TensorData::new(vec![1.0f32, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 9.0, 9.0, 9.0, 9.0], [1, 3, 4]), &device);
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(vec![true, true, false], [1, 3]), &device);
        let e = c.forward(parts, mask).into_data().to_vec::<f32>().unwrap();
        let h = 0.5f32.sqrt();
        for (got, want) in e.iter().zip([h, h, 0.0, 0.0]) {
            assert!((got - want).abs() < 1e-6, "{e:?}");
        }
    }

    #[test]
    fn the_parts_are_a_set_and_the_output_has_unit_length() {
        let device = Default::default();
        let mut c = CompressorConfig { layers: 2, heads: 2, d_model: 8, d_ff: 16 }.init::<B>(4, &device);
        c.output = LinearConfig::new(8, 4).init(&device); // a trained-like, non-zero correction
        let x = Tensor::<B, 3>::random([1, 3, 4], Distribution::Normal(0.0, 1.0), &device);
        let reversed = x.clone().flip([1]);
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(vec![true; 3], [1, 3]), &device);
        let a = c.forward(x, mask.clone()).into_data().to_vec::<f32>().unwrap();
        let b = c.forward(reversed, mask).into_data().to_vec::<f32>().unwrap();
        assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-5), "{a:?} vs {b:?}");
        assert!((a.iter().map(|v| v * v).sum::<f32>() - 1.0).abs() < 1e-5);
    }
}
