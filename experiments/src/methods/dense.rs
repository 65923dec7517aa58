//! Dense retrieval trained on the training queries by InfoNCE alone (arbor_trainers::dense): the matched
//! control of a trained method. It reads exactly the documents, queries, positive units, batches, epochs
//! and seed SproutRAG's joint training reads ([`super::training`]), holds out the same validation split,
//! and keeps the epoch with the best validation IE; what it lacks is the method: no SLLM, no tree, no
//! L_attn. With the encoder fine-tuned (as the method fine-tunes it) units and queries are the fine-tuned
//! encoder's pooled vectors; over a frozen encoder, an identity-initialised linear map is what trains.
//! The reranker's control (`reranker`) trains the encoder on the reranker's own examples instead:
//! its batches, groups, schedule, rate and trainable blocks (arbor_trainers::rerank_control).
//! [`super::controls`] adds it after every method trained on the queries ([`super::MethodSpec::dense_control`]).

use arbor_models::pooling::Role;
use std::borrow::Cow;

use arbor_eval::retrievers::flat::FlatDense;
use arbor_models::DefaultBackend;
use arbor_models::dense::DenseModel;
use arbor_trainers::config::TrainConfig;
use arbor_trainers::reranker::RerankerTraining;
use burn::backend::Autodiff;
use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::document_summary::DocumentSummary;
use super::training::{Needs, data_key, headed_key, in_bf16, on_a_sample, on_devices, pretrained, queries_by_doc, train_docs, training_queries};
use super::{Built, Context, MethodSpec, QueryVectors};
use crate::cache::{Artefact, key};
use crate::progress::with_bar;
use crate::trained::{Located, TrainedModel};
use crate::validation::VALIDATION;

/// `Dense((training: (epochs: 2, freeze_encoder: false, ...)))` in an experiment file. Of the training
/// settings it reads the split, the schedule, the batch size, the learning rates (`lr_encoder` fine-tuned,
/// `lr_new` for the map over a frozen encoder), tau, the hard negatives and where negatives come from
/// (`negatives: Corpus((mine: Bm25, per_query: 1, top: 30))`: batches across documents, negatives mined
/// from the whole training split, arbor_trainers::negatives).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenseConfig {
    pub training: TrainConfig,
    /// Train as the reranker with these settings trains (its examples, batches, groups, schedule, rate and
    /// trainable blocks), a bi-encoder in the cross-encoder's place: the reranker's matched control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reranker: Option<RerankerTraining>,
    /// Every unit read after its document's summary in training, on validation and at evaluation (SAC's
    /// inputs): the matched control of a method over those inputs (SproutRAG with `summary`), and the
    /// same fine-tune as a trained SAC with these settings (they share the training).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<DocumentSummary>,
    /// Run exactly as many optimizer steps as the row with this label took in the same run (it is built
    /// first): the matched control of a method whose steps only its training knows (SmartChunk's planner,
    /// SFT over its own pseudo-labelled queries). `None`: the schedule's epochs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_of: Option<String>,
}

impl DenseConfig {
    /// The control matched to a method trained with `training`: the same queries, batches, epochs, seed,
    /// schedule and encoder regime; the method's own terms (lambda, L_node, the VAE, merge pairs, the
    /// aggregation rate) left at their defaults, which the control never reads.
    pub fn matching(training: &TrainConfig) -> Self {
        let t = training;
        DenseConfig {
            training: TrainConfig {
                split: t.split.clone(),
                holdout_docs: None,
                schedule: t.schedule.clone(),
                batch_size: t.batch_size,
                docs_per_step: t.docs_per_step,
                lr_new: t.lr_new,
                freeze_encoder: t.freeze_encoder,
                lr_encoder: t.lr_encoder,
                tau: t.tau,
                hard_negatives: t.hard_negatives,
                negatives: t.negatives.clone(),
                validation: t.validation,
                grad_cache: t.grad_cache,
                step_tokens: t.step_tokens,
                frozen_layers: t.frozen_layers,
                train_queries: t.train_queries,
                min_steps: t.min_steps,
                // A bf16 row's control trains in bf16 too: the precision is the row's, not the control's.
                precision: t.precision,
                ..TrainConfig::default()
            },
            reranker: None,
            summary: None,
            steps_of: None,
        }
    }

