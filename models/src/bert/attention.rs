//! Attention over packed sequences for the CPU kernels ([`super::cpu`]'s forward pass, [`super::tape`]'s
//! backward pass): scaled dot-product attention (Vaswani et al., 2017) of each sequence over its own
//! tokens, per head, with MPNet's relative position bias ([`Relative`]; Song et al., 2020, T5's buckets)
//! added to the scores where the family has one ([`super::families`]), spread over the thread pool by
//! sequence and, for long sequences, by head.

use std::ops::Range;

use burn::tensor::backend::Backend;
use rayon::prelude::*;

use super::cpu::{Accumulate, View, multiversion, product, softmax, values};
use super::model::Bert;

/// MPNet's relative position bias as the kernels add it ([`super::families::mpnet`]): the table
/// `[buckets, heads]` and each distance's bucket, from `-(len - 1)` to `len - 1` for every length the
/// position table allows.
#[derive(Debug, Clone)]
pub(super) struct Relative {
    pub(super) table: Vec<f32>,
    pub(super) heads: usize,
    /// The bucket of distance `d` at `d + len - 1`.
    by_distance: Vec<usize>,
    len: usize,
}

impl Relative {
    /// The bias of `bert`'s table, if it has one, for sequences of up to `len` tokens.
    pub(super) fn of<B: Backend>(bert: &Bert<B>, len: usize) -> Option<Self> {
        let table = bert.relative_attention_bias.as_ref()?;
        let heads = table.weight.val().dims()[1];
        Some(Relative { table: values(&table.weight), heads, by_distance: super::families::mpnet::buckets_by_distance(len), len })
    }

    /// Head `head`'s bias for every distance of a sequence of `n` tokens, from `-(n - 1)` to `n - 1`, into
    /// `out` (`2n - 1`): row `i` of the scores adds `out[n - 1 - i..2n - 1 - i]`.
    pub(super) fn by_distance(&self, head: usize, n: usize, out: &mut Vec<f32>) {
        assert!(n <= self.len, "a sequence of {n} tokens is longer than the position table's {}", self.len);
        let first = self.len - n;
        out.clear();
        out.extend(self.by_distance[first..first + 2 * n - 1].iter().map(|&b| self.table[b * self.heads + head]));
    }

    /// The bucket of each distance of a sequence of `n` tokens, from `-(n - 1)` to `n - 1`.
    pub(super) fn buckets(&self, n: usize) -> &[usize] {
        let first = self.len - n;
        &self.by_distance[first..first + 2 * n - 1]
    }
}

/// Attention's products run on the calling thread: [`attention`] already gives each sequence a thread.
pub(super) const ONE_THREAD: gemm::Parallelism = gemm::Parallelism::None;

/// What [`attend`] does with a sequence's attention probabilities besides using them.
pub(super) enum Probs<'a> {
    /// Nothing: only the context is wanted.
    Drop,
    /// Each head's probabilities times its weight (this layer's, one per head) added into `into` `[n, n]`.
    Mix { weights: &'a [f32], into: &'a mut [f32] },
    /// Every head's kept in `[heads, n, n]` (what the backward pass of `super::tape` reads).
    Keep(&'a mut [f32]),
}

/// Scaled dot-product attention of each sequence over its own tokens, every head (`[heads, hidden]`), with
/// the relative position bias where the family has one; `qkv`: `[T, 3 hidden]` (query, key, value),
/// `context`: `[T, hidden]`, heads side by side as in BertSelfAttention; `probs`, one per sequence, says
/// what becomes of its probabilities. The work is spread over the thread pool by
/// sequence and, for a sequence of [`SPLIT_HEADS_FROM`] tokens or more, by head (one long window would
/// otherwise keep one thread busy and leave the others idle), except where the heads' probabilities are
/// mixed into one matrix ([`Probs::Mix`]: one task a sequence, adding its heads in order).
pub(super) fn attention(
    qkv: &[f32],
    lengths: &[usize],
    [heads, h]: [usize; 2],
    relative: Option<&Relative>,
    context: &mut [f32],
    probs: Vec<Probs<'_>>,
) {
    assert_eq!(context.len(), lengths.iter().sum::<usize>() * h, "context is [T, hidden]");
    assert_eq!(qkv.len(), 3 * context.len(), "qkv is [T, 3 hidden]");
    assert!(h.is_multiple_of(heads.max(1)), "heads split the hidden size");
    let dh = h / heads.max(1);
    let out = Shared(context.as_mut_ptr());
    for_each_head_task(lengths, heads, probs, |tokens, range, mut p| {
        SCRATCH.with_borrow_mut(|scratch| attend(qkv, tokens, range, [h, dh], relative, out, &mut p, scratch))
    });
}

