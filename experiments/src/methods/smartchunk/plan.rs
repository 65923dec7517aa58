//! SmartChunk's planner inside the method (Section 4.2): the synthetic data pipeline, the planner's input,
//! its training (arbor_trainers::planner) and its plans for the evaluated queries.
//!
//! - **Outcomes.** For a query and a plan `(lo, hi)`: the candidates are the chunks of levels `lo..=hi`
//!   of the query's documents (their number is the plan's cost, R_Cost's ChunkCost); the `top_k` by
//!   cosine are handed on in rank order while they fit `budget` tokens (a chunk that does not fit is
//!   skipped); the plan recovers the evidence (R_QA = 1) when they hold at least `recall` of the gold
//!   characters. With `qa: Ie` (arbor's IE-aware reward), R_QA is the handed-on text's IE instead, recall
//!   × precision of the gold bytes, so that a plan is also paid for handing on little besides the gold.
//!   Every plan of every training query is scored once, before training.
//! - **Pseudo-labels** (Section 4.2, "Pseudo-Label Assignment"): retrieval over every level; if the top
//!   k (no budget) recover the evidence, the label is the smallest and largest level of the retrieved
//!   chunks that hold gold text; otherwise retrieval is expanded (2k, 4k, ...) and retried; a query never
//!   recovered has no label (RL still learns from it; SFT and imitation skip it).
//! - **Input** ("query + document metadata"): the query's embedding, the document's opening (the
//!   normalised mean of its units' vectors over its first 512 tokens), and four numbers: ln(1 + tokens),
//!   ln(1 + sections), heading depth, ln(1 + units), scaled to about [0, 1].

use arbor_models::pooling::Role;
use std::collections::HashMap;

use arbor_datasets::span::merge;
use arbor_datasets::{DocSpan, Query};
use arbor_eval::retrievers::flat::dot;
use arbor_eval::retrievers::level_retrieval::LevelRetriever;
use arbor_eval::structures::levels::Levels;
use arbor_models::DefaultBackend;
use arbor_models::compressor::Compressor;
use arbor_models::planner::{PlanVocab, PlannerConfig};
use arbor_trainers::planner::{Outcome, PlanExample, PlannerTraining, assess, greedy_plans};
use burn::backend::Autodiff;
use serde::{Deserialize, Serialize};

use super::{Context, MethodSpec, SmartChunkConfig, embed_levels, hierarchy, sections};
use crate::cache::{Artefact, key};
use crate::progress::{bar, with_bar};
use crate::trained::{Located, TrainedModel};
use anyhow::Context as _;
use crate::validation::VALIDATION;
use arbor_trainers::config::Removed;

/// `Planner((training: (strategy: Stitch)))` in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerSettings {
    pub model: PlannerConfig,
    pub training: PlannerTraining,
    /// The queries it is trained on.
    pub split: String,
    /// Items a plan hands on.
    pub top_k: usize,
    /// R_QA: the share of the gold characters the handed-on items must hold.
    pub recall: f64,
    /// What R_QA pays: 1 when the evidence is recovered (the paper's), or the handed-on text's IE.
    #[serde(skip_serializing_if = "QaReward::is_recovered")]
    pub qa: QaReward,
    /// Tokens the handed-on items may hold.
    pub budget: usize,
    /// Replaced by the validation split: kept only to say so when an old experiment file sets it.
    #[serde(default, deserialize_with = "arbor_trainers::config::removed", skip_serializing)]
    pub holdout_fraction: Option<Removed>,
}

impl Default for PlannerSettings {
    fn default() -> Self {
        PlannerSettings {
            model: PlannerConfig::default(),
            training: PlannerTraining::default(),
            split: "train".into(),
            top_k: 5,
            recall: 0.5,
            qa: QaReward::Recovered,
            budget: 2000,
            holdout_fraction: None,
        }
    }
}

/// R_QA of a plan: SmartChunk's (1 when the handed-on chunks hold `recall` of the gold, else 0) or
/// arbor's IE-aware reading (their IE: recall × precision of the gold, in [0, 1]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum QaReward {
    #[default]
    Recovered,
    Ie,
}