    /// These settings with the steps `steps_of` took in this run ([`Context::steps_run`]).
    fn with_steps_run(&self, ctx: &Context) -> anyhow::Result<std::borrow::Cow<'_, DenseConfig>> {
        let Some(of) = &self.steps_of else { return Ok(Cow::Borrowed(self)) };
        let steps = ctx.steps_run(of).ok_or_else(|| {
            anyhow::anyhow!(
                "{}: the row {of:?} whose steps it runs recorded none in this run (a control is built after the rows it controls; \
                 a planner trained before arbor recorded its steps must be trained again)",
                self.label()
            )
        })?;
        let mut config = self.clone();
        config.training.schedule.steps = Some(steps);
        Ok(Cow::Owned(config))
    }
}

impl MethodSpec for DenseConfig {
    fn label(&self) -> String {
        let t = &self.training;
        if let Some(r) = &self.reranker {
            let sample = r.train_queries.map_or(String::new(), |n| format!(", {n} queries"));
            return format!(
                "Dense, encoder fine-tuned at {} on the reranker's groups (top {} blocks, {} epochs{sample}, tau {})",
                r.lr_encoder, r.trainable_layers, r.schedule.epochs, t.tau
            );
        }
        let mut negatives = t.negatives.describe(t.batch_size).map_or(String::new(), |n| format!(", {n}"));
        if let Some(cached) = t.describe_grad_cache() {
            negatives += &format!(", {cached}");
        }
        if let Some(docs) = t.describe_docs_per_step() {
            negatives += &format!(", {docs}");
        }
        if let Some(sample) = on_a_sample(t) {
            negatives += &format!(", {sample}");
        }
        if !t.validation.is_documents() {
            negatives += ", the epoch chosen over every validation document";
        }
        if let Some(summary) = &self.summary {
            negatives += &format!(", {}", summary.describe());
        }
        match t.freeze_encoder {
            false => {
                let mut window = negatives;
                window += &t.step_tokens.map_or(String::new(), |n| format!(", {n}-token windows"));
                match t.frozen_layers {
                    Some(0) => window += ", embeddings frozen",
                    Some(k) => window += &format!(", embeddings and blocks 0-{} frozen", k - 1),
                    None => {}
                }
                for procedure in in_bf16(t).into_iter().chain(on_devices(t)) {
                    window += &format!(", {procedure}");
                }
                format!("Dense, encoder fine-tuned at {} by InfoNCE alone ({} epochs{window})", t.lr_encoder, t.schedule.epochs)
            }
            true => {
                let devices = on_devices(t).map_or(String::new(), |d| format!(", {d}"));
                // How long: as many steps as another row took, or epochs (with a floor of steps).
                let length = match &self.steps_of {
                    Some(of) => format!("as many steps as {of:?} took, {} queries a step{negatives}", t.batch_size),
                    None => {
                        let floor = t.min_steps.map_or(String::new(), |m| format!(", at least {m} steps, {} queries a step", t.batch_size));
                        format!("{} epochs{negatives}{floor}", t.schedule.epochs)
                    }
                };
                format!("Dense, a linear map over the frozen encoder trained at {} by InfoNCE alone ({length}{devices})", t.lr_new)
            }
        }
    }

