//! RoBERTa (Liu et al., 2019) and XLM-RoBERTa (Conneau et al., 2020; `transformers` modeling_roberta.py,
//! modeling_xlm_roberta.py): BERT's blocks and names, with position ids that start past the padding index
//! (`create_position_ids_from_input_ids`: a real token's position is its index among the real tokens plus
//! `padding_idx + 1`, so a table of 514 rows reads 512 tokens) and a token-type table of one row. The
//! multilingual E5 and BGE-M3 encoders are XLM-RoBERTa checkpoints.

use super::Checkpoint;

/// RobertaModel's names (`roberta.` before each in a task model's checkpoint): BERT's.
pub const CHECKPOINT: Checkpoint = Checkpoint { prefixes: &["roberta."], ..super::bert::CHECKPOINT };

/// The first position id: `padding_idx + 1` (the padding index is config.json's `pad_token_id`, 1 in every
/// RoBERTa and MPNet checkpoint, which is what `transformers` assumes when it is absent).
pub fn position_offset(pad_token_id: Option<usize>) -> usize {
    pad_token_id.unwrap_or(1) + 1
}
