//! SproutRAG's joint training (Section 4): per step, one document and a batch of its queries (or, with
//! `docs_per_step`, that many documents and a batch of each one's queries: issue 62),
//!
//! ```text
//! L = L_ret + lambda * L_attn (+ CE + beta * KL with a SentenceVAE) (+ mu * L_node)
//! ```
//!
//! with L_ret InfoNCE between query embeddings and their positive units (in-batch negatives, plus the
//! step's documents' other units as hard negatives), and L_attn on the aggregated attention M of each
//! document's gold merge pairs (the mean over the step's documents). With `doc_loss` (issue 62) a
//! document term ranks each query's document among the step's by the mean of their unit embeddings. L_node (`node_loss` = mu > 0; arbor's addition, `arbor_losses::node_contrastive`)
//! ranks the nodes of the document's tree, built from the current M and held fixed, against each other:
//! a query's smallest node covering its gold above that node's ancestors and the siblings on its path.
//! The encoder is frozen (units and queries arrive as pooled vectors), or fine-tuned: it
//! is then part of the model and runs over the document's units and the batch's queries every step.
//! With `grad_cache` and the encoder fine-tuned, a step is taken by GradCache ([`crate::grad_cache`]): the
//! encoder's inputs embedded a chunk at a time without a graph, the SLLM and every term over those vectors,
//! each chunk replayed with their gradient (the plain step's gradient; whole documents bounded by time, not
//! memory). With `schedule.devices`, on burn-train's Learner, data parallel ([`crate::parallel::sproutrag`]); else
//! on the trainer skeleton ([`crate::skeleton`]): AdamW groups with separate learning rates for the
//! aggregation weights, the fine-tuned encoder and the new modules, linear warmup and decay, gradient
//! clipping, checkpoints and resume with the same batches, a NaN stop naming the step and the term.

pub(crate) mod step;

use std::path::Path;

use arbor_datasets::Corpus;
use arbor_models::aggregator::AggregationInit;
use arbor_models::bert::Bert;
use arbor_models::host::{Host, init_on_host};
use arbor_models::sproutrag::{SproutRagModel, SproutRagModelConfig};
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};

use crate::config::TrainConfig;
use crate::data::{EpochBatches, Part, TrainDoc, describe};
use crate::encoder::{FineTune, StepEncoder, Vectors};
use crate::grad_cache;
use crate::negatives::{self, Mined, StepMined, step_mined};
use crate::objective::start;
use crate::parallel;
use crate::skeleton::{self, Group, SelectBy, Step, Task, Terms};
pub use step::evaluate;
use step::{held_out_figures, losses};

