//! The Hugging Face `config.json` of an encoder of a family arbor reads ([`super::families`]),
//! deserialised as it is.

use serde::Deserialize;

use super::families::Family;

/// The fields of a `config.json` that the forward pass needs; unknown fields are ignored.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct BertConfig {
    /// Which family ([`Family::of_model_type`]); "bert" where the file does not say.
    #[serde(default = "bert")]
    pub model_type: String,
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
    /// The padding index, from which RoBERTa's and MPNet's positions are counted.
    #[serde(default)]
    pub pad_token_id: Option<usize>,
    /// MPNet's relative position buckets.
    #[serde(default = "thirty_two")]
    pub relative_attention_num_buckets: usize,
}

fn bert() -> String {
    "bert".into()
}
fn two() -> usize {
    2
}
fn thirty_two() -> usize {
    32
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
    /// Rejects what this port does not implement, instead of computing something else silently: a family
    /// first (before any weight is read), then what differs within one.
    pub fn check(&self) -> Result<(), String> {
        self.family()?;
        if self.hidden_act != "gelu" {
            return Err(format!("hidden_act {:?} is not supported (only \"gelu\", the exact erf form)", self.hidden_act));
        }
        if self.position_embedding_type != "absolute" {
            return Err(format!("position_embedding_type {:?} is not supported (only \"absolute\")", self.position_embedding_type));
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(format!("hidden_size {} is not divisible by {} heads", self.hidden_size, self.num_attention_heads));
        }
        if self.family() == Ok(Family::Mpnet) && self.relative_attention_num_buckets < super::families::mpnet::BUCKETS {
            return Err(format!(
                "relative_attention_num_buckets {} is below the {} buckets MPNet's encoder reads",
                self.relative_attention_num_buckets,
                super::families::mpnet::BUCKETS
            ));
        }
        if self.max_position_embeddings <= self.position_offset() {
            return Err(format!(
                "max_position_embeddings {} leaves no position past the offset {}",
                self.max_position_embeddings,
                self.position_offset()
            ));
        }
        Ok(())
    }

    /// The family `model_type` names.
    pub fn family(&self) -> Result<Family, String> {
        Family::of_model_type(&self.model_type)
    }

    /// The first position id ([`Family::position_offset`]; 0 for a family arbor does not read).
    pub fn position_offset(&self) -> usize {
        self.family().map_or(0, |f| f.position_offset(self.pad_token_id))
    }

    /// The most tokens a sequence can have: the position table's rows past the offset.
    pub fn max_tokens(&self) -> usize {
        self.max_position_embeddings.saturating_sub(self.position_offset())
    }
}
