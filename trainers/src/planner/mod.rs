//! Training SmartChunk's planner (Section 4.2, Appendix G, Algorithm 2) in the four ways of the paper's
//! Table 5:
//!
//! - `Sft`: cross-entropy on the expert traces of the pseudo-labels (the traces are the label's tokens),
//!   a plain supervised task, so burn-train's Learner runs it ([`crate::learner`]; [`SftStep`]: its
//!   loss and held-out loss per epoch, the held-back queries' plan scores at the end);
//! - `Rl`: GRPO from the untrained policy (eqs. 3-5, [`arbor_losses::grpo_loss`]): G sampled rollouts per
//!   query, rewards R = R_QA + R_Cost + R_Format + R_Length (+ R_PlanningAcc) ([`arbor_losses::planner_reward`]),
//!   group-normalised advantages, KL to the frozen initial policy;
//! - `SftRl`: SFT, then GRPO with the SFT policy as the reference;
//! - `Stitch`: GRPO where each query takes STITCH's route ([`crate::stitch`]): a solved vanilla group is
//!   used; otherwise a group conditioned on a hint (a prefix of the expert trace, given, not written, so
//!   not counted in the objective) is used if it solves; otherwise the query waits in the imitation
//!   buffer, and every time the buffer holds `buffer_size` queries their traces add a cross-entropy term
//!   to that step (Algorithm 2 runs the SFT step after the GRPO update of the same training step; here
//!   both terms go into one update).
//!
//! Rewards come from a table per query, computed once by the caller: for every plan, whether retrieval
//! within its levels recovers the evidence and how many chunks it scores, so a rollout costs no
//! retrieval. Sampling uses the policy of the current step (pi_old = pi_theta at sampling time: one
//! update per batch, the ratio is 1 and its gradient is the policy gradient). GRPO and STITCH run on the
//! trainer skeleton ([`crate::skeleton`]). Logged per step: every
//! reward term, the solve-none ratio, the shares of hinted and imitated queries; per epoch on the
//! held-back queries: planning accuracy against the pseudo-labels, recall (R_QA), cost and format rate.

use std::path::Path;

use arbor_losses::RewardWeights;
use arbor_models::host::{Host, init_on_host};
use arbor_models::planner::{PlanVocab, Planner, PlannerConfig};
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use serde::{Deserialize, Serialize};

use crate::learner::{self, Fit, NanStop};
use crate::parallel::Grouped;
use crate::schedule::Schedule;
use crate::skeleton::{self, Group};
use crate::stitch::Stitch;

/// One training query: the planner's input, its pseudo-label, and what every plan would do.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanExample {
    pub features: Vec<f32>,
    /// `(smallest, largest)` level of the chunks that recovered the evidence (`None`: never recovered).
    pub label: Option<(usize, usize)>,
    /// For plan `(lo, hi)`, at `lo * levels + hi`: what retrieval within it does.
    pub outcomes: Vec<Outcome>,
}

/// What retrieval within one plan does for a query.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Outcome {
    /// The handed-on chunks recover the evidence.
    pub recovered: bool,
    /// The chunks it scores (R_Cost's ChunkCost).
    pub chunk_cost: usize,
    /// What it earns as R_QA: `recovered` as 1 or 0, or (IE-aware) the handed-on text's IE.
    pub qa: f64,
}

impl PlanExample {
    fn outcome(&self, levels: usize, (lo, hi): (usize, usize)) -> Outcome {
        self.outcomes[lo * levels + hi]
    }
}

/// Table 5's training strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    Sft,
    Rl,
    SftRl,
    Stitch,
}

/// The planner's training settings (experiment file: `planner.training`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerTraining {
    pub strategy: Strategy,
    /// Epochs (of each phase, SFT and GRPO), seed, warmup, weight decay, clipping, checkpoints.
    pub schedule: Schedule,
    /// Each phase runs at least this many steps: more epochs than `schedule.epochs` on a small training
    /// split (89 queries are 6 steps an epoch, too few for the policy to learn the format).
    pub min_steps: usize,
    /// Queries per step.
    pub batch_size: usize,
    /// G: rollouts per query.
    pub group_size: usize,
    pub temperature: f64,
    /// Clipping range of the ratio (eq. 3).
    pub epsilon: f64,
    /// KL weight (eq. 3).
    pub beta: f64,
    /// T: an imitation term whenever STITCH's buffer holds this many queries.
    pub buffer_size: usize,
    pub reward: RewardWeights,
    pub lr: f64,
}