/// Trains SproutRAG's modules; returns the trained model (without autodiff) for indexing. `encoder`: the
/// pretrained encoder when it is fine-tuned (`training.freeze_encoder: false`), else `None`.
#[allow(clippy::too_many_arguments)]
pub fn train<B: AutodiffBackend>(
    config: &TrainConfig,
    model_config: &SproutRagModelConfig,
    aggregation: AggregationInit,
    dims: (usize, usize),
    encoder: Option<FineTune<B>>,
    corpus: &Corpus,
    train: &[TrainDoc],
    holdout: &[TrainDoc],
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<SproutRagModel<B::InnerBackend>> {
    anyhow::ensure!(
        config.negatives.corpus().is_none(),
        "SproutRAG's joint step reads whole documents (`docs_per_step` of them): its negatives are their units, with `Mined` also \
         units mined from the other documents; batches of queries across documents (`Corpus`) are the dense trainer's"
    );
    let device = start::<B>(config, train)?;
    anyhow::ensure!(
        encoder.is_some() != config.freeze_encoder,
        "training.freeze_encoder is {} but the encoder was {}given",
        config.freeze_encoder,
        if encoder.is_some() { "" } else { "not " }
    );
    let fine_tune = encoder.is_some();
    let step_encoder = encoder.as_ref().map(|tune| StepEncoder::of(tune, config)).transpose()?;
    let model = initial(config, model_config, aggregation, dims, encoder.map(|tune| tune.bert), &device)?;
    let groups = groups::<B>(config, fine_tune);
    let max_tokens = model_config.vae.map_or(0, |v| v.max_tokens);
    if config.schedule.devices.is_some() {
        let data = parallel::Data { config, corpus, train, holdout, run_dir };
        return parallel::sproutrag::fit(model, step_encoder, &data, max_tokens, 1, progress);
    }
    let mined = negatives::prepare(&config.negatives, corpus, train, config.schedule.seed, run_dir)?.map(|(m, how)| (m, how.per_query));
    let batches = EpochBatches::with_docs(train, config.batch_size, config.docs_per_step, config.schedule.seed);
    let schedule = config.schedule_over(batches.per_epoch());
    let mut task = Joint { config, corpus, train, holdout, max_tokens, batches, mined, encoder: step_encoder };
    Ok(skeleton::train(&mut task, model, &groups, &schedule, run_dir, progress)?.valid())
}

/// The model of a training run in `run_dir` that has finished, if it has (nothing is recomputed), on any
/// backend (the inference one to serve it, the autodiff one to train further). `encoder`: the pretrained
/// encoder when it was fine-tuned (its trained weights are then read back).
pub fn finished<B: Backend>(
    model_config: &SproutRagModelConfig,
    aggregation: AggregationInit,
    dims: (usize, usize),
    encoder: Option<Bert<B>>,
    run_dir: &Path,
) -> anyhow::Result<Option<SproutRagModel<B>>> {
    skeleton::finished(init(model_config, aggregation, dims, encoder, &Default::default()), run_dir)
}

/// The model a training starts from: the new modules' initial weights drawn on the host by the seed
/// (arbor_models::host: the same on every backend), with the pretrained `encoder` inside when it is
/// fine-tuned.
pub(crate) fn initial<B: Backend>(
    config: &TrainConfig,
    model_config: &SproutRagModelConfig,
    aggregation: AggregationInit,
    (d_input, vocab): (usize, usize),
    encoder: Option<Bert<B>>,
    device: &B::Device,
) -> anyhow::Result<SproutRagModel<B>> {
    let fresh = model_config.init::<B>(d_input, vocab, AggregationInit::Uniform, device);
    let model = init_on_host(config.schedule.seed, |cpu| model_config.init::<Host>(d_input, vocab, aggregation, cpu), fresh, device)?;
    Ok(match encoder {
        Some(bert) => model.with_encoder(bert),
        None => model,
    })
}

/// The optimizer groups of the joint step: the aggregation weights' and (`fine_tune`) the encoder's
/// gradients are taken first, each at its own rate; the new modules get the rest, at `lr_new`.
pub(crate) fn groups<B: AutodiffBackend>(config: &TrainConfig, fine_tune: bool) -> Vec<Group<B, SproutRagModel<B>>> {
    let mut groups = vec![Group {
        name: "aggregation",
        lr: config.lr_aggregation,
        params: |g, m: &SproutRagModel<B>| GradientsParams::from_module(g, &m.aggregator),
    }];
    if fine_tune {
        groups.push(Group {
            name: "encoder",
            lr: config.lr_encoder,
            params: |g, m| GradientsParams::from_module(g, m.encoder.as_ref().expect("fine-tuned")),
        });
    }
    groups.push(Group { name: "new", lr: config.lr_new, params: |g, m| GradientsParams::from_module(g, m) });
    groups
}

fn init<B: Backend>(
    model_config: &SproutRagModelConfig,
    aggregation: AggregationInit,
    (d_input, vocab): (usize, usize),
    encoder: Option<Bert<B>>,
    device: &B::Device,
) -> SproutRagModel<B> {
    let model = model_config.init(d_input, vocab, aggregation, device);
    match encoder {
        Some(encoder) => model.with_encoder(encoder),
        None => model,
    }
}

/// The joint objective over one document's batch of queries per step.
struct Joint<'a> {
    config: &'a TrainConfig,
    corpus: &'a Corpus,
    train: &'a [TrainDoc],
    holdout: &'a [TrainDoc],
    max_tokens: usize,
    batches: EpochBatches,
    /// With `negatives: Mined`, every query's mined negatives and how many it brings to a step.
    mined: Option<(Mined, usize)>,
    /// How a step runs the fine-tuned encoder (`None`: frozen, its vectors given).
    encoder: Option<StepEncoder>,
}

impl Joint<'_> {
    /// Step `step`: its documents' batches and mined negatives drawn, then `terms` given the step encoder and
    /// the step's losses as a function of the vectors they read, which it runs over the step's vectors (the
    /// plain step) or hands to GradCache.
    fn run<B: AutodiffBackend>(
        &mut self,
        model: &SproutRagModel<B>,
        step: usize,
        terms: impl FnOnce(Option<&StepEncoder>, &dyn Fn(&Vectors<B>) -> Terms<B>) -> Terms<B>,
    ) -> Step<B> {
        let (epoch, batches) = (step / self.batches.per_epoch(), self.batches.at(self.train, step));
        let mined = step_mined(self.mined.as_ref(), batches, self.config.schedule.seed, epoch, self.config.hard_negatives);
        let step_mined = mined.as_ref().map(|units| StepMined { docs: self.train, units });
        let parts: Vec<Part<'_>> = batches.iter().map(|b| b.part(self.train)).collect();
        let (config, max_tokens) = (self.config, self.max_tokens);
        let terms = terms(self.encoder.as_ref(), &|vectors| losses(model, vectors, config, &parts, step_mined, max_tokens));
        let scalars = mined.as_ref().map(|m| ("negatives/mined", m.len() as f64)).into_iter().collect();
        Step { terms, scalars, context: describe(batches) }
    }
}

