//! Training SmartChunk's planner (Section 4.2, Appendix G, Algorithm 2) in the four ways of the paper's
//! Table 5:
//!
//! - `Sft`: cross-entropy on the expert traces of the pseudo-labels (the traces are the label's tokens),
//!   a plain supervised task, so burn-train's Learner runs it ([`crate::learner`]; [`SftStep`]: its
//!   loss and held-out loss per epoch, the held-back queries' plan scores at the end);
//! - `Rl`: GRPO from the untrained policy (eqs. 3-5, [`arbor_losses::grpo_loss`]): G sampled rollouts per
//!   query, rewards R = R_QA + R_Cost + R_Format + R_Length (+ R_PlanningAcc) ([`planner_reward`]),
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

use arbor_losses::{Grpo, PlanOutcome, RewardWeights, group_advantages, grpo_loss, planner_reward};
use arbor_models::planner::{PlanVocab, Planner, PlannerConfig};
use burn::data::dataloader::batcher::Batcher;
use burn::module::{AutodiffModule, Module};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Bool, ElementConversion, Int, Tensor, TensorData};
use burn_train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::data::step_batch;
use crate::learner::{self, Fit, NanStop};
use crate::skeleton::{self, Group, Settings, Step, Task};
use crate::stitch::{Rollouts, Stitch};

/// One training query: the planner's input, its pseudo-label, and what every plan would do.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanExample {
    pub features: Vec<f32>,
    /// `(smallest, largest)` level of the chunks that recovered the evidence (`None`: never recovered).
    pub label: Option<(usize, usize)>,
    /// For plan `(lo, hi)`, at `lo * levels + hi`: whether retrieval within it recovers the evidence, and
    /// the chunks it scores.
    pub outcomes: Vec<(bool, usize)>,
}

