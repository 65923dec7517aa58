//! Negatives as a training setting (`training.negatives`): where a query's contrastive negatives come from.
//!
//! - `InDocument` (the default, SproutRAG's reference): a step holds one document's queries; the batch's
//!   other positives and, with `hard_negatives`, every other unit of that document are the negatives
//!   ([`crate::objective::retrieval_loss`]). A query never meets another document's text.
//! - `Corpus(..)`: as sentence-transformers (MultipleNegativesRankingLoss with `mine_hard_negatives`),
//!   Tevatron and FlagEmbedding train. Batches are drawn across the whole training split, so the in-batch
//!   negatives are other documents' positives; each query brings `per_query` negatives mined from every
//!   unit of the training documents, ranked by BM25, by the frozen encoder's cosine, or drawn at random
//!   from the other documents, of which the ranks `skip..top` are kept. Every query is scored against
//!   every candidate of the batch, its own positive the target
//!   ([`arbor_losses::info_nce_over`]):
//!
//! ```text
//! L = -(1/N) sum_i log( exp(cos(q_i, p_i) / tau) / sum_{c in batch, c not a false negative of i} exp(cos(q_i, c) / tau) )
//! ```
//!
//! False negatives are filtered: a unit overlapping any gold span of a query is never that query's
//! negative, neither when it is mined nor when it enters the batch as another query's positive or
//! negative. `margin: Some(m)` drops, at mining, every candidate scoring above `m` times the query's
//! positive (NV-Retriever's positive-aware TopK-PercPos; 0.95 in its paper). Mining reads only the
//! trainer's documents (the training split: never a validation or test document, which the trainer is
//! not given), depends only on them and the setting, and its statistics (negatives per query, from how
//! many documents) go to the run's `negatives.json` and, per step, to the training log.
//! - `Mined(..)`: one document's queries a step, as `InDocument` (its other units the negatives with
//!   `hard_negatives`), and besides them `per_query` negatives a query mined, as above, from the *other*
//!   training documents (their ranks `skip..top` counted among those only), shared by the step's
//!   queries. The one
//!   corpus-wide setting SproutRAG's joint step takes (its SLLM and trees read one document at a time:
//!   a mined unit is embedded by running the SLLM over its own document), and so, through the matched
//!   control, the dense trainer takes it too:
//!
//! ```text
//! L = -(1/b) sum_i log( exp(cos(q_i, p_i) / tau) / sum_{c in units of the document and the step's mined units, c not a false negative of i} exp(cos(q_i, c) / tau) )
//! ```
//!
//! In-document steps (`InDocument` and `Mined`) leave out the same false negatives as corpus-wide batches:
//! a unit of a query's gold other than its positive, another query's positive that is its own too, a
//! mined unit of its gold ([`crate::objective::step_false_negatives`]).

use std::collections::BTreeSet;
use std::path::Path;

use arbor_datasets::{Corpus, DocSpan};
use arbor_eval::retrievers::bm25::Engine;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::data::{Batch, TrainDoc, TrainQuery};
use crate::window::dot;

/// Where a training's negatives come from; `negatives: Corpus((mine: Bm25, per_query: 1, top: 30))` in
/// an experiment file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub enum Negatives {
    /// One document's queries a step, negatives from that document.
    #[default]
    InDocument,
    /// Batches across documents, negatives mined from the whole training split.
    Corpus(CorpusNegatives),
    /// One document's queries a step, its units and negatives mined from the other training documents.
    Mined(CorpusNegatives),
}

impl Negatives {
    pub fn is_in_document(&self) -> bool {
        *self == Negatives::InDocument
    }

    /// The setting of batches across documents, if this is one.
    pub fn corpus(&self) -> Option<&CorpusNegatives> {
        match self {
            Negatives::Corpus(c) => Some(c),
            Negatives::InDocument | Negatives::Mined(_) => None,
        }
    }

    /// How negatives are mined, if they are (`Corpus` or `Mined`).
    pub fn mining(&self) -> Option<&CorpusNegatives> {
        match self {
            Negatives::Corpus(c) | Negatives::Mined(c) => Some(c),
            Negatives::InDocument => None,
        }
    }

