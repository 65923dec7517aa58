//! A SproutRAG row over documents no run has seen (`arbor index --trees`, and `arbor index --from RUN --row
//! SproutRAG` for a row a run trained: issue 63): each document's leaf vectors and tree, and the queries'
//! vectors, made as the row's `build` makes them in an experiment (SproutRAG, Sections 2.1-2.3 and 3):
//! - token attention (`TokenBlocks`): the encoder's attention between units in windows, aggregated by the
//!   row's (layer, head) weights (uniform for the untrained row, learned on L_attn otherwise), the leaves the
//!   units' own vectors (or those of the windows' pass, `leaf_vectors: InContext`), the queries the encoder's;
//! - the trained SLLM (`Sllm`): the units' pooled vectors (through the fine-tuned encoder when it was
//!   fine-tuned) through the SLLM over the whole document give the leaves and M; the queries go through the
//!   same model as one-unit documents (or, with `vectors: Encoder`, leaves and queries are the pooled vectors).
//!
//! The tree is stored as its merges under the row's linkage; an index rebuilds it over the stored leaves
//! (`Tree::from_merges`, the progressive means `Tree::build_with` gives).

use std::path::Path;

use anyhow::Context;
use arbor_eval::structures::tree::Similarity;
use arbor_models::aggregator::HeadAggregator;
use arbor_models::encoder::Kernel;
use arbor_models::pooling::Role;
use arbor_models::sproutrag::SproutRagModel;
use arbor_models::{DefaultBackend, SentenceEncoder};

use crate::methods::MethodSpec;

use super::{AttentionSource, LeafVectors, SllmVectors, SproutRagConfig, matrix, rows, to_vec};

/// Where a served row's attention comes from.
enum Attention {
    /// The encoder's token attention in windows of `window` tokens under these (layer, head) weights.
    Tokens { window: usize, head_weights: Vec<f32>, in_context: bool },
    /// The trained SLLM, with the kernel of its fine-tuned encoder when it was fine-tuned.
    Sllm(Box<SproutRagModel<DefaultBackend>>, Option<Kernel<DefaultBackend>>),
}

/// A SproutRAG row ready to make trees and query vectors over new documents.
pub struct RowTrees {
    /// The row's settings (its trees are built by everything but the search).
    pub config: SproutRagConfig,
    attention: Attention,
}

/// One document as the row indexes it: its leaves' vectors and its tree's merges.
pub struct DocumentTree {
    pub leaves: Vec<Vec<f32>>,
    pub merges: Vec<(u32, u32)>,
}

impl RowTrees {
    /// The untrained default row, `SproutRag(())`: token attention in 256-token windows, uniform head weights.
    pub fn untrained(encoder: &SentenceEncoder<DefaultBackend>) -> Self {
        let config = SproutRagConfig::default().index_settings();
        let (layers, heads) = (encoder.config.num_hidden_layers, encoder.config.num_attention_heads);
        let head_weights = to_vec(HeadAggregator::<DefaultBackend>::new(layers, heads, config.aggregation, encoder.device()).head_weights());
        let AttentionSource::TokenBlocks { window_tokens, .. } = config.attention else { unreachable!("the default reads token attention") };
        RowTrees { config, attention: Attention::Tokens { window: window_tokens, head_weights, in_context: false } }
    }

    /// The trained row `config` (its index settings) whose training folder is `dir`: the learned head
    /// weights, or the trained SLLM (with its fine-tuned encoder).
    pub fn trained(config: SproutRagConfig, dir: &Path, encoder: &SentenceEncoder<DefaultBackend>) -> anyhow::Result<Self> {
        let training = config.training.as_ref().context("an untrained SproutRAG row has no training folder")?;
        let unfinished = || format!("{} holds no finished training of {}", dir.display(), config.label());
        let attention = match config.attention {
            AttentionSource::TokenBlocks { window_tokens, leaf_vectors } => {
                let shape = (encoder.config.num_hidden_layers, encoder.config.num_attention_heads);
                let aggregator = arbor_trainers::head_weights::finished::<DefaultBackend>(shape, dir)?.with_context(unfinished)?;
                Attention::Tokens { window: window_tokens, head_weights: to_vec(aggregator.head_weights()), in_context: leaf_vectors == LeafVectors::InContext }
            }
            AttentionSource::Sllm => {
                let dims = (encoder.dim(), encoder.config.vocab_size);
                let fine_tuned = (!training.freeze_encoder).then(|| encoder.bert.clone());
                let model = arbor_trainers::sproutrag::finished(&config.model, config.aggregation, dims, fine_tuned, dir)?.with_context(unfinished)?;
                let kernel = model.encoder.as_ref().map(|bert| encoder.kernel_for(bert));
                Attention::Sllm(Box::new(model), kernel)
            }
        };
        Ok(RowTrees { config, attention })
    }

