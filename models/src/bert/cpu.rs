//! The BERT forward pass of [`super::model`] for inference on the CPU, written against plain `f32` buffers:
//! the same equations (Devlin et al., 2019, as `transformers`' modeling_bert.py: post-norm residual
//! blocks, exact erf GELU), computed so as to waste nothing on two cores:
//!
//! - no padding: a batch's sequences are laid end to end (`T` tokens in all), the dense layers are one
//!   matrix product over all `T` rows, and attention runs per sequence over its own length only;
//! - Q, K and V are one `[hidden, 3 hidden]` product; bias, residual, GELU and layer norm are fused into
//!   single passes over the rows;
//! - matrix products go to the `gemm` crate's kernels (already built for Burn's CPU backend): the dense
//!   layers spread over the rayon pool, attention a task a sequence (a head, for long sequences), each
//!   head as two strided products (`Q Kᵀ`, then `P V`) read from and written into the fused buffers
//!   without copies;
//! - softmax and GELU are branch-free polynomial passes (`exp_neg`, `erf`) that vectorise.
//!
//! Weights are copied out of a [`super::Bert`] module, so the frozen and the fine-tuned encoders share this
//! path. It returns no attention probabilities: token attention goes through the Burn module. What a
//! family changes ([`super::families`]) is data here: where positions start, a token-type row of zeros for
//! MPNet, and MPNet's relative position bias (`attention::Relative`) added to each head's scores before the softmax.

use burn::module::Param;
use burn::nn::{LayerNorm, Linear};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

use rayon::prelude::*;

use super::attention::{Probs, Relative, attention};
use super::model::{Bert, BertLayer};
use crate::pooling::Pooling;

/// `x W + b` with `W` row-major `[input, output]` (Burn's layout).
#[derive(Debug, Clone)]
pub(super) struct Dense {
    pub(super) w: Vec<f32>,
    pub(super) b: Vec<f32>,
    pub(super) input: usize,
    pub(super) output: usize,
}

#[derive(Debug, Clone)]
pub(super) struct Norm {
    pub(super) gamma: Vec<f32>,
    pub(super) beta: Vec<f32>,
    pub(super) eps: f32,
}

#[derive(Debug, Clone)]
pub(super) struct Layer {
    /// Query, key and value side by side: `[hidden, 3 hidden]`.
    pub(super) qkv: Dense,
    pub(super) attention_output: Dense,
    pub(super) attention_norm: Norm,
    pub(super) intermediate: Dense,
    pub(super) output: Dense,
    pub(super) output_norm: Norm,
}

/// A BERT-family encoder's weights as plain buffers, for [`CpuBert::embed`].
#[derive(Debug, Clone)]
pub struct CpuBert {
    pub(super) word: Vec<f32>,
    pub(super) position: Vec<f32>,
    /// Row 0 of the token-type table (every token is type 0); zeros for a family without one.
    pub(super) token_type: Vec<f32>,
    pub(super) embedding_norm: Norm,
    pub(super) layers: Vec<Layer>,
    pub(super) hidden: usize,
    pub(super) heads: usize,
    /// The position id of a sequence's first token.
    pub(super) position_offset: usize,
    /// MPNet's relative position bias.
    pub(super) relative: Option<Relative>,
}

pub(super) fn values<B: Backend, const D: usize>(t: &Param<Tensor<B, D>>) -> Vec<f32> {
    super::autodiff::host_values(t.val())
}

fn dense<B: Backend>(l: &Linear<B>) -> Dense {
    let [input, output] = l.weight.val().dims();
    let b = l.bias.as_ref().map_or_else(|| vec![0.0; output], values);
    Dense { w: values(&l.weight), b, input, output }
}

fn norm<B: Backend>(n: &LayerNorm<B>, eps: f64) -> Norm {
    let gamma = values(&n.gamma);
    let beta = n.beta.as_ref().map_or_else(|| vec![0.0; gamma.len()], values);
    Norm { gamma, beta, eps: eps as f32 }
}

/// Q, K and V weights concatenated along the output: row i is `[Wq[i], Wk[i], Wv[i]]`.
fn fused_qkv<B: Backend>(layer: &BertLayer<B>) -> Dense {
    let parts = [dense(&layer.query), dense(&layer.key), dense(&layer.value)];
    let (input, h) = (parts[0].input, parts[0].output);
    let mut w = Vec::with_capacity(input * 3 * h);
    for i in 0..input {
        for p in &parts {
            w.extend_from_slice(&p.w[i * h..(i + 1) * h]);
        }
    }
    Dense { w, b: parts.iter().flat_map(|p| p.b.iter().copied()).collect(), input, output: 3 * h }
}

