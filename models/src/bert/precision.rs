//! Mixed precision for the encoder's Burn forward pass (issue 65): bf16 autocast, as PyTorch's
//! `torch.autocast(device_type, dtype=torch.bfloat16)` runs a BERT block (Micikevicius et al., 2018, "Mixed
//! Precision Training", with bfloat16's float32 range in place of float16's, so no loss scaling; Kalamkar et
//! al., 2019, "A Study of BFLOAT16 for Deep Learning Training"):
//!
//! ```text
//! products   q, k, v, attention output, intermediate, output:  bf16(x) · bf16(W) + bf16(b)   -> bf16
//!            scores bf16(q) · bf16(k)ᵀ, context bf16(P) · bf16(v)                            -> bf16
//! float32    residual sums (bf16 + float32 promotes), layer norms, the softmax, the embeddings,
//!            pooling and the loss
//! ```
//!
//! The parameters stay float32 (the master weights the optimizer updates); each forward casts them to
//! bf16, and the gradient flows back through the cast into float32. GELU runs on its bf16 input, as
//! autocast leaves it. A backend computes in bf16 only where it can ([`Precision::supported`]): the CUDA
//! build and burn-flex (the tests') can, the default CPU build (ndarray) cannot, and arbor's own CPU
//! kernel is float32 throughout.

use burn::nn::Linear;
use burn::tensor::backend::Backend;
use burn::tensor::module::linear;
use burn::tensor::{DType, FloatDType, Tensor};
use serde::{Deserialize, Serialize};

/// The arithmetic of the encoder's matrix products in a training step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Precision {
    /// Float32 throughout (TF32 products on a GPU's tensor cores, as burn-cuda rounds them).
    #[default]
    F32,
    /// bf16 autocast (above): float32 master weights and loss.
    Bf16,
}

impl Precision {
    pub fn is_f32(&self) -> bool {
        *self == Precision::F32
    }

    /// Whether backend `B` computes in this precision on `device`.
    pub fn supported<B: Backend>(self, device: &B::Device) -> bool {
        match self {
            Precision::F32 => true,
            Precision::Bf16 => B::supports_dtype(device, DType::BF16),
        }
    }

    /// Refuses this precision where backend `B` cannot compute in it on `device`, naming the builds that
    /// can (bf16: the CUDA build, or burn-flex's on a CPU; the default CPU build is float32 only): what a
    /// trainer, `train` and `arbor trace-forward` say before they start.
    pub fn ensure_supported<B: Backend>(self, device: &B::Device) -> Result<(), String> {
        match self.supported::<B>(device) {
            true => Ok(()),
            false => Err(format!(
                "precision: {self:?} needs a backend that computes in bf16 (the CUDA build, `--features cuda`, or on a CPU burn-flex's, \
                 `--profile flex --features flex`); this build is {}, float32 only",
                crate::backend::NAME
            )),
        }
    }

    /// `x` as the products take it.
    pub fn low<B: Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Precision::F32 => x,
            Precision::Bf16 => x.cast(FloatDType::BF16),
        }
    }

    /// `x` in float32 (a residual sum, a layer norm, the softmax read it so).
    pub fn high<B: Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Precision::F32 => x,
            Precision::Bf16 => x.cast(FloatDType::F32),
        }
    }

    /// A linear layer's product in this precision: its result in the products' dtype.
    pub fn linear<B: Backend, const D: usize>(self, layer: &Linear<B>, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Precision::F32 => layer.forward(x),
            Precision::Bf16 => linear(self.low(x), self.low(layer.weight.val()), layer.bias.as_ref().map(|b| self.low(b.val()))),
        }
    }
}

/// On burn-flex, which computes in bf16 as burn-cuda does; left out of a build with Burn's collectives
/// (`ddp`), where every autodiff backend must be distributed and burn-flex is not.
#[cfg(test)]
#[cfg(not(feature = "ddp"))]
mod tests {
    use std::path::PathBuf;

    use burn::backend::Autodiff;
    use burn::tensor::{Int, TensorData};
    use burn_flex::Flex;

    use super::*;
    use crate::bert::{Bert, BertConfig, load_bert};
    use crate::encoder::pool_ids_in;
    use crate::pooling::Pooling;

    type A = Autodiff<Flex>;

    fn tiny() -> Bert<A> {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-bert-cls");
        let config: BertConfig = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
        load_bert(&config, &dir.join("model.safetensors"), &Default::default()).unwrap()
    }

