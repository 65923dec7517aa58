//! What a SproutRAG training run reads: per document, the frozen encoder's pooled unit vectors, the gold
//! merge pairs, and its queries with their positive unit. Batches are one document's queries, in an
//! order that depends only on (seed, epoch), so a resumed run sees the same batches; a step reads
//! `docs_per_step` of them ([`epoch_steps`], issue 62: SproutRAG's joint step over several documents and
//! its control); with corpus-wide negatives (`crate::negatives`) the dense trainer draws queries across
//! documents by [`step_batch`] instead.

use arbor_datasets::DocSpan;
use rand::SeedableRng;
use rand::seq::SliceRandom;

/// A training query: its pooled vector, the unit that holds most of its gold text, and its gold spans.
#[derive(Debug, Clone)]
pub struct TrainQuery {
    /// The question (what BM25 mining reads: [`crate::negatives`]).
    pub text: String,
    pub pooled: Vec<f32>,
    /// The encoder's token ids of the query, when the encoder is fine-tuned (else empty).
    pub ids: Vec<u32>,
    pub positive: usize,
    pub gold: Vec<DocSpan>,
}

impl TrainQuery {
    /// Whether `span` overlaps any of the query's gold spans (a unit of another document never does).
    pub fn is_gold(&self, span: &DocSpan) -> bool {
        self.gold.iter().any(|g| g.overlaps(span))
    }
}

/// A training document.
#[derive(Debug, Clone)]
pub struct TrainDoc {
    /// The unit spans, in document order.
    pub units: Vec<DocSpan>,
    /// Pooled encoder vectors of the units, one per unit.
    pub pooled: Vec<Vec<f32>>,
    /// The encoder's token ids of each unit, when the encoder is fine-tuned (else empty).
    pub ids: Vec<Vec<u32>>,
    /// Gold merge pairs for L_attn.
    pub pairs: Vec<(usize, usize)>,
    /// For the SentenceVAE: each unit's word-piece ids after the tokenizer's start token (empty without a VAE).
    pub tokens: Vec<Vec<u32>>,
    pub queries: Vec<TrainQuery>,
}

/// One step's batch: a document and some of its queries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub doc: usize,
    pub queries: Vec<usize>,
}

/// One document's share of a step: the document and its queries in the step (by index).
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    pub doc: &'a TrainDoc,
    pub queries: &'a [usize],
}

impl Batch {
    /// This batch's share of a step over `docs`.
    pub fn part<'a>(&'a self, docs: &'a [TrainDoc]) -> Part<'a> {
        Part { doc: &docs[self.doc], queries: &self.queries }
    }
}

/// What L_ret of a step over `parts` reads, the documents one after another: the queries, every unit's
/// span, and each query's positive as a row of those units.
pub struct StepRows<'a> {
    pub queries: Vec<&'a TrainQuery>,
    pub spans: Vec<DocSpan>,
    pub positives: Vec<usize>,
}

impl<'a> StepRows<'a> {
    pub fn of(parts: &[Part<'a>]) -> Self {
        let (mut queries, mut spans, mut positives) = (Vec::new(), Vec::new(), Vec::new());
        for part in parts {
            for &q in part.queries {
                let query = &part.doc.queries[q];
                queries.push(query);
                positives.push(spans.len() + query.positive);
            }
            spans.extend_from_slice(&part.doc.units);
        }
        StepRows { queries, spans, positives }
    }
}

/// The batches of an epoch: each document's queries shuffled and chunked, the chunks shuffled.
pub fn epoch_batches(docs: &[TrainDoc], batch_size: usize, seed: u64, epoch: usize) -> Vec<Batch> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(epoch as u64));
    let mut batches = Vec::new();
    for (d, doc) in docs.iter().enumerate() {
        let mut order: Vec<usize> = (0..doc.queries.len()).collect();
        order.shuffle(&mut rng);
        batches.extend(order.chunks(batch_size).map(|c| Batch { doc: d, queries: c.to_vec() }));
    }
    batches.shuffle(&mut rng);
    batches
}

/// The steps of an epoch when a step reads `docs_per_step` documents: [`epoch_batches`]' batches taken
/// `docs_per_step` at a time in their shuffled order, batches of one document in the same step merged
/// into one (its queries in the order drawn), so a step holds each of its documents once, in the order
/// first met. With 1, each step is one batch of [`epoch_batches`], exactly.
pub fn epoch_steps(docs: &[TrainDoc], batch_size: usize, docs_per_step: usize, seed: u64, epoch: usize) -> Vec<Vec<Batch>> {
    let batches = epoch_batches(docs, batch_size, seed, epoch);
    let mut steps = Vec::with_capacity(batches.len().div_ceil(docs_per_step.max(1)));
    for group in batches.chunks(docs_per_step.max(1)) {
        let mut step: Vec<Batch> = Vec::with_capacity(group.len());
        for batch in group {
            match step.iter_mut().find(|b| b.doc == batch.doc) {
                Some(same) => same.queries.extend_from_slice(&batch.queries),
                None => step.push(batch.clone()),
            }
        }
        steps.push(step);
    }
    steps
}

