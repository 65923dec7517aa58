//! burn-train's `Learner` for arbor's plain supervised trainers (SmartChunk's compressor, Section 4.3; the
//! planner's SFT) and, with `schedule.devices`, the encoder's fine-tuning and SproutRAG's joint training
//! ([`crate::parallel`]): burn-train runs the epochs, the `TrainStep` / `InferenceStep` of the model, its data loader (shuffled
//! batches), its loss metrics and its checkpointer; arbor supplies what its rules need that burn-train
//! does not do itself:
//!
//! - [`AtomicRecorder`]: burn-train's `FileCheckpointer` records a checkpoint in place; this recorder
//!   writes it to a temporary file, fsyncs it and renames it, so a kill never leaves a torn checkpoint;
//! - [`WarmupLinear`]: the shared schedule ([`Schedule::factor`]) as an `LrScheduler`;
//! - a `MetricLogger` putting the Learner's metrics (loss per step, the held-out loss per epoch, the
//!   learning rate) on `log.jsonl` and TensorBoard, as the skeleton logs;
//! - a renderer feeding arbor's progress bar instead of burn-train's terminal UI;
//! - [`NanStop`]: a step whose loss is not finite stops the run (burn-train's interrupter) before the
//!   epoch is checkpointed, and [`fit`] returns an error naming the step;
//! - [`Fit::select`]: the epoch kept chosen on validation (every epoch's checkpoint scored after training).
//!
//! Both loops keep one layout: `checkpoints/state.json` commits the final model in the skeleton's format
//! (so [`crate::skeleton::finished`] reads it), and burn-train's own per-epoch resume points (model, optimizer and
//! scheduler records, written by its `FileCheckpointer`) live in `checkpoints/learner/checkpoint/`. Resume is
//! at epoch granularity, as burn-train checkpoints: a run whose last complete epoch there is `e` continues
//! at `e + 1` through burn-train's `checkpoint(e)`, and the data loader's shuffle restarts with its seed, so
//! a resumed run sees other batches than an uninterrupted one (the skeleton resumes at the step, with the
//! same batches).
//! `schedule.devices` runs the epochs through burn-train's `ExecutionStrategy::MultiDevice` (data
//! parallel: each device a slice of the examples, gradients summed on the first; with `--features cuda`
//! one `CudaDevice` per GPU), or with `data_parallel: Ddp` its distributed data parallel
//! ([`crate::strategy`]); without it, the single default device.

use std::collections::HashMap;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::InMemDataset;
use burn::module::{AutodiffModule, Module};
use burn::optim::Optimizer;
use burn::optim::lr_scheduler::LrScheduler;
use burn::record::{BinFileRecorder, FileRecorder, FullPrecisionSettings, Recorder, RecorderError};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn_flex::Flex;
use burn_train::checkpoint::KeepLastNCheckpoints;
use burn_train::logger::MetricLogger;
use burn_train::metric::store::{EpochSummary, MetricsUpdate, Split};
use burn_train::metric::{Adaptor, LearningRateMetric, LossInput, LossMetric, MetricDefinition, MetricId, NumericEntry};
use burn_train::renderer::{
    EvaluationName, EvaluationProgress, MetricState, MetricsRenderer, MetricsRendererEvaluation, MetricsRendererTraining, ProgressType,
    TrainingProgress,
};
use burn_train::{InferenceStep, Interrupter, ItemLazy, Learner, SupervisedTraining, TrainStep};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::checkpoint;
use crate::logger::Logger;
use crate::schedule::Schedule;
use crate::skeleton::SelectBy;
use crate::strategy::{self, DataParallel};

/// Records like `BinFileRecorder` (full precision), through a temporary file that is fsynced and renamed.
#[derive(Debug, Default, Clone)]
pub struct AtomicRecorder(BinFileRecorder<FullPrecisionSettings>);

impl<B: Backend> Recorder<B> for AtomicRecorder {
    type Settings = FullPrecisionSettings;
    type RecordArgs = PathBuf;
    type RecordOutput = ();
    type LoadArgs = PathBuf;

