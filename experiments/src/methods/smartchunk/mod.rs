//! SmartChunk (Zhang et al., arXiv:2602.22225): a multi-level chunk hierarchy per document (arbor_eval::structures::levels), the embeddings
//! of its higher-level chunks from the Chunk Compression Encoder (or, for the paper's ablations, by
//! encoding their raw text or their summary), and retrieval within the levels a plan gives
//! (arbor_eval::retrievers::level_retrieval).
//!
//! | `embed` | the paper's row |
//! |---|---|
//! | `Compress(..)` | SmartChunk (the trained compressor over the chunk's leaf-unit vectors) |
//! | `DirectlyEncode` | "w/o E (directly encode)": the encoder over the chunk's text, truncated where it stops reading |
//! | `Summarize` | "w/o E (summarize)": the encoder over the chunk's summary (extractive here) |
//!
//! `plan: AllLevels` is the paper's "w/o P" row; `Levels(lo, hi)` a fixed range; `Planner(..)` the trained
//! planner's plan per query (its pseudo-labels, training and Table 5 scores: `plan.rs`). Level-0 chunks are the
//! run's leaf units with their encoder vectors in every row.

pub mod plan;
mod train;

use std::borrow::Cow;

use arbor_datasets::headings::derive_sections;
use arbor_datasets::{Document, Section, Span};
use arbor_eval::QueryInput;
use arbor_eval::index::Chunks;
use arbor_eval::retrievers::level_retrieval::LevelRetriever;
use arbor_eval::structures::levels::{Levels, structure_keys};
use arbor_models::DefaultBackend;
use arbor_models::compressor::{Compressor, CompressorConfig};
use arbor_trainers::compressor::CompressorTraining;
use serde::{Deserialize, Serialize};

use super::{Built, Context, MethodSpec, QueryVectors, Trains};
use arbor_trainers::config::TrainConfig;
use arbor_trainers::negatives::{CorpusNegatives, Negatives};
use arbor_trainers::schedule::Schedule;
pub use plan::PlannerSettings;

use crate::cache::key;
use crate::summaries::SummariserConfig;

/// `SmartChunk((levels: Tokens([128, 256, 512, 1024]), embed: Compress(()), plan: AllLevels))`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmartChunkConfig {
    pub levels: LevelScheme,
    pub embed: ChunkEmbedding,
    pub plan: PlanConfig,
    /// The summaries' length in tokens (the "summarize" row, and the compressor's targets).
    pub summary_tokens: usize,
    pub summariser: SummariserConfig,
}

impl Default for SmartChunkConfig {
    fn default() -> Self {
        SmartChunkConfig {
            levels: LevelScheme::default(),
            embed: ChunkEmbedding::Compress(CompressSettings::default()),
            plan: PlanConfig::AllLevels,
            summary_tokens: 128,
            summariser: SummariserConfig::Extractive,
        }
    }
}

/// How a document's levels above its units are formed (arbor_eval::structures::levels).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LevelScheme {
    /// Paragraph, subsection, section, document (sections given, or derived from heading lines).
    Structure,
    /// Chunks of at most these many tokens (ascending), then the document.
    Tokens(Vec<usize>),
}

impl Default for LevelScheme {
    fn default() -> Self {
        LevelScheme::Tokens(vec![128, 256, 512, 1024])
    }
}

/// Where the embeddings of chunks above the units come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ChunkEmbedding {
    Compress(CompressSettings),
    DirectlyEncode,
    Summarize,
}

/// The compressor and its training (on the chunks of the `split` documents, targets: their summaries'
/// embeddings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressSettings {
    pub model: CompressorConfig,
    pub training: CompressorTraining,
    pub split: String,
    /// Training chunks with more leaf units than this are left out (the document level of a long
    /// document: its attention would not fit a batch); every chunk is compressed at indexing.
    pub max_parts: usize,
}

impl Default for CompressSettings {
    fn default() -> Self {
        CompressSettings { model: CompressorConfig::default(), training: CompressorTraining::default(), split: "train".into(), max_parts: 128 }
    }
}

