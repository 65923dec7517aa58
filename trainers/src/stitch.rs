//! STITCH, "Solve with RL, Then Imitate To Close Holes" (SmartChunk, Section 4.2 and Algorithm 2): the
//! route one training query takes in a step.
//!
//! 1. Vanilla rollouts: G samples of the policy on (q, metadata). If any solves the query, the group goes
//!    to the GRPO update (Algorithm 2, lines 8-11).
//! 2. Hinted rollouts: otherwise G samples conditioned on a hint, the first tokens of the expert trace
//!    (the pseudo-label's tokens). The hint's length is estimated from the success rate, the strategy the
//!    paper adopts (Appendix, "Hint Extraction in STITCH", Figure 8; it gives no formula). Ours keeps a
//!    hint fraction h, starting at 1: a hint is `round(h * |trace|)` tokens, at least 1 and at most
//!    `|trace| - 1` (the policy always writes the end itself), and after each hinted group
//!    `h <- clamp(h - step * (s - target), 0, 1)` with s the share of its rollouts that solved: hints
//!    shorten while hinted rollouts mostly succeed and lengthen while they mostly fail, so they track what
//!    the policy can complete. (A rule on the vanilla success rate alone never shortens them while vanilla
//!    rollouts all fail, which is where training starts.) A solved hinted group goes to the GRPO update
//!    (lines 16-20).
//! 3. Imitation: a query unsolved even with the hint goes to the imitation buffer; when the buffer holds
//!    `buffer_size` queries, the trainer takes them for one SFT step on their full expert traces and the
//!    buffer is emptied (lines 21-22, 29-33).

use serde::{Deserialize, Serialize};

/// One group of rollouts of a prompt: each rollout's output, reward, and whether it solved the query.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollouts<O> {
    pub outputs: Vec<O>,
    pub rewards: Vec<f32>,
    pub solved: Vec<bool>,
}

impl<O> Rollouts<O> {
    /// ISSOLVABLE of Algorithm 2: some rollout solved the query.
    pub fn solvable(&self) -> bool {
        self.solved.iter().any(|&s| s)
    }
}

/// Where a query went this step.
#[derive(Debug, Clone, PartialEq)]
pub enum Route<O> {
    /// Solved by the vanilla rollouts: GRPO on them.
    Vanilla(Rollouts<O>),
    /// Solved only with the first `hint_tokens` tokens of the expert trace given: GRPO on these rollouts.
    Hinted { hint_tokens: usize, rollouts: Rollouts<O> },
    /// Unsolved even with the hint: in the imitation buffer now.
    Imitation,
}

/// STITCH's state across steps: the running success rate and the imitation buffer (saved with the
/// checkpoint, so a resumed run routes as the uninterrupted one would).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stitch {
    /// T of Algorithm 2: an SFT step whenever the imitation buffer holds this many queries.
    pub buffer_size: usize,
    /// Vanilla rollouts so far, and how many of them solved their query.
    pub rollouts: u64,
    pub solved: u64,
    /// h: the share of the expert trace a hint gives.
    pub hint_fraction: f64,
    /// The queries (training example ids) waiting for imitation.
    pub buffer: Vec<usize>,
}

impl Stitch {
    pub fn new(buffer_size: usize) -> Self {
        Stitch { buffer_size: buffer_size.max(1), rollouts: 0, solved: 0, hint_fraction: 1.0, buffer: Vec::new() }
    }

    /// The hinted groups' target success share, and how fast h follows it.
    const TARGET: f64 = 0.5;
    const STEP: f64 = 0.1;

    /// The running success rate p of vanilla rollouts (0 before any).
    pub fn success_rate(&self) -> f64 {
        if self.rollouts == 0 { 0.0 } else { self.solved as f64 / self.rollouts as f64 }
    }

    /// The hint's length for an expert trace of `trace_tokens` tokens: `round(h * |trace|)`, in
    /// `[1, |trace| - 1]` (0 for a trace of one token: there is nothing to hint).
    pub fn hint_tokens(&self, trace_tokens: usize) -> usize {
        if trace_tokens < 2 {
            return 0;
        }
        ((self.hint_fraction * trace_tokens as f64).round() as usize).clamp(1, trace_tokens - 1)
    }

    /// Routes query `example`, whose expert trace has `trace_tokens` tokens: `rollout(hint_tokens)`
    /// samples a group (0: vanilla). A trainer that samples a whole batch's groups at once calls the
    /// steps itself: [`Stitch::record_vanilla`], then for an unsolved query [`Stitch::hint_tokens`] and
    /// [`Stitch::record_hinted`].
    pub fn route<O>(&mut self, example: usize, trace_tokens: usize, mut rollout: impl FnMut(usize) -> Rollouts<O>) -> Route<O> {
        let vanilla = rollout(0);
        if self.record_vanilla(&vanilla.solved) {
            return Route::Vanilla(vanilla);
        }
        let hint_tokens = self.hint_tokens(trace_tokens);
        if hint_tokens > 0 {
            let hinted = rollout(hint_tokens);
            if self.record_hinted(example, &hinted.solved) {
                return Route::Hinted { hint_tokens, rollouts: hinted };
            }
        } else {
            self.buffer.push(example);
        }
        Route::Imitation
    }