impl PlanExample {
    fn outcome(&self, levels: usize, (lo, hi): (usize, usize)) -> (bool, usize) {
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
    pub sft_epochs: usize,
    pub rl_epochs: usize,
    /// Each phase runs at least this many steps: more epochs than `sft_epochs` / `rl_epochs` on a small
    /// training split (89 queries are 6 steps an epoch, too few for the policy to learn the format).
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
    pub seed: u64,
    pub warmup_fraction: f64,
    pub weight_decay: f32,
    pub grad_clip: f32,
    pub checkpoint_every: usize,
}

impl Default for PlannerTraining {
    fn default() -> Self {
        PlannerTraining {
            strategy: Strategy::Stitch,
            sft_epochs: 10,
            rl_epochs: 10,
            min_steps: 300,
            batch_size: 16,
            group_size: 8,
            temperature: 1.0,
            epsilon: 0.2,
            beta: 0.04,
            buffer_size: 16,
            reward: RewardWeights { alpha: 0.002, gamma: 0.1, beta_len: 0.05, l_max: 6, planning_acc: 0.0 },
            lr: 1e-3,
            seed: 42,
            warmup_fraction: 0.05,
            weight_decay: 0.01,
            grad_clip: 1.0,
            checkpoint_every: 100,
        }
    }
}

impl PlannerTraining {
    /// The skeleton's settings for a phase of `epochs` epochs of `examples` queries (at least `min_steps`).
    fn settings(&self, epochs: usize, examples: usize) -> Settings {
        let s = self;
        Settings {
            epochs: epochs.max(s.min_steps.div_ceil(examples.div_ceil(s.batch_size).max(1))),
            checkpoint_every: s.checkpoint_every,
            warmup_fraction: s.warmup_fraction,
            weight_decay: s.weight_decay,
            grad_clip: s.grad_clip,
            patience: None,
        }
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
    B::seed(&device, config.seed);
    let mut model = model_config.init::<B>(d_features, vocab, &device);
    let groups = [Group { name: "planner", lr: config.lr, params: |g, m: &Planner<B>| GradientsParams::from_module(g, m) }];
    let eval = Eval { holdout, vocab, max_len: model_config.max_len };
    if matches!(config.strategy, Strategy::Sft | Strategy::SftRl) {
        let labelled = |set: &[PlanExample]| set.iter().filter(|e| e.label.is_some()).cloned().collect::<Vec<_>>();
        let (examples, held) = (labelled(train), labelled(holdout));
        anyhow::ensure!(!examples.is_empty(), "no training query has a pseudo-label: SFT has nothing to imitate");
        let dir = run_dir.join("sft");
        let settings = config.settings(config.sft_epochs, examples.len());
        let how = Fit { settings: &settings, lr: config.lr, batch_size: config.batch_size, seed: config.seed, run_dir: &dir, reference: Vec::new() };
        // The held-back queries' plan scores of the SFT policy, once at its last step.
        let scores = |m: &SftStep<B::InnerBackend>| eval.scalars(&m.planner);
        let sft = learner::fit(|guard| SftStep { planner: model, guard }, Traces(vocab), examples, held, &how, &scores, progress)?.planner;
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
    let settings = config.settings(config.rl_epochs, train.len());
    Ok(skeleton::train(&mut task, model, &groups, &settings, &run_dir.join("rl"), progress)?.valid())
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

/// Writes an output per row: `prefixes[r]` given, then sampled (greedy when `temperature` is 0) until EOS
/// (kept) or `max_len` tokens.
pub fn decode<B: Backend>(
    model: &Planner<B>,
    features: &[&[f32]],
    prefixes: &[Vec<u32>],
    max_len: usize,
    temperature: f64,
    rng: &mut impl Rng,
) -> Vec<Vec<u32>> {
    let device = model.output.weight.device();
    let rows = features.len();
    let d = features[0].len();
    let f = Tensor::<B, 2>::from_data(TensorData::new(features.concat(), [rows, d]), &device);
    let mut out: Vec<Vec<u32>> = prefixes.to_vec();
    let done = |o: &Vec<u32>| o.last() == Some(&PlanVocab::EOS) || o.len() >= max_len;
    while !out.iter().all(done) {
        let t = out.iter().map(Vec::len).max().unwrap_or(0) + 1;
        let (mut inputs, mut mask) = (vec![0i64; rows * t], vec![false; rows * t]);
        for (r, o) in out.iter().enumerate() {
            for (k, &tok) in std::iter::once(&PlanVocab::BOS).chain(o).enumerate() {
                inputs[r * t + k] = i64::from(tok);
                mask[r * t + k] = true;
            }
        }
        let lp = model.log_probs(
            f.clone(),
            Tensor::<B, 2, Int>::from_data(TensorData::new(inputs, [rows, t]), &device),
            Tensor::<B, 2, Bool>::from_data(TensorData::new(mask, [rows, t]), &device),
        );
        let vocab = lp.dims()[2];
        let lp = lp.into_data().convert::<f32>().to_vec::<f32>().expect("f32");
        for (r, o) in out.iter_mut().enumerate() {
            if done(o) {
                continue;
            }
            let at = &lp[(r * t + o.len()) * vocab..(r * t + o.len() + 1) * vocab];
            o.push(pick(at, temperature, rng));
        }
    }
    out
}

/// A token from log-probabilities: the most likely at temperature 0, else sampled from softmax(lp / T).
fn pick(lp: &[f32], temperature: f64, rng: &mut impl Rng) -> u32 {
    // BOS is never written.
    let candidates = (0..lp.len()).filter(|&i| i as u32 != PlanVocab::BOS);
    if temperature <= 0.0 {
        return candidates.max_by(|&a, &b| lp[a].total_cmp(&lp[b])).expect("a vocabulary") as u32;
    }
    let w: Vec<(usize, f64)> = candidates.map(|i| (i, (f64::from(lp[i]) / temperature).exp())).collect();
    let mut u = rng.random::<f64>() * w.iter().map(|(_, x)| x).sum::<f64>();
    for &(i, x) in &w {
        if u < x {
            return i as u32;
        }
        u -= x;
    }
    w.last().expect("a vocabulary").0 as u32
}

/// What one written output earns for a query.
fn score(vocab: PlanVocab, weights: &RewardWeights, example: &PlanExample, output: &[u32]) -> (arbor_losses::Reward, bool) {
    let written = output.strip_suffix(&[PlanVocab::EOS]).unwrap_or(output);
    let plan = if output.last() == Some(&PlanVocab::EOS) { vocab.parse(written) } else { None };
    let levels = vocab.levels;
    let (recovered, chunk_cost) = plan.map_or((false, 0), |p| example.outcome(levels, p));
    let fallback = example.outcome(levels, (0, levels - 1)).1;
    let r = planner_reward(weights, &PlanOutcome { plan, recovered, chunk_cost, tokens: written.len() }, fallback, example.label);
    (r, plan.is_some() && recovered && written.len() <= weights.l_max)
}

/// The greedy plan of `model` for each feature row (`None`: the output does not parse).
pub fn greedy_plans<B: Backend>(model: &Planner<B>, features: &[&[f32]], vocab: PlanVocab, max_len: usize) -> Vec<Option<(usize, usize)>> {
    if features.is_empty() {
        return Vec::new();
    }
    let outputs = decode(model, features, &vec![Vec::new(); features.len()], max_len, 0.0, &mut rand::rngs::StdRng::seed_from_u64(0));
    outputs
        .iter()
        .map(|o| match o.strip_suffix(&[PlanVocab::EOS]) {
            Some(written) => vocab.parse(written),
            None => None,
        })
        .collect()
}

/// Greedy plans of `model` for `examples`, scored.
pub fn assess<B: Backend>(model: &Planner<B>, examples: &[PlanExample], vocab: PlanVocab, max_len: usize) -> PlanScores {
    if examples.is_empty() {
        return PlanScores::default();
    }
    let features: Vec<&[f32]> = examples.iter().map(|e| e.features.as_slice()).collect();
    let plans = greedy_plans(model, &features, vocab, max_len);
    let (mut s, mut labelled) = (PlanScores::default(), 0usize);
    for (e, &plan) in examples.iter().zip(&plans) {
        let (recovered, cost) = e.outcome(vocab.levels, plan.unwrap_or((0, vocab.levels - 1)));
        s.recall += f64::from(u8::from(recovered));
        s.cost += cost as f64;
        s.format += f64::from(u8::from(plan.is_some()));
        if let Some(label) = e.label {
            labelled += 1;
            s.planning_acc += f64::from(u8::from(plan == Some(label)));
        }
    }
    let n = examples.len() as f64;
    PlanScores { planning_acc: s.planning_acc / labelled.max(1) as f64, recall: s.recall / n, cost: s.cost / n, format: s.format / n }
}

/// The held-back queries, scored at the end of each epoch.
#[derive(Clone, Copy)]
struct Eval<'a> {
    holdout: &'a [PlanExample],
    vocab: PlanVocab,
    max_len: usize,
}

impl Eval<'_> {
    fn scalars<B: Backend>(&self, model: &Planner<B>) -> Vec<(&'static str, f64)> {
        if self.holdout.is_empty() {
            return Vec::new();
        }
        let s = assess(model, self.holdout, self.vocab, self.max_len);
        vec![("eval/planning_acc", s.planning_acc), ("eval/recall", s.recall), ("eval/cost", s.cost), ("eval/format", s.format)]
    }
}

/// Cross-entropy of the expert traces of `examples` (teacher forcing), per written token.
fn imitation<B: Backend>(model: &Planner<B>, vocab: PlanVocab, examples: &[&PlanExample]) -> Tensor<B, 1> {
    sft_output(model, vocab, examples).loss
}

/// The planner's output on the expert traces of `examples` under teacher forcing: the cross-entropy per
/// written token, the log-probabilities and the trace tokens of every written position.
fn sft_output<B: Backend>(model: &Planner<B>, vocab: PlanVocab, examples: &[&PlanExample]) -> ClassificationOutput<B> {
    let device = model.output.weight.device();
    let d = examples[0].features.len();
    let f = Tensor::from_data(
        TensorData::new(examples.iter().flat_map(|e| e.features.iter().copied()).collect::<Vec<_>>(), [examples.len(), d]),
        &device,
    );
    let traces: Vec<Vec<u32>> = examples.iter().map(|e| vocab.trace(e.label.expect("labelled"))).collect();
    let (lp, targets, real) = model.forced(f, &traces);
    let [b, t, v] = lp.dims();
    let real = real.float();
    let written = lp.clone().gather(2, targets.clone().unsqueeze_dim::<3>(2)).squeeze_dim::<2>(2);
    let loss = (written * real.clone()).sum().neg() / real.sum();
    ClassificationOutput::new(loss, lp.reshape([b * t, v]), targets.reshape([b * t]))
}

/// The planner as burn-train trains it by SFT: [`sft_output`] is its training and held-out step.
#[derive(Module, Debug)]
pub struct SftStep<B: Backend> {
    pub planner: Planner<B>,
    #[module(skip)]
    guard: NanStop,
}

/// A batch of labelled queries (their expert traces are written from the labels in the step).
#[derive(Debug, Clone)]
pub struct TraceBatch(Vec<PlanExample>, PlanVocab);

#[derive(Debug, Clone, Copy)]
struct Traces(PlanVocab);

impl<B: Backend> Batcher<B, PlanExample, TraceBatch> for Traces {
    fn batch(&self, items: Vec<PlanExample>, _device: &B::Device) -> TraceBatch {
        TraceBatch(items, self.0)
    }
}

impl<B: AutodiffBackend> TrainStep for SftStep<B> {
    type Input = TraceBatch;
    type Output = ClassificationOutput<B>;

