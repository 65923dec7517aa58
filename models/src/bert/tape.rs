//! The BERT encoder's gradients by hand on the CPU: the forward pass of [`super::cpu`] (the same
//! equations as [`super::model`]: Devlin et al., 2019, post-norm residual blocks, exact erf GELU) keeping
//! what its backward pass reads (a tape), and that backward pass, written out layer by layer on plain
//! `f32` buffers with the same `gemm` kernels and the same packing (no padding: a batch's sequences end to
//! end, attention per sequence over its own length).
//!
//! Per block, with `x` its input (`T` tokens by `H`), the forward pass is
//! `qkv = x W_qkv + b`, per sequence and head `P = softmax(Q Kᵀ / sqrt(d))`, `c = P V`,
//! `h₁ = LN₁(c W_o + b_o + x)`, `u = h₁ W_i + b_i`, `y = LN₂(gelu(u) W_2 + b_2 + h₁)`, and the backward
//! pass runs the chain rule back through it: `dS = P ⊙ (dP − rowsum(dP ⊙ P))` for the softmax,
//! `dx = rstd (γ ⊙ dy − mean(γ ⊙ dy) − x̂ mean(γ ⊙ dy ⊙ x̂))` for a layer norm, `gelu'(u) = Φ(u) + u φ(u)`,
//! and for every dense layer `dW = xᵀ dy`, `db = Σ dy`, `dx = dy Wᵀ`. The embeddings' gradient is their
//! layer norm's, scattered back to the rows the tokens read. Pooling (mean, CLS, last token) and the L2
//! normalisation close it. [`super::autodiff`] hands these to Burn's autodiff as its operations, so an
//! optimizer steps on them as on any other gradient; `tests/integration/grad.rs` holds them equal to Burn's
//! own on the real encoder.

use std::ops::Range;

use rayon::prelude::*;

use super::attention::{ONE_THREAD, Probs, Relative, SCRATCH, Shared, attention, head_tasks};
use super::cpu::{Accumulate, CpuBert, Dense, Layer, Norm, View, erf, exp_neg, gelu_all, matmul_bias, matmul_bias_residual, multiversion, product};
use crate::pooling::Pooling;

/// What a layer norm's backward pass reads: each row's normalised values `x̂` and `1 / sqrt(var + eps)`.
#[derive(Debug, Clone, Default)]
pub(super) struct NormTape {
    hat: Vec<f32>,
    rstd: Vec<f32>,
}

/// A layer norm's gradients: the input's and the parameters'.
#[derive(Debug, Clone)]
pub(super) struct NormGrads {
    pub(super) gamma: Vec<f32>,
    pub(super) beta: Vec<f32>,
}

/// A dense layer's gradients, `weight` `[input, output]` as Burn lays it out.
#[derive(Debug, Clone)]
pub(super) struct DenseGrads {
    pub(super) weight: Vec<f32>,
    pub(super) bias: Vec<f32>,
}

/// What one block's backward pass reads from its forward pass.
#[derive(Debug, Clone)]
pub(super) struct LayerTape {
    x: Vec<f32>,
    qkv: Vec<f32>,
    /// Per sequence, every head's probabilities `[heads, n, n]`.
    probs: Vec<Vec<f32>>,
    context: Vec<f32>,
    norm1: NormTape,
    h1: Vec<f32>,
    u: Vec<f32>,
    g: Vec<f32>,
    norm2: NormTape,
}

/// One block's parameter gradients (query, key and value fused as in [`Layer`]), and its share of the
/// relative position bias table's `[buckets, heads]` where the family has one.
#[derive(Debug, Clone)]
pub(super) struct LayerGrads {
    pub(super) qkv: DenseGrads,
    pub(super) attention_output: DenseGrads,
    pub(super) attention_norm: NormGrads,
    pub(super) intermediate: DenseGrads,
    pub(super) output: DenseGrads,
    pub(super) output_norm: NormGrads,
    pub(super) relative: Option<Vec<f32>>,
}

