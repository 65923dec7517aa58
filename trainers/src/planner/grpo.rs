//! The GRPO phase on the trainer skeleton (eqs. 3-5): rollouts sampled from the current policy, group
//! advantages, KL to the frozen reference policy, and STITCH's routing (vanilla, hinted, imitated).

use arbor_losses::{Grpo, group_advantages, grpo_loss};
use arbor_models::planner::{PlanVocab, Planner};
use burn::module::AutodiffModule;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use rand::{Rng, SeedableRng};

use crate::data::step_batch;
use crate::skeleton::{Step, Task};
use crate::stitch::{Rollouts, Stitch};

use super::decode::{Eval, decode, score};
use super::sft::imitation;
use super::{PlanExample, PlannerTraining};

pub(super) struct Rl<'a, I: Backend> {
    pub(super) examples: &'a [PlanExample],
    pub(super) vocab: PlanVocab,
    pub(super) config: &'a PlannerTraining,
    pub(super) max_len: usize,
    /// pi_ref of eq. 3: the policy RL starts from, frozen.
    pub(super) reference: Planner<I>,
    pub(super) stitch: Option<Stitch>,
    pub(super) eval: Eval<'a>,
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
        let (epoch, at, batch) = step_batch(self.examples.len(), c.batch_size, c.schedule.seed, step);
        let mut rng = rand::rngs::StdRng::seed_from_u64(c.schedule.seed.wrapping_mul(7_919).wrapping_add(step as u64));
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
