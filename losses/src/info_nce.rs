//! InfoNCE (van den Oord et al., 2018) as SproutRAG trains retrieval (Section 4.1):
//!
//! ```text
//! s(q, p)  = cos(q, p)
//! L_ret    = -(1/N) sum_i log( exp(s(q_i, p_i) / tau) / sum_j exp(s(q_i, c_j) / tau) )
//! ```
//!
//! The candidates c_j are the N positives of the batch (in-batch negatives) followed by any hard
//! negatives (e.g. other units of the same document), shared by every query. tau defaults to 0.05.
//!
//! # Shapes
//! - `queries`, `positives`: `[N, dim]`; `hard_negatives`: `[M, dim]`; returns `[1]`

use burn::tensor::activation::log_softmax;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};

pub fn info_nce<B: Backend>(queries: Tensor<B, 2>, positives: Tensor<B, 2>, hard_negatives: Option<Tensor<B, 2>>, tau: f64) -> Tensor<B, 1> {
    let [n, _] = queries.dims();
    let candidates = match hard_negatives {
        Some(h) => Tensor::cat(vec![positives, h], 0),
        None => positives,
    };
    let logits = normalize(queries).matmul(normalize(candidates).transpose()) / tau; // [N, N + M]
    let log_p = log_softmax(logits, 1);
    let targets = Tensor::<B, 1, Int>::arange(0..n as i64, &log_p.device()).reshape([n, 1]);
    log_p.gather(1, targets).mean().neg()
}

/// Rows scaled to unit length.
pub(crate) fn normalize<B: Backend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
    let norm = x.clone().powi_scalar(2).sum_dim(1).sqrt().clamp_min(1e-12);
    x / norm
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_models::DefaultBackend as B;
    use burn::tensor::TensorData;

    fn t(v: &[f32], rows: usize) -> Tensor<B, 2> {
        Tensor::from_data(TensorData::new(v.to_vec(), [rows, v.len() / rows]), &Default::default())
    }

    fn scalar(x: Tensor<B, 1>) -> f32 {
        x.into_scalar()
    }

    #[test]
    fn hand_checked_values() {
        // Orthogonal pairs, tau = 1: logits = I, loss = -log(e / (e + 1)) = log(1 + 1/e).
        let q = t(&[1.0, 0.0, 0.0, 2.0], 2);
        let got = scalar(info_nce(q.clone(), t(&[3.0, 0.0, 0.0, 1.0], 2), None, 1.0));
        assert!((got - (1.0 + (-1.0f32).exp()).ln()).abs() < 1e-6, "{got}");
        // A hard negative equal to the first query's positive direction: query 0 now has two logits of 1.
        let hard = t(&[1.0, 0.0], 1);
        let got = scalar(info_nce(q, t(&[1.0, 0.0, 0.0, 1.0], 2), Some(hard), 1.0));
        let e = 1f32.exp();
        let want = (-(e / (2.0 * e + 1.0)).ln() - (e / (e + 2.0)).ln()) / 2.0;
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    }

    #[test]
    fn lower_temperature_sharpens_a_correct_ranking() {
        let q = t(&[1.0, 0.1, 0.1, 1.0], 2);
        let p = t(&[1.0, 0.0, 0.0, 1.0], 2);
        let warm = scalar(info_nce(q.clone(), p.clone(), None, 1.0));
        let cold = scalar(info_nce(q, p, None, 0.05));
        assert!(cold < warm && cold >= 0.0);
    }
}
