//! Paired significance of a difference between two methods scored on the same queries, as IR papers
//! report it (trec_eval's and ranx's convention): per query, `d_i = a_i - b_i`, then
//!
//! ```text
//! difference      mean(d)
//! 95 % interval   the 2.5th and 97.5th percentiles of mean(d*) over B bootstrap resamples d* of d
//!                 (n queries drawn with replacement; Efron & Tibshirani's percentile interval)
//! p               Fisher's paired randomization test, two-sided: the share of sign assignments s in
//!                 {-1, +1}^n with |mean(s d)| >= |mean(d)|; exact over all 2^n assignments when
//!                 2^n <= B, else (1 + hits) / (1 + B) over B random ones (ranx's estimate)
//! Holm            p-values of a family adjusted by Holm-Bonferroni: sorted ascending, the i-th
//!                 (0-based) of m is max over j <= i of min(1, (m - j) p_(j))
//! ```
//!
//! The random draws come from SplitMix64 with a fixed seed, so a report's intervals are the same on every
//! machine and every rerun.

use serde::{Deserialize, Serialize};

/// Resamples of the bootstrap and random sign assignments of the randomization test.
pub const RESAMPLES: usize = 10_000;
/// The seed of both.
pub const SEED: u64 = 0x5eed_a7b0;

/// A paired comparison of two methods on the same queries.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// mean(a - b).
    pub difference: f64,
    /// The bootstrap 95 % interval of the difference.
    pub low: f64,
    pub high: f64,
    /// The two-sided randomization-test p-value.
    pub p: f64,
}

/// The paired bootstrap interval and randomization p-value of `a - b` (same queries, same order),
/// with [`RESAMPLES`] draws from [`SEED`].
pub fn paired(a: &[f64], b: &[f64]) -> Paired {
    assert_eq!(a.len(), b.len(), "a paired comparison needs the same queries on both sides");
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let (low, high) = bootstrap_interval(&d, RESAMPLES, SEED);
    Paired { difference: mean(&d), low, high, p: randomization_p(&d, RESAMPLES, SEED) }
}

fn mean(d: &[f64]) -> f64 {
    if d.is_empty() { 0.0 } else { d.iter().sum::<f64>() / d.len() as f64 }
}

/// The 2.5th and 97.5th percentiles of the mean of `d` over `resamples` bootstrap resamples.
pub fn bootstrap_interval(d: &[f64], resamples: usize, seed: u64) -> (f64, f64) {
    if d.is_empty() {
        return (0.0, 0.0);
    }
    let mut rng = SplitMix64(seed);
    let n = d.len();
    let mut means: Vec<f64> = (0..resamples).map(|_| (0..n).map(|_| d[rng.below(n)]).sum::<f64>() / n as f64).collect();
    means.sort_by(f64::total_cmp);
    (percentile(&means, 0.025), percentile(&means, 0.975))
}

/// The value at quantile `q` of sorted values, by the nearest rank (the smallest value with at least
/// `q` of them at or below it).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Fisher's two-sided paired randomization test on the differences `d`.
pub fn randomization_p(d: &[f64], resamples: usize, seed: u64) -> f64 {
    let n = d.len();
    if n == 0 {
        return 1.0;
    }
    let observed = d.iter().sum::<f64>().abs();
    // Sums compared with a tolerance: flipping signs reorders floating-point additions.
    let at_least = |sum: f64| sum.abs() >= observed - 1e-9 * (1.0 + observed);
    if n < 63 && (1u64 << n) as usize <= resamples {
        let hits = (0..1u64 << n).filter(|&signs| at_least(signed_sum(d, |i| signs >> i & 1 == 1))).count();
        return hits as f64 / (1u64 << n) as f64;
    }
    let mut rng = SplitMix64(seed);
    let hits = (0..resamples)
        .filter(|_| {
            let signs: Vec<bool> = (0..n).map(|_| rng.next() & 1 == 1).collect();
            at_least(signed_sum(d, |i| signs[i]))
        })
        .count();
    (1 + hits) as f64 / (1 + resamples) as f64
}

fn signed_sum(d: &[f64], negative: impl Fn(usize) -> bool) -> f64 {
    d.iter().enumerate().map(|(i, &x)| if negative(i) { -x } else { x }).sum()
}

