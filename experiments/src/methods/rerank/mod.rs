//! The reranking stage of SproutRAG (Section 3) over any method: the leaves under the method's top
//! candidates are scored again by a cross-encoder (arbor_models::reranker, trained here on the corpus's
//! training split by arbor_trainers::reranker) and handed on best first. Over SproutRAG's beam it is the
//! paper's pipeline (the paper's reranker is Qwen3-Reranker-4B, which cannot be obtained here: this one is
//! all-MiniLM-L6-v2's trunk with a score head, fine-tuned on our data); over Flat it is the fair control.
//!
//! The pool: the base's items in rank order, each contributing its leaf units (a node's in text order),
//! until `candidates` leaves. When the pool holds fewer than k leaves, the other leaves in scope follow
//! it in text order (the metric contract).

pub(crate) mod training_examples;

use std::collections::HashSet;

use arbor_datasets::Corpus;
use arbor_eval::index::{Chunks, Item, QueryInput};
use arbor_eval::retrievers::flat::dot;
use arbor_eval::Retriever;
use arbor_models::bert::load_bert;
use arbor_models::reranker::Scorer;
use arbor_models::{DefaultBackend, SentenceEncoder};
use arbor_trainers::reranker::RerankerTraining;
use burn::backend::Autodiff;
use serde::{Deserialize, Serialize};

use super::dense::DenseConfig;
use super::{Built, Context, MethodSpec, Served, Serving, Trains};
use anyhow::Context as _;
use std::path::Path;
use arbor_trainers::config::Removed;
use crate::cache::{Artefact, key};
use super::Method;
use crate::progress::with_bar;
use crate::trained::{Located, TrainedModel};
use training_examples::{examples, pair_format};
use arbor_trainers::config::TrainConfig;

/// `Rerank((over: Flat, candidates: 30, training: (...)))` in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankConfig {
    /// The method whose candidates are reranked (Flat when not given).
    #[serde(default = "flat")]
    pub over: Box<Method>,
    /// Leaves in the pool the cross-encoder scores per query.
    #[serde(default = "candidates")]
    pub candidates: usize,
    #[serde(default)]
    pub training: RerankerTraining,
    /// Replaced by the matched control built from the reranker's own training
    /// ([`MethodSpec::dense_control`]): kept only to say so when an old experiment file sets it.
    #[serde(default, deserialize_with = "arbor_trainers::config::removed", skip_serializing)]
    pub control: Option<Removed>,
}

fn candidates() -> usize {
    30
}

fn flat() -> Box<Method> {
    Box::new(Method::Flat)
}

impl Default for RerankConfig {
    /// `Rerank(())`: over Flat, 30 leaves, the default training.
    fn default() -> Self {
        RerankConfig { over: flat(), candidates: candidates(), training: RerankerTraining::default(), control: None }
    }
}

impl RerankConfig {
    fn control_training(&self) -> TrainConfig {
        control_training(&self.training)
    }
}

/// The reranker's training as the controls read it: its split, sample, schedule and trunk rate, the
/// encoder fine-tuned.
pub(crate) fn control_training(t: &RerankerTraining) -> TrainConfig {
        TrainConfig {
            split: t.split.clone(),
            schedule: t.schedule.clone(),
            freeze_encoder: false,
            lr_encoder: t.lr_encoder,
            train_queries: t.train_queries,
            ..TrainConfig::default()
        }
}

impl MethodSpec for RerankConfig {
    fn label(&self) -> String {
        format!("{} + reranker (top {} leaves)", self.over.label(), self.candidates)
    }

    fn kind(&self) -> String {
        format!("{} + reranker", self.over.kind())
    }

    /// The reranker learns from the training queries.
    fn trains(&self) -> Trains {
        Trains::Queries(self.control_training())
    }

    /// The bi-encoder trained on the reranker's own examples, batches, groups, schedule, trunk rate and
    /// trainable blocks (arbor_trainers::rerank_control).
    fn dense_control(&self) -> Option<DenseConfig> {
        Some(DenseConfig { training: self.control_training(), reranker: Some(self.training.clone()), summary: None, steps_of: None })
    }

