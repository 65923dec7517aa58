//! The objective every query-trained trainer shares, so that a method and its matched control are scored
//! by one piece of code: L_ret, InfoNCE between a batch's queries and their positive units (SproutRAG,
//! Section 4's L_ret; the batch's other positives and, with `hard_negatives`, every other unit
//! of the document as negatives; with corpus-wide negatives, [`corpus_retrieval_loss`] over the batch's
//! candidates, false negatives left out), and the held-out reading that chooses each trainer's epoch: flat retrieval
//! of every validation query among its document's units, scored on its gold spans (arbor_eval's
//! character IE), logged as `eval/ie_mean`, `eval/hit@1` and `eval/hit@5`. SproutRAG's joint training
//! ([`crate::sproutrag`]), the dense control ([`crate::dense`]) and their data-parallel steps
//! ([`crate::parallel`]) import it from here.

use arbor_datasets::{Corpus, DocSpan};
use arbor_eval::Item;
use arbor_eval::index::top_k;
use arbor_eval::scoring::metrics::{Metrics, score_query};
use arbor_losses::{info_nce, info_nce_over};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

use crate::config::{HeldOut, TrainConfig};
use crate::data::{StepRows, TrainDoc};
use crate::encoder::index;
use crate::negatives::CorpusBatch;

/// What a trainer logs of its held-out metrics, and chooses its epoch by (`eval/ie_mean`).
pub fn validation_figures(m: &Metrics) -> Vec<(&'static str, f64)> {
    vec![("eval/ie_mean", m.ie_mean), ("eval/hit@1", m.hit[0]), ("eval/hit@5", m.hit[2])]
}

/// L_ret: InfoNCE between the batch's query embeddings and their positive units, the batch's other
/// positives as negatives, (with `hard_negatives`) every other unit of the document too, and `mined`, the
/// step's negatives from other documents (`negatives: Mined`), shared by every query of the batch; each
/// `(i, j)` of `false_negatives` ([`step_false_negatives`]) leaves candidate `j` (in that order:
/// positives, other units, mined) out of query `i`'s denominator. Without any, exactly
/// [`arbor_losses::info_nce`].
///
/// # Shapes
/// - `units`: `[n, d]`, `queries`: `[b, d]`, `positives`: b unit indices, `mined`: `[m, d]`
pub fn retrieval_loss<B: Backend>(
    units: Tensor<B, 2>,
    queries: Tensor<B, 2>,
    positives: &[usize],
    mined: Option<Tensor<B, 2>>,
    false_negatives: &[(usize, usize)],
    config: &TrainConfig,
) -> Tensor<B, 1> {
    let device = units.device();
    let n = units.dims()[0];
    let ep = units.clone().select(0, index(positives, &device));
    let others = other_units(n, positives);
    let hard = (config.hard_negatives && !others.is_empty()).then(|| units.select(0, index(&others, &device)));
    let hard = match (hard, mined) {
        (Some(h), Some(m)) => Some(Tensor::cat(vec![h, m], 0)),
        (h, m) => h.or(m),
    };
    if false_negatives.is_empty() {
        return info_nce(queries, ep, hard, config.tau);
    }
    let candidates = Tensor::cat([ep].into_iter().chain(hard).collect(), 0);
    let targets: Vec<usize> = (0..positives.len()).collect();
    info_nce_over(queries, candidates, &targets, false_negatives, config.tau)
}

/// The document's units other than the batch's positives: `hard_negatives`' rows, in unit order.
fn other_units(n: usize, positives: &[usize]) -> Vec<usize> {
    (0..n).filter(|u| !positives.contains(u)).collect()
}

/// The false negatives of a step's batch ([`retrieval_loss`]'s candidates: the batch's positives, with
/// `hard_negatives` the step's other units, then the `mined` units' spans; `rows` holds the step's
/// documents one after another, [`StepRows`]): every candidate other than a query's own positive that
/// overlaps that query's gold, as (query, candidate). So a unit holding part of a query's gold, or
/// another query's positive that is this query's too, is never its negative, as corpus-wide batches
/// leave them out ([`crate::negatives::CorpusBatch`]); a unit of another document never overlaps.
pub fn step_false_negatives(rows: &StepRows<'_>, mined: &[DocSpan], config: &TrainConfig) -> Vec<(usize, usize)> {
    let mut spans: Vec<DocSpan> = rows.positives.iter().map(|&p| rows.spans[p]).collect();
    if config.hard_negatives {
        spans.extend(other_units(rows.spans.len(), &rows.positives).into_iter().map(|u| rows.spans[u]));
    }
    spans.extend_from_slice(mined);
    let mut out = Vec::new();
    for (i, q) in rows.queries.iter().enumerate() {
        out.extend(spans.iter().enumerate().filter(|&(j, s)| j != i && q.is_gold(s)).map(|(j, _)| (i, j)));
    }
    out
}

