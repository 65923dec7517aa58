//! The dense control's step and its held-out reading, which the skeleton's task ([`super`]) and the
//! data-parallel path ([`crate::parallel::dense`]) both call: L_ret of one or more documents' batches
//! (the window of a fine-tuned encoder, the documents' other units by their frozen vectors), of a corpus-wide batch, and
//! the validation figures the epoch is chosen by ([`crate::objective`]).

use arbor_datasets::Corpus;
use arbor_models::dense::DenseModel;
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

use crate::config::HeldOut;
use crate::config::TrainConfig;
use crate::data::{Part, StepRows, TrainDoc, TrainQuery};
use crate::encoder::{StepEncoder, Vectors};
use crate::negatives::{CorpusBatch, StepMined};
use crate::objective::{corpus_retrieval_loss, flat_on_held_out, one_or_cat, retrieval_loss, step_false_negatives, validation_figures};
use crate::window::window;

/// L_ret of a step over `parts` (one document's batch each; several with `docs_per_step`, exactly as
/// SproutRAG's joint step reads them) and the units it encoded: a fine-tuned encoder runs over each
/// document's window of `step_tokens` and the document's other units enter by their frozen vectors (as
/// in SproutRAG's step); the adapter reads frozen vectors, every unit at no cost, so only the encoder's
/// step is windowed. Every unit of the step's documents is a negative of every query (with
/// `hard_negatives`). `mined`: the step's negatives from other documents (`negatives: Mined`), embedded
/// as the batch's units are.
pub(crate) fn plain_loss<B: Backend>(
    model: &DenseModel<B>,
    vectors: &Vectors<B>,
    config: &TrainConfig,
    parts: &[Part<'_>],
    mined: Option<StepMined<'_>>,
    device: &B::Device,
) -> (Tensor<B, 1>, usize) {
    let rows = StepRows::of(parts);
    let mut kept_units = 0;
    let mut units = Vec::with_capacity(parts.len());
    for part in parts {
        let queries: Vec<&TrainQuery> = part.queries.iter().map(|&q| &part.doc.queries[q]).collect();
        let kept = window(part.doc, &queries, config.step_tokens.filter(|_| vectors.fine_tuned()));
        kept_units += kept.len();
        units.push(model.embed(vectors.units_within(part.doc, &kept, device)));
    }
    let units = one_or_cat(units);
    let eq = model.embed(vectors.queries(&rows.queries, device));
    let false_negatives = step_false_negatives(&rows, &mined.map_or_else(Vec::new, |m| m.spans()), config);
    let mined = mined.map(|m| model.embed(vectors.units_across(m.docs, m.units, device)));
    (retrieval_loss(units, eq, &rows.positives, mined, &false_negatives, config), kept_units)
}

/// L_ret of a corpus-wide batch ([`crate::negatives`]): its queries against its candidates, the fine-tuned
/// encoder (or the map over frozen vectors) run over exactly those units.
pub(crate) fn corpus_loss<B: Backend>(
    model: &DenseModel<B>,
    vectors: &Vectors<B>,
    config: &TrainConfig,
    docs: &[TrainDoc],
    batch: &CorpusBatch,
    device: &B::Device,
) -> Tensor<B, 1> {
    let queries = batch.questions(docs);
    let units = model.embed(vectors.units_across(docs, &batch.candidates, device));
    corpus_retrieval_loss(units, model.embed(vectors.queries(&queries, device)), batch, config)
}

/// Validation IE and hit@1, 5 of `model` on the `holdout` documents read in `scope` (none when there is
/// none), its fine-tuned encoder run by the inference kernel.
pub(crate) fn held_out_figures<B: Backend>(
    corpus: &Corpus,
    holdout: &[TrainDoc],
    scope: HeldOut,
    encoder: Option<&StepEncoder>,
    model: &DenseModel<B>,
) -> Vec<(&'static str, f64)> {
    if holdout.is_empty() {
        return Vec::new();
    }
    let device = Default::default();
    let vectors = Vectors::validation(encoder, model.encoder.as_ref());
    validation_figures(&flat_on_held_out(corpus, holdout, scope, |doc| held_out(model, &vectors, doc, &device)))
}

/// A held-out document's unit and query embeddings.
pub(super) fn held_out<B: Backend>(model: &DenseModel<B>, vectors: &Vectors<B>, doc: &TrainDoc, device: &B::Device) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let queries: Vec<&TrainQuery> = doc.queries.iter().collect();
    (model.embed(vectors.all_units(doc, device)), model.embed(vectors.queries(&queries, device)))
}

