//! The dense control's training ([`crate::dense`], SproutRAG's L_ret alone, Section 4) on burn-train's
//! Learner, data parallel over `schedule.devices`,
//!
//! ```text
//! L = InfoNCE(queries, positive units; in-batch and in-document negatives, tau)
//! ```
//!
//! One item is one of the skeleton's batches (a document, up to `batch_size` of its queries) and its loss
//! is the skeleton's (`dense::plain_loss`, the same function): a fine-tuned encoder runs over the window
//! of `step_tokens` with gradients above `frozen_layers`, the adapter over the frozen vectors of every
//! unit. Each device takes one item a step from its slice of the epoch, and their gradients are summed on
//! the first device for one AdamW step (at `lr_encoder`, or `lr_new` for the adapter) under the shared
//! schedule. AdamW's step hardly depends on the gradient's scale, so two devices taking one batch each
//! make nearly the step one device makes over both at once ([`fit`]'s `per_device`): a test checks it.
//! Every epoch's model is scored on the held-out documents (validation IE, as the skeleton does) after
//! training, and the best epoch's is kept. Two devices make half as many steps per epoch as one: the same
//! settings train less (experiments/finetune-devices-legalbench.ron).
//!
//! What differs from the skeleton's loop: the items are the first epoch's batches, visited in an order
//! burn-train's data loader shuffles every epoch (the skeleton regroups the queries every epoch), and a
//! run resumes at epoch granularity.

use arbor_models::dense::DenseModel;
use burn::module::Module;
use burn::tensor::Tensor;
use burn::tensor::backend::{AutodiffBackend, Backend};

use super::{AsTheyAre, Data, DocItem, Grouped};
use crate::config::TrainConfig;
use crate::dense::step::{held_out_figures, plain_loss};
use crate::encoder::{StepEncoder, Vectors};
use crate::learner::{self, NanStop};

/// The dense model as burn-train trains it: the mean L_ret of a batch's items is its training and
/// held-out step.
#[derive(Module, Debug)]
pub struct DenseStep<B: Backend> {
    pub model: DenseModel<B>,
    #[module(skip)]
    encoder: Option<StepEncoder>,
    #[module(skip)]
    config: TrainConfig,
    #[module(skip)]
    guard: NanStop,
}

impl<B: Backend> DenseStep<B> {
    /// `model` (its encoder fine-tuned through `encoder`, or the adapter over frozen vectors: `None`)
    /// under `config`.
    pub fn new(model: DenseModel<B>, encoder: Option<StepEncoder>, config: TrainConfig) -> Self {
        DenseStep { model, encoder, config, guard: NanStop::default() }
    }

    /// The mean L_ret of `items`, `[1]`.
    pub fn loss(&self, items: &[DocItem]) -> Tensor<B, 1> {
        let device = self.model.devices().into_iter().next().expect("the model has weights");
        let vectors = Vectors::step(self.encoder.as_ref(), self.model.encoder.as_ref());
        let sum = items
            .iter()
            .map(|item| plain_loss(&self.model, &vectors, &self.config, &[item.part()], None, &device).0)
            .reduce(|a, b| a + b)
            .expect("a batch holds an item");
        sum / items.len() as f32
    }
}

learner_steps!(DenseStep);