    fn step(&self, TraceBatch(examples, vocab): TraceBatch) -> TrainOutput<ClassificationOutput<B>> {
        let item = sft_output(&self.planner, vocab, &examples.iter().collect::<Vec<_>>());
        self.guard.check(item.loss.clone().into_scalar().elem(), || format!("an SFT batch of {} queries", examples.len()));
        TrainOutput::new(self, item.loss.backward(), item)
    }
}

impl<B: Backend> InferenceStep for SftStep<B> {
    type Input = TraceBatch;
    type Output = ClassificationOutput<B>;

    fn step(&self, TraceBatch(examples, vocab): TraceBatch) -> ClassificationOutput<B> {
        sft_output(&self.planner, vocab, &examples.iter().collect::<Vec<_>>())
    }
}

struct Rl<'a, I: Backend> {
    examples: &'a [PlanExample],
    vocab: PlanVocab,
    config: &'a PlannerTraining,
    max_len: usize,
    /// pi_ref of eq. 3: the policy RL starts from, frozen.
    reference: Planner<I>,
    stitch: Option<Stitch>,
    eval: Eval<'a>,
}

/// One group of rollouts that goes into the GRPO update: its query, outputs (with the hint given), and
/// how many leading tokens of each were given.
struct Used {
    example: usize,
    rollouts: Rollouts<Vec<u32>>,
    given: usize,
}

impl<A: AutodiffBackend> Task<A> for Rl<'_, A::InnerBackend> {
    type Model = Planner<A>;