    /// Its own training split and whatever the reranked method reads.
    fn reads_splits(&self) -> Vec<(&'static str, String)> {
        [vec![("training.split", self.training.split.clone())], self.over.spec().reads_splits()].concat()
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.candidates > 0, "Rerank: candidates must be at least 1");
        anyhow::ensure!(!matches!(*self.over, Method::Rerank(_)), "Rerank: a reranked method cannot be reranked again");
        anyhow::ensure!(
            self.control.is_none(),
            "Rerank: control is gone: the matched control is now the bi-encoder trained on the reranker's own batches, groups, \
             schedule, rate and trainable blocks: delete it"
        );
        self.training.check().map_err(anyhow::Error::msg)?;
        self.over.spec().check()
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let base = self.over.spec().build(ctx)?;
        let (scorer, record) = reranker(ctx, &self.label(), &self.training)?;
        let retriever = Reranked {
            name: self.label(),
            base: base.retriever,
            scorer,
            encoder: ctx.encoder,
            corpus: ctx.corpus,
            units: &ctx.leaves.units,
            unit_vectors: ctx.unit_vectors()?,
            candidates: self.candidates,
            batch_size: ctx.encoder_config.batch_size,
        };
        let details = Some(format!("cross-encoder: {}{}", record.dir.display(), base.details.map_or(String::new(), |d| format!("; {d}"))));
        let mut models = base.models;
        models.push(record);
        Ok(Built { retriever: Box::new(retriever), queries: base.queries, models, details })
    }

    /// Over an index built `--from` a run's reranked row (its reranker recorded, the units embedded by the
    /// pretrained encoder, as the row's first stage and prior read them): this row's base served by the
    /// index, its candidates' leaves scored by that reranker. `Rerank(())` (the bare name) is the run's row.
    fn serve<'a>(&self, at: &Serving<'a>) -> anyhow::Result<Served<'a>> {
        let index = at.index;
        let Some((Method::Rerank(row), dir)) = at.row else {
            anyhow::bail!("this index holds no reranker: build one with `arbor index DIR --into INDEX --from RUN --row NAME`, NAME a reranked row of the run")
        };
        let asked = if *self == RerankConfig::default() { row } else { self };
        anyhow::ensure!(
            asked.training == row.training,
            "this index's reranker was trained for {}, not for {}: only `over` and `candidates` may differ",
            row.label(),
            asked.label()
        );
        let base = asked.over.spec().serve(at)?;
        let scorer = finished_scorer(at.encoder, &row.training, dir)?.with_context(|| format!("{} holds no finished reranker", dir.display()))?;
        let retriever = Reranked {
            name: asked.label(),
            base: base.retriever,
            scorer,
            encoder: at.encoder,
            corpus: &index.corpus,
            units: &index.units,
            unit_vectors: &index.vectors,
            candidates: asked.candidates,
            batch_size: at.batch,
        };
        Ok(Served { retriever: Box::new(retriever), embeds_queries: base.embeds_queries })
    }
}

/// The reranker of `training` in its training folder `dir`, finished, as a scorer.
fn finished_scorer(encoder: &SentenceEncoder<DefaultBackend>, training: &RerankerTraining, dir: &Path) -> anyhow::Result<Option<Scorer<DefaultBackend>>> {
    let format = pair_format(encoder, training);
    // A finished reranker's weights replace the trunk's: the encoder's loaded trunk gives the shape.
    let model = arbor_trainers::reranker::finished::<DefaultBackend>(encoder.bert.clone(), dir)?;
    Ok(model.map(|model| Scorer::new(&model, encoder, format.max_query, format.max_len)))
}

