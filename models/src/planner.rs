//! SmartChunk's planner P (Section 4.2): from a query and its document's metadata, a short token sequence
//! that ends in the plan `(level_min, level_max)`. The paper's planner is a 1.5B LLM writing a reasoning
//! trace; ours is a small autoregressive policy over a tiny vocabulary that runs on 2 CPU cores, trained
//! with the same mechanisms (SFT, GRPO, STITCH: arbor_trainers::planner).
//!
//! The format the reward checks ([`PlanVocab::parse`]):
//!
//! ```text
//! <plan> <min> L_lo <max> L_hi </plan>      lo <= hi < levels
//! ```
//!
//! The policy may write any token at any step (up to `max_len`), so format and length are learned, as in
//! the paper's R_Format and R_Length. The condition is one feature vector per query (query embedding,
//! document embedding, document metadata), added to every position of a causal transformer
//! ([`BertLayer`]s) over the tokens written so far.

use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, Initializer, Linear, LinearConfig};
use burn::tensor::activation::log_softmax;
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::bert::model::{BertLayer, causal_bias};
use crate::sllm::sinusoidal;

/// The planner's vocabulary for a hierarchy of `levels` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanVocab {
    pub levels: usize,
}

impl PlanVocab {
    /// The start token (an input only: the policy never writes it).
    pub const BOS: u32 = 0;
    pub const EOS: u32 = 1;
    pub const PLAN: u32 = 2;
    pub const MIN: u32 = 3;
    pub const MAX: u32 = 4;
    pub const END_PLAN: u32 = 5;
    const FIRST_LEVEL: u32 = 6;

    pub fn size(&self) -> usize {
        Self::FIRST_LEVEL as usize + self.levels
    }

    pub fn level(&self, level: usize) -> u32 {
        Self::FIRST_LEVEL + level as u32
    }

    /// The expert trace of a plan: the tokens a correct output is made of, ending with EOS.
    pub fn trace(&self, (lo, hi): (usize, usize)) -> Vec<u32> {
        vec![Self::PLAN, Self::MIN, self.level(lo), Self::MAX, self.level(hi), Self::END_PLAN, Self::EOS]
    }