    fn kind(&self) -> String {
        match self.training.freeze_encoder {
            false => "Dense, fine-tuned (control)".into(),
            true => "Dense, trained map (control)".into(),
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        self.training.check().map_err(anyhow::Error::msg)?;
        if let Some(summary) = &self.summary {
            summary.check().map_err(|e| anyhow::anyhow!("Dense summary: {e}"))?;
            anyhow::ensure!(self.reranker.is_none(), "Dense: summary and reranker cannot be combined (the reranker's examples carry no document summary)");
        }
        self.reranker.as_ref().map_or(Ok(()), |r| r.check().map_err(anyhow::Error::msg))
    }

    fn trains(&self) -> super::Trains {
        super::Trains::Queries(self.training.clone())
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let this = self.with_steps_run(ctx)?;
        match &self.summary {
            None => build_trained(ctx, self.label(), &*this, &this, None),
            Some(summary) => build_over_summaries(ctx, self.label(), &*this, &this, summary),
        }
    }
}

/// Dense retrieval over the leaf units through the encoder fine-tuned (or the map trained) as `config`
/// says, recorded under `label` and `settings` (what `evaluate --from` matches): the control's build, and
/// with `headers` (each document's header, by document, written before every unit in training and at
/// evaluation) SAC's trained build ([`super::summary_chunks`]).
pub(crate) fn build_trained<'a>(
    ctx: &'a Context<'a>,
    label: String,
    settings: &impl Serialize,
    config: &DenseConfig,
    headers: Option<&[String]>,
) -> anyhow::Result<Built<'a>> {
    let (model, dir) = train(ctx, &label, settings, config, headers)?;
    let record = TrainedModel { method: label.clone(), settings: serde_json::to_value(settings)?, encoder: ctx.keys.encoder.clone(), dir: dir.clone(), ..Default::default() };
    flat_through(ctx, label, &model, &dir, headers, record)
}

/// [`build_trained`] with every unit read after its document's `summary` (the headers of the evaluated,
/// training and validation documents): a dense row with `summary`, and a trained SAC.
pub(crate) fn build_over_summaries<'a>(
    ctx: &'a Context<'a>,
    label: String,
    settings: &impl Serialize,
    config: &DenseConfig,
    summary: &DocumentSummary,
) -> anyhow::Result<Built<'a>> {
    let (headers, described) = summary.training_headers(ctx, &config.training)?;
    let mut built = build_trained(ctx, label, settings, config, Some(&headers))?;
    built.details = Some(format!("document summaries of {} tokens before every unit in training and evaluation, {described}", summary.summary_tokens));
    Ok(built)
}

/// Dense retrieval over the leaf units through `model` (trained in `dir`, recorded as `record`): its
/// fine-tuned encoder's vectors of the units (after `headers`) and of the queries, or the frozen encoder's
/// through its map.
pub(crate) fn flat_through<'a>(
    ctx: &'a Context<'a>,
    label: String,
    model: &DenseModel<DefaultBackend>,
    dir: &std::path::Path,
    headers: Option<&[String]>,
    record: TrainedModel,
) -> anyhow::Result<Built<'a>> {
    let (units, queries) = match &model.encoder {
        Some(bert) => {
            let kernel = ctx.encoder.kernel_for(bert);
            let texts: Vec<&str> = ctx.queries.iter().map(|q| q.input.text.as_str()).collect();
            let queries = ctx.encoder.embed_as(&kernel, Role::Query, &texts, ctx.encoder_config.batch_size, &mut |_| {});
            (ctx.tuned_unit_vectors(dir, &kernel, headers)?, queries)
        }
        None => {
            (through(model, &ctx.leaf_vectors(headers)?), through(model, ctx.query_vectors()?))
        }
    };
    let retriever = FlatDense { name: label, chunks: Cow::Borrowed(&ctx.leaves.units), embeddings: Cow::Owned(units) };
    Ok(Built { retriever: Box::new(retriever), queries: QueryVectors::Own(queries), models: vec![record], details: None })
}