/// The levels retrieval searches for a query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PlanConfig {
    /// Every level ("w/o P").
    AllLevels,
    /// Levels `lo..=hi` for every query.
    Levels(usize, usize),
    /// The trained planner's plan for each query.
    Planner(PlannerSettings),
}

impl SmartChunkConfig {
    /// The number of levels of the scheme, the same in every document.
    fn level_count(&self) -> usize {
        match &self.levels {
            LevelScheme::Structure => 5,
            LevelScheme::Tokens(sizes) => sizes.len() + 2,
        }
    }

    /// The name of level `level` of the scheme (0: the units), as the report's plans name it.
    fn level_name(&self, level: usize) -> String {
        let top = self.level_count() - 1;
        match (&self.levels, level) {
            (_, 0) => "unit".into(),
            (_, l) if l == top => "document".into(),
            (LevelScheme::Structure, l) => ["paragraph", "subsection", "section"][l - 1].into(),
            (LevelScheme::Tokens(sizes), l) => format!("{}-token", sizes[l - 1]),
        }
    }
}

impl MethodSpec for SmartChunkConfig {
    fn label(&self) -> String {
        let levels = match &self.levels {
            LevelScheme::Structure => "structure levels".to_owned(),
            LevelScheme::Tokens(sizes) => format!("token levels {sizes:?}"),
        };
        let embed = match &self.embed {
            ChunkEmbedding::Compress(c) if *c == CompressSettings::default() => "compressor".to_owned(),
            // Two compressors differ in the row name; the settings are in the run's config.ron.
            ChunkEmbedding::Compress(c) => format!("compressor {}", &key(c)[..6]),
            ChunkEmbedding::DirectlyEncode => "w/o E, directly encode".to_owned(),
            ChunkEmbedding::Summarize => "w/o E, summarize".to_owned(),
        };
        let plan = match &self.plan {
            PlanConfig::AllLevels => "w/o P, all levels".to_owned(),
            PlanConfig::Levels(lo, hi) => format!("levels {lo}-{hi}"),
            PlanConfig::Planner(p) if *p == PlannerSettings::default() => "planner".to_owned(),
            PlanConfig::Planner(p) => format!("planner {:?} {}", p.training.strategy, &key(p)[..6]),
        };
        format!("SmartChunk ({levels}, {embed}, {plan})")
    }

    fn kind(&self) -> String {
        "SmartChunk".into()
    }

    fn check(&self) -> anyhow::Result<()> {
        self.summariser.check()?;
        if let LevelScheme::Tokens(sizes) = &self.levels {
            anyhow::ensure!(!sizes.is_empty() && sizes[0] > 0, "SmartChunk: levels Tokens needs at least one size, all positive");
            anyhow::ensure!(sizes.windows(2).all(|w| w[0] < w[1]), "SmartChunk: level sizes {sizes:?} must ascend");
        }
        if let PlanConfig::Levels(lo, hi) = self.plan {
            let n = self.level_count();
            anyhow::ensure!(lo <= hi && hi < n, "SmartChunk: plan Levels({lo}, {hi}) must satisfy lo <= hi < {n} (the scheme's levels)");
        }
        anyhow::ensure!(self.summary_tokens > 0, "SmartChunk: summary_tokens must be at least 1");
        let gone = |field: &str| {
            format!(
                "{field} is gone: SmartChunk's trainers hold out the validation split (`data: (..., validation: Some((fraction: 0.2, seed: 0)))`, the default): delete it"
            )
        };
        if let ChunkEmbedding::Compress(c) = &self.embed {
            anyhow::ensure!(c.training.holdout_fraction.is_none(), gone("embed: Compress((training: (holdout_fraction)))"));
        }
        if let PlanConfig::Planner(p) = &self.plan {
            anyhow::ensure!(p.holdout_fraction.is_none(), gone("plan: Planner((holdout_fraction))"));
        }
        Ok(())
    }