/// Layer norm of each row of `x` in place (as [`super::cpu`] computes it), keeping its tape.
fn norm_forward(x: &mut [f32], n: &Norm) -> NormTape {
    let h = n.gamma.len();
    let mut hat = vec![0.0f32; x.len()];
    let mut rstd = vec![0.0f32; x.len() / h];
    let block = 16 * h;
    x.par_chunks_mut(block).zip(hat.par_chunks_mut(block)).zip(rstd.par_chunks_mut(16)).for_each(|((x, hat), rstd)| norm_rows(x, hat, rstd, n));
    NormTape { hat, rstd }
}

multiversion! {
    /// [`norm_forward`] over a block of rows: each row normalised in place, its `hat` and `1 / std` kept.
    fn norm_rows(x: &mut [f32], hat: &mut [f32], rstd: &mut [f32], n: &Norm) {
        let h = n.gamma.len();
        for ((row, hat), r) in x.chunks_exact_mut(h).zip(hat.chunks_exact_mut(h)).zip(rstd) {
            let len = h as f32;
            let mean = row.iter().sum::<f32>() / len;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / len;
            *r = 1.0 / (var + n.eps).sqrt();
            for j in 0..h {
                hat[j] = (row[j] - mean) * *r;
                row[j] = hat[j] * n.gamma[j] + n.beta[j];
            }
        }
    }
}

/// The backward pass of [`norm_forward`]: `dy` becomes the input's gradient in place; the parameters'.
fn norm_backward(dy: &mut [f32], tape: &NormTape, n: &Norm) -> NormGrads {
    let h = n.gamma.len();
    let mut grads = NormGrads { gamma: vec![0.0; h], beta: vec![0.0; h] };
    norm_param_grads(dy, &tape.hat, &mut grads);
    let block = 16 * h;
    dy.par_chunks_mut(block)
        .zip(tape.hat.par_chunks(block))
        .zip(tape.rstd.par_chunks(16))
        .for_each(|((d, hat), rstd)| norm_input_grads(d, hat, rstd, n));
    grads
}

multiversion! {
    /// The layer norm's parameter gradients, summed over every row of `dy` in row order.
    fn norm_param_grads(dy: &[f32], hat: &[f32], grads: &mut NormGrads) {
        let h = grads.gamma.len();
        for (d, hat) in dy.chunks_exact(h).zip(hat.chunks_exact(h)) {
            for j in 0..h {
                grads.gamma[j] += d[j] * hat[j];
                grads.beta[j] += d[j];
            }
        }
    }
}

multiversion! {
    /// The layer norm's input gradient over a block of rows, in place.
    fn norm_input_grads(dy: &mut [f32], hat: &[f32], rstd: &[f32], n: &Norm) {
        let h = n.gamma.len();
        for ((d, hat), &r) in dy.chunks_exact_mut(h).zip(hat.chunks_exact(h)).zip(rstd) {
            let len = h as f32;
            let (mut mean, mut mean_hat) = (0.0f32, 0.0f32);
            for j in 0..h {
                let g = d[j] * n.gamma[j];
                mean += g;
                mean_hat += g * hat[j];
            }
            let (mean, mean_hat) = (mean / len, mean_hat / len);
            for j in 0..h {
                d[j] = r * (d[j] * n.gamma[j] - mean - hat[j] * mean_hat);
            }
        }
    }
}

multiversion! {
    /// Column sums of `rows` (`width` wide): a bias's gradient.
    fn column_sums(rows: &[f32], width: usize) -> Vec<f32> {
        let mut sums = vec![0.0f32; width];
        for row in rows.chunks_exact(width) {
            for (s, v) in sums.iter_mut().zip(row) {
                *s += v;
            }
        }
        sums
    }
}

