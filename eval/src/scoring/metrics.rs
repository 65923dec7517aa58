//! The metric contract of ARCHITECTURE.md, computed on spans so every method is scored on the same footing.
//!
//! For a query with gold spans G and the top-k items R_k (each a set of spans), characters counted as
//! Unicode scalar values of the document text:
//!
//! ```text
//! precision@k = |chars(R_k) ∩ chars(G)| / |chars(R_k)|
//! recall@k    = |chars(R_k) ∩ chars(G)| / |chars(G)|
//! IE@k        = recall@k × precision@k            (SproutRAG, Table 1; headline = mean of IE@1,3,5)
//! IoU@k       = |chars(R_k) ∩ chars(G)| / |chars(R_k) ∪ chars(G)|      (Chroma's chunking evaluation)
//! hit@k       = 1 if some item of R_k overlaps G
//! evidence_recall@k = share of gold evidence spans wholly inside chars(R_k)   (SmartChunk's Recall@5)
//! nDCG@10     = Σ_i rel_i / log2(i + 1) over the top 10 / the ideal, where rel_i = 1 when item i
//!               overlaps a gold span no earlier item overlapped; ideal = min(|G|, 10) such items
//! doc hit@k   = 1 if one of the first k distinct documents of the ranking (in the order their first
//!               item appears) holds gold (k = 1, 5): LegalBench-RAG's "right contract" under corpus scope
//! ```
//!
//! Beside the character reading, the SproutRAG reference code's id-based reading
//! (`sproutrag/evaluation/retrieval_metrics.py`: recall = hits / |relevant ids|, precision = hits / k,
//! IE = recall × precision, on the distinct retrieved ids), in two forms, because its relevant ids are
//! given by the user and the paper does not say whether a merged node overlapping gold is one:
//!
//! ```text
//! generous: a hit is an item of R_k overlapping G;      recall = |{g in G : some item of R_k overlaps g}| / |G|
//! strict:   a hit is an item of R_k that is itself a gold leaf unit (a leaf unit overlapping G);
//!           recall = |hits| / |gold leaf units|
//! precision = |hits| / k  in both; R_k = the first k distinct items
//! ```
//!
//! Neither id reading sees how large an item is: a whole-document node overlapping gold is a generous hit.

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
    pub iou: [f64; 3],
    pub hit: [f64; 3],
    pub evidence_recall: [f64; 3],
    /// The reference code's reading, an overlapping item being a hit.
    pub generous: IdReading,
    /// The reference code's reading, only a gold leaf unit being a hit.
    pub strict: IdReading,
    pub ndcg10: f64,
    /// [`DOC_KS`]: a gold document among the first 1 and 5 distinct documents ranked.
    #[serde(default)]
    pub doc_hit: [f64; 2],
}

/// The cut-offs of the document-level hit rate.
pub const DOC_KS: [usize; 2] = [1, 5];

/// Id-based precision, recall and IE at each k of [`KS`], and the mean IE (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdReading {
    pub precision: [f64; 3],
    pub recall: [f64; 3],
    pub ie: [f64; 3],
    pub ie_mean: f64,
}

impl IdReading {
    /// `hits(k)` = (hits among the first k distinct items, recall at k).
    fn of(hits: impl Fn(usize) -> (usize, f64)) -> Self {
        let mut r = IdReading::default();
        for (i, &k) in KS.iter().enumerate() {
            let (h, recall) = hits(k);
            r.precision[i] = h as f64 / k as f64;
            r.recall[i] = recall;
            r.ie[i] = r.precision[i] * recall;
        }
        r.ie_mean = r.ie.iter().sum::<f64>() / KS.len() as f64;
        r
    }

    fn mean(all: impl Iterator<Item = IdReading>, n: f64) -> Self {
        let mut out = IdReading::default();
        for r in all {
            for i in 0..KS.len() {
                out.precision[i] += 100.0 * r.precision[i] / n;
                out.recall[i] += 100.0 * r.recall[i] / n;
                out.ie[i] += 100.0 * r.ie[i] / n;
            }
            out.ie_mean += 100.0 * r.ie_mean / n;
        }
        out
    }
}

/// Counts the characters of a span set in the corpus text.
pub fn chars(corpus: &Corpus, spans: &[DocSpan]) -> usize {
    spans.iter().map(|s| corpus.documents[s.doc].text[s.span.start..s.span.end].chars().count()).sum()
}

