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

use super::cpu::{
    Accumulate, CpuBert, Dense, Layer, Norm, ONE_THREAD, Probs, SCRATCH, Shared, View, attention, erf, exp_neg, gelu_all, head_tasks, matmul_bias,
    matmul_bias_residual, multiversion, product,
};
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

/// One block's parameter gradients (query, key and value fused as in [`Layer`]).
#[derive(Debug, Clone)]
pub(super) struct LayerGrads {
    pub(super) qkv: DenseGrads,
    pub(super) attention_output: DenseGrads,
    pub(super) attention_norm: NormGrads,
    pub(super) intermediate: DenseGrads,
    pub(super) output: DenseGrads,
    pub(super) output_norm: NormGrads,
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

/// One block forward from its input `x` `[T, hidden]`, returning its output and its tape.
pub(super) fn layer_forward(layer: &Layer, x: Vec<f32>, lengths: &[usize], heads: usize) -> (Vec<f32>, LayerTape) {
    let h = layer.qkv.input;
    let t = x.len() / h;
    let mut qkv = vec![0.0f32; t * 3 * h];
    matmul_bias(&x, &layer.qkv, &mut qkv);
    let mut context = vec![0.0f32; t * h];
    let mut probs: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0f32; heads * n * n]).collect();
    attention(&qkv, lengths, heads, h, &mut context, probs.iter_mut().map(|p| Probs::Keep(p)).collect());
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

/// One block backward: from its output's gradient `dy`, its parameters' gradients and (when `input`) its
/// input's.
pub(super) fn layer_backward(
    layer: &Layer,
    tape: &LayerTape,
    lengths: &[usize],
    heads: usize,
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
    attention_backward(&tape.qkv, &tape.probs, lengths, heads, &dcontext, &mut dqkv);
    let qkv = dense_grads(&tape.x, &dqkv, &layer.qkv);
    // x feeds Q, K, V and the residual: dy (the residual's) plus dqkv W_qkvᵀ.
    let dx = input.then(|| {
        dense_input_grad(&dqkv, &layer.qkv, &mut dy, Accumulate::Yes);
        dy
    });
    (dx, LayerGrads { qkv, attention_output, attention_norm, intermediate, output, output_norm })
}

/// Attention's backward pass, spread over the thread pool by sequence and, for long ones, by head (as
/// the forward pass, [`super::cpu::head_tasks`]): from the context's gradient `dcontext` `[T, hidden]`,
/// the gradient of `qkv` `[T, 3 hidden]`.
fn attention_backward(qkv: &[f32], probs: &[Vec<f32>], lengths: &[usize], heads: usize, dcontext: &[f32], dqkv: &mut [f32]) {
    let h = dcontext.len() / lengths.iter().sum::<usize>().max(1);
    assert!(qkv.len() == 3 * dcontext.len() && dqkv.len() == qkv.len() && h.is_multiple_of(heads.max(1)));
    let out = Shared(dqkv.as_mut_ptr());
    let parts: Vec<&[f32]> = probs.iter().map(Vec::as_slice).collect();
    fn by_head(p: &[f32], n: usize, _heads: usize) -> Result<Vec<&[f32]>, &[f32]> {
        Ok(p.chunks_exact(n * n).collect())
    }
    head_tasks(lengths, heads, parts, by_head, |tokens, range, p| {
        SCRATCH.with_borrow_mut(|ds| attend_backward([qkv, p, dcontext], tokens, range, [h, h / heads], out, ds))
    });
}