impl Layer {
    /// The weights of `layer` (its layer norms' epsilon `eps`), as they are now.
    pub(super) fn of<B: Backend>(layer: &BertLayer<B>, eps: f64) -> Self {
        Layer {
            qkv: fused_qkv(layer),
            attention_output: dense(&layer.attention_output),
            attention_norm: norm(&layer.attention_norm, eps),
            intermediate: dense(&layer.intermediate),
            output: dense(&layer.output),
            output_norm: norm(&layer.output_norm, eps),
        }
    }
}

impl CpuBert {
    /// Copies the weights of `bert` (whose layer norms use `eps`).
    pub fn from_bert<B: Backend>(bert: &Bert<B>, eps: f64) -> Self {
        Self::lower(bert, eps, bert.layers.len())
    }

    /// The embeddings and the first `layers` layers of `bert`: [`Self::forward`] then returns the token
    /// states that layer `layers` reads (the embeddings' own with 0).
    pub fn lower<B: Backend>(bert: &Bert<B>, eps: f64, layers: usize) -> Self {
        let e = &bert.embeddings;
        let word = values(&e.word_embeddings.weight);
        let hidden = e.word_embeddings.weight.val().dims()[1];
        let layers = bert.layers[..layers].iter().map(|l| Layer::of(l, eps)).collect();
        let position = values(&e.position_embeddings.weight);
        let max_len = (position.len() / hidden).saturating_sub(e.position_offset);
        CpuBert {
            word,
            position,
            token_type: e.token_type_embeddings.as_ref().map_or_else(|| vec![0.0; hidden], |t| values(&t.weight)[..hidden].to_vec()),
            embedding_norm: norm(&e.layer_norm, eps),
            layers,
            hidden,
            heads: bert.layers.first().map_or(1, |l| l.num_heads),
            position_offset: e.position_offset,
            relative: Relative::of(bert, max_len),
        }
    }

    /// The width of a token state.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// The last layer's token states of each sequence, laid end to end: `[sum of lengths, hidden]`.
    pub fn forward(&self, batch: &[&[u32]]) -> Vec<f32> {
        self.run(batch, None, true).0
    }

    /// Each sequence's attention probabilities mixed over every (layer, head) by `head_weights`
    /// (`[layers * heads]`, row-major), `[len, len]` row-major per sequence. The per-head probabilities
    /// are never stored (each is added in as soon as it is computed), and the last layer stops after its
    /// attention, the rest of it being unused.
    pub fn mixed_attention(&self, batch: &[&[u32]], head_weights: &[f32]) -> Vec<Vec<f32>> {
        self.run(batch, Some(head_weights), false).1
    }

    /// [`Self::forward`] and [`Self::mixed_attention`] from one pass.
    pub fn states_and_mixed_attention(&self, batch: &[&[u32]], head_weights: &[f32]) -> (Vec<f32>, Vec<Vec<f32>>) {
        self.run(batch, Some(head_weights), true)
    }