    /// The width of the leaves' and queries' vectors.
    pub fn dim(&self, encoder: &SentenceEncoder<DefaultBackend>) -> usize {
        match (&self.attention, self.config.vectors) {
            (Attention::Sllm(..), SllmVectors::Model) => self.config.model.vae.map_or(encoder.dim(), |vae| vae.d_latent),
            _ => encoder.dim(),
        }
    }

    /// The pooled vectors of `texts` the row starts from: the fine-tuned encoder's, else the pretrained one's.
    fn pooled(&self, encoder: &SentenceEncoder<DefaultBackend>, role: Role, texts: &[&str], batch: usize) -> Vec<Vec<f32>> {
        let kernel = match &self.attention {
            Attention::Sllm(_, Some(kernel)) => kernel,
            _ => encoder.kernel(),
        };
        encoder.embed_as(kernel, role, texts, batch, &mut |_| {})
    }

    /// One document: `texts` its units' text (what token attention reads), `inputs` what the encoder reads of
    /// each (after the row's summary when it reads one); `leaves`, the units' pooled vectors when the caller
    /// has them (they are computed otherwise).
    pub fn document(
        &self,
        encoder: &SentenceEncoder<DefaultBackend>,
        texts: &[&str],
        inputs: &[&str],
        leaves: Option<Vec<Vec<f32>>>,
        batch: usize,
    ) -> anyhow::Result<DocumentTree> {
        let n = texts.len();
        anyhow::ensure!(n > 0 && inputs.len() == n, "a tree needs at least one unit, and one input per unit");
        let (leaves, merges) = match &self.attention {
            Attention::Tokens { window, head_weights, in_context } => {
                let links = encoder.unit_similarity(texts, *window, batch, head_weights, *in_context);
                let merges = self.config.linkage.merges(&Similarity::Sparse { n, edges: &links.edges }).map_err(anyhow::Error::msg)?;
                let leaves = match (links.vectors, leaves) {
                    (Some(in_context), _) => in_context,
                    (None, Some(given)) => given,
                    (None, None) => self.pooled(encoder, Role::Passage, inputs, batch),
                };
                (leaves, merges)
            }
            Attention::Sllm(model, _) => {
                let pooled = leaves.unwrap_or_else(|| self.pooled(encoder, Role::Passage, inputs, batch));
                let pooled = matrix(pooled.iter());
                let out = model.document(pooled.clone(), false);
                let merges = self.config.linkage.merges(&Similarity::Dense { n, values: &to_vec(out.m) }).map_err(anyhow::Error::msg)?;
                let leaves = match self.config.vectors {
                    SllmVectors::Model => out.embeddings,
                    SllmVectors::Encoder => pooled,
                };
                (rows(leaves), merges)
            }
        };
        Ok(DocumentTree { leaves, merges })
    }

    /// The vectors of `questions` the row compares with its trees.
    pub fn queries(&self, encoder: &SentenceEncoder<DefaultBackend>, questions: &[&str], batch: usize) -> Vec<Vec<f32>> {
        let pooled = self.pooled(encoder, Role::Query, questions, batch);
        match (&self.attention, self.config.vectors) {
            (Attention::Sllm(model, _), SllmVectors::Model) => rows(model.queries(matrix(pooled.iter()))),
            _ => pooled,
        }
    }
}
