//! arbor-losses: the training objectives of SproutRAG and SmartChunk as pure functions of tensors, one
//! per file, each with its equation in its doc comment (ARCHITECTURE.md, "losses"). No IO and no model here:
//! inputs are tensors, outputs scalar tensors that autodiff can differentiate.
//!
//! - [`info_nce`]: L_ret, contrastive retrieval loss with in-batch (and optional hard) negatives
//!   (SproutRAG, Section 4.1); [`info_nce_over`], the same over a candidate list with false negatives
//!   left out (the corpus-wide negatives of arbor_trainers::negatives).
//! - [`attention_structure`]: L_attn, pulls aggregated attention toward gold merge pairs (Section 4.2).
//! - [`listwise_softmax`]: L_rank, the cross-encoder reranker's softmax over a query's positive and
//!   negatives (the reranking stage of SproutRAG, Section 3).
//! - [`margin_mse`]: MarginMSE, a bi-encoder distilled from the cross-encoder's margins between a query's
//!   positive and its negatives (Hofstätter et al., 2020, eq. 1).
//! - [`node_contrastive`]: L_node, a tree node against its ancestors and the siblings on its path (arbor's
//!   node-level training, arbor's addition).
//! - [`vae_loss`]: the SentenceVAE's token cross-entropy and KL terms.
//! - [`compression_mse`]: L_comp, the chunk compressor to its summary's embedding (SmartChunk, 4.3).
//! - [`grpo_loss`], [`group_advantages`]: the planner's GRPO objective (SmartChunk, eqs. 3-5).
//! - [`planner_reward`]: the planner's reward R = R_QA + R_Cost + R_Format + R_Length (+ R_PlanningAcc).
//!
//! The joint objective is L = L_ret + lambda * L_attn (+ the SentenceVAE term), combined by the trainer.

mod attention;
mod compression;
mod grpo;
mod info_nce;
mod listwise;
mod margin_mse;
mod node;
mod reward;
mod vae;

pub use attention::{attention_structure, attention_structure_at_pairs};
pub use compression::compression_mse;
pub use grpo::{Grpo, group_advantages, grpo_loss};
pub use info_nce::{info_nce, info_nce_over};
pub use listwise::listwise_softmax;
pub use margin_mse::margin_mse;
pub use node::node_contrastive;
pub use reward::{PlanOutcome, Reward, RewardWeights, planner_reward};
pub use vae::vae_loss;

/// What the losses' tests share.
#[cfg(test)]
mod testing {
    use burn::tensor::backend::Backend;
    use burn::tensor::{Tensor, TensorData};

    /// A `[rows, len / rows]` tensor of `v`, row by row.
    pub fn t<B: Backend>(v: &[f32], rows: usize) -> Tensor<B, 2> {
        Tensor::from_data(TensorData::new(v.to_vec(), [rows, v.len() / rows]), &Default::default())
    }
}