    /// The setting in a row's label (`None` for `InDocument`); `batch_size`: the training's.
    pub fn describe(&self, batch_size: usize) -> Option<String> {
        let ranks = |c: &CorpusNegatives| {
            let margin = c.margin.map_or(String::new(), |m| format!(", margin {m}"));
            format!("{} {:?} negatives a query of ranks {}..{}{margin}", c.per_query, c.mine, c.skip, c.top)
        };
        match self {
            Negatives::InDocument => None,
            Negatives::Corpus(c) => Some(format!("batches of {batch_size} across documents, {}", ranks(c))),
            Negatives::Mined(c) => Some(format!("{} mined from the other documents", ranks(c))),
        }
    }

    /// Mines the negatives a run of this setting draws from (`None` for `InDocument`): for `Mined`, from
    /// the other training documents only. Returns them with the setting.
    pub fn mine(&self, corpus: &Corpus, docs: &[TrainDoc], seed: u64) -> Option<(Mined, &CorpusNegatives)> {
        match self {
            Negatives::InDocument => None,
            Negatives::Corpus(how) => Some((how.mine(corpus, docs, seed, false), how)),
            Negatives::Mined(how) => Some((how.mine(corpus, docs, seed, true), how)),
        }
    }
}

/// How negatives are mined from the training documents; fields left out take these defaults
/// (`mine: Bm25, per_query: 1, skip: 0, top: 30, margin: None`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CorpusNegatives {
    pub mine: Mine,
    /// Mined negatives a query brings to each step, drawn afresh each epoch from its kept ranks (0: the
    /// batch's other positives only, cross-document in-batch negatives).
    pub per_query: usize,
    /// Ranks skipped at the top of a query's filtered candidates (the likeliest unlabelled positives).
    pub skip: usize,
    /// Ranks kept end here: a query's negatives are its filtered candidates `skip..top`.
    pub top: usize,
    /// Drop candidates scoring above this fraction of the query's positive (positive-aware mining).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub margin: Option<f64>,
}

impl Default for CorpusNegatives {
    fn default() -> Self {
        CorpusNegatives { mine: Mine::Bm25, per_query: 1, skip: 0, top: 30, margin: None }
    }
}

/// What ranks a query's candidate negatives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Mine {
    /// BM25 over every unit of the training documents (arbor_eval's BM25: k1 1.2, b 0.75).
    #[default]
    Bm25,
    /// The frozen encoder's cosine (the vectors computed once before training).
    Encoder,
    /// Units of the other training documents in a random order (by the seed): easy negatives.
    Random,
}

/// A unit of the trainer's documents: (document, unit), indices into its `&[TrainDoc]`.
pub type UnitRef = (usize, usize);

/// Every query's negatives and what mining found.
#[derive(Debug, Clone, PartialEq)]
pub struct Mined {
    /// Per document, per query: its kept negatives, best-ranked first.
    pub lists: Vec<Vec<Vec<UnitRef>>>,
    pub stats: MiningStats,
}

/// What mining found, written to the run's `negatives.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MiningStats {
    pub queries: usize,
    pub negatives_per_query: f64,
    /// Distinct documents a query's negatives come from, on average.
    pub documents_per_query: f64,
    /// Share of the negatives from a document other than the query's own.
    pub from_other_documents: f64,
    /// Candidates left out for overlapping the query's gold.
    pub dropped_as_gold: usize,
    /// Candidates left out by the positive-aware margin.
    pub dropped_by_margin: usize,
    /// Queries left with no negative (their batches still give them the other positives).
    pub queries_without: usize,
}

impl CorpusNegatives {
    pub fn check(&self) -> Result<(), String> {
        if self.top <= self.skip {
            return Err(format!("training.negatives: top ({}) must be above skip ({})", self.top, self.skip));
        }
        if self.per_query > self.top - self.skip {
            return Err(format!(
                "training.negatives: per_query ({}) is more than the ranks kept, skip..top ({}..{})",
                self.per_query, self.skip, self.top
            ));
        }
        match self.margin {
            Some(m) if !(m > 0.0 && m <= 1.0) => Err(format!("training.negatives: margin must be in (0, 1], got {m}")),
            Some(_) if self.mine == Mine::Random => Err("training.negatives: a margin needs scores: mine by Bm25 or Encoder, not Random".into()),
            _ => Ok(()),
        }
    }

