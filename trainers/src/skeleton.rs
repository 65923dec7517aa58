//! The one training loop of arbor, written out as Burn's custom-training-loop example is, generic over
//! `B: AutodiffBackend`. A [`Task`] says what one step computes; the skeleton does the rest, the same way
//! for every trainer:
//!
//! - per step, the task's named loss terms, each checked finite (a NaN or infinite term stops the run,
//!   naming the step, the term and the task's context), summed, and one backward pass (or, for a task
//!   that caches its step, GradCache, the sum of its pieces' gradients: [`Task::cached_step`]);
//! - the gradients split over the task's parameter [`Group`]s, one AdamW per group (weight decay,
//!   gradient clipping by norm) at the group's learning rate times the schedule (linear warmup, linear
//!   decay to 0);
//! - `log.jsonl` and TensorBoard (the terms, their total, the task's scalars, each group's learning rate,
//!   the epoch), the task's held-out evaluation at the end of every epoch;
//! - a checkpoint every `checkpoint_every` steps and at the end: the model and every group's optimizer,
//!   each fsynced and renamed, committed by `state.json` with their digests; a run folder holding a
//!   checkpoint continues from it (the task's batches depend only on the step, so it sees the same ones);
//!   a damaged checkpoint is said on a warning line and the training starts over;
//! - checkpoint choice on validation: when the task names the held-out figure that judges it
//!   ([`Task::select_by`]), the model of the best epoch is kept beside the last, and is the trained model;
//!   `patience` stops the run after that many epochs without a better one.

use std::path::Path;

use anyhow::{Context, bail};
use burn::module::{AutodiffModule, Module};
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::{GradientsAccumulator, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Tensor};

use crate::adamw::FusedAdamW;
use crate::checkpoint::{self, Best};
use crate::logger::Logger;
use crate::schedule::Schedule;

