//! Training on burn-train's Learner, so that it runs data parallel over the devices `schedule.devices`
//! names (`ExecutionStrategy::MultiDevice`: each device steps through its slice of every epoch's items,
//! their gradients summed on the first device for one optimizer step): the encoder's fine-tuning of the
//! dense control ([`dense`]) and SproutRAG's joint training ([`sproutrag`]), both choosing their epoch
//! on validation IE as the skeleton does. What they share is here: their items, the skeleton's first
//! epoch of batches ([`items`], [`DocItem`]), passed to the step as they are ([`AsTheyAre`]); the
//! Learner's settings ([`Data`]); a step's loss as burn-train's loss metric reads it ([`LossOutput`]);
//! and AdamW per parameter group at its own learning rate under the one schedule the Learner steps
//! ([`Grouped`]: SproutRAG's aggregation weights, encoder and new modules).

/// burn-train's `TrainStep` and `InferenceStep` for a step module with a `loss(&self, &[DocItem])` and a
/// `guard: NanStop`: the mean loss of a batch's items, checked finite, back-propagated when training.
macro_rules! learner_steps {
    ($step:ident) => {
        impl<B: burn::tensor::backend::AutodiffBackend> burn_train::TrainStep for $step<B> {
            type Input = $crate::parallel::Items<$crate::parallel::DocItem>;
            type Output = $crate::parallel::LossOutput<B>;

            fn step(&self, $crate::parallel::Items(items): Self::Input) -> burn_train::TrainOutput<Self::Output> {
                use burn::tensor::ElementConversion;
                let loss = self.loss(&items);
                self.guard.check(loss.clone().into_scalar().elem(), || format!("{items:?}"));
                burn_train::TrainOutput::new(self, loss.backward(), $crate::parallel::LossOutput::new(loss))
            }
        }

        impl<B: burn::tensor::backend::Backend> burn_train::InferenceStep for $step<B> {
            type Input = $crate::parallel::Items<$crate::parallel::DocItem>;
            type Output = $crate::parallel::LossOutput<B>;

            fn step(&self, $crate::parallel::Items(items): Self::Input) -> Self::Output {
                $crate::parallel::LossOutput::new(self.loss(&items))
            }
        }
    };
}

pub mod dense;
pub mod sproutrag;

use std::path::Path;
use std::sync::Arc;

use arbor_datasets::Corpus;
use burn::data::dataloader::batcher::Batcher;
use burn::module::{AutodiffModule, Module, ModuleVisitor, Param};
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::{AdamW, GradientsParams, LearningRate, MultiGradientsParams, Optimizer};
use burn::tensor::Tensor;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn_flex::Flex;
use burn_train::ItemLazy;
use burn_train::metric::{Adaptor, LossInput};

use crate::config::TrainConfig;
use crate::data::{Part, TrainDoc, epoch_batches};
use crate::learner::Fit;
use crate::schedule::Schedule;
use crate::skeleton::SelectBy;

/// A step's loss, the one figure burn-train's loss metric reads.
pub struct LossOutput<B: Backend> {
    loss: Tensor<B, 1>,
}

impl<B: Backend> LossOutput<B> {
    pub fn new(loss: Tensor<B, 1>) -> Self {
        LossOutput { loss }
    }
}

impl<B: Backend> ItemLazy for LossOutput<B> {
    type ItemSync = LossOutput<Flex>;

    fn sync(self) -> LossOutput<Flex> {
        LossOutput { loss: Tensor::from_data(self.loss.into_data(), &Default::default()) }
    }
}

impl<B: Backend> Adaptor<LossInput<B>> for LossOutput<B> {
    fn adapt(&self) -> LossInput<B> {
        LossInput::new(self.loss.clone())
    }
}

/// One step's batch: a document and its queries (by index), one of the skeleton's batches.
#[derive(Clone)]
pub struct DocItem {
    doc: Arc<TrainDoc>,
    at: usize,
    queries: Vec<usize>,
}

impl DocItem {
    /// The item as a step's one part.
    pub(crate) fn part(&self) -> Part<'_> {
        Part { doc: &self.doc, queries: &self.queries }
    }
}

impl std::fmt::Debug for DocItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "document {}, {} queries", self.at, self.queries.len())
    }
}