/// Trains `model` on `data.train`'s batches, `per_device` of them a step on each device of
/// `schedule.devices`; the held-out loss on `data.holdout`'s batches after every epoch, and the epoch of
/// the best validation IE kept.
pub fn fit<B: AutodiffBackend>(
    model: DenseModel<B>,
    encoder: Option<StepEncoder>,
    data: &Data,
    per_device: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<DenseModel<B::InnerBackend>> {
    let config = data.config;
    let lr = if encoder.is_some() { config.lr_encoder } else { config.lr_new };
    let fit = data.fit(lr, per_device)?;
    let validate = |s: &DenseStep<B::InnerBackend>| held_out_figures(data.corpus, data.holdout, data.config.validation, s.encoder.as_ref(), &s.model);
    let make = |guard| (DenseStep { guard, ..DenseStep::new(model, encoder, config.clone()) }, Grouped::single(&config.schedule));
    let (train, valid) = (super::items(data.train, config), super::items(data.holdout, config));
    Ok(learner::fit(make, AsTheyAre, train, valid, &fit, &validate, progress)?.model)
}

#[cfg(test)]
mod tests {
    use arbor_models::DefaultBackend;
    use burn::backend::Autodiff;
    use burn::module::AutodiffModule;

    use super::*;
    use crate::parallel::two_devices::{assert_close, logged};
    use crate::schedule::Schedule;

    type A = Autodiff<DefaultBackend>;

    /// The lease's two questions, one batch each (`batch_size: 1`), for three epochs: one device taking
    /// both batches a step (their mean loss), against two devices (the CPU's one device twice) taking one
    /// each, gradients summed. AdamW's update hardly depends on the gradient's scale, so both make nearly
    /// the same three steps: the held-out loss every epoch within 1 %, and the fine-tuned encoder's
    /// vectors apart by under 5 % of how far training moved them (measured: 0.25 % and 1.0 %; not
    /// bit for bit because AdamW's epsilon, 1e-5, is not small beside the smallest gradients, which the
    /// sum doubles). `tau: 1` keeps the loss off zero so that the steps are not all epsilon. Every epoch
    /// is scored on validation and the best one is kept.
    #[test]
    fn two_devices_take_the_step_one_device_takes_over_both_batches() {
        let crate::fixtures::Lease { corpus, docs, tune, .. } = crate::fixtures::lease();
        let device = Default::default();
        let encoder = StepEncoder::new(&tune, Some(4)).unwrap();
        let run = |devices: Vec<u16>, per_device: usize| {
            let dir = tempfile::tempdir().unwrap();
            let schedule = Schedule { epochs: 3, checkpoint_every: 100, warmup_fraction: 0.0, devices: Some(devices), ..Schedule::default() };
            let config = TrainConfig { schedule, batch_size: 1, lr_encoder: 1e-4, tau: 1.0, frozen_layers: Some(4), ..TrainConfig::default() };
            let model = DenseModel::<A>::new(0, Some(tune.bert.clone()), &device);
            let data = Data { config: &config, corpus: &corpus, train: &docs, holdout: &docs, run_dir: dir.path() };
            let trained = fit(model, Some(encoder.clone()), &data, per_device, &mut |_, _| {}).unwrap();
            let (held, ie) = (logged(dir.path(), "eval/loss"), logged(dir.path(), "eval/ie_mean"));
            let state = crate::checkpoint::state(&dir.path().join("checkpoints")).unwrap().unwrap();
            let back = crate::dense::finished::<DefaultBackend>(0, Some(tune.bert.valid()), dir.path()).unwrap().expect("complete");
            let probe = |m: &DenseModel<DefaultBackend>| {
                let rows: Vec<&[u32]> = docs[0].ids.iter().map(Vec::as_slice).collect();
                encoder.pool(m.encoder.as_ref().unwrap(), &rows, &device).into_data().to_vec::<f32>().unwrap()
            };
            assert_eq!(probe(&back), probe(&trained), "the model read back is the one kept");
            let best = state.best.expect("the epoch is chosen on validation");
            assert_eq!(best.score, ie.iter().copied().fold(f64::NEG_INFINITY, f64::max), "the best validation IE of {ie:?}");
            (held, ie.len(), probe(&trained))
        };
        let (one, one_scored, w_one) = run(vec![0], 2);
        let (two, two_scored, w_two) = run(vec![0, 0], 1);
        assert_eq!((one_scored, two_scored), (3, 3), "a validation IE per epoch");
        let pretrained = {
            let rows: Vec<&[u32]> = docs[0].ids.iter().map(Vec::as_slice).collect();
            encoder.pool(&tune.bert.valid(), &rows, &device).into_data().to_vec::<f32>().unwrap()
        };
        assert_close((&one, &w_one), (&two, &w_two), &pretrained);
        assert!(one[2] < one[0], "the held-out loss falls: {one:?}");
    }
}
