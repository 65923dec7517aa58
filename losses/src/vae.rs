//! The SentenceVAE objective (Kingma & Welling, 2014), as arbor's SproutRAG trainer uses it:
//!
//! ```text
//! L_vae = CE + beta * KL
//! CE    = mean over real tokens of -log p(t_k | t_<k, z)                    (teacher forcing)
//! KL    = mean over units of -1/2 sum_d (1 + log sigma_d^2 - mu_d^2 - sigma_d^2)
//! ```
//!
//! beta = 0 turns the KL term off (a plain autoencoder). Returns the two terms separately, so a trainer
//! can log each and check each for NaN.
//!
//! # Shapes
//! - `logits`: `[batch, tokens, vocab]`; `targets`: `[batch, tokens]`; `mask`: `[batch, tokens]`, true on
//!   real tokens; `mu`, `log_var`: `[batch, d_latent]`; returns (CE `[1]`, KL `[1]`)

use burn::tensor::activation::log_softmax;
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor};

pub fn vae_loss<B: Backend>(
    logits: Tensor<B, 3>,
    targets: Tensor<B, 2, Int>,
    mask: Tensor<B, 2, Bool>,
    mu: Tensor<B, 2>,
    log_var: Tensor<B, 2>,
) -> (Tensor<B, 1>, Tensor<B, 1>) {
    let [batch, tokens, _] = logits.dims();
    let log_p = log_softmax(logits, 2).gather(2, targets.unsqueeze_dim::<3>(2)).reshape([batch, tokens]);
    let weights = mask.float();
    let ce = (log_p * weights.clone()).sum().neg() / weights.sum().clamp_min(1.0);
    let kl = (log_var.clone() + 1.0 - mu.powi_scalar(2) - log_var.exp()).sum_dim(1).mean() * -0.5;
    (ce, kl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_models::DefaultBackend as B;
    use burn::tensor::TensorData;

    #[test]
    fn hand_checked_cross_entropy_and_kl() {
        let device = Default::default();
        // One unit, two tokens over a vocabulary of 2; the second token is padding.
        let logits = Tensor::<B, 3>::from_data(TensorData::new(vec![0.0f32, 0.0, 5.0, -5.0], [1, 2, 2]), &device);
        let targets = Tensor::<B, 2, Int>::from_data(TensorData::new(vec![1i64, 1], [1, 2]), &device);
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(vec![true, false], [1, 2]), &device);
        let zeros = Tensor::<B, 2>::zeros([1, 3], &device);
        let (ce, kl) = vae_loss(logits, targets, mask, zeros.clone(), zeros.clone());
        assert!((ce.into_scalar() - 2f32.ln()).abs() < 1e-6, "padding is not counted");
        assert!(kl.into_scalar().abs() < 1e-7, "N(0, I) has no KL to the prior");
        // mu = 1 in one dimension, sigma = 1: KL = 1/2.
        let mu = Tensor::<B, 2>::from_data(TensorData::new(vec![1.0f32, 0.0, 0.0], [1, 3]), &device);
        let logits = Tensor::<B, 3>::zeros([1, 2, 2], &device);
        let targets = Tensor::<B, 2, Int>::zeros([1, 2], &device);
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(vec![true, true], [1, 2]), &device);
        let (_, kl) = vae_loss(logits, targets, mask, mu, zeros);
        assert!((kl.into_scalar() - 0.5).abs() < 1e-6);
    }
}
