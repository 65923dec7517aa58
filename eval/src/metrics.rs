//! The metric contract of DESIGN.md, computed on spans so every method is scored on the same footing.
//!
//! For a query with gold spans G and the top-k items R_k (each a set of spans), characters counted as
//! Unicode scalar values of the document text:
//!
//! ```text
//! precision@k = |chars(R_k) ∩ chars(G)| / |chars(R_k)|
//! recall@k    = |chars(R_k) ∩ chars(G)| / |chars(G)|
//! IE@k        = recall@k × precision@k            (SproutRAG, Table 1; headline = mean of IE@1,3,5)
//! hit@k       = 1 if some item of R_k overlaps G
//! evidence_recall@k = share of gold evidence spans wholly inside chars(R_k)   (SmartChunk's Recall@5)
//! id_precision@k    = |{items of R_k that overlap G}| / k   (the SproutRAG reference code's variant)
//! nDCG@10     = Σ_i rel_i / log2(i + 1) over the top 10 / the ideal, where rel_i = 1 when item i
//!               overlaps a gold span no earlier item overlapped; ideal = min(|G|, 10) such items
//! ```

use arbor_datasets::span::{intersect, merge};
use arbor_datasets::{Corpus, DocSpan};
use serde::{Deserialize, Serialize};

use crate::index::Item;

/// The cut-offs reported for precision, recall, IE, hit and evidence recall.
pub const KS: [usize; 3] = [1, 3, 5];

/// The metrics of one query (fractions in [0, 1]); index `i` of each array is `k = KS[i]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryMetrics {
    pub precision: [f64; 3],
    pub recall: [f64; 3],
    pub ie: [f64; 3],
    pub hit: [f64; 3],
    pub evidence_recall: [f64; 3],
    pub id_precision: [f64; 3],
    pub ndcg10: f64,
}

/// Counts the characters of a span set in the corpus text.
pub fn chars(corpus: &Corpus, spans: &[DocSpan]) -> usize {
    spans.iter().map(|s| corpus.documents[s.doc].text[s.span.start..s.span.end].chars().count()).sum()
}

/// Scores one ranked list against the gold spans.
pub fn score_query(corpus: &Corpus, gold: &[DocSpan], items: &[Item]) -> QueryMetrics {
    let gold_set = merge(gold.to_vec());
    let gold_chars = chars(corpus, &gold_set);
    let overlaps_gold = |item: &Item| item.spans.iter().any(|s| gold_set.iter().any(|g| g.doc == s.doc && g.span.overlaps(&s.span)));
    let mut m = QueryMetrics::default();
    for (i, &k) in KS.iter().enumerate() {
        let top = &items[..k.min(items.len())];
        let retrieved = merge(top.iter().flat_map(|it| it.spans.iter().copied()).collect());
        let retrieved_chars = chars(corpus, &retrieved);
        let common = chars(corpus, &intersect(&retrieved, &gold_set));
        let p = if retrieved_chars > 0 { common as f64 / retrieved_chars as f64 } else { 0.0 };
        let r = if gold_chars > 0 { common as f64 / gold_chars as f64 } else { 0.0 };
        m.precision[i] = p;
        m.recall[i] = r;
        m.ie[i] = p * r;
        m.hit[i] = f64::from(u8::from(top.iter().any(overlaps_gold)));
        let contained = gold.iter().filter(|g| retrieved.iter().any(|r| r.doc == g.doc && r.span.contains(&g.span))).count();
        m.evidence_recall[i] = if gold.is_empty() { 0.0 } else { contained as f64 / gold.len() as f64 };
        m.id_precision[i] = top.iter().filter(|it| overlaps_gold(it)).count() as f64 / k as f64;
    }
    m.ndcg10 = ndcg10(gold, items);
    m
}

fn ndcg10(gold: &[DocSpan], items: &[Item]) -> f64 {
    let mut covered = vec![false; gold.len()];
    let mut dcg = 0.0;
    for (rank, item) in items.iter().take(10).enumerate() {
        let mut new = false;
        for (g, done) in gold.iter().zip(covered.iter_mut()) {
            if !*done && item.spans.iter().any(|s| s.doc == g.doc && s.span.overlaps(&g.span)) {
                *done = true;
                new = true;
            }
        }
        if new {
            dcg += 1.0 / ((rank + 2) as f64).log2();
        }
    }
    let ideal: f64 = (0..gold.len().min(10)).map(|r| 1.0 / ((r + 2) as f64).log2()).sum();
    if ideal > 0.0 { dcg / ideal } else { 0.0 }
}

/// Means over queries, in percent (as the papers print them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub queries: usize,
    pub precision: [f64; 3],
    pub recall: [f64; 3],
    pub ie: [f64; 3],
    /// The headline: mean of IE@1, IE@3, IE@5.
    pub ie_mean: f64,
    pub hit: [f64; 3],
    pub evidence_recall: [f64; 3],
    pub id_precision: [f64; 3],
    pub ndcg10: f64,
}

