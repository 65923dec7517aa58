//! The forward pass of the BERT block every family shares ([`super::families`]: BERT, RoBERTa,
//! XLM-RoBERTa, MPNet), with what a family changes: where positions start, whether a token-type table is
//! read, and MPNet's relative position bias added to every block's scores.

use burn::module::Module;
use burn::nn::{Embedding, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::{gelu, softmax};
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor, TensorData};

use super::Precision;

/// Word, position and token-type embeddings, summed and layer-normalised (BertEmbeddings).
#[derive(Module, Debug)]
pub struct BertEmbeddings<B: Backend> {
    pub word_embeddings: Embedding<B>,
    pub position_embeddings: Embedding<B>,
    /// None for a family without token types (MPNet); row 0 is read.
    pub token_type_embeddings: Option<Embedding<B>>,
    pub layer_norm: LayerNorm<B>,
    /// The position id of a sequence's first token ([`super::families::Family::position_offset`]).
    pub position_offset: usize,
}

/// One transformer block: self-attention and feed-forward, each with a post-norm residual.
#[derive(Module, Debug)]
pub struct BertLayer<B: Backend> {
    pub query: Linear<B>,
    pub key: Linear<B>,
    pub value: Linear<B>,
    /// `attention.output.dense`
    pub attention_output: Linear<B>,
    /// `attention.output.LayerNorm`
    pub attention_norm: LayerNorm<B>,
    /// `intermediate.dense`
    pub intermediate: Linear<B>,
    /// `output.dense`
    pub output: Linear<B>,
    /// `output.LayerNorm`
    pub output_norm: LayerNorm<B>,
    pub num_heads: usize,
}

/// A BERT encoder (no pooler: sentence embeddings pool the token states themselves).
#[derive(Module, Debug)]
pub struct Bert<B: Backend> {
    pub embeddings: BertEmbeddings<B>,
    pub layers: Vec<BertLayer<B>>,
    /// MPNet's relative position bias `[buckets, heads]`, shared by every block ([`super::families::mpnet`]).
    pub relative_attention_bias: Option<Embedding<B>>,
}

/// What a forward pass returns.
#[derive(Debug, Clone)]
pub struct BertOutput<B: Backend> {
    /// The last layer's token states, `[batch, tokens, hidden]`.
    pub hidden: Tensor<B, 3>,
    /// Per layer, the attention probabilities `[batch, heads, tokens, tokens]` (empty unless asked for).
    pub attentions: Vec<Tensor<B, 4>>,
}

impl<B: Backend> Bert<B> {
    /// Encodes a padded batch.
    ///
    /// # Shapes
    /// - `input_ids`: `[batch, tokens]`
    /// - `mask`: `[batch, tokens]`, true on real tokens, false on padding
    /// - returns hidden `[batch, tokens, hidden]` and, when `with_attention`, one `[batch, heads, tokens, tokens]`
    ///   per layer
    pub fn forward(&self, input_ids: Tensor<B, 2, Int>, mask: Tensor<B, 2, Bool>, with_attention: bool) -> BertOutput<B> {
        self.forward_from(self.embed(input_ids), mask, 0, with_attention)
    }

    /// The embeddings' sum (word, position from the family's offset, token type 0 where the family has
    /// token types), layer-normalised: what layer 0 reads. Padding sits after a row's tokens, so a real
    /// token's position is its index plus the offset, as RoBERTa's and MPNet's padding-aware ids give it.
    ///
    /// # Shapes
    /// - `input_ids`: `[batch, tokens]` -> `[batch, tokens, hidden]`
    pub fn embed(&self, input_ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        let [batch, tokens] = input_ids.dims();
        let device = input_ids.device();
        let e = &self.embeddings;
        let first = e.position_offset as i64;
        let positions = Tensor::<B, 1, Int>::arange(first..first + tokens as i64, &device).unsqueeze::<2>().repeat_dim(0, batch);
        let mut x = e.word_embeddings.forward(input_ids) + e.position_embeddings.forward(positions);
        if let Some(types) = &e.token_type_embeddings {
            x = x + types.forward(Tensor::<B, 2, Int>::zeros([batch, tokens], &device));
        }
        e.layer_norm.forward(x)
    }