/// A step's rows of its documents one after another ([`StepRows`]' order); one document's are returned as
/// they are, so the one-document step is the paper's step exactly.
pub(crate) fn one_or_cat<B: Backend>(mut parts: Vec<Tensor<B, 2>>) -> Tensor<B, 2> {
    match parts.len() {
        1 => parts.pop().expect("one"),
        _ => Tensor::cat(parts, 0),
    }
}

/// L_ret over a corpus-wide batch ([`crate::negatives`]): each query against every candidate, its
/// positive the target, the batch's false negatives of it left out.
///
/// # Shapes
/// - `units`: `[candidates, d]` in `batch.candidates` order, `queries`: `[batch.queries, d]`
pub fn corpus_retrieval_loss<B: Backend>(units: Tensor<B, 2>, queries: Tensor<B, 2>, batch: &CorpusBatch, config: &TrainConfig) -> Tensor<B, 1> {
    info_nce_over(queries, units, &batch.targets, &batch.excluded, config.tau)
}

/// Flat retrieval of each held-back query, top 10 by cosine, scored on its gold spans: among its
/// document's units ([`HeldOut::Documents`]) or among every held-out document's ([`HeldOut::Corpus`]).
/// `embed(doc)` gives the units' and the queries' embeddings, `[units, d]` and `[queries, d]`.
pub fn flat_on_held_out<B: Backend>(
    corpus: &Corpus,
    docs: &[TrainDoc],
    scope: HeldOut,
    embed: impl Fn(&TrainDoc) -> (Tensor<B, 2>, Tensor<B, 2>),
) -> Metrics {
    let rows = |t: Tensor<B, 2>| t.into_data().convert::<f32>().to_vec::<f32>().expect("f32");
    // The documents each query is ranked among: its own, or every held-out one.
    let groups: Vec<&[TrainDoc]> = match scope {
        HeldOut::Documents => docs.iter().filter(|d| !d.queries.is_empty()).map(std::slice::from_ref).collect(),
        HeldOut::Corpus => vec![docs],
    };
    let mut per_query = Vec::new();
    for group in groups {
        let (mut spans, mut units, mut queries, mut dim) = (Vec::new(), Vec::new(), Vec::new(), 0);
        for doc in group {
            let (u, eq) = embed(doc);
            dim = u.dims()[1];
            spans.extend(&doc.units);
            units.extend(rows(u));
            queries.extend(doc.queries.iter().zip(rows(eq).chunks(dim).map(<[f32]>::to_vec)));
        }
        for (q, qv) in queries {
            let scores = (0..spans.len()).map(|u| (u, arbor_eval::retrievers::beam::cosine(&qv, &units[u * dim..(u + 1) * dim])));
            let items: Vec<Item> = top_k(scores, 10).into_iter().map(|(u, s)| Item::unit(spans[u], s)).collect();
            let gold_units: Vec<DocSpan> = spans.iter().filter(|u| q.gold.iter().any(|g| g.overlaps(u))).copied().collect();
            per_query.push(score_query(corpus, &q.gold, &gold_units, &items));
        }
    }
    Metrics::mean(&per_query)
}