    /// The forward pass; with `head_weights`, also the mixed attention. Without `states` the last layer
    /// stops after its attention (the token states are then not the last layer's).
    fn run(&self, batch: &[&[u32]], head_weights: Option<&[f32]>, states: bool) -> (Vec<f32>, Vec<Vec<f32>>) {
        let h = self.hidden;
        let lengths: Vec<usize> = batch.iter().map(|s| s.len()).collect();
        let t: usize = lengths.iter().sum();
        let mut x = vec![0.0f32; t * h];
        let positions = batch.iter().flat_map(|s| s.iter().enumerate());
        for (row, (p, &id)) in x.chunks_exact_mut(h).zip(positions) {
            let (w, pos) = (&self.word[id as usize * h..][..h], &self.position[(p + self.position_offset) * h..][..h]);
            for j in 0..h {
                row[j] = w[j] + pos[j] + self.token_type[j];
            }
            layer_norm(row, &self.embedding_norm);
        }
        let mut qkv = vec![0.0f32; t * 3 * h];
        let mut context = vec![0.0f32; t * h];
        let mut inner = vec![0.0f32; t * self.layers.first().map_or(0, |l| l.intermediate.output)];
        if let Some(w) = head_weights {
            assert_eq!(w.len(), self.layers.len() * self.heads, "one head weight per (layer, head)");
        }
        let mut mixed: Vec<Vec<f32>> = match head_weights {
            Some(_) => lengths.iter().map(|&n| vec![0.0f32; n * n]).collect(),
            None => vec![Vec::new(); lengths.len()],
        };
        for (l, layer) in self.layers.iter().enumerate() {
            matmul_bias(&x, &layer.qkv, &mut qkv);
            let probs = mixed
                .iter_mut()
                .map(|into| match head_weights {
                    Some(w) => Probs::Mix { weights: &w[l * self.heads..(l + 1) * self.heads], into },
                    None => Probs::Drop,
                })
                .collect();
            attention(&qkv, &lengths, [self.heads, h], self.relative.as_ref(), &mut context, probs);
            if !states && l + 1 == self.layers.len() {
                break;
            }
            // x <- LayerNorm(context Wo + bo + x)
            matmul_bias_residual(&context, &layer.attention_output, &mut x);
            rows_par(&mut x, h, |rows| layer_norm_rows(rows, &layer.attention_norm));
            matmul_bias(&x, &layer.intermediate, &mut inner);
            inner.par_chunks_mut(4096).for_each(gelu_all);
            // x <- LayerNorm(inner Wout + bout + x)
            matmul_bias_residual(&inner, &layer.output, &mut x);
            rows_par(&mut x, h, |rows| layer_norm_rows(rows, &layer.output_norm));
        }
        (x, mixed)
    }

    /// sentence-transformers' embedding of each sequence: its token states pooled by `pooling`,
    /// L2-normalised; `[batch, hidden]` row-major.
    pub fn embed(&self, batch: &[&[u32]], pooling: Pooling) -> Vec<f32> {
        let h = self.hidden;
        let states = self.forward(batch);
        let mut out = vec![0.0f32; batch.len() * h];
        let mut at = 0;
        for (s, row) in batch.iter().zip(out.chunks_exact_mut(h)) {
            pooling.pool_row(&states[at * h..(at + s.len()) * h], row);
            at += s.len();
        }
        out
    }
}

/// sentence-transformers' pooling of a sum of `count` token states, in place: their mean, L2-normalised.
pub fn mean_normalise(sum: &mut [f32], count: usize) {
    let n = count.max(1) as f32;
    sum.iter_mut().for_each(|v| *v /= n);
    let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
    sum.iter_mut().for_each(|v| *v /= norm);
}

/// Runs `f` on blocks of whole `width`-long rows of `x`, spread over the thread pool.
pub(super) fn rows_par(x: &mut [f32], width: usize, f: impl Fn(&mut [f32]) + Sync + Send) {
    x.par_chunks_mut(width * 16).for_each(f);
}

/// Declares `fn name(args) [-> ret] body` compiled three times, for AVX-512, for AVX2 and FMA, and as built,
/// one chosen at run time by the path the products take ([`crate::processor::Kernels::chosen`], so
/// `ARBOR_KERNELS=avx2` sends these passes to 256 bits too): the element-wise passes then use the vectors
/// the sgemm kernel uses. Only the vector width changes, not the order of any sum (the reductions fold
/// over fixed lanes or in order), so every path computes the same floats.
macro_rules! multiversion {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? $body:block) => {
        $(#[$m])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn generic($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                use $crate::processor::Kernels;
                #[target_feature(enable = "avx512f,avx2,fma")]
                unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                    generic($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                    generic($($arg),*)
                }
                let fma = std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
                match Kernels::chosen() {
                    // SAFETY: `Avx512` is chosen only where the processor has avx512f; AVX2 and FMA checked here.
                    Kernels::Avx512 if fma => return unsafe { avx512($($arg),*) },
                    // SAFETY: the CPU supports AVX2 and FMA (checked just above).
                    _ if fma => return unsafe { avx2($($arg),*) },
                    _ => {}
                }
            }
            generic($($arg),*)
        }
    };
}
pub(super) use multiversion;

multiversion! {
    /// GELU of every value, in place.
    pub(super) fn gelu_all(xs: &mut [f32]) {
        for v in xs.iter_mut() {
            *v = gelu(*v);
        }
    }
}