    /// What every block adds to its attention scores: the padding mask's bias and, for MPNet, the relative
    /// position bias `b[bucket(j - i), head]` ([`super::families::mpnet`]).
    ///
    /// # Shapes
    /// - `mask`: `[batch, tokens]`; returns `[batch, 1, 1, tokens]`, or `[batch, heads, tokens, tokens]` with
    ///   the relative bias
    pub fn attention_bias(&self, mask: Tensor<B, 2, Bool>) -> Tensor<B, 4> {
        let key_bias = padding_bias(mask);
        let Some(table) = &self.relative_attention_bias else {
            return key_bias;
        };
        let [batch, _, _, tokens] = key_bias.dims();
        let device = key_bias.device();
        let by_distance = super::families::mpnet::buckets_by_distance(tokens);
        let by_distance = &by_distance;
        let ids: Vec<i64> = (0..tokens).flat_map(|i| (0..tokens).map(move |j| by_distance[j + tokens - 1 - i] as i64)).collect();
        let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(ids, [tokens, tokens]), &device);
        let bias = table.forward(ids).permute([2, 0, 1]).unsqueeze::<4>(); // [1, heads, tokens, tokens]
        bias.repeat_dim(0, batch) + key_bias
    }

    /// Runs layers `from..` over `x`, the token states layer `from` reads (the embeddings' when `from` is
    /// 0): the top of the encoder when its lower layers are computed elsewhere.
    ///
    /// # Shapes
    /// - `x`: `[batch, tokens, hidden]`; `mask`: `[batch, tokens]`, true on real tokens
    /// - returns as [`Self::forward`], the attentions of layers `from..` only
    pub fn forward_from(&self, x: Tensor<B, 3>, mask: Tensor<B, 2, Bool>, from: usize, with_attention: bool) -> BertOutput<B> {
        self.forward_from_in(x, mask, from, with_attention, Precision::F32)
    }

    /// [`Self::forward_from`] with the blocks' products in `precision` ([`Precision`]); `x` and the
    /// returned states and attentions are float32.
    pub fn forward_from_in(
        &self,
        x: Tensor<B, 3>,
        mask: Tensor<B, 2, Bool>,
        from: usize,
        with_attention: bool,
        precision: Precision,
    ) -> BertOutput<B> {
        self.forward_from_observed(x, mask, from, with_attention, precision, &mut |_, _, _| {})
    }

    /// [`Self::forward_from_in`], each block's steps shown to `observe` with the block's index
    /// ([`BertLayer::forward_observed`]; [`crate::bert::trace`]).
    pub fn forward_from_observed(
        &self,
        x: Tensor<B, 3>,
        mask: Tensor<B, 2, Bool>,
        from: usize,
        with_attention: bool,
        precision: Precision,
        observe: &mut dyn FnMut(usize, &'static str, &Tensor<B, 2>),
    ) -> BertOutput<B> {
        let key_bias = self.attention_bias(mask);
        let mut x = x;
        let mut attentions = Vec::new();
        for (l, layer) in self.layers.iter().enumerate().skip(from) {
            let (out, probs) = layer.forward_observed(x, key_bias.clone(), precision, &mut |name, t| observe(l, name, t));
            x = out;
            if with_attention {
                attentions.push(probs);
            }
        }
        BertOutput { hidden: x, attentions }
    }
}

/// The additive attention bias of a padding mask: 0 for real keys, a large negative number for padding
/// (as transformers does with finfo(dtype).min).
///
/// # Shapes
/// - `mask`: `[batch, tokens]`, true on real tokens; returns `[batch, 1, 1, tokens]`
pub fn padding_bias<B: Backend>(mask: Tensor<B, 2, Bool>) -> Tensor<B, 4> {
    let [batch, tokens] = mask.dims();
    Tensor::<B, 2>::zeros([batch, tokens], &mask.device()).mask_fill(mask.bool_not(), -1.0e9).unsqueeze_dims::<4>(&[1, 2])
}

/// The additive attention bias of a causal decoder, `[batch, 1, tokens, tokens]`: padding keys (`mask`
/// false) and future positions get -1e9.
pub fn causal_bias<B: Backend>(mask: Tensor<B, 2, Bool>) -> Tensor<B, 4> {
    let [batch, t] = mask.dims();
    let device = mask.device();
    let future = Tensor::<B, 2, Bool>::tril_mask([t, t], 0, &device).unsqueeze::<4>(); // true above the diagonal
    let padding = mask.bool_not().unsqueeze_dims::<4>(&[1, 2]); // [batch, 1, 1, t]
    Tensor::<B, 4>::zeros([batch, 1, t, t], &device).mask_fill(padding.bool_or(future), -1.0e9)
}

