//! LegalBench-RAG's own protocol (Pipitone & Alami 2024; the released code's `QAResult.precision` and
//! `.recall`, legalbenchrag/run_benchmark.py): for a question and a method's first k snippets,
//!
//!   precision@k = sum over retrieved snippets r, gold snippets g of |r ∩ g| / sum over r of |r|
//!   recall@k    = sum over gold snippets g, retrieved snippets r of |g ∩ r| / sum over g of |g|
//!
//! in characters (0 when nothing is retrieved or the gold is empty), at k = 1, 2, 4, 8, 16, 32, 64; a
//! dataset's figure is the mean over its questions, the benchmark's the mean over its datasets, each weighted
//! equally (`benchmark_name_to_weight`). As the released code does, overlapping retrieved snippets are each
//! counted (a snippet retrieved twice counts twice, in both sums).

use arbor_datasets::{Corpus, DocSpan};

/// The cutoffs the benchmark reports.
pub const KS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The characters of `span` in its document.
fn characters(corpus: &Corpus, span: &DocSpan) -> usize {
    corpus.documents[span.doc].text[span.span.start..span.span.end].chars().count()
}

/// The characters `a` and `b` share (0 in different documents). Both are spans on character boundaries,
/// so their intersection is one.
fn shared(corpus: &Corpus, a: &DocSpan, b: &DocSpan) -> usize {
    let (start, end) = (a.span.start.max(b.span.start), a.span.end.min(b.span.end));
    if a.doc != b.doc || end <= start {
        return 0;
    }
    corpus.documents[a.doc].text[start..end].chars().count()
}

/// Precision and recall, in characters, of `retrieved` (the first k items' spans, each a snippet) against
/// `gold`.
pub fn precision_recall(corpus: &Corpus, retrieved: &[DocSpan], gold: &[DocSpan]) -> (f64, f64) {
    let common: usize = retrieved.iter().map(|r| gold.iter().map(|g| shared(corpus, r, g)).sum::<usize>()).sum();
    let (got, want): (usize, usize) = (retrieved.iter().map(|r| characters(corpus, r)).sum(), gold.iter().map(|g| characters(corpus, g)).sum());
    let ratio = |n: usize, d: usize| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    (ratio(common, got), ratio(common, want))
}

/// One method's figures: precision and recall at each of [`KS`] (percent), per dataset in the order given
/// and their equally weighted mean.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AtK {
    pub datasets: Vec<(String, usize, Vec<(f64, f64)>)>,
    pub mean: Vec<(f64, f64)>,
}