impl QaReward {
    fn is_recovered(&self) -> bool {
        *self == QaReward::Recovered
    }
}

/// The planner's plans for the evaluated queries, by (text, documents), and what to report.
pub(super) struct Planned {
    pub plans: HashMap<(String, Vec<usize>), (usize, usize)>,
    pub record: TrainedModel,
    pub describe: String,
    pub scores: String,
    /// The optimizer steps its training took (`steps.json` in its folder): what its control runs.
    pub steps: usize,
}

/// The file in a planner's folder that records the steps its training took.
const STEPS_FILE: &str = "steps.json";

/// One hierarchy per document with its chunk embeddings, and the units' vectors.
struct Indexed<'a> {
    levels: &'a [Option<Levels>],
    embeddings: &'a [Vec<Vec<f32>>],
    unit_vectors: &'a [Vec<f32>],
}

/// Trains (or reads back) the planner and plans every evaluated query.
pub(super) fn planned(
    ctx: &Context,
    config: &SmartChunkConfig,
    settings: &PlannerSettings,
    eval: &LevelRetriever,
    compressor: Option<(&Compressor<DefaultBackend>, &TrainedModel)>,
) -> anyhow::Result<Planned> {
    // The pseudo-labels and rewards come from the compressor's embeddings: a planner is keyed on the
    // compressor's training folder (itself a content key) as well as on its own settings.
    let compressor_key = compressor.map(|(_, record)| record.dir.file_name().map(|n| n.to_string_lossy().into_owned()));
    let compressor = compressor.map(|(c, _)| c);
    let corpus = ctx.corpus;
    let vocab = PlanVocab { levels: config.level_count() };
    let label = config.label();
    let of_split =
        |split: &str| -> Vec<usize> { (0..corpus.documents.len()).filter(|&d| corpus.documents[d].split.as_deref() == Some(split)).collect() };
    let (train_docs, held_docs) = (of_split(&settings.split), of_split(VALIDATION));
    let train_queries: Vec<&Query> = corpus.eval_queries(Some(&settings.split));
    let held_queries: Vec<&Query> = corpus.eval_queries(Some(VALIDATION));
    let trained_for = (&config.levels, &config.embed, config.summary_tokens, config.summariser.key()?, settings);
    let Located { dir, may_train } = ctx.training.locate(&label, &trained_for, &ctx.keys.encoder, || {
        let queries = |qs: &[&Query]| -> String {
            key(&qs
                .iter()
                .map(|q| (&q.text, corpus.gold(q).iter().map(|g| (&ctx.keys.docs[g.doc], g.span.start, g.span.end)).collect::<Vec<_>>()))
                .collect::<Vec<_>>())
        };
        let data = (ctx.keys.of_docs(&train_docs), queries(&train_queries), ctx.keys.of_docs(&held_docs), queries(&held_queries));
        ctx.cache.dir(Artefact::Planner, &key(&(&ctx.keys.encoder, "planner", &trained_for, &compressor_key, data)))
    })?;
    let record =
        TrainedModel { method: label.clone(), settings: serde_json::to_value(&trained_for)?, encoder: ctx.keys.encoder.clone(), dir: dir.clone(), ..Default::default() };
    let d_features = 2 * ctx.encoder.dim() + 4;
    let recorded_steps = || -> anyhow::Result<usize> {
        let path = dir.join(STEPS_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("{}: the planner there recorded no steps (trained before arbor kept them): train it again", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{} is damaged", path.display()))
    };
    let (planner, steps) = match arbor_trainers::planner::finished::<DefaultBackend>(&settings.training, &settings.model, vocab, d_features, &dir)? {
        Some(p) => {
            eprintln!("using the planner trained in {}", dir.display());
            (p, recorded_steps()?)
        }
        None => {
            anyhow::ensure!(may_train, "{} holds no finished training for method {label:?}", dir.display());
            anyhow::ensure!(!train_queries.is_empty(), "SmartChunk: no query with evidence in the planner's training split {:?}", settings.split);
            let all_docs: Vec<usize> = train_docs.iter().chain(&held_docs).copied().collect();
            let unit_vectors = ctx.cache.unit_embeddings(ctx.encoder, corpus, ctx.leaves, ctx.keys, &all_docs, ctx.encoder_config.batch_size)?;
            let levels: Vec<Option<Levels>> =
                (0..corpus.documents.len()).map(|d| all_docs.contains(&d).then(|| hierarchy(ctx, &config.levels, d))).collect();
            let embeddings = embed_levels(ctx, config, &levels, &all_docs, &unit_vectors, compressor)?;
            let indexed = Indexed { levels: &levels, embeddings: &embeddings, unit_vectors: &unit_vectors };
            let examples = |queries: &[&Query], what: &str| -> anyhow::Result<Vec<PlanExample>> {
                let texts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
                let query_vectors = ctx.cache.text_embeddings(ctx.encoder, Role::Query, ctx.encoder_config.batch_size, &texts, what)?;
                let pb = bar(queries.len(), "pseudo-labels");
                let out = queries
                    .iter()
                    .zip(&query_vectors)
                    .map(|(q, qv)| {
                        pb.inc(1);
                        example(ctx, settings, vocab, &indexed, qv, &corpus.query_docs(q), &corpus.gold(q))
                    })
                    .collect();
                pb.finish_and_clear();
                Ok(out)
            };
            let train = examples(&train_queries, "planner training queries")?;
            let holdout = examples(&held_queries, "planner validation queries")?;
            let labelled = train.iter().filter(|e| e.label.is_some()).count();
            eprintln!("training the planner on {} queries ({labelled} with a pseudo-label; {} held back)", train.len(), holdout.len());
            // Its steps are fixed by its examples: recorded before it trains, so a finished planner always has them.
            let steps = settings.training.steps(train.len(), labelled);
            std::fs::create_dir_all(&dir)?;
            arbor_files::atomic_write(&dir.join(STEPS_FILE), serde_json::to_string(&steps)?.as_bytes())?;
            let planner = with_bar("training the planner", |progress| {
                arbor_trainers::planner::train::<Autodiff<DefaultBackend>>(
                    &settings.training,
                    &settings.model,
                    vocab,
                    &train,
                    &holdout,
                    &dir,
                    progress,
                )
            })?;
            (planner, steps)
        }
    };
    // The evaluated queries: plans, and the scores of Table 5 against their own pseudo-labels.
    let query_vectors = ctx.query_vectors()?;
    let indexed = Indexed { levels: &eval.levels, embeddings: &eval.embeddings, unit_vectors: ctx.unit_vectors()? };
    let examples: Vec<PlanExample> =
        ctx.queries.iter().zip(query_vectors).map(|(q, qv)| example(ctx, settings, vocab, &indexed, qv, &q.input.docs, &q.gold)).collect();
    let features: Vec<&[f32]> = examples.iter().map(|e| e.features.as_slice()).collect();
    let plans = greedy_plans(&planner, &features, vocab, settings.model.max_len);
    let top = vocab.levels - 1;
    let by_query = ctx.queries.iter().zip(&plans).map(|(q, p)| ((q.input.text.clone(), q.input.docs.clone()), p.unwrap_or((0, top)))).collect();
    let s = assess(&planner, &examples, vocab, settings.model.max_len);
    let labelled = examples.iter().filter(|e| e.label.is_some()).count();
    Ok(Planned {
        steps,
        plans: by_query,
        record,
        describe: format!("{:?}, trained in {}", settings.training.strategy, dir.display()),
        scores: format!(
            "planning accuracy {:.1} % against the pseudo-labels of {labelled} evaluated queries, R_QA {:.1} %, {:.1} chunks scored per query, \
             format {:.1} %; plans (levels searched, share of the {} evaluated queries): {}; their pseudo-labels: {}{}",
            100.0 * s.planning_acc,
            100.0 * s.recall,
            s.cost,
            100.0 * s.format,
            plans.len(),
            distribution(&plans, "unparsed", |l| config.level_name(l)),
            distribution(&examples.iter().map(|e| e.label).collect::<Vec<_>>(), "none", |l| config.level_name(l)),
            match settings.qa {
                QaReward::Recovered => String::new(),
                QaReward::Ie => format!(
                    "; the plan of highest R_QA (IE) per query: {}",
                    distribution(&examples.iter().map(|e| best_qa(e, vocab.levels)).collect::<Vec<_>>(), "none", |l| config.level_name(l))
                ),
            }
        ),
    })
}

/// A query's planner input, pseudo-label and per-plan outcomes.
fn example(ctx: &Context, settings: &PlannerSettings, vocab: PlanVocab, ix: &Indexed, qv: &[f32], docs: &[usize], gold: &[DocSpan]) -> PlanExample {
    let levels = vocab.levels;
    let mut outcomes = vec![Outcome::default(); levels * levels];
    for lo in 0..levels {
        for hi in lo..levels {
            let ranked = ranked(ix, qv, docs, lo, hi);
            let handed = within_budget(ix, &ranked, settings.top_k, settings.budget);
            let (recall, precision) = gold_overlap(&handed, gold);
            let recovered = recall >= settings.recall;
            let qa = match settings.qa {
                QaReward::Recovered => f64::from(u8::from(recovered)),
                QaReward::Ie => recall * precision,
            };
            outcomes[lo * levels + hi] = Outcome { recovered, chunk_cost: ranked.len(), qa };
        }
    }
    let all = ranked(ix, qv, docs, 0, levels - 1);
    let mut k = settings.top_k.max(1);
    let label = loop {
        let retrieved: Vec<DocSpan> = all.iter().take(k).map(|&(d, c)| chunk_span(ix, d, c)).collect();
        if gold_overlap(&retrieved, gold).0 >= settings.recall {
            let holding: Vec<usize> =
                all.iter().take(k).filter(|&&(d, c)| gold.iter().any(|g| g.overlaps(&chunk_span(ix, d, c)))).map(|&(d, c)| level(ix, d, c)).collect();
            break holding.iter().min().zip(holding.iter().max()).map(|(&a, &b)| (a, b));
        }
        if k >= all.len() {
            break None;
        }
        k *= 2;
    };
    PlanExample { features: features(ctx, ix, qv, docs), label, outcomes }
}

/// The candidates of plan `(lo, hi)` in `docs`, best first: (document, chunk).
fn ranked(ix: &Indexed, qv: &[f32], docs: &[usize], lo: usize, hi: usize) -> Vec<(usize, usize)> {
    let mut scored: Vec<((usize, usize), f32)> = docs
        .iter()
        .filter_map(|&d| ix.levels[d].as_ref().map(|l| (d, l)))
        .flat_map(|(d, l)| l.in_range(lo, hi).into_iter().map(move |c| ((d, c), dot(qv, &ix.embeddings[d][c]))))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().map(|(r, _)| r).collect()
}

/// The first `k` of `ranked` that fit `budget` tokens, in rank order (a chunk that does not fit is skipped).
fn within_budget(ix: &Indexed, ranked: &[(usize, usize)], k: usize, budget: usize) -> Vec<DocSpan> {
    let mut used = 0;
    let mut out = Vec::new();
    for &(d, c) in ranked.iter().take(k) {
        let tokens = ix.levels[d].as_ref().expect("ranked").chunks[c].tokens;
        if used + tokens <= budget {
            used += tokens;
            out.push(chunk_span(ix, d, c));
        }
    }
    out
}

fn chunk_span(ix: &Indexed, d: usize, c: usize) -> DocSpan {
    DocSpan { doc: d, span: ix.levels[d].as_ref().expect("indexed").chunks[c].span }
}

fn level(ix: &Indexed, d: usize, c: usize) -> usize {
    ix.levels[d].as_ref().expect("indexed").chunks[c].level
}

/// The share of the gold bytes that `items` hold (recall), and the share of the items' bytes that are
/// gold (precision).
pub fn gold_overlap(items: &[DocSpan], gold: &[DocSpan]) -> (f64, f64) {
    let (items, gold) = (merge(items.to_vec()), merge(gold.to_vec()));
    let length = |spans: &[DocSpan]| spans.iter().map(|s| s.span.len()).sum::<usize>().max(1) as f64;
    let held: usize = gold
        .iter()
        .map(|g| {
            items.iter().filter(|i| i.doc == g.doc).map(|i| i.span.end.min(g.span.end).saturating_sub(i.span.start.max(g.span.start))).sum::<usize>()
        })
        .sum();
    (held as f64 / length(&gold), held as f64 / length(&items))
}

/// The planner's input for a query over `docs` (see the module doc).
fn features(ctx: &Context, ix: &Indexed, qv: &[f32], docs: &[usize]) -> Vec<f32> {
    let dim = qv.len();
    let mut opening = vec![0.0f32; dim];
    let (mut tokens, mut sections_n, mut depth, mut units) = (0usize, 0usize, 0usize, 0usize);
    for &d in docs {
        let range = ctx.leaves.units.by_doc[d].clone();
        let counts = &ctx.leaves.tokens.0[d];
        let mut seen = 0;
        for u in range.clone() {
            if seen >= 512 {
                break;
            }
            seen += counts.count(ctx.leaves.units.spans[u].span);
            opening.iter_mut().zip(&ix.unit_vectors[u]).for_each(|(o, v)| *o += v);
        }
        tokens += counts.count(arbor_datasets::Span::new(0, ctx.corpus.documents[d].text.len()));
        let s = sections(&ctx.corpus.documents[d]);
        sections_n += s.len();
        depth = depth.max(s.iter().map(|s| s.level).max().unwrap_or(0));
        units += range.len();
    }
    let norm = opening.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    let meta = [(1.0 + tokens as f32).ln() / 12.0, (1.0 + sections_n as f32).ln() / 6.0, depth as f32 / 6.0, (1.0 + units as f32).ln() / 10.0];
    qv.iter().copied().chain(opening.iter().map(|x| x / norm)).chain(meta).collect()
}

/// The plan whose retrieval earns `example` the highest R_QA (the first of equals, in (lo, hi) order;
/// `None` when every plan earns 0).
pub fn best_qa(example: &PlanExample, levels: usize) -> Option<(usize, usize)> {
    let plans = (0..levels).flat_map(|lo| (lo..levels).map(move |hi| (lo, hi)));
    let qa = |(lo, hi): (usize, usize)| example.outcomes[lo * levels + hi].qa;
    plans.filter(|&p| qa(p) > 0.0).fold(None, |best, p| if best.is_none_or(|b| qa(p) > qa(b)) { Some(p) } else { best })
}

/// Every plan made (or pseudo-label), from the most frequent, with its share of the queries: "unit-section
/// 61.2 %"; `None` (a plan that did not parse, or a query no plan recovers) is named `none`.
pub fn distribution(plans: &[Option<(usize, usize)>], none: &str, name: impl Fn(usize) -> String) -> String {
    let mut used: Vec<(Option<(usize, usize)>, usize)> = Vec::new();
    for p in plans {
        match used.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += 1,
            None => used.push((*p, 1)),
        }
    }
    used.sort_by_key(|&(p, n)| (std::cmp::Reverse(n), p));
    let share = |n: usize| 100.0 * n as f64 / plans.len().max(1) as f64;
    let plan = |p: Option<(usize, usize)>| match p {
        Some((lo, hi)) if lo == hi => name(lo),
        Some((lo, hi)) => format!("{}-{}", name(lo), name(hi)),
        None => none.into(),
    };
    used.iter().map(|&(p, n)| format!("{} {:.1} %", plan(p), share(n))).collect::<Vec<_>>().join(", ")
}