thread_local! {
    /// A thread's scratch for one head's relative position bias by distance ([`Relative::by_distance`]).
    pub(super) static DISTANCES: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Adds head `head`'s relative position bias to its scores `[n, n]`, where the family has one.
#[inline(always)]
fn add_relative(scores: &mut [f32], relative: Option<&Relative>, head: usize, n: usize) {
    let Some(relative) = relative else { return };
    DISTANCES.with_borrow_mut(|bias| {
        relative.by_distance(head, n, bias);
        for (i, row) in scores.chunks_exact_mut(n).enumerate() {
            row.iter_mut().zip(&bias[n - 1 - i..2 * n - 1 - i]).for_each(|(s, b)| *s += b);
        }
    });
}

/// The sequence length from which [`attention`] and its backward pass give each head a task of its own.
pub(super) const SPLIT_HEADS_FROM: usize = 128;

/// Runs `task(tokens, heads, part)` on the thread pool for each sequence of `lengths` (its rows
/// `tokens` of the batch) and its `per_sequence` part: once for all `heads`, or, from [`SPLIT_HEADS_FROM`]
/// tokens where `split` cuts the part by head, once a head with that head's part. Empty sequences get none.
pub(super) fn head_tasks<T: Send>(
    lengths: &[usize],
    heads: usize,
    per_sequence: Vec<T>,
    split: impl Fn(T, usize, usize) -> Result<Vec<T>, T>,
    task: impl Fn(Range<usize>, Range<usize>, T) + Sync + Send,
) {
    let mut tasks: Vec<(Range<usize>, Range<usize>, T)> = Vec::with_capacity(lengths.len());
    let mut start = 0;
    for (&n, part) in lengths.iter().zip(per_sequence) {
        let tokens = start..start + n;
        start += n;
        if n == 0 {
            continue;
        }
        match if n >= SPLIT_HEADS_FROM { split(part, n, heads) } else { Err(part) } {
            Ok(parts) => tasks.extend(parts.into_iter().enumerate().map(|(head, part)| (tokens.clone(), head..head + 1, part))),
            Err(part) => tasks.push((tokens, 0..heads, part)),
        }
    }
    tasks.into_par_iter().for_each(|(tokens, range, part)| task(tokens, range, part));
}

/// [`head_tasks`] for the forward pass's [`Probs`]: kept probabilities cut by head, dropped ones split
/// freely, mixed ones never (their heads add into one matrix).
fn for_each_head_task<'a>(
    lengths: &[usize],
    heads: usize,
    probs: Vec<Probs<'a>>,
    task: impl Fn(Range<usize>, Range<usize>, Probs<'a>) + Sync + Send,
) {
    let split = |p: Probs<'a>, n: usize, heads: usize| match p {
        Probs::Keep(kept) => Ok(kept.chunks_exact_mut(n * n).map(Probs::Keep).collect()),
        Probs::Drop => Ok((0..heads).map(|_| Probs::Drop).collect()),
        mix @ Probs::Mix { .. } => Err(mix),
    };
    head_tasks(lengths, heads, probs, split, task);
}

/// A buffer's start handed to the thread pool's tasks, each of which writes elements of it that no other
/// task reads or writes (a head's columns of a sequence's rows).
#[derive(Clone, Copy)]
pub(super) struct Shared(pub(super) *mut f32);

// SAFETY: every task a `Shared` is given to writes elements no other task reads or writes (each user's
// comment says which), and the buffer outlives the tasks (rayon's `for_each` returns after all of them).
unsafe impl Send for Shared {}
// SAFETY: as for `Send`.
unsafe impl Sync for Shared {}

