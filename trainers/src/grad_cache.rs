//! GradCache (Gao, Zhang, Han and Callan, 2021, "Scaling Deep Contrastive Learning Batch Size under Memory
//! Limited Setup"; sentence-transformers' CachedMultipleNegativesRankingLoss): a contrastive step over a
//! batch larger than memory, with the plain step's gradient.
//!
//! ```text
//! 1. r_i = f(x_i) for every input, `chunk` rows at a time, without a graph
//! 2. L(r) over the whole batch and g_i = dL/dr_i       (a graph over the representations only)
//! 3. per chunk C: backward of sum_{i in C} f(x_i) . g_i  (a graph over one chunk's encoder)
//!    sum_C d/dtheta [ sum_{i in C} f(x_i) . g_i ] = sum_i (dL/dr_i) (dr_i/dtheta) = dL/dtheta
//! ```
//!
//! Memory holds one chunk's activations and the batch's representations, whatever the batch size. The
//! encoder runs twice (once without a graph); with no dropout in arbor's encoder the replay is exact, so
//! the gradient equals the plain step's to float rounding (a test in [`crate::dense`]). The trainer hands each
//! chunk's gradients to the skeleton ([`crate::skeleton::Task::cached_step`]), which sums them.

use std::ops::Range;

use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;

/// One side of a contrastive batch (its queries, or its candidates): `rows` inputs, embedded a range at
/// a time with a graph (`embed`) or without (`embed_inner`, the same function on the inner backend).
pub struct Side<'a, B: AutodiffBackend> {
    pub rows: usize,
    pub embed: Box<dyn Fn(Range<usize>) -> Tensor<B, 2> + 'a>,
    pub embed_inner: Box<dyn Fn(Range<usize>) -> Tensor<B::InnerBackend, 2> + 'a>,
}

/// The cached step: `loss` of every side's representations (in `sides` order), its gradient handed to
/// `add` one chunk of one side at a time; returns the loss's value (no graph).
pub fn cached_step<B: AutodiffBackend>(
    sides: &[Side<B>],
    chunk: usize,
    loss: impl FnOnce(Vec<Tensor<B, 2>>) -> Tensor<B, 1>,
    add: &mut dyn FnMut(B::Gradients),
) -> Tensor<B, 1> {
    assert!(chunk > 0, "a chunk holds at least one row");
    let ranges = |rows: usize| (0..rows).step_by(chunk).map(move |s| s..(s + chunk).min(rows));
    let reps: Vec<Tensor<B, 2>> = sides
        .iter()
        .map(|side| Tensor::from_inner(Tensor::cat(ranges(side.rows).map(|r| (side.embed_inner)(r)).collect(), 0)).require_grad())
        .collect();
    let value = loss(reps.clone());
    let grads = value.backward();
    for (side, rep) in sides.iter().zip(&reps) {
        let Some(g) = rep.grad(&grads) else { continue };
        for r in ranges(side.rows) {
            let surrogate = ((side.embed)(r.clone()) * Tensor::from_inner(g.clone().slice([r]))).sum();
            add(surrogate.backward());
        }
    }
    Tensor::from_inner(value.inner())
}