    /// The plan an output (the tokens written, up to and without EOS) states, if it has the format.
    pub fn parse(&self, output: &[u32]) -> Option<(usize, usize)> {
        let level = |t: u32| (t >= Self::FIRST_LEVEL && ((t - Self::FIRST_LEVEL) as usize) < self.levels).then(|| (t - Self::FIRST_LEVEL) as usize);
        match *output {
            [Self::PLAN, Self::MIN, lo, Self::MAX, hi, Self::END_PLAN] => match (level(lo), level(hi)) {
                (Some(lo), Some(hi)) if lo <= hi => Some((lo, hi)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Sizes of the planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerConfig {
    pub layers: usize,
    pub heads: usize,
    pub d_model: usize,
    /// The most tokens a rollout writes (EOS included).
    pub max_len: usize,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        PlannerConfig { layers: 2, heads: 4, d_model: 64, max_len: 10 }
    }
}

#[derive(Module, Debug)]
pub struct Planner<B: Backend> {
    /// Query and document features to model width.
    pub condition: Linear<B>,
    pub tokens: Embedding<B>,
    pub layers: Vec<BertLayer<B>>,
    pub output: Linear<B>,
}

impl PlannerConfig {
    pub fn init<B: Backend>(&self, d_features: usize, vocab: PlanVocab, device: &B::Device) -> Planner<B> {
        let d = self.d_model;
        Planner {
            condition: LinearConfig::new(d_features, d).init(device),
            tokens: EmbeddingConfig::new(vocab.size(), d).with_initializer(Initializer::Normal { mean: 0.0, std: 0.02 }).init(device),
            layers: (0..self.layers).map(|_| BertLayer::init(d, self.heads, 4 * d, 1e-12, device)).collect(),
            output: LinearConfig::new(d, vocab.size()).init(device),
        }
    }
}

impl<B: Backend> Planner<B> {
    /// Next-token log-probabilities at every position of `inputs` (which start with BOS).
    ///
    /// # Shapes
    /// - `features`: `[batch, d_features]`; `inputs`: `[batch, t]`; `mask`: `[batch, t]`, true on real
    ///   tokens; returns `[batch, t, vocab]`
    pub fn log_probs(&self, features: Tensor<B, 2>, inputs: Tensor<B, 2, Int>, mask: Tensor<B, 2, Bool>) -> Tensor<B, 3> {
        let [_, t] = inputs.dims();
        let device = inputs.device();
        let d = self.condition.weight.dims()[1];
        let mut x =
            self.tokens.forward(inputs) + self.condition.forward(features).unsqueeze_dim::<3>(1) + sinusoidal::<B>(t, d, &device).unsqueeze::<3>();
        let bias = causal_bias(mask);
        for layer in &self.layers {
            x = layer.forward(x, bias.clone()).0;
        }
        log_softmax(self.output.forward(x), 2)
    }

    /// Teacher forcing on `outputs` (BOS is prepended): the next-token log-probabilities at every position
    /// `[batch, max len, vocab]`, the written tokens `[batch, max len]` and which of them are real.
    pub fn forced(&self, features: Tensor<B, 2>, outputs: &[Vec<u32>]) -> (Tensor<B, 3>, Tensor<B, 2, Int>, Tensor<B, 2, Bool>) {
        let device = features.device();
        let (b, t) = (outputs.len(), outputs.iter().map(Vec::len).max().unwrap_or(0).max(1));
        let (mut inputs, mut targets, mut real) = (vec![0i64; b * t], vec![0i64; b * t], vec![false; b * t]);
        for (r, out) in outputs.iter().enumerate() {
            for (k, &tok) in out.iter().enumerate() {
                inputs[r * t + k] = i64::from(if k == 0 { PlanVocab::BOS } else { out[k - 1] });
                targets[r * t + k] = i64::from(tok);
                real[r * t + k] = true;
            }
        }
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(real, [b, t]), &device);
        let lp = self.log_probs(features, Tensor::from_data(TensorData::new(inputs, [b, t]), &device), mask.clone());
        (lp, Tensor::from_data(TensorData::new(targets, [b, t]), &device), mask)
    }

    /// The log-probability of each written token of `outputs` (BOS is prepended), `[batch, max len]`, and
    /// the mask of the tokens that count: from `counted_from[b]` (a hint's tokens were given, not written)
    /// to the end of each output.
    pub fn token_log_probs(&self, features: Tensor<B, 2>, outputs: &[Vec<u32>], counted_from: &[usize]) -> (Tensor<B, 2>, Tensor<B, 2>) {
        let device = features.device();
        let t = outputs.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let counted: Vec<f32> = outputs
            .iter()
            .zip(counted_from)
            .flat_map(|(out, &from)| (0..t).map(move |k| if k >= from && k < out.len() { 1.0 } else { 0.0 }))
            .collect();
        let (lp, targets, _) = self.forced(features, outputs);
        let picked = lp.gather(2, targets.unsqueeze_dim::<3>(2));
        (picked.squeeze_dim::<2>(2), Tensor::from_data(TensorData::new(counted, [outputs.len(), t]), &device))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DefaultBackend as B;

    #[test]
    fn traces_parse_back_and_malformed_outputs_do_not() {
        let v = PlanVocab { levels: 6 };
        for plan in [(0, 0), (1, 4), (5, 5)] {
            let trace = v.trace(plan);
            assert_eq!(v.parse(&trace[..trace.len() - 1]), Some(plan));
        }
        let t = v.trace((2, 3));
        assert_eq!(v.parse(&t), None, "EOS is not part of the output");
        assert_eq!(v.parse(&[PlanVocab::PLAN, PlanVocab::MIN, v.level(3), PlanVocab::MAX, v.level(2), PlanVocab::END_PLAN]), None, "lo > hi");
        assert_eq!(v.parse(&[PlanVocab::PLAN, PlanVocab::MIN, v.level(1), PlanVocab::MAX, 6 + 6, PlanVocab::END_PLAN]), None, "no level 6");
        assert_eq!(v.parse(&t[..4]), None);
    }

    #[test]
    fn log_probs_are_causal_and_count_only_written_tokens() {
        let device = Default::default();
        let v = PlanVocab { levels: 3 };
        let p = PlannerConfig { layers: 1, heads: 2, d_model: 8, max_len: 8 }.init::<B>(4, v, &device);
        let f = Tensor::<B, 2>::from_data(TensorData::new(vec![0.1f32, -0.2, 0.3, 0.5, 0.1, -0.2, 0.3, 0.5], [2, 4]), &device);
        let a = v.trace((0, 1));
        let mut b = a.clone();
        b[5] = PlanVocab::EOS; // differs from token 5 on
        let (lp, counted) = p.token_log_probs(f, &[a.clone(), b[..6].to_vec()], &[0, 2]);
        let lp = lp.into_data().to_vec::<f32>().unwrap();
        let t = a.len();
        for k in 0..5 {
            assert!((lp[k] - lp[t + k]).abs() < 1e-6, "position {k} sees only what came before it");
        }
        assert!(lp.iter().take(t).all(|&x| x < 0.0));
        let counted = counted.into_data().to_vec::<f32>().unwrap();
        assert_eq!(&counted[..t], &[1.0; 7]);
        assert_eq!(&counted[t..], &[0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0], "a 2-token hint and padding do not count");
    }
}
