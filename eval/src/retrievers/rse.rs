//! Relevant Segment Extraction (spRAG / dsRAG, D-Star AI's open-source framework): instead of handing on the top chunks one by one,
//! hand on contiguous runs of chunks whose summed relevance is highest. For one query:
//!
//! ```text
//! rank every chunk in scope by cosine s_c (rank r_c from 0)
//! value(c) = exp(-r_c / decay_rate) · s_c - irrelevant_chunk_penalty
//!            × max(chars(c), 700) / 700            (chunk_length_adjustment)
//! meta-document = the chunks of the documents of the top `top_k_for_document_selection` chunks
//! repeat: the segment [a, b) of the meta-document with the largest Σ value, where
//!         b - a <= max_length, value(a) >= 0, value(b-1) >= 0, no overlap with a chosen segment,
//!         no document boundary inside, total chosen length + (b - a) <= overall_max_length;
//!         stop when there is none or its value < minimum_value
//! ```
//!
//! Segments are handed on in the order chosen (best first). To keep the metric contract (k items, or
//! everything in scope), the chunks outside every segment follow in cosine order.

use std::borrow::Cow;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::index::{Chunks, Item, QueryInput, Retriever, top_k};
use crate::retrievers::flat::dot;
use arbor_datasets::DocSpan;

/// dsRAG's RSE parameters (`RSE_PARAMS_PRESETS`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RseParams {
    pub max_length: usize,
    pub overall_max_length: usize,
    pub minimum_value: f32,
    pub irrelevant_chunk_penalty: f32,
    pub decay_rate: f32,
    pub top_k_for_document_selection: usize,
    pub chunk_length_adjustment: bool,
}

/// dsRAG's presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RsePreset {
    Balanced,
    Precision,
    FindAll,
}

impl RsePreset {
    pub fn params(self) -> RseParams {
        let (max_length, overall_max_length, minimum_value, irrelevant_chunk_penalty, decay_rate, top_k_for_document_selection) = match self {
            RsePreset::Balanced => (15, 30, 0.5, 0.18, 30.0, 10),
            RsePreset::Precision => (15, 30, 0.7, 0.2, 30.0, 10),
            RsePreset::FindAll => (40, 200, 0.4, 0.18, 200.0, 200),
        };
        RseParams {
            max_length,
            overall_max_length,
            minimum_value,
            irrelevant_chunk_penalty,
            decay_rate,
            top_k_for_document_selection,
            chunk_length_adjustment: true,
        }
    }
}

/// The reference length of dsRAG's chunk-length adjustment, in characters.
const REFERENCE_CHARS: f32 = 700.0;

/// A chunk's value from its rank and cosine (see the module doc).
pub fn chunk_value(rank: usize, similarity: f32, chars: usize, p: &RseParams) -> f32 {
    let v = (-(rank as f32) / p.decay_rate).exp() * similarity - p.irrelevant_chunk_penalty;
    if p.chunk_length_adjustment { v * (chars as f32).max(REFERENCE_CHARS) / REFERENCE_CHARS } else { v }
}

/// The best segments of a meta-document of chunk `values` whose documents start at `doc_starts` (see the
/// module doc), best first, with their values.
pub fn best_segments(values: &[f32], doc_starts: &[usize], p: &RseParams) -> Vec<(Range<usize>, f32)> {
    let prefix: Vec<f32> = std::iter::once(0.0)
        .chain(values.iter().scan(0.0, |s, v| {
            {
                let _: () = *s += v;
                Some(())
            }
            .map(|_| *s)
        }))
        .collect();
    let mut chosen: Vec<(Range<usize>, f32)> = Vec::new();
    let mut total = 0;
    loop {
        let mut best: Option<(Range<usize>, f32)> = None;
        for a in (0..values.len()).filter(|&a| values[a] >= 0.0) {
            for b in a + 1..=(a + p.max_length).min(values.len()) {
                let blocked = chosen.iter().any(|(s, _)| a < s.end && b > s.start) || doc_starts.iter().any(|&d| a < d && d < b);
                if blocked {
                    break;
                }
                if values[b - 1] < 0.0 || total + b - a > p.overall_max_length {
                    continue;
                }
                let v = prefix[b] - prefix[a];
                if best.as_ref().is_none_or(|(_, bv)| v > *bv) {
                    best = Some((a..b, v));
                }
            }
        }
        match best {
            Some((range, v)) if v >= p.minimum_value => {
                total += range.len();
                chosen.push((range, v));
            }
            _ => return chosen,
        }
    }
}

/// RSE over dense chunk embeddings.
pub struct Rse<'a> {
    pub name: String,
    pub chunks: Cow<'a, Chunks>,
    pub embeddings: Cow<'a, [Vec<f32>]>,
    /// Each chunk's length in characters.
    pub chars: Vec<usize>,
    pub params: RseParams,
}

