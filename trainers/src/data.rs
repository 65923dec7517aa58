//! What a SproutRAG training run reads: per document, the frozen encoder's pooled unit vectors, the gold
//! merge pairs, and its queries with their positive unit. Batches are one document's queries, in an
//! order that depends only on (seed, epoch), so a resumed run sees the same batches; with corpus-wide
//! negatives (`crate::negatives`) the dense trainer draws them across documents by [`step_batch`] instead.

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

/// Step by step, the batches of [`epoch_batches`]: an epoch's batches are made when a step first reaches
/// it (they depend only on the seed and the epoch, so a resumed run gets the same ones).
pub struct EpochBatches {
    batch_size: usize,
    seed: u64,
    per_epoch: usize,
    current: (usize, Vec<Batch>),
}

impl EpochBatches {
    pub fn new(docs: &[TrainDoc], batch_size: usize, seed: u64) -> Self {
        let first = epoch_batches(docs, batch_size, seed, 0);
        EpochBatches { batch_size, seed, per_epoch: first.len(), current: (0, first) }
    }

    /// Steps in one epoch.
    pub fn per_epoch(&self) -> usize {
        self.per_epoch
    }

    /// Step `step`'s batch.
    pub fn at(&mut self, docs: &[TrainDoc], step: usize) -> &Batch {
        let epoch = step / self.per_epoch;
        if self.current.0 != epoch {
            self.current = (epoch, epoch_batches(docs, self.batch_size, self.seed, epoch));
        }
        &self.current.1[step % self.per_epoch]
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
}