multiversion! {
/// One sequence's attention backward (rows `tokens` of `qkv` `[T, 3h]`), the heads in `range` (`widths`:
/// `[h, dh]`), reading `[qkv, probs, dcontext]` (`probs` `[range.len(), n, n]`, `dcontext` `[T, h]`), into those heads' columns of the
/// sequence's rows of `dqkv` `[T, 3h]` (`out`, its start): `dP = dC Vᵀ`, `dV = Pᵀ dC`,
/// `dS = P ⊙ (dP − rowsum(dP ⊙ P))`, `dQ = dS K / sqrt(d)`, `dK = dSᵀ Q / sqrt(d)`. `ds`: scratch.
fn attend_backward(reads: [&[f32]; 3], tokens: Range<usize>, range: Range<usize>, widths: [usize; 2], out: Shared, ds: &mut Vec<f32>) {
    let ([qkv, probs, dcontext], [h, dh]) = (reads, widths);
    let n = tokens.len();
    let scale = 1.0 / (dh as f32).sqrt();
    let rows = &qkv[tokens.start * 3 * h..tokens.end * 3 * h];
    let dcontext = &dcontext[tokens.start * h..tokens.end * h];
    assert_eq!(probs.len(), range.len() * n * n, "one [n, n] per head");
    ds.resize(n * n, 0.0);
    let ds = &mut ds[..n * n];
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

/// The embeddings of a packed batch (word + position + token type 0, layer-normalised), with their tape.
pub(super) fn embeddings_forward(bert: &CpuBert, batch: &[&[u32]]) -> (Vec<f32>, EmbeddingTape) {
    let h = bert.hidden;
    let ids: Vec<u32> = batch.iter().flat_map(|s| s.iter().copied()).collect();
    let positions: Vec<usize> = batch.iter().flat_map(|s| 0..s.len()).collect();
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
mod tests {
    use super::*;

    /// A layer norm's hand-derived gradient against central differences of `sum(w ⊙ LN(x))`.
    #[test]
    fn the_layer_norms_gradient_is_its_finite_difference() {
        let n = Norm { gamma: vec![1.5, -0.5, 2.0, 0.7], beta: vec![0.1, 0.2, -0.3, 0.0], eps: 1e-5 };
        let x = [0.3f32, -1.2, 2.5, 0.9, 1.0, 1.1, -0.4, 0.2];
        let w = [0.7f32, -1.3, 0.4, 2.0, -0.6, 0.9, 1.1, -0.2];
        let loss = |x: &[f32]| {
            let mut y = x.to_vec();
            norm_forward(&mut y, &n);
            y.iter().zip(&w).map(|(y, w)| (y * w) as f64).sum::<f64>()
        };
        let mut y = x.to_vec();
        let tape = norm_forward(&mut y, &n);
        let mut dx = w.to_vec();
        let grads = norm_backward(&mut dx, &tape, &n);
        for i in 0..x.len() {
            let (mut plus, mut minus) = (x.to_vec(), x.to_vec());
            plus[i] += 1e-2;
            minus[i] -= 1e-2;
            let numeric = (loss(&plus) - loss(&minus)) / 2e-2;
            assert!((numeric - dx[i] as f64).abs() < 2e-3, "x[{i}]: {numeric} vs {}", dx[i]);
        }
        // d/dβ_j = Σ_rows w_j; d/dγ_j = Σ_rows w_j x̂_j.
        assert!((grads.beta[0] - (0.7 - 0.6)).abs() < 1e-6 && (grads.beta[3] - (2.0 - 0.2)).abs() < 1e-6);
        let hat0: Vec<f32> = (0..4).map(|j| (y[j] - n.beta[j]) / n.gamma[j]).collect();
        let hat1: Vec<f32> = (0..4).map(|j| (y[4 + j] - n.beta[j]) / n.gamma[j]).collect();
        for j in 0..4 {
            assert!((grads.gamma[j] - (w[j] * hat0[j] + w[4 + j] * hat1[j])).abs() < 1e-5);
        }
    }

    /// GELU's derivative by hand at known points, and against a central difference.
    #[test]
    fn gelus_derivative_is_phi_plus_u_times_the_density() {
        let u = [-3.0f32, -1.0, 0.0, 0.5, 2.0];
        let mut d = vec![1.0f32; u.len()];
        gelu_backward(&mut d, &u);
        // gelu'(0) = 1/2; gelu'(1) - gelu'(-1) = 1 by symmetry of Φ, and u φ(u) is odd.
        assert!((d[2] - 0.5).abs() < 1e-6);
        for (i, &x) in u.iter().enumerate() {
            let numeric = (super::super::cpu::gelu(x + 1e-3) - super::super::cpu::gelu(x - 1e-3)) / 2e-3;
            assert!((numeric - d[i]).abs() < 2e-3, "{x}: {numeric} vs {}", d[i]);
        }
    }

    /// One head over two tokens, by hand: the softmax's backward pass and the value's gradient.
    #[test]
    fn attention_backward_by_hand_for_one_head() {
        // hidden 1, one head: q, k, v per token; P = softmax over the two keys.
        let rows = [1.0f32, 2.0, 3.0, 0.5, -1.0, 5.0];
        let p = |q: f32| {
            let (a, b) = ((q * 2.0f32).exp(), (-q).exp());
            [a / (a + b), b / (a + b)]
        };
        let (p0, p1) = (p(1.0), p(0.5));
        let probs = [p0[0], p0[1], p1[0], p1[1]];
        let dcontext = [1.0f32, -2.0];
        let mut dqkv = vec![0.0f32; 6];
        attention_backward(&rows, &[probs.to_vec()], &[2], 1, &dcontext, &mut dqkv);
        // dV_j = Σ_i P_ij dC_i.
        assert!((dqkv[2] - (p0[0] * 1.0 + p1[0] * -2.0)).abs() < 1e-6);
        assert!((dqkv[5] - (p0[1] * 1.0 + p1[1] * -2.0)).abs() < 1e-6);
        // dQ_0 = Σ_j dS_0j k_j with dS_0j = P_0j (dC_0 v_j - Σ_l P_0l dC_0 v_l).
        let dp = [3.0f32, 5.0];
        let mean = p0[0] * dp[0] + p0[1] * dp[1];
        let ds = [p0[0] * (dp[0] - mean), p0[1] * (dp[1] - mean)];
        assert!((dqkv[0] - (ds[0] * 2.0 - ds[1])).abs() < 1e-5);
    }

    /// A long sequence's heads, each a task of its own (forward and backward), give what each head
    /// computes alone as a one-head problem on its own columns; a short sequence beside it too.
    #[test]
    fn attention_split_by_head_equals_each_head_alone() {
        use super::super::cpu::SPLIT_HEADS_FROM;
        let (heads, dh) = (3usize, 2usize);
        let h = heads * dh;
        let lengths = [SPLIT_HEADS_FROM + 5, 7];
        let t: usize = lengths.iter().sum();
        // Deterministic values in (-1, 1).
        let value = |i: usize| ((i as f32 * 0.618_034).fract() - 0.5) * 2.0;
        let qkv: Vec<f32> = (0..t * 3 * h).map(value).collect();
        let dcontext: Vec<f32> = (0..t * h).map(|i| value(i + 7)).collect();
        let mut context = vec![0.0f32; t * h];
        let mut probs: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0f32; heads * n * n]).collect();
        attention(&qkv, &lengths, heads, h, &mut context, probs.iter_mut().map(|p| Probs::Keep(p)).collect());
        let mut dqkv = vec![0.0f32; t * 3 * h];
        attention_backward(&qkv, &probs, &lengths, heads, &dcontext, &mut dqkv);
        for head in 0..heads {
            // The head's columns of Q, K and V (and of the context's gradient) as a one-head problem.
            let columns = |rows: &[f32], width: usize, starts: &[usize]| -> Vec<f32> {
                rows.chunks_exact(width).flat_map(|r| starts.iter().flat_map(move |&s| r[s + head * dh..s + (head + 1) * dh].to_vec())).collect()
            };
            let alone_qkv = columns(&qkv, 3 * h, &[0, h, 2 * h]);
            let mut alone_context = vec![0.0f32; t * dh];
            let mut alone_probs: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0f32; n * n]).collect();
            attention(&alone_qkv, &lengths, 1, dh, &mut alone_context, alone_probs.iter_mut().map(|p| Probs::Keep(p)).collect());
            assert_eq!(columns(&context, h, &[0]), alone_context, "head {head}'s context");
            for (p, (alone, &n)) in probs.iter().zip(alone_probs.iter().zip(&lengths)) {
                assert_eq!(&p[head * n * n..(head + 1) * n * n], &alone[..], "head {head}'s probabilities");
            }
            let mut alone_dqkv = vec![0.0f32; t * 3 * dh];
            attention_backward(&alone_qkv, &alone_probs, &lengths, 1, &columns(&dcontext, h, &[0]), &mut alone_dqkv);
            assert_eq!(columns(&dqkv, 3 * h, &[0, h, 2 * h]), alone_dqkv, "head {head}'s gradients");
        }
    }
}
