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
//! Memory holds one chunk's activations and the batch's representations, whatever the batch size; rows
//! are taken in order of length, so a chunk pads its inputs to a length near their own. The
//! encoder runs twice (once without a graph); with no dropout in arbor's encoder the replay is exact, so
//! the gradient equals the plain step's to float rounding (a test in [`crate::dense`]). The trainer hands each
//! chunk's gradients to the skeleton ([`crate::skeleton::Task::cached_step`]), which sums them.

use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;

/// One side of a contrastive batch (its queries, or its candidates): rows embedded a few at a time, by
/// their indices, with a graph (`embed`) or without (`embed_inner`, the same function on the inner backend).
/// `order` is the order rows are taken in, chunk by chunk (a permutation of `0..rows`): rows of like length
/// together, so a chunk pads little.
pub struct Side<'a, B: AutodiffBackend> {
    pub order: Vec<usize>,
    pub embed: Box<dyn Fn(&[usize]) -> Tensor<B, 2> + 'a>,
    pub embed_inner: Box<dyn Fn(&[usize]) -> Tensor<B::InnerBackend, 2> + 'a>,
}

/// A [`Side::order`] taking `rows` shortest first by `len(row)` (ties in row order).
pub fn by_length(rows: usize, len: impl Fn(usize) -> usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows).collect();
    order.sort_by_key(|&r| (len(r), r));
    order
}

/// The cached step: `loss` of every side's representations (each in row order, `sides` in order), its
/// gradient handed to `add` one chunk of one side at a time; returns the loss's value (no graph).
pub fn cached_step<B: AutodiffBackend>(
    sides: &[Side<B>],
    chunk: usize,
    loss: impl FnOnce(Vec<Tensor<B, 2>>) -> Tensor<B, 1>,
    add: &mut dyn FnMut(B::Gradients),
) -> Tensor<B, 1> {
    assert!(chunk > 0, "a chunk holds at least one row");
    let reps: Vec<Tensor<B, 2>> = sides
        .iter()
        .map(|side| {
            let taken = Tensor::cat(side.order.chunks(chunk).map(|rows| (side.embed_inner)(rows)).collect(), 0);
            // Back to row order: row r was taken at place `at[r]`.
            let mut at = vec![0; side.order.len()];
            for (place, &r) in side.order.iter().enumerate() {
                at[r] = place;
            }
            let device = taken.device();
            Tensor::from_inner(taken.select(0, crate::encoder::index(&at, &device))).require_grad()
        })
        .collect();
    let value = loss(reps.clone());
    let grads = value.backward();
    for (side, rep) in sides.iter().zip(&reps) {
        let Some(g) = rep.grad(&grads) else { continue };
        for rows in side.order.chunks(chunk) {
            let g_rows = g.clone().select(0, crate::encoder::index(rows, &g.device()));
            let surrogate = ((side.embed)(rows) * Tensor::from_inner(g_rows)).sum();
            add(surrogate.backward());
        }
    }
    Tensor::from_inner(value.inner())
}