/// Step by step, the steps of [`epoch_steps`]: an epoch's are made when a step first reaches it (they
/// depend only on the seed and the epoch, so a resumed run gets the same ones).
pub struct EpochBatches {
    batch_size: usize,
    docs_per_step: usize,
    seed: u64,
    per_epoch: usize,
    current: (usize, Vec<Vec<Batch>>),
}

impl EpochBatches {
    /// One document a step.
    pub fn new(docs: &[TrainDoc], batch_size: usize, seed: u64) -> Self {
        Self::with_docs(docs, batch_size, 1, seed)
    }

    /// `docs_per_step` documents a step ([`epoch_steps`]).
    pub fn with_docs(docs: &[TrainDoc], batch_size: usize, docs_per_step: usize, seed: u64) -> Self {
        let first = epoch_steps(docs, batch_size, docs_per_step, seed, 0);
        EpochBatches { batch_size, docs_per_step, seed, per_epoch: first.len(), current: (0, first) }
    }

    /// Steps in one epoch.
    pub fn per_epoch(&self) -> usize {
        self.per_epoch
    }

    /// Step `step`'s batches, one a document.
    pub fn at(&mut self, docs: &[TrainDoc], step: usize) -> &[Batch] {
        let epoch = step / self.per_epoch;
        if self.current.0 != epoch {
            self.current = (epoch, epoch_steps(docs, self.batch_size, self.docs_per_step, self.seed, epoch));
        }
        &self.current.1[step % self.per_epoch]
    }
}

/// How a step's log line names its batches: `document 3, 4 queries` (one) or
/// `documents 3 (4 queries), 7 (2 queries)`.
pub fn describe(batches: &[Batch]) -> String {
    match batches {
        [one] => format!("document {}, {} queries", one.doc, one.queries.len()),
        many => {
            let parts: Vec<String> = many.iter().map(|b| format!("{} ({} queries)", b.doc, b.queries.len())).collect();
            format!("documents {}", parts.join(", "))
        }
    }
}

/// The order `n` items are visited in during `epoch`: a function of the seed and the epoch only, so a
/// resumed run replays it.
pub fn epoch_order(n: usize, seed: u64, epoch: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(epoch as u64)));
    order
}

/// Step `step`'s batch of `n` items visited `batch_size` at a time in [`epoch_order`]: its epoch, its
/// place in the epoch, and the items.
pub fn step_batch(n: usize, batch_size: usize, seed: u64, step: usize) -> (usize, usize, Vec<usize>) {
    let per_epoch = n.div_ceil(batch_size);
    let (epoch, at) = (step / per_epoch, step % per_epoch);
    (epoch, at, epoch_order(n, seed, epoch).into_iter().skip(at * batch_size).take(batch_size).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(queries: usize) -> TrainDoc {
        let q = TrainQuery { text: String::new(), pooled: vec![], ids: vec![], positive: 0, gold: vec![] };
        TrainDoc { units: vec![], pooled: vec![], ids: vec![], pairs: vec![], tokens: vec![], queries: vec![q; queries] }
    }

    #[test]
    fn batches_cover_every_query_once_and_depend_only_on_seed_and_epoch() {
        let docs = vec![doc(5), doc(3)];
        let b = epoch_batches(&docs, 2, 7, 0);
        assert_eq!(b.len(), 5);
        let mut seen: Vec<(usize, usize)> = b.iter().flat_map(|x| x.queries.iter().map(move |&q| (x.doc, q))).collect();
        seen.sort();
        assert_eq!(seen.len(), 8);
        seen.dedup();
        assert_eq!(seen.len(), 8);
        assert_eq!(b, epoch_batches(&docs, 2, 7, 0));
        assert_ne!(b, epoch_batches(&docs, 2, 7, 1));
    }

    /// Steps of several documents: one document a step is `epoch_batches` exactly; with more, every
    /// query is read once an epoch, a step names each of its documents once and holds at most
    /// `docs_per_step` of them, and the steps are the batches in order, grouped.
    #[test]
    fn steps_group_the_epochs_batches_and_hold_each_document_once() {
        let docs: Vec<TrainDoc> = (0..6).map(|d| doc(1 + d % 4)).collect();
        for epoch in 0..3 {
            let batches = epoch_batches(&docs, 2, 5, epoch);
            let one: Vec<Batch> = epoch_steps(&docs, 2, 1, 5, epoch).into_iter().flatten().collect();
            assert_eq!(one, batches);
            for b in [2, 3, 5] {
                let steps = epoch_steps(&docs, 2, b, 5, epoch);
                assert_eq!(steps.len(), batches.len().div_ceil(b));
                let mut seen: Vec<(usize, usize)> = Vec::new();
                for step in &steps {
                    assert!(step.len() <= b);
                    let mut ids: Vec<usize> = step.iter().map(|x| x.doc).collect();
                    ids.dedup();
                    ids.sort_unstable();
                    assert!(ids.windows(2).all(|w| w[0] != w[1]), "each document once: {step:?}");
                    seen.extend(step.iter().flat_map(|x| x.queries.iter().map(move |&q| (x.doc, q))));
                }
                seen.sort_unstable();
                let total: usize = docs.iter().map(|d| d.queries.len()).sum();
                assert_eq!(seen.len(), total);
                seen.dedup();
                assert_eq!(seen.len(), total, "every query once");
            }
        }
    }
}