    fn steps_per_epoch(&self) -> usize {
        self.examples.len().div_ceil(self.config.batch_size)
    }

    fn step(&mut self, model: &Planner<A>, step: usize) -> anyhow::Result<Step<A>> {
        let (c, vocab) = (self.config, self.vocab);
        let (epoch, at, batch) = step_batch(self.examples.len(), c.batch_size, c.seed, step);
        let mut rng = rand::rngs::StdRng::seed_from_u64(c.seed.wrapping_mul(7_919).wrapping_add(step as u64));
        let policy = model.valid();
        // Every query's vanilla group, sampled together.
        let vanilla = self.rollouts(&policy, &batch, &vec![Vec::new(); batch.len()], &mut rng);
        let mut terms_sum = [0.0f64; 6];
        for r in vanilla.iter().flat_map(|g| &g.1) {
            let t = [r.qa, r.cost, r.format, r.length, r.planning_acc, r.total()];
            terms_sum.iter_mut().zip(t).for_each(|(s, x)| *s += x);
        }
        let vanilla_rollouts = batch.len() * c.group_size;
        let mut used = Vec::new();
        let (mut solve_none, mut hinted, mut imitated) = (0usize, 0usize, 0usize);
        match &mut self.stitch {
            // Plain GRPO: every vanilla group.
            None => {
                for (&i, (rollouts, _)) in batch.iter().zip(vanilla) {
                    solve_none += usize::from(!rollouts.solvable());
                    used.push(Used { example: i, rollouts, given: 0 });
                }
            }
            Some(stitch) => {
                // Step 1: solved vanilla groups are used; the unsolved queries with a trace get a hint.
                let mut unsolved = Vec::new();
                for (&i, (rollouts, _)) in batch.iter().zip(vanilla) {
                    if stitch.record_vanilla(&rollouts.solved) {
                        used.push(Used { example: i, rollouts, given: 0 });
                    } else {
                        solve_none += 1;
                        unsolved.push(i);
                    }
                }
                // A query without a pseudo-label has no trace to hint or imitate.
                unsolved.retain(|&i| self.examples[i].label.is_some());
                let traces: Vec<Vec<u32>> = unsolved.iter().map(|&i| vocab.trace(self.examples[i].label.expect("kept"))).collect();
                let hint = traces.first().map_or(0, |t| stitch.hint_tokens(t.len()));
                // Step 2: hinted groups, sampled together; step 3: the rest wait for imitation.
                let prefixes: Vec<Vec<u32>> = traces.iter().map(|t| t[..hint].to_vec()).collect();
                let groups =
                    if hint > 0 { Self::sample(self.examples, vocab, c, self.max_len, &policy, &unsolved, &prefixes, &mut rng) } else { Vec::new() };
                if hint == 0 {
                    stitch.buffer.extend(&unsolved);
                    imitated += unsolved.len();
                }
                for (&i, (rollouts, _)) in unsolved.iter().zip(groups) {
                    if stitch.record_hinted(i, &rollouts.solved) {
                        hinted += 1;
                        used.push(Used { example: i, rollouts, given: hint });
                    } else {
                        imitated += 1;
                    }
                }
            }
        }
        let imitate = self.stitch.as_mut().and_then(Stitch::imitation_batch);
        let mut terms = Vec::new();
        if !used.is_empty() {
            terms.push(("loss/grpo", self.grpo(model, &used)));
        }
        if let Some(ids) = &imitate {
            let examples: Vec<&PlanExample> = ids.iter().map(|&i| &self.examples[i]).collect();
            terms.push(("loss/imitation", imitation(model, vocab, &examples)));
        }
        let n = vanilla_rollouts.max(1) as f64;
        let q = batch.len() as f64;
        let mut scalars: Vec<(&'static str, f64)> =
            ["reward/qa", "reward/cost", "reward/format", "reward/length", "reward/planning_acc", "reward/total"]
                .into_iter()
                .zip(terms_sum.map(|s| s / n))
                .collect();
        scalars.extend([("solve_none", solve_none as f64 / q), ("hinted_share", hinted as f64 / q), ("imitation_share", imitated as f64 / q)]);
        if let Some(stitch) = &self.stitch {
            scalars.extend([
                ("stitch/success_rate", stitch.success_rate()),
                ("stitch/hint_fraction", stitch.hint_fraction),
                ("stitch/imitation_step", f64::from(u8::from(imitate.is_some()))),
            ]);
        }
        Ok(Step { terms, scalars, context: format!("RL batch {at} of epoch {epoch}") })
    }

    fn state(&self) -> serde_json::Value {
        self.stitch.as_ref().map_or(serde_json::Value::Null, |s| serde_json::to_value(s).expect("plain data"))
    }

    fn restore(&mut self, state: serde_json::Value) -> anyhow::Result<()> {
        if self.stitch.is_some() {
            self.stitch = Some(serde_json::from_value(state)?);
        }
        Ok(())
    }

    fn evaluate(&self, model: &Planner<A::InnerBackend>) -> Vec<(&'static str, f64)> {
        self.eval.scalars(model)
    }
}

impl<I: Backend> Rl<'_, I> {
    /// A group of G rollouts per query of `queries`, each after its prefix, all sampled together.
    fn rollouts(
        &self,
        policy: &Planner<I>,
        queries: &[usize],
        prefixes: &[Vec<u32>],
        rng: &mut impl Rng,
    ) -> Vec<(Rollouts<Vec<u32>>, Vec<arbor_losses::Reward>)> {
        Self::sample(self.examples, self.vocab, self.config, self.max_len, policy, queries, prefixes, rng)
    }