/// Holm-Bonferroni adjusted p-values, in the order given.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (i, &at) in order.iter().enumerate() {
        running = running.max(((m - i) as f64 * p[at]).min(1.0));
        adjusted[at] = running;
    }
    adjusted
}

/// SplitMix64 (Steele, Lea and Flood 2014): small, fast, and the same on every platform.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform integer below `n` (Lemire's multiply-shift; the bias is below 2^-40 for our n).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_constant_difference_has_a_point_interval() {
        let (low, high) = bootstrap_interval(&[0.3, 0.3, 0.3, 0.3], 1000, 1);
        assert!((low - 0.3).abs() < 1e-12 && (high - 0.3).abs() < 1e-12);
    }

    #[test]
    fn two_queries_resample_to_their_extremes() {
        // d = [0, 1]: a resample's mean is 0, 0.5 or 1 with chances 1/4, 1/2, 1/4, so the 2.5th percentile
        // is 0 and the 97.5th is 1.
        assert_eq!(bootstrap_interval(&[0.0, 1.0], RESAMPLES, SEED), (0.0, 1.0));
    }

    #[test]
    fn exact_randomization_by_hand() {
        // d = [1, 1, 1]: only all-plus and all-minus reach |sum| = 3: 2 of 8.
        assert_eq!(randomization_p(&[1.0, 1.0, 1.0], RESAMPLES, SEED), 0.25);
        // d = [2, -1, 1]: |sum| = 2 is reached by sums 2, -2 and by 4, -4 (+2+1+1, with -1 flipped): the sign
        // patterns of (2, -1, 1) give sums 2, 0, 4, 2 and their negations: 6 of 8 are >= 2 in size.
        assert_eq!(randomization_p(&[2.0, -1.0, 1.0], RESAMPLES, SEED), 0.75);
        // No difference at all: p = 1.
        assert_eq!(randomization_p(&[0.0, 0.0], RESAMPLES, SEED), 1.0);
    }

    #[test]
    fn sampled_randomization_approaches_the_exact_value() {
        // 20 equal differences: exact p = 2 / 2^20; the sampled estimate is (1 + hits) / (1 + B), at least
        // 1 / (1 + B) and, with so few hits, close to it.
        let d = vec![0.5; 20];
        let p = randomization_p(&d, RESAMPLES, SEED);
        assert!(p >= 1.0 / (1.0 + RESAMPLES as f64) && p < 5e-4, "{p}");
        // Symmetric noise: p is large.
        let noise: Vec<f64> = (0..40).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
        assert!(randomization_p(&noise, RESAMPLES, SEED) > 0.9);
    }

    #[test]
    fn holm_by_hand() {
        // Sorted 0.01, 0.02, 0.04 of m = 3: 0.03, 0.04, 0.04 (the last raised to the running maximum).
        let got = holm(&[0.04, 0.01, 0.02]);
        let want = [0.04, 0.03, 0.04];
        assert!(got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-12), "{got:?}");
        assert_eq!(holm(&[0.6, 0.9]), vec![1.0, 1.0]);
    }

    #[test]
    fn the_same_inputs_give_the_same_figures() {
        let a: Vec<f64> = (0..100).map(|i| (i % 7) as f64 / 7.0).collect();
        let b: Vec<f64> = (0..100).map(|i| (i % 5) as f64 / 5.0).collect();
        assert_eq!(paired(&a, &b), paired(&a, &b));
    }

    proptest! {
        #[test]
        fn the_interval_holds_the_mean_and_swapping_sides_mirrors_it(d in prop::collection::vec(-1.0f64..1.0, 1..30)) {
            let zeros = vec![0.0; d.len()];
            let ab = paired(&d, &zeros);
            let ba = paired(&zeros, &d);
            prop_assert!(ab.low <= ab.difference + 1e-12 && ab.difference <= ab.high + 1e-12);
            prop_assert!((ab.difference + ba.difference).abs() < 1e-12);
            prop_assert!((ab.p - ba.p).abs() < 1e-12);
            prop_assert!((0.0..=1.0).contains(&ab.p));
        }
    }
}
