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
use crate::data::TrainDoc;
use crate::encoder::index;
use crate::negatives::CorpusBatch;

/// What a trainer logs of its held-out metrics, and chooses its epoch by (`eval/ie_mean`).
pub fn validation_figures(m: &Metrics) -> Vec<(&'static str, f64)> {
    vec![("eval/ie_mean", m.ie_mean), ("eval/hit@1", m.hit[0]), ("eval/hit@5", m.hit[2])]
}

/// L_ret: InfoNCE between the batch's query embeddings and their positive units, the batch's other
/// positives as negatives, (with `hard_negatives`) every other unit of the document too, and `mined`, the
/// step's negatives from other documents (`negatives: Mined`), shared by every query of the batch.
///
/// # Shapes
/// - `units`: `[n, d]`, `queries`: `[b, d]`, `positives`: b unit indices, `mined`: `[m, d]`
pub fn retrieval_loss<B: Backend>(
    units: Tensor<B, 2>,
    queries: Tensor<B, 2>,
    positives: &[usize],
    mined: Option<Tensor<B, 2>>,
    config: &TrainConfig,
) -> Tensor<B, 1> {
    let device = units.device();
    let n = units.dims()[0];
    let ep = units.clone().select(0, index(positives, &device));
    let others: Vec<usize> = (0..n).filter(|u| !positives.contains(u)).collect();
    let hard = (config.hard_negatives && !others.is_empty()).then(|| units.select(0, index(&others, &device)));
    let hard = match (hard, mined) {
        (Some(h), Some(m)) => Some(Tensor::cat(vec![h, m], 0)),
        (h, m) => h.or(m),
    };
    info_nce(queries, ep, hard, config.tau)
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
        let with = value(retrieval_loss(units.clone(), queries.clone(), &[0], Some(mined.clone()), &config));
        let appended = value(retrieval_loss(Tensor::cat(vec![units.clone(), mined.clone()], 0), queries.clone(), &[0], None, &config));
        assert!((with - appended).abs() < 1e-6, "{with} vs {appended}");
        let without = value(retrieval_loss(units.clone(), queries.clone(), &[0], None, &config));
        assert!(with > without, "more negatives, a larger loss: {with} vs {without}");
        let alone = TrainConfig { hard_negatives: false, ..config };
        let got = value(retrieval_loss(units, queries, &[0], Some(t(&[0.8, 0.6], 1)), &alone));
        let want = -(2f32 - (2f32.exp() + 1.6f32.exp()).ln());
        assert!((got - want).abs() < 1e-5, "{got} vs {want}");
    }
}