/// A dense layer's gradients from its input `x` `[T, input]` and its output's gradient `dy` `[T, output]`:
/// `xᵀ dy` and `Σ dy`.
fn dense_grads(x: &[f32], dy: &[f32], d: &Dense) -> DenseGrads {
    let t = dy.len() / d.output;
    assert!(x.len() == t * d.input && dy.len() == t * d.output);
    let mut weight = vec![0.0f32; d.input * d.output];
    // xᵀ: x read transposed (row stride 1, column stride input).
    let (dst, lhs, rhs) = (View::rows(weight.as_mut_ptr(), d.output), View { at: x.as_ptr(), rs: 1, cs: d.input }, View::rows(dy.as_ptr(), d.output));
    // SAFETY: x is [T, input] and dy [T, output] (asserted), weight [input, output]; xᵀ's element (i, t)
    // is x[t input + i].
    unsafe { product([d.input, d.output, t], dst, lhs, rhs, 1.0, Accumulate::No, gemm::Parallelism::Rayon(0)) };
    DenseGrads { weight, bias: column_sums(dy, d.output) }
}

/// `dx (+)= dy Wᵀ`, the gradient a dense layer hands its input: `dy` `[T, output]`, `dx` `[T, input]`.
fn dense_input_grad(dy: &[f32], d: &Dense, dx: &mut [f32], accumulate: Accumulate) {
    let t = dy.len() / d.output;
    assert!(dx.len() == t * d.input && d.w.len() == d.input * d.output);
    // Wᵀ: W `[input, output]` read transposed (row stride 1, column stride output).
    let (dst, lhs, rhs) = (View::rows(dx.as_mut_ptr(), d.input), View::rows(dy.as_ptr(), d.output), View { at: d.w.as_ptr(), rs: 1, cs: d.output });
    // SAFETY: dy is [T, output], dx [T, input] (asserted), W [input, output]; Wᵀ's element (o, i) is
    // W[i output + o].
    unsafe { product([t, d.input, d.output], dst, lhs, rhs, 1.0, accumulate, gemm::Parallelism::Rayon(0)) };
}

/// `dy ⊙ gelu'(u)` in place: `gelu'(u) = Φ(u) + u φ(u)`.
fn gelu_backward(dy: &mut [f32], u: &[f32]) {
    dy.par_chunks_mut(4096).zip(u.par_chunks(4096)).for_each(|(d, u)| gelu_grads(d, u));
}

multiversion! {
    /// [`gelu_backward`] over a block.
    fn gelu_grads(dy: &mut [f32], u: &[f32]) {
        const INV_SQRT_2PI: f32 = 0.398_942_3;
        for (d, &u) in dy.iter_mut().zip(u) {
            let cdf = 0.5 * (1.0 + erf(u * std::f32::consts::FRAC_1_SQRT_2));
            *d *= cdf + u * INV_SQRT_2PI * exp_neg(-0.5 * u * u);
        }
    }
}

/// One block forward from its input `x` `[T, hidden]` (the relative position bias added to its scores
/// where there is one), returning its output and its tape.
pub(super) fn layer_forward(layer: &Layer, x: Vec<f32>, lengths: &[usize], heads: usize, relative: Option<&Relative>) -> (Vec<f32>, LayerTape) {
    let h = layer.qkv.input;
    let t = x.len() / h;
    let mut qkv = vec![0.0f32; t * 3 * h];
    matmul_bias(&x, &layer.qkv, &mut qkv);
    let mut context = vec![0.0f32; t * h];
    let mut probs: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0f32; heads * n * n]).collect();
    attention(&qkv, lengths, [heads, h], relative, &mut context, probs.iter_mut().map(|p| Probs::Keep(p)).collect());
    let mut h1 = x.clone();
    matmul_bias_residual(&context, &layer.attention_output, &mut h1);
    let norm1 = norm_forward(&mut h1, &layer.attention_norm);
    let mut u = vec![0.0f32; t * layer.intermediate.output];
    matmul_bias(&h1, &layer.intermediate, &mut u);
    let mut g = u.clone();
    g.par_chunks_mut(4096).for_each(gelu_all);
    let mut y = h1.clone();
    matmul_bias_residual(&g, &layer.output, &mut y);
    let norm2 = norm_forward(&mut y, &layer.output_norm);
    (y, LayerTape { x, qkv, probs, context, norm1, h1, u, g, norm2 })
}