impl Default for PlannerTraining {
    fn default() -> Self {
        PlannerTraining {
            strategy: Strategy::Stitch,
            schedule: Schedule { epochs: 10, checkpoint_every: 100, ..Schedule::default() },
            min_steps: 300,
            batch_size: 16,
            group_size: 8,
            temperature: 1.0,
            epsilon: 0.2,
            beta: 0.04,
            buffer_size: 16,
            reward: RewardWeights { alpha: 0.002, gamma: 0.1, beta_len: 0.05, l_max: 6, planning_acc: 0.0 },
            lr: 1e-3,
        }
    }
}

impl PlannerTraining {
    /// The schedule of a phase over `examples` queries: `schedule.epochs`, or more to reach `min_steps`.
    fn phase(&self, examples: usize) -> Schedule {
        self.schedule.at_least(self.min_steps, examples.div_ceil(self.batch_size))
    }

    /// The optimizer steps a training over `examples` queries, `labelled` of them with a pseudo-label,
    /// takes: SFT over the labelled ones, GRPO (or STITCH) over every one, each phase `schedule.epochs`
    /// or more to reach `min_steps` ([`train`]; early stopping by `schedule.patience` aside): what its
    /// matched control runs.
    pub fn steps(&self, examples: usize, labelled: usize) -> usize {
        let phase = |n: usize| self.phase(n).epochs * n.div_ceil(self.batch_size);
        match self.strategy {
            Strategy::Sft => phase(labelled),
            Strategy::SftRl => phase(labelled) + phase(examples),
            Strategy::Rl | Strategy::Stitch => phase(examples),
        }
    }

    /// How many phases its strategy trains, each with its own epochs and floor of steps: SFT then GRPO
    /// two, every other strategy one.
    pub fn phases(&self) -> usize {
        if self.strategy == Strategy::SftRl { 2 } else { 1 }
    }
}

/// How a planner does on some queries (greedy decoding; an output that does not parse falls back to
/// every level).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PlanScores {
    /// Plans equal to the pseudo-label, over the queries that have one.
    pub planning_acc: f64,
    /// Plans whose retrieval recovers the evidence (R_QA).
    pub recall: f64,
    /// Chunks scored per query.
    pub cost: f64,
    /// Outputs that parse.
    pub format: f64,
}

