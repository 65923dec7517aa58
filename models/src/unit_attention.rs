//! Attention between the units of a document from the encoder's own token attention, mean-pooled into
//! unit blocks over a sliding window (ARCHITECTURE.md, "Paper to code", second attention source). The public
//! SproutRAG reference code runs one encoder pass over the whole document, truncated at 512 tokens; on a
//! document within one window the two are the same, and on a longer one the windows read what truncation
//! drops:
//!
//! ```text
//! window = [CLS] tokens(u_s) ... tokens(u_e) [SEP]         at most `window_tokens` tokens
//! A^{(l,h)}_{ij} = mean over token rows of u_i and token columns of u_j of the window's attention
//! ```
//!
//! Windows advance by half their units, so neighbouring units always share one; a pair seen in several
//! windows gets the mean over them, and a pair never in one window gets 0. Special tokens are left out of
//! the blocks. Nothing here holds `[layers, heads, n, n]`: the pairs within one window's reach are kept
//! (a band), [`SentenceEncoder::pair_attention`] gives every head's attention at given pairs (training the
//! head weights on L_attn), [`SentenceEncoder::unit_similarity`] the mixed M as its pairs (indexing).

use burn::tensor::backend::Backend;

use crate::bert::cpu::mean_normalise;
use crate::encoder::{Kernel, SentenceEncoder};

/// M between the units of a document as the pairs `(i, j, M_ij)`, `i < j`, that share a window, and, when
/// asked for, each unit's embedding in context.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitLinks {
    pub edges: Vec<(u32, u32, f32)>,
    pub vectors: Option<Vec<Vec<f32>>>,
}

/// What one pass gives for one window: `[t, t]` matrices, and its last-layer token states `[t, hidden]`
/// (empty when not asked for).
struct WindowPass {
    planes: Vec<Vec<f32>>,
    states: Vec<f32>,
}

/// The windows over units: `(first unit, units in window)`, each fitting `budget` tokens.
pub fn windows(lengths: &[usize], budget: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < lengths.len() {
        let mut used = 0;
        let mut count = 0;
        while start + count < lengths.len() && (count == 0 || used + lengths[start + count] <= budget) {
            used += lengths[start + count];
            count += 1;
        }
        out.push((start, count));
        if start + count >= lengths.len() {
            break;
        }
        start += (count / 2).max(1);
    }
    out
}

impl<B: Backend> SentenceEncoder<B> {
    /// The token-block attention between given pairs of `units` (texts of one document, in order), every
    /// (layer, head), made symmetric: `[pairs, layers * heads]` row-major, (A_ij + A_ji) / 2 with A averaged
    /// over the windows that hold both units (0 for a pair that no window holds). What L_attn reads of
    /// M = sym(sum w A) (`arbor_losses::attention_structure_at_pairs`), without holding `[layers, heads, n, n]`.
    pub fn pair_attention(&self, units: &[&str], window_tokens: usize, batch_size: usize, pairs: &[(usize, usize)]) -> Vec<f32> {
        let planes = self.config.num_hidden_layers * self.config.num_attention_heads;
        // Every head's probabilities of a batch are held at once (layers x batch x heads x t x t): at most
        // 8 windows per batch keeps that near 150 MB at 256 tokens (32 took the peak to 1.5 GB).
        let batch_size = batch_size.min(8);
        let (band, _) = self.pool_windows(units, window_tokens, batch_size, planes, &|batch| self.head_attention(batch, false));
        let at = |p: usize, i: usize, j: usize| band.get(p, i, j).unwrap_or(0.0);
        pairs.iter().flat_map(|&(i, j)| (0..planes).map(move |p| (at(p, i, j) + at(p, j, i)) / 2.0)).collect()
    }