thread_local! {
    /// A thread's scratch `[n, n]` for the heads whose probabilities are not kept (every element is
    /// written before it is read).
    pub(super) static SCRATCH: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

multiversion! {
/// One sequence's attention (rows `tokens` of `qkv` `[T, 3h]`), the heads in `range` (`widths`: `[h, dh]`),
/// the relative position bias added to the scores where there is one,
/// into those heads' columns of the sequence's rows of `context` `[T, h]` (`out`, its start); the
/// probabilities as `probs` says (`Keep`: `[range.len(), n, n]`; `local`: scratch for those not kept). Per
/// head, two matrix products read the head's columns of `qkv` and write its columns of `context` in place
/// (strided, nothing copied): `S = Q Kᵀ / sqrt(d) (+ b)`, softmax of each row, then `P V`. Tasks of disjoint
/// (sequence, head) pairs write disjoint elements of `context` and read none of it.
#[allow(clippy::too_many_arguments)] // one task's reads, its writes and its scratch, each named
fn attend(qkv: &[f32], tokens: Range<usize>, range: Range<usize>, widths: [usize; 2], relative: Option<&Relative>, out: Shared, probs: &mut Probs<'_>, local: &mut Vec<f32>) {
    let [h, dh] = widths;
    let scale = 1.0 / (dh as f32).sqrt();
    let n = tokens.len();
    let rows = &qkv[tokens.start * 3 * h..tokens.end * 3 * h];
    let first = range.start;
    match probs {
        Probs::Keep(kept) => assert_eq!(kept.len(), range.len() * n * n, "one [n, n] per head"),
        _ => local.resize(n * n, 0.0),
    }
    for head in range {
        let c = head * dh;
        let scores: &mut [f32] = match probs {
            Probs::Keep(kept) => &mut kept[(head - first) * n * n..(head - first + 1) * n * n],
            _ => &mut local[..n * n],
        };
        // S = scale Q Kᵀ: K read transposed (row stride 1, column stride 3h).
        let (queries, keys) = (View::rows(rows[c..].as_ptr(), 3 * h), View { at: rows[h + c..].as_ptr(), rs: 1, cs: 3 * h });
        // SAFETY: `rows` is [n, 3h] row-major; Q, K and V of this head are its columns c, h + c and
        // 2h + c onward, dh wide, so the last element read is (n-1) 3h + 2h + c + dh - 1 < 3hn. `scores`
        // is [n, n].
        unsafe { product([n, n, dh], View::rows(scores.as_mut_ptr(), n), queries, keys, scale, Accumulate::No, ONE_THREAD) };
        add_relative(scores, relative, head, n);
        // A loop, not `for_each`: the iterator's fold would be a function of its own, compiled without this
        // function's target features (the exponentials then call libm's roundf one at a time).
        for row in scores.chunks_exact_mut(n) {
            softmax(row);
        }
        // The head's context: P V into its columns c..c + dh of the sequence's rows of `context`.
        // SAFETY: `out` is `context`'s start, [T, h]; this sequence's rows are tokens.start.., so the
        // head's columns end at (tokens.end - 1) h + c + dh - 1 < T h. No other task writes or reads
        // these (sequence, head) elements ([`attention`] gives each pair to one task).
        let context = View::rows(unsafe { out.0.add(tokens.start * h + c) }, h);
        let (p, values) = (View::rows(scores.as_ptr(), n), View::rows(rows[2 * h + c..].as_ptr(), 3 * h));
        // SAFETY: the bounds of the first product's comment; V's columns start at 2h + c.
        unsafe { product([n, dh, n], context, p, values, 1.0, Accumulate::No, ONE_THREAD) };
        if let Probs::Mix { weights, into } = probs
            && let Some(&w) = weights.get(head)
        {
            for (m, p) in into.iter_mut().zip(&local[..n * n]) {
                *m += w * p;
            }
        }
    }
}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_of_one_token_is_its_value_and_rows_mix_by_softmax() {
        // One head, hidden 2: q, k, v per token.
        let qkv = [
            // token 0: q (1, 0), k (1, 0), v (1, 2)
            1.0, 0.0, 1.0, 0.0, 1.0, 2.0, //
            // token 1: q (0, 0), k (0, 0), v (3, 4)
            0.0, 0.0, 0.0, 0.0, 3.0, 4.0,
        ];
        let mut out = [0.0f32; 4];
        attention(&qkv[..6], &[1], [1, 2], None, &mut out[..2], vec![Probs::Drop]);
        assert_eq!(&out[..2], &[1.0, 2.0]);
        let mut mixed = vec![vec![0.0f32; 4]];
        attention(&qkv, &[2], [1, 2], None, &mut out, vec![Probs::Mix { weights: &[0.5], into: &mut mixed[0] }]);
        // Token 0 scores (1/sqrt 2, 0) -> p0 = sigmoid(1/sqrt 2); token 1 scores (0, 0) -> (1/2, 1/2).
        let p0 = 1.0 / (1.0 + (-std::f32::consts::FRAC_1_SQRT_2).exp());
        let want = [p0 * 1.0 + (1.0 - p0) * 3.0, p0 * 2.0 + (1.0 - p0) * 4.0, 2.0, 3.0];
        out.iter().zip(want).for_each(|(o, w)| assert!((o - w).abs() < 1e-6, "{out:?} vs {want:?}"));
        // The probabilities, at the head's weight 0.5.
        let probs = [p0, 1.0 - p0, 0.5, 0.5];
        mixed[0].iter().zip(probs).for_each(|(m, p)| assert!((m - 0.5 * p).abs() < 1e-6, "{mixed:?}"));
        // Kept, they are the probabilities themselves.
        let mut kept = vec![0.0f32; 4];
        attention(&qkv, &[2], [1, 2], None, &mut out, vec![Probs::Keep(&mut kept)]);
        kept.iter().zip(probs).for_each(|(k, p)| assert!((k - p).abs() < 1e-6, "{kept:?}"));
        // Two sequences laid end to end never attend to each other.
        attention(&qkv, &[1, 1], [1, 2], None, &mut out, vec![Probs::Drop, Probs::Drop]);
        assert_eq!(out, [1.0, 2.0, 3.0, 4.0]);
    }
}