/// Trains a planner in `run_dir` (`sft/` then `rl/`, as the strategy has them); returns it.
#[allow(clippy::too_many_arguments)]
pub fn train<B: AutodiffBackend>(
    config: &PlannerTraining,
    model_config: &PlannerConfig,
    vocab: PlanVocab,
    train: &[PlanExample],
    holdout: &[PlanExample],
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<Planner<B::InnerBackend>> {
    anyhow::ensure!(config.batch_size > 0 && config.group_size > 1, "planner.training: batch_size >= 1 and group_size >= 2");
    anyhow::ensure!(!train.is_empty(), "no query to train the planner on");
    let d_features = train[0].features.len();
    anyhow::ensure!(
        train.iter().chain(holdout).all(|e| e.features.len() == d_features && e.outcomes.len() == vocab.levels * vocab.levels),
        "planner examples disagree in size"
    );
    let device = Default::default();
    B::seed(&device, config.schedule.seed);
    let fresh = model_config.init::<B>(d_features, vocab, &device);
    let mut model = init_on_host(config.schedule.seed, |cpu| model_config.init::<Host>(d_features, vocab, cpu), fresh, &device)?;
    let groups = [Group { name: "planner", lr: config.lr, params: |g, m: &Planner<B>| GradientsParams::from_module(g, m) }];
    let eval = Eval { holdout, vocab, max_len: model_config.max_len };
    if matches!(config.strategy, Strategy::Sft | Strategy::SftRl) {
        let labelled = |set: &[PlanExample]| set.iter().filter(|e| e.label.is_some()).cloned().collect::<Vec<_>>();
        let (examples, held) = (labelled(train), labelled(holdout));
        anyhow::ensure!(!examples.is_empty(), "no training query has a pseudo-label: SFT has nothing to imitate");
        let dir = run_dir.join("sft");
        let schedule = config.phase(examples.len());
        let how = Fit { schedule: &schedule, lr: config.lr, batch_size: config.batch_size, run_dir: &dir, reference: Vec::new(), select: None };
        // The held-back queries' plan scores of the SFT policy, once at its last step.
        let scores = |m: &SftStep<B::InnerBackend>| eval.scalars(&m.planner);
        let sft = learner::fit(
            |guard| (SftStep { planner: model, guard }, Grouped::single(&schedule)),
            Traces(vocab),
            examples,
            held,
            &how,
            &scores,
            progress,
        )?
        .planner;
        if config.strategy == Strategy::Sft {
            return Ok(sft);
        }
        model = Planner::from_inner(sft);
    }
    let mut task = Rl {
        examples: train,
        vocab,
        config,
        max_len: model_config.max_len,
        reference: model.valid(),
        stitch: (config.strategy == Strategy::Stitch).then(|| Stitch::new(config.buffer_size)),
        eval,
    };
    let schedule = config.phase(train.len());
    Ok(skeleton::train(&mut task, model, &groups, &schedule, &run_dir.join("rl"), progress)?.valid())
}

/// The planner of a finished training in `run_dir`, if it has finished.
pub fn finished<B: Backend>(
    config: &PlannerTraining,
    model_config: &PlannerConfig,
    vocab: PlanVocab,
    d_features: usize,
    run_dir: &Path,
) -> anyhow::Result<Option<Planner<B>>> {
    let planner = model_config.init::<B>(d_features, vocab, &Default::default());
    if config.strategy == Strategy::Sft {
        let sft = skeleton::finished(SftStep { planner, guard: NanStop::default() }, &run_dir.join("sft"))?;
        return Ok(sft.map(|s| s.planner));
    }
    skeleton::finished(planner, &run_dir.join("rl"))
}

mod decode;
mod grpo;
mod sft;

use decode::Eval;
pub use decode::{assess, decode, greedy_plans};
use grpo::Rl;
use sft::Traces;
pub use sft::{SftStep, TraceBatch};

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_models::DefaultBackend;
    use burn::backend::Autodiff;

    type A = Autodiff<DefaultBackend>;
    const LEVELS: usize = 3;

    /// Two kinds of query: features (1, 0) are answered at level 0 only, (0, 1) at level 2 only; a wider
    /// plan recovers too but costs more. The pseudo-label is the narrow plan.
    fn examples(n: usize) -> Vec<PlanExample> {
        (0..n)
            .map(|i| {
                let level = if i % 2 == 0 { 0 } else { 2 };
                let mut outcomes = vec![Outcome::default(); LEVELS * LEVELS];
                for lo in 0..LEVELS {
                    for hi in lo..LEVELS {
                        let recovered = (lo..=hi).contains(&level);
                        outcomes[lo * LEVELS + hi] = Outcome { recovered, chunk_cost: 10 * (hi - lo + 1), qa: f64::from(u8::from(recovered)) };
                    }
                }
                let features = if level == 0 { vec![1.0, 0.0] } else { vec![0.0, 1.0] };
                PlanExample { features, label: Some((level, level)), outcomes }
            })
            .collect()
    }

    fn config(strategy: Strategy) -> PlannerTraining {
        PlannerTraining {
            strategy,
            // SFT learns the labels in 20 epochs; GRPO and STITCH from scratch take 60.
            schedule: Schedule { epochs: if strategy == Strategy::Sft { 20 } else { 60 }, checkpoint_every: 50, ..Schedule::default() },
            batch_size: 8,
            group_size: 6,
            lr: 5e-3,
            buffer_size: 4,
            min_steps: 0,
            ..Default::default()
        }
    }

    /// The case: 1,000 queries, 400 pseudo-labelled, batch 16, 10 epochs, at least 300 steps a
    /// phase. SFT: 25 steps an epoch, 12 epochs to reach 300; GRPO: 63 an epoch, 10 epochs.
    #[test]
    fn the_steps_a_planner_takes_are_counted_by_phase_over_its_own_examples() {
        let config = PlannerTraining { batch_size: 16, min_steps: 300, ..PlannerTraining::default() };
        let with = |strategy| PlannerTraining { strategy, ..config.clone() }.steps(1000, 400);
        assert_eq!(with(Strategy::Sft), 300);
        assert_eq!(with(Strategy::Stitch), 630);
        assert_eq!(with(Strategy::SftRl), 930);
    }

    #[test]
    fn a_small_split_gets_more_epochs_up_to_min_steps() {
        let config = PlannerTraining::default();
        // 89 queries: 6 steps an epoch, 50 epochs for 300 steps; 331 queries: 21 steps, 15 epochs.
        assert_eq!(config.phase(89).epochs, 50);
        assert_eq!(config.phase(331).epochs, 15);
        assert_eq!(config.phase(7000).epochs, 10);
        assert_eq!(PlannerTraining { min_steps: 0, ..config }.phase(89).epochs, 10);
    }

    fn run(strategy: Strategy) -> (PlanScores, String) {
        let dir = tempfile::tempdir().unwrap();
        let vocab = PlanVocab { levels: LEVELS };
        let model_config = PlannerConfig { layers: 1, heads: 2, d_model: 16, max_len: 8 };
        let (train_set, holdout) = (examples(32), examples(8));
        let model = train::<A>(&config(strategy), &model_config, vocab, &train_set, &holdout, dir.path(), &mut |_, _| {}).unwrap();
        let phase = if strategy == Strategy::Sft { "sft" } else { "rl" };
        let log = std::fs::read_to_string(dir.path().join(phase).join("log.jsonl")).unwrap();
        let back = finished::<DefaultBackend>(&config(strategy), &model_config, vocab, 2, dir.path()).unwrap().expect("finished");
        assert_eq!(assess(&back, &holdout, vocab, 8), assess(&model, &holdout, vocab, 8));
        (assess(&model, &holdout, vocab, 8), log)
    }

    #[test]
    fn sft_learns_the_pseudo_labels() {
        let (s, log) = run(Strategy::Sft);
        assert_eq!((s.planning_acc, s.recall, s.format), (1.0, 1.0, 1.0), "{s:?}");
        assert_eq!(s.cost, 10.0);
        // burn-train's held-out loss every epoch, then the held-back queries' plan scores.
        let lines: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.iter().filter(|l| l["eval/loss"].is_number()).count(), config(Strategy::Sft).schedule.epochs);
        assert_eq!(lines.last().unwrap()["eval/planning_acc"], 1.0);
    }

    #[test]
    fn a_rerun_over_a_finished_sft_logs_its_plan_scores_once() {
        let dir = tempfile::tempdir().unwrap();
        let vocab = PlanVocab { levels: LEVELS };
        let model_config = PlannerConfig { layers: 1, heads: 2, d_model: 16, max_len: 8 };
        let sft = config(Strategy::Sft);
        let config = PlannerTraining { schedule: Schedule { epochs: 2, ..sft.schedule.clone() }, ..sft };
        let run = || train::<A>(&config, &model_config, vocab, &examples(16), &examples(4), dir.path(), &mut |_, _| {}).unwrap();
        run();
        // Killed after SFT's last epoch checkpoint, before the final commit: the rerun restores it.
        std::fs::remove_file(dir.path().join("sft").join("checkpoints").join("state.json")).unwrap();
        run();
        let log = std::fs::read_to_string(dir.path().join("sft").join("log.jsonl")).unwrap();
        assert_eq!(log.lines().filter(|l| l.contains("eval/planning_acc")).count(), 1, "{log}");
    }

    #[test]
    fn stitch_learns_the_format_and_the_plans_from_scratch_and_logs_its_routes() {
        let (s, log) = run(Strategy::Stitch);
        assert_eq!((s.format, s.recall, s.planning_acc, s.cost), (1.0, 1.0, 1.0, 10.0), "{s:?}");
        let lines: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let mean = |key: &str, from: usize, to: usize| {
            let v: Vec<f64> = lines[from..to].iter().filter_map(|l| l[key].as_f64()).collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        let steps = lines.iter().filter(|l| l["reward/total"].is_number()).count();
        assert!(mean("reward/total", steps - 8, steps) > mean("reward/total", 0, 8), "the reward rises");
        assert!(mean("solve_none", steps - 8, steps) < mean("solve_none", 0, 8), "fewer queries go unsolved");
        assert!(lines.iter().any(|l| l["stitch/imitation_step"] == 1.0), "the untrained policy needs imitation at first");
    }
}
