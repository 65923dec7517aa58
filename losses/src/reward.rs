//! The planner's reward in STITCH (SmartChunk, Appendix G.2):
//!
//! ```text
//! R = R_QA + R_Cost + R_Format + R_Length (+ R_PlanningAcc)
//! R_QA          = 1 if retrieval within the planned levels recovers the gold evidence, else 0
//!                 (arbor's IE-aware reading, `qa: Ie`: the handed-on text's IE = recall × precision
//!                  of the gold bytes, in [0, 1], so a plan that recovers the gold inside a long
//!                  chunk earns less than one that hands on little else)
//! R_Cost        = -alpha * ChunkCost          (the chunks built and scored for the plan)
//! R_Format      = gamma if the output parses as a plan, else 0
//! R_Length      = -beta_len * ReLU(len - L_max)    (outputs that parse)
//! R_PlanningAcc = w_acc * |plan ∩ label| / |plan ∪ label|   (the level ranges as integer intervals)
//! ```
//!
//! The paper gives R_PlanningAcc no formula ("aligns the planner's outputs with precomputed labels"); ours
//! is graded, the intersection over union of the planned and the pseudo-label's level ranges, so a plan
//! one level off still earns part. An output that does not parse earns no R_QA and no R_PlanningAcc, and
//! pays the cost of the fallback, retrieval over every level.
//!
//! R_Length counts only for outputs that parse. Charged on unparsed ones too (the paper's formula read
//! literally), it ranks a group of unparsed rollouts by length alone, and GRPO then teaches the policy to
//! stop early: on legalbench-rag-mini (89 training queries) an SFT policy that wrote the format 95 % of the
//! time greedily lost it entirely within 6 GRPO steps that way.

/// The reward's weights (experiment file: `planner.training.reward`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardWeights {
    pub alpha: f64,
    pub gamma: f64,
    pub beta_len: f64,
    pub l_max: usize,
    pub planning_acc: f64,
}

/// What a rollout did: its plan `(min level, max level)` if it parsed, what retrieval within it earns
/// as R_QA (1 or 0 by whether it recovered the evidence, or its IE), the chunks it cost, and its length
/// in tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanOutcome {
    pub plan: Option<(usize, usize)>,
    pub qa: f64,
    pub chunk_cost: usize,
    pub tokens: usize,
}

/// Each term of R, for logging; `total` is R.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Reward {
    pub qa: f64,
    pub cost: f64,
    pub format: f64,
    pub length: f64,
    pub planning_acc: f64,
}

impl Reward {
    pub fn total(&self) -> f64 {
        self.qa + self.cost + self.format + self.length + self.planning_acc
    }
}

/// R of one rollout; `fallback_cost` is the cost of retrieving over every level, `label` the pseudo-label.
pub fn planner_reward(w: &RewardWeights, outcome: &PlanOutcome, fallback_cost: usize, label: Option<(usize, usize)>) -> Reward {
    let Some(plan) = outcome.plan else {
        return Reward { cost: -w.alpha * fallback_cost as f64, ..Reward::default() };
    };
    let length = -w.beta_len * outcome.tokens.saturating_sub(w.l_max) as f64;
    Reward {
        qa: outcome.qa,
        cost: -w.alpha * outcome.chunk_cost as f64,
        format: w.gamma,
        length,
        planning_acc: label.map_or(0.0, |l| w.planning_acc * interval_iou(plan, l)),
    }
}

/// |a ∩ b| / |a ∪ b| of two integer intervals `[lo, hi]` (inclusive).
fn interval_iou(a: (usize, usize), b: (usize, usize)) -> f64 {
    let inter = (a.1.min(b.1) + 1).saturating_sub(a.0.max(b.0));
    let union = (a.1 - a.0 + 1) + (b.1 - b.0 + 1) - inter;
    inter as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: RewardWeights = RewardWeights { alpha: 0.01, gamma: 0.1, beta_len: 0.05, l_max: 8, planning_acc: 0.5 };

    #[test]
    fn each_term_by_hand() {
        let solved = PlanOutcome { plan: Some((1, 3)), qa: 1.0, chunk_cost: 20, tokens: 10 };
        let r = planner_reward(&W, &solved, 100, Some((2, 3)));
        assert_eq!(r.qa, 1.0);
        assert!((r.cost - -0.2).abs() < 1e-12);
        assert_eq!(r.format, 0.1);
        assert!((r.length - -0.1).abs() < 1e-12, "2 tokens over L_max");
        assert!((r.planning_acc - 0.5 * 2.0 / 3.0).abs() < 1e-12, "levels {{2, 3}} of {{1, 2, 3}}");
        assert!((r.total() - (1.0 - 0.2 + 0.1 - 0.1 + 1.0 / 3.0)).abs() < 1e-12);
        // Unrecovered, no label, within L_max: only format and cost.
        let missed = PlanOutcome { qa: 0.0, tokens: 8, ..solved };
        assert_eq!(planner_reward(&W, &missed, 100, None), Reward { cost: -0.2, format: 0.1, ..Reward::default() });
    }

    #[test]
    fn an_unparsed_plan_pays_the_fallback_and_earns_nothing() {
        let garbled = PlanOutcome { plan: None, qa: 1.0, chunk_cost: 0, tokens: 9 };
        let r = planner_reward(&W, &garbled, 100, Some((0, 0)));
        assert_eq!(r, Reward { cost: -1.0, ..Reward::default() });
        // Unparsed outputs of any length earn the same: length alone does not rank them.
        let longer = PlanOutcome { tokens: 10, ..garbled };
        assert_eq!(planner_reward(&W, &longer, 100, None), r);
    }

    #[test]
    fn interval_iou_cases() {
        assert_eq!(interval_iou((2, 2), (2, 2)), 1.0);
        assert_eq!(interval_iou((0, 1), (2, 3)), 0.0);
        assert_eq!(interval_iou((0, 3), (1, 2)), 0.5);
    }
}
