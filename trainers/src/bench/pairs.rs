//! The field's large-batch fine-tuning step (issue 65), timed: hundreds of questions across documents, each
//! against every passage of the batch and the batch's mined negatives (sentence-transformers'
//! MultipleNegativesRankingLoss; L_ret, InfoNCE of SproutRAG Section 4.1, at tau), embedded a chunk at a
//! time by GradCache (Gao et al., 2021; CachedMultipleNegativesRankingLoss) in `training.precision`.
//!
//! The step is the dense trainer's own corpus-wide step (`dense::corpus_task`, [`crate::dense`]) on passages: each
//! question's positive unit and the units after it, to `max_pieces` word pieces (256, the encoder's
//! `max_seq_length`, as the field trains), one passage a question, passages of a document never
//! overlapping. [`FixedPairs`] is step 0's batch written out so that PyTorch runs the same step.

use anyhow::Context as _;
use arbor_datasets::{Corpus, DocSpan, Span};
use arbor_models::bert::cpu::mean_normalise;
use arbor_models::dense::DenseModel;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::ElementConversion;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use super::{StepTiming, measure};
use crate::config::TrainConfig;
use crate::data::{TrainDoc, TrainQuery};
use crate::encoder::{FineTune, StepEncoder};
use crate::skeleton::{Group, step_gradients};

/// One large-batch step's inputs as another framework needs them: the encoder reads `queries` and
/// `passages` (token ids; GradCache pads each chunk to its longest, the plain step each side to its
/// longest); the loss is InfoNCE of query i against every passage, its target `targets[i]`, the pairs
/// `excluded` out of its denominator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixedPairs {
    pub queries: Vec<Vec<u32>>,
    /// The batch's positive passages in query order, then its mined negatives.
    pub passages: Vec<Vec<u32>>,
    pub targets: Vec<usize>,
    /// (query, passage) pairs out of the loss's denominator: a passage other than the query's own that
    /// overlaps its gold (the trainer's false negatives).
    pub excluded: Vec<(usize, usize)>,
    /// GradCache's chunk: rows embedded at a time (`training.grad_cache`); `None`: one pass a side.
    pub chunk: Option<usize>,
}

impl FixedPairs {
    /// Word pieces the encoder reads with gradients, padding not counted.
    pub fn tokens(&self) -> usize {
        self.queries.iter().chain(&self.passages).map(Vec::len).sum()
    }
}

/// The training documents as passages: for at most `questions` questions (documents and questions in
/// order), the question's positive unit and the units after it while the passage holds at most
/// `max_pieces` word pieces (a longer unit alone is cut there, its last piece kept: `[SEP]`); a question
/// whose passage would overlap one already taken in its document is skipped. Each document keeps its
/// passages as its units (spans from the first unit's start to the last one's end, vectors the units'
/// normalised mean) and its questions with those passages as their positives; documents left with no
/// passage are dropped.
pub fn passage_docs(docs: &[TrainDoc], questions: usize, max_pieces: usize) -> Vec<TrainDoc> {
    let mut out = Vec::new();
    let mut taken = 0;
    for doc in docs {
        let mut passages: Vec<(usize, usize)> = Vec::new(); // unit ranges [start, end)
        let mut queries = Vec::new();
        for q in &doc.queries {
            if taken == questions {
                break;
            }
            let start = q.positive;
            let mut end = start + 1;
            let mut pieces = doc.ids[start].len();
            while end < doc.units.len() && pieces + doc.ids[end].len() - 2 <= max_pieces {
                pieces += doc.ids[end].len() - 2;
                end += 1;
            }
            if passages.iter().any(|&(a, b)| start < b && a < end) {
                continue;
            }
            passages.push((start, end));
            queries.push(TrainQuery { positive: passages.len() - 1, ..q.clone() });
            taken += 1;
        }
        if passages.is_empty() {
            continue;
        }
        let unit = |&(a, b): &(usize, usize)| DocSpan { doc: doc.units[a].doc, span: Span::new(doc.units[a].span.start, doc.units[b - 1].span.end) };
        out.push(TrainDoc {
            units: passages.iter().map(unit).collect(),
            pooled: passages.iter().map(|&(a, b)| mean_direction(&doc.pooled[a..b])).collect(),
            ids: passages.iter().map(|&(a, b)| pieces_of(&doc.ids[a..b], max_pieces)).collect(),
            pairs: Vec::new(),
            tokens: Vec::new(),
            queries,
        });
    }
    out
}