    /// SproutRAG's M between `units` straight from the token attention: the (layer, head) attention mixed
    /// by `head_weights` (`[layers * heads]`, summing to 1), then pooled into unit blocks as
    /// [`Self::pair_attention`] does, made symmetric: M_ij = sum_lh w_lh pair_attention_ij,lh (mixing and block
    /// means are both linear; [`crate::aggregator::HeadAggregator::forward`] on the dense A), without ever holding
    /// `[layers, heads, n, n]`: on the CPU kernel each head's probabilities are added in as they are
    /// computed. M is returned sparse, as the pairs `(i, j, M_ij)`, `i < j`, that share a window (every
    /// other pair is 0): memory is O(n x units per window), not O(n^2).
    ///
    /// With `in_context`, the same pass also gives each unit's embedding in context: the mean of its
    /// last-layer token states over every window that holds it (special tokens left out), L2-normalised,
    /// so the document is encoded once instead of twice (once in windows, once unit by unit).
    pub fn unit_similarity(&self, units: &[&str], window_tokens: usize, batch_size: usize, head_weights: &[f32], in_context: bool) -> UnitLinks {
        let mix = |batch: &[&[u32]]| -> Vec<WindowPass> {
            match &self.kernel {
                Kernel::Cpu(cpu, _) => {
                    let (states, mixed) = match in_context {
                        true => cpu.states_and_mixed_attention(batch, head_weights),
                        false => (Vec::new(), cpu.mixed_attention(batch, head_weights)),
                    };
                    // Token states come laid end to end, window after window.
                    let h = self.config.hidden_size;
                    let starts = batch.iter().scan(0, |at, ids| {
                        *at += ids.len();
                        Some((*at - ids.len()) * h..*at * h)
                    });
                    mixed
                        .into_iter()
                        .zip(starts)
                        .map(|(m, rows)| WindowPass { planes: vec![m], states: states.get(rows).map_or(Vec::new(), <[f32]>::to_vec) })
                        .collect()
                }
                Kernel::Burn(..) => self
                    .head_attention(batch, in_context)
                    .into_iter()
                    .map(|window| {
                        let mut m = vec![0.0f32; window.planes[0].len()];
                        for (plane, &w) in window.planes.iter().zip(head_weights) {
                            m.iter_mut().zip(plane).for_each(|(m, p)| *m += w * p);
                        }
                        WindowPass { planes: vec![m], states: window.states }
                    })
                    .collect(),
            }
        };
        let (pooled, vectors) = self.pool_windows(units, window_tokens, batch_size, 1, &mix);
        let edges = pooled
            .pairs(0)
            .filter(|&(i, j, _)| i < j)
            .map(|(i, j, v)| (i as u32, j as u32, (v + pooled.get(0, j, i).unwrap_or(0.0)) / 2.0))
            .collect();
        UnitLinks { edges, vectors }
    }

    /// Each window's attention probabilities per (layer, head), through Burn's module: per window,
    /// `layers * heads` matrices `[t, t]` over its own `t` tokens, and with `states` its last-layer token states.
    fn head_attention(&self, batch: &[&[u32]], states: bool) -> Vec<WindowPass> {
        let (input, mask) = self.pad(batch);
        let t = input.dims()[1];
        let out = self.bert.forward(input, mask, true);
        let probs: Vec<Vec<f32>> = out.attentions.into_iter().map(|a| a.into_data().to_vec::<f32>().expect("f32")).collect();
        let hidden: Vec<f32> = match states {
            true => out.hidden.into_data().to_vec::<f32>().expect("f32"),
            false => Vec::new(),
        };
        let (heads, h) = (self.config.num_attention_heads, self.config.hidden_size);
        batch
            .iter()
            .enumerate()
            .map(|(w, ids)| {
                let len = ids.len();
                let plane = |layer: &Vec<f32>, h: usize| -> Vec<f32> {
                    let head = &layer[(w * heads + h) * t * t..][..t * t];
                    (0..len).flat_map(|r| head[r * t..r * t + len].iter().copied()).collect()
                };
                let planes = probs.iter().flat_map(|layer| (0..heads).map(move |h| plane(layer, h))).collect();
                let states = hidden.get(w * t * h..(w * t + len) * h).map_or(Vec::new(), <[f32]>::to_vec);
                WindowPass { planes, states }
            })
            .collect()
    }

