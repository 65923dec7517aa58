//! The policy objective SmartChunk trains its planner with (Section 4.2 and Appendix G.2, equations 3-5;
//! GRPO, Shao et al. 2024), as a loss to minimise, `-J`:
//!
//! ```text
//! J = (1/G) sum_i (1/|o_i|) sum_t [ min(r_it A_i, clip(r_it, 1 - eps, 1 + eps) A_i) - beta KL_it ]
//! r_it  = pi_theta(o_it | q, o_i<t) / pi_old(o_it | q, o_i<t)
//! A_i   = (R_i - mean(R)) / std(R)                          (eq. 4, the group of G rollouts of one query)
//! KL_it = pi_ref / pi_theta - log(pi_ref / pi_theta) - 1    (eq. 5, the k3 estimator, per token)
//! ```
//!
//! `std` is the sample standard deviation (n - 1, as `torch.std` in the verl framework the paper trains
//! with), plus 1e-6; a group whose rewards are all equal has zero advantages and teaches nothing but the
//! KL term.
//!
//! # Shapes
//! - `log_probs` (pi_theta, differentiable), `old_log_probs`, `ref_log_probs`: `[G, T]`, the log-probability
//!   of each sampled token; `mask`: `[G, T]`, 1 on the tokens of `o_i`, 0 on padding; `advantages`: `[G]`;
//!   returns `[1]`.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

/// The settings of eq. 3: the clipping range `epsilon` and the KL weight `beta`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grpo {
    pub epsilon: f64,
    pub beta: f64,
}

/// `A_i = (R_i - mean) / (std + 1e-6)` over one group's rewards (eq. 4).
pub fn group_advantages(rewards: &[f32]) -> Vec<f32> {
    let n = rewards.len() as f32;
    let mean = rewards.iter().sum::<f32>() / n;
    let var = rewards.iter().map(|r| (r - mean).powi(2)).sum::<f32>() / (n - 1.0).max(1.0);
    rewards.iter().map(|r| (r - mean) / (var.sqrt() + 1e-6)).collect()
}

