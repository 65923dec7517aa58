//! The encoder's fine-tuning on burn-train's Learner, data parallel over `schedule.devices`: the matched
//! control's training ([`crate::dense`], SproutRAG's L_ret alone, Section 4),
//!
//! ```text
//! L = InfoNCE(queries, positive units; in-batch and in-document negatives, tau)
//! ```
//!
//! over the same windows as the skeleton's step ([`crate::window`]: the batch's positives, then the
//! units nearest its queries within `step_tokens`), each window encoded with gradients above
//! `frozen_layers`. One item is one of the skeleton's batches (one document, up to `batch_size` of its
//! queries); each device takes one item a step from its slice of the epoch, and their gradients are summed
//! on the first device for one AdamW step at `lr_encoder` under the shared schedule. AdamW's step hardly
//! depends on the gradient's scale, so two devices taking one window each make nearly the step one
//! device makes over both windows at once ([`fit_windows`]'s `per_device`): a test checks it. Every
//! epoch's model is scored on the held-out documents (validation IE, as the skeleton does) after
//! training, and the best epoch's is kept. Two devices make half as many steps per epoch as one: the
//! same settings train less (see experiments/finetune-devices-legalbench.ron).
//!
//! What differs from the skeleton's loop: the items are the first epoch's batches, visited in an order
//! burn-train's data loader shuffles every epoch (the skeleton regroups the queries every epoch), and a
//! run resumes at epoch granularity.

use std::path::Path;

use arbor_models::bert::Bert;
use arbor_models::dense::DenseModel;
use burn::module::Module;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Tensor};
use burn_train::{InferenceStep, TrainOutput, TrainStep};

use crate::config::TrainConfig;
use crate::data::{TrainDoc, TrainQuery, epoch_batches};
use crate::encoder::StepEncoder;
use crate::learner::{self, Fit, NanStop};
use crate::parallel::{AsTheyAre, Grouped, Items, LossOutput};
use crate::skeleton::SelectBy;
use crate::sproutrag::retrieval_loss;
use crate::window::window;

/// One step's window: the token ids of the units kept and of the queries, each query's positive among
/// the units kept, and where it came from (for the error a non-finite loss raises).
#[derive(Debug, Clone)]
pub struct WindowItem {
    units: Vec<Vec<u32>>,
    queries: Vec<Vec<u32>>,
    positives: Vec<usize>,
    context: String,
}

/// The windows of the first epoch's batches of `docs` ([`epoch_batches`]), as the skeleton's step cuts
/// them.
pub fn windows(docs: &[TrainDoc], config: &TrainConfig) -> Vec<WindowItem> {
    let batches = epoch_batches(docs, config.batch_size, config.schedule.seed, 0);
    batches
        .into_iter()
        .map(|batch| {
            let doc = &docs[batch.doc];
            let queries: Vec<&TrainQuery> = batch.queries.iter().map(|&q| &doc.queries[q]).collect();
            let kept = window(doc, &queries, config.step_tokens);
            let at = |u: usize| kept.binary_search(&u).expect("the window holds every positive");
            WindowItem {
                units: kept.iter().map(|&u| doc.ids[u].clone()).collect(),
                queries: queries.iter().map(|q| q.ids.clone()).collect(),
                positives: queries.iter().map(|q| at(q.positive)).collect(),
                context: format!("document {}, {} queries, {} of {} units", batch.doc, queries.len(), kept.len(), doc.units.len()),
            }
        })
        .collect()
}

/// The dense model as burn-train trains it: the mean InfoNCE of a batch's windows is its training and
/// held-out step.
#[derive(Module, Debug)]
pub struct DenseStep<B: Backend> {
    pub model: DenseModel<B>,
    #[module(skip)]
    encoder: StepEncoder,
    #[module(skip)]
    config: TrainConfig,
    #[module(skip)]
    guard: NanStop,
}

impl<B: Backend> DenseStep<B> {
    /// `model` fine-tuned through `encoder` under `config`.
    pub fn new(model: DenseModel<B>, encoder: StepEncoder, config: TrainConfig) -> Self {
        DenseStep { model, encoder, config, guard: NanStop::default() }
    }

    /// The mean InfoNCE of `items`' windows, `[1]`.
    pub fn loss(&self, items: &[WindowItem]) -> Tensor<B, 1> {
        let bert: &Bert<B> = self.model.encoder.as_ref().expect("the data-parallel step fine-tunes the encoder");
        let device = self.model.devices().into_iter().next().expect("the encoder has weights");
        let sum = items
            .iter()
            .map(|item| {
                let units = self.model.embed(self.encoder.pool(bert, &rows(&item.units), &device));
                let queries = self.model.embed(self.encoder.pool(bert, &rows(&item.queries), &device));
                retrieval_loss(units, queries, &item.positives, &self.config)
            })
            .reduce(|a, b| a + b)
            .expect("a batch holds a window");
        sum / items.len() as f32
    }
}

/// Token-id rows as the encoder reads them.
fn rows(ids: &[Vec<u32>]) -> Vec<&[u32]> {
    ids.iter().map(Vec::as_slice).collect()
}

impl<B: AutodiffBackend> TrainStep for DenseStep<B> {
    type Input = Items<WindowItem>;
    type Output = LossOutput<B>;

    fn step(&self, Items(items): Items<WindowItem>) -> TrainOutput<LossOutput<B>> {
        let loss = self.loss(&items);
        let context = || items.iter().map(|i| i.context.as_str()).collect::<Vec<_>>().join("; ");
        self.guard.check(loss.clone().into_scalar().elem(), context);
        TrainOutput::new(self, loss.backward(), LossOutput::new(loss))
    }
}

