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
