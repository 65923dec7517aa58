//! A cross-encoder reranker on arbor's BERT: the reranking stage of SproutRAG (Section 3), which reranks
//! the beam's candidates with Qwen3-Reranker-4B. No cross-encoder can be obtained here as weights, so
//! this one is all-MiniLM-L6-v2's trunk with a score head, fine-tuned on a training split (Nogueira &
//! Cho, 2019, "Passage Re-ranking with BERT"). Query and unit are read as one input:
//!
//! ```text
//! x        = [CLS] q [SEP] u [SEP]     (q cut to max_query pieces, the pair to the encoder's limit)
//! s(q, u)  = w . normalize(mean_pool(BERT(x))) + b + gamma cos(e_q, e_u)
//! ```
//!
//! `e_q`, `e_u` are the frozen encoder's embeddings, so the first stage's dense score is a feature of the
//! reranker: a residual over dense retrieval, learned with `gamma` (initialised at 20, 1/tau of MiniLM's
//! contrastive training, so that an untrained head leaves the dense order as it is). With a few hundred
//! training queries (legalbench-rag-mini has 257) a head learned from scratch alone ranks worse than the
//! dense score it would replace; the residual form starts from it.
//!
//! Pooling is the encoder's own (mean over tokens, L2 norm), so inference runs on the same CPU kernel as
//! embeddings ([`crate::encoder::Kernel`]); training runs the hand-written passes of [`crate::bert::autodiff`]
//! on the CPU build ([`CrossEncoder::forward_rows`]), Burn's module elsewhere.

use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor};

use crate::bert::{Bert, autodiff};
use crate::encoder::{Kernel, SentenceEncoder, TokenIds, pad_ids};
use crate::pooling::Pooling;

/// The cross-encoder: a BERT trunk and a linear score head on its pooled, normalised states.
#[derive(Module, Debug)]
pub struct CrossEncoder<B: Backend> {
    pub bert: Bert<B>,
    pub head: Linear<B>,
    /// gamma, the weight of the first stage's cosine, `[1]`.
    pub prior_scale: Param<Tensor<B, 1>>,
}

/// gamma's initial value: MiniLM's contrastive scale (1 / 0.05).
pub const PRIOR_SCALE: f32 = 20.0;

impl<B: Backend> CrossEncoder<B> {
    /// The pretrained trunk with a freshly initialised head.
    pub fn new(bert: Bert<B>, hidden: usize, device: &B::Device) -> Self {
        let prior_scale = Param::from_tensor(Tensor::from_floats([PRIOR_SCALE], device));
        CrossEncoder { bert, head: LinearConfig::new(hidden, 1).init(device), prior_scale }
    }

    /// Only the top `trainable_layers` blocks and the head learn; the embeddings and the lower blocks keep
    /// their pretrained weights (no gradient, no optimizer state: what makes fine-tuning fit two cores).
    pub fn freeze_below(mut self, trainable_layers: usize) -> Self {
        self.bert.embeddings = self.bert.embeddings.no_grad();
        let frozen = self.bert.layers.len().saturating_sub(trainable_layers);
        for layer in self.bert.layers.iter_mut().take(frozen) {
            *layer = layer.clone().no_grad();
        }
        self
    }

    /// Scores a padded batch of query-unit pairs, given each pair's first-stage cosine.
    ///
    /// # Shapes
    /// - `ids`, `mask`: `[batch, tokens]`; `prior`: `[batch]`; returns `[batch]`
    pub fn forward(&self, ids: Tensor<B, 2, Int>, mask: Tensor<B, 2, Bool>, prior: Tensor<B, 1>) -> Tensor<B, 1> {
        let hidden = self.bert.forward(ids, mask.clone(), false).hidden;
        self.score(Pooling::Mean.pool(hidden, mask), prior)
    }

    /// [`Self::forward`] of pairs given as word-piece rows ([`pair_ids`]): on the CPU build's autodiff
    /// backend through the hand-written passes ([`crate::bert::autodiff`]: nothing padded, the frozen
    /// blocks without a graph), elsewhere padded through Burn's module. `eps`: the trunk's layer-norm
    /// epsilon.
    ///
    /// # Shapes
    /// - `prior`: `[rows]`; returns `[rows]`
    pub fn forward_rows(&self, rows: &[&[u32]], prior: Tensor<B, 1>, eps: f64) -> Tensor<B, 1> {
        match autodiff::pool_ids(&self.bert, None, rows, eps, Pooling::Mean) {
            Some(pooled) => self.score(pooled, prior),
            None => {
                let (ids, mask) = pad_ids::<B>(rows, &prior.device());
                self.forward(ids, mask, prior)
            }
        }
    }