/// `-J` of eq. 3 for one group of rollouts.
pub fn grpo_loss<B: Backend>(
    log_probs: Tensor<B, 2>,
    old_log_probs: Tensor<B, 2>,
    ref_log_probs: Tensor<B, 2>,
    mask: Tensor<B, 2>,
    advantages: Tensor<B, 1>,
    settings: Grpo,
) -> Tensor<B, 1> {
    let [g, _] = log_probs.dims();
    let a = advantages.reshape([g, 1]);
    let ratio = (log_probs.clone() - old_log_probs.detach()).exp();
    let clipped = ratio.clone().clamp(1.0 - settings.epsilon, 1.0 + settings.epsilon);
    let surrogate = (ratio * a.clone()).min_pair(clipped * a);
    let log_ref_over_theta = ref_log_probs.detach() - log_probs;
    let kl = log_ref_over_theta.clone().exp() - log_ref_over_theta - 1.0;
    let per_token = (surrogate - kl * settings.beta) * mask.clone();
    let per_rollout = per_token.sum_dim(1) / mask.sum_dim(1).clamp_min(1.0); // [G, 1]
    per_rollout.mean().neg()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_models::DefaultBackend;
    use burn::backend::Autodiff;
    use burn::tensor::TensorData;

    type A = Autodiff<DefaultBackend>;

    fn t(v: [[f32; 3]; 2]) -> Tensor<A, 2> {
        Tensor::from_data(TensorData::from(v), &Default::default())
    }

    #[test]
    fn advantages_are_group_normalised_with_the_sample_std() {
        // mean 0.5, sample std sqrt(4 * 0.25 / 3) = 0.57735: A = +-0.5 / 0.57735 = +-0.866025.
        let a = group_advantages(&[1.0, 0.0, 0.0, 1.0]);
        for (got, want) in a.iter().zip([0.866025, -0.866025, -0.866025, 0.866025]) {
            assert!((got - want).abs() < 1e-5, "{a:?}");
        }
        assert_eq!(group_advantages(&[0.3; 5]), vec![0.0; 5], "a group that all solve (or all fail) has no advantage");
    }

    /// Rollout 0 (A = +1): r = 1.5 (clipped to 1.2), r = 0.5 (kept: min(0.5, 0.8)); pi_ref = 2 pi_theta on
    /// its second token. Rollout 1 (A = -1): r = 1.5 (kept: min(-1.5, -1.2)), r = 0.5 (clipped: -0.8), and a
    /// padded third token with a ratio of 100 that must not count.
    #[test]
    fn hand_checked_objective_and_gradients() {
        let theta = [[0.4f32.ln(), 0.3f32.ln(), 0.2f32.ln()], [0.6f32.ln(), 0.1f32.ln(), 0.5f32.ln()]];
        let ratio = [[1.5f32, 0.5, 1.0], [1.5, 0.5, 100.0]];
        let old = [
            [theta[0][0] - ratio[0][0].ln(), theta[0][1] - ratio[0][1].ln(), theta[0][2]],
            [theta[1][0] - ratio[1][0].ln(), theta[1][1] - ratio[1][1].ln(), theta[1][2] - ratio[1][2].ln()],
        ];
        let reference = [[theta[0][0], theta[0][1] + 2f32.ln(), theta[0][2]], theta[1]];
        let log_probs = t(theta).require_grad();
        let mask = t([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]]);
        let advantages = Tensor::<A, 1>::from_data(TensorData::from([1.0f32, -1.0]), &Default::default());
        let settings = Grpo { epsilon: 0.2, beta: 0.1 };
        let loss = grpo_loss(log_probs.clone(), t(old), t(reference), mask, advantages, settings);
        // Surrogate: ((1.2 + 0.5) / 2 + (-1.5 - 0.8) / 2) / 2 = -0.15.
        // KL: (2 - ln 2 - 1) on one token of rollout 0: (0.306853 / 2) / 2 = 0.076713, times beta.
        let want = 0.15 + 0.1 * (1.0 - 2f32.ln()) / 4.0;
        let got: f32 = loss.clone().into_scalar();
        assert!((got - want).abs() < 1e-5, "{got} vs {want}");
        // d(-J)/d log pi_theta, each token weighted 1 / (G |o_i|) = 1/4:
        // clipped tokens: 0; kept tokens: -r A / 4; the KL token adds beta * (1 - pi_ref / pi_theta) / 4;
        // padding: 0.
        let grads = loss.backward();
        let g = log_probs.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
        let want = [0.0, -0.5 / 4.0 + 0.1 * (1.0 - 2.0) / 4.0, 0.0, 1.5 / 4.0, 0.0, 0.0];
        for (got, want) in g.iter().zip(want) {
            assert!((got - want).abs() < 1e-5, "{g:?}");
        }
    }

    proptest::proptest! {
        /// Advantages of a group with unequal rewards sum to 0 and have sample std 1 (up to the 1e-6).
        #[test]
        fn advantages_are_centred_and_scaled(rewards in proptest::collection::vec(-3.0f32..3.0, 2..16)) {
            let spread = rewards.iter().cloned().fold(f32::MIN, f32::max) - rewards.iter().cloned().fold(f32::MAX, f32::min);
            proptest::prop_assume!(spread > 1e-2);
            let a = group_advantages(&rewards);
            let n = a.len() as f32;
            proptest::prop_assert!(a.iter().sum::<f32>().abs() < 1e-4);
            let std = (a.iter().map(|x| x * x).sum::<f32>() / (n - 1.0)).sqrt();
            proptest::prop_assert!((std - 1.0).abs() < 1e-3, "{}", std);
        }
    }

    #[test]
    fn on_policy_with_the_reference_the_loss_is_minus_the_mean_advantage_and_kl_is_zero() {
        // pi_theta = pi_old = pi_ref: r = 1, KL = 0, J = mean_i A_i (every token of o_i weighs 1 / |o_i|).
        let lp = t([[-0.5, -1.0, -2.0], [-0.1, -0.2, -0.3]]);
        let mask = t([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]);
        let advantages = Tensor::<A, 1>::from_data(TensorData::from([0.7f32, -0.3]), &Default::default());
        let loss: f32 = grpo_loss(lp.clone(), lp.clone(), lp, mask, advantages, Grpo { epsilon: 0.2, beta: 0.5 }).into_scalar();
        assert!((loss - -(0.7 - 0.3) / 2.0).abs() < 1e-6, "{loss}");
    }
}