    #[allow(clippy::too_many_arguments)]
    fn sample(
        examples: &[PlanExample],
        vocab: PlanVocab,
        c: &PlannerTraining,
        max_len: usize,
        policy: &Planner<I>,
        queries: &[usize],
        prefixes: &[Vec<u32>],
        rng: &mut impl Rng,
    ) -> Vec<(Rollouts<Vec<u32>>, Vec<arbor_losses::Reward>)> {
        if queries.is_empty() {
            return Vec::new();
        }
        let g = c.group_size;
        let features: Vec<&[f32]> = queries.iter().flat_map(|&i| std::iter::repeat_n(examples[i].features.as_slice(), g)).collect();
        let starts: Vec<Vec<u32>> = prefixes.iter().flat_map(|p| std::iter::repeat_n(p.clone(), g)).collect();
        let outputs = decode(policy, &features, &starts, max_len, c.temperature, rng);
        queries
            .iter()
            .zip(outputs.chunks(g))
            .map(|(&i, group)| {
                let scored: Vec<_> = group.iter().map(|o| score(vocab, &c.reward, &examples[i], o)).collect();
                let rollouts = Rollouts {
                    outputs: group.to_vec(),
                    rewards: scored.iter().map(|(r, _)| r.total() as f32).collect(),
                    solved: scored.iter().map(|(_, s)| *s).collect(),
                };
                (rollouts, scored.into_iter().map(|(r, _)| r).collect())
            })
            .collect()
    }