    /// Token attention over windows of `units`, pooled into unit blocks: `attend` gives, for a batch of
    /// windows (token ids), `planes` matrices `[t, t]` per window; each is block-meaned over the window's
    /// units and added into a band of `planes` planes over the pairs that share a window, then every pair is
    /// divided by the number of windows that saw it. Where `attend` gives token states, each unit's are
    /// mean-pooled over every window that holds it into its in-context embedding (L2-normalised).
    fn pool_windows(
        &self,
        units: &[&str],
        window_tokens: usize,
        batch_size: usize,
        planes: usize,
        attend: &dyn Fn(&[&[u32]]) -> Vec<WindowPass>,
    ) -> (Band, Option<Vec<Vec<f32>>>) {
        let n = units.len();
        let budget = window_tokens.clamp(3, self.config.max_tokens()) - 2;
        let mut pieces = self.word_pieces(units);
        for p in &mut pieces {
            p.truncate(budget);
        }
        let (cls, sep) = self.special_ids();
        let wins = windows(&pieces.iter().map(Vec::len).collect::<Vec<_>>(), budget);
        let mut band = Band::new(planes, n, wins.iter().map(|w| w.1).max().unwrap_or(1));
        let h = self.config.hidden_size;
        let (mut state_sums, mut state_counts) = (Vec::new(), vec![0usize; n]);
        for chunk in wins.chunks(batch_size.max(1)) {
            let ids: Vec<Vec<u32>> =
                chunk.iter().map(|&(s, c)| std::iter::once(cls).chain(pieces[s..s + c].iter().flatten().copied()).chain([sep]).collect()).collect();
            let batch: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
            for ((&(start, count), window), ids) in chunk.iter().zip(attend(&batch)).zip(&ids) {
                // Token ranges of the window's units (position 0 is [CLS]).
                let mut ranges = Vec::with_capacity(count);
                let mut at = 1;
                for u in start..start + count {
                    ranges.push((at, at + pieces[u].len()));
                    at += pieces[u].len();
                }
                for (p, matrix) in window.planes.iter().enumerate() {
                    band.add(p, start, count, &block_means(matrix, ids.len(), &ranges));
                }
                band.seen(start, count);
                if !window.states.is_empty() {
                    state_sums.resize(n * h, 0.0);
                    for (u, &(a, b)) in (start..start + count).zip(&ranges) {
                        let sum = &mut state_sums[u * h..(u + 1) * h];
                        for token in window.states[a * h..b * h].chunks_exact(h) {
                            sum.iter_mut().zip(token).for_each(|(s, v)| *s += v);
                        }
                        state_counts[u] += b - a;
                    }
                }
            }
        }
        band.finish();
        let vectors = (!state_sums.is_empty()).then(|| {
            state_sums
                .chunks_exact_mut(h)
                .zip(&state_counts)
                .map(|(sum, &c)| {
                    mean_normalise(sum, c);
                    sum.to_vec()
                })
                .collect()
        });
        (band, vectors)
    }
}

/// Pairs of units that share a window, per plane: units `i` and `j` are stored when |i - j| < `width`
/// (the most units in one window), so memory is `planes x n x (2 width - 1)`.
struct Band {
    n: usize,
    width: usize,
    sums: Vec<f32>,
    counts: Vec<u32>,
}

impl Band {
    fn new(planes: usize, n: usize, width: usize) -> Band {
        let row = 2 * width - 1;
        Band { n, width, sums: vec![0.0; planes * n * row], counts: vec![0; n * row] }
    }

    /// Position of pair (i, j) within a plane, if stored.
    fn slot(&self, i: usize, j: usize) -> Option<usize> {
        let d = j + self.width - 1;
        (i < self.n && j < self.n && d >= i && d - i < 2 * self.width - 1).then(|| i * (2 * self.width - 1) + d - i)
    }