multiversion! {
    /// Layer norm of each row of `rows` (rows as wide as the norm).
    fn layer_norm_rows(rows: &mut [f32], n: &Norm) {
        for row in rows.chunks_exact_mut(n.gamma.len()) {
            layer_norm(row, n);
        }
    }
}

/// `out = a W + b`, `a`: `[rows, input]`, `out`: `[rows, output]`.
pub(super) fn matmul_bias(a: &[f32], d: &Dense, out: &mut [f32]) {
    let rows = a.len() / d.input;
    let out = &mut out[..rows * d.output];
    for row in out.chunks_exact_mut(d.output) {
        row.copy_from_slice(&d.b);
    }
    sgemm(a, d, out, rows);
}

/// `x = a W + b + x` (the residual added in place), `x`: `[rows, output]`.
pub(super) fn matmul_bias_residual(a: &[f32], d: &Dense, x: &mut [f32]) {
    let rows = x.len() / d.output;
    for row in x.chunks_exact_mut(d.output) {
        row.iter_mut().zip(&d.b).for_each(|(v, b)| *v += b);
    }
    sgemm(&a[..rows * d.input], d, x, rows);
}

/// `out += a W` (row-major, contiguous), on the rayon pool.
fn sgemm(a: &[f32], d: &Dense, out: &mut [f32], rows: usize) {
    assert!(a.len() >= rows * d.input && out.len() >= rows * d.output && d.w.len() == d.input * d.output);
    let (dst, lhs, rhs) = (View::rows(out.as_mut_ptr(), d.output), View::rows(a.as_ptr(), d.input), View::rows(d.w.as_ptr(), d.output));
    // SAFETY: the asserts above bound every index the product reads or writes: a is [rows, input], W is
    // [input, output] and out is [rows, output], all row-major with the strides given.
    unsafe { product([rows, d.output, d.input], dst, lhs, rhs, 1.0, Accumulate::Yes, gemm::Parallelism::Rayon(0)) }
}

/// A matrix operand as `gemm` reads it: its first element and its row and column strides.
#[derive(Clone, Copy)]
pub(super) struct View<P> {
    pub(super) at: P,
    pub(super) rs: usize,
    pub(super) cs: usize,
}

impl<P> View<P> {
    /// Row-major with rows `width` apart.
    pub(super) fn rows(at: P, width: usize) -> Self {
        View { at, rs: width, cs: 1 }
    }
}

/// Whether a product is added to what `dst` holds or replaces it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Accumulate {
    Yes,
    No,
}

/// `dst = scale · lhs rhs` (added to `dst` with [`Accumulate::Yes`]) for `[m, n, k]`: `dst` `[m, n]`,
/// `lhs` `[m, k]`, `rhs` `[k, n]`, by the `gemm` crate's kernel with the parallelism given.
///
/// # Safety
/// Every element the shapes and strides address must lie inside the buffers the pointers come from.
#[inline(always)]
pub(super) unsafe fn product(
    [m, n, k]: [usize; 3],
    dst: View<*mut f32>,
    lhs: View<*const f32>,
    rhs: View<*const f32>,
    scale: f32,
    accumulate: Accumulate,
    parallelism: gemm::Parallelism,
) {
    let read_dst = accumulate == Accumulate::Yes;
    let i = |x: usize| x as isize;
    #[cfg(target_arch = "x86_64")]
    if crate::processor::Kernels::chosen() == (crate::processor::Kernels::Avx2 { forced: true }) {
        let alpha = if read_dst { 1.0 } else { 0.0 };
        // SAFETY: the caller's contract; `chosen` forces AVX2 only where the processor has AVX2 and FMA.
        unsafe {
            super::avx2::gemm(
                [m, n, k],
                (dst.at, i(dst.cs), i(dst.rs)),
                read_dst,
                (lhs.at, i(lhs.cs), i(lhs.rs)),
                (rhs.at, i(rhs.cs), i(rhs.rs)),
                (alpha, scale),
                parallelism,
            )
        };
        return;
    }
    // SAFETY: the caller's contract.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.at,
            i(dst.cs),
            i(dst.rs),
            read_dst,
            lhs.at,
            i(lhs.cs),
            i(lhs.rs),
            rhs.at,
            i(rhs.cs),
            i(rhs.rs),
            if read_dst { 1.0 } else { 0.0 },
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Softmax in place, in passes the compiler vectorises: the maximum and the sum over 8 lanes, the
/// exponentials with [`exp_neg`].
#[inline(always)]
pub(super) fn softmax(s: &mut [f32]) {
    let max = lanes(s, f32::NEG_INFINITY, f32::max);
    for v in s.iter_mut() {
        *v = exp_neg(*v - max);
    }
    let inv = 1.0 / lanes(s, 0.0, |a, b| a + b);
    for v in s.iter_mut() {
        *v *= inv;
    }
}

/// `xs` folded by `f` over 8 independent lanes, then across them.
#[inline(always)]
fn lanes(xs: &[f32], init: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut acc = [init; 8];
    let chunks = xs.chunks_exact(8);
    let tail = chunks.remainder().iter().fold(init, |a, &b| f(a, b));
    for c in chunks {
        for l in 0..8 {
            acc[l] = f(acc[l], c[l]);
        }
    }
    acc.into_iter().fold(tail, f)
}

/// `e^x` for `x <= 0` (a softmax's shifted scores), branch-free so that it vectorises: `x = i ln 2 + r`
/// with integer `i` and `|r| <= ln 2 / 2` (Cody and Waite's two-part `ln 2`, so `r` is exact to float
/// precision), `e^r` by its degree-7 Taylor polynomial (relative error < 2e-7), `2^i` put straight into
/// the exponent bits; `e^-87` for anything below.
#[inline(always)]
pub fn exp_neg(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4; // 0.693359375: few bits, so i LN2_HI is exact
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.max(-87.0);
    let i = (x * std::f32::consts::LOG2_E).round();
    let r = (x - i * LN2_HI) - i * LN2_LO;
    let mut p = 1.0 / 5040.0f32;
    for c in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = p * r + c;
    }
    p * f32::from_bits(((i as i32 + 127) as u32) << 23)
}