    /// Mines every query's negatives among the units of `docs` (texts read from `corpus`), with
    /// `other_documents` among those of the other documents only; `seed` orders the random ones.
    pub fn mine(&self, corpus: &Corpus, docs: &[TrainDoc], seed: u64, other_documents: bool) -> Mined {
        let units: Vec<UnitRef> = docs.iter().enumerate().flat_map(|(d, doc)| (0..doc.units.len()).map(move |u| (d, u))).collect();
        // In-batch negatives only: nothing to rank, so no index is built.
        let ranker = (self.per_query > 0).then(|| Ranker::new(self.mine, corpus, docs, &units, seed));
        let (mut dropped_as_gold, mut dropped_by_margin) = (0, 0);
        let mut lists = Vec::with_capacity(docs.len());
        for (d, doc) in docs.iter().enumerate() {
            let mut per_doc = Vec::with_capacity(doc.queries.len());
            for (qi, q) in doc.queries.iter().enumerate() {
                let ranked = ranker.as_ref().map_or_else(Vec::new, |r| r.rank(docs, (d, qi), &units));
                let positive = ranked.iter().find(|&&(r, _)| r == (d, q.positive)).map_or(0.0, |&(_, s)| s);
                let mut kept = Vec::new();
                for (r, score) in ranked {
                    if r == (d, q.positive) || (other_documents && r.0 == d) {
                        continue;
                    }
                    if is_gold(docs, r, q) {
                        dropped_as_gold += 1;
                    } else if self.margin.is_some_and(|m| f64::from(score) > m * f64::from(positive)) {
                        dropped_by_margin += 1;
                    } else {
                        kept.push(r);
                        if kept.len() == self.top {
                            break;
                        }
                    }
                }
                per_doc.push(kept.into_iter().skip(self.skip).collect());
            }
            lists.push(per_doc);
        }
        let stats = MiningStats::of(&lists, dropped_as_gold, dropped_by_margin);
        Mined { lists, stats }
    }
}

/// Whether unit `r` overlaps any gold span of `q`.
pub fn is_gold(docs: &[TrainDoc], r: UnitRef, q: &TrainQuery) -> bool {
    q.is_gold(&docs[r.0].units[r.1])
}

/// Candidates ranked for a query, best first, with their scores.
enum Ranker {
    Bm25(Engine),
    /// The norm of every unit's frozen vector, in `units` order, computed once.
    Encoder(Vec<f32>),
    Random(u64),
}

impl Ranker {
    fn new(mine: Mine, corpus: &Corpus, docs: &[TrainDoc], units: &[UnitRef], seed: u64) -> Self {
        match mine {
            Mine::Bm25 => {
                let text = |&(d, u): &UnitRef| {
                    let s = docs[d].units[u];
                    corpus.documents[s.doc].text[s.span.start..s.span.end].to_string()
                };
                Ranker::Bm25(Engine::new(units.iter().enumerate().map(|(i, r)| (i, text(r))).collect()))
            }
            Mine::Encoder => Ranker::Encoder(units.iter().map(|&(d, u)| norm(&docs[d].pooled[u])).collect()),
            Mine::Random => Ranker::Random(seed),
        }
    }

    /// The candidates for query `at` = (document, query), best first (ties in unit order); the random
    /// order is the other documents' units shuffled by the seed and the query's place.
    fn rank(&self, docs: &[TrainDoc], at: (usize, usize), units: &[UnitRef]) -> Vec<(UnitRef, f32)> {
        let q = &docs[at.0].queries[at.1];
        let mut scored: Vec<(usize, f32)> = match self {
            Ranker::Bm25(engine) => engine.matches(&q.text),
            Ranker::Encoder(norms) => {
                let nq = norm(&q.pooled);
                units.iter().enumerate().map(|(i, &(d, u))| (i, dot(&q.pooled, &docs[d].pooled[u]) / (nq * norms[i]))).collect()
            }
            Ranker::Random(seed) => {
                let mut others: Vec<usize> = (0..units.len()).filter(|&i| units[i].0 != at.0).collect();
                others.shuffle(&mut rand::rngs::StdRng::seed_from_u64(mix(*seed, &[at.0, at.1])));
                return others.into_iter().map(|i| (units[i], 0.0)).collect();
            }
        };
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.into_iter().map(|(i, s)| (units[i], s)).collect()
    }
}

