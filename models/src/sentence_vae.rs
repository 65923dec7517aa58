//! SentenceVAE (SproutRAG, Section 2.1: the SLLM is a SentenceVAE model): a unit's pooled encoder vector
//! is compressed to a latent z, and a small decoder reconstructs the unit's tokens from z.
//!
//! ```text
//! (mu, log sigma^2) = (W_mu x, W_lv x)             x: the pretrained encoder's pooled unit vector
//! z = mu + exp(log sigma^2 / 2) * eps, eps ~ N(0, I) while training; z = mu at inference
//! p(t_k | t_<k, z) = softmax(E h_k)                 h: a causal transformer block over E t_<k + W_z z + pos
//! ```
//!
//! The decoder ties its output projection to its token embedding E, and reconstructs at most
//! `max_tokens` tokens of a unit (teacher forcing). Its loss, token cross-entropy + beta * KL, is
//! `arbor_losses::vae_loss`; z is the unit vector the SLLM reads.

use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, Initializer, Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Distribution, Int, Tensor};
use serde::{Deserialize, Serialize};

use crate::bert::model::{BertLayer, causal_bias};
use crate::sllm::sinusoidal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SentenceVaeConfig {
    pub d_latent: usize,
    pub d_decoder: usize,
    pub decoder_heads: usize,
    /// Tokens of a unit the decoder reconstructs (teacher forcing), from its start.
    pub max_tokens: usize,
}

impl Default for SentenceVaeConfig {
    fn default() -> Self {
        SentenceVaeConfig { d_latent: 256, d_decoder: 128, decoder_heads: 4, max_tokens: 32 }
    }
}

#[derive(Module, Debug)]
pub struct SentenceVae<B: Backend> {
    pub mu: Linear<B>,
    pub log_var: Linear<B>,
    /// Token embedding, tied to the output projection.
    pub tokens: Embedding<B>,
    pub latent: Linear<B>,
    pub decoder: BertLayer<B>,
}

/// The VAE's view of a batch of units.
#[derive(Debug, Clone)]
pub struct VaeOutput<B: Backend> {
    /// `[batch, d_latent]` each.
    pub z: Tensor<B, 2>,
    pub mu: Tensor<B, 2>,
    pub log_var: Tensor<B, 2>,
}

impl SentenceVaeConfig {
    pub fn init<B: Backend>(&self, d_input: usize, vocab: usize, device: &B::Device) -> SentenceVae<B> {
        SentenceVae {
            mu: LinearConfig::new(d_input, self.d_latent).init(device),
            log_var: LinearConfig::new(d_input, self.d_latent).init(device),
            // BERT's init (std 0.02): with the tied output projection, logits start near zero and the
            // token cross-entropy near log(vocab); burn's default N(0, 1) starts it near 90.
            tokens: EmbeddingConfig::new(vocab, self.d_decoder).with_initializer(Initializer::Normal { mean: 0.0, std: 0.02 }).init(device),
            latent: LinearConfig::new(self.d_latent, self.d_decoder).init(device),
            decoder: BertLayer::init(self.d_decoder, self.decoder_heads, 4 * self.d_decoder, 1e-12, device),
        }
    }
}

impl<B: Backend> SentenceVae<B> {
    /// Encodes pooled unit vectors `[batch, d_input]`; samples z when `sample` (training), else z = mu.
    pub fn encode(&self, pooled: Tensor<B, 2>, sample: bool) -> VaeOutput<B> {
        let mu = self.mu.forward(pooled.clone());
        let log_var = self.log_var.forward(pooled);
        let z = if sample {
            let eps = crate::host::host_random(mu.dims(), Distribution::Normal(0.0, 1.0), &mu.device());
            mu.clone() + (log_var.clone() / 2.0).exp() * eps
        } else {
            mu.clone()
        };
        VaeOutput { z, mu, log_var }
    }

    /// Next-token logits with teacher forcing: position k sees z and the tokens before k.
    ///
    /// # Shapes
    /// - `z`: `[batch, d_latent]`; `inputs`: `[batch, tokens]` (the targets shifted right, starting with a
    ///   start token); `mask`: `[batch, tokens]`, true on real tokens
    /// - returns `[batch, tokens, vocab]`
    pub fn decode(&self, z: Tensor<B, 2>, inputs: Tensor<B, 2, Int>, mask: Tensor<B, 2, Bool>) -> Tensor<B, 3> {
        let [_, t] = inputs.dims();
        let device = inputs.device();
        let d = self.latent.weight.dims()[1];
        let x = self.tokens.forward(inputs) + self.latent.forward(z).unsqueeze_dim::<3>(1) + sinusoidal::<B>(t, d, &device).unsqueeze::<3>();
        let (h, _) = self.decoder.forward(x, causal_bias(mask)); // [batch, t, d]
        let vocab = self.tokens.weight.val(); // [vocab, d]
        h.matmul(vocab.transpose().unsqueeze::<3>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DefaultBackend as B;
    use burn::tensor::TensorData;

    #[test]
    fn inference_uses_mu_and_the_decoder_is_causal() {
        let device = Default::default();
        let vae = SentenceVaeConfig { d_latent: 8, d_decoder: 16, decoder_heads: 2, max_tokens: 6 }.init::<B>(12, 50, &device);
        let x = Tensor::<B, 2>::random([3, 12], Distribution::Normal(0.0, 1.0), &device);
        let out = vae.encode(x.clone(), false);
        assert_eq!(out.z.clone().into_data(), out.mu.clone().into_data());
        let sampled = vae.encode(x, true);
        assert_ne!(sampled.z.into_data(), sampled.mu.into_data());
        let ids = |v: Vec<i64>| Tensor::<B, 2, Int>::from_data(TensorData::new(v, [1, 4]), &device);
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(vec![true; 4], [1, 4]), &device);
        let z = out.z.slice([0..1]);
        let a = vae.decode(z.clone(), ids(vec![1, 2, 3, 4]), mask.clone()).into_data().to_vec::<f32>().unwrap();
        let b = vae.decode(z, ids(vec![1, 2, 9, 9]), mask).into_data().to_vec::<f32>().unwrap();
        // Changing tokens 2 and 3 leaves the logits at positions 0 and 1 unchanged.
        assert_eq!(a[..2 * 50], b[..2 * 50]);
        assert_ne!(a[2 * 50..], b[2 * 50..]);
    }

    #[test]
    fn the_untrained_decoder_starts_near_uniform_over_the_vocabulary() {
        let device = Default::default();
        let vocab = 1000;
        let vae = SentenceVaeConfig { d_latent: 32, d_decoder: 128, decoder_heads: 4, max_tokens: 8 }.init::<B>(64, vocab, &device);
        let z = vae.encode(Tensor::<B, 2>::random([4, 64], Distribution::Normal(0.0, 1.0), &device), false).z;
        let ids = Tensor::<B, 2, Int>::from_data(TensorData::new((0..32).map(|i| i * 31 % 1000).collect::<Vec<i64>>(), [4, 8]), &device);
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(vec![true; 32], [4, 8]), &device);
        let log_p = burn::tensor::activation::log_softmax(vae.decode(z, ids.clone(), mask), 2);
        let ce = -log_p.gather(2, ids.unsqueeze_dim::<3>(2)).mean().into_scalar();
        let uniform = (vocab as f32).ln();
        assert!((ce - uniform).abs() < 0.5, "cross-entropy {ce} at init, log(vocab) = {uniform}");
    }
}
