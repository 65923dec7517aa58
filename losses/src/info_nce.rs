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
//! [`info_nce_over`] is the same loss over a candidate list the caller builds (the batch's positives and
//! negatives drawn from the whole corpus, as sentence-transformers' MultipleNegativesRankingLoss and
//! Tevatron train), each query naming its positive among them, and with candidates a query must not be
//! pushed from (false negatives: another query's positive that overlaps this query's gold) left out of
//! that query's denominator:
//!
//! ```text
//! L = -(1/N) sum_i log( exp(s(q_i, c_t(i)) / tau) / sum_{j not excluded for i} exp(s(q_i, c_j) / tau) )
//! ```
//!
//! # Shapes
//! - `queries`, `positives`: `[N, dim]`; `hard_negatives`: `[M, dim]`; returns `[1]`
//! - [`info_nce_over`]: `queries` `[N, dim]`, `candidates` `[C, dim]`, N targets; returns `[1]`

use burn::tensor::activation::log_softmax;
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor, TensorData};

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

/// InfoNCE of each query `i` against `candidates`, its positive `targets[i]`; each `(i, j)` of
/// `excluded` takes candidate `j` out of query `i`'s denominator (a pair naming a query's own target is
/// an error of the caller's and panics).
pub fn info_nce_over<B: Backend>(
    queries: Tensor<B, 2>,
    candidates: Tensor<B, 2>,
    targets: &[usize],
    excluded: &[(usize, usize)],
    tau: f64,
) -> Tensor<B, 1> {
    let [n, _] = queries.dims();
    let c = candidates.dims()[0];
    assert_eq!(targets.len(), n, "one target per query");
    let device = queries.device();
    let mut logits = normalize(queries).matmul(normalize(candidates).transpose()) / tau; // [N, C]
    if !excluded.is_empty() {
        let mut mask = vec![false; n * c];
        for &(i, j) in excluded {
            assert_ne!(targets[i], j, "query {i}'s positive cannot be excluded from its own denominator");
            mask[i * c + j] = true;
        }
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(mask, [n, c]), &device);
        logits = logits.mask_fill(mask, f32::NEG_INFINITY);
    }
    let log_p = log_softmax(logits, 1);
    let targets = Tensor::<B, 1, Int>::from_data(TensorData::new(targets.iter().map(|&t| t as i64).collect::<Vec<_>>(), [n]), &device);
    log_p.gather(1, targets.reshape([n, 1])).mean().neg()
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

    /// [`info_nce_over`] with the positives first and targets 0..N is [`info_nce`]; an excluded candidate
    /// leaves its query's denominator (hand-checked), and its gradient reaches no excluded row.
    #[test]
    fn over_a_candidate_list_with_exclusions() {
        let q = t(&[1.0, 0.0, 0.0, 2.0], 2);
        let p = t(&[1.0, 0.0, 0.0, 1.0], 2);
        let hard = t(&[1.0, 0.0], 1);
        let plain = scalar(info_nce(q.clone(), p.clone(), Some(hard.clone()), 1.0));
        let candidates = Tensor::cat(vec![p, hard], 0);
        let over = scalar(info_nce_over(q.clone(), candidates.clone(), &[0, 1], &[], 1.0));
        assert!((plain - over).abs() < 1e-6, "{plain} vs {over}");
        // Query 0 with candidate 2 (its positive's direction) excluded: -log(e / (e + 1)); query 1 as before.
        let got = scalar(info_nce_over(q.clone(), candidates.clone(), &[0, 1], &[(0, 2)], 1.0));
        let e = 1f32.exp();
        let want = (-(e / (e + 1.0)).ln() - (e / (e + 2.0)).ln()) / 2.0;
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        // Targets need not be the first rows: candidates reversed, targets follow.
        let reversed = candidates.clone().select(0, Tensor::<B, 1, Int>::from_data([2i64, 1, 0], &Default::default()));
        let moved = scalar(info_nce_over(q, reversed, &[2, 1], &[(0, 0)], 1.0));
        assert!((moved - want).abs() < 1e-6, "{moved} vs {want}");
    }

    #[test]
    #[should_panic(expected = "cannot be excluded")]
    fn a_query_s_own_positive_is_never_excluded() {
        let q = t(&[1.0, 0.0], 1);
        info_nce_over(q.clone(), q, &[0], &[(0, 0)], 1.0);
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