fn norm(v: &[f32]) -> f32 {
    dot(v, v).sqrt().max(1e-12)
}

/// A seed for a draw at `parts` (epoch, document, query...) of a run seeded `seed`.
fn mix(seed: u64, parts: &[usize]) -> u64 {
    parts.iter().fold(seed.wrapping_mul(1_000_003), |h, &p| (h ^ p as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29))
}

impl MiningStats {
    fn of(lists: &[Vec<Vec<UnitRef>>], dropped_as_gold: usize, dropped_by_margin: usize) -> Self {
        let (mut queries, mut negatives, mut documents, mut other, mut without) = (0, 0, 0, 0, 0);
        for (d, per_doc) in lists.iter().enumerate() {
            for list in per_doc {
                queries += 1;
                negatives += list.len();
                documents += list.iter().map(|r| r.0).collect::<BTreeSet<_>>().len();
                other += list.iter().filter(|r| r.0 != d).count();
                without += usize::from(list.is_empty());
            }
        }
        let per = |x: usize, n: usize| if n == 0 { 0.0 } else { x as f64 / n as f64 };
        MiningStats {
            queries,
            negatives_per_query: per(negatives, queries),
            documents_per_query: per(documents, queries),
            from_other_documents: per(other, negatives),
            dropped_as_gold,
            dropped_by_margin,
            queries_without: without,
        }
    }
}

/// Every training query, (document, query), in document order: what corpus-wide batches draw from.
pub fn all_queries(docs: &[TrainDoc]) -> Vec<(usize, usize)> {
    docs.iter().enumerate().flat_map(|(d, doc)| (0..doc.queries.len()).map(move |q| (d, q))).collect()
}

/// One corpus-wide step: its queries, the units it scores them against, each query's positive among
/// them, and the (query, candidate) pairs left out as false negatives.
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusBatch {
    pub queries: Vec<(usize, usize)>,
    /// The batch's positives in query order (each once), then its queries' sampled negatives (each once).
    pub candidates: Vec<UnitRef>,
    pub targets: Vec<usize>,
    pub excluded: Vec<(usize, usize)>,
}

impl CorpusBatch {
    /// The batch of `queries` in `epoch`: each brings `per_query` of its mined negatives, drawn by the
    /// seed, the epoch and the query (so a resumed run draws the same).
    pub fn new(docs: &[TrainDoc], mined: &Mined, per_query: usize, queries: Vec<(usize, usize)>, seed: u64, epoch: usize) -> Self {
        let mut candidates: Vec<UnitRef> = Vec::new();
        let place = |r: UnitRef, candidates: &mut Vec<UnitRef>| match candidates.iter().position(|&c| c == r) {
            Some(i) => i,
            None => {
                candidates.push(r);
                candidates.len() - 1
            }
        };
        let targets: Vec<usize> = queries.iter().map(|&(d, q)| place((d, docs[d].queries[q].positive), &mut candidates)).collect();
        for &(d, q) in &queries {
            for r in drawn(mined, per_query, (d, q), seed, epoch) {
                place(r, &mut candidates);
            }
        }
        let mut excluded = Vec::new();
        for (i, &(d, q)) in queries.iter().enumerate() {
            let query = &docs[d].queries[q];
            excluded.extend((0..candidates.len()).filter(|&j| j != targets[i] && is_gold(docs, candidates[j], query)).map(|j| (i, j)));
        }
        CorpusBatch { queries, candidates, targets, excluded }
    }

    /// The batch's questions, in its order.
    pub fn questions<'d>(&self, docs: &'d [TrainDoc]) -> Vec<&'d TrainQuery> {
        self.queries.iter().map(|&(d, q)| &docs[d].queries[q]).collect()
    }

    /// Distinct documents among the candidates.
    pub fn documents(&self) -> usize {
        self.candidates.iter().map(|c| c.0).collect::<BTreeSet<_>>().len()
    }
}

