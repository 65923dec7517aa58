//! The one training loop of arbor, written out as Burn's custom-training-loop example is, generic over
//! `B: AutodiffBackend`. A [`Task`] says what one step computes; the skeleton does the rest, the same way
//! for every trainer:
//!
//! - per step, the task's named loss terms, each checked finite (a NaN or infinite term stops the run,
//!   naming the step, the term and the task's context), summed, and one backward pass;
//! - the gradients split over the task's parameter [`Group`]s, one AdamW per group (weight decay,
//!   gradient clipping by norm) at the group's learning rate times the schedule (linear warmup, linear
//!   decay to 0);
//! - `log.jsonl` and TensorBoard (the terms, their total, the task's scalars, each group's learning rate,
//!   the epoch), the task's held-out evaluation at the end of every epoch;
//! - a checkpoint every `checkpoint_every` steps and at the end: the model and every group's optimizer,
//!   each fsynced and renamed, committed by `state.json`; a run folder holding a checkpoint continues
//!   from it (the task's batches depend only on the step, so it sees the same ones).

use std::path::Path;

use anyhow::{Context, bail};
use burn::module::{AutodiffModule, Module};
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamW, AdamWConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Tensor};

use crate::checkpoint;
use crate::logger::Logger;

/// The loop's settings (a trainer's config gives them).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub epochs: usize,
    pub checkpoint_every: usize,
    pub warmup_fraction: f64,
    pub weight_decay: f32,
    pub grad_clip: f32,
}

/// The [`Settings`] of a trainer config that has fields of the same names.
#[macro_export]
macro_rules! settings_of {
    ($c:expr) => {
        $crate::skeleton::Settings {
            epochs: $c.epochs,
            checkpoint_every: $c.checkpoint_every,
            warmup_fraction: $c.warmup_fraction,
            weight_decay: $c.weight_decay,
            grad_clip: $c.grad_clip,
        }
    };
}

impl Settings {
    /// The learning-rate factor at `step` of `total`: linear warmup, then linear decay to 0.
    pub fn schedule(&self, step: usize, total: usize) -> f64 {
        let warmup = ((self.warmup_fraction * total as f64).ceil() as usize).max(1);
        if step < warmup { (step + 1) as f64 / warmup as f64 } else { ((total - step) as f64 / (total - warmup).max(1) as f64).clamp(0.0, 1.0) }
    }
}