/// Units' token ids read as one passage: the first unit's `[CLS]`, every unit's inner pieces, the last
/// piece (`[SEP]`), cut to `max_pieces` keeping that last piece.
fn pieces_of(units: &[Vec<u32>], max_pieces: usize) -> Vec<u32> {
    let (first, last) = (units[0][0], *units[0].last().expect("a unit has its special tokens"));
    let inner = units.iter().flat_map(|u| &u[1..u.len() - 1]).copied();
    let mut ids: Vec<u32> = std::iter::once(first).chain(inner.take(max_pieces.saturating_sub(2))).collect();
    ids.push(last);
    ids
}

/// The L2-normalised mean of vectors of equal width (as sentence-transformers pools token states).
fn mean_direction(rows: &[Vec<f32>]) -> Vec<f32> {
    let mut sum = vec![0.0f32; rows.first().map_or(0, Vec::len)];
    for row in rows {
        sum.iter_mut().zip(row).for_each(|(m, x)| *m += x);
    }
    mean_normalise(&mut sum, rows.len());
    sum
}

/// Times `steps` steps (after one warm-up) of the dense trainer's corpus-wide step on `docs` (passages:
/// [`passage_docs`]) under `config` (`negatives: Corpus(..)`, the encoder fine-tuned; GradCache with
/// `grad_cache`), from the pretrained `tune`, each on step 0's batch of `config.batch_size` questions;
/// returns the timing and that batch.
pub fn time_pairs_steps<B: AutodiffBackend>(
    config: &TrainConfig,
    corpus: &Corpus,
    tune: &FineTune<B>,
    docs: &[TrainDoc],
    steps: usize,
) -> anyhow::Result<(StepTiming, FixedPairs)> {
    anyhow::ensure!(!config.freeze_encoder, "the large-batch step fine-tunes the encoder: training.freeze_encoder must be false");
    let device = Default::default();
    let encoder = StepEncoder::of(tune, config)?;
    let (mut task, batch) = crate::dense::corpus_task(config, corpus, docs, encoder).context("the large-batch step")?;
    let ids = |(d, u): (usize, usize)| docs[d].ids[u].clone();
    let pairs = FixedPairs {
        queries: batch.questions(docs).iter().map(|q| q.ids.clone()).collect(),
        passages: batch.candidates.iter().map(|&r| ids(r)).collect(),
        targets: batch.targets.clone(),
        excluded: batch.excluded.clone(),
        chunk: config.grad_cache,
    };
    let dim = tune.bert.embeddings.word_embeddings.weight.dims()[1];
    let mut optim = crate::adamw::init(&config.schedule);
    let mut model = Some(DenseModel::new(dim, Some(tune.bert.clone()), &device));
    let timing = measure::<B>(steps, &device, |first| {
        let now = model.take().expect("each step puts the model back");
        let encoder = Group { name: "encoder", lr: config.lr_encoder, params: |grads, model| GradientsParams::from_module(grads, model) };
        let (mut done, grads) = step_gradients(&mut task, &now, 0, &[encoder])?;
        let (loss, grads) = (done.terms.remove(0).1, grads.context("the large-batch step has no loss term")?.remove(0));
        let value = first.then(|| loss.into_scalar().elem::<f32>());
        model = Some(optim.step(config.lr_encoder, now, grads));
        Ok(value)
    })?;
    Ok((timing, pairs))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use arbor_datasets::Document;
    use arbor_models::DefaultBackend;
    use burn::backend::Autodiff;

    use super::*;
    use crate::negatives::{CorpusNegatives, Mine, Negatives};

    /// `n` documents of six units of 3 to 6 word pieces (`[CLS]` 1, `[SEP]` 2, pieces from 3 up), unit k
    /// spanning characters 10k..10k+9; questions ask for units 0, 2 and 3.
    fn docs(n: usize) -> (Corpus, Vec<TrainDoc>) {
        let text = "x".repeat(60);
        let documents = (0..n).map(|i| Document { id: format!("d{i}"), title: String::new(), text: text.clone(), sections: vec![], split: None });
        let corpus = Corpus::new(documents.collect(), vec![], Path::new("t")).unwrap();
        let doc = |d: usize| {
            let units: Vec<DocSpan> = (0..6).map(|k| DocSpan { doc: d, span: Span::new(10 * k, 10 * k + 9) }).collect();
            let ids: Vec<Vec<u32>> = (0..6)
                .map(|k| [1].into_iter().chain((0..1 + (d + k) % 4).map(|t| 3 + ((d * 7 + k * 5 + t) % 290) as u32)).chain([2]).collect())
                .collect();
            let query = |k: usize| TrainQuery {
                text: format!("q{k}"),
                pooled: vec![0.0; 4],
                ids: ids[(k + 1) % 6].clone(),
                positive: k,
                gold: vec![units[k]],
            };
            let queries = [0, 2, 3].into_iter().map(query).collect();
            let pooled = (0..6).map(|k| (0..4).map(|i| if i == k % 4 { 1.0 } else { 0.0 }).collect()).collect();
            TrainDoc { units, pooled, ids, pairs: vec![], tokens: vec![], queries }
        };
        (corpus, (0..n).map(doc).collect())
    }

    /// Passages hand-checked at 8 pieces. Document 0's units hold 1, 2, 3, 4, 1, 2 inner pieces: question
    /// 0's passage is units 0-2 (1 + 1 + 2 + 3 + 1 = 8 pieces; unit 3 would make 12), so question 2 (unit
    /// 2) overlaps it and is skipped; question 3's is units 3-4 (1 + 4 + 1 + 1 = 7; unit 5 would make 9).
    /// Document 1 gives two more (questions 0 and 2), reaching the four asked for.
    #[test]
    fn passages_are_a_questions_unit_and_the_units_after_it_to_the_limit() {
        let (_, docs) = docs(2);
        let inner = |u: usize| docs[0].ids[u].len() - 2;
        assert_eq!((0..6).map(inner).collect::<Vec<_>>(), vec![1, 2, 3, 4, 1, 2]);
        let passages = passage_docs(&docs, 4, 8);
        let d0 = &passages[0];
        assert_eq!(d0.ids[0], [&[1u32][..], &docs[0].ids[0][1..2], &docs[0].ids[1][1..3], &docs[0].ids[2][1..4], &[2]].concat());
        assert_eq!(d0.ids[1].len(), 7);
        assert_eq!(d0.units, vec![DocSpan { doc: 0, span: Span::new(0, 29) }, DocSpan { doc: 0, span: Span::new(30, 49) }]);
        assert_eq!(d0.queries.iter().map(|q| (q.text.as_str(), q.positive)).collect::<Vec<_>>(), vec![("q0", 0), ("q3", 1)]);
        assert_eq!(passages[1].queries.iter().map(|q| q.text.as_str()).collect::<Vec<_>>(), vec!["q0", "q2"]);
        assert_eq!(passages.len(), 2);
        // A unit longer than the limit (document 1's unit 0: 2 inner pieces) is cut, its [SEP] kept.
        let cut = passage_docs(&docs[1..], 1, 3);
        assert_eq!(cut[0].ids[0], vec![1, docs[1].ids[0][1], 2]);
        assert!(passage_docs(&docs, 0, 8).is_empty());
    }

    /// The large-batch step is the trainer's: 12 questions across four documents (a small random BERT),
    /// each with a mined negative (another question's passage); its first loss is the same cached in chunks of 5 and plain, and the
    /// batch written out names every question once, each target its own passage.
    #[test]
    fn the_large_batch_step_cached_or_plain_has_the_same_first_loss() {
        let (corpus, docs) = docs(4);
        let passages = passage_docs(&docs, 12, 8);
        let tune = crate::fixtures::tiny::<Autodiff<DefaultBackend>>();
        let how = CorpusNegatives { mine: Mine::Random, per_query: 1, skip: 0, top: 10, margin: None };
        let config = |grad_cache| TrainConfig {
            batch_size: 12,
            freeze_encoder: false,
            negatives: Negatives::Corpus(how.clone()),
            grad_cache,
            ..TrainConfig::default()
        };
        let (plain, batch) = time_pairs_steps(&config(None), &corpus, &tune, &passages, 1).unwrap();
        let (cached, cached_batch) = time_pairs_steps(&config(Some(5)), &corpus, &tune, &passages, 1).unwrap();
        assert!((plain.first_loss - cached.first_loss).abs() < 1e-5, "{} against {}", plain.first_loss, cached.first_loss);
        assert_eq!((batch.chunk, cached_batch.chunk), (None, Some(5)));
        assert_eq!(batch.queries.len(), passages.iter().map(|d| d.queries.len()).sum::<usize>());
        // Every passage is some question's: the mined negatives are in the batch already.
        assert_eq!(batch.passages.len(), batch.queries.len());
        assert_eq!(batch.targets, (0..batch.queries.len()).collect::<Vec<_>>(), "each question's passage is its own");
        let refused = time_pairs_steps(&TrainConfig { negatives: Negatives::InDocument, ..config(None) }, &corpus, &tune, &passages, 1);
        assert!(refused.unwrap_err().chain().any(|e| e.to_string().contains("Corpus(..)")));
    }
}
