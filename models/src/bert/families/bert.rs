//! BERT (Devlin et al., 2019; `transformers` modeling_bert.py): positions from 0, a token-type table
//! (every token reads type 0), Q, K and V under `attention.self`. MiniLM, BGE (v1.5), E5 (v2) and GTE are
//! BERT checkpoints.

use super::Checkpoint;

/// BertModel's names (`bert.` before each in a task model's checkpoint).
pub const CHECKPOINT: Checkpoint = Checkpoint {
    prefixes: &["bert."],
    token_types: true,
    layer: [
        "attention.self.query",
        "attention.self.key",
        "attention.self.value",
        "attention.output.dense",
        "attention.output.LayerNorm",
        "intermediate.dense",
        "output.dense",
        "output.LayerNorm",
    ],
    relative_attention_bias: None,
};