    /// -J of eq. 3 over the used groups, at least one (their rollouts together; each group normalised on
    /// its own).
    fn grpo<A: AutodiffBackend<InnerBackend = I>>(&self, model: &Planner<A>, used: &[Used]) -> Tensor<A, 1> {
        let device = model.output.weight.device();
        let outputs: Vec<Vec<u32>> = used.iter().flat_map(|u| u.rollouts.outputs.iter().cloned()).collect();
        let given: Vec<usize> = used.iter().flat_map(|u| vec![u.given; u.rollouts.outputs.len()]).collect();
        let features: Vec<f32> =
            used.iter().flat_map(|u| u.rollouts.outputs.iter().flat_map(move |_| self.examples[u.example].features.iter().copied())).collect();
        let d = self.examples[0].features.len();
        let f = Tensor::<A, 2>::from_data(TensorData::new(features, [outputs.len(), d]), &device);
        let (lp, mask) = model.token_log_probs(f.clone(), &outputs, &given);
        let (ref_lp, _) = self.reference.token_log_probs(f.inner(), &outputs, &given);
        let advantages: Vec<f32> = used.iter().flat_map(|u| group_advantages(&u.rollouts.rewards)).collect();
        let advantages = Tensor::from_data(TensorData::new(advantages, [outputs.len()]), &device);
        let settings = Grpo { epsilon: self.config.epsilon, beta: self.config.beta };
        grpo_loss(lp.clone(), lp.detach(), Tensor::from_inner(ref_lp), mask, advantages, settings)
    }
}

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
                let mut outcomes = vec![(false, 0); LEVELS * LEVELS];
                for lo in 0..LEVELS {
                    for hi in lo..LEVELS {
                        outcomes[lo * LEVELS + hi] = ((lo..=hi).contains(&level), 10 * (hi - lo + 1));
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
            sft_epochs: 20,
            rl_epochs: 60,
            batch_size: 8,
            group_size: 6,
            lr: 5e-3,
            checkpoint_every: 50,
            buffer_size: 4,
            min_steps: 0,
            ..Default::default()
        }
    }

    #[test]
    fn a_small_split_gets_more_epochs_up_to_min_steps() {
        let config = PlannerTraining::default();
        // 89 queries: 6 steps an epoch, 50 epochs for 300 steps; 331 queries: 21 steps, 15 epochs.
        assert_eq!(config.settings(10, 89).epochs, 50);
        assert_eq!(config.settings(10, 331).epochs, 15);
        assert_eq!(config.settings(10, 7000).epochs, 10);
        assert_eq!(PlannerTraining { min_steps: 0, ..config }.settings(10, 89).epochs, 10);
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
        assert_eq!(lines.iter().filter(|l| l["eval/loss"].is_number()).count(), config(Strategy::Sft).sft_epochs);
        assert_eq!(lines.last().unwrap()["eval/planning_acc"], 1.0);
    }

    #[test]
    fn a_rerun_over_a_finished_sft_logs_its_plan_scores_once() {
        let dir = tempfile::tempdir().unwrap();
        let vocab = PlanVocab { levels: LEVELS };
        let model_config = PlannerConfig { layers: 1, heads: 2, d_model: 16, max_len: 8 };
        let config = PlannerTraining { sft_epochs: 2, ..config(Strategy::Sft) };
        let run = || train::<A>(&config, &model_config, vocab, &examples(16), &examples(4), dir.path(), &mut |_, _| {}).unwrap();
        run();
        // Killed after SFT's last epoch checkpoint, before the final commit: the rerun restores it.
        std::fs::remove_dir_all(dir.path().join("sft").join("checkpoints")).unwrap();
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