/// [`AtK`] over `queries`: each with its dataset, its items' spans in rank order (an item may hold several
/// spans: its first k items' spans are the snippets) and its gold.
pub fn at_k(corpus: &Corpus, queries: &[(String, Vec<Vec<DocSpan>>, Vec<DocSpan>)]) -> AtK {
    let mut datasets: Vec<(String, usize, Vec<(f64, f64)>)> = Vec::new();
    for (dataset, items, gold) in queries {
        let at = match datasets.iter().position(|d| d.0 == *dataset) {
            Some(at) => at,
            None => {
                datasets.push((dataset.clone(), 0, vec![(0.0, 0.0); KS.len()]));
                datasets.len() - 1
            }
        };
        let entry = &mut datasets[at];
        entry.1 += 1;
        for (sum, &k) in entry.2.iter_mut().zip(&KS) {
            let first: Vec<DocSpan> = items.iter().take(k).flatten().copied().collect();
            let (p, r) = precision_recall(corpus, &first, gold);
            sum.0 += p;
            sum.1 += r;
        }
    }
    for (_, n, sums) in &mut datasets {
        for s in sums.iter_mut() {
            *s = (100.0 * s.0 / *n as f64, 100.0 * s.1 / *n as f64);
        }
    }
    let mean = (0..KS.len())
        .map(|i| {
            let d = datasets.len().max(1) as f64;
            (datasets.iter().map(|x| x.2[i].0).sum::<f64>() / d, datasets.iter().map(|x| x.2[i].1).sum::<f64>() / d)
        })
        .collect();
    AtK { datasets, mean }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::{Document, Span};

    /// "é" is two bytes: character counts, not bytes, make the figures.
    fn corpus() -> Corpus {
        let doc = |id: &str, text: &str| Document { id: id.into(), title: String::new(), text: text.into(), sections: vec![], split: None };
        Corpus::new(vec![doc("a", "ééééé abcde"), doc("b", "0123456789")], vec![], std::path::Path::new("t")).unwrap()
    }

    fn span(doc: usize, start: usize, end: usize) -> DocSpan {
        DocSpan { doc, span: Span::new(start, end) }
    }

    /// By hand: gold "éé" + "abc" (5 characters in document a); retrieved "ééé" (3) and "bcde" (4) share
    /// "éé" and "bc": 4 of 7 retrieved, 4 of 5 gold. A document of no gold adds retrieved characters only.
    #[test]
    fn precision_and_recall_count_characters() {
        let c = corpus();
        let gold = [span(0, 0, 4), span(0, 11, 14)];
        let (p, r) = precision_recall(&c, &[span(0, 0, 6), span(0, 12, 16)], &gold);
        assert!((p - 4.0 / 7.0).abs() < 1e-12 && (r - 0.8).abs() < 1e-12, "{p} {r}");
        let (p, r) = precision_recall(&c, &[span(0, 0, 6), span(0, 12, 16), span(1, 0, 3)], &gold);
        assert!((p - 0.4).abs() < 1e-12 && (r - 0.8).abs() < 1e-12, "{p} {r}");
        assert_eq!(precision_recall(&c, &[], &gold), (0.0, 0.0));
        // As the released code: a snippet retrieved twice counts twice.
        let (p, r) = precision_recall(&c, &[span(0, 0, 4), span(0, 0, 4)], &gold);
        assert!((p - 1.0).abs() < 1e-12 && (r - 0.8).abs() < 1e-12, "{p} {r}");
    }

    /// Two datasets, weighted equally whatever their sizes; k takes the first k items.
    #[test]
    fn datasets_are_weighted_equally_and_k_takes_the_first_items() {
        let c = corpus();
        let hit = vec![vec![span(1, 0, 5)], vec![span(1, 5, 10)]];
        let queries = vec![
            ("x".to_owned(), hit.clone(), vec![span(1, 0, 5)]),
            ("x".to_owned(), hit.clone(), vec![span(1, 0, 5)]),
            ("x".to_owned(), hit.clone(), vec![span(1, 0, 5)]),
            ("y".to_owned(), hit, vec![span(1, 5, 10)]),
        ];
        let figures = at_k(&c, &queries);
        assert_eq!(figures.datasets.iter().map(|d| (d.0.as_str(), d.1)).collect::<Vec<_>>(), [("x", 3), ("y", 1)]);
        // k = 1: x gets precision and recall 100, y 0; k >= 2: both 50 precision, 100 recall.
        assert_eq!(figures.datasets[0].2[0], (100.0, 100.0));
        assert_eq!(figures.datasets[1].2[0], (0.0, 0.0));
        assert_eq!(figures.mean[0], (50.0, 50.0), "the mean of the datasets, not of the four questions");
        assert_eq!(figures.mean[1], (50.0, 100.0));
        assert_eq!(figures.mean[6], (50.0, 100.0));
    }

    proptest::proptest! {
        /// Retrieved snippets that do not overlap one another: both figures lie in [0, 1], and recall never
        /// falls as k grows.
        #[test]
        fn figures_are_fractions_and_recall_grows_with_k(cuts in proptest::collection::btree_set(0usize..10, 0..8), gold in (0usize..9, 1usize..5)) {
            let c = corpus();
            let cuts: Vec<usize> = std::iter::once(0).chain(cuts).chain(std::iter::once(10)).collect();
            let items: Vec<DocSpan> = cuts.windows(2).filter(|w| w[0] < w[1]).map(|w| span(1, w[0], w[1])).collect();
            let g = [span(1, gold.0, (gold.0 + gold.1).min(10))];
            let mut last = 0.0;
            for k in 1..=items.len() {
                let (p, r) = precision_recall(&c, &items[..k], &g);
                proptest::prop_assert!((0.0..=1.0).contains(&p) && (0.0..=1.0).contains(&r));
                proptest::prop_assert!(r >= last);
                last = r;
            }
            proptest::prop_assert!((last - 1.0).abs() < 1e-12, "every item together covers the document");
        }
    }
}