#[inline(always)]
fn layer_norm(row: &mut [f32], n: &Norm) {
    let len = row.len() as f32;
    let mean = row.iter().sum::<f32>() / len;
    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / len;
    let inv = 1.0 / (var + n.eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(&n.gamma).zip(&n.beta) {
        *v = (*v - mean) * inv * g + b;
    }
}

/// GELU with the exact erf, `x/2 (1 + erf(x/sqrt 2))` (BERT's `gelu`).
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// erf as a rational function of x on [-4, 4] (the minimax fit Eigen uses for float; |error| < 2e-7),
/// branch-free so that it vectorises; erf(±4) is 1 to float precision.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10f32;
    for c in [2.770_681_4e-8, -2.101_024e-6, -5.692_506_4e-5, -7.349_906_3e-4, -2.954_600_1e-3, -1.609_603_3e-2] {
        p = p * x2 + c;
    }
    let mut q = -1.456_607_2e-5f32;
    for c in [-2.133_740_6e-4, -1.682_827e-3, -7.373_329e-3, -1.426_474e-2] {
        q = q * x2 + c;
    }
    x * p / q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_reference_values() {
        // erf to 10 digits (Abramowitz and Stegun, Table 7.1).
        for (x, want) in [(0.0, 0.0), (0.1, 0.112_462_915), (0.5, 0.520_499_9), (1.0, 0.842_700_8), (2.0, 0.995_322_3), (3.5, 0.999_999_3)] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x}) = {} not {want}", erf(x));
            assert!((erf(-x) + want).abs() < 3e-7, "erf is odd");
        }
        assert_eq!(erf(9.0), erf(4.0));
        assert!((erf(4.0) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn exp_neg_matches_exp_to_float_precision() {
        for i in 0..=17_400 {
            let x = -(i as f32) * 0.005; // 0 down to -87
            let (got, want) = (exp_neg(x), (x as f64).exp());
            let tol = 2e-7 * want;
            assert!((got as f64 - want).abs() <= tol, "exp({x}) = {got}, not {want}");
        }
        assert_eq!(exp_neg(0.0), 1.0);
        assert_eq!(exp_neg(f32::NEG_INFINITY), exp_neg(-87.0));
    }

    #[test]
    fn gelu_is_x_times_the_normal_cdf() {
        assert_eq!(gelu(0.0), 0.0);
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((gelu(-1.0) + 0.158_655_3).abs() < 1e-6);
        assert!((gelu(10.0) - 10.0).abs() < 1e-5 && gelu(-10.0).abs() < 1e-5);
    }
}
