//! The reranker's fine-tuning step on a fixed batch, timed beside the dense trainer's ([`super`]): the
//! cross-encoder's step of [`crate::reranker`] (Nogueira & Cho, 2019): groups of `[CLS] query [SEP] unit
//! [SEP]` pairs, the positive first, each scored by the trunk's mean-pooled, normalised states through the
//! head plus gamma times the first stage's cosine, the listwise softmax loss over each group, one AdamW
//! update a group of parameters (the trunk's top `trainable_layers` blocks at `lr_encoder`, the head and
//! gamma at `lr_head`) with the skeleton's optimizer. [`FixedRerankBatch`] writes the batch and the head's
//! initial weights out so that another framework runs exactly the same step.

use arbor_losses::listwise_softmax;
use arbor_models::host::{Host, init_on_host};
use arbor_models::reranker::{CrossEncoder, pair_ids};
use burn::nn::LinearConfig;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{ElementConversion, Tensor};
use serde::Serialize;

use super::{StepTiming, measure};
use crate::data::TrainDoc;
use crate::encoder::FineTune;
use crate::reranker::{PairFormat, RerankerTraining};
use crate::window::dot;

/// One reranker step's inputs: `pairs` (word pieces with their special tokens, group after group, each
/// group's positive first) and each pair's first-stage cosine, `group` pairs a group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FixedRerankBatch {
    pub pairs: Vec<Vec<u32>>,
    pub priors: Vec<f32>,
    pub group: usize,
}

impl FixedRerankBatch {
    /// `picked` (document, query) pairs of `docs`, each query with its positive unit and the `negatives`
    /// units of its document the frozen encoder ranks highest among those overlapping none of its gold
    /// (the reranker's pool draws from the same first stage), its prior the frozen cosine. The documents'
    /// token ids carry `[CLS]` and `[SEP]`, which the pair replaces by its own.
    pub fn new(docs: &[TrainDoc], picked: &[(usize, usize)], negatives: usize, format: PairFormat) -> Self {
        let (mut pairs, mut priors) = (Vec::new(), Vec::new());
        for &(d, q) in picked {
            let (doc, query) = (&docs[d], &docs[d].queries[q]);
            let mut ranked: Vec<usize> =
                (0..doc.units.len()).filter(|&u| u != query.positive && !query.gold.iter().any(|g| g.overlaps(&doc.units[u]))).collect();
            ranked.sort_by(|&a, &b| dot(&query.pooled, &doc.pooled[b]).total_cmp(&dot(&query.pooled, &doc.pooled[a])).then(a.cmp(&b)));
            for u in std::iter::once(query.positive).chain(ranked.into_iter().take(negatives)) {
                pairs.push(pair_ids(&bare(&query.ids), &bare(&doc.ids[u]), format.special, format.max_query, format.max_len));
                priors.push(dot(&query.pooled, &doc.pooled[u]));
            }
        }
        FixedRerankBatch { pairs, priors, group: negatives + 1 }
    }

    /// Word pieces the trunk reads, padding not counted.
    pub fn tokens(&self) -> usize {
        self.pairs.iter().map(Vec::len).sum()
    }
}

/// Token ids without their first and last (the encoder's `[CLS]` and `[SEP]`).
fn bare(ids: &[u32]) -> Vec<u32> {
    match ids {
        [_, inner @ .., _] => inner.to_vec(),
        _ => Vec::new(),
    }
}

/// The head the timed model started from (what the other framework loads): its weight `[hidden]`, bias
/// and gamma.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RerankHead {
    pub weight: Vec<f32>,
    pub bias: f32,
    pub gamma: f32,
}

/// Times `steps` reranker steps (after one warm-up) on `batch` from the pretrained trunk of `tune`, the
/// head drawn as the reranker's trainer draws it (on the host, from the schedule's seed).
pub fn time_rerank_steps<B: AutodiffBackend>(
    config: &RerankerTraining,
    tune: &FineTune<B>,
    batch: &FixedRerankBatch,
    steps: usize,
) -> anyhow::Result<(StepTiming, RerankHead)> {
    anyhow::ensure!(!batch.pairs.is_empty() && batch.group > 0 && batch.pairs.len().is_multiple_of(batch.group), "the batch holds no whole group");
    let device = Default::default();
    let hidden = tune.bert.embeddings.layer_norm.gamma.dims()[0];
    let mut model = CrossEncoder::new(tune.bert.clone(), hidden, &device).freeze_below(config.trainable_layers);
    model.head = init_on_host(config.schedule.seed, |cpu| LinearConfig::new(hidden, 1).init::<Host>(cpu), model.head, &device)?;
    let values = |t: Tensor<B, 1>| t.into_data().convert::<f32>().to_vec::<f32>().expect("f32");
    let head = RerankHead {
        weight: values(model.head.weight.val().reshape([hidden])),
        bias: model.head.bias.as_ref().map_or(0.0, |b| values(b.val())[0]),
        gamma: values(model.prior_scale.val())[0],
    };
    let (mut trunk, mut rest) = (crate::adamw::init(&config.schedule), crate::adamw::init(&config.schedule));
    let rows: Vec<&[u32]> = batch.pairs.iter().map(Vec::as_slice).collect();
    let mut model = Some(model);
    let timing = measure::<B>(steps, &device, |first| {
        let now = model.take().expect("each step puts the model back");
        let prior = Tensor::<B, 1>::from_floats(batch.priors.as_slice(), &device);
        let scores = now.forward_rows(&rows, prior, tune.layer_norm_eps).reshape([rows.len() / batch.group, batch.group]);
        let loss = listwise_softmax(scores);
        let value = first.then(|| loss.clone().into_scalar().elem::<f32>());
        // The trainer's two groups: the trunk's first, then the head's (the head and gamma).
        let mut grads = loss.backward();
        let params = GradientsParams::from_module(&mut grads, &now.bert);
        let now = trunk.step(config.lr_encoder, now, params);
        let params = GradientsParams::from_module(&mut grads, &now);
        model = Some(rest.step(config.lr_head, now, params));
        Ok(value)
    })?;
    Ok((timing, head))
}