/// One block backward: from its output's gradient `dy`, its parameters' gradients (with its share of the
/// relative position bias's, where `relative` is given) and (when `input`) its input's.
pub(super) fn layer_backward(
    layer: &Layer,
    tape: &LayerTape,
    (lengths, heads): (&[usize], usize),
    relative: Option<&Relative>,
    mut dy: Vec<f32>,
    input: bool,
) -> (Option<Vec<f32>>, LayerGrads) {
    let h = layer.qkv.input;
    let t = dy.len() / h;
    let output_norm = norm_backward(&mut dy, &tape.norm2, &layer.output_norm);
    let output = dense_grads(&tape.g, &dy, &layer.output);
    let mut du = vec![0.0f32; t * layer.intermediate.output];
    dense_input_grad(&dy, &layer.output, &mut du, Accumulate::No);
    gelu_backward(&mut du, &tape.u);
    let intermediate = dense_grads(&tape.h1, &du, &layer.intermediate);
    // h₁ feeds the feed-forward and the residual: dy (the residual's) plus du W_iᵀ.
    dense_input_grad(&du, &layer.intermediate, &mut dy, Accumulate::Yes);
    let attention_norm = norm_backward(&mut dy, &tape.norm1, &layer.attention_norm);
    let attention_output = dense_grads(&tape.context, &dy, &layer.attention_output);
    let mut dcontext = vec![0.0f32; t * h];
    dense_input_grad(&dy, &layer.attention_output, &mut dcontext, Accumulate::No);
    let mut dqkv = vec![0.0f32; t * 3 * h];
    let relative = attention_backward(&tape.qkv, &tape.probs, (lengths, heads), relative, &dcontext, &mut dqkv);
    let qkv = dense_grads(&tape.x, &dqkv, &layer.qkv);
    // x feeds Q, K, V and the residual: dy (the residual's) plus dqkv W_qkvᵀ.
    let dx = input.then(|| {
        dense_input_grad(&dqkv, &layer.qkv, &mut dy, Accumulate::Yes);
        dy
    });
    (dx, LayerGrads { qkv, attention_output, attention_norm, intermediate, output, output_norm, relative })
}

/// Attention's backward pass, spread over the thread pool by sequence and, for long ones, by head (as
/// the forward pass, [`super::cpu::head_tasks`]): from the context's gradient `dcontext` `[T, hidden]`,
/// the gradient of `qkv` `[T, 3 hidden]`; with a relative position bias, the gradient of its table
/// `[buckets, heads]`: every score's `dS` summed into its distance's bucket (`S = Q Kᵀ / sqrt(d) + b`, so
/// `db[bucket(j - i), head] = Σ dS[head, i, j]`).
fn attention_backward(
    qkv: &[f32],
    probs: &[Vec<f32>],
    (lengths, heads): (&[usize], usize),
    relative: Option<&Relative>,
    dcontext: &[f32],
    dqkv: &mut [f32],
) -> Option<Vec<f32>> {
    let h = dcontext.len() / lengths.iter().sum::<usize>().max(1);
    assert!(qkv.len() == 3 * dcontext.len() && dqkv.len() == qkv.len() && h.is_multiple_of(heads.max(1)));
    let out = Shared(dqkv.as_mut_ptr());
    // Per sequence and head, dS summed along each distance (`2n - 1` of them), where there is a bias.
    let mut by_distance: Vec<Vec<f32>> =
        lengths.iter().map(|&n| vec![0.0f32; if relative.is_some() { heads * (2 * n).saturating_sub(1) } else { 0 }]).collect();
    let parts: Vec<(&[f32], &mut [f32])> = probs.iter().map(Vec::as_slice).zip(by_distance.iter_mut().map(Vec::as_mut_slice)).collect();
    fn by_head<'p>(
        (p, d): (&'p [f32], &'p mut [f32]),
        n: usize,
        heads: usize,
    ) -> Result<Vec<(&'p [f32], &'p mut [f32])>, (&'p [f32], &'p mut [f32])> {
        let width = if d.is_empty() { 0 } else { 2 * n - 1 };
        let mut rest = d;
        Ok(p.chunks_exact(n * n)
            .take(heads)
            .map(|p| {
                let (mine, others) = std::mem::take(&mut rest).split_at_mut(width);
                rest = others;
                (p, mine)
            })
            .collect())
    }
    head_tasks(lengths, heads, parts, by_head, |tokens, range, (p, d)| {
        SCRATCH.with_borrow_mut(|ds| attend_backward([qkv, p, dcontext], tokens, range, [h, h / heads], out, ds, d))
    });
    let relative = relative?;
    let mut table = vec![0.0f32; relative.table.len()];
    for (&n, sums) in lengths.iter().zip(&by_distance) {
        if n == 0 {
            continue;
        }
        let buckets = relative.buckets(n);
        for (head, sums) in sums.chunks_exact(2 * n - 1).enumerate() {
            for (&b, s) in buckets.iter().zip(sums) {
                table[b * relative.heads + head] += s;
            }
        }
    }
    Some(table)
}

