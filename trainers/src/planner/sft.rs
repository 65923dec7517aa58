//! The SFT phase: teacher-forced cross-entropy on the pseudo-labels' expert traces, as a burn-train
//! `TrainStep` / `InferenceStep` ([`SftStep`]) the Learner runs.

use arbor_models::planner::{PlanVocab, Planner};
use burn::data::dataloader::batcher::Batcher;
use burn::module::Module;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Tensor, TensorData};
use burn_train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};

use crate::learner::NanStop;

use super::PlanExample;

/// Cross-entropy of the expert traces of `examples` (teacher forcing), per written token.
pub(super) fn imitation<B: Backend>(model: &Planner<B>, vocab: PlanVocab, examples: &[&PlanExample]) -> Tensor<B, 1> {
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

/// The planner as burn-train trains it by SFT: the teacher-forced cross-entropy is its training and held-out
/// step.
#[derive(Module, Debug)]
pub struct SftStep<B: Backend> {
    pub planner: Planner<B>,
    #[module(skip)]
    pub(super) guard: NanStop,
}

/// A batch of labelled queries (their expert traces are written from the labels in the step).
#[derive(Debug, Clone)]
pub struct TraceBatch(Vec<PlanExample>, PlanVocab);

#[derive(Debug, Clone, Copy)]
pub(super) struct Traces(pub(super) PlanVocab);

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