    fn save_item<I: Serialize>(&self, item: I, file: PathBuf) -> Result<(), RecorderError> {
        let ext = <Self as FileRecorder<B>>::file_extension();
        let target = file.with_extension(ext);
        let name = target.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = target.with_file_name(format!(".tmp-{name}"));
        Recorder::<B>::save_item(&self.0, item, tmp.clone())?;
        let tmp = tmp.with_extension(ext);
        let io = |e: std::io::Error| RecorderError::Unknown(format!("{}: {e}", target.display()));
        std::fs::File::open(&tmp).and_then(|f| f.sync_all()).map_err(io)?;
        std::fs::rename(&tmp, &target).map_err(io)
    }

    fn load_item<I: DeserializeOwned>(&self, file: &mut PathBuf) -> Result<I, RecorderError> {
        Recorder::<B>::load_item(&self.0, file)
    }
}

impl<B: Backend> FileRecorder<B> for AtomicRecorder {
    fn file_extension() -> &'static str {
        "bin"
    }
}

/// [`Schedule::factor`] times a base learning rate, stepped once per batch.
#[derive(Debug, Clone)]
pub struct WarmupLinear {
    pub schedule: Schedule,
    pub lr: f64,
    pub total: usize,
    pub step: usize,
}

impl LrScheduler for WarmupLinear {
    type Record<B: Backend> = usize;

    fn step(&mut self) -> f64 {
        let lr = self.lr * self.schedule.factor(self.step.min(self.total.saturating_sub(1)), self.total);
        self.step += 1;
        lr
    }

    fn to_record<B: Backend>(&self) -> usize {
        self.step
    }

    fn load_record<B: Backend>(mut self, step: usize) -> Self {
        self.step = step;
        self
    }
}

/// Stops a run at its first non-finite loss; the model's `TrainStep` calls [`NanStop::check`].
#[derive(Clone, Default)]
pub struct NanStop(Interrupter);

impl std::fmt::Debug for NanStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NanStop")
    }
}

impl NanStop {
    /// Stops the run when `loss` is not finite; `what` says where the batch came from.
    pub fn check(&self, loss: f64, what: impl FnOnce() -> String) {
        if !loss.is_finite() && !self.0.should_stop() {
            self.0.stop(Some(&format!("the loss is {loss} on {}", what())));
        }
    }
}

/// How [`fit`] trains: the shared schedule, a learning rate and the batches.
pub struct Fit<'a> {
    pub schedule: &'a Schedule,
    pub lr: f64,
    pub batch_size: usize,
    pub run_dir: &'a Path,
    /// Figures logged beside every held-out evaluation (a baseline to beat).
    pub reference: Vec<(&'static str, f64)>,
    /// The figure of `finish` that chooses the epoch kept (`None`: the last epoch's model, `finish` on it
    /// alone). With it, burn-train keeps every epoch's checkpoint and `finish` scores each, after training.
    pub select: Option<SelectBy>,
}