/// Where every query-trained trainer starts: its settings checked, at least one training query, the
/// device's generator seeded by the schedule's seed. Returns the device.
pub(crate) fn start<B: Backend>(config: &TrainConfig, train: &[TrainDoc]) -> anyhow::Result<B::Device> {
    config.check().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(train.iter().any(|d| !d.queries.is_empty()), "no training query: check training.split");
    let device = Default::default();
    B::seed(&device, config.schedule.seed);
    Ok(device)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::TrainQuery;
    use arbor_models::DefaultBackend;
    use burn::tensor::TensorData;

    fn t(v: &[f32], rows: usize) -> Tensor<DefaultBackend, 2> {
        Tensor::from_data(TensorData::new(v.to_vec(), [rows, v.len() / rows]), &Default::default())
    }

    /// Two held-out documents of two units each; the query asks for unit 0 of document 0, and its vector
    /// is nearest that unit within its document but nearer still to unit 0 of document 1: read within its
    /// document it is found first, read over both documents (`HeldOut::Corpus`) it comes second.
    #[test]
    fn the_corpus_reading_ranks_every_held_out_documents_units() {
        use arbor_datasets::{Document, Span};
        let text = "aaaa bbbb";
        let corpus = Corpus::new(
            (0..2).map(|i| Document { id: format!("d{i}"), title: String::new(), text: text.into(), sections: vec![], split: None }).collect(),
            vec![],
            std::path::Path::new("t"),
        )
        .unwrap();
        let unit = |d: usize, i: usize| DocSpan { doc: d, span: Span::new(5 * i, 5 * i + 4) };
        let query = TrainQuery { text: "q".into(), pooled: vec![], ids: vec![], positive: 0, gold: vec![unit(0, 0)] };
        let doc = |d: usize, queries: Vec<TrainQuery>| TrainDoc {
            units: vec![unit(d, 0), unit(d, 1)],
            pooled: vec![],
            ids: vec![],
            pairs: vec![],
            tokens: vec![],
            queries,
        };
        let docs = [doc(0, vec![query]), doc(1, vec![])];
        let embed = |d: &TrainDoc| match d.units[0].doc {
            0 => (t(&[1.0, 0.0, 0.0, 1.0], 2), t(&[0.9, 0.3], 1)),
            _ => (t(&[0.95, 0.31, -1.0, 0.0], 2), Tensor::from_data(TensorData::new(Vec::<f32>::new(), [0, 2]), &Default::default())),
        };
        let within = flat_on_held_out(&corpus, &docs, HeldOut::Documents, embed);
        let over = flat_on_held_out(&corpus, &docs, HeldOut::Corpus, embed);
        assert_eq!((within.hit[0], over.hit[0]), (100.0, 0.0), "hit@1 within its document, then over both");
        assert_eq!(over.hit[1], 100.0, "second over both: hit@3");
        assert!(within.ie_mean > over.ie_mean, "{} vs {}", within.ie_mean, over.ie_mean);
    }

    /// Mined rows are negatives like the document's other units: with `hard_negatives` the loss over the
    /// units and `mined` is the loss over the units with the mined rows appended; without, the mined
    /// rows alone join the batch's positives, by hand: -log(e^(c+/tau) / (e^(c+/tau) + e^(c-/tau))).
    #[test]
    fn mined_negatives_enter_the_denominator_as_the_documents_units_do() {
        let units = t(&[1.0, 0.0, 0.0, 1.0, 0.6, 0.8], 3);
        let mined = t(&[0.8, 0.6, -1.0, 0.0], 2);
        let queries = t(&[1.0, 0.0], 1);
        let config = TrainConfig { tau: 0.5, ..TrainConfig::default() };
        let value = |l: Tensor<DefaultBackend, 1>| l.into_scalar();
        let with = value(retrieval_loss(units.clone(), queries.clone(), &[0], Some(mined.clone()), &[], &config));
        let appended = value(retrieval_loss(Tensor::cat(vec![units.clone(), mined.clone()], 0), queries.clone(), &[0], None, &[], &config));
        assert!((with - appended).abs() < 1e-6, "{with} vs {appended}");
        let without = value(retrieval_loss(units.clone(), queries.clone(), &[0], None, &[], &config));
        assert!(with > without, "more negatives, a larger loss: {with} vs {without}");
        let alone = TrainConfig { hard_negatives: false, ..config };
        let got = value(retrieval_loss(units, queries, &[0], Some(t(&[0.8, 0.6], 1)), &[], &alone));
        let want = -(2f32 - (2f32.exp() + 1.6f32.exp()).ln());
        assert!((got - want).abs() < 1e-5, "{got} vs {want}");
    }

    /// Two queries of one document with the same positive (unit 0, their gold): today's in-batch
    /// negatives would put each one's positive in the other's denominator. Left out, by hand (tau 0.5,
    /// cosines 1 and 0): without hard negatives -log(1) = 0; with them (units 1 and 2), -log(e^2 / (e^2 + 2 e^0)).
    #[test]
    fn a_shared_positive_and_a_unit_of_the_gold_are_no_negatives() {
        use arbor_datasets::Span;
        let unit = |i: usize| DocSpan { doc: 0, span: Span::new(10 * i, 10 * i + 9) };
        let query = |gold: Vec<DocSpan>| TrainQuery { text: "q".into(), pooled: vec![], ids: vec![], positive: 0, gold };
        let doc = TrainDoc { units: vec![unit(0), unit(1), unit(2)], pooled: vec![], ids: vec![], pairs: vec![], tokens: vec![], queries: vec![] };
        let (q0, q1) = (query(vec![unit(0)]), query(vec![unit(0)]));
        let units = t(&[1.0, 0.0, 0.0, 1.0, 0.0, 1.0], 3);
        let queries = t(&[1.0, 0.0, 1.0, 0.0], 2);
        for hard_negatives in [false, true] {
            let config = TrainConfig { tau: 0.5, hard_negatives, ..TrainConfig::default() };
            let rows = StepRows { queries: vec![&q0, &q1], spans: doc.units.clone(), positives: vec![0, 0] };
            let excluded = step_false_negatives(&rows, &[], &config);
            assert_eq!(excluded, [(0, 1), (1, 0)]);
            let got: f32 = retrieval_loss(units.clone(), queries.clone(), &[0, 0], None, &excluded, &config).into_scalar();
            let want = if hard_negatives { -(2f32 - (2f32.exp() + 2.0).ln()) } else { 0.0 };
            assert!((got - want).abs() < 1e-5, "hard {hard_negatives}: {got} vs {want}");
        }
        // A query whose gold spans units 0 and 1: unit 1 (a hard negative) and a mined unit of the gold are left out.
        let config = TrainConfig { hard_negatives: true, ..TrainConfig::default() };
        let wide = query(vec![DocSpan { doc: 0, span: Span::new(5, 15) }]);
        let rows = StepRows { queries: vec![&wide], spans: doc.units.clone(), positives: vec![0] };
        assert_eq!(step_false_negatives(&rows, &[unit(1), unit(2)], &config), [(0, 1), (0, 3)]);
    }

    proptest::proptest! {
        /// For any in-document batch (its gold spans anywhere, positives shared or not, hard negatives or
        /// not, mined units anywhere): a candidate that overlaps a query's gold is never that query's
        /// negative, and every other candidate is.
        #[test]
        fn no_negative_of_an_in_document_query_overlaps_its_gold(
            n in 2usize..8,
            golds in proptest::collection::vec((0usize..80, 1usize..25), 1..5),
            mined in proptest::collection::vec((0usize..2, 0usize..80), 0..4),
            hard in proptest::bool::ANY,
        ) {
            use arbor_datasets::Span;
            let units: Vec<DocSpan> = (0..n).map(|i| DocSpan { doc: 0, span: Span::new(10 * i, 10 * i + 10) }).collect();
            let queries: Vec<TrainQuery> = golds
                .iter()
                .map(|&(a, len)| {
                    let gold = vec![DocSpan { doc: 0, span: Span::new(a, a + len) }];
                    let positive = (0..n).max_by_key(|&u| units[u].span.end.min(a + len).saturating_sub(units[u].span.start.max(a))).unwrap();
                    TrainQuery { text: String::new(), pooled: vec![], ids: vec![], positive, gold }
                })
                .collect();
            let batch: Vec<&TrainQuery> = queries.iter().collect();
            let mined: Vec<DocSpan> = mined.iter().map(|&(d, a)| DocSpan { doc: d, span: Span::new(a, a + 10) }).collect();
            let config = TrainConfig { hard_negatives: hard, ..TrainConfig::default() };
            let positives: Vec<usize> = batch.iter().map(|q| q.positive).collect();
            let rows = StepRows { queries: batch.clone(), spans: units.clone(), positives: positives.clone() };
            let excluded = step_false_negatives(&rows, &mined, &config);
            let mut candidates: Vec<DocSpan> = positives.iter().map(|&p| units[p]).collect();
            if hard {
                candidates.extend((0..n).filter(|u| !positives.contains(u)).map(|u| units[u]));
            }
            candidates.extend(&mined);
            for (i, q) in batch.iter().enumerate() {
                for (j, c) in candidates.iter().enumerate().filter(|&(j, _)| j != i) {
                    let gold = q.gold.iter().any(|g| g.overlaps(c));
                    proptest::prop_assert_eq!(excluded.contains(&(i, j)), gold, "query {} candidate {}", i, j);
                }
            }
        }
    }
}
