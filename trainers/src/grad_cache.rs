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
//! the gradient equals the plain step's to float rounding (tests in [`crate::dense`] and
//! [`crate::sproutrag`]). The trainer hands each piece's gradients to the skeleton
//! ([`crate::skeleton::Task::cached_step`]), which sums them.
//!
//! The loss is any step's own code, reading its vectors through [`Vectors`] (the dense trainer's
//! corpus-wide and in-document steps, SproutRAG's joint step over one or more whole documents), so the
//! inputs of step 1 are found by running it: a first run over [`Vectors::Recording`] embeds each input it
//! asks for, once and without a graph, and notes it; the second, over [`Vectors::Cached`], reads those rows
//! as leaves. L may have parameters of its own (SproutRAG's SLLM and aggregation weights, which read the
//! unit vectors): their gradients come with step 2's backward pass.

use arbor_models::bert::Bert;
use burn::module::AutodiffModule;
use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;

use crate::encoder::{Noted, Recorded, Recorder, StepEncoder, Vectors};
use crate::skeleton::Terms;

/// The cached step of `loss` (its named terms over the vectors it reads, [`Vectors`]) with `bert` fine-tuned
/// as `encoder` runs it: each piece's gradients (the loss's own parameters', then one per chunk of inputs)
/// go to `add`; returns the terms' values (no graph). A loss that draws random numbers (the SentenceVAE's
/// samples) draws them in both runs, so a cached run's later steps are not the plain run's; it is
/// deterministic otherwise.
pub fn cached_step<B: AutodiffBackend>(
    chunk: usize,
    encoder: &StepEncoder,
    bert: &Bert<B>,
    loss: impl Fn(&Vectors<B>) -> Terms<B>,
    add: &mut dyn FnMut(B::Gradients),
) -> Terms<B> {
    assert!(chunk > 0, "a chunk holds at least one row");
    let (inner, device) = (bert.valid(), Default::default());
    // 1. Every input the loss reads, embedded without a graph a chunk at a time (its terms dropped).
    let constant = |ids: &[&[u32]]| Tensor::from_inner(encoder.pool(&inner, ids, &device));
    let recorder = Recorder::new(chunk, &constant);
    drop(loss(&Vectors::Recording(&recorder)));
    let Noted { at, rows } = recorder.finish();
    assert!(!rows.is_empty(), "a fine-tuning step reads its encoder's vectors");
    let sizes: Vec<usize> = rows.iter().map(|r| r.dims()[0]).collect();
    // 2. The loss over those rows as leaves: its parameters' gradients and g_i = dL/dr_i.
    let reps = Tensor::<B, 2>::from_inner(Tensor::cat(rows, 0).inner()).require_grad();
    let recorded = Recorded { at, reps: reps.clone() };
    let terms = loss(&Vectors::Cached(&recorded));
    let logged = terms.iter().map(|(name, t)| (*name, Tensor::from_inner(t.clone().inner()))).collect();
    let total = terms.into_iter().map(|(_, t)| t).reduce(|a, b| a + b).expect("a step has a loss term");
    let grads = total.backward();
    let g = reps.grad(&grads);
    add(grads);
    // 3. Each chunk again, with a graph: the gradient of sum_i f(x_i) . g_i is its share of dL/dtheta.
    if let Some(g) = g {
        let mut by_row: Vec<&[u32]> = vec![&[]; recorded.at.len()];
        for (ids, &row) in &recorded.at {
            by_row[row] = ids;
        }
        let mut first = 0;
        for size in sizes {
            let rows = first..first + size;
            first = rows.end;
            let embedded = encoder.pool(bert, &by_row[rows.clone()], &device);
            add((embedded * Tensor::from_inner(g.clone().slice([rows]))).sum().backward());
        }
    }
    logged
}

/// The cached step's tests: step 0 of `task` plain (its terms, the gradients of their sum) and by
/// [`crate::skeleton::Task::cached_step`] (its terms, the sum of its pieces' gradients), and how many pieces
/// the cached step handed on.
#[cfg(test)]
pub(crate) fn plain_and_cached<B: AutodiffBackend, T: crate::skeleton::Task<B>>(
    task: &mut T,
    model: &T::Model,
) -> ((crate::skeleton::Step<B>, burn::optim::GradientsParams), (crate::skeleton::Step<B>, burn::optim::GradientsParams), usize) {
    use burn::optim::{GradientsAccumulator, GradientsParams};
    let plain = task.step(model, 0).unwrap();
    let mut grads = plain.terms.iter().map(|(_, t)| t.clone()).reduce(|a, b| a + b).unwrap().backward();
    let plain_grads = GradientsParams::from_module(&mut grads, model);
    let (mut sum, mut pieces) = (GradientsAccumulator::<T::Model>::new(), 0);
    let cached = task.cached_step(model, 0, &mut |mut g| {
        pieces += 1;
        sum.accumulate(model, GradientsParams::from_module(&mut g, model));
    });
    let cached = cached.expect("a fine-tuning step with grad_cache is cached").unwrap();
    ((plain, plain_grads), (cached, sum.grads()), pieces)
}
