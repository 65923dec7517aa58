//! L_node, the node-level contrastive loss of arbor's SproutRAG trainer (arbor's addition; the paper's objective
//! ranks units only, so nothing in it teaches a merged node not to outrank its own leaves). Per query q,
//! over one tree of its document (built from the current M and held fixed), the positive p_q is the
//! smallest node covering q's gold and the negatives N_q are p_q's ancestors and the siblings along the
//! path (`arbor_eval::structures::node_targets`); node embeddings are the progressive ones, so they carry gradient
//! to the unit embeddings:
//!
//! ```text
//! L_node = -(1/Q) sum_q log( exp(cos(q, p_q) / tau) / sum_{c in {p_q} + N_q} exp(cos(q, c) / tau) )
//! ```
//!
//! # Shapes
//! - `queries`: `[Q, dim]`; `nodes`: `[C, dim]` (every node any query reads); `positive`: `[Q]` row of
//!   each query's positive in `nodes`; `candidates`: `[Q, C]`, true where a node is the query's positive
//!   or one of its negatives; returns `[1]`

use burn::tensor::activation::log_softmax;
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor};

use crate::info_nce::normalize;

pub fn node_contrastive<B: Backend>(
    queries: Tensor<B, 2>,
    nodes: Tensor<B, 2>,
    positive: Tensor<B, 1, Int>,
    candidates: Tensor<B, 2, Bool>,
    tau: f64,
) -> Tensor<B, 1> {
    let [q] = positive.dims();
    let logits = normalize(queries).matmul(normalize(nodes).transpose()) / tau; // [Q, C]
    // Nodes outside a query's candidates take no part in its softmax.
    let logits = logits.mask_fill(candidates.bool_not(), -1e9);
    log_softmax(logits, 1).gather(1, positive.reshape([q, 1])).mean().neg()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::t;
    use arbor_models::DefaultBackend as B;
    use burn::backend::Autodiff;
    use burn::tensor::TensorData;

    fn mask<B2: Backend>(v: &[bool], rows: usize) -> Tensor<B2, 2, Bool> {
        Tensor::from_data(TensorData::new(v.to_vec(), [rows, v.len() / rows]), &Default::default())
    }

    fn ids<B2: Backend>(v: &[i64]) -> Tensor<B2, 1, Int> {
        Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), &Default::default())
    }

    /// A hand-built tree over leaves e0 = (1, 0) and e1 = (0, 1): its root is (1/2, 1/2), cosine 1/sqrt2
    /// to each leaf. Query (1, 0), gold in leaf 0: positive leaf 0, negatives its sibling (leaf 1) and
    /// its ancestor (the root).
    fn case<B2: Backend>() -> (Tensor<B2, 2>, Tensor<B2, 2>) {
        (t(&[1.0, 0.0], 1), t(&[1.0, 0.0, 0.0, 1.0, 0.5, 0.5], 3))
    }

    #[test]
    fn hand_checked_value_on_a_two_leaf_tree() {
        let (q, nodes) = case::<B>();
        let tau = 0.5;
        let got: f32 = node_contrastive(q, nodes, ids(&[0]), mask(&[true, true, true], 1), tau).into_scalar();
        // Logits 1/tau, 0, (1/sqrt2)/tau.
        let l = [2.0f32, 0.0, 2.0 / 2f32.sqrt()];
        let want = -(l[0] - l.iter().map(|x| x.exp()).sum::<f32>().ln());
        assert!((got - want).abs() < 1e-5, "{got} vs {want}");
        // Without the ancestor among the candidates only the sibling competes.
        let (q, nodes) = case::<B>();
        let got: f32 = node_contrastive(q, nodes, ids(&[0]), mask(&[true, true, false], 1), tau).into_scalar();
        assert!((got - (1.0 + (-2f32).exp()).ln()).abs() < 1e-5, "{got}");
    }

    #[test]
    fn gradient_lowers_the_ancestor_below_the_positive() {
        // d L / d logit_c = p_c - [c = positive]: with logits l = cos / tau, the positive's is p_0 - 1 < 0 and
        // the ancestor's p_2 > 0, so gradient descent raises the positive's cosine and lowers the ancestor's.
        let (q, nodes) = case::<Autodiff<B>>();
        let nodes = nodes.require_grad();
        let tau = 0.5;
        let loss = node_contrastive(q, nodes.clone(), ids(&[0]), mask(&[true, true, true], 1), tau);
        let g = nodes.grad(&loss.backward()).unwrap().into_data().to_vec::<f32>().unwrap();
        // Hand-derived: with cos(q, x) = x_0 / |x|, d cos / d x = (q_hat - cos x_hat) / |x|.
        let l = [2.0f32, 0.0, 2.0 / 2f32.sqrt()];
        let z: f32 = l.iter().map(|x| x.exp()).sum();
        let p: Vec<f32> = l.iter().map(|x| x.exp() / z).collect();
        // Leaf 0 = q_hat: its cosine's gradient is 0 (it is already aligned). Leaf 1: (1, 0) / 1. Root:
        // ((1, 0) - (1/sqrt2) (1/sqrt2, 1/sqrt2)) / (1/sqrt2) = (1/sqrt2, -1/sqrt2).
        let want = [0.0, 0.0, p[1] / tau as f32, 0.0, p[2] / tau as f32 / 2f32.sqrt(), -p[2] / tau as f32 / 2f32.sqrt()];
        for (a, b) in g.iter().zip(want) {
            assert!((a - b).abs() < 1e-5, "{g:?} vs {want:?}");
        }
    }

    #[test]
    fn masked_nodes_get_no_gradient_and_queries_average() {
        let q = t::<Autodiff<B>>(&[1.0, 0.0, 0.0, 1.0], 2);
        let nodes = t::<Autodiff<B>>(&[1.0, 0.0, 0.0, 1.0, 0.5, 0.5], 3).require_grad();
        // Query 0: positive 0 vs node 2; query 1: positive 1 vs node 2. Neither reads the other's positive.
        let m = mask(&[true, false, true, false, true, true], 2);
        let loss = node_contrastive(q, nodes.clone(), ids(&[0, 1]), m, 1.0);
        let value: f32 = loss.clone().into_scalar();
        let one = (1.0 + (1.0 / 2f32.sqrt() - 1.0).exp()).ln();
        assert!((value - one).abs() < 1e-5, "{value} vs {one}");
        let g = nodes.grad(&loss.backward()).unwrap().into_data().to_vec::<f32>().unwrap();
        assert!(g[..4].iter().all(|x| x.abs() < 1e-6), "the positives are aligned: {g:?}");
    }
}