    /// The compressor learns from the training documents' chunks and their summaries; the planner from the
    /// training queries. Its dense control (a map over the frozen encoder) reads the planner's own
    /// training: its queries, queries per step, rate, seed and schedule, and as many phases' epochs and
    /// `min_steps` floors as the strategy runs (SFT then GRPO: two). The planner's batches are drawn across
    /// the whole split, so the control's are too (`negatives: Corpus`, as many steps an epoch), each query
    /// with one negative mined by BM25 from the training documents: the field's recipe.
    fn trains(&self) -> Trains {
        match (&self.plan, &self.embed) {
            (PlanConfig::Planner(p), _) => {
                let t = &p.training;
                let phases = t.phases();
                Trains::Queries(TrainConfig {
                    split: p.split.clone(),
                    schedule: Schedule { epochs: t.schedule.epochs * phases, ..t.schedule.clone() },
                    batch_size: t.batch_size,
                    lr_new: t.lr,
                    min_steps: Some(t.min_steps * phases),
                    negatives: Negatives::Corpus(CorpusNegatives::default()),
                    ..TrainConfig::default()
                })
            }
            (_, ChunkEmbedding::Compress(c)) => Trains::Documents(c.split.clone()),
            _ => Trains::No,
        }
    }

    /// The dense control as every query-trained method's ([`super::dense::DenseConfig::matching`]),
    /// running exactly the steps the planner took over its own examples (SFT over the pseudo-labelled
    /// queries, GRPO over every one), which only its training knows.
    fn dense_control(&self) -> Option<super::dense::DenseConfig> {
        let Trains::Queries(training) = self.trains() else { return None };
        Some(super::dense::DenseConfig { steps_of: Some(self.label()), ..super::dense::DenseConfig::matching(&training) })
    }

    /// The planner's split and the compressor's, both.
    fn reads_splits(&self) -> Vec<(&'static str, String)> {
        let mut splits = Vec::new();
        if let PlanConfig::Planner(p) = &self.plan {
            splits.push(("plan: Planner((split))", p.split.clone()));
        }
        if let ChunkEmbedding::Compress(c) = &self.embed {
            splits.push(("embed: Compress((split))", c.split.clone()));
        }
        splits
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let docs = &ctx.corpus.documents;
        let levels: Vec<Option<Levels>> = (0..docs.len()).map(|d| ctx.docs.contains(&d).then(|| hierarchy(ctx, &self.levels, d))).collect();
        let mut models = Vec::new();
        let compressor = match &self.embed {
            ChunkEmbedding::Compress(settings) => {
                let (compressor, record) = train::compressor(ctx, self, settings)?;
                models.push(record.clone());
                Some((compressor, record))
            }
            _ => None,
        };
        let embeddings = embed_levels(ctx, self, &levels, ctx.docs, ctx.unit_vectors()?, compressor.as_ref().map(|(c, _)| c))?;
        let top = self.level_count() - 1;
        let mut retriever = LevelRetriever {
            name: self.label(),
            levels,
            embeddings,
            leaves: Cow::Borrowed(&ctx.leaves.units),
            plan: Box::new(move |_: &QueryInput| (0, top)),
        };
        let mut details = String::new();
        match &self.plan {
            PlanConfig::AllLevels => {}
            &PlanConfig::Levels(lo, hi) => retriever.plan = Box::new(move |_: &QueryInput| (lo, hi)),
            PlanConfig::Planner(settings) => {
                let planned = plan::planned(ctx, self, settings, &retriever, compressor.as_ref().map(|(c, r)| (c, r)))?;
                models.push(planned.record);
                ctx.record_steps(&self.label(), planned.steps);
                details = format!("; planner ({}): {}", planned.describe, planned.scores);
                let by_query = planned.plans;
                retriever.plan = Box::new(move |q: &QueryInput| by_query.get(&(q.text.clone(), q.docs.clone())).copied().unwrap_or((0, top)));
            }
        }
        let details = describe(&retriever, ctx) + &details;
        Ok(Built { retriever: Box::new(retriever), queries: QueryVectors::Encoder, models, details: Some(details) })
    }
}