/// Trains the model `make` builds around the run's [`NanStop`] (its `TrainStep` checks it) by the
/// optimizer `make` gives with it (at `how.lr` under the schedule) with burn-train's Learner on `train`,
/// its loss on `valid` logged after every epoch; `finish` gives figures of the trained model logged once
/// at the last step (a rerun over a finished training logs them no second time). With
/// `how.select`, `finish` scores every epoch's model instead (logged at the epoch's last step) and the
/// best epoch's is kept, committed as the checkpoint's `best` (what [`crate::skeleton::finished`] reads
/// back). Returns the model kept, without autodiff.
pub fn fit<B, M, I, BT, O>(
    make: impl FnOnce(NanStop) -> (M, O),
    batcher: BT,
    train: Vec<I>,
    valid: Vec<I>,
    how: &Fit,
    finish: &dyn Fn(&M::InnerModule) -> Vec<(&'static str, f64)>,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<M::InnerModule>
where
    B: AutodiffBackend,
    M: TrainStep + AutodiffModule<B> + Display + 'static,
    M::Input: Clone + std::fmt::Debug,
    <M::Output as ItemLazy>::ItemSync: Adaptor<LossInput<Flex>>,
    M::InnerModule: InferenceStep,
    <M::InnerModule as InferenceStep>::Input: Clone + std::fmt::Debug,
    <<M::InnerModule as InferenceStep>::Output as ItemLazy>::ItemSync: Adaptor<LossInput<Flex>>,
    I: Clone + Send + Sync + std::fmt::Debug + 'static,
    BT: Batcher<B, I, M::Input> + Batcher<B::InnerBackend, I, <M::InnerModule as InferenceStep>::Input> + Clone + Send + Sync + 'static,
    O: Optimizer<M, B> + 'static,
{
    anyhow::ensure!(how.batch_size > 0 && how.schedule.epochs > 0, "training.epochs and batch_size must be at least 1");
    anyhow::ensure!(!train.is_empty(), "nothing to train on in {}", how.run_dir.display());
    let dir = how.run_dir;
    let guard = NanStop::default();
    let (model, optim) = make(guard.clone());
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let devices = strategy::devices::<B>(how.schedule);
    let ddp = how.schedule.data_parallel == DataParallel::Ddp;
    let train = match ddp {
        true => {
            let (kept, left) = strategy::even(train, devices.len());
            if left > 0 {
                eprintln!("DDP over {} devices: {left} of the training items left out, so that every device takes as many steps", devices.len());
            }
            anyhow::ensure!(!kept.is_empty(), "fewer training items than devices in {}", dir.display());
            kept
        }
        false => train,
    };
    // Each device steps through its slice of the examples (burn-train's split: equal slices, the last one
    // takes the remainder); an optimizer step takes a batch from each device that has one left. Every
    // batch is a logged step; the learning-rate schedule counts optimizer steps.
    let n = devices.len();
    let batches: Vec<usize> =
        (0..n).map(|i| if i + 1 == n { train.len() - (n - 1) * (train.len() / n) } else { train.len() / n }.div_ceil(how.batch_size)).collect();
    let per_epoch: usize = batches.iter().sum();
    let total = per_epoch * how.schedule.epochs;
    // Under DDP every device's copy of the schedule advances once per device at each step.
    let schedule_steps = if ddp { total } else { batches.iter().max().copied().unwrap_or(0) * how.schedule.epochs };
    // burn-train's per-epoch resume points live beside the skeleton's commits, in checkpoints/learner/.
    let learner_dir = dir.join("checkpoints").join("learner");
    let epochs_dir = learner_dir.join("checkpoint");
    let resume = last_epoch(&epochs_dir);
    let logger = Logger::open(dir, resume.map(|e| e * per_epoch))?;
    let start = resume.unwrap_or(0) * per_epoch;
    let done = Arc::new(AtomicUsize::new(start));
    let train = DataLoaderBuilder::<B, I, M::Input>::new(batcher.clone())
        .batch_size(how.batch_size)
        .shuffle(how.schedule.seed)
        .build(InMemDataset::new(train));
    let valid = DataLoaderBuilder::<B::InnerBackend, I, <M::InnerModule as InferenceStep>::Input>::new(batcher)
        .batch_size(how.batch_size)
        .build(InMemDataset::new(valid));
    let scheduler = WarmupLinear { schedule: how.schedule.clone(), lr: how.lr, total: schedule_steps, step: 0 };
    let sink = LogSink { logger, step: start, per_epoch, names: HashMap::new(), valid: Vec::new(), reference: how.reference.clone() };
    let strategy = strategy::execution::<B>(how.schedule.data_parallel, devices)?;
    let (interrupter, epochs, counter, select) = (guard.0.clone(), how.schedule.epochs, done.clone(), how.select);
    // burn-train's training is not `Send`: it is built on the thread that runs it, while this one
    // drives the progress bar.
    let result = std::thread::scope(|s| {
        let run = s.spawn(move || {
            let mut training = SupervisedTraining::new(&learner_dir, train, valid)
                .metric_train_numeric(LossMetric::<Flex>::new())
                .metric_valid_numeric(LossMetric::<Flex>::new())
                .metric_train_numeric(LearningRateMetric::new())
                .with_file_checkpointer(AtomicRecorder::default())
                .with_checkpointing_strategy(KeepLastNCheckpoints::new(if select.is_some() { epochs.max(2) } else { 2 }))
                .with_metric_logger(sink)
                .renderer(Progress { done: counter, per_epoch })
                .with_application_logger(None)
                .with_interrupter(interrupter)
                .num_epochs(epochs);
            if let Some(strategy) = strategy {
                training = training.with_training_strategy(strategy.into());
            }
            if let Some(epoch) = resume {
                training = training.checkpoint(epoch);
            }
            training.launch(Learner::new(model, optim, scheduler)).model
        });
        while !run.is_finished() {
            progress(done.load(Ordering::Relaxed).min(total), total);
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        run.join()
    });
    let model = result.map_err(|_| anyhow::anyhow!("burn-train's Learner panicked in {}", dir.display()))?;
    if let Some(reason) = guard.0.get_message() {
        anyhow::bail!("training stopped in {}: {reason}", dir.display());
    }
    progress(total, total);
    let ckpt = dir.join("checkpoints");
    // A rerun over a finished training logs no figure a second time, but still chooses its epoch.
    let fresh = resume.is_none_or(|e| e < how.schedule.epochs);
    let (model, best) = match how.select {
        Some(by) => {
            let log = if fresh { Some(Logger::open(dir, None)?) } else { None };
            let (kept, best) = best_epoch::<B, M::InnerModule>(model.clone(), &epochs_dir, per_epoch, epochs, by, finish, log)?;
            let file = checkpoint::write_item::<B::InnerBackend, _>(&ckpt, "best", best.step, kept.clone().into_record())?;
            (kept, Some(checkpoint::Best { file, ..best }))
        }
        None => {
            let figures = if fresh { finish(&model) } else { Vec::new() };
            if !figures.is_empty() {
                let mut log = Logger::open(dir, None)?;
                log.log(total, &figures)?;
                log.flush()?;
            }
            (model, None)
        }
    };
    let file = checkpoint::write_item::<B::InnerBackend, _>(&ckpt, "model", total, model.clone().into_record())?;
    checkpoint::commit(&ckpt, total, vec![file], true, best)?;
    Ok(model)
}

/// Scores every epoch's model burn-train checkpointed in `epochs_dir` with `finish`, logs the figures at
/// the epoch's last step (when given a log), and returns the best epoch's model by `by` with its step
/// and score.
fn best_epoch<B: AutodiffBackend, M: Module<B::InnerBackend>>(
    model: M,
    epochs_dir: &Path,
    per_epoch: usize,
    epochs: usize,
    by: SelectBy,
    finish: &dyn Fn(&M) -> Vec<(&'static str, f64)>,
    mut log: Option<Logger>,
) -> anyhow::Result<(M, checkpoint::Best)> {
    let mut kept: Option<(M, checkpoint::Best)> = None;
    for epoch in 1..=epochs {
        let path = epochs_dir.join(format!("model-{epoch}"));
        let record = Recorder::<B::InnerBackend>::load(&AtomicRecorder::default(), path.clone(), &Default::default())
            .with_context(|| format!("cannot read epoch {epoch}'s checkpoint {}.bin", path.display()))?;
        let at_epoch = model.clone().load_record(record);
        let figures = finish(&at_epoch);
        let step = epoch * per_epoch;
        if let Some(log) = log.as_mut() {
            log.log(step, &figures)?;
        }
        let score = figures.iter().find(|(n, _)| *n == by.figure).map(|&(_, v)| v);
        let score = score.with_context(|| format!("the held-out figures name no {}", by.figure))?;
        let better = kept.as_ref().is_none_or(|(_, b)| if by.higher_is_better { score > b.score } else { score < b.score });
        if better {
            kept = Some((at_epoch, checkpoint::Best { step, score, file: String::new() }));
        }
    }
    if let Some(log) = log.as_mut() {
        log.flush()?;
    }
    kept.context("training.epochs is at least 1")
}

/// The last epoch whose model, optimizer and scheduler are all in burn-train's checkpoint folder.
fn last_epoch(dir: &Path) -> Option<usize> {
    let entries = std::fs::read_dir(dir).ok()?;
    let names: Vec<String> = entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    let epoch_of = |name: &str| name.strip_prefix("model-")?.strip_suffix(".bin")?.parse::<usize>().ok();
    names.iter().filter_map(|n| epoch_of(n)).filter(|e| ["optim", "scheduler"].iter().all(|item| names.contains(&format!("{item}-{e}.bin")))).max()
}

/// The Learner's metrics on arbor's logs: each training metric per step (`train/loss`, `train/lr`), the
/// held-out loss at the end of each epoch (`eval/loss`, the mean over the held-out batches).
struct LogSink {
    logger: Logger,
    step: usize,
    per_epoch: usize,
    names: HashMap<MetricId, String>,
    valid: Vec<(String, f64)>,
    reference: Vec<(&'static str, f64)>,
}

impl LogSink {
    fn name(&self, id: &MetricId) -> String {
        let name = self.names.get(id).map_or("metric", String::as_str);
        if name == "Learning Rate" { "lr".into() } else { name.to_lowercase().replace(' ', "_") }
    }
}

impl MetricLogger for LogSink {
    fn log(&mut self, update: MetricsUpdate, _epoch: usize, split: &Split) {
        let value = |e: &NumericEntry| match *e {
            NumericEntry::Value(v) => v,
            NumericEntry::Aggregated { aggregated_value, .. } => aggregated_value,
        };
        match split {
            Split::Train => {
                self.step += 1;
                let scalars: Vec<(String, f64)> =
                    update.entries_numeric.iter().map(|u| (format!("train/{}", self.name(&u.entry.metric_id)), value(&u.numeric_entry))).collect();
                let refs: Vec<(&str, f64)> = scalars.iter().map(|(n, v)| (n.as_str(), *v)).collect();
                let _ = self.logger.log(self.step, &refs);
            }
            _ => self.valid = update.entries_numeric.iter().map(|u| (self.name(&u.entry.metric_id), value(&u.running_entry))).collect(),
        }
    }

    fn read_numeric(&mut self, name: &str, _epoch: usize, _split: &Split) -> Result<Vec<NumericEntry>, String> {
        Err(format!("arbor's log does not read back {name}"))
    }

    fn log_metric_definition(&mut self, definition: MetricDefinition) {
        self.names.insert(definition.metric_id, definition.name);
    }

    fn log_epoch_summary(&mut self, summary: EpochSummary) {
        if let Split::Valid = summary.split {
            let mut scalars: Vec<(String, f64)> = self.valid.drain(..).map(|(n, v)| (format!("eval/{n}"), v)).collect();
            scalars.extend(self.reference.iter().map(|&(n, v)| (n.to_string(), v)));
            let refs: Vec<(&str, f64)> = scalars.iter().map(|(n, v)| (n.as_str(), *v)).collect();
            let _ = self.logger.log(summary.epoch_number * self.per_epoch, &refs);
            let _ = self.logger.flush();
        }
    }
}

/// Counts processed training batches for the progress bar.
struct Progress {
    done: Arc<AtomicUsize>,
    per_epoch: usize,
}

impl MetricsRendererTraining for Progress {
    fn update_train(&mut self, _state: MetricState) {}
    fn update_valid(&mut self, _state: MetricState) {}
    fn render_train(&mut self, item: TrainingProgress, _indicators: Vec<ProgressType>) {
        let epoch = item.global_progress.items_processed.saturating_sub(1);
        self.done.store(epoch * self.per_epoch + item.iteration.unwrap_or(0), Ordering::Relaxed);
    }
    fn render_valid(&mut self, _item: TrainingProgress, _indicators: Vec<ProgressType>) {}
}

impl MetricsRendererEvaluation for Progress {
    fn update_test(&mut self, _name: EvaluationName, _state: MetricState) {}
    fn render_test(&mut self, _item: EvaluationProgress, _indicators: Vec<ProgressType>) {}
}

impl MetricsRenderer for Progress {
    fn manual_close(&mut self) {}
    fn register_metric(&mut self, _definition: MetricDefinition) {}
}