/// The `per_query` negatives query `at` = (document, query) brings to a step of `epoch`: its mined list
/// shuffled by the seed, the epoch and the query (so a resumed run draws the same), the first ones.
fn drawn(mined: &Mined, per_query: usize, (d, q): (usize, usize), seed: u64, epoch: usize) -> Vec<UnitRef> {
    let mut list = mined.lists[d][q].clone();
    list.shuffle(&mut rand::rngs::StdRng::seed_from_u64(mix(seed, &[epoch, d, q])));
    list.truncate(per_query);
    list
}

/// An in-document step's negatives from other documents (`negatives: Mined`): units of `docs`.
#[derive(Debug, Clone, Copy)]
pub struct StepMined<'a> {
    pub docs: &'a [TrainDoc],
    pub units: &'a [UnitRef],
}

impl StepMined<'_> {
    /// The units' spans, in order: what the step's false negatives are found by.
    pub fn spans(&self) -> Vec<DocSpan> {
        self.units.iter().map(|&(d, u)| self.docs[d].units[u]).collect()
    }
}

/// The mined negatives of an in-document step (`negatives: Mined`): those its `queries` (of document
/// `doc`) draw in `epoch`, each unit once, sorted.
pub fn step_negatives(mined: &Mined, per_query: usize, doc: usize, queries: &[usize], seed: u64, epoch: usize) -> Vec<UnitRef> {
    let mut units: Vec<UnitRef> = queries.iter().flat_map(|&q| drawn(mined, per_query, (doc, q), seed, epoch)).collect();
    units.sort_unstable();
    units.dedup();
    units
}

/// The mined negatives from other documents a step's `batches` (one a document) of `epoch` bring
/// (`negatives: Mined`; `None` without, or when its queries drew none), each unit once, sorted. With
/// `hard_negatives` a unit of one of the step's own documents is left out: it is a candidate already.
pub fn step_mined(mined: Option<&(Mined, usize)>, batches: &[Batch], seed: u64, epoch: usize, hard_negatives: bool) -> Option<Vec<UnitRef>> {
    let (mined, per_query) = mined?;
    let mut units: Vec<UnitRef> = batches.iter().flat_map(|b| step_negatives(mined, *per_query, b.doc, &b.queries, seed, epoch)).collect();
    if hard_negatives {
        units.retain(|u| batches.iter().all(|b| b.doc != u.0));
    }
    units.sort_unstable();
    units.dedup();
    Some(units).filter(|units| !units.is_empty())
}

/// A run's mined negatives, when its setting mines any: mined (for `Mined`, from the other documents),
/// written to `run_dir/negatives.json` and summed up on standard error. Returns them with the setting.
pub fn prepare<'n>(
    negatives: &'n Negatives,
    corpus: &Corpus,
    train: &[TrainDoc],
    seed: u64,
    run_dir: &Path,
) -> anyhow::Result<Option<(Mined, &'n CorpusNegatives)>> {
    let Some((mined, how)) = negatives.mine(corpus, train, seed) else { return Ok(None) };
    record(run_dir, corpus, train, &mined, how)?;
    let s = &mined.stats;
    eprintln!(
        "negatives: {:.1} a query from {:.1} documents ({:.0} % from other documents), {} candidates dropped as gold, {} by the margin, {} queries without",
        s.negatives_per_query,
        s.documents_per_query,
        100.0 * s.from_other_documents,
        s.dropped_as_gold,
        s.dropped_by_margin,
        s.queries_without
    );
    Ok(Some((mined, how)))
}