impl Retriever for Rse<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn leaves(&self) -> &Chunks {
        &self.chunks
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let q = query.embedding.as_deref().expect("RSE needs a query embedding");
        let scores = self.chunks.candidates(query).map(|c| (c, dot(q, &self.embeddings[c])));
        let ranked = top_k(scores, usize::MAX);
        let mut docs: Vec<usize> = ranked.iter().take(self.params.top_k_for_document_selection).map(|&(c, _)| self.chunks.spans[c].doc).collect();
        docs.sort_unstable();
        docs.dedup();
        // The meta-document: the selected documents' chunks, in corpus order.
        let meta: Vec<usize> = docs.iter().flat_map(|&d| self.chunks.by_doc[d].clone()).collect();
        let doc_starts: Vec<usize> = docs.iter().scan(0, |at, &d| Some(std::mem::replace(at, *at + self.chunks.by_doc[d].len()))).collect();
        let mut values = vec![0.0; self.chunks.len()];
        let mut unranked = vec![true; self.chunks.len()];
        for (rank, &(c, sim)) in ranked.iter().enumerate() {
            values[c] = chunk_value(rank, sim, self.chars[c], &self.params);
            unranked[c] = false;
        }
        let meta_values: Vec<f32> = meta.iter().map(|&c| if unranked[c] { -self.params.irrelevant_chunk_penalty } else { values[c] }).collect();
        let mut in_segment = vec![false; self.chunks.len()];
        let mut items: Vec<Item> = Vec::new();
        for (range, value) in best_segments(&meta_values, &doc_starts, &self.params) {
            let (first, last) = (self.chunks.spans[meta[range.start]], self.chunks.spans[meta[range.end - 1]]);
            meta[range].iter().for_each(|&c| in_segment[c] = true);
            items.push(Item { spans: vec![DocSpan { doc: first.doc, span: first.span.cover(&last.span) }], score: value, node: None });
        }
        items.truncate(k);
        let rest = ranked.into_iter().filter(|&(c, _)| !in_segment[c]).map(|(c, s)| Item::unit(self.chunks.spans[c], s));
        items.extend(rest.take(k.saturating_sub(items.len())));
        items
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::Span;

    fn params(max_length: usize, overall_max_length: usize, minimum_value: f32) -> RseParams {
        RseParams {
            max_length,
            overall_max_length,
            minimum_value,
            irrelevant_chunk_penalty: 0.2,
            decay_rate: 30.0,
            top_k_for_document_selection: 10,
            chunk_length_adjustment: false,
        }
    }

    #[test]
    fn the_best_segment_bridges_a_weak_chunk_between_strong_ones() {
        // 0.5 + (-0.1) + 0.6 = 1.0 beats 0.6 alone and the run to the end (0.95); negative ends are left out.
        let values = [-0.2, 0.5, -0.1, 0.6, -0.2, 0.15];
        let got = best_segments(&values, &[0], &params(15, 30, 0.1));
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, 1..4);
        assert!((got[0].1 - 1.0).abs() < 1e-6);
        assert_eq!(got[1].0, 5..6);
        // A minimum value of 0.5 stops after the first; a max length of 1 takes single chunks.
        assert_eq!(best_segments(&values, &[0], &params(15, 30, 0.5)).len(), 1);
        let single: Vec<Range<usize>> = best_segments(&values, &[0], &params(1, 30, 0.1)).into_iter().map(|s| s.0).collect();
        assert_eq!(single, vec![3..4, 1..2, 5..6]);
        // The overall length caps the total: after 3 chunks, a fourth does not fit 3.
        let capped: Vec<Range<usize>> = best_segments(&values, &[0], &params(15, 3, 0.1)).into_iter().map(|s| s.0).collect();
        assert_eq!(capped, vec![1..4]);
    }

    #[test]
    fn segments_never_cross_a_document_boundary() {
        // Documents start at 0 and 2: the run 1..4 would be best, but it crosses 2.
        let values = [-0.2, 0.5, 0.5, 0.4];
        let got: Vec<Range<usize>> = best_segments(&values, &[0, 2], &params(15, 30, 0.2)).into_iter().map(|s| s.0).collect();
        assert_eq!(got, vec![2..4, 1..2]);
    }

    #[test]
    fn values_decay_with_rank_and_scale_with_length() {
        let p = RseParams { chunk_length_adjustment: true, ..params(15, 30, 0.5) };
        assert!((chunk_value(0, 0.8, 100, &p) - 0.6).abs() < 1e-6);
        assert!((chunk_value(30, 0.8, 100, &p) - (0.8 / std::f32::consts::E - 0.2)).abs() < 1e-6);
        assert!((chunk_value(0, 0.8, 1400, &p) - 1.2).abs() < 1e-6, "twice the reference length, twice the value");
    }

    #[test]
    fn retrieval_hands_on_segments_then_the_other_chunks() {
        // Two documents of three chunks; the query matches chunks 1 and 2 of document 0.
        let ds = |doc: usize, i: usize| DocSpan { doc, span: Span::new(10 * i, 10 * i + 5) };
        let chunks =
            Chunks { spans: vec![ds(0, 0), ds(0, 1), ds(0, 2), ds(1, 0), ds(1, 1), ds(1, 2)], by_doc: vec![0..3, 3..6], headers: Vec::new() };
        let e = |x: f32| vec![x, (1.0 - x * x).sqrt()];
        let embeddings = vec![e(0.1), e(0.9), e(0.95), e(0.2), e(0.3), e(0.1)];
        let rse = Rse {
            name: "rse".into(),
            chunks: Cow::Borrowed(&chunks),
            embeddings: Cow::Borrowed(&embeddings),
            chars: vec![5; 6],
            params: params(15, 30, 0.5),
        };
        // Both documents in scope (corpus scope).
        let query = QueryInput { text: String::new(), docs: vec![0, 1], embedding: Some(vec![1.0, 0.0]) };
        let items = rse.retrieve(&query, 3);
        assert_eq!(items[0].spans, vec![DocSpan { doc: 0, span: Span::new(10, 25) }], "chunks 1 and 2 as one segment");
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].spans, vec![ds(1, 1)], "then the best chunk outside it");
    }
}