impl<B: AutodiffBackend> Task<B> for Joint<'_> {
    type Model = SproutRagModel<B>;

    fn steps_per_epoch(&self) -> usize {
        self.batches.per_epoch()
    }

    fn step(&mut self, model: &SproutRagModel<B>, step: usize) -> anyhow::Result<Step<B>> {
        Ok(self.run(model, step, |encoder, losses| losses(&Vectors::step(encoder, model.encoder.as_ref()))))
    }

    /// GradCache over the step's encoder inputs (every unit of its window in each of its documents, its
    /// queries, its mined negatives), the SLLM and its losses run over their cached vectors.
    fn cached_step(&mut self, model: &SproutRagModel<B>, step: usize, add: &mut dyn FnMut(B::Gradients)) -> Option<anyhow::Result<Step<B>>> {
        let (chunk, bert) = (self.config.grad_cache?, model.encoder.as_ref()?);
        Some(Ok(self.run(model, step, |encoder, losses| {
            grad_cache::cached_step(chunk, encoder.expect("a fine-tuned model has its step encoder"), bert, losses, add)
        })))
    }

    fn monitor(&self, model: &SproutRagModel<B>) -> Vec<(&'static str, f64)> {
        vec![("head_weight_entropy", crate::head_weights::entropy(&model.aggregator))]
    }

    fn evaluate(&self, model: &SproutRagModel<B::InnerBackend>) -> Vec<(&'static str, f64)> {
        held_out_figures(self.corpus, self.holdout, self.config.validation, self.encoder.as_ref(), model)
    }

    fn select_by(&self) -> Option<SelectBy> {
        Some(SelectBy { figure: "eval/ie_mean", higher_is_better: true })
    }
}

#[cfg(test)]
mod tests {
    use super::step::node_loss;
    use super::*;
    use crate::data::TrainQuery;
    use arbor_datasets::{DocSpan, Span};
    use arbor_models::DefaultBackend;
    use burn::backend::Autodiff;
    use burn::tensor::{Tensor, TensorData};

    type A = Autodiff<DefaultBackend>;

    fn span(i: usize) -> DocSpan {
        DocSpan { doc: 0, span: Span::new(10 * i, 10 * i + 10) }
    }

    fn t(v: &[f32], rows: usize) -> Tensor<A, 2> {
        Tensor::from_data(TensorData::new(v.to_vec(), [rows, v.len() / rows]), &Default::default())
    }

    /// Four units; M joins 0-1 first, then 2-3, then the pairs. A query with gold in units 0 and 1 has
    /// node 4 = (0, 1) as positive and the root and node 5 = (2, 3) as negatives.
    #[test]
    fn node_loss_ranks_the_node_covering_the_gold_against_its_ancestors_and_their_siblings() {
        let units = t(&[1.0, 0.0, 0.8, 0.6, 0.0, 1.0, -0.6, 0.8], 4).require_grad();
        #[rustfmt::skip]
        let m = t(&[
            1.0, 0.9, 0.1, 0.1,
            0.9, 1.0, 0.2, 0.1,
            0.1, 0.2, 1.0, 0.8,
            0.1, 0.1, 0.8, 1.0,
        ], 4);
        let gold = vec![DocSpan { doc: 0, span: Span::new(2, 18) }];
        let query = TrainQuery { text: String::new(), pooled: vec![], ids: vec![], positive: 0, gold };
        let doc =
            TrainDoc { units: (0..4).map(span).collect(), pooled: vec![], ids: vec![], pairs: vec![], tokens: vec![], queries: vec![query.clone()] };
        let eq = t(&[1.0, 0.2], 1);
        let tau = 0.1;
        let loss = node_loss(units.clone(), m, &doc, &[&query], eq, tau).expect("a positive below the root");
        let got: f32 = loss.clone().into_scalar();
        // By hand: node 4 = (0.9, 0.3), node 5 = (-0.3, 0.9), root 6 = (0.3, 0.6).
        let cos = |x: [f32; 2]| (x[0] + 0.2 * x[1]) / (x[0].hypot(x[1]) * 1f32.hypot(0.2));
        let l: Vec<f32> = [[0.9, 0.3], [-0.3, 0.9], [0.3, 0.6]].iter().map(|&x| cos(x) / tau as f32).collect();
        let want = -(l[0] - l.iter().map(|x| x.exp()).sum::<f32>().ln());
        assert!((got - want).abs() < 1e-4, "{got} vs {want}");
        // The gradient reaches every unit, since every unit is under a candidate node.
        let g = units.grad(&loss.backward()).unwrap().into_data().to_vec::<f32>().unwrap();
        assert!(g.chunks(2).all(|row| row.iter().any(|x| x.abs() > 1e-6)), "{g:?}");
        // Gold on both sides of the root: nothing to rank.
        let wide = TrainQuery { gold: vec![DocSpan { doc: 0, span: Span::new(0, 40) }], ..query };
        let m = t(&[1.0, 0.9, 0.1, 0.1, 0.9, 1.0, 0.2, 0.1, 0.1, 0.2, 1.0, 0.8, 0.1, 0.1, 0.8, 1.0], 4);
        assert!(node_loss(units, m, &doc, &[&wide], t(&[1.0, 0.2], 1), tau).is_none());
    }