impl Metrics {
    pub fn mean(per_query: &[QueryMetrics]) -> Self {
        let n = per_query.len().max(1) as f64;
        let avg3 = |f: fn(&QueryMetrics) -> [f64; 3]| {
            let mut out = [0.0; 3];
            for q in per_query {
                for (o, v) in out.iter_mut().zip(f(q)) {
                    *o += 100.0 * v / n;
                }
            }
            out
        };
        let ie = avg3(|q| q.ie);
        Metrics {
            queries: per_query.len(),
            precision: avg3(|q| q.precision),
            recall: avg3(|q| q.recall),
            ie,
            ie_mean: ie.iter().sum::<f64>() / 3.0,
            hit: avg3(|q| q.hit),
            evidence_recall: avg3(|q| q.evidence_recall),
            id_precision: avg3(|q| q.id_precision),
            ndcg10: per_query.iter().map(|q| 100.0 * q.ndcg10 / n).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::{Document, Query, Span};
    use proptest::prelude::*;
    use std::path::Path;

    fn corpus(text: &str) -> Corpus {
        let doc = Document { id: "d".into(), title: String::new(), text: text.into(), sections: vec![], split: None };
        Corpus::new(vec![doc], Vec::<Query>::new(), Path::new("t")).unwrap()
    }

    fn item(spans: &[(usize, usize)]) -> Item {
        Item { spans: spans.iter().map(|&(s, e)| DocSpan { doc: 0, span: Span::new(s, e) }).collect(), score: 0.0 }
    }

    fn ds(s: usize, e: usize) -> DocSpan {
        DocSpan { doc: 0, span: Span::new(s, e) }
    }

    #[test]
    fn hand_checked_precision_recall_and_ie() {
        // 40 characters; gold is 10..20.
        let c = corpus(&"x".repeat(40));
        let gold = [ds(10, 20)];
        // Item 1 holds 5 gold chars of 10 (15..25); item 2 is all gold (10..15); items 3-5 miss.
        let items = vec![item(&[(15, 25)]), item(&[(10, 15)]), item(&[(30, 40)]), item(&[(0, 5)]), item(&[(25, 30)])];
        let m = score_query(&c, &gold, &items);
        assert_eq!(m.precision[0], 0.5);
        assert_eq!(m.recall[0], 0.5);
        assert_eq!(m.ie[0], 0.25);
        // Top 3: 10..25 and 30..40 = 25 chars, 10 of them gold.
        assert_eq!(m.precision[1], 10.0 / 25.0);
        assert_eq!(m.recall[1], 1.0);
        assert_eq!(m.ie[1], 0.4);
        assert_eq!(m.hit, [1.0, 1.0, 1.0]);
        assert_eq!(m.evidence_recall, [0.0, 1.0, 1.0]);
        assert_eq!(m.id_precision, [1.0, 2.0 / 3.0, 2.0 / 5.0]);
        assert_eq!(m.ndcg10, 1.0);
    }

    #[test]
    fn characters_not_bytes_are_counted() {
        // "éé" is 2 characters in 4 bytes; gold is the first "é" only.
        let c = corpus("éé");
        let m = score_query(&c, &[ds(0, 2)], &[item(&[(0, 4)])]);
        assert_eq!(m.precision[0], 0.5);
        assert_eq!(m.recall[0], 1.0);
    }

    #[test]
    fn overlapping_items_are_not_counted_twice_and_ndcg_rewards_new_gold_only() {
        let c = corpus(&"x".repeat(30));
        let gold = [ds(0, 10), ds(20, 30)];
        let items = vec![item(&[(0, 10)]), item(&[(0, 10)]), item(&[(20, 30)])];
        let m = score_query(&c, &gold, &items);
        assert_eq!(m.precision[1], 1.0);
        assert_eq!(m.recall[1], 1.0);
        let want = (1.0 + 1.0 / 4f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!((m.ndcg10 - want).abs() < 1e-12);
        let empty = score_query(&c, &gold, &[]);
        assert_eq!(empty, QueryMetrics { ndcg10: 0.0, ..Default::default() });
    }

    proptest! {
        #[test]
        fn metrics_stay_in_range_and_recall_grows_with_k(
            gold in prop::collection::vec((0usize..50, 1usize..10), 1..4),
            items in prop::collection::vec(prop::collection::vec((0usize..50, 1usize..10), 1..3), 0..8),
        ) {
            let c = corpus(&"y".repeat(60));
            let gold: Vec<DocSpan> = gold.into_iter().map(|(s, l)| ds(s, s + l)).collect();
            let items: Vec<Item> = items.iter().map(|spans| item(&spans.iter().map(|&(s, l)| (s, s + l)).collect::<Vec<_>>())).collect();
            let m = score_query(&c, &gold, &items);
            for i in 0..3 {
                for v in [m.precision[i], m.recall[i], m.ie[i], m.hit[i], m.evidence_recall[i], m.id_precision[i]] {
                    prop_assert!((0.0..=1.0).contains(&v));
                }
                prop_assert!(m.ie[i] <= m.precision[i].min(m.recall[i]) + 1e-12);
            }
            prop_assert!(m.recall[0] <= m.recall[1] && m.recall[1] <= m.recall[2]);
            prop_assert!((0.0..=1.0 + 1e-12).contains(&m.ndcg10));
        }
    }
}