/// The reranker: a finished training in the cache (or the earlier run's), else trained now.
pub(crate) fn reranker(ctx: &Context, label: &str, training: &RerankerTraining) -> anyhow::Result<(Scorer<DefaultBackend>, TrainedModel)> {
    let encoder = ctx.encoder;
    let format = pair_format(encoder, training);
    // The training examples are the cache key's content; under `evaluate --from` they are not made.
    let mut made = None;
    let Located { dir, may_train } = ctx.training.locate(label, training, &ctx.keys.encoder, || {
        let (train, holdout) = made.insert(examples(ctx, training)?);
        // "gamma learned": the version of the trainer (its first form kept gamma fixed).
        ctx.cache.dir(Artefact::Reranker, &key(&(&ctx.keys.encoder, "reranker", "gamma learned", training, format.max_len, train, holdout)))
    })?;
    let record =
        TrainedModel { method: label.into(), settings: serde_json::to_value(training)?, encoder: ctx.keys.encoder.clone(), dir: dir.clone(), ..Default::default() };
    if let Some(scorer) = finished_scorer(encoder, training, &dir)? {
        eprintln!("using the reranker trained in {}", dir.display());
        return Ok((scorer, record));
    }
    let model = match made.filter(|_| may_train) {
        None => anyhow::bail!("{} holds no finished training for method {label:?}", dir.display()),
        Some((train, holdout)) => {
            eprintln!(
                "training the reranker on {} queries of split {:?} ({} held back), {} epochs",
                train.len(),
                training.split,
                holdout.len(),
                training.schedule.epochs
            );
            let bert_file = arbor_models::hub::resolve(&ctx.encoder_config.model)?.path.join("model.safetensors");
            let bert = load_bert::<Autodiff<DefaultBackend>>(&encoder.config, &bert_file, &Default::default())?;
            with_bar("training the reranker", |progress| {
                arbor_trainers::reranker::train::<Autodiff<DefaultBackend>>(training, bert, format, &train, &holdout, &dir, progress)
            })?
        }
    };
    Ok((Scorer::new(&model, encoder, format.max_query, format.max_len), record))
}

/// A base method's retriever with its candidates' leaves reranked.
struct Reranked<'a> {
    name: String,
    base: Box<dyn Retriever + 'a>,
    scorer: Scorer<DefaultBackend>,
    encoder: &'a SentenceEncoder<DefaultBackend>,
    corpus: &'a Corpus,
    units: &'a Chunks,
    /// The encoder's vectors of the units: the first-stage cosine the reranker adds to its score.
    unit_vectors: &'a [Vec<f32>],
    candidates: usize,
    batch_size: usize,
}

impl Retriever for Reranked<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn leaves(&self) -> &Chunks {
        self.units
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let mut pool = Vec::new();
        let mut seen = HashSet::new();
        for item in self.base.retrieve(query, self.candidates) {
            pool.extend(self.units.overlapping(&item.spans).into_iter().filter(|&u| seen.insert(u)));
            if pool.len() >= self.candidates {
                break;
            }
        }
        pool.truncate(self.candidates);
        // Each unit as the encoder reads it (`units.context`'s header, then the piece), as the reranker trained.
        let inputs: Vec<_> = pool.iter().map(|&u| self.units.input(self.corpus, u)).collect();
        let texts: Vec<&str> = inputs.iter().map(|t| t.as_ref()).collect();
        let query_vector = &self.encoder.embed_queries(&[query.text.as_str()], 1, &mut |_| {})[0];
        let priors: Vec<f32> = pool.iter().map(|&u| dot(query_vector, &self.unit_vectors[u])).collect();
        let scores = self.scorer.score(self.encoder, &query.text, &texts, &priors, self.batch_size);
        let mut ranked: Vec<(usize, f32)> = pool.into_iter().zip(scores).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(k);
        if ranked.len() < k {
            let floor = ranked.last().map_or(0.0, |r| r.1) - 1.0;
            let in_pool: HashSet<usize> = ranked.iter().map(|r| r.0).collect();
            let rest: Vec<usize> = self.units.candidates(query).filter(|u| !in_pool.contains(u)).take(k - ranked.len()).collect();
            ranked.extend(rest.into_iter().map(|u| (u, floor)));
        }
        ranked.into_iter().map(|(u, score)| Item::unit(self.units.spans[u], score)).collect()
    }
}
