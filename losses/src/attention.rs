//! SproutRAG's attention-structure regulariser (Section 4.2):
//!
//! ```text
//! L_attn = -(1/|G|) sum_{(i,j) in G} log( max(M_ij, eps) )
//! ```
//!
//! where M is the symmetrised aggregated attention ((A_ij + A_ji) / 2, from the HeadAggregator) and G the
//! gold merge pairs of the document (adjacent units of one paragraph or section). It pulls the
//! (layer, head) weights toward heads whose attention follows the document's structure.
//!
//! # Shapes
//! - `m`: `[n, n]`; `pairs`: indices into it (at least one); returns `[1]`

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

pub fn attention_structure<B: Backend>(m: Tensor<B, 2>, pairs: &[(usize, usize)], eps: f64) -> Tensor<B, 1> {
    assert!(!pairs.is_empty(), "L_attn needs at least one gold merge pair");
    let [n, _] = m.dims();
    let flat: Vec<i64> = pairs.iter().map(|&(i, j)| (i * n + j) as i64).collect();
    let index = Tensor::<B, 1, Int>::from_data(TensorData::new(flat, [pairs.len()]), &m.device());
    m.reshape([n * n]).select(0, index).clamp_min(eps).log().mean().neg()
}

/// L_attn when M is a fixed attention mixed by head weights w: only M at the gold pairs is read, and
/// M_ij = sum_{l,h} w_{l,h} (A^{(l,h)}_ij + A^{(l,h)}_ji) / 2 (i != j), so the loss needs the pairs'
/// symmetrised per-head attention S, `[pairs, layers * heads]`, not A: M_G = S w. Equal to
/// `attention_structure(HeadAggregator::forward(A), pairs)`, in O(|G| L H) memory instead of O(L H n^2).
///
/// # Shapes
/// - `head_weights`: `[layers * heads]`; `pair_attention`: `[pairs, layers * heads]` (at least one pair);
///   returns `[1]`
pub fn attention_structure_at_pairs<B: Backend>(head_weights: Tensor<B, 1>, pair_attention: Tensor<B, 2>, eps: f64) -> Tensor<B, 1> {
    let [g, lh] = pair_attention.dims();
    assert!(g > 0, "L_attn needs at least one gold merge pair");
    pair_attention.matmul(head_weights.reshape([lh, 1])).reshape([g]).clamp_min(eps).log().mean().neg()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_models::DefaultBackend;
    use arbor_models::aggregator::{AggregationInit, HeadAggregator};
    use burn::backend::Autodiff;
    use burn::module::Param;

    type B = DefaultBackend;

    #[test]
    fn hand_checked_values_and_the_eps_clamp() {
        let m = Tensor::<B, 2>::from_data(TensorData::new(vec![0.0, 0.5, 0.25, 0.5, 0.0, 0.0, 0.25, 0.0, 0.0], [3, 3]), &Default::default());
        let got: f32 = attention_structure(m.clone(), &[(0, 1), (0, 2)], 1e-6).into_scalar();
        assert!((got - (-(0.5f32.ln() + 0.25f32.ln()) / 2.0)).abs() < 1e-6);
        let clamped: f32 = attention_structure(m, &[(1, 2)], 1e-6).into_scalar();
        assert!((clamped - (-(1e-6f32).ln())).abs() < 1e-3, "{clamped}");
    }

    #[test]
    fn the_loss_at_pairs_equals_the_loss_on_the_aggregated_matrix() {
        let device = Default::default();
        // 2 layers x 3 heads over 4 units, arbitrary values; pairs in both orders.
        let (l, h, n) = (2, 3, 4);
        let values: Vec<f32> = (0..l * h * n * n).map(|i| ((i * 37 % 101) as f32 + 1.0) / 101.0).collect();
        let a = Tensor::<B, 4>::from_data(TensorData::new(values.clone(), [l, h, n, n]), &device);
        let pairs = [(0, 1), (2, 1), (3, 0)];
        let agg = HeadAggregator::<B>::new(l, h, AggregationInit::Normal, &device);
        let want: f32 = attention_structure(agg.forward(a), &pairs, 1e-6).into_scalar();
        let at = |p: usize, i: usize, j: usize| values[(p * n + i) * n + j];
        let s: Vec<f32> = pairs.iter().flat_map(|&(i, j)| (0..l * h).map(move |p| (at(p, i, j) + at(p, j, i)) / 2.0)).collect();
        let s = Tensor::<B, 2>::from_data(TensorData::new(s, [pairs.len(), l * h]), &device);
        let got: f32 = attention_structure_at_pairs(agg.head_weights().reshape([l * h]), s, 1e-6).into_scalar();
        assert!((got - want).abs() < 1e-5, "{got} vs {want}");
    }

    #[test]
    fn a_gradient_step_moves_head_weight_toward_the_structural_head() {
        type A = Autodiff<B>;
        let device = Default::default();
        // Two heads over 3 units; head 1 attends along the gold pair (0, 1), head 0 does not.
        let a = Tensor::<A, 4>::from_data(
            TensorData::new(vec![0.1, 0.1, 0.8, 0.1, 0.1, 0.8, 0.8, 0.1, 0.1, 0.1, 0.8, 0.1, 0.8, 0.1, 0.1, 0.4, 0.4, 0.2], [1, 2, 3, 3]),
            &device,
        );
        let agg = HeadAggregator::<A>::new(1, 2, AggregationInit::Uniform, &device);
        let loss = attention_structure(agg.forward(a.clone()), &[(0, 1)], 1e-6);
        let grads = loss.clone().backward();
        let g = agg.alpha.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
        assert!(g[1] < 0.0 && g[0] > 0.0, "descending the gradient raises head 1: {g:?}");
        let stepped = agg.alpha.val().inner() - Tensor::from_data(TensorData::new(g, [1, 2]), &device);
        let after = HeadAggregator { alpha: Param::from_tensor(Tensor::<A, 2>::from_inner(stepped)) };
        let new_loss: f32 = attention_structure(after.forward(a), &[(0, 1)], 1e-6).into_scalar();
        assert!(new_loss < loss.into_scalar());
    }
}