    /// The head's score of pooled, normalised states `[batch, hidden]` plus gamma times the prior.
    fn score(&self, pooled: Tensor<B, 2>, prior: Tensor<B, 1>) -> Tensor<B, 1> {
        let [batch, _] = pooled.dims();
        self.head.forward(pooled).reshape([batch]) + prior * self.prior_scale.val()
    }
}

/// The input of one pair: `[CLS] query [SEP] text [SEP]` from word pieces without special tokens, the
/// query cut to `max_query` pieces (and to what fits) and the text to what is left of `max_len`.
pub fn pair_ids(query: &[u32], text: &[u32], (cls, sep): (u32, u32), max_query: usize, max_len: usize) -> TokenIds {
    let query = &query[..query.len().min(max_query).min(max_len.saturating_sub(3))];
    let room = max_len.saturating_sub(query.len() + 3);
    let mut ids = Vec::with_capacity(query.len() + room.min(text.len()) + 3);
    ids.push(cls);
    ids.extend_from_slice(query);
    ids.push(sep);
    ids.extend_from_slice(&text[..text.len().min(room)]);
    ids.push(sep);
    ids
}

/// A trained cross-encoder ready to score: its trunk in the encoder's inference kernel, its head as plain
/// numbers.
#[derive(Debug, Clone)]
pub struct Scorer<B: Backend> {
    kernel: Kernel<B>,
    w: Vec<f32>,
    b: f32,
    gamma: f32,
    max_query: usize,
    max_len: usize,
}

impl<B: Backend> Scorer<B> {
    /// Pairs are made as in training: the query cut to `max_query` pieces, the pair to `max_len` tokens.
    pub fn new(model: &CrossEncoder<B>, encoder: &SentenceEncoder<B>, max_query: usize, max_len: usize) -> Self {
        let w = model.head.weight.val().into_data().to_vec::<f32>().expect("the backend returns f32");
        let b = model.head.bias.as_ref().map_or(0.0, |b| b.val().into_data().to_vec::<f32>().expect("f32")[0]);
        let gamma = model.prior_scale.val().into_data().to_vec::<f32>().expect("f32")[0];
        // The head reads the mean of the pair's tokens, whatever the encoder's own pooling (the reranker's design).
        let kernel = Kernel::new(&model.bert, encoder.config.layer_norm_eps, Pooling::Mean);
        Scorer { kernel, w, b, gamma, max_query, max_len: max_len.min(encoder.max_seq_length()) }
    }

    /// s(q, u) of `query` with each of `texts`, in order; `priors` are their first-stage cosines.
    pub fn score(&self, encoder: &SentenceEncoder<B>, query: &str, texts: &[&str], priors: &[f32], batch_size: usize) -> Vec<f32> {
        let query = &encoder.word_pieces(&[query])[0];
        let texts = encoder.word_pieces(texts);
        self.score_pieces(encoder, query, &texts.iter().map(Vec::as_slice).collect::<Vec<_>>(), priors, batch_size)
    }

    /// [`Scorer::score`] of word pieces (the query's and each text's, without special tokens).
    pub fn score_pieces(&self, encoder: &SentenceEncoder<B>, query: &[u32], texts: &[&[u32]], priors: &[f32], batch_size: usize) -> Vec<f32> {
        let special = encoder.special_ids();
        let pairs: Vec<TokenIds> = texts.iter().map(|t| pair_ids(query, t, special, self.max_query, self.max_len)).collect();
        let pooled = encoder.embed_ids_with(&self.kernel, &pairs, batch_size, &mut |_| {});
        pooled.iter().zip(priors).map(|(v, p)| v.iter().zip(&self.w).map(|(x, w)| x * w).sum::<f32>() + self.b + self.gamma * p).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_keep_the_query_and_cut_the_text_to_the_limit() {
        let special = (101, 102);
        assert_eq!(pair_ids(&[1, 2], &[7, 8, 9], special, 8, 16), vec![101, 1, 2, 102, 7, 8, 9, 102]);
        // The query is cut to max_query, the text to what is left of max_len.
        assert_eq!(pair_ids(&[1, 2, 3], &[7, 8, 9], special, 2, 7), vec![101, 1, 2, 102, 7, 8, 102]);
        assert_eq!(pair_ids(&[1], &[], special, 4, 8), vec![101, 1, 102, 102]);
        // Never longer than max_len, whatever the inputs.
        for len in 3..12 {
            assert!(pair_ids(&[1; 5], &[2; 20], special, 4, len).len() <= len);
        }
    }
}