/// The first epoch's batches of `docs` ([`epoch_batches`]), as the skeleton's first epoch takes them.
pub fn items(docs: &[TrainDoc], config: &TrainConfig) -> Vec<DocItem> {
    let shared: Vec<Arc<TrainDoc>> = docs.iter().cloned().map(Arc::new).collect();
    epoch_batches(docs, config.batch_size, config.schedule.seed, 0)
        .into_iter()
        .map(|b| DocItem { doc: shared[b.doc].clone(), at: b.doc, queries: b.queries })
        .collect()
}

/// What a data-parallel training reads besides its model.
pub struct Data<'a> {
    pub config: &'a TrainConfig,
    pub corpus: &'a Corpus,
    pub train: &'a [TrainDoc],
    pub holdout: &'a [TrainDoc],
    pub run_dir: &'a Path,
}

impl Data<'_> {
    /// The Learner's settings: `per_device` items a step on each device, the epoch chosen on validation IE
    /// (so a validation document must have a query); `lr`: the scheduler's base rate.
    fn fit(&self, lr: f64, per_device: usize) -> anyhow::Result<Fit<'_>> {
        anyhow::ensure!(
            self.holdout.iter().any(|d| !d.queries.is_empty()),
            "schedule.devices: the data-parallel training chooses its epoch on validation, and no validation document has a query"
        );
        Ok(Fit {
            schedule: &self.config.schedule,
            lr,
            batch_size: per_device,
            run_dir: self.run_dir,
            reference: Vec::new(),
            select: Some(SelectBy { figure: "eval/ie_mean", higher_is_better: true }),
        })
    }
}

/// A batch of items as they are: a step encodes them itself, on the device of its model's copy.
#[derive(Debug, Clone)]
pub struct Items<I>(pub Vec<I>);

/// Batches items as they are ([`Items`]).
#[derive(Debug, Clone, Copy)]
pub struct AsTheyAre;

impl<B: Backend, I> Batcher<B, I, Items<I>> for AsTheyAre {
    fn batch(&self, items: Vec<I>, _device: &B::Device) -> Items<I> {
        Items(items)
    }
}

/// Takes the gradients of a group's parameters out of a step's: `take(model, grads)`.
pub type Take<M> = fn(&M, &mut GradientsParams) -> GradientsParams;

/// One AdamW (the schedule's weight decay and clipping) per parameter group, each at `scale` times the
/// learning rate the Learner's scheduler gives. Groups take their gradients in order; the last one
/// (`take: None`) updates every parameter left.
#[derive(Clone)]
pub struct Grouped<M: AutodiffModule<B>, B: AutodiffBackend> {
    groups: Vec<(f64, Option<Take<M>>, OptimizerAdaptor<AdamW, M, B>)>,
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> Grouped<M, B> {
    /// `groups`: each group's learning-rate scale and how it takes its gradients (`None` for the last).
    pub fn new(schedule: &Schedule, groups: Vec<(f64, Option<Take<M>>)>) -> Self {
        // Burn's AdamW itself (the Learner's trainers keep it), configured as the skeleton's.
        let adamw = || crate::adamw::config(schedule).init();
        Grouped { groups: groups.into_iter().map(|(scale, take)| (scale, take, adamw())).collect() }
    }

    /// One group updating every parameter at the scheduler's learning rate.
    pub fn single(schedule: &Schedule) -> Self {
        Grouped::new(schedule, vec![(1.0, None)])
    }
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> Optimizer<M, B> for Grouped<M, B> {
    type Record = Vec<<OptimizerAdaptor<AdamW, M, B> as Optimizer<M, B>>::Record>;

    fn step(&mut self, lr: LearningRate, mut module: M, mut grads: GradientsParams) -> M {
        for (scale, take, optim) in &mut self.groups {
            let group = match take {
                Some(take) => take(&module, &mut grads),
                None => std::mem::replace(&mut grads, GradientsParams::new()),
            };
            module = optim.step(lr * *scale, module, group);
        }
        module
    }

    fn step_multi(&mut self, lr: LearningRate, mut module: M, mut grads: MultiGradientsParams) -> M {
        for (scale, take, optim) in &mut self.groups {
            let group = match take {
                Some(take) => MultiGradientsParams { grads: grads.grads.iter_mut().map(|(g, device)| (take(&module, g), *device)).collect() },
                None => std::mem::take(&mut grads),
            };
            module = optim.step_multi(lr * *scale, module, group);
        }
        module
    }

    fn to_record(&self) -> Self::Record {
        self.groups.iter().map(|(_, _, optim)| optim.to_record()).collect()
    }

    fn load_record(mut self, record: Self::Record) -> Self {
        for ((_, _, optim), record) in self.groups.iter_mut().zip(record) {
            *optim = optim.clone().load_record(record);
        }
        self
    }
}

/// The gradients of `sub`'s parameters, moved out of `grads`.
pub fn take<B: AutodiffBackend, S: Module<B>>(grads: &mut GradientsParams, sub: &S) -> GradientsParams {
    struct Moving<'a> {
        from: &'a mut GradientsParams,
        into: GradientsParams,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Moving<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if let Some(g) = self.from.remove::<B::InnerBackend, D>(param.id) {
                self.into.register::<B::InnerBackend, D>(param.id, g);
            }
        }
    }
    let mut moving = Moving { from: grads, into: GradientsParams::new() };
    sub.visit(&mut moving);
    moving.into
}