/// A step's named loss terms.
pub type Terms<B> = Vec<(&'static str, Tensor<B, 1>)>;

/// What one step of a task computed.
pub struct Step<B: Backend> {
    /// Named loss terms; the loss is their sum (none: nothing to learn from this step, no update).
    pub terms: Terms<B>,
    /// Other figures of the step to log (rewards, ratios).
    pub scalars: Vec<(&'static str, f64)>,
    /// Where the step's data came from, for the error a non-finite term raises.
    pub context: String,
}

/// The held-out figure that chooses the checkpoint: its name among [`Task::evaluate`]'s, and its sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelectBy {
    pub figure: &'static str,
    pub higher_is_better: bool,
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
    /// GradCache ([`crate::grad_cache`]): a step whose gradients the task computes itself, a piece at a
    /// time, handing each piece's gradients to `add` (the skeleton sums them per optimizer group), so a
    /// batch larger than memory trains in bounded memory; the returned step's terms are then values to
    /// log, not back-propagated. `None` (the default): the plain step, [`Task::step`]'s terms summed and
    /// back-propagated once.
    fn cached_step(&mut self, _model: &Self::Model, _step: usize, _add: &mut dyn FnMut(B::Gradients)) -> Option<anyhow::Result<Step<B>>> {
        None
    }
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
    /// The figure of [`Task::evaluate`] that chooses the trained model among the epochs' (none: the last).
    fn select_by(&self) -> Option<SelectBy> {
        None
    }
}

/// Trains `model` on `task` in `run_dir` (checkpoints/, tb/, log.jsonl), continuing from the folder's
/// last checkpoint if it has one; returns the trained model. `progress(done, total)` after every step.
pub fn train<B: AutodiffBackend, T: Task<B>>(
    task: &mut T,
    mut model: T::Model,
    groups: &[Group<B, T::Model>],
    schedule: &Schedule,
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<T::Model> {
    schedule.check().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        schedule.devices.as_ref().is_none_or(|d| d.len() == 1) && schedule.data_parallel == crate::schedule::DataParallel::MultiDevice,
        "schedule.devices, schedule.data_parallel: this trainer runs arbor's own loop (one document's batch a step) on one \
         device; data parallel over several is burn-train's, for the trainers on its Learner (the compressor, the planner's SFT)"
    );
    let per_epoch = task.steps_per_epoch();
    anyhow::ensure!(per_epoch > 0, "nothing to train on: an epoch has no step");
    let mut optims: Vec<OptimizerAdaptor<FusedAdamW, T::Model, B>> = groups.iter().map(|_| crate::adamw::init(schedule)).collect();
    std::fs::create_dir_all(run_dir).with_context(|| format!("cannot create {}", run_dir.display()))?;
    let ckpt_dir = run_dir.join("checkpoints");
    let device = Default::default();
    let mut start = 0;
    let mut best: Option<Best> = None;
    if let Some(state) = checkpoint::state(&ckpt_dir)? {
        match resume(task, &mut model, groups, &mut optims, &ckpt_dir, &state) {
            Ok(()) => {
                start = state.step;
                best = state.best.clone();
                eprintln!("resuming from step {start}");
            }
            Err(e) if checkpoint::is_damage(&e) => {
                eprintln!("warning: {e}: training again from the start");
                std::fs::remove_dir_all(&ckpt_dir).with_context(|| format!("cannot clear {}", ckpt_dir.display()))?;
                let _ = std::fs::remove_file(run_dir.join("log.jsonl"));
                let _ = std::fs::remove_dir_all(run_dir.join("tb"));
            }
            Err(e) => return Err(e),
        }
    }
    let mut logger = Logger::open(run_dir, Some(start))?;
    let total = schedule.total(per_epoch);
    let lr_names: Vec<String> = groups.iter().map(|g| format!("lr/{}", g.name)).collect();
    let select = task.select_by();
    let mut stop = false;
    for step in start..total {
        let (Step { terms, scalars, context }, params) = step_gradients(task, &model, step, groups)?;
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
        let factor = schedule.factor(step, total);
        if let Some(params) = params {
            for ((group, optim), params) in groups.iter().zip(&mut optims).zip(params) {
                model = optim.step(group.lr * factor, model, params);
            }
        }
        logged.extend(groups.iter().zip(&lr_names).map(|(g, name)| (name.as_str(), g.lr * factor)));
        logged.extend(task.monitor(&model));
        logged.push(("epoch", (step / per_epoch) as f64));
        let done = step + 1;
        logger.log(done, &logged)?;
        // Each epoch's end, and the last step (where `schedule.steps` cuts the last epoch short).
        if done % per_epoch == 0 || done == total {
            let eval = task.evaluate(&model.valid());
            if !eval.is_empty() {
                logger.log(done, &eval)?;
            }
            if let Some(score) = select.and_then(|by| eval.iter().find(|(n, _)| *n == by.figure).map(|&(_, v)| (by, v))) {
                let (by, value) = score;
                let better = best.as_ref().is_none_or(|b| if by.higher_is_better { value > b.score } else { value < b.score });
                if better {
                    let file = checkpoint::write_item::<B, _>(&ckpt_dir, "best", done, model.clone().into_record())?;
                    best = Some(Best { step: done, score: value, file });
                }
                let since = best.as_ref().map_or(0, |b| (done - b.step) / per_epoch);
                if schedule.patience.is_some_and(|p| since >= p) && done < total {
                    eprintln!(
                        "stopping early: {since} epochs without a better {} than {:.4}",
                        by.figure,
                        best.as_ref().map_or(f64::NAN, |b| b.score)
                    );
                    stop = true;
                }
            }
        }
        if done % schedule.checkpoint_every == 0 || done == total || stop {
            logger.flush()?;
            let mut files = vec![checkpoint::write_item::<B, _>(&ckpt_dir, "model", done, model.clone().into_record())?];
            for (group, optim) in groups.iter().zip(&optims) {
                files.push(checkpoint::write_item::<B, _>(&ckpt_dir, &format!("optim-{}", group.name), done, optim.to_record())?);
            }
            let state = task.state();
            if !state.is_null() {
                let name = format!("task-{done}.json");
                arbor_files::atomic_write(&ckpt_dir.join(&name), serde_json::to_string(&state)?.as_bytes())?;
                files.push(name);
            }
            checkpoint::commit(&ckpt_dir, done, files, done == total || stop, best.clone())?;
        }
        progress(done, total);
        if stop {
            break;
        }
    }
    logger.flush()?;
    match best {
        Some(best) => {
            let state = checkpoint::state(&ckpt_dir)?.context("the last checkpoint was committed")?;
            Ok(model.load_record(checkpoint::load_file::<B, _>(&ckpt_dir, &state, &best.file, &device)?))
        }
        None => Ok(model),
    }
}

/// One step's terms and each group's gradients: a task that caches its step (GradCache) hands its pieces'
/// gradients, summed per group as they come; any other task's terms are summed and back-propagated once.
/// No gradients when the step has no loss term (no GRPO group was usable): nothing to learn from.
pub fn step_gradients<B: AutodiffBackend, T: Task<B>>(
    task: &mut T,
    model: &T::Model,
    step: usize,
    groups: &[Group<B, T::Model>],
) -> anyhow::Result<(Step<B>, Option<Vec<GradientsParams>>)> {
    let mut sums: Vec<GradientsAccumulator<T::Model>> = groups.iter().map(|_| GradientsAccumulator::new()).collect();
    let add = &mut |mut grads: B::Gradients| {
        for (group, sum) in groups.iter().zip(sums.iter_mut()) {
            sum.accumulate(model, (group.params)(&mut grads, model));
        }
    };
    if let Some(done) = task.cached_step(model, step, add) {
        return Ok((done?, Some(sums.iter_mut().map(GradientsAccumulator::grads).collect())));
    }
    let done = task.step(model, step)?;
    let params = done.terms.iter().map(|(_, t)| t.clone()).reduce(|a, b| a + b).map(|loss| {
        let mut grads = loss.backward();
        groups.iter().map(|g| (g.params)(&mut grads, model)).collect()
    });
    Ok((done, params))
}

/// Loads a checkpoint's model, optimizers and task state.
fn resume<B: AutodiffBackend, T: Task<B>>(
    task: &mut T,
    model: &mut T::Model,
    groups: &[Group<B, T::Model>],
    optims: &mut [OptimizerAdaptor<FusedAdamW, T::Model, B>],
    ckpt_dir: &Path,
    state: &checkpoint::CheckpointState,
) -> anyhow::Result<()> {
    let device = Default::default();
    *model = model.clone().load_record(checkpoint::load::<B, _>(ckpt_dir, state, "model", &device)?);
    for (group, optim) in groups.iter().zip(optims.iter_mut()) {
        *optim = optim.clone().load_record(checkpoint::load::<B, _>(ckpt_dir, state, &format!("optim-{}", group.name), &device)?);
    }
    if let Some(file) = state.files.iter().find(|f| f.starts_with("task-")) {
        let path = checkpoint::verify(ckpt_dir, state, file)?;
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        task.restore(serde_json::from_str(&text).with_context(|| format!("{} is damaged", path.display()))?)?;
    }
    Ok(())
}

/// `model` with the weights of the finished run in `run_dir`, if it has finished (nothing is recomputed):
/// the best epoch's on validation when the run chose one, else the last. A damaged model file is said on a
/// warning line and read as unfinished, so it is trained again where training may happen.
pub fn finished<B: Backend, M: Module<B>>(model: M, run_dir: &Path) -> anyhow::Result<Option<M>> {
    let ckpt_dir = run_dir.join("checkpoints");
    let Some(state) = checkpoint::state(&ckpt_dir)?.filter(|s| s.complete) else { return Ok(None) };
    let loaded = match &state.best {
        Some(best) => checkpoint::load_file(&ckpt_dir, &state, &best.file, &Default::default()),
        None => checkpoint::load(&ckpt_dir, &state, "model", &Default::default()),
    };
    match loaded {
        Ok(record) => Ok(Some(model.load_record(record))),
        Err(e) if checkpoint::is_damage(&e) => {
            eprintln!("warning: {e}: its training is not read back");
            Ok(None)
        }
        Err(e) => Err(e),
    }
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

    fn settings() -> Schedule {
        Schedule { epochs: 4, checkpoint_every: 5, warmup_fraction: 0.1, weight_decay: 0.0, ..Schedule::default() }
    }

    fn run(task: &mut PullToHeadZero, dir: &Path) -> anyhow::Result<Vec<f32>> {
        run_with(task, dir, &settings())
    }

    fn run_with(task: &mut PullToHeadZero, dir: &Path, schedule: &Schedule) -> anyhow::Result<Vec<f32>> {
        let model = HeadAggregator::<A>::new(1, 2, AggregationInit::Uniform, &Default::default());
        let groups = [Group { name: "aggregation", lr: 0.1, params: |g, m: &HeadAggregator<A>| GradientsParams::from_module(g, m) }];
        let model = train(task, model, &groups, schedule, dir, &mut |_, _| {})?;
        Ok(model.head_weights().into_data().to_vec::<f32>().unwrap())
    }

    /// `schedule.steps` runs exactly that many steps, the last epoch cut short, its schedule decaying to 0
    /// at the last of them.
    #[test]
    fn a_run_of_a_set_number_of_steps_takes_exactly_those() {
        let dir = tempfile::tempdir().unwrap();
        let mut task = PullToHeadZero::default();
        run_with(&mut task, dir.path(), &Schedule { steps: Some(7), ..settings() }).unwrap();
        assert_eq!(task.seen, 7, "3 steps an epoch: two epochs and one step of the third");
        let log = std::fs::read_to_string(dir.path().join("log.jsonl")).unwrap();
        assert_eq!(log.lines().count(), 7);
        assert!(log.lines().last().unwrap().contains("\"lr/aggregation\":0.0"), "{log}");
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
