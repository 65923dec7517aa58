//! BERT (Devlin et al., 2019) in Burn, as Hugging Face `transformers` implements it
//! (`models/bert/modeling_bert.py`: BertEmbeddings, BertSelfAttention, BertSelfOutput, BertIntermediate,
//! BertOutput; post-norm residual blocks, exact erf GELU), and the families built on its block (RoBERTa,
//! XLM-RoBERTa, MPNet: [`families`], chosen by config.json's `model_type`). Field names follow the checkpoint's names
//! (`attention.self.query` is `query`, `attention.output.dense` is `attention_output`, and so on), so
//! [`weights`] maps one to one. Attention is written step by step so every layer can hand back its
//! probabilities `[batch, heads, tokens, tokens]`.

mod attention;
pub mod autodiff;
#[cfg(target_arch = "x86_64")]
mod avx2;
pub mod config;
pub mod cpu;
pub mod families;
pub mod frozen;
pub mod init;
pub mod model;
pub mod precision;
mod tape;
pub mod trace;
pub mod weights;

pub use config::BertConfig;
pub use cpu::CpuBert;
pub use families::Family;
pub use frozen::FrozenLayers;
pub use model::{Bert, BertOutput};
pub use precision::Precision;
pub use weights::load_bert;