impl<B: Backend> BertLayer<B> {
    /// A freshly initialised block (for models trained from scratch, such as the sentence-level transformer).
    pub fn init(hidden: usize, heads: usize, intermediate: usize, eps: f64, device: &B::Device) -> Self {
        let linear = |i, o| LinearConfig::new(i, o).init(device);
        let norm = || LayerNormConfig::new(hidden).with_epsilon(eps).init(device);
        BertLayer {
            query: linear(hidden, hidden),
            key: linear(hidden, hidden),
            value: linear(hidden, hidden),
            attention_output: linear(hidden, hidden),
            attention_norm: norm(),
            intermediate: linear(hidden, intermediate),
            output: linear(intermediate, hidden),
            output_norm: norm(),
            num_heads: heads,
        }
    }

    /// # Shapes
    /// - `x`: `[batch, tokens, hidden]`; `key_bias`: added to the attention scores, `[batch, 1, 1, tokens]`
    ///   (padding), `[batch, 1, tokens, tokens]` (padding and causality) or `[batch, heads, tokens, tokens]`
    ///   (padding and a relative position bias)
    /// - returns `[batch, tokens, hidden]` and the probabilities `[batch, heads, tokens, tokens]`
    pub fn forward(&self, x: Tensor<B, 3>, key_bias: Tensor<B, 4>) -> (Tensor<B, 3>, Tensor<B, 4>) {
        self.forward_in(x, key_bias, Precision::F32)
    }

    /// [`Self::forward`] with the products in `precision`: under bf16 the six linear layers and the two
    /// attention products take bf16 operands, the scores' scaling, the padding bias, the softmax, the
    /// residual sums and the layer norms float32 (as autocast runs BertSelfAttention and BertOutput).
    pub fn forward_in(&self, x: Tensor<B, 3>, key_bias: Tensor<B, 4>, precision: Precision) -> (Tensor<B, 3>, Tensor<B, 4>) {
        self.forward_observed(x, key_bias, precision, &mut |_, _| {})
    }

    /// [`Self::forward_in`], each step's result shown to `observe` as it is computed, by the name of the
    /// transformers module that computes it (`query`, `key`, `value`, `context`: the heads' attention
    /// output, `attention_output`, `attention_norm`, `intermediate`: after GELU, `output`, `output_norm`),
    /// each `[batch * tokens, features]` in its own dtype ([`crate::bert::trace`]).
    pub fn forward_observed(
        &self,
        x: Tensor<B, 3>,
        key_bias: Tensor<B, 4>,
        precision: Precision,
        observe: &mut dyn FnMut(&'static str, &Tensor<B, 2>),
    ) -> (Tensor<B, 3>, Tensor<B, 4>) {
        let p = precision;
        let [batch, tokens, hidden] = x.dims();
        let head_dim = hidden / self.num_heads;
        // Linear layers see all tokens of the batch as one matrix: one large matrix product per weight
        // instead of one per sequence.
        let x = x.reshape([batch * tokens, hidden]); // [batch * tokens, hidden]
        let mut seen = |name, t: Tensor<B, 2>| {
            observe(name, &t);
            t
        };
        let split = |t: Tensor<B, 2>| t.reshape([batch, tokens, self.num_heads, head_dim]).swap_dims(1, 2);
        let q = split(seen("query", p.linear(&self.query, x.clone()))); // [batch, heads, tokens, head_dim]
        let k = split(seen("key", p.linear(&self.key, x.clone())));
        let v = split(seen("value", p.linear(&self.value, x.clone())));
        let scores = p.high(q.matmul(k.transpose())) / (head_dim as f64).sqrt() + key_bias; // [batch, heads, tokens, tokens]
        let probs = softmax(scores, 3);
        let context = seen("context", p.low(probs.clone()).matmul(v).swap_dims(1, 2).reshape([batch * tokens, hidden]));
        let attended = seen("attention_output", p.linear(&self.attention_output, context));
        let x = seen("attention_norm", self.attention_norm.forward(p.high(attended) + x));
        let inner = seen("intermediate", gelu(p.linear(&self.intermediate, x.clone())));
        let ff = p.high(seen("output", p.linear(&self.output, inner)));
        (seen("output_norm", self.output_norm.forward(ff + x)).reshape([batch, tokens, hidden]), probs)
    }
}