/// Each document's chunk embeddings under `config.embed` (its units' vectors, then the chunks above in
/// hierarchy order) for `docs` (others empty); `unit_vectors` by global unit index.
pub(crate) fn embed_levels(
    ctx: &Context,
    config: &SmartChunkConfig,
    levels: &[Option<Levels>],
    docs: &[usize],
    unit_vectors: &[Vec<f32>],
    compressor: Option<&Compressor<DefaultBackend>>,
) -> anyhow::Result<Vec<Vec<Vec<f32>>>> {
    let uppers = upper_chunks(levels);
    let upper_vectors = match (&config.embed, compressor) {
        (ChunkEmbedding::DirectlyEncode, _) => {
            let text = |c: usize| uppers.text(ctx.corpus, c).to_owned();
            ctx.chunk_vectors_of(&("smartchunk direct", &config.levels), &uppers, docs, &text)?
        }
        (ChunkEmbedding::Summarize, _) => {
            let summariser = config.summariser.open(ctx.corpus, ctx.leaves, unit_vectors, &ctx.cache.root)?;
            train::summary_vectors(ctx, &*summariser, &uppers, docs, config.summary_tokens, &config.levels)?
        }
        (ChunkEmbedding::Compress(settings), Some(compressor)) => {
            train::compressed(ctx, compressor, levels, &uppers, unit_vectors, settings.training.batch_size)
        }
        (ChunkEmbedding::Compress(_), None) => anyhow::bail!("SmartChunk: the compressor was not trained"),
    };
    Ok(levels
        .iter()
        .enumerate()
        .map(|(d, l)| match l {
            None => Vec::new(),
            Some(_) => {
                let units = ctx.leaves.units.by_doc[d].clone();
                units.map(|u| unit_vectors[u].clone()).chain(uppers.by_doc[d].clone().map(|c| upper_vectors[c].clone())).collect()
            }
        })
        .collect())
}

/// Document `d`'s hierarchy under `scheme`, over the run's leaf units.
pub(crate) fn hierarchy(ctx: &Context, scheme: &LevelScheme, d: usize) -> Levels {
    let seg = &ctx.leaves.segments[d];
    let tokens = &ctx.leaves.tokens.0[d];
    let leaves: Vec<(Span, usize)> = seg.units.iter().map(|u| (u.span, tokens.count(u.span))).collect();
    match scheme {
        LevelScheme::Tokens(sizes) => Levels::by_tokens(&leaves, sizes),
        LevelScheme::Structure => {
            let sections: Vec<Span> = sections(&ctx.corpus.documents[d]).iter().map(|s| s.span()).collect();
            let with_paragraphs: Vec<(Span, usize)> = seg.units.iter().map(|u| (u.span, u.paragraph)).collect();
            Levels::by_structure(&leaves, &structure_keys(&with_paragraphs, &sections))
        }
    }
}

/// A document's sections: given, or derived from its heading lines.
pub(crate) fn sections(doc: &Document) -> Vec<Section> {
    match doc.sections.is_empty() {
        false => doc.sections.clone(),
        true => derive_sections(&doc.text),
    }
}

/// The chunks above level 0 of every hierarchy, as chunks per document (in the hierarchy's chunk order,
/// so chunk `c` of document `d`'s hierarchy is `uppers.by_doc[d].start + c - units of d`).
fn upper_chunks(levels: &[Option<Levels>]) -> Chunks {
    Chunks::from_docs(levels.iter().map(|l| match l {
        None => Vec::new(),
        Some(l) => l.chunks[l.by_level[0].end..].iter().map(|c| c.span).collect(),
    }))
}

/// The report's sentence: chunks per level and the chunks a query's plan scores (SmartChunk's cost).
fn describe(retriever: &LevelRetriever, ctx: &Context) -> String {
    let indexed: Vec<&Levels> = retriever.levels.iter().flatten().collect();
    let n = indexed.len().max(1) as f64;
    let per_level: Vec<String> = (0..indexed.first().map_or(0, |l| l.levels()))
        .map(|level| format!("{:.1}", indexed.iter().map(|l| l.by_level[level].len()).sum::<usize>() as f64 / n))
        .collect();
    let cost: f64 = ctx.queries.iter().map(|q| retriever.candidates(&q.input).len() as f64).sum::<f64>() / ctx.queries.len().max(1) as f64;
    format!("chunks per document by level (unit first): {}; {cost:.1} chunks scored per query", per_level.join(" / "))
}