    /// The joint loop adds L_node only when its weight is set, scaled by it.
    #[test]
    fn the_joint_loss_has_a_node_term_when_node_loss_is_set() {
        use arbor_models::sllm::SllmConfig;
        let config = SproutRagModelConfig { sllm: SllmConfig { layers: 1, heads: 2, d_model: 16, d_ff: 32 }, vae: None };
        let model = config.init::<A>(2, 0, AggregationInit::Uniform, &Default::default());
        let pooled = vec![vec![1.0, 0.0], vec![0.8, 0.6], vec![0.0, 1.0], vec![-0.6, 0.8]];
        let query = TrainQuery { text: String::new(), pooled: vec![1.0, 0.2], ids: vec![], positive: 0, gold: vec![span(0)] };
        let doc = TrainDoc { units: (0..4).map(span).collect(), pooled, ids: vec![], pairs: vec![(0, 1)], tokens: vec![], queries: vec![query] };
        let names = |c: &TrainConfig| {
            losses(&model, &Vectors::Given, c, &[Part { doc: &doc, queries: &[0] }], None, 0).into_iter().map(|(n, _)| n).collect::<Vec<_>>()
        };
        assert_eq!(names(&TrainConfig::default()), ["loss/ret", "loss/attn_weighted"]);
        let with = TrainConfig { node_loss: 0.5, ..TrainConfig::default() };
        let terms = losses(&model, &Vectors::Given, &with, &[Part { doc: &doc, queries: &[0] }], None, 0);
        assert_eq!(terms.iter().map(|t| t.0).collect::<Vec<_>>(), ["loss/ret", "loss/attn_weighted", "loss/node_weighted"]);
        let value: f32 = terms[2].1.clone().into_scalar();
        assert!(value.is_finite() && value > 0.0, "{value}");
        // A negative weight is refused.
        assert!(TrainConfig { node_loss: -1.0, ..TrainConfig::default() }.check().is_err());
    }