/// Scores one ranked list against the gold spans; `gold_units` are the leaf units overlapping them.
pub fn score_query(corpus: &Corpus, gold: &[DocSpan], gold_units: &[DocSpan], items: &[Item]) -> QueryMetrics {
    let gold_set = merge(gold.to_vec());
    let gold_chars = chars(corpus, &gold_set);
    let overlaps_gold = |item: &Item| item.spans.iter().any(|s| gold_set.iter().any(|g| g.overlaps(s)));
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
        m.iou[i] = ratio(common, retrieved_chars + gold_chars - common);
        m.hit[i] = f64::from(u8::from(top.iter().any(overlaps_gold)));
        let contained = gold.iter().filter(|g| retrieved.iter().any(|r| r.contains(g))).count();
        m.evidence_recall[i] = if gold.is_empty() { 0.0 } else { contained as f64 / gold.len() as f64 };
    }
    let mut distinct: Vec<&Item> = Vec::with_capacity(items.len());
    for item in items {
        if !distinct.iter().any(|d| d.spans == item.spans) {
            distinct.push(item);
        }
    }
    let first = |k: usize| &distinct[..k.min(distinct.len())];
    m.generous = IdReading::of(|k| {
        let top = first(k);
        let found = gold.iter().filter(|g| top.iter().any(|it| it.spans.iter().any(|s| s.doc == g.doc && s.span.overlaps(&g.span)))).count();
        (top.iter().filter(|it| overlaps_gold(it)).count(), ratio(found, gold.len()))
    });
    m.strict = IdReading::of(|k| {
        let hits = first(k).iter().filter(|it| it.spans.len() == 1 && gold_units.contains(&it.spans[0])).count();
        (hits, ratio(hits, gold_units.len()))
    });
    m.ndcg10 = ndcg10(gold, items);
    m.doc_hit = doc_hits(gold, items);
    m
}