    /// InfoNCE of rows `0..n` against rows `n..2n` (target: the same index) at temperature 0.05, the
    /// pooled vectors' dtype checked on the way.
    fn info_nce(pooled: Tensor<A, 2>) -> Tensor<A, 1> {
        assert_eq!(pooled.dtype(), DType::F32, "the vectors a loss reads are float32");
        let n = pooled.dims()[0] / 2;
        let (q, p) = (pooled.clone().narrow(0, 0, n), pooled.narrow(0, n, n));
        let logits = q.matmul(p.transpose()) / 0.05;
        let log_probs = burn::tensor::activation::log_softmax(logits, 1);
        let target = Tensor::<A, 2, Int>::from_data(TensorData::new((0..n as i64).collect::<Vec<_>>(), [n, 1]), &Default::default());
        -log_probs.gather(1, target).mean()
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        dot / (a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|x| x * x).sum::<f32>().sqrt())
    }

    /// bf16 autocast on a backend that computes in bf16 (burn-flex, as burn-cuda does) over a small random
    /// BERT (hidden 32, two blocks): the pooled vectors are float32, within cosine 0.999 of float32's but
    /// not equal to them (the products did round); the InfoNCE loss is within 1 % of float32's; the
    /// gradients land on the float32 master weights, float32 themselves, within cosine 0.99 of
    /// float32's, for a block's weights and for the word embeddings below every cast.
    #[test]
    fn bf16_autocast_stays_near_float32_and_trains_the_float32_weights() {
        let bert = tiny();
        let device = Default::default();
        assert!(Precision::Bf16.supported::<A>(&device) && Precision::F32.supported::<A>(&device));
        let rows: Vec<Vec<u32>> = (0..8u32).map(|r| (0..(5 + 3 * r)).map(|t| 2 + (r * 37 + t * 11) % 290).collect()).collect();
        let rows: Vec<&[u32]> = rows.iter().map(Vec::as_slice).collect();
        let run = |precision: Precision| {
            let pooled = pool_ids_in(&bert, &rows, &device, Pooling::Mean, precision);
            let vectors = pooled.clone().into_data().to_vec::<f32>().unwrap();
            let loss = info_nce(pooled);
            let value: f32 = loss.clone().into_scalar();
            let grads = loss.backward();
            let grad = |w: &burn::module::Param<Tensor<A, 2>>| {
                let g = w.grad(&grads).expect("a trained weight has a gradient");
                assert_eq!(g.dtype(), DType::F32, "master weights take float32 gradients");
                g.into_data().to_vec::<f32>().unwrap()
            };
            let weights = [&bert.layers[1].intermediate.weight, &bert.layers[0].query.weight, &bert.embeddings.word_embeddings.weight];
            (vectors, value, weights.map(grad))
        };
        let (v32, l32, g32) = run(Precision::F32);
        let (v16, l16, g16) = run(Precision::Bf16);
        let dim = v32.len() / rows.len();
        let worst = v32.chunks(dim).zip(v16.chunks(dim)).map(|(a, b)| cosine(a, b)).fold(1.0f32, f32::min);
        assert!(worst >= 0.999, "bf16 vectors at cosine {worst} of float32's");
        let moved = v32.iter().zip(&v16).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(moved > 1e-5, "bf16 products round: the vectors must differ from float32's (by {moved})");
        assert!((l32 - l16).abs() <= 0.01 * l32.abs(), "loss {l16} in bf16 against {l32}");
        for (k, (a, b)) in g32.iter().zip(&g16).enumerate() {
            let c = cosine(a, b);
            assert!(c >= 0.99, "gradient {k}: cosine {c} to float32's");
        }
    }
}

#[cfg(test)]
#[cfg(not(any(feature = "cuda", feature = "wgpu", feature = "flex")))]
mod cpu_build {
    use burn::backend::Autodiff;

    use super::*;
    use crate::DefaultBackend;

    /// The default CPU build (ndarray) cannot compute in bf16: a trainer asked for it refuses before its
    /// first step instead of failing inside one.
    #[test]
    fn the_default_cpu_build_says_it_cannot_compute_in_bf16() {
        assert!(!Precision::Bf16.supported::<Autodiff<DefaultBackend>>(&Default::default()));
        assert!(Precision::F32.supported::<Autodiff<DefaultBackend>>(&Default::default()));
    }
}

#[cfg(test)]
#[cfg(all(feature = "flex", not(any(feature = "cuda", feature = "wgpu"))))]
mod flex_build {
    use burn::backend::Autodiff;

    use super::*;
    use crate::DefaultBackend;

    /// The `flex` build (burn-flex as the backend) computes in bf16, so `training.precision: Bf16` trains on
    /// a CPU (`cargo test --profile flex --features flex -p arbor-models`).
    #[test]
    fn the_flex_build_computes_in_bf16() {
        assert_eq!(crate::backend::NAME, "burn-flex (CPU)");
        assert!(Precision::Bf16.ensure_supported::<Autodiff<DefaultBackend>>(&Default::default()).is_ok());
    }
}
