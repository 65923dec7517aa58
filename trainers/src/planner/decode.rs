//! Writing plans: decoding (greedy or sampled) from the planner, the reward of a written output, and the
//! plan scores of Table 5 (planning accuracy, recall, cost, format rate) on held-back queries.

use arbor_losses::{PlanOutcome, RewardWeights, planner_reward};
use arbor_models::planner::{PlanVocab, Planner};
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor, TensorData};
use rand::{Rng, SeedableRng};

use super::{Outcome, PlanExample, PlanScores};
use crate::encoder::matrix;

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
    let f = matrix::<B>(features, &device);
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
pub(super) fn score(vocab: PlanVocab, weights: &RewardWeights, example: &PlanExample, output: &[u32]) -> (arbor_losses::Reward, bool) {
    let written = output.strip_suffix(&[PlanVocab::EOS]).unwrap_or(output);
    let plan = if output.last() == Some(&PlanVocab::EOS) { vocab.parse(written) } else { None };
    let levels = vocab.levels;
    let o = plan.map_or(Outcome::default(), |p| example.outcome(levels, p));
    let fallback = example.outcome(levels, (0, levels - 1)).chunk_cost;
    let r = planner_reward(weights, &PlanOutcome { plan, qa: o.qa, chunk_cost: o.chunk_cost, tokens: written.len() }, fallback, example.label);
    (r, plan.is_some() && o.recovered && written.len() <= weights.l_max)
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
        let o = e.outcome(vocab.levels, plan.unwrap_or((0, vocab.levels - 1)));
        s.recall += f64::from(u8::from(o.recovered));
        s.cost += o.chunk_cost as f64;
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
pub(super) struct Eval<'a> {
    pub(super) holdout: &'a [PlanExample],
    pub(super) vocab: PlanVocab,
    pub(super) max_len: usize,
}

impl Eval<'_> {
    pub(super) fn scalars<B: Backend>(&self, model: &Planner<B>) -> Vec<(&'static str, f64)> {
        if self.holdout.is_empty() {
            return Vec::new();
        }
        let s = assess(model, self.holdout, self.vocab, self.max_len);
        vec![("eval/planning_acc", s.planning_acc), ("eval/recall", s.recall), ("eval/cost", s.cost), ("eval/format", s.format)]
    }
}