/// What one step of a task computed.
pub struct Step<B: Backend> {
    /// Named loss terms; the loss is their sum (none: nothing to learn from this step, no update).
    pub terms: Vec<(&'static str, Tensor<B, 1>)>,
    /// Other figures of the step to log (rewards, ratios).
    pub scalars: Vec<(&'static str, f64)>,
    /// Where the step's data came from, for the error a non-finite term raises.
    pub context: String,
}

/// Parameters one optimizer updates: `params` takes their gradients out of the step's gradients. Groups
/// are visited in order, so the last may take everything that is left (`from_module` of the whole model).
pub struct Group<B: AutodiffBackend, M> {
    /// Names the checkpoint item `optim-<name>` and the logged `lr/<name>`.
    pub name: &'static str,
    pub lr: f64,
    pub params: fn(&mut B::Gradients, &M) -> GradientsParams,
}

/// One trainer: its model and what a step computes.
pub trait Task<B: AutodiffBackend> {
    type Model: AutodiffModule<B>;
    fn steps_per_epoch(&self) -> usize;
    /// The loss terms of step `step` (0-based; the epoch is `step / steps_per_epoch`).
    fn step(&mut self, model: &Self::Model, step: usize) -> anyhow::Result<Step<B>>;
    /// Figures of the updated model to log after each step.
    fn monitor(&self, _model: &Self::Model) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// What a resumed run needs of the task besides the model and optimizers (STITCH's buffer), saved with
    /// every checkpoint.
    fn state(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn restore(&mut self, _state: serde_json::Value) -> anyhow::Result<()> {
        Ok(())
    }
    /// The held-out evaluation logged at the end of each epoch.
    fn evaluate(&self, _model: &<Self::Model as AutodiffModule<B>>::InnerModule) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// Trains `model` on `task` in `run_dir` (checkpoints/, tb/, log.jsonl), continuing from the folder's
/// last checkpoint if it has one; returns the trained model. `progress(done, total)` after every step.
pub fn train<B: AutodiffBackend, T: Task<B>>(
    task: &mut T,
    mut model: T::Model,
    groups: &[Group<B, T::Model>],
    settings: &Settings,
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<T::Model> {
    anyhow::ensure!(settings.epochs > 0 && settings.checkpoint_every > 0, "training.epochs and checkpoint_every must be at least 1");
    let per_epoch = task.steps_per_epoch();
    anyhow::ensure!(per_epoch > 0, "nothing to train on: an epoch has no step");
    let adamw =
        AdamWConfig::new().with_weight_decay(settings.weight_decay).with_grad_clipping(Some(GradientClippingConfig::Norm(settings.grad_clip)));
    let mut optims: Vec<OptimizerAdaptor<AdamW, T::Model, B>> = groups.iter().map(|_| adamw.init()).collect();
    std::fs::create_dir_all(run_dir).with_context(|| format!("cannot create {}", run_dir.display()))?;
    let ckpt_dir = run_dir.join("checkpoints");
    let device = Default::default();
    let mut start = 0;
    if let Some(state) = checkpoint::state(&ckpt_dir)? {
        model = model.load_record(checkpoint::load::<B, _>(&ckpt_dir, &state, "model", &device)?);
        for (group, optim) in groups.iter().zip(&mut optims) {
            *optim = optim.clone().load_record(checkpoint::load::<B, _>(&ckpt_dir, &state, &format!("optim-{}", group.name), &device)?);
        }
        if let Some(file) = state.files.iter().find(|f| f.starts_with("task-")) {
            let path = ckpt_dir.join(file);
            let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            task.restore(serde_json::from_str(&text).with_context(|| format!("{} is damaged", path.display()))?)?;
        }
        start = state.step;
        eprintln!("resuming from step {start}");
    }
    let mut logger = Logger::open(run_dir, Some(start))?;
    let total = per_epoch * settings.epochs;
    let lr_names: Vec<String> = groups.iter().map(|g| format!("lr/{}", g.name)).collect();
    for step in start..total {
        let Step { terms, scalars, context } = task.step(&model, step)?;
        let mut logged = Vec::with_capacity(terms.len() + scalars.len() + groups.len() + 4);
        for (name, term) in &terms {
            let v: f32 = term.clone().into_scalar().elem();
            if !v.is_finite() {
                bail!("step {}: loss term {name} is {v} ({context})", step + 1);
            }
            logged.push((*name, f64::from(v)));
        }
        if terms.len() > 1 {
            logged.push(("loss/total", logged.iter().map(|(_, v)| v).sum()));
        }
        logged.extend(scalars);
        let factor = settings.schedule(step, total);
        // A step without a loss term has nothing to learn from (no GRPO group was usable): no update.
        if let Some(loss) = terms.into_iter().map(|(_, t)| t).reduce(|a, b| a + b) {
            let mut grads = loss.backward();
            let params: Vec<GradientsParams> = groups.iter().map(|g| (g.params)(&mut grads, &model)).collect();
            for ((group, optim), params) in groups.iter().zip(&mut optims).zip(params) {
                model = optim.step(group.lr * factor, model, params);
            }
        }
        logged.extend(groups.iter().zip(&lr_names).map(|(g, name)| (name.as_str(), g.lr * factor)));
        logged.extend(task.monitor(&model));
        logged.push(("epoch", (step / per_epoch) as f64));
        let done = step + 1;
        logger.log(done, &logged)?;
        if done % per_epoch == 0 {
            let eval = task.evaluate(&model.valid());
            if !eval.is_empty() {
                logger.log(done, &eval)?;
            }
        }
        if done % settings.checkpoint_every == 0 || done == total {
            logger.flush()?;
            let mut files = vec![checkpoint::write_item::<B, _>(&ckpt_dir, "model", done, model.clone().into_record())?];
            for (group, optim) in groups.iter().zip(&optims) {
                files.push(checkpoint::write_item::<B, _>(&ckpt_dir, &format!("optim-{}", group.name), done, optim.to_record())?);
            }
            let state = task.state();
            if !state.is_null() {
                let name = format!("task-{done}.json");
                arbor_eval::report::atomic_write(&ckpt_dir.join(&name), serde_json::to_string(&state)?.as_bytes())?;
                files.push(name);
            }
            checkpoint::commit(&ckpt_dir, done, files, done == total)?;
        }
        progress(done, total);
    }
    logger.flush()?;
    Ok(model)
}

/// `model` with the weights of the finished run in `run_dir`, if it has finished (nothing is recomputed).
pub fn finished<B: Backend, M: Module<B>>(model: M, run_dir: &Path) -> anyhow::Result<Option<M>> {
    let ckpt_dir = run_dir.join("checkpoints");
    let Some(state) = checkpoint::state(&ckpt_dir)?.filter(|s| s.complete) else { return Ok(None) };
    Ok(Some(model.load_record(checkpoint::load(&ckpt_dir, &state, "model", &Default::default())?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_models::DefaultBackend;
    use arbor_models::aggregator::{AggregationInit, HeadAggregator};
    use burn::backend::Autodiff;

    type A = Autodiff<DefaultBackend>;

    /// -log w_0 over two heads: each step pulls the weight to head 0. `fail_at` stops the run there (a
    /// kill); `nan_at` gives a NaN term. `seen` counts the steps taken: task state a resume must restore.
    #[derive(Default)]
    struct PullToHeadZero {
        fail_at: Option<usize>,
        nan_at: Option<usize>,
        seen: u64,
    }

    impl Task<A> for PullToHeadZero {
        type Model = HeadAggregator<A>;
        fn steps_per_epoch(&self) -> usize {
            3
        }
        fn step(&mut self, model: &HeadAggregator<A>, step: usize) -> anyhow::Result<Step<A>> {
            anyhow::ensure!(self.fail_at != Some(step), "killed at step {step}");
            let w = model.head_weights().reshape([2]).slice([0..1]);
            let term = if self.nan_at == Some(step) { w.log() * f32::NAN } else { -w.log() };
            self.seen += 1;
            Ok(Step { terms: vec![("loss/pull", term)], scalars: vec![("seen", self.seen as f64)], context: format!("batch {step}") })
        }
        fn state(&self) -> serde_json::Value {
            self.seen.into()
        }
        fn restore(&mut self, state: serde_json::Value) -> anyhow::Result<()> {
            self.seen = state.as_u64().unwrap();
            Ok(())
        }
    }

    fn settings() -> Settings {
        Settings { epochs: 4, checkpoint_every: 5, warmup_fraction: 0.1, weight_decay: 0.0, grad_clip: 1.0 }
    }

    fn run(task: &mut PullToHeadZero, dir: &Path) -> anyhow::Result<Vec<f32>> {
        let model = HeadAggregator::<A>::new(1, 2, AggregationInit::Uniform, &Default::default());
        let groups = [Group { name: "aggregation", lr: 0.1, params: |g, m: &HeadAggregator<A>| GradientsParams::from_module(g, m) }];
        let model = train(task, model, &groups, &settings(), dir, &mut |_, _| {})?;
        Ok(model.head_weights().into_data().to_vec::<f32>().unwrap())
    }

    #[test]
    fn warmup_then_linear_decay() {
        let s = Settings { warmup_fraction: 0.1, ..settings() };
        let f: Vec<f64> = (0..100).map(|step| s.schedule(step, 100)).collect();
        assert_eq!(f[0], 0.1);
        assert_eq!(f[9], 1.0);
        assert!(f[10] <= 1.0 && f[10] > f[50] && f[50] > f[99]);
        assert!(f.iter().all(|&x| (0.0..=1.0).contains(&x)));
    }

    #[test]
    fn a_killed_run_resumes_to_the_same_weights_and_logs() {
        let straight = tempfile::tempdir().unwrap();
        let w = run(&mut PullToHeadZero::default(), straight.path()).unwrap();
        assert!(w[0] > 0.6, "{w:?}");
        // Killed at step 8: the checkpoint of step 5 is the last; steps 6 and 7 are redone.
        let killed = tempfile::tempdir().unwrap();
        let err = run(&mut PullToHeadZero { fail_at: Some(7), ..Default::default() }, killed.path()).unwrap_err();
        assert!(err.to_string().contains("killed at step 7"));
        assert_eq!(checkpoint::state(&killed.path().join("checkpoints")).unwrap().unwrap().step, 5);
        let resumed = run(&mut PullToHeadZero::default(), killed.path()).unwrap();
        assert_eq!(resumed, w);
        let log = |d: &Path| std::fs::read_to_string(d.join("log.jsonl")).unwrap();
        assert_eq!(log(killed.path()), log(straight.path()), "the log holds each step once, and the task's state was restored");
        assert_eq!(log(straight.path()).lines().count(), 12);
        assert!(log(straight.path()).lines().last().unwrap().contains("\"lr/aggregation\":0.0"));
        let model = HeadAggregator::<DefaultBackend>::new(1, 2, AggregationInit::Uniform, &Default::default());
        let back = finished(model, killed.path()).unwrap().expect("complete");
        assert_eq!(back.head_weights().into_data().to_vec::<f32>().unwrap(), w);
    }

    #[test]
    fn a_non_finite_term_stops_the_run_naming_step_term_and_context() {
        let dir = tempfile::tempdir().unwrap();
        let err = run(&mut PullToHeadZero { nan_at: Some(6), ..Default::default() }, dir.path()).unwrap_err().to_string();
        assert_eq!(err, "step 7: loss term loss/pull is NaN (batch 6)");
        let model = HeadAggregator::<DefaultBackend>::new(1, 2, AggregationInit::Uniform, &Default::default());
        assert!(finished(model, dir.path()).unwrap().is_none(), "an unfinished run is not read back as trained");
    }
}