/// Whether a gold document is among the first k distinct documents of the ranking, for each k of [`DOC_KS`].
fn doc_hits(gold: &[DocSpan], items: &[Item]) -> [f64; 2] {
    let mut docs: Vec<usize> = Vec::new();
    for d in items.iter().flat_map(|i| i.spans.iter().map(|s| s.doc)) {
        if !docs.contains(&d) {
            docs.push(d);
        }
    }
    DOC_KS.map(|k| f64::from(u8::from(docs.iter().take(k).any(|d| gold.iter().any(|g| g.doc == *d)))))
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
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
    /// Absent from reports written before it was measured.
    #[serde(default)]
    pub iou: [f64; 3],
    pub hit: [f64; 3],
    pub evidence_recall: [f64; 3],
    pub generous: IdReading,
    pub strict: IdReading,
    pub ndcg10: f64,
    /// Document hit rate at 1 and 5 ([`DOC_KS`]); absent from reports written before it was measured.
    #[serde(default)]
    pub doc_hit: [f64; 2],
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
            iou: avg3(|q| q.iou),
            hit: avg3(|q| q.hit),
            evidence_recall: avg3(|q| q.evidence_recall),
            generous: IdReading::mean(per_query.iter().map(|q| q.generous.clone()), n),
            strict: IdReading::mean(per_query.iter().map(|q| q.strict.clone()), n),
            ndcg10: per_query.iter().map(|q| 100.0 * q.ndcg10 / n).sum(),
            doc_hit: [0, 1].map(|i| per_query.iter().map(|q| 100.0 * q.doc_hit[i] / n).sum()),
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
        Item { spans: spans.iter().map(|&(s, e)| DocSpan { doc: 0, span: Span::new(s, e) }).collect(), score: 0.0, node: None }
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
        let m = score_query(&c, &gold, &[], &items);
        assert_eq!(m.precision[0], 0.5);
        assert_eq!(m.recall[0], 0.5);
        assert_eq!(m.ie[0], 0.25);
        // Top 3: 10..25 and 30..40 = 25 chars, 10 of them gold.
        assert_eq!(m.precision[1], 10.0 / 25.0);
        assert_eq!(m.recall[1], 1.0);
        assert_eq!(m.ie[1], 0.4);
        // IoU@1: 5 common of 15..25 ∪ 10..20 = 15 characters; IoU@3: 10 of 25.
        assert_eq!(m.iou[0], 5.0 / 15.0);
        assert_eq!(m.iou[1], 10.0 / 25.0);
        assert_eq!(m.hit, [1.0, 1.0, 1.0]);
        assert_eq!(m.evidence_recall, [0.0, 1.0, 1.0]);
        assert_eq!(m.generous.precision, [1.0, 2.0 / 3.0, 2.0 / 5.0]);
        assert_eq!(m.generous.recall, [1.0, 1.0, 1.0]);
        assert_eq!(m.ndcg10, 1.0);
    }

    #[test]
    fn hand_checked_id_readings() {
        // Units 0..10, 10..20, 20..30, 30..40; gold = 12..15 and 32..35, so the gold units are 10..20, 30..40.
        let c = corpus(&"x".repeat(40));
        let gold = [ds(12, 15), ds(32, 35)];
        let gold_units = [ds(10, 20), ds(30, 40)];
        // A merged node over the first three units, the gold unit 30..40, a miss, the same node again.
        let items = vec![item(&[(0, 30)]), item(&[(30, 40)]), item(&[(0, 10)]), item(&[(0, 30)]), item(&[(20, 30)])];
        let m = score_query(&c, &gold, &gold_units, &items);
        // Generous: the node overlaps gold span 1 (a hit), the unit overlaps gold span 2.
        assert_eq!(m.generous.precision, [1.0, 2.0 / 3.0, 2.0 / 5.0]);
        assert_eq!(m.generous.recall, [0.5, 1.0, 1.0]);
        assert_eq!(m.generous.ie, [0.5, 2.0 / 3.0, 2.0 / 5.0]);
        // Strict: only the unit 30..40 is a gold leaf unit. The repeated node counts once, so the top 5
        // distinct items are the four distinct ones.
        assert_eq!(m.strict.precision, [0.0, 1.0 / 3.0, 1.0 / 5.0]);
        assert_eq!(m.strict.recall, [0.0, 0.5, 0.5]);
        assert!((m.strict.ie_mean - (0.0 + 1.0 / 6.0 + 1.0 / 10.0) / 3.0).abs() < 1e-12);
    }

    #[test]
    fn document_hits_read_the_documents_in_the_order_they_are_first_ranked() {
        let text = "x".repeat(20);
        let doc = |id: &str| Document { id: id.into(), title: String::new(), text: text.clone(), sections: vec![], split: None };
        let c = Corpus::new((0..7).map(|i| doc(&format!("d{i}"))).collect(), Vec::<Query>::new(), Path::new("t")).unwrap();
        let at = |d: usize| Item::unit(DocSpan { doc: d, span: Span::new(0, 5) }, 0.0);
        let gold = [DocSpan { doc: 5, span: Span::new(0, 3) }];
        // Documents ranked 2, 2, 3, 1, 4, 5: the gold document is the fifth distinct one.
        let items: Vec<Item> = [2, 2, 3, 1, 4, 5].map(at).to_vec();
        assert_eq!(score_query(&c, &gold, &[], &items).doc_hit, [0.0, 1.0]);
        assert_eq!(score_query(&c, &gold, &[], &[at(5)]).doc_hit, [1.0, 1.0]);
        assert_eq!(score_query(&c, &gold, &[], &[2, 3, 1, 4, 6, 5].map(at)).doc_hit, [0.0, 0.0]);
    }

    #[test]
    fn characters_not_bytes_are_counted() {
        // "éé" is 2 characters in 4 bytes; gold is the first "é" only.
        let c = corpus("éé");
        let m = score_query(&c, &[ds(0, 2)], &[], &[item(&[(0, 4)])]);
        assert_eq!(m.precision[0], 0.5);
        assert_eq!(m.recall[0], 1.0);
    }

    #[test]
    fn overlapping_items_are_not_counted_twice_and_ndcg_rewards_new_gold_only() {
        let c = corpus(&"x".repeat(30));
        let gold = [ds(0, 10), ds(20, 30)];
        let items = vec![item(&[(0, 10)]), item(&[(0, 10)]), item(&[(20, 30)])];
        let m = score_query(&c, &gold, &[], &items);
        assert_eq!(m.precision[1], 1.0);
        assert_eq!(m.recall[1], 1.0);
        let want = (1.0 + 1.0 / 4f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!((m.ndcg10 - want).abs() < 1e-12);
        let empty = score_query(&c, &gold, &gold, &[]);
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
            let m = score_query(&c, &gold, &gold, &items);
            for i in 0..3 {
                for v in [m.precision[i], m.recall[i], m.ie[i], m.hit[i], m.evidence_recall[i], m.generous.ie[i], m.strict.ie[i]] {
                    prop_assert!((0.0..=1.0).contains(&v));
                }
                prop_assert!(m.ie[i] <= m.precision[i].min(m.recall[i]) + 1e-12);
            }
            prop_assert!(m.recall[0] <= m.recall[1] && m.recall[1] <= m.recall[2]);
            prop_assert!((0.0..=1.0 + 1e-12).contains(&m.ndcg10));
        }
    }
}
