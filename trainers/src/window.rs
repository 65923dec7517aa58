//! The sampled training step: which units of a document a fine-tuning step runs the encoder over.
//!
//! The whole-document step encodes every unit of the batch's document with gradients (about 11 s a step
//! on legalbench with 2 cores). InfoNCE at tau = 0.05 is carried by the few negatives nearest each query:
//! a unit whose cosine is 0.2 below the positive's weighs e^-4 = 2 % of it in the denominator. So a step
//! keeps every positive of the batch, then the document's other units in decreasing order of their frozen
//! cosine to the nearest query of the batch (the pooled vectors computed once before training), each
//! one whose word pieces still fit in `training.step_tokens`. When the budget holds the whole document the window
//! is the document and the loss is the whole-document step's exactly (a test checks it); a smaller budget
//! drops only the negatives that weigh least.

use crate::data::{TrainDoc, TrainQuery};

/// The units of `doc` a step over `queries` encodes, in document order: every positive, then the other
/// units from the nearest to the queries by frozen cosine, each whose tokens (`doc.ids`) still fit in
/// `budget` (positives count against it but are always kept); every unit when `budget` is `None`.
pub fn window(doc: &TrainDoc, queries: &[&TrainQuery], budget: Option<usize>) -> Vec<usize> {
    let n = doc.units.len();
    let Some(budget) = budget else { return (0..n).collect() };
    let tokens = |u: usize| doc.ids.get(u).map_or(1, Vec::len);
    let mut keep = vec![false; n];
    let mut used = 0;
    for q in queries {
        if !keep[q.positive] {
            keep[q.positive] = true;
            used += tokens(q.positive);
        }
    }
    let nearest = |u: usize| queries.iter().map(|q| dot(&q.pooled, &doc.pooled[u])).fold(f32::NEG_INFINITY, f32::max);
    let mut others: Vec<(usize, f32)> = (0..n).filter(|&u| !keep[u]).map(|u| (u, nearest(u))).collect();
    others.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    for (u, _) in others {
        if used + tokens(u) <= budget {
            keep[u] = true;
            used += tokens(u);
        }
    }
    (0..n).filter(|&u| keep[u]).collect()
}

/// The dot product, one running sum (what the window's order and negative mining's scores are computed with).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use arbor_datasets::{DocSpan, Span};

    use super::*;

    fn doc() -> TrainDoc {
        // Five units of 3, 5, 2, 4 and 6 tokens, along the axes e0..e4 (unit 4 along e0 + e1).
        let pooled =
            vec![vec![1.0, 0.0, 0.0, 0.0], vec![0.0, 1.0, 0.0, 0.0], vec![0.0, 0.0, 1.0, 0.0], vec![0.0, 0.0, 0.0, 1.0], vec![0.6, 0.8, 0.0, 0.0]];
        TrainDoc {
            units: (0..5).map(|i| DocSpan { doc: 0, span: Span::new(i, i + 1) }).collect(),
            pooled,
            ids: [3, 5, 2, 4, 6].iter().map(|&t| vec![7; t]).collect(),
            pairs: vec![],
            tokens: vec![],
            queries: vec![],
        }
    }

    fn query(pooled: Vec<f32>, positive: usize) -> TrainQuery {
        TrainQuery { text: String::new(), pooled, ids: vec![], positive, gold: vec![] }
    }

    #[test]
    fn positives_first_then_the_nearest_negatives_that_fit() {
        let d = doc();
        // Asks for unit 0 along e0 + 0.5 e2: nearest others are unit 4 (0.6), then unit 2 (0.5), then 1 and 3 (0).
        let q = query(vec![1.0, 0.0, 0.5, 0.0], 0);
        assert_eq!(window(&d, &[&q], None), vec![0, 1, 2, 3, 4], "no budget: the whole document");
        assert_eq!(window(&d, &[&q], Some(20)), vec![0, 1, 2, 3, 4], "20 tokens hold all 20");
        // 3 (unit 0) + 6 (unit 4) = 9; unit 2 (2 more) fits in 11; units 1 and 3 (5, 4) do not.
        assert_eq!(window(&d, &[&q], Some(11)), vec![0, 2, 4]);
        // 9 tokens: unit 4 fits, unit 2 does not; 8: unit 4 does not, unit 2 (then 5 tokens) does, unit 3 not.
        assert_eq!(window(&d, &[&q], Some(9)), vec![0, 4]);
        assert_eq!(window(&d, &[&q], Some(8)), vec![0, 2]);
        // A positive is kept even past the budget.
        assert_eq!(window(&d, &[&q], Some(1)), vec![0]);
    }

    #[test]
    fn every_positive_of_the_batch_is_in_and_a_negative_counts_once() {
        let d = doc();
        let (a, b) = (query(vec![0.0, 0.0, 0.0, 1.0], 3), query(vec![0.0, 1.0, 0.0, 0.0], 1));
        // Positives 3 and 1: 9 tokens; unit 4 is nearest to b (0.8): 15 tokens; then 0 and 2 (0 both): 0 first.
        assert_eq!(window(&d, &[&a, &b], Some(15)), vec![1, 3, 4]);
        assert_eq!(window(&d, &[&a, &b], Some(18)), vec![0, 1, 3, 4]);
    }
}