    /// With `negatives: Mined`, the step's mined units of another document enter L_ret as the SLLM embeds
    /// them in their own document (run whole, so a mined row depends on its neighbours), not alone; the
    /// loss then exceeds the in-document one.
    #[test]
    fn mined_negatives_are_embedded_in_their_own_document() {
        use crate::objective::retrieval_loss;
        use arbor_models::sllm::SllmConfig;
        let config = SproutRagModelConfig { sllm: SllmConfig { layers: 1, heads: 2, d_model: 16, d_ff: 32 }, vae: None };
        let mut model = config.init::<A>(2, 0, AggregationInit::Uniform, &Default::default());
        // The SLLM's output starts at zero (e_i = x_i): a random one makes each embedding contextual.
        model.sllm.output = burn::nn::LinearConfig::new(16, 2).init(&Default::default());
        let doc = |d: usize, pooled: Vec<Vec<f32>>| {
            let query =
                TrainQuery { text: String::new(), pooled: vec![1.0, 0.2], ids: vec![], positive: 0, gold: vec![DocSpan { doc: d, ..span(0) }] };
            let units = (0..4).map(|i| DocSpan { doc: d, ..span(i) }).collect();
            TrainDoc { units, pooled, ids: vec![], pairs: vec![(0, 1)], tokens: vec![], queries: vec![query] }
        };
        let docs = [
            doc(0, vec![vec![1.0, 0.0], vec![0.8, 0.6], vec![0.0, 1.0], vec![-0.6, 0.8]]),
            doc(1, vec![vec![0.9, 0.1], vec![0.1, 0.9], vec![0.7, 0.7], vec![-1.0, 0.0]]),
        ];
        let training = TrainConfig::default();
        let ret = |mined: Option<StepMined<'_>>| -> f32 {
            let terms = losses(&model, &Vectors::Given, &training, &[Part { doc: &docs[0], queries: &[0] }], mined, 0);
            terms.into_iter().find(|t| t.0 == "loss/ret").unwrap().1.into_scalar()
        };
        let units = [(1, 0), (1, 2)];
        let with = ret(Some(StepMined { docs: &docs, units: &units }));
        let device = Default::default();
        let (out, eq) = (
            model.document(Vectors::<A>::Given.all_units(&docs[0], &device), false),
            model.queries(Vectors::<A>::Given.queries(&[&docs[0].queries[0]], &device)),
        );
        let by = |rows: Tensor<A, 2>| retrieval_loss(out.embeddings.clone(), eq.clone(), &[0], Some(rows), &[], &training).into_scalar();
        let whole =
            model.document(Vectors::<A>::Given.all_units(&docs[1], &device), false).embeddings.select(0, crate::encoder::index(&[0, 2], &device));
        assert!((with - by(whole.clone())).abs() < 1e-6, "the rows of the other document run whole");
        let alone = model.document(t(&[0.9, 0.1, 0.7, 0.7], 2), false).embeddings;
        let gap = (whole - alone).abs().max().into_scalar();
        assert!(gap > 1e-4, "in context, not the mined units alone: {gap}");
        assert!(with > ret(None), "more negatives, a larger loss: {with} vs {}", ret(None));
    }

    /// Two documents whose SLLM starts at e_i = x_i (its output layer zero), unit k of document d
    /// holding query k's gold; `contextual` draws the output layer, so each embedding depends on its
    /// document.
    fn two_documents(contextual: bool) -> (SproutRagModel<A>, [TrainDoc; 2]) {
        use arbor_models::sllm::SllmConfig;
        let config = SproutRagModelConfig { sllm: SllmConfig { layers: 1, heads: 2, d_model: 16, d_ff: 32 }, vae: None };
        let mut model = config.init::<A>(2, 0, AggregationInit::Uniform, &Default::default());
        if contextual {
            model.sllm.output = burn::nn::LinearConfig::new(16, 2).init(&Default::default());
        }
        let doc = |d: usize, pooled: Vec<Vec<f32>>, queries: Vec<(Vec<f32>, usize)>| {
            let units: Vec<DocSpan> = (0..pooled.len()).map(|i| DocSpan { doc: d, ..span(i) }).collect();
            let queries = queries
                .into_iter()
                .map(|(v, k)| TrainQuery { text: String::new(), pooled: v, ids: vec![], positive: k, gold: vec![units[k]] })
                .collect();
            TrainDoc { units, pooled, ids: vec![], pairs: vec![(0, 1)], tokens: vec![], queries }
        };
        let docs = [
            doc(0, vec![vec![1.0, 0.0], vec![0.8, 0.6], vec![0.0, 1.0]], vec![(vec![1.0, 0.2], 0), (vec![0.1, 1.0], 2)]),
            doc(1, vec![vec![0.6, 0.8], vec![-1.0, 0.0]], vec![(vec![0.5, 0.9], 0)]),
        ];
        (model, docs)
    }

    /// Issue 62: a step of one document is the paper's step exactly, loss and gradients: the same
    /// numbers, bit for bit, as its terms composed by hand from the model, L_ret and L_attn.
    #[test]
    fn one_document_a_step_is_the_papers_step_exactly() {
        use crate::objective::{retrieval_loss, step_false_negatives};
        use arbor_losses::attention_structure;
        let (model, docs) = two_documents(true);
        let training = TrainConfig { lambda: 0.3, ..TrainConfig::default() };
        let part = Part { doc: &docs[0], queries: &[1, 0] };
        let step: Tensor<A, 1> = losses(&model, &Vectors::Given, &training, &[part], None, 0).into_iter().map(|t| t.1).reduce(|a, b| a + b).unwrap();
        let device = Default::default();
        let out = model.document(Vectors::<A>::Given.all_units(&docs[0], &device), false);
        let batch = [&docs[0].queries[1], &docs[0].queries[0]];
        let eq = model.queries(Vectors::<A>::Given.queries(&batch, &device));
        let rows = crate::data::StepRows::of(&[part]);
        assert_eq!(rows.positives, [2, 0]);
        let by_hand = retrieval_loss(out.embeddings, eq, &[2, 0], None, &step_false_negatives(&rows, &[], &training), &training)
            + attention_structure(out.m, &docs[0].pairs, training.eps) * training.lambda;
        let bits = |t: &Tensor<A, 1>| t.clone().into_scalar().to_bits();
        assert_eq!(bits(&step), bits(&by_hand), "the loss");
        let (g1, g2) = (step.backward(), by_hand.backward());
        let grad = |g: &<A as AutodiffBackend>::Gradients| -> Vec<u32> {
            let w = model.sllm.output.weight.grad(g).unwrap().into_data().to_vec::<f32>().unwrap();
            let a = model.aggregator.alpha.grad(g).unwrap().into_data().to_vec::<f32>().unwrap();
            w.into_iter().chain(a).map(f32::to_bits).collect()
        };
        assert_eq!(grad(&g1), grad(&g2), "the gradients");
    }

    /// Issue 62: with two documents a step, L_ret is InfoNCE whose denominators hold the other document's
    /// units, by hand (e_i = x_i, so each logit is a cosine over tau); L_attn is the mean of each
    /// document's; the document term ranks each query's document by the mean of its units.
    #[test]
    fn two_documents_a_step_put_the_other_documents_units_in_the_denominator() {
        let (model, docs) = two_documents(false);
        let tau = 0.5f32;
        let training = TrainConfig { tau: tau.into(), docs_per_step: 2, doc_loss: 0.7, ..TrainConfig::default() };
        let parts = [Part { doc: &docs[0], queries: &[0] }, Part { doc: &docs[1], queries: &[0] }];
        let terms = losses(&model, &Vectors::Given, &training, &parts, None, 0);
        assert_eq!(terms.iter().map(|t| t.0).collect::<Vec<_>>(), ["loss/ret", "loss/attn_weighted", "loss/doc_weighted"]);
        let value = |name: &str| -> f32 { terms.iter().find(|t| t.0 == name).unwrap().1.clone().into_scalar() };
        let cos = |a: &[f32], b: &[f32]| (a[0] * b[0] + a[1] * b[1]) / (a[0].hypot(a[1]) * b[0].hypot(b[1]));
        let nll = |q: &[f32], target: &[f32], all: &[&[f32]]| -(cos(q, target) / tau - all.iter().map(|c| (cos(q, c) / tau).exp()).sum::<f32>().ln());
        // The step's units: document 0's three, then document 1's two; every one is a candidate.
        let units: Vec<&[f32]> = docs.iter().flat_map(|d| d.pooled.iter().map(Vec::as_slice)).collect();
        let (q0, q1) = (&docs[0].queries[0].pooled, &docs[1].queries[0].pooled);
        let want = (nll(q0, units[0], &units) + nll(q1, units[3], &units)) / 2.0;
        assert!((value("loss/ret") - want).abs() < 1e-4, "{} vs {want}", value("loss/ret"));
        let alone = |d: usize| -> f32 {
            let one = TrainConfig { tau: tau.into(), ..TrainConfig::default() };
            let terms = losses(&model, &Vectors::Given, &one, &[parts[d]], None, 0);
            terms.into_iter().find(|t| t.0 == "loss/attn_weighted").unwrap().1.into_scalar()
        };
        assert!((value("loss/attn_weighted") - (alone(0) + alone(1)) / 2.0).abs() < 1e-6);
        let mean = |d: &TrainDoc| {
            let n = d.pooled.len() as f32;
            [d.pooled.iter().map(|v| v[0]).sum::<f32>() / n, d.pooled.iter().map(|v| v[1]).sum::<f32>() / n]
        };
        let (m0, m1) = (mean(&docs[0]), mean(&docs[1]));
        let doc_term = (nll(q0, &m0, &[&m0, &m1]) + nll(q1, &m1, &[&m0, &m1])) / 2.0;
        assert!((value("loss/doc_weighted") - 0.7 * doc_term).abs() < 1e-4, "{} vs {}", value("loss/doc_weighted"), 0.7 * doc_term);
        // One document a step: its own units only, so a smaller denominator and a smaller loss.
        let one = TrainConfig { tau: tau.into(), ..TrainConfig::default() };
        let own: f32 = losses(&model, &Vectors::Given, &one, &parts[..1], None, 0)[0].1.clone().into_scalar();
        assert!((own - nll(q0, units[0], &units[..3])).abs() < 1e-4 && own < value("loss/ret") * 2.0);
    }

    /// Issue 86: with two documents a step, a question whose gold also covers another unit of its document
    /// (a false negative) has that unit left out of its L_ret denominator at the trainer's call site
    /// (`losses`): the loss is InfoNCE by hand over the step's other four units, not five.
    #[test]
    fn a_joint_step_leaves_a_querys_false_negative_out_of_its_denominator() {
        let (model, mut docs) = two_documents(false);
        docs[0].queries[0].gold.push(DocSpan { doc: 0, ..span(1) });
        let tau = 0.5f32;
        let training = TrainConfig { tau: tau.into(), docs_per_step: 2, ..TrainConfig::default() };
        let parts = [Part { doc: &docs[0], queries: &[0] }, Part { doc: &docs[1], queries: &[0] }];
        let ret: f32 = losses(&model, &Vectors::Given, &training, &parts, None, 0)[0].1.clone().into_scalar();
        let cos = |a: &[f32], b: &[f32]| (a[0] * b[0] + a[1] * b[1]) / (a[0].hypot(a[1]) * b[0].hypot(b[1]));
        let nll = |q: &[f32], target: &[f32], all: &[&[f32]]| -(cos(q, target) / tau - all.iter().map(|c| (cos(q, c) / tau).exp()).sum::<f32>().ln());
        let units: Vec<&[f32]> = docs.iter().flat_map(|d| d.pooled.iter().map(Vec::as_slice)).collect();
        let (q0, q1) = (&docs[0].queries[0].pooled, &docs[1].queries[0].pooled);
        let without: Vec<&[f32]> = units.iter().enumerate().filter(|&(u, _)| u != 1).map(|(_, v)| *v).collect();
        let want = (nll(q0, units[0], &without) + nll(q1, units[3], &units)) / 2.0;
        let pooled = (nll(q0, units[0], &units) + nll(q1, units[3], &units)) / 2.0;
        assert!((ret - want).abs() < 1e-4, "{ret} vs {want}");
        assert!((pooled - want).abs() > 1e-2, "the false negative moves the loss: {pooled} against {want}");
    }

    /// Issue 86: a question whose gold also lies in the step's other document is not pushed away from it by
    /// the document term (that document leaves its denominator), at the trainer's call site (`losses`).
    #[test]
    fn the_document_term_leaves_out_a_document_holding_the_querys_gold() {
        let (model, mut docs) = two_documents(false);
        docs[0].queries[0].gold.push(DocSpan { doc: 1, ..span(0) });
        let tau = 0.5f32;
        let training = TrainConfig { tau: tau.into(), docs_per_step: 2, doc_loss: 0.7, ..TrainConfig::default() };
        let parts = [Part { doc: &docs[0], queries: &[0] }, Part { doc: &docs[1], queries: &[0] }];
        assert_eq!(step::document_targets(&parts), (vec![0, 1], vec![(0, 1)]));
        let terms = losses(&model, &Vectors::Given, &training, &parts, None, 0);
        let doc_term: f32 = terms.iter().find(|t| t.0 == "loss/doc_weighted").unwrap().1.clone().into_scalar();
        let cos = |a: &[f32], b: &[f32]| (a[0] * b[0] + a[1] * b[1]) / (a[0].hypot(a[1]) * b[0].hypot(b[1]));
        let mean = |d: &TrainDoc| {
            let n = d.pooled.len() as f32;
            [d.pooled.iter().map(|v| v[0]).sum::<f32>() / n, d.pooled.iter().map(|v| v[1]).sum::<f32>() / n]
        };
        let (m0, m1) = (mean(&docs[0]), mean(&docs[1]));
        let q1 = &docs[1].queries[0].pooled;
        // q0 against its own document alone: 0; q1 against both.
        let nll_q1 = -(cos(q1, &m1) / tau - ((cos(q1, &m0) / tau).exp() + (cos(q1, &m1) / tau).exp()).ln());
        assert!((doc_term - 0.7 * nll_q1 / 2.0).abs() < 1e-4, "{doc_term} vs {}", 0.7 * nll_q1 / 2.0);
    }

    /// GradCache over SproutRAG's joint step (issue 65): two documents a step (the lease and a copy of it,
    /// whose units are the same inputs, embedded once), a window of three units of five, L_ret, L_attn,
    /// L_node and the document term, chunks of two; every term and every parameter's gradient (the
    /// encoder's, the SLLM's, the aggregation weights') is the plain step's to float rounding.
    #[test]
    fn a_cached_joint_step_has_the_plain_steps_gradient() {
        use arbor_models::sllm::SllmConfig;
        use burn::module::{Module, ModuleVisitor, Param};
        use burn::optim::GradientsParams;
        let crate::fixtures::Lease { corpus, docs, tune, ids, dim } = crate::fixtures::lease();
        let docs = vec![docs[0].clone(), docs[0].clone()];
        let three = ids[0].len() + ids[1].len() + ids.iter().skip(2).map(Vec::len).max().unwrap();
        let config = TrainConfig {
            batch_size: 2,
            docs_per_step: 2,
            doc_loss: 0.5,
            node_loss: 0.1,
            step_tokens: Some(three),
            freeze_encoder: false,
            grad_cache: Some(2),
            ..TrainConfig::default()
        };
        config.check().unwrap();
        let model_config = SproutRagModelConfig { sllm: SllmConfig { layers: 1, heads: 2, d_model: 16, d_ff: 32 }, vae: None };
        let model = model_config.init::<A>(dim, 0, AggregationInit::Uniform, &Default::default()).with_encoder(tune.bert.clone());
        let batches = EpochBatches::with_docs(&docs, config.batch_size, config.docs_per_step, config.schedule.seed);
        let encoder = Some(StepEncoder::of(&tune, &config).unwrap());
        let mut task = Joint { config: &config, corpus: &corpus, train: &docs, holdout: &[], max_tokens: 0, batches, mined: None, encoder };
        let ((plain, plain_grads), (cached, cached_grads), pieces) = grad_cache::plain_and_cached::<A, _>(&mut task, &model);
        let names = |s: &Step<A>| s.terms.iter().map(|(n, _)| *n).collect::<Vec<_>>();
        assert_eq!(names(&plain), ["loss/ret", "loss/attn_weighted", "loss/node_weighted", "loss/doc_weighted"]);
        assert_eq!(names(&cached), names(&plain));
        for ((name, p), (_, c)) in plain.terms.iter().zip(&cached.terms) {
            let (p, c): (f32, f32) = (p.clone().into_scalar(), c.clone().into_scalar());
            assert!((p - c).abs() < 1e-5 * p.abs().max(1.0), "{name}: plain {p}, cached {c}");
        }
        // The loss's own parameters, then the window's five distinct inputs (three units of the lease, its
        // copy's the same, two questions) in chunks of two: the units', then the questions'.
        assert_eq!(pieces, 1 + 2 + 1, "one piece for the SLLM, one a chunk");
        // Each parameter's largest difference and largest gradient; gradients that are zero analytically
        // (the key biases': softmax ignores them) are rounding noise, held to the model's largest gradient.
        struct Compare<'a> {
            plain: &'a GradientsParams,
            cached: &'a GradientsParams,
            checked: Vec<(String, f32, f32)>,
            bad: Vec<String>,
        }
        impl ModuleVisitor<A> for Compare<'_> {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<A, D>>) {
                let get = |g: &GradientsParams| g.get::<DefaultBackend, D>(param.id).map(|t| t.into_data().to_vec::<f32>().unwrap());
                match (get(self.plain), get(self.cached)) {
                    (Some(p), Some(c)) => {
                        let scale = p.iter().fold(0f32, |m, x| m.max(x.abs()));
                        let diff = p.iter().zip(&c).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
                        self.checked.push((format!("{:?}", param.id), diff, scale));
                    }
                    (None, None) => {}
                    (p, c) => self.bad.push(format!("{:?}: a gradient in one step only ({} plain, {} cached)", param.id, p.is_some(), c.is_some())),
                }
            }
        }
        let mut compare = Compare { plain: &plain_grads, cached: &cached_grads, checked: Vec::new(), bad: Vec::new() };
        model.visit(&mut compare);
        let largest = compare.checked.iter().fold(0f32, |m, c| m.max(c.2));
        compare.bad.extend(
            compare.checked.iter().filter(|(_, diff, scale)| *diff > 1e-4 * scale.max(1e-4 * largest)).map(|(id, d, s)| format!("{id}: {d} of {s}")),
        );
        assert!(compare.bad.is_empty(), "{:?} (the largest gradient {largest})", compare.bad);
        assert!(compare.checked.len() > 100 && largest > 0.0, "{} parameters compared", compare.checked.len());
    }

    /// A real joint step with the pretrained encoder: a window holding the whole document is the
    /// whole-document step exactly; a window of three units still gives the SLLM all five (the others by
    /// their frozen vectors, the same function at the pretrained weights), so the loss is the same to
    /// rounding, and the encoder's gradient comes through the window alone.
    #[test]
    fn a_windowed_joint_step_reads_the_whole_document() {
        use arbor_models::sllm::SllmConfig;
        let crate::fixtures::Lease { docs, tune, ids, dim, .. } = crate::fixtures::lease();
        let config = SproutRagModelConfig { sllm: SllmConfig { layers: 1, heads: 2, d_model: 16, d_ff: 32 }, vae: None };
        let model = config.init::<A>(dim, 0, AggregationInit::Uniform, &Default::default()).with_encoder(tune.bert.clone());
        let loss = |step_tokens: Option<usize>| -> (f32, Tensor<A, 1>) {
            let training = TrainConfig { step_tokens, ..TrainConfig::default() };
            let encoder = StepEncoder::new(&tune, None).unwrap();
            let terms = losses(
                &model,
                &Vectors::step(Some(&encoder), model.encoder.as_ref()),
                &training,
                &[Part { doc: &docs[0], queries: &[0, 1] }],
                None,
                0,
            );
            let total = terms.into_iter().map(|(_, t)| t).reduce(|a, b| a + b).unwrap();
            (total.clone().into_scalar(), total)
        };
        let all: usize = ids.iter().map(Vec::len).sum();
        let (whole, _) = loss(None);
        assert_eq!(loss(Some(all)).0, whole, "a window holding every token is the whole document");
        let three = ids[0].len() + ids[1].len() + ids.iter().skip(2).map(Vec::len).max().unwrap();
        let (windowed, total) = loss(Some(three));
        assert!((windowed - whole).abs() < 1e-4 * whole.abs().max(1.0), "window {windowed} against whole {whole}");
        let grads = total.backward();
        let encoder = model.encoder.as_ref().unwrap();
        assert!(encoder.layers[0].query.weight.grad(&grads).is_some(), "the window's units carry the encoder's gradient");
    }
}
