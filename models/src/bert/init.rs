//! A randomly initialised encoder of any family arbor reads, from its config.json alone, drawn as
//! `transformers` draws a fresh model (`_init_weights`: linear and embedding weights from N(0, 0.02), biases
//! zero, layer norms one and zero): what a step can be timed on where the pretrained weights cannot travel
//! (a lent GPU takes 64 MiB; all-mpnet-base-v2's weights are 438 MB). Its numbers mean nothing; its shape
//! and its arithmetic are the family's.

use burn::module::Param;
use burn::nn::{Embedding, EmbeddingConfig, Initializer, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

use super::config::BertConfig;
use super::model::{Bert, BertEmbeddings, BertLayer};

const DRAW: Initializer = Initializer::Normal { mean: 0.0, std: 0.02 };

fn linear<B: Backend>(input: usize, output: usize, device: &B::Device) -> Linear<B> {
    let mut l = LinearConfig::new(input, output).with_initializer(DRAW).init(device);
    l.bias = Some(Param::from_tensor(Tensor::zeros([output], device)));
    l
}

fn embedding<B: Backend>(rows: usize, width: usize, device: &B::Device) -> Embedding<B> {
    EmbeddingConfig::new(rows, width).with_initializer(DRAW).init(device)
}

/// A fresh encoder of `config`'s family and shape on `device`, drawn from `seed`.
pub fn random_bert<B: Backend>(config: &BertConfig, seed: u64, device: &B::Device) -> Result<Bert<B>, String> {
    config.check()?;
    let names = config.family()?.checkpoint();
    B::seed(device, seed);
    let (h, ff, eps) = (config.hidden_size, config.intermediate_size, config.layer_norm_eps);
    let norm = || LayerNormConfig::new(h).with_epsilon(eps).init(device);
    let embeddings = BertEmbeddings {
        word_embeddings: embedding(config.vocab_size, h, device),
        position_embeddings: embedding(config.max_position_embeddings, h, device),
        token_type_embeddings: names.token_types.then(|| embedding(config.type_vocab_size, h, device)),
        layer_norm: norm(),
        position_offset: config.position_offset(),
    };
    let layers = (0..config.num_hidden_layers)
        .map(|_| BertLayer {
            query: linear(h, h, device),
            key: linear(h, h, device),
            value: linear(h, h, device),
            attention_output: linear(h, h, device),
            attention_norm: norm(),
            intermediate: linear(h, ff, device),
            output: linear(ff, h, device),
            output_norm: norm(),
            num_heads: config.num_attention_heads,
        })
        .collect();
    let relative_attention_bias =
        names.relative_attention_bias.map(|_| embedding(config.relative_attention_num_buckets, config.num_attention_heads, device));
    Ok(Bert { embeddings, layers, relative_attention_bias })
}