#[cfg(test)]
mod tests {
    use arbor_models::DefaultBackend;
    use burn::backend::Autodiff;
    use burn::nn::{Linear, LinearConfig};

    use super::*;

    type A = Autodiff<DefaultBackend>;

    #[derive(Module, Debug)]
    struct Two<B: Backend> {
        first: Linear<B>,
        second: Linear<B>,
    }

    /// Two groups: `first` at scale 0 keeps its weights exactly (AdamW's step and its weight decay are
    /// both times the learning rate), `second` (the rest) at scale 1 moves; the first group's gradients
    /// never reach the second's optimizer.
    #[test]
    fn each_group_steps_at_its_own_rate() {
        let device = Default::default();
        let model = Two::<A> { first: LinearConfig::new(3, 2).init(&device), second: LinearConfig::new(2, 1).init(&device) };
        let x = Tensor::<A, 2>::ones([4, 3], &device);
        let loss = model.second.forward(model.first.forward(x)).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let first: Take<Two<A>> = |m, g| take(g, &m.first);
        let mut optim = Grouped::new(&Schedule::default(), vec![(0.0, Some(first)), (1.0, None)]);
        let weights = |m: &Two<A>| (m.first.weight.val().into_data(), m.second.weight.val().into_data());
        let before = weights(&model);
        let after = weights(&optim.step(0.1, model, grads));
        assert_eq!(after.0, before.0, "scale 0: unchanged");
        assert_ne!(after.1, before.1, "scale 1: moved");
        let records = Optimizer::<Two<A>, A>::to_record(&optim);
        assert_eq!(records.len(), 2, "a record per group");
        assert_eq!((records[0].len(), records[1].len()), (2, 2), "each group's state holds its own layer's weight and bias");
    }
}

/// What the two-device tests of [`dense`] and [`sproutrag`] read and compare.
#[cfg(test)]
pub(crate) mod two_devices {
    use std::path::Path;

    /// The log's figure `name` at every line that has it (the held-out loss, the validation IE).
    pub fn logged(run_dir: &Path, name: &str) -> Vec<f64> {
        let log = std::fs::read_to_string(run_dir.join("log.jsonl")).unwrap();
        log.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()[name].as_f64()).collect()
    }

    /// One device's run and two devices' (held-out loss per epoch, the trained vectors) against the
    /// vectors before training: each epoch's held-out loss within 1 %, the vectors apart by under 5 % of
    /// how far training moved them.
    pub fn assert_close(one: (&[f64], &[f32]), two: (&[f64], &[f32]), start: &[f32]) {
        assert_eq!((one.0.len(), two.0.len()), (3, 3), "a held-out loss per epoch");
        let gap = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        let (moved, apart) = (gap(one.1, start), gap(one.1, two.1));
        assert!(moved > 1e-2 && apart < 0.05 * moved, "training moved the vectors by {moved}; one and two devices differ by {apart}");
        for (a, b) in one.0.iter().zip(two.0) {
            assert!((a - b).abs() < 0.01 * a, "held-out loss per epoch: one device {:?}, two {:?}", one.0, two.0);
        }
    }
}