multiversion! {
/// One sequence's attention backward (rows `tokens` of `qkv` `[T, 3h]`), the heads in `range` (`widths`:
/// `[h, dh]`), reading `[qkv, probs, dcontext]` (`probs` `[range.len(), n, n]`, `dcontext` `[T, h]`), into those heads' columns of the
/// sequence's rows of `dqkv` `[T, 3h]` (`out`, its start): `dP = dC Vᵀ`, `dV = Pᵀ dC`,
/// `dS = P ⊙ (dP − rowsum(dP ⊙ P))`, `dQ = dS K / sqrt(d)`, `dK = dSᵀ Q / sqrt(d)`. `ds`: scratch.
/// `distances`, when not empty, `[range.len(), 2n - 1]`: each head's `dS` summed along each distance
/// `j - i` (at `j - i + n - 1`), the relative position bias's gradient before its buckets.
#[allow(clippy::too_many_arguments)] // one task's reads, its writes and its scratch, each named
fn attend_backward(reads: [&[f32]; 3], tokens: Range<usize>, range: Range<usize>, widths: [usize; 2], out: Shared, ds: &mut Vec<f32>, distances: &mut [f32]) {
    let ([qkv, probs, dcontext], [h, dh]) = (reads, widths);
    let n = tokens.len();
    let scale = 1.0 / (dh as f32).sqrt();
    let rows = &qkv[tokens.start * 3 * h..tokens.end * 3 * h];
    let dcontext = &dcontext[tokens.start * h..tokens.end * h];
    assert_eq!(probs.len(), range.len() * n * n, "one [n, n] per head");
    ds.resize(n * n, 0.0);
    let ds = &mut ds[..n * n];
    let first = range.start;
    // SAFETY: `out` is dqkv's start, [T, 3h]; this sequence's rows start at tokens.start.
    let dqkv = unsafe { out.0.add(tokens.start * 3 * h) };
    for (head, p) in range.zip(probs.chunks_exact(n * n)) {
        let c = head * dh;
        // SAFETY (every product below): rows [n, 3h], dcontext [n, h], p and ds [n, n], all row-major; a
        // head's columns c..c + dh (Q), h + c.. (K), 2h + c.. (V) stay inside a row, and a transposed view
        // reads the same elements with its strides swapped. The sequence's rows of dqkv lie inside it
        // (the caller's [T, 3h]), and only this task writes this head's columns of them (head_tasks gives
        // each (sequence, head) pair to one task); no task reads dqkv.
        unsafe {
            // dP = dC_h V_hᵀ
            let values_t = View { at: rows[2 * h + c..].as_ptr(), rs: 1, cs: 3 * h };
            product([n, n, dh], View::rows(ds.as_mut_ptr(), n), View::rows(dcontext[c..].as_ptr(), h), values_t, 1.0, Accumulate::No, ONE_THREAD);
            // dV_h = Pᵀ dC_h
            let probs_t = View { at: p.as_ptr(), rs: 1, cs: n };
            product(
                [n, dh, n],
                View::rows(dqkv.add(2 * h + c), 3 * h),
                probs_t,
                View::rows(dcontext[c..].as_ptr(), h),
                1.0,
                Accumulate::No,
                ONE_THREAD,
            );
        }
        for (d, p) in ds.chunks_exact_mut(n).zip(p.chunks_exact(n)) {
            let dot: f32 = d.iter().zip(p).map(|(d, p)| d * p).sum();
            for (d, p) in d.iter_mut().zip(p) {
                *d = p * (*d - dot);
            }
        }
        if !distances.is_empty() {
            // Row i's score j has distance j - i: it adds into distances[n - 1 - i + j].
            let sums = &mut distances[(head - first) * (2 * n - 1)..(head - first + 1) * (2 * n - 1)];
            for (i, row) in ds.chunks_exact(n).enumerate() {
                sums[n - 1 - i..2 * n - 1 - i].iter_mut().zip(row).for_each(|(s, d)| *s += d);
            }
        }
        // SAFETY: as above.
        unsafe {
            // dQ_h = scale dS K_h
            product(
                [n, dh, n],
                View::rows(dqkv.add(c), 3 * h),
                View::rows(ds.as_ptr(), n),
                View::rows(rows[h + c..].as_ptr(), 3 * h),
                scale,
                Accumulate::No,
                ONE_THREAD,
            );
            // dK_h = scale dSᵀ Q_h
            let ds_t = View { at: ds.as_ptr(), rs: 1, cs: n };
            product(
                [n, dh, n],
                View::rows(dqkv.add(h + c), 3 * h),
                ds_t,
                View::rows(rows[c..].as_ptr(), 3 * h),
                scale,
                Accumulate::No,
                ONE_THREAD,
            );
        }
    }
}
}