/// The trained control: read back (from the cache, or the earlier run under `evaluate --from`), else
/// trained in `train-<key>` (key: the encoder, the settings, the training and validation queries, and the
/// headers those documents were read with).
fn train(
    ctx: &Context,
    label: &str,
    settings: &impl Serialize,
    config: &DenseConfig,
    headers: Option<&[String]>,
) -> anyhow::Result<(DenseModel<DefaultBackend>, std::path::PathBuf)> {
    if let Some(reranker) = &config.reranker {
        return train_as_reranker(ctx, label, config, reranker);
    }
    let training = &config.training;
    let by_doc = training_queries(ctx.corpus, training);
    let held = queries_by_doc(ctx.corpus, VALIDATION);
    let Located { dir, may_train } = ctx.training.locate(label, settings, &ctx.keys.encoder, || {
        let read = (&ctx.keys.encoder, training, data_key(ctx, &by_doc), data_key(ctx, &held));
        ctx.cache.dir(Artefact::Dense, &headed_key(&read, headers, &by_doc, &held))
    })?;
    let dim = ctx.encoder.dim();
    // A fine-tuned control reads its encoder weights over the pretrained one's shape.
    let shape = (!training.freeze_encoder).then(|| ctx.encoder.bert.clone());
    if let Some(model) = arbor_trainers::dense::finished(dim, shape, &dir)? {
        eprintln!("using the dense model trained in {}", dir.display());
        return Ok((model, dir));
    }
    anyhow::ensure!(may_train, "{} holds no finished training for method {label:?}", dir.display());
    anyhow::ensure!(!by_doc.is_empty(), "no query with evidence in training split {:?}", training.split);
    let needs = Needs { ids: !training.freeze_encoder, vae_tokens: false, merge_pairs: None, headers };
    let docs = train_docs(ctx, &by_doc, &training.split, needs)?;
    let holdout = train_docs(ctx, &held, VALIDATION, needs)?;
    let bert = if training.freeze_encoder { None } else { Some(pretrained(ctx)?) };
    let what = if headers.is_some() { "training the encoder over the document headers" } else { "training the dense control" };
    let model = with_bar(what, |progress| {
        arbor_trainers::dense::train::<Autodiff<DefaultBackend>>(training, dim, bert, ctx.corpus, &docs, &holdout, &dir, progress)
    })?;
    Ok((model, dir))
}

/// The reranker's control: read back, else trained on the reranker's examples (key: the encoder, the
/// settings, the examples) in `train-<key>`.
fn train_as_reranker(
    ctx: &Context,
    label: &str,
    config: &DenseConfig,
    reranker: &RerankerTraining,
) -> anyhow::Result<(DenseModel<DefaultBackend>, std::path::PathBuf)> {
    let format = super::rerank::training_examples::pair_format(ctx.encoder, reranker);
    let mut made = None;
    let Located { dir, may_train } = ctx.training.locate(label, config, &ctx.keys.encoder, || {
        let (train, holdout) = made.insert(super::rerank::training_examples::examples(ctx, reranker)?);
        ctx.cache.dir(Artefact::Dense, &key(&(&ctx.keys.encoder, "reranker's control", config, format.max_len, train, holdout)))
    })?;
    if let Some(model) = arbor_trainers::dense::finished(ctx.encoder.dim(), Some(ctx.encoder.bert.clone()), &dir)? {
        eprintln!("using the reranker's control trained in {}", dir.display());
        return Ok((model, dir));
    }
    let Some((train, holdout)) = made.filter(|_| may_train) else { anyhow::bail!("{} holds no finished training for method {label:?}", dir.display()) };
    let tune = pretrained(ctx)?;
    let model = with_bar("training the reranker's control", |progress| {
        arbor_trainers::rerank_control::train::<Autodiff<DefaultBackend>>(reranker, arbor_trainers::rerank_control::Objective::Listwise, config.training.tau, tune, format, &train, &holdout, &dir, progress)
    })?;
    Ok((model, dir))
}

/// Vectors through the control's map (empty rows, of units outside the run's documents, stay empty).
pub(crate) fn through(model: &DenseModel<DefaultBackend>, rows: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let filled: Vec<usize> = (0..rows.len()).filter(|&r| !rows[r].is_empty()).collect();
    let mut out = vec![Vec::new(); rows.len()];
    let Some(&first) = filled.first() else { return out };
    let dim = rows[first].len();
    for chunk in filled.chunks(4096) {
        let flat: Vec<f32> = chunk.iter().flat_map(|&r| rows[r].iter().copied()).collect();
        let x = Tensor::<DefaultBackend, 2>::from_data(TensorData::new(flat, [chunk.len(), dim]), &Default::default());
        let y = model.embed(x).into_data().to_vec::<f32>().expect("f32");
        for (i, &r) in chunk.iter().enumerate() {
            out[r] = y[i * dim..(i + 1) * dim].to_vec();
        }
    }
    out
}