    /// Counts a vanilla group toward the success rate; whether it solved its query.
    pub fn record_vanilla(&mut self, solved: &[bool]) -> bool {
        self.rollouts += solved.len() as u64;
        self.solved += solved.iter().filter(|&&s| s).count() as u64;
        solved.contains(&true)
    }

    /// Moves the hint fraction by a hinted group's success; an unsolved query goes to the imitation
    /// buffer. Whether the group solved its query.
    pub fn record_hinted(&mut self, example: usize, solved: &[bool]) -> bool {
        let share = solved.iter().filter(|&&s| s).count() as f64 / solved.len().max(1) as f64;
        self.hint_fraction = (self.hint_fraction - Self::STEP * (share - Self::TARGET)).clamp(0.0, 1.0);
        if !solved.contains(&true) {
            self.buffer.push(example);
        }
        solved.contains(&true)
    }

    /// The buffered queries for one imitation (SFT) step, when there are `buffer_size` of them; the buffer
    /// is then empty.
    pub fn imitation_batch(&mut self) -> Option<Vec<usize>> {
        (self.buffer.len() >= self.buffer_size).then(|| std::mem::take(&mut self.buffer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// G = 2 rollouts that solve the query when the hint has at least `needs` tokens (`None`: never).
    fn policy(needs: Option<usize>, calls: &mut Vec<usize>) -> impl FnMut(usize) -> Rollouts<usize> + '_ {
        move |hint| {
            calls.push(hint);
            let ok = needs.is_some_and(|n| hint >= n);
            Rollouts { outputs: vec![hint; 2], rewards: vec![if ok { 1.0 } else { 0.0 }, 0.0], solved: vec![ok, false] }
        }
    }

    #[test]
    fn a_query_moves_vanilla_then_hinted_then_to_the_buffer() {
        let mut s = Stitch::new(2);
        let mut calls = Vec::new();
        // Solved without a hint: one group, GRPO on it.
        assert!(matches!(s.route(0, 5, policy(Some(0), &mut calls)), Route::Vanilla(_)));
        assert_eq!(calls, [0]);
        assert_eq!(s.success_rate(), 0.5, "one of two rollouts solved");
        // Needs a hint of 3 tokens; h = 1 gives all but the last of 5.
        calls.clear();
        match s.route(1, 5, policy(Some(3), &mut calls)) {
            Route::Hinted { hint_tokens, rollouts } => {
                assert_eq!(hint_tokens, 4);
                assert_eq!(rollouts.outputs, [4, 4], "GRPO gets the hinted group");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(calls, [0, 4]);
        assert_eq!(s.hint_fraction, 1.0, "half the hinted rollouts solved: the target, h stays");
        // Never solved: buffered; no SFT step until the buffer holds 2.
        calls.clear();
        assert_eq!(s.route(2, 5, policy(None, &mut calls)), Route::Imitation);
        assert_eq!(calls.len(), 2);
        assert_eq!(s.imitation_batch(), None);
        assert_eq!(s.route(3, 5, policy(None, &mut calls)), Route::Imitation);
        assert_eq!(s.imitation_batch(), Some(vec![2, 3]));
        assert!(s.buffer.is_empty() && s.imitation_batch().is_none(), "the buffer is cleared after the SFT step");
    }

    #[test]
    fn hints_shorten_while_hinted_rollouts_succeed_and_lengthen_while_they_fail() {
        let mut s = Stitch::new(100);
        assert_eq!(s.hint_tokens(6), 5, "h = 1: all but the last token");
        // Hinted groups that all solve: each lowers h by 0.1 * (1 - 0.5) = 0.05.
        let mut calls = Vec::new();
        for q in 0..10 {
            assert!(matches!(
                s.route(q, 6, |hint| Rollouts { outputs: vec![hint; 2], rewards: vec![0.0; 2], solved: vec![hint > 0; 2] }),
                Route::Hinted { .. }
            ));
        }
        assert!((s.hint_fraction - 0.5).abs() < 1e-9, "{}", s.hint_fraction);
        assert_eq!(s.hint_tokens(6), 3);
        // Hinted groups that all fail raise it again (and go to the buffer).
        for q in 0..4 {
            assert_eq!(s.route(q, 6, policy(None, &mut calls)), Route::Imitation);
        }
        assert!((s.hint_fraction - 0.7).abs() < 1e-9, "{}", s.hint_fraction);
        s.hint_fraction = 0.0;
        assert_eq!(s.hint_tokens(6), 1, "at least one token");
        assert_eq!(s.hint_tokens(1), 0, "a one-token trace has nothing to hint");
        // With no hint possible, an unsolved query goes straight to the buffer after one group.
        let mut calls = Vec::new();
        assert_eq!(s.route(7, 1, policy(None, &mut calls)), Route::Imitation);
        assert_eq!(calls, [0]);
    }
}
