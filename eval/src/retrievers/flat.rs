//! Flat dense retrieval: every leaf unit scored by cosine with the query (embeddings are unit-norm, so a
//! dot product), the top k returned. The baseline every SproutRAG table starts from.

use std::borrow::Cow;

use rayon::prelude::*;

use crate::index::{Chunks, Item, QueryInput, Retriever, top_k};

pub struct FlatDense<'a> {
    pub name: String,
    pub chunks: Cow<'a, Chunks>,
    /// One unit-norm embedding per chunk.
    pub embeddings: Cow<'a, [Vec<f32>]>,
}

/// The dot product, over 8 running sums (independent lanes the compiler turns into SIMD: about 8x the
/// one-sum loop, which waits on every addition), added pairwise, then the tail.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_with(a, b)
}

/// [`dot`] against a vector of any components that widen to `f32` (the 8-bit codes of
/// [`super::prefilter`]).
pub fn dot_with<T: Copy + Into<f32>>(a: &[f32], b: &[T]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, &y)| x * y.into()).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i].into();
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

impl FlatDense<'_> {
    /// How many units the documents `docs` hold.
    pub fn in_scope(&self, docs: &[usize]) -> usize {
        docs.iter().map(|&d| self.chunks.by_doc[d].len()).sum()
    }
}

impl Retriever for FlatDense<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn leaves(&self) -> &Chunks {
        &self.chunks
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let q = query.embedding.as_deref().expect("dense retrieval needs a query embedding");
        // Each document's best k on a thread of its own, then the best k of those: the same k items as
        // one pass (`top_k`'s order is total), on every core.
        let best = query
            .docs
            .par_iter()
            .map(|&d| top_k(self.chunks.by_doc[d].clone().map(|u| (u, dot(q, &self.embeddings[u]))), k))
            .reduce(Vec::new, |a, b| top_k(a.into_iter().chain(b), k));
        best.into_iter().map(|(u, score)| Item::unit(self.chunks.spans[u], score)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::{DocSpan, Span};

    #[test]
    fn dot_matches_the_plain_sum_on_any_length() {
        for n in [0, 1, 7, 8, 9, 384, 385] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            assert!((dot(&a, &b) as f64 - plain).abs() < 1e-4, "n = {n}");
        }
        assert_eq!(dot(&[1.0, 2.0, 3.0], &[4.0, 5.0]), 14.0, "the shorter length");
    }

    #[test]
    fn ranks_units_of_the_query_documents_by_cosine() {
        let ds = |doc, s| DocSpan { doc, span: Span::new(s, s + 1) };
        let chunks = Chunks { spans: vec![ds(0, 0), ds(0, 1), ds(1, 0)], by_doc: vec![0..2, 2..3], headers: Vec::new() };
        let embeddings = vec![vec![1.0, 0.0], vec![0.6, 0.8], vec![0.0, 1.0]];
        let query = QueryInput { text: String::new(), docs: vec![0], embedding: Some(vec![0.0, 1.0]) };
        let flat = FlatDense { name: "flat".into(), chunks: Cow::Borrowed(&chunks), embeddings: Cow::Borrowed(&embeddings) };
        let got: Vec<DocSpan> = flat.retrieve(&query, 5).into_iter().map(|i| i.spans[0]).collect();
        assert_eq!(got, vec![ds(0, 1), ds(0, 0)]);
        let pool = QueryInput { docs: vec![0, 1], ..query };
        assert_eq!(flat.retrieve(&pool, 1)[0].spans[0], ds(1, 0), "a query whose scope is both documents");
    }
}