/// Writes what mining found and every query's negatives (document id and byte span) to
/// `run_dir/negatives.json`, atomically.
pub fn record(run_dir: &Path, corpus: &Corpus, docs: &[TrainDoc], mined: &Mined, how: &CorpusNegatives) -> anyhow::Result<()> {
    let span = |&(d, u): &UnitRef| {
        let s = docs[d].units[u];
        (corpus.documents[s.doc].id.as_str(), s.span.start, s.span.end)
    };
    let lists: Vec<Vec<Vec<_>>> = mined.lists.iter().map(|per_doc| per_doc.iter().map(|l| l.iter().map(span).collect()).collect()).collect();
    let value = serde_json::json!({ "setting": how, "stats": mined.stats, "negatives": lists });
    std::fs::create_dir_all(run_dir)?;
    arbor_files::atomic_write(&run_dir.join("negatives.json"), serde_json::to_string(&value)?.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use arbor_datasets::{Document, Span};

    use super::*;

    /// Three training documents of four one-sentence units each; query k of document d asks for unit k
    /// (in words its unit shares), its gold that unit; the frozen vectors put unit u of document d on axis
    /// 4 d + u and each query on its positive's axis plus a little of the next unit's.
    fn docs() -> (Corpus, Vec<TrainDoc>) {
        let words = ["rent due monthly", "heating repairs landlord", "deposit returned tenant", "pets allowed cats"];
        let texts: Vec<String> = (0..3).map(|d| words.iter().map(|w| format!("{w} d{d}.")).collect::<Vec<_>>().join(" ")).collect();
        let documents = texts
            .iter()
            .enumerate()
            .map(|(d, t)| Document { id: format!("doc{d}"), title: String::new(), text: t.clone(), sections: vec![], split: None })
            .collect();
        let corpus = Corpus::new(documents, vec![], Path::new("t")).unwrap();
        let axis = |k: usize, w: f32| {
            (0..12)
                .map(|i| {
                    if i == k {
                        1.0
                    } else if i == k + 1 {
                        w
                    } else {
                        0.0
                    }
                })
                .collect::<Vec<f32>>()
        };
        let docs = (0..3)
            .map(|d| {
                let mut at = 0;
                let units: Vec<DocSpan> = words
                    .iter()
                    .map(|w| {
                        let len = w.len() + 4;
                        let span = Span::new(at, at + len);
                        at += len + 1;
                        DocSpan { doc: d, span }
                    })
                    .collect();
                let queries = (0..2)
                    .map(|k| TrainQuery { text: words[k].into(), pooled: axis(4 * d + k, 0.5), ids: vec![], positive: k, gold: vec![units[k]] })
                    .collect();
                TrainDoc { pooled: (0..4).map(|u| axis(4 * d + u, 0.0)).collect(), units, ids: vec![], pairs: vec![], tokens: vec![], queries }
            })
            .collect();
        (corpus, docs)
    }

    /// Mined for an in-document step (`Mined`), a query's negatives come from the other documents only,
    /// `skip..top` counted among those; a step draws each query's `per_query` by the seed and the epoch
    /// alone, each unit once, sorted, and other epochs draw others.
    #[test]
    fn mined_for_in_document_steps_negatives_come_from_other_documents() {
        let (corpus, docs) = docs();
        for mine in [Mine::Bm25, Mine::Encoder, Mine::Random] {
            let how = CorpusNegatives { mine, per_query: 2, skip: 0, top: 6, margin: None };
            let (mined, _) = Negatives::Mined(how.clone()).mine(&corpus, &docs, 3).unwrap();
            for (d, per_doc) in mined.lists.iter().enumerate() {
                // BM25 ranks only units sharing a word with the question.
                assert!(per_doc.iter().all(|l| (1..=6).contains(&l.len()) && l.iter().all(|r| r.0 != d)), "{mine:?}: {per_doc:?}");
            }
            assert_eq!(mined.stats.from_other_documents, 1.0);
            if mine == Mine::Encoder {
                let all = how.mine(&corpus, &docs, 3, false);
                assert!(all.stats.from_other_documents < 1.0, "over every document its own units rank too");
            }
            let step = |epoch| step_negatives(&mined, 2, 1, &[0, 1], 3, epoch);
            let first = step(0);
            assert!((2..=4).contains(&first.len()) && first.windows(2).all(|w| w[0] < w[1]), "{first:?}");
            assert!(first.iter().all(|r| mined.lists[1][0].contains(r) || mined.lists[1][1].contains(r)));
            assert_eq!(first, step(0), "a resumed run draws the same");
            if mined.lists[1].iter().all(|l| l.len() > 2) {
                assert!((1..6).any(|e| step(e) != first), "{mine:?}: epochs draw afresh");
            }
        }
        let batch = Batch { doc: 1, queries: vec![0, 1] };
        let (mined, _) =
            Negatives::Mined(CorpusNegatives { mine: Mine::Random, per_query: 0, top: 2, ..Default::default() }).mine(&corpus, &docs, 0).unwrap();
        assert_eq!(step_mined(Some(&(mined, 0)), std::slice::from_ref(&batch), 0, 0, true), None, "nothing drawn: no mined rows");
        // A step of two documents: what each batch draws, once, sorted; with hard negatives, none of
        // the step's own documents' units (they are its candidates already).
        let (mined, _) =
            Negatives::Mined(CorpusNegatives { mine: Mine::Random, per_query: 2, top: 4, ..Default::default() }).mine(&corpus, &docs, 0).unwrap();
        let other = Batch { doc: 0, queries: vec![0] };
        let pair = [batch.clone(), other.clone()];
        let mut union: Vec<UnitRef> = [&batch, &other].iter().flat_map(|b| step_negatives(&mined, 2, b.doc, &b.queries, 0, 0)).collect();
        union.sort_unstable();
        union.dedup();
        assert!(union.iter().any(|u| u.0 < 2) && union.iter().any(|u| u.0 == 2), "{union:?}");
        let m = Some(&(mined, 2));
        assert_eq!(step_mined(m, &pair, 0, 0, false), Some(union.clone()).filter(|u| !u.is_empty()));
        let kept: Vec<UnitRef> = union.into_iter().filter(|u| u.0 != 0 && u.0 != 1).collect();
        assert_eq!(step_mined(m, &pair, 0, 0, true), Some(kept).filter(|u| !u.is_empty()));
        assert!(Negatives::InDocument.mine(&corpus, &docs, 0).is_none());
    }

    /// Whatever ranks them, a query's negatives are units of the training documents, never its positive
    /// nor a unit overlapping its gold, at most `top - skip` of them.
    #[test]
    fn no_mined_negative_is_the_positive_or_overlaps_gold() {
        let (corpus, mut docs) = docs();
        // Query 1 of document 0 also has unit 2's text as gold: unit 2 is never its negative.
        let extra = docs[0].units[2];
        docs[0].queries[1].gold.push(extra);
        for mine in [Mine::Bm25, Mine::Encoder, Mine::Random] {
            let how = CorpusNegatives { mine, per_query: 2, skip: 1, top: 6, margin: None };
            how.check().unwrap();
            let mined = how.mine(&corpus, &docs, 7, false);
            for (d, doc) in docs.iter().enumerate() {
                for (q, query) in doc.queries.iter().enumerate() {
                    let list = &mined.lists[d][q];
                    assert!(list.len() <= 5, "{mine:?}: {list:?}");
                    for &r in list {
                        assert!(r.0 < docs.len() && r.1 < docs[r.0].units.len());
                        assert_ne!(r, (d, query.positive), "{mine:?}");
                        assert!(!is_gold(&docs, r, query), "{mine:?}: {r:?} overlaps the gold of ({d}, {q})");
                        if mine == Mine::Random {
                            assert_ne!(r.0, d, "random negatives come from the other documents");
                        }
                    }
                }
            }
            assert!(mined.stats.dropped_as_gold >= usize::from(mine == Mine::Encoder), "{mine:?}: {:?}", mined.stats);
            assert_eq!(mined, how.mine(&corpus, &docs, 7, false), "mining depends only on its inputs");
        }
    }

    /// BM25 ranks first the other documents' units with the query's words (the same clause of another
    /// contract); the encoder's ranking, skip, top and the margin, hand-checked.
    #[test]
    fn ranks_skip_top_and_margin_hand_checked() {
        let (corpus, docs) = docs();
        let bm25 = CorpusNegatives { mine: Mine::Bm25, per_query: 1, skip: 0, top: 2, margin: None }.mine(&corpus, &docs, 0, false);
        assert_eq!(bm25.lists[0][0], vec![(1, 0), (2, 0)], "\"rent due monthly\" in documents 1 and 2");
        assert_eq!(bm25.stats.from_other_documents, 1.0);
        // Query (0, 0) on axis 0 + 0.5 axis 1: unit (0, 1) at cosine 0.447, every other unit at 0.
        let encoder = CorpusNegatives { mine: Mine::Encoder, per_query: 1, skip: 0, top: 3, margin: None };
        assert_eq!(encoder.mine(&corpus, &docs, 0, false).lists[0][0], vec![(0, 1), (0, 2), (0, 3)], "then unit order");
        let skipped = CorpusNegatives { skip: 1, ..encoder.clone() }.mine(&corpus, &docs, 0, false);
        assert_eq!(skipped.lists[0][0], vec![(0, 2), (0, 3)]);
        // The positive scores 0.894: a margin of 0.4 drops the 0.447 candidate (above 0.358), 0.6 keeps it.
        let margin = |m| CorpusNegatives { margin: Some(m), ..encoder.clone() }.mine(&corpus, &docs, 0, false);
        assert_eq!(margin(0.4).lists[0][0][0], (0, 2));
        assert_eq!(margin(0.6).lists[0][0][0], (0, 1));
        assert_eq!(margin(0.4).stats.dropped_by_margin, 6, "one candidate for each of the six queries");
        assert!(CorpusNegatives { margin: Some(0.5), mine: Mine::Random, ..encoder.clone() }.check().is_err());
        assert!(CorpusNegatives { skip: 3, top: 3, ..encoder.clone() }.check().is_err());
        assert!(CorpusNegatives { per_query: 4, ..encoder }.check().is_err());
    }

    /// A batch across documents: positives first, each once, then the sampled negatives; a unit
    /// overlapping a query's gold never counts against it, though it is another query's positive.
    #[test]
    fn a_corpus_batch_mixes_documents_and_leaves_out_false_negatives() {
        let (corpus, mut docs) = docs();
        // Query (0, 1)'s gold also covers unit 0, query (0, 0)'s positive.
        let unit0 = docs[0].units[0];
        docs[0].queries[1].gold.push(unit0);
        let how = CorpusNegatives { mine: Mine::Bm25, per_query: 1, skip: 0, top: 2, margin: None };
        let mined = how.mine(&corpus, &docs, 0, false);
        let batch = CorpusBatch::new(&docs, &mined, 1, vec![(0, 0), (0, 1), (2, 1)], 0, 0);
        assert_eq!(&batch.candidates[..3], &[(0, 0), (0, 1), (2, 1)]);
        assert_eq!(batch.targets, vec![0, 1, 2]);
        assert!(batch.excluded.contains(&(1, 0)), "query (0, 1) is not pushed from its own gold: {:?}", batch.excluded);
        assert!(batch.excluded.iter().all(|&(i, j)| j != batch.targets[i]));
        assert!(batch.documents() >= 2);
        assert_eq!(batch, CorpusBatch::new(&docs, &mined, 1, vec![(0, 0), (0, 1), (2, 1)], 0, 0), "a resumed run draws the same");
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), &corpus, &docs, &mined, &how).unwrap();
        let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("negatives.json")).unwrap()).unwrap();
        assert_eq!(written["negatives"][0][0][0][0], "doc1");
        assert_eq!(written["stats"]["queries"], 6);
    }

    proptest::proptest! {
        /// For any gold (a query's gold over several units, queries sharing a positive) and any batch of
        /// queries across the documents: no candidate left in a query's denominator overlaps its gold.
        #[test]
        fn no_negative_of_a_corpus_batch_overlaps_its_querys_gold(
            extra in proptest::collection::vec((0usize..3, 0usize..2, 0usize..4), 0..6),
            batch in proptest::collection::vec((0usize..3, 0usize..2), 1..6),
            per_query in 0usize..3,
        ) {
            let (corpus, mut docs) = docs();
            for (d, q, u) in extra {
                let unit = docs[d].units[u];
                docs[d].queries[q].gold.push(unit);
            }
            let how = CorpusNegatives { mine: Mine::Bm25, per_query: per_query.max(1), skip: 0, top: 4, margin: None };
            let mined = how.mine(&corpus, &docs, 0, false);
            let mut queries = batch;
            queries.sort_unstable();
            queries.dedup();
            let b = CorpusBatch::new(&docs, &mined, per_query, queries, 1, 0);
            for (i, &(d, q)) in b.queries.iter().enumerate() {
                for (j, &c) in b.candidates.iter().enumerate() {
                    let negative = j != b.targets[i] && !b.excluded.contains(&(i, j));
                    proptest::prop_assert!(!(negative && is_gold(&docs, c, &docs[d].queries[q])), "query {:?} meets {:?}", (d, q), c);
                }
            }
        }
    }
}
