//! The listwise softmax loss a cross-encoder reranker is trained with (Nogueira & Cho, 2019, "Passage
//! Re-ranking with BERT", in its listwise form as sentence-transformers' CrossEncoder trains with
//! MultipleNegativesRankingLoss): each query's group holds its positive first, then its negatives; the
//! scores are logits of one softmax per group.
//!
//! ```text
//! L_rank = -(1/Q) sum_q log( exp(s(q, p_q)) / sum_{c in group(q)} exp(s(q, c)) )
//! ```
//!
//! # Shapes
//! - `scores`: `[Q, G]`, column 0 the positive of each group; returns `[1]`

use burn::tensor::Tensor;
use burn::tensor::activation::log_softmax;
use burn::tensor::backend::Backend;

pub fn listwise_softmax<B: Backend>(scores: Tensor<B, 2>) -> Tensor<B, 1> {
    let [q, _] = scores.dims();
    log_softmax(scores, 1).slice([0..q, 0..1]).mean().neg()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::t;
    use arbor_models::DefaultBackend as B;
    use burn::backend::Autodiff;

    #[test]
    fn hand_checked_values() {
        // Equal scores over a group of 4: -log(1/4).
        let got: f32 = listwise_softmax(t::<B>(&[0.3, 0.3, 0.3, 0.3], 1)).into_scalar();
        assert!((got - 4f32.ln()).abs() < 1e-6, "{got}");
        // Two groups of 2: positive ahead by 1 (log(1 + e^-1)) and behind by 1 (log(1 + e)); their mean.
        let got: f32 = listwise_softmax(t::<B>(&[1.0, 0.0, 0.0, 1.0], 2)).into_scalar();
        let want = ((1.0 + (-1f32).exp()).ln() + (1.0 + 1f32.exp()).ln()) / 2.0;
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    }

    #[test]
    fn gradient_raises_the_positive_and_lowers_the_negatives() {
        // d/ds_0 = (p_0 - 1)/Q, d/ds_j = p_j/Q: with scores [0, ln 3] the softmax is [1/4, 3/4].
        let scores = t::<Autodiff<B>>(&[0.0, 3f32.ln()], 1).require_grad();
        let grads = listwise_softmax(scores.clone()).backward();
        let g = scores.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
        assert!((g[0] + 0.75).abs() < 1e-6 && (g[1] - 0.75).abs() < 1e-6, "{g:?}");
    }

    #[test]
    fn the_loss_is_invariant_to_a_shift_of_a_group_and_falls_as_the_positive_rises() {
        let base: f32 = listwise_softmax(t::<B>(&[0.5, 0.1, -0.2], 1)).into_scalar();
        let shifted: f32 = listwise_softmax(t::<B>(&[10.5, 10.1, 9.8], 1)).into_scalar();
        assert!((base - shifted).abs() < 1e-5);
        let better: f32 = listwise_softmax(t::<B>(&[0.9, 0.1, -0.2], 1)).into_scalar();
        assert!(better < base);
    }
}