impl<B: Backend> InferenceStep for DenseStep<B> {
    type Input = Items<WindowItem>;
    type Output = LossOutput<B>;

    fn step(&self, Items(items): Items<WindowItem>) -> LossOutput<B> {
        LossOutput::new(self.loss(&items))
    }
}

/// Trains `model` (its encoder fine-tuned through `encoder`) on the windows of `train`, `per_device` of
/// them a step on each device of `config.schedule.devices`, the held-out loss on `holdout`'s windows
/// after every epoch; `validate` scores an epoch's model (it must give `eval/ie_mean`, which chooses
/// the epoch kept).
#[allow(clippy::too_many_arguments)]
pub fn fit_windows<B: AutodiffBackend>(
    model: DenseModel<B>,
    encoder: StepEncoder,
    config: &TrainConfig,
    train: &[TrainDoc],
    holdout: &[TrainDoc],
    per_device: usize,
    run_dir: &Path,
    validate: &dyn Fn(&DenseModel<B::InnerBackend>) -> Vec<(&'static str, f64)>,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<DenseModel<B::InnerBackend>> {
    let how = Fit {
        schedule: &config.schedule,
        lr: config.lr_encoder,
        batch_size: per_device,
        run_dir,
        reference: Vec::new(),
        select: (!holdout.is_empty()).then_some(SelectBy { figure: "eval/ie_mean", higher_is_better: true }),
    };
    let (train, valid) = (windows(train, config), windows(holdout, config));
    let trained = learner::fit(
        |guard| (DenseStep { guard, ..DenseStep::new(model, encoder, config.clone()) }, Grouped::single(&config.schedule)),
        AsTheyAre,
        train,
        valid,
        &how,
        &|step: &DenseStep<B::InnerBackend>| validate(&step.model),
        progress,
    )?;
    Ok(trained.model)
}

#[cfg(test)]
mod tests {
    use arbor_models::DefaultBackend;
    use burn::backend::Autodiff;
    use burn::module::AutodiffModule;

    use super::*;
    use crate::dense::held_out_figures;
    use crate::schedule::Schedule;

    type A = Autodiff<DefaultBackend>;

    /// The lease's two questions, one window each (`batch_size: 1`), for three epochs: one device taking
    /// both windows a step (their mean loss), against two devices (the CPU's one device twice) taking one
    /// each, gradients summed. AdamW's update hardly depends on the gradient's scale, so both make nearly
    /// the same three steps: the held-out loss every epoch within 1 %, and the fine-tuned encoder's
    /// vectors apart by under 5 % of how far training moved them (measured: 0.25 % and 1.0 %; not
    /// bit for bit because AdamW's epsilon, 1e-5, is not small beside the smallest gradients, which the
    /// sum doubles). `tau: 1` keeps the loss off zero so that the steps are not all epsilon. Every epoch
    /// is scored on validation and the best one is kept.
    #[test]
    fn two_devices_take_the_step_one_device_takes_over_both_windows() {
        let crate::fixtures::Lease { corpus, docs, tune, .. } = crate::fixtures::lease();
        let device = Default::default();
        let run = |devices: Vec<u16>, per_device: usize| {
            let dir = tempfile::tempdir().unwrap();
            let schedule = Schedule { epochs: 3, checkpoint_every: 100, warmup_fraction: 0.0, devices: Some(devices), ..Schedule::default() };
            let config = TrainConfig { schedule, batch_size: 1, lr_encoder: 1e-4, tau: 1.0, frozen_layers: Some(4), ..TrainConfig::default() };
            let encoder = StepEncoder::new(&tune, config.frozen_layers).unwrap();
            let model = DenseModel::<A>::new(0, Some(tune.bert.clone()), &device);
            let validate = |m: &DenseModel<DefaultBackend>| held_out_figures(&corpus, &docs, Some(&encoder), m);
            let trained = fit_windows(model, encoder.clone(), &config, &docs, &docs, per_device, dir.path(), &validate, &mut |_, _| {}).unwrap();
            let log = std::fs::read_to_string(dir.path().join("log.jsonl")).unwrap();
            let rows: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            let held: Vec<f64> = rows.iter().filter_map(|r| r["eval/loss"].as_f64()).collect();
            let ie: Vec<f64> = rows.iter().filter_map(|r| r["eval/ie_mean"].as_f64()).collect();
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
        assert_eq!((one.len(), two.len(), one_scored, two_scored), (3, 3, 3, 3), "a held-out loss and a validation IE per epoch");
        let pretrained = {
            let rows: Vec<&[u32]> = docs[0].ids.iter().map(Vec::as_slice).collect();
            let bert = tune.bert.valid();
            StepEncoder::new(&tune, Some(4)).unwrap().pool(&bert, &rows, &device).into_data().to_vec::<f32>().unwrap()
        };
        let gap = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        let (moved, apart) = (gap(&w_one, &pretrained), gap(&w_one, &w_two));
        assert!(moved > 1e-2 && apart < 0.05 * moved, "training moved the vectors by {moved}; one and two devices differ by {apart}");
        for (a, b) in one.iter().zip(&two) {
            assert!((a - b).abs() < 0.01 * a, "held-out loss per epoch: one device {one:?}, two {two:?}");
        }
        assert!(one[2] < one[0], "the held-out loss falls: {one:?}");
    }
}