    /// Adds the `count x count` block means of a window starting at unit `start` to `plane`.
    fn add(&mut self, plane: usize, start: usize, count: usize, block: &[f32]) {
        let per_plane = self.n * (2 * self.width - 1);
        for (i, row) in block.chunks_exact(count).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                let at = self.slot(start + i, start + j).expect("a window's pairs are in the band");
                self.sums[plane * per_plane + at] += v;
            }
        }
    }

    /// Counts the window's pairs once.
    fn seen(&mut self, start: usize, count: usize) {
        for i in start..start + count {
            for j in start..start + count {
                let at = self.slot(i, j).expect("a window's pairs are in the band");
                self.counts[at] += 1;
            }
        }
    }

    /// Every pair's sum becomes its mean over the windows that saw it.
    fn finish(&mut self) {
        let per_plane = self.counts.len();
        for (k, v) in self.sums.iter_mut().enumerate() {
            let c = self.counts[k % per_plane];
            if c > 0 {
                *v /= c as f32;
            }
        }
    }

    /// The mean for (i, j) on `plane`, if some window saw the pair.
    fn get(&self, plane: usize, i: usize, j: usize) -> Option<f32> {
        let at = self.slot(i, j)?;
        (self.counts[at] > 0).then(|| self.sums[plane * self.counts.len() + at])
    }

    /// The pairs (the diagonal too) some window saw on `plane`, as (i, j, mean).
    fn pairs(&self, plane: usize) -> impl Iterator<Item = (usize, usize, f32)> + '_ {
        let lo = |i: usize| (i + 1).saturating_sub(self.width);
        (0..self.n).flat_map(move |i| (lo(i)..(i + self.width).min(self.n)).filter_map(move |j| Some((i, j, self.get(plane, i, j)?))))
    }
}

/// Means of a `t x t` attention matrix over blocks of token ranges, `[units, units]` row-major.
fn block_means(head: &[f32], t: usize, ranges: &[(usize, usize)]) -> Vec<f32> {
    let k = ranges.len();
    // Columns first: for every token row, the mean over each unit's columns.
    let mut cols = vec![0.0f32; t * k];
    for row in 0..t {
        let r = &head[row * t..(row + 1) * t];
        for (j, &(a, b)) in ranges.iter().enumerate() {
            cols[row * k + j] = r[a..b].iter().sum::<f32>() / (b - a).max(1) as f32;
        }
    }
    let mut out = vec![0.0f32; k * k];
    for (i, &(a, b)) in ranges.iter().enumerate() {
        for row in a..b {
            for j in 0..k {
                out[i * k + j] += cols[row * k + j];
            }
        }
        for j in 0..k {
            out[i * k + j] /= (b - a).max(1) as f32;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_fit_the_budget_and_overlap_by_half() {
        assert_eq!(windows(&[3, 3, 3, 3, 3], 9), vec![(0, 3), (1, 3), (2, 3)]);
        // A unit longer than the budget still gets a window of its own.
        assert_eq!(windows(&[20, 2], 9), vec![(0, 1), (1, 1)]);
        assert_eq!(windows(&[1], 9), vec![(0, 1)]);
    }

    #[test]
    fn the_band_averages_each_pair_over_the_windows_that_saw_it() {
        // Units 0..4, windows (0, 3) and (2, 2): pair (2, 2) is seen twice, (0, 3) and (3, 0) never.
        let mut band = Band::new(1, 4, 3);
        band.add(0, 0, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        band.seen(0, 3);
        band.add(0, 2, 2, &[3.0, 10.0, 20.0, 30.0]);
        band.seen(2, 2);
        band.finish();
        assert_eq!(band.get(0, 2, 2), Some(6.0));
        assert_eq!((band.get(0, 0, 1), band.get(0, 2, 3), band.get(0, 3, 2)), (Some(2.0), Some(10.0), Some(20.0)));
        assert_eq!((band.get(0, 0, 3), band.get(0, 3, 0)), (None, None));
        let pairs: Vec<(usize, usize, f32)> = band.pairs(0).collect();
        assert_eq!(pairs.len(), 9 + 4 - 1);
        assert!(pairs.contains(&(1, 2, 6.0)) && pairs.contains(&(3, 3, 30.0)));
    }

    #[test]
    fn block_means_average_rows_and_columns_of_each_unit() {
        // t = 4: token 0 is [CLS], units cover tokens 1..3 and 3..4.
        #[rustfmt::skip]
        let head = [
            1.0, 0.0, 0.0, 0.0,
            0.0, 0.2, 0.4, 0.4,
            0.0, 0.6, 0.2, 0.2,
            0.0, 0.1, 0.1, 0.8,
        ];
        let b = block_means(&head, 4, &[(1, 3), (3, 4)]);
        let want = [(0.2 + 0.4 + 0.6 + 0.2) / 4.0, (0.4 + 0.2) / 2.0, (0.1 + 0.1) / 2.0, 0.8];
        for (g, w) in b.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{b:?}");
        }
    }
}