/// What the embeddings' backward pass reads: the token ids, their positions and the layer norm's tape.
#[derive(Debug, Clone)]
pub(super) struct EmbeddingTape {
    ids: Vec<u32>,
    positions: Vec<usize>,
    norm: NormTape,
}

impl EmbeddingTape {
    /// The batch's tokens, all sequences together.
    pub(super) fn tokens(&self) -> usize {
        self.ids.len()
    }
}

/// The embeddings' gradients: the word and position tables' (dense, as Burn's), token type 0's row,
/// and the layer norm's.
#[derive(Debug, Clone)]
pub(super) struct EmbeddingGrads {
    pub(super) word: Vec<f32>,
    pub(super) position: Vec<f32>,
    pub(super) token_type: Vec<f32>,
    pub(super) norm: NormGrads,
}

/// The embeddings of a packed batch (word + position from the family's offset + token type 0, zeros
/// without token types; layer-normalised), with their tape.
pub(super) fn embeddings_forward(bert: &CpuBert, batch: &[&[u32]]) -> (Vec<f32>, EmbeddingTape) {
    let h = bert.hidden;
    let ids: Vec<u32> = batch.iter().flat_map(|s| s.iter().copied()).collect();
    let positions: Vec<usize> = batch.iter().flat_map(|s| (0..s.len()).map(|p| p + bert.position_offset)).collect();
    let mut x = vec![0.0f32; ids.len() * h];
    for ((row, &id), &p) in x.chunks_exact_mut(h).zip(&ids).zip(&positions) {
        let (w, pos) = (&bert.word[id as usize * h..][..h], &bert.position[p * h..][..h]);
        for j in 0..h {
            row[j] = w[j] + pos[j] + bert.token_type[j];
        }
    }
    let norm = norm_forward(&mut x, &bert.embedding_norm);
    (x, EmbeddingTape { ids, positions, norm })
}

