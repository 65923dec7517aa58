//! The trainable part of SproutRAG on top of a pretrained encoder (SproutRAG, Sections 2.1-2.2): pooled
//! unit vectors -> SentenceVAE latents z (or the vectors themselves without a VAE) -> SLLM over a whole
//! document -> contextual unit embeddings e_i and attention A[l, h] -> HeadAggregator -> M. The encoder
//! is frozen (its pooled vectors come in as data), or, when fine-tuned, a module of the model
//! (the trainer runs it over token ids: `arbor_trainers::encoder`).
//!
//! Queries go through the same path as a one-unit document, so InfoNCE trains exactly the cosine between
//! query and unit (and, through progressive means, node) embeddings that beam search compares.

use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::aggregator::{AggregationInit, HeadAggregator};
use crate::bert::Bert;
use crate::sentence_vae::{SentenceVae, SentenceVaeConfig, VaeOutput};
use crate::sllm::{Sllm, SllmConfig};

/// Sizes of SproutRAG's trainable modules.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SproutRagModelConfig {
    pub sllm: SllmConfig,
    /// `None`: the SLLM reads the pooled encoder vectors directly.
    pub vae: Option<SentenceVaeConfig>,
}

#[derive(Module, Debug)]
pub struct SproutRagModel<B: Backend> {
    /// The pretrained encoder, when it is fine-tuned with the rest (`None`: frozen, outside the model).
    pub encoder: Option<Bert<B>>,
    pub vae: Option<SentenceVae<B>>,
    pub sllm: Sllm<B>,
    pub aggregator: HeadAggregator<B>,
}

/// One document through the model.
#[derive(Debug, Clone)]
pub struct DocumentOutput<B: Backend> {
    /// Contextual unit embeddings, `[units, d_sllm_input]` (the encoder's width without a VAE).
    pub embeddings: Tensor<B, 2>,
    /// Aggregated, symmetric attention between units, `[units, units]`.
    pub m: Tensor<B, 2>,
    /// The VAE's latents, when there is a VAE.
    pub vae: Option<VaeOutput<B>>,
}

impl SproutRagModelConfig {
    /// `d_input`: the encoder's width; `vocab`: its vocabulary (for the VAE decoder).
    pub fn init<B: Backend>(&self, d_input: usize, vocab: usize, aggregation: AggregationInit, device: &B::Device) -> SproutRagModel<B> {
        let vae = self.vae.map(|c| c.init(d_input, vocab, device));
        let d_sllm = self.vae.map_or(d_input, |c| c.d_latent);
        SproutRagModel {
            encoder: None,
            vae,
            sllm: self.sllm.init(d_sllm, device),
            aggregator: HeadAggregator::new(self.sllm.layers, self.sllm.heads, aggregation, device),
        }
    }
}

impl<B: Backend> SproutRagModel<B> {
    /// The model with the pretrained encoder inside it, to be fine-tuned.
    pub fn with_encoder(self, encoder: Bert<B>) -> Self {
        SproutRagModel { encoder: Some(encoder), ..self }
    }

    /// # Shapes
    /// - `pooled`: `[units, d_input]`; `sample`: draw z from the VAE (training) instead of its mean
    pub fn document(&self, pooled: Tensor<B, 2>, sample: bool) -> DocumentOutput<B> {
        let (z, vae) = self.latents(pooled, sample);
        let (embeddings, attention) = self.sllm.document(z);
        DocumentOutput { embeddings, m: self.aggregator.forward(attention), vae }
    }

    /// Query embeddings, each query a one-unit document: `[queries, d_input]` -> `[queries, d_sllm_input]`.
    pub fn queries(&self, pooled: Tensor<B, 2>) -> Tensor<B, 2> {
        let [b, _] = pooled.dims();
        let (z, _) = self.latents(pooled, false);
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(vec![true; b], [b, 1]), &z.device());
        self.sllm.forward(z.unsqueeze_dim::<3>(1), mask).embeddings.squeeze_dim::<2>(1)
    }

    fn latents(&self, pooled: Tensor<B, 2>, sample: bool) -> (Tensor<B, 2>, Option<VaeOutput<B>>) {
        match &self.vae {
            Some(vae) => {
                let out = vae.encode(pooled, sample);
                (out.z.clone(), Some(out))
            }
            None => (pooled, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DefaultBackend as B;
    use burn::tensor::Distribution;

    #[test]
    fn documents_and_queries_land_in_one_space() {
        let device = Default::default();
        for vae in [None, Some(SentenceVaeConfig { d_latent: 12, d_decoder: 8, decoder_heads: 2, max_tokens: 4 })] {
            let config = SproutRagModelConfig { sllm: SllmConfig { layers: 2, heads: 2, d_model: 16, d_ff: 32 }, vae };
            let model = config.init::<B>(20, 30, AggregationInit::Uniform, &device);
            let doc = model.document(Tensor::random([7, 20], Distribution::Normal(0.0, 1.0), &device), false);
            let width = vae.map_or(20, |v| v.d_latent);
            assert_eq!(doc.embeddings.dims(), [7, width]);
            assert_eq!(doc.m.dims(), [7, 7]);
            assert_eq!(doc.vae.is_some(), vae.is_some());
            let q = model.queries(Tensor::random([3, 20], Distribution::Normal(0.0, 1.0), &device));
            assert_eq!(q.dims(), [3, width]);
        }
    }
}
