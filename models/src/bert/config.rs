//! The Hugging Face `config.json` of a BERT-family encoder, deserialised as it is.

use serde::Deserialize;

/// The fields of a BERT `config.json` that the forward pass needs; unknown fields are ignored.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "two")]
    pub type_vocab_size: usize,
    #[serde(default = "eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "gelu")]
    pub hidden_act: String,
    #[serde(default = "absolute")]
    pub position_embedding_type: String,
}

fn two() -> usize {
    2
}
fn eps() -> f64 {
    1e-12
}
fn gelu() -> String {
    "gelu".into()
}
fn absolute() -> String {
    "absolute".into()
}

impl BertConfig {
    /// Rejects what this port does not implement, instead of computing something else silently.
    pub fn check(&self) -> Result<(), String> {
        if self.hidden_act != "gelu" {
            return Err(format!("hidden_act {:?} is not supported (only \"gelu\", the exact erf form)", self.hidden_act));
        }
        if self.position_embedding_type != "absolute" {
            return Err(format!("position_embedding_type {:?} is not supported (only \"absolute\")", self.position_embedding_type));
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(format!("hidden_size {} is not divisible by {} heads", self.hidden_size, self.num_attention_heads));
        }
        Ok(())
    }
}