/// The embeddings' backward pass from the gradient `dy` of their output.
pub(super) fn embeddings_backward(bert: &CpuBert, tape: &EmbeddingTape, mut dy: Vec<f32>) -> EmbeddingGrads {
    let h = bert.hidden;
    let norm = norm_backward(&mut dy, &tape.norm, &bert.embedding_norm);
    let mut word = vec![0.0f32; bert.word.len()];
    let mut position = vec![0.0f32; bert.position.len()];
    for ((d, &id), &p) in dy.chunks_exact(h).zip(&tape.ids).zip(&tape.positions) {
        word[id as usize * h..][..h].iter_mut().zip(d).for_each(|(w, d)| *w += d);
        position[p * h..][..h].iter_mut().zip(d).for_each(|(w, d)| *w += d);
    }
    EmbeddingGrads { word, position, token_type: column_sums(&dy, h), norm }
}

/// What pooling's backward pass reads: the pooled vectors before normalisation and their norms.
#[derive(Debug, Clone)]
pub(super) struct PoolTape {
    normalised: Vec<f32>,
    norms: Vec<f32>,
}

/// Each sequence's token states pooled by `pooling` and L2-normalised (as [`Pooling::pool`]), `[rows, h]`.
pub(super) fn pool_forward(states: &[f32], lengths: &[usize], h: usize, pooling: Pooling) -> (Vec<f32>, PoolTape) {
    let mut out = vec![0.0f32; lengths.len() * h];
    let mut norms = vec![0.0f32; lengths.len()];
    let mut at = 0;
    for ((&n, row), norm) in lengths.iter().zip(out.chunks_exact_mut(h)).zip(&mut norms) {
        let tokens = &states[at * h..(at + n) * h];
        match pooling {
            Pooling::Mean => {
                tokens.chunks_exact(h).for_each(|t| row.iter_mut().zip(t).for_each(|(o, v)| *o += v));
                row.iter_mut().for_each(|v| *v /= n.max(1) as f32);
            }
            Pooling::Cls if n > 0 => row.copy_from_slice(&tokens[..h]),
            Pooling::LastToken if n > 0 => row.copy_from_slice(&tokens[(n - 1) * h..]),
            _ => {}
        }
        *norm = row.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        row.iter_mut().for_each(|v| *v /= *norm);
        at += n;
    }
    (out.clone(), PoolTape { normalised: out, norms })
}

/// Pooling's backward pass: from the gradient of the normalised vectors, the token states'.
pub(super) fn pool_backward(tape: &PoolTape, lengths: &[usize], h: usize, pooling: Pooling, dy: &[f32]) -> Vec<f32> {
    let mut dstates = vec![0.0f32; lengths.iter().sum::<usize>() * h];
    let mut at = 0;
    for (((&n, y), d), &norm) in lengths.iter().zip(tape.normalised.chunks_exact(h)).zip(dy.chunks_exact(h)).zip(&tape.norms) {
        // y = p / max(|p|, 1e-12): dp = (dy - y (y . dy)) / |p| above the floor, dy / 1e-12 at it.
        let dot: f32 = if norm > 1e-12 { y.iter().zip(d).map(|(y, d)| y * d).sum() } else { 0.0 };
        let dp: Vec<f32> = y.iter().zip(d).map(|(y, d)| (d - y * dot) / norm).collect();
        let tokens = &mut dstates[at * h..(at + n) * h];
        match pooling {
            Pooling::Mean => tokens.chunks_exact_mut(h).for_each(|t| t.iter_mut().zip(&dp).for_each(|(t, d)| *t = d / n.max(1) as f32)),
            Pooling::Cls if n > 0 => tokens[..h].copy_from_slice(&dp),
            Pooling::LastToken if n > 0 => tokens[(n - 1) * h..].copy_from_slice(&dp),
            _ => {}
        }
        at += n;
    }
    dstates
}

#[cfg(test)]
#[path = "tape_tests.rs"]
mod tests;
