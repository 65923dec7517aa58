//! Fine-tuning the upper layers of the encoder only. The embeddings and the lower `frozen_layers`
//! transformer blocks keep their pretrained weights, so their token states need no gradient: they are
//! computed forward only by the CPU kernel ([`CpuBert`], no padding, no autodiff graph), padded into a batch
//! and handed to the Burn module's remaining blocks ([`Bert::forward_from`]), which carry the gradients.
//! The pooled vectors are those of the whole module (to float rounding: the kernels agree to 1e-5); the
//! gradient of a fine-tuning step reaches the upper blocks only, and its cost is theirs.

use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Tensor, TensorData};

use super::{Bert, CpuBert, Precision};
use crate::pooling::Pooling;

/// The frozen lower part of an encoder: the embeddings and its first `layers` blocks.
#[derive(Debug, Clone)]
pub struct FrozenLayers {
    lower: CpuBert,
    layers: usize,
}

impl FrozenLayers {
    /// The embeddings and the first `layers` blocks of `bert` (its layer norms' epsilon `eps`), as they are
    /// now. At least one block must stay trainable.
    pub fn new<B: Backend>(bert: &Bert<B>, eps: f64, layers: usize) -> Result<Self, String> {
        let total = bert.layers.len();
        if layers >= total {
            return Err(format!(
                "training.frozen_layers is {layers} but the encoder has {total} layers: freeze at most {} (or set freeze_encoder: true)",
                total.saturating_sub(1)
            ));
        }
        Ok(FrozenLayers { lower: CpuBert::lower(bert, eps, layers), layers })
    }

    /// The token states the first trainable block reads, sequences end to end: `[sum of lengths, hidden]`.
    pub(super) fn lower_states(&self, rows: &[&[u32]]) -> Vec<f32> {
        self.lower.forward(rows)
    }

    /// How many blocks (above the embeddings) stay frozen.
    pub fn layers(&self) -> usize {
        self.layers
    }

    /// Vectors of token-id rows pooled by `pooling`, L2-normalised: the frozen blocks here, the rest
    /// through `bert`'s blocks `layers..` (with gradients on an autodiff backend).
    ///
    /// # Shapes
    /// - returns `[rows, hidden]`
    pub fn pool<B: Backend>(&self, bert: &Bert<B>, rows: &[&[u32]], device: &B::Device, pooling: Pooling) -> Tensor<B, 2> {
        self.pool_in(bert, rows, device, pooling, Precision::F32)
    }

    /// [`Self::pool`] with the trainable blocks' products in `precision`.
    pub fn pool_in<B: Backend>(&self, bert: &Bert<B>, rows: &[&[u32]], device: &B::Device, pooling: Pooling, precision: Precision) -> Tensor<B, 2> {
        let h = self.lower.hidden();
        let states = self.lower.forward(rows); // [sum of lengths, hidden], end to end
        let len = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut padded = vec![0.0f32; rows.len() * len * h];
        let mut mask = vec![false; rows.len() * len];
        let mut at = 0;
        for (r, row) in rows.iter().enumerate() {
            padded[r * len * h..][..row.len() * h].copy_from_slice(&states[at * h..(at + row.len()) * h]);
            mask[r * len..][..row.len()].fill(true);
            at += row.len();
        }
        let x = Tensor::<B, 3>::from_data(TensorData::new(padded, [rows.len(), len, h]), device);
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(mask, [rows.len(), len]), device);
        pooling.pool(bert.forward_from_in(x, mask.clone(), self.layers, false, precision).hidden, mask)
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::Autodiff;

    use super::*;
    use crate::encoder::pool_ids;
    use crate::{DefaultBackend, EncoderConfig, SentenceEncoder};

    type A = Autodiff<DefaultBackend>;

    /// The real encoder: for every split point the vectors are the whole module's; gradients reach the
    /// blocks above the split and none below it.
    #[test]
    fn the_split_encoder_pools_as_the_whole_and_trains_only_the_upper_blocks() {
        let device = Default::default();
        let encoder = SentenceEncoder::<A>::load(&EncoderConfig::default(), &device).unwrap();
        let texts = ["The tenant pays the rent on the first day of each month.", "Notice in writing.", "No pets."];
        let ids = encoder.tokenize(&texts);
        let rows: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
        let bert = &encoder.bert;
        let eps = encoder.config.layer_norm_eps;
        for (k, pooling) in [(0, Pooling::Mean), (2, Pooling::Cls), (5, Pooling::LastToken)] {
            let whole = pool_ids(bert, &rows, &device, pooling).into_data().to_vec::<f32>().unwrap();
            let frozen = FrozenLayers::new(bert, eps, k).unwrap();
            let pooled = frozen.pool(bert, &rows, &device, pooling);
            let got = pooled.clone().into_data().to_vec::<f32>().unwrap();
            let worst = whole.iter().zip(&got).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            assert!(worst < 1e-5, "{k} frozen blocks, {pooling:?}: off by {worst}");
            let grads = pooled.sum().backward();
            let has_grad = |l: &crate::bert::model::BertLayer<A>| l.query.weight.grad(&grads).is_some();
            assert!(bert.layers[k..].iter().all(has_grad), "{k}: every upper block has a gradient");
            let embeddings = bert.embeddings.word_embeddings.weight.grad(&grads).is_some();
            assert!(!embeddings && !bert.layers[..k].iter().any(has_grad), "{k}: no frozen block has one");
        }
        assert!(FrozenLayers::new(bert, eps, 6).unwrap_err().contains("at most 5"));
    }
}