/// On burn-flex, which computes in bf16 as burn-cuda does; left out of a build with Burn's collectives
/// (`ddp`), where every autodiff backend must be distributed and burn-flex is not.
#[cfg(test)]
#[cfg(not(feature = "ddp"))]
mod tests {
    use burn::backend::Autodiff;
    use burn::optim::GradientsParams;
    use burn::tensor::ElementConversion;
    use burn::tensor::backend::AutodiffBackend;
    use burn_flex::Flex;

    use super::*;
    use crate::encoder::StepEncoder;
    use arbor_models::DefaultBackend;
    use arbor_models::bert::Precision;

    /// A block's weight and its gradient after the dense step on the fixture's batch (the lease's two
    /// questions against its five units, the pretrained all-MiniLM-L6-v2 fine-tuned whole) on backend `B`.
    fn step<B: AutodiffBackend>(precision: Precision) -> (f32, Vec<f32>) {
        let crate::fixtures::Lease { docs, dim, .. } = crate::fixtures::lease();
        let tune = crate::fixtures::tune::<B>();
        let device = Default::default();
        let model = DenseModel::new(dim, Some(tune.bert.clone()), &device);
        let part = [Part { doc: &docs[0], queries: &[0, 1] }];
        let config = TrainConfig { batch_size: 2, freeze_encoder: false, precision, ..TrainConfig::default() };
        config.check().unwrap();
        let encoder = StepEncoder::of(&tune, &config).unwrap();
        let vectors = Vectors::step(Some(&encoder), model.encoder.as_ref());
        let (loss, _) = plain_loss(&model, &vectors, &config, &part, None, &device);
        let value: f32 = loss.clone().into_scalar().elem();
        let mut grads = loss.backward();
        let grads = GradientsParams::from_module(&mut grads, &model);
        let weight = &model.encoder.as_ref().unwrap().layers[5].intermediate.weight;
        (value, grads.get::<B::InnerBackend, 2>(weight.id).expect("a trained weight has a gradient").into_data().to_vec::<f32>().unwrap())
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm = |g: &[f32]| g.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (norm(a) * norm(b))
    }

    /// The dense step under `training.precision: Bf16` on a backend that computes in bf16 (burn-flex here,
    /// burn-cuda on a GPU) against the float32 step a user's CPU run takes (the default build: arbor's
    /// hand-written forward and backward, checked against PyTorch's): the loss within 1 % of float32's (or
    /// 1e-3 absolute: bf16 keeps 8 bits, so its logits move by ~4e-3 of their size, which a loss of 0.01 does
    /// not scale down: 0.010847 against 0.010659 on an AMD EPYC and on an Intel Xeon) and not equal to it, the
    /// gradient of a block's weight within cosine 0.99 of float32's (0.99993 on an AMD EPYC with AVX-512,
    /// Zen 4, against either float32 step). The reference is the default build's float32 step, not
    /// burn-flex's: on CI's machine after stop 79 (its processor not recorded) the bf16 gradient came out at
    /// cosine 0.709 of burn-flex's own float32 gradient, a figure no other machine has shown (the same test
    /// passed on a Xeon at stop 75), so on a miss burn-flex's float32 gradient is printed beside it, to say
    /// which side moved. The default CPU build (which cannot compute in bf16: arbor-models' test)
    /// refuses the setting before a step, naming the build; a frozen encoder cannot take it.
    #[test]
    fn the_bf16_step_is_near_the_float32_step_where_the_backend_computes_in_bf16() {
        let (l32, g32) = step::<Autodiff<DefaultBackend>>(Precision::F32);
        let (l16, g16) = step::<Autodiff<Flex>>(Precision::Bf16);
        assert!(l16 != l32 && (l16 - l32).abs() <= (0.01 * l32.abs()).max(1e-3), "bf16 loss {l16} against float32's {l32}");
        let cosine16 = cosine(&g32, &g16);
        if cosine16 < 0.99 {
            let (lf, gf) = step::<Autodiff<Flex>>(Precision::F32);
            panic!(
                "bf16 gradient at cosine {cosine16} of the default build's float32 gradient; burn-flex's float32 step: loss {lf} \
                 (default build {l32}), gradient at cosine {} of the default build's and {} of bf16's",
                cosine(&g32, &gf),
                cosine(&gf, &g16)
            );
        }

        let bf16 = TrainConfig { freeze_encoder: false, precision: Precision::Bf16, ..TrainConfig::default() };
        if !Precision::Bf16.supported::<Autodiff<DefaultBackend>>(&Default::default()) {
            let refused = StepEncoder::of(&crate::fixtures::tune::<Autodiff<DefaultBackend>>(), &bf16).unwrap_err().to_string();
            assert!(refused.contains("bf16") && refused.contains(arbor_models::backend::NAME), "{refused}");
        }
        assert!(TrainConfig { freeze_encoder: true, ..bf16 }.check().unwrap_err().contains("freeze_encoder: false"));
    }
}
