//! The encoder families arbor reads, chosen by config.json's `model_type` as `transformers`' AutoModel
//! chooses them, one file each over the shared BERT block ([`super::model`], [`super::cpu`],
//! `tape`): what differs is said here and nowhere else.
//!
//! | family | `model_type` | positions | token types | attention scores |
//! |---|---|---|---|---|
//! | [`bert`] (Devlin et al., 2019) | `bert` | `0..n` | a table, type 0 read | `Q Kᵀ / sqrt(d)` |
//! | [`roberta`] (Liu et al., 2019; XLM-R, Conneau et al., 2020) | `roberta`, `xlm-roberta` | `pad + 1 ..` | a table of one row | as BERT |
//! | [`mpnet`] (Song et al., 2020) | `mpnet` | `pad + 1 ..` | none | `+ b[bucket(j - i), head]`, one table shared by every block |
//!
//! Every family's blocks are BERT's post-norm residual blocks with exact erf GELU; only the names in the
//! checkpoint ([`Checkpoint`]), the embeddings and MPNet's relative position bias differ.

pub mod bert;
pub mod mpnet;
pub mod roberta;

/// An encoder family: how its checkpoint is named and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Bert,
    Roberta,
    XlmRoberta,
    Mpnet,
}

/// The `model_type`s arbor reads, as a refusal lists them.
pub const READ: &str = "bert, roberta, xlm-roberta, mpnet";

impl Family {
    /// The family of a config.json's `model_type`, or a refusal that names it and lists those read.
    pub fn of_model_type(model_type: &str) -> Result<Family, String> {
        match model_type {
            "bert" => Ok(Family::Bert),
            "roberta" => Ok(Family::Roberta),
            "xlm-roberta" => Ok(Family::XlmRoberta),
            "mpnet" => Ok(Family::Mpnet),
            other => Err(format!(
                "model_type {other:?} is not an encoder family arbor reads (it reads {READ}: BERT, RoBERTa, XLM-RoBERTa \
                 and MPNet checkpoints, such as all-MiniLM-L6-v2, bge-*-en-v1.5, e5-*, multilingual-e5 and BGE-M3, all-mpnet-base-v2)"
            )),
        }
    }

    /// config.json's `model_type` of the family.
    pub fn model_type(self) -> &'static str {
        match self {
            Family::Bert => "bert",
            Family::Roberta => "roberta",
            Family::XlmRoberta => "xlm-roberta",
            Family::Mpnet => "mpnet",
        }
    }

    /// How its checkpoint names the encoder's tensors.
    pub fn checkpoint(self) -> &'static Checkpoint {
        match self {
            Family::Bert => &bert::CHECKPOINT,
            Family::Roberta | Family::XlmRoberta => &roberta::CHECKPOINT,
            Family::Mpnet => &mpnet::CHECKPOINT,
        }
    }

    /// The position id of a sequence's first token: 0 for BERT; the padding index plus one for RoBERTa and
    /// MPNet, whose position ids count real tokens from there (`create_position_ids_from_input_ids`; MPNet's
    /// padding index is fixed at 1).
    pub fn position_offset(self, pad_token_id: Option<usize>) -> usize {
        match self {
            Family::Bert => 0,
            Family::Roberta | Family::XlmRoberta => roberta::position_offset(pad_token_id),
            Family::Mpnet => mpnet::PADDING_IDX + 1,
        }
    }
}

/// The names of a family's tensors in a Hugging Face checkpoint, each without the task model's prefix
/// (`bert.`, `roberta.`, `mpnet.`: [`Checkpoint::prefixes`]), which a checkpoint saved from a task model
/// carries and a sentence-transformers folder does not.
#[derive(Debug)]
pub struct Checkpoint {
    /// Prefixes a task model's checkpoint puts before every name.
    pub prefixes: &'static [&'static str],
    /// Whether the embeddings hold a token-type table.
    pub token_types: bool,
    /// Under `encoder.layer.{i}.`: query, key, value, attention output, its layer norm, intermediate,
    /// output, its layer norm (the fields of [`super::model::BertLayer`] in order).
    pub layer: [&'static str; 8],
    /// The relative position bias table `[buckets, heads]`, shared by every block (MPNet).
    pub relative_attention_bias: Option<&'static str>,
}

impl Checkpoint {
    /// The names of block `i`'s tensors, in [`Checkpoint::layer`]'s order.
    pub fn layer_names(&self, i: usize) -> [String; 8] {
        self.layer.map(|name| format!("encoder.layer.{i}.{name}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_read_by_its_model_type_and_others_are_refused_by_name() {
        for family in [Family::Bert, Family::Roberta, Family::XlmRoberta, Family::Mpnet] {
            assert_eq!(Family::of_model_type(family.model_type()), Ok(family));
            assert!(READ.contains(family.model_type()));
        }
        let refusal = Family::of_model_type("gpt2").unwrap_err();
        assert!(refusal.contains("\"gpt2\"") && refusal.contains(READ), "{refusal}");
        assert_eq!(Family::Bert.position_offset(Some(0)), 0);
        assert_eq!(Family::Mpnet.position_offset(Some(1)), 2);
        assert_eq!(Family::XlmRoberta.position_offset(Some(1)), 2);
    }
}
