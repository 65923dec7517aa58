//! SproutRAG (Sections 2.1-2.3 and 3): unit attention -> HeadAggregator -> M -> greedy tree with
//! progressive embeddings, one tree per document, searched by hierarchical beam search (or collapsed).
//! Two attention sources:
//! - `TokenBlocks`: the frozen encoder's token attention pooled into unit blocks; queries keep the
//!   encoder's embeddings, leaves too (`leaf_vectors: Alone`) or take them from the attention windows'
//!   own pass (`InContext`, one pass per document instead of two); the head weights stay at their initial values, or, with `training`, are
//!   learned on L_attn over the training split's documents (`train.rs`);
//! - `Sllm`: the trained SLLM (`train.rs`); leaves are its unit embeddings, queries its query embeddings, or,
//!   with `vectors: Encoder` (the control that isolates what the SLLM adds), both are the encoder's pooled
//!   vectors (the fine-tuned encoder's, when it is fine-tuned) while M and so the tree still come from the SLLM.
//!
//! Trees go into the cache as `trees-<key>/<doc key>.tree` (key: the encoder, the index settings, the
//! trained model), so methods that differ only in their search share them, and later runs read them back.

mod serve;
mod train;

pub use serve::{DocumentTree, RowTrees};

use arbor_models::pooling::Role;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use anyhow::bail;
use arbor_datasets::DocSpan;
use arbor_datasets::merge_pairs::MergePairs;
use arbor_eval::retrievers::beam::BeamConfig;
use arbor_eval::index::Chunks;
use arbor_eval::Retriever;
use arbor_eval::retrievers::document_level::DocumentLevel;
use arbor_eval::retrievers::tree_retrieval::{TreeRetriever, TreeSearch, tree_vector};
use arbor_eval::structures::tree::{Similarity, Tree};
use arbor_eval::structures::linkage::Linkage;
use arbor_models::DefaultBackend;
use arbor_models::aggregator::{AggregationInit, HeadAggregator};
use arbor_models::sproutrag::SproutRagModelConfig;
use arbor_trainers::config::TrainConfig;
use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::dense::DenseConfig;
use super::document_level;
use super::document_summary::DocumentSummary;
use super::training::{in_bf16, on_a_sample, on_devices};
use super::{Built, Context, MethodSpec, QueryVectors, Served, Serving, Trains};
use crate::cache::{Artefact, key};
use crate::progress::bar;
use crate::trained::TrainedModel;

/// How SproutRAG indexes and searches a document: `SproutRag((...))` in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SproutRagConfig {
    /// Where the attention between units comes from.
    pub attention: AttentionSource,
    /// How the (layer, head) weights start; without training they stay there.
    pub aggregation: AggregationInit,
    pub search: TreeSearch,
    /// Sizes of the SLLM (and SentenceVAE), for `attention: Sllm`.
    pub model: SproutRagModelConfig,
    /// With `Sllm`: the vectors of leaves and queries (the SLLM's own by default).
    #[serde(skip_serializing_if = "SllmVectors::is_model")]
    pub vectors: SllmVectors,
    /// The rule that merges the tree's nodes (the paper's single linkage by default; issue 45). It
    /// shapes the trees searched; the trees a training reads (L_node's) keep single linkage.
    #[serde(skip_serializing_if = "Linkage::is_single")]
    pub linkage: Linkage,
    /// Every leaf unit read after its document's summary (SAC's inputs): by the encoder that embeds the
    /// leaves (token-attention trees with `leaf_vectors: Alone`), and by the SLLM's encoder in training,
    /// on validation and at evaluation. The token attention itself reads the document's text as it is.
    /// Its matched control is the dense fine-tune over the same inputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<DocumentSummary>,
    /// A document level above the trees (issue 62): each query descends only into the documents whose
    /// vectors rank best for it (`beam_docs`, by their leaves' mean, their root, or, for a row whose queries
    /// are the frozen encoder's, their summary: [`document_level`]). A search setting: the
    /// trees and the trained model are the row's without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents: Option<DocumentLevel>,
    /// With `Sllm`: the joint training (required). With `TokenBlocks`: `None` keeps the initial head
    /// weights; `Some` learns them on L_attn over the training split (only the head-weight settings:
    /// lr_aggregation, epochs, warmup, clipping, merge pairs, holdout, seed are read).
    pub training: Option<TrainConfig>,
}

impl Default for SproutRagConfig {
    fn default() -> Self {
        SproutRagConfig {
            attention: AttentionSource::TokenBlocks { window_tokens: 256, leaf_vectors: LeafVectors::Alone },
            aggregation: AggregationInit::Uniform,
            search: TreeSearch::Beam(BeamConfig::default()),
            model: SproutRagModelConfig::default(),
            vectors: SllmVectors::Model,
            linkage: Linkage::Single,
            summary: None,
            documents: None,
            training: None,
        }
    }
}

/// The source of the unit-by-unit attention A[l, h].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum AttentionSource {
    /// The encoder's token attention mean-pooled into unit blocks over sliding windows of this many tokens.
    TokenBlocks {
        window_tokens: usize,
        /// The leaves' embeddings: each unit encoded alone (as flat's), or from the windows' own pass.
        #[serde(default, skip_serializing_if = "LeafVectors::is_alone")]
        leaf_vectors: LeafVectors,
    },
    /// The trained sentence-level transformer's attention between units (needs `training`).
    Sllm,
}

/// Where a token-attention tree's leaf embeddings come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LeafVectors {
    /// Each unit encoded on its own, the vectors flat retrieval uses. (The reference code pools its leaf
    /// vectors from its one document pass: that is `InContext`.)
    #[default]
    Alone,
    /// Each unit's token states in the attention windows, mean-pooled (special tokens left out) over the
    /// windows that hold it: one encoder pass per document instead of two, and each unit read in context.
    InContext,
}

/// With `attention: Sllm`, the vectors leaves and queries are compared with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SllmVectors {
    /// The SLLM's contextual unit embeddings and its query embeddings (the paper's).
    #[default]
    Model,
    /// The encoder's pooled vectors of units and queries, through the fine-tuned encoder when it is
    /// fine-tuned: the same trained model and tree, without the SLLM's embeddings.
    Encoder,
}

impl SllmVectors {
    fn is_model(&self) -> bool {
        *self == SllmVectors::Model
    }
}

impl LeafVectors {
    fn is_alone(&self) -> bool {
        *self == LeafVectors::Alone
    }
}

impl SproutRagConfig {
    /// The settings the index depends on (everything but the search): methods equal here share one
    /// index and one training run.
    pub fn index_settings(&self) -> SproutRagConfig {
        SproutRagConfig { search: TreeSearch::Collapsed, documents: None, ..self.clone() }
    }

    /// The retriever over `trees`: this row's search, under its document level if it has one (`ctx`: an
    /// experiment's, where a summary's vector can be made; `None` when serving an index).
    fn retriever<'a>(&self, trees: Vec<Option<Tree>>, leaves: &'a Chunks, ctx: Option<&Context>) -> anyhow::Result<Box<dyn Retriever + 'a>> {
        let of_trees = |vector| trees.iter().map(|t| t.as_ref().and_then(|t| tree_vector(vector, t))).collect();
        let level = document_level::vectors(self.documents, ctx, self.summary.as_ref(), of_trees)?;
        Ok(document_level::scoped(Box::new(TreeRetriever::new(self.label(), trees, leaves, self.search)), level))
    }

    /// The settings the trained model depends on (the index's, but for the vectors read from it): the
    /// key by which a run records its trained models and `evaluate --from` finds them.
    pub fn model_settings(&self) -> SproutRagConfig {
        SproutRagConfig { vectors: SllmVectors::Model, linkage: Linkage::Single, ..self.index_settings() }
    }

    /// Whether the tree's attention is the trained SLLM's (the paper's trained SproutRAG).
    pub fn is_trained(&self) -> bool {
        self.attention == AttentionSource::Sllm
    }

    /// How its attention is obtained, in words: untrained, learned head weights, or trained.
    fn attention_kind(&self) -> &'static str {
        match (&self.attention, &self.training) {
            (AttentionSource::TokenBlocks { .. }, None) => "untrained",
            (AttentionSource::TokenBlocks { .. }, Some(_)) => "learned weights",
            (AttentionSource::Sllm, _) => "trained",
        }
    }
}

impl MethodSpec for SproutRagConfig {
    fn label(&self) -> String {
        let search = match self.search {
            TreeSearch::Beam(b) => {
                let cap = b.max_leaves.map_or(String::new(), |m| format!(" max_leaves={m}"));
                format!("beam b={} delta={} {:?}{cap}", b.beam_width, b.delta, b.strategy)
            }
            TreeSearch::Collapsed => "collapsed tree".into(),
            TreeSearch::LeavesOnly => "leaves only".into(),
            TreeSearch::UpperOnly => "upper nodes only".into(),
            TreeSearch::LeavesInContext { weight } => format!("leaves in context w={weight}"),
        };
        let search = match self.linkage {
            Linkage::Single => search,
            other => format!("{other:?} linkage, {search}"),
        };
        let search = match &self.summary {
            None => search,
            Some(summary) => format!("{}, {search}", summary.describe()),
        };
        let search = format!("{search}{}", document_level::describe(self.documents));
        match (&self.attention, &self.training) {
            (AttentionSource::TokenBlocks { window_tokens, leaf_vectors }, None) => {
                format!("SproutRAG untrained ({:?} weights, token attention w={window_tokens}{}, {search})", self.aggregation, leaves(*leaf_vectors))
            }
            (AttentionSource::TokenBlocks { window_tokens, leaf_vectors }, Some(t)) => format!(
                "SproutRAG learned weights (from {:?}, token attention w={window_tokens}{}, lr {}, {} epochs{}, {search})",
                self.aggregation,
                leaves(*leaf_vectors),
                t.lr_aggregation,
                t.schedule.epochs,
                match (t.merge_pairs, on_a_sample(t)) {
                    (MergePairs::SameParagraph, _) => String::new(),
                    (other, None) => format!(", G {other:?}"),
                    (other, Some(sample)) => format!(", G {other:?}, {sample}"),
                }
            ),
            (AttentionSource::Sllm, Some(t)) => {
                let mut parts = vec![format!("SLLM {}x{}", self.model.sllm.layers, self.model.sllm.heads)];
                if let Some(vae) = self.model.vae {
                    parts.push(format!("SentenceVAE d={}", vae.d_latent));
                }
                if !t.freeze_encoder {
                    parts.push(format!("encoder fine-tuned at {}", t.lr_encoder));
                }
                parts.push(format!("lambda={}", t.lambda));
                if t.merge_pairs != MergePairs::SameParagraph {
                    parts.push(format!("G {:?}", t.merge_pairs));
                }
                if t.node_loss > 0.0 {
                    parts.push(format!("L_node x{}", t.node_loss));
                }
                parts.extend(t.negatives.describe(t.batch_size));
                parts.extend(t.describe_docs_per_step());
                parts.extend(t.describe_grad_cache());
                if t.doc_loss > 0.0 {
                    parts.push(format!("document term x{}", t.doc_loss));
                }
                if !t.validation.is_documents() {
                    parts.push("the epoch chosen over every validation document".into());
                }
                if self.vectors == SllmVectors::Encoder {
                    parts.push("leaves and queries: the encoder's vectors".into());
                }
                parts.push(format!("{} epochs", t.schedule.epochs));
                parts.extend(on_a_sample(t));
                parts.extend(in_bf16(t));
                parts.extend(on_devices(t));
                format!("SproutRAG trained ({}, {search})", parts.join(", "))
            }
            (AttentionSource::Sllm, None) => "SproutRAG (untrained SLLM: rejected)".into(),
        }
    }

    fn kind(&self) -> String {
        let search = match self.search {
            TreeSearch::Beam(_) => "beam",
            TreeSearch::Collapsed => "collapsed",
            TreeSearch::LeavesOnly => "leaves only",
            TreeSearch::UpperOnly => "upper only",
            TreeSearch::LeavesInContext { .. } => "leaves in context",
        };
        format!("SproutRAG {}, {search}", self.attention_kind())
    }

    fn trains(&self) -> Trains {
        match (&self.attention, &self.training) {
            (_, None) => Trains::No,
            (AttentionSource::Sllm, Some(t)) => Trains::Queries(t.clone()),
            // Head weights learn from the training queries only through gold merge pairs.
            (AttentionSource::TokenBlocks { .. }, Some(t)) if t.merge_pairs == MergePairs::Evidence => Trains::Queries(t.clone()),
            (AttentionSource::TokenBlocks { .. }, Some(t)) => Trains::Documents(t.split.clone()),
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        if let Some(summary) = &self.summary {
            summary.check().map_err(|e| anyhow::anyhow!("SproutRag summary: {e}"))?;
            if let AttentionSource::TokenBlocks { leaf_vectors: LeafVectors::InContext, .. } = self.attention {
                bail!("SproutRag summary: leaf_vectors: InContext reads each unit in the document's own windows, where no summary is written: use Alone");
            }
        }
        match (&self.attention, &self.training) {
            (AttentionSource::TokenBlocks { window_tokens, .. }, _) if *window_tokens < 8 => {
                bail!("SproutRag attention window_tokens must be at least 8, got {window_tokens}")
            }
            (AttentionSource::TokenBlocks { .. }, Some(t)) if !t.freeze_encoder => {
                bail!("SproutRag training.freeze_encoder: false needs attention: Sllm (TokenBlocks learns head weights only)")
            }
            (AttentionSource::TokenBlocks { .. }, Some(t)) => t.check().map_err(anyhow::Error::msg)?,
            (AttentionSource::Sllm, None) => bail!("SproutRag attention: Sllm needs training: Some((...)): an untrained SLLM is random"),
            (AttentionSource::Sllm, Some(t)) => t.check().map_err(anyhow::Error::msg)?,
            _ => {}
        }
        if let Some(t) = self.training.as_ref().filter(|t| t.negatives.corpus().is_some()) {
            bail!(
                "SproutRag training.negatives: {:?}: SproutRAG's joint step reads whole documents (its SLLM and trees are a \
                 document's), so its batches are documents' queries, not queries drawn across documents: set docs_per_step to read \
                 several documents a step, use Mined((...)) (negatives mined from the other documents) or leave negatives out \
                 (InDocument), or train Dense with Corpus",
                t.negatives
            );
        }
        if let (AttentionSource::TokenBlocks { .. }, Some(t)) = (&self.attention, &self.training)
            && (t.docs_per_step > 1 || t.doc_loss > 0.0)
        {
            bail!("SproutRag training.docs_per_step and doc_loss are the joint step's (attention: Sllm); attention: TokenBlocks learns head weights alone");
        }
        if let (AttentionSource::TokenBlocks { .. }, Some(t)) = (&self.attention, &self.training)
            && !t.negatives.is_in_document()
        {
            bail!("SproutRag training.negatives: attention: TokenBlocks learns head weights from its own objective, which reads no negatives: leave negatives out");
        }
        if self.vectors == SllmVectors::Encoder && self.attention != AttentionSource::Sllm {
            bail!("SproutRag vectors: Encoder needs attention: Sllm (token-attention trees take leaf_vectors)");
        }
        let frozen_queries = matches!(self.attention, AttentionSource::TokenBlocks { .. });
        document_level::check(self.documents, "SproutRag", document_level::Vectors { root: true, frozen_queries })?;
        if let TreeSearch::Beam(b) = self.search
            && (b.beam_width == 0 || b.max_leaves == Some(0)) {
                bail!("SproutRag beam_width and max_leaves must be at least 1");
            }
        Ok(())
    }

    /// The dense fine-tune on the same queries, batches and schedule, over the same inputs (with `summary`,
    /// every unit after its document's summary: a trained SAC).
    fn dense_control(&self) -> Option<DenseConfig> {
        match self.trains() {
            Trains::Queries(training) => Some(DenseConfig { summary: self.summary.clone(), ..DenseConfig::matching(&training) }),
            _ => None,
        }
    }

    fn index_key(&self) -> Option<String> {
        Some(key(&self.index_settings()))
    }

    /// Builds (training first, for `Sllm`) the trees of `ctx.docs`, or reads back those in the cache.
    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        match (&self.attention, &self.training) {
            (AttentionSource::TokenBlocks { window_tokens, leaf_vectors }, training) => {
                self.build_token_attention(ctx, *window_tokens, *leaf_vectors, training.as_ref())
            }
            (AttentionSource::Sllm, Some(training)) => self.build_sllm(ctx, training),
            (AttentionSource::Sllm, None) => bail!("attention: Sllm needs training (the experiment check rejects this)"),
        }
    }

    /// The trees an index keeps are the untrained default row's (`arbor index --trees`) or those of the row
    /// of a run it was built from (`--from RUN --row SproutRAG`): any search over them (beam search of any
    /// width, collapsed, leaves in context, a document level). `SproutRag(())` (the bare name) over an index
    /// of a run's row is that row, searched as it searched in the run.
    fn serve<'a>(&self, at: &Serving<'a>) -> anyhow::Result<Served<'a>> {
        let index = at.index;
        let row = match at.row {
            Some((super::Method::SproutRag(row), _)) => Some(row),
            _ => None,
        };
        let asked = match row {
            Some(row) if *self == SproutRagConfig::default() => row,
            _ => self,
        };
        let kept = row.map_or_else(|| SproutRagConfig::default().index_settings(), SproutRagConfig::index_settings);
        anyhow::ensure!(
            asked.index_settings() == kept,
            "this index keeps the trees of {}; {} needs trees built otherwise: run it in an experiment, or index --from the run \
             that trained it (only `search` and `documents` may differ)",
            kept.label(),
            asked.label()
        );
        let retriever = asked.retriever(index.sproutrag_trees()?, &index.units, None)?;
        Ok(Served { retriever, embeds_queries: true })
    }
}

/// The steps of [`SproutRagConfig`]'s `build`: for each attention source, the model (trained, or at its
/// start), then the trees indexed over `ctx.docs`, then the retriever and the query vectors.
impl SproutRagConfig {
    /// Where the trees of this row's index settings (over `model`, a trained model's folder) are cached.
    fn trees_dir(&self, ctx: &Context<'_>, model: Option<&Path>) -> anyhow::Result<PathBuf> {
        let model_key = model.and_then(|m| m.file_name()).map(|n| n.to_string_lossy().into_owned());
        let read = (&ctx.keys.encoder, self.index_settings(), model_key);
        // The summaries' source by content (a file's, an endpoint's model and prompt), not by its path.
        let content = match &self.summary {
            None => key(&read),
            Some(summary) => key(&(read, summary.summariser.key()?)),
        };
        ctx.cache.dir(Artefact::Trees, &content)
    }

    /// The record of a model this row trained, in `dir`.
    fn record(&self, ctx: &Context<'_>, dir: PathBuf) -> anyhow::Result<TrainedModel> {
        let settings = serde_json::to_value(self.model_settings())?;
        Ok(TrainedModel { method: self.label(), settings, encoder: ctx.keys.encoder.clone(), dir, ..Default::default() })
    }

    /// Token attention (Section 2.1: the encoder's heads aggregated, in windows): the head weights at their
    /// uniform start or trained (`training`), then each document's tree from the attention between units.
    fn build_token_attention<'a>(
        &self,
        ctx: &'a Context<'a>,
        window_tokens: usize,
        leaf_vectors: LeafVectors,
        training: Option<&TrainConfig>,
    ) -> anyhow::Result<Built<'a>> {
        let e = ctx.encoder;
        let (aggregator, model_dir) = match training {
            None => (HeadAggregator::<DefaultBackend>::new(e.config.num_hidden_layers, e.config.num_attention_heads, self.aggregation, e.device()), None),
            Some(training) => {
                let (aggregator, dir) = train::train_head_weights(ctx, &self.label(), self, window_tokens, training)?;
                (aggregator, Some(dir))
            }
        };
        let in_context = leaf_vectors == LeafVectors::InContext;
        let headers = self.summary.as_ref().map(|s| s.headers(ctx)).transpose()?.map(|(h, _)| h);
        let unit_vectors = if in_context { None } else { Some(ctx.leaf_vectors(headers.as_deref())?) };
        let head_weights = to_vec(aggregator.head_weights());
        let trees = index_docs(ctx, &self.trees_dir(ctx, model_dir.as_deref())?, "token attention trees", self.linkage, |units| {
            let texts: Vec<&str> = units.iter().map(|&u| ctx.leaves.units.text(ctx.corpus, u)).collect();
            let links = e.unit_similarity(&texts, window_tokens, ctx.encoder_config.batch_size, &head_weights, in_context);
            let leaves: Vec<f32> = match &unit_vectors {
                Some(unit_vectors) => units.iter().flat_map(|&u| unit_vectors[u].iter().copied()).collect(),
                None => links.vectors.expect("in_context asks the pass for the vectors").concat(),
            };
            Ok((leaves, e.dim(), M::Sparse(links.edges)))
        })?;
        Ok(Built {
            retriever: self.retriever(trees, &ctx.leaves.units, Some(ctx))?,
            queries: QueryVectors::Encoder,
            models: model_dir.map(|dir| self.record(ctx, dir)).transpose()?.into_iter().collect(),
            details: None,
        })
    }

    /// The SLLM (Section 3): the model trained jointly (its encoder fine-tuned or frozen), then each
    /// document's tree from the model's M over its unit vectors, then the queries through the same model.
    fn build_sllm<'a>(&self, ctx: &'a Context<'a>, training: &TrainConfig) -> anyhow::Result<Built<'a>> {
        let headers = self.summary.as_ref().map(|s| s.training_headers(ctx, training)).transpose()?.map(|(h, _)| h);
        let headers = headers.as_deref();
        let (model, model_dir) = train::train_model(ctx, &self.label(), self, training, headers)?;
        // A fine-tuned encoder (inside the model) re-encodes units and queries, by the encoder's one
        // embedding path; a frozen one's vectors are given.
        let kernel = model.encoder.as_ref().map(|bert| ctx.encoder.kernel_for(bert));
        let frozen = match model.encoder {
            Some(_) => None,
            None => Some(ctx.leaf_vectors(headers)?),
        };
        // The fine-tuned encoder's unit vectors, cached under the trained model, computed only when a
        // tree is missing.
        let tuned = OnceCell::new();
        let trees = index_docs(ctx, &self.trees_dir(ctx, Some(&model_dir))?, "SLLM trees", self.linkage, |units| {
            let unit_vectors: &[Vec<f32>] = match (&frozen, &kernel) {
                (Some(frozen), _) => frozen,
                (None, Some(kernel)) => {
                    if tuned.get().is_none() {
                        let _ = tuned.set(ctx.tuned_unit_vectors(&model_dir, kernel, headers)?);
                    }
                    tuned.get().expect("set above")
                }
                (None, None) => unreachable!("a model without a fine-tuned encoder uses the frozen vectors"),
            };
            let pooled = matrix(units.iter().map(|&u| &unit_vectors[u]));
            let out = model.document(pooled.clone(), false);
            let leaves = match self.vectors {
                SllmVectors::Model => out.embeddings,
                SllmVectors::Encoder => pooled,
            };
            let dim = leaves.dims()[1];
            Ok((to_vec(leaves), dim, M::Dense(to_vec(out.m))))
        })?;
        let pooled = match &kernel {
            Some(kernel) => {
                let texts: Vec<&str> = ctx.queries.iter().map(|q| q.input.text.as_str()).collect();
                matrix(ctx.encoder.embed_as(kernel, Role::Query, &texts, ctx.encoder_config.batch_size, &mut |_| {}).iter())
            }
            None => matrix(ctx.query_vectors()?.iter()),
        };
        let q = match self.vectors {
            SllmVectors::Model => model.queries(pooled),
            SllmVectors::Encoder => pooled,
        };
        let vectors = rows(q);
        Ok(Built {
            retriever: self.retriever(trees, &ctx.leaves.units, Some(ctx))?,
            queries: QueryVectors::Own(vectors),
            models: vec![self.record(ctx, model_dir)?],
            details: None,
        })
    }
}

/// How a label names the leaf embeddings (nothing for the default).
fn leaves(v: LeafVectors) -> &'static str {
    match v {
        LeafVectors::Alone => "",
        LeafVectors::InContext => ", leaves in context",
    }
}

/// M between a document's units: dense from the SLLM, the pairs sharing a window from token attention.
enum M {
    Dense(Vec<f32>),
    Sparse(Vec<(u32, u32, f32)>),
}

/// One tree per document, read back from `trees_dir` if it is there; else `leaf_inputs` gives the leaf
/// embeddings, their width and M for the document's units, and the tree is built and saved.
fn index_docs(
    ctx: &Context,
    trees_dir: &Path,
    what: &str,
    linkage: Linkage,
    mut leaf_inputs: impl FnMut(&[usize]) -> anyhow::Result<(Vec<f32>, usize, M)>,
) -> anyhow::Result<Vec<Option<Tree>>> {
    let mut trees = vec![None; ctx.corpus.documents.len()];
    let pb = bar(ctx.docs.len(), what);
    for &d in ctx.docs {
        let units: Vec<usize> = ctx.leaves.units.by_doc[d].clone().collect();
        let spans: Vec<DocSpan> = units.iter().map(|&u| ctx.leaves.units.spans[u]).collect();
        let path = trees_dir.join(format!("{}.tree", ctx.keys.docs[d]));
        let load = |path: &Path| -> anyhow::Result<Tree> {
            let mut tree = arbor_eval::formats::tree_io::load(path).map_err(anyhow::Error::msg)?;
            // The file is named by the document's content; where the document sits in this corpus is ours.
            let same = tree.leaves.len() == spans.len() && tree.leaves.iter().zip(&spans).all(|(a, b)| a.span == b.span);
            anyhow::ensure!(same, "{} does not hold the units of document {:?}: delete it", path.display(), ctx.corpus.documents[d].id);
            tree.leaves.iter_mut().for_each(|leaf| leaf.doc = d);
            Ok(tree)
        };
        let build = || -> anyhow::Result<Tree> {
            let (leaves, dim, m) = leaf_inputs(&units)?;
            let n = units.len();
            let m = match &m {
                M::Dense(values) => Similarity::Dense { n, values },
                M::Sparse(edges) => Similarity::Sparse { n, edges },
            };
            Tree::build_with(spans.clone(), &leaves, dim, &m, linkage)
                .map_err(|e| anyhow::anyhow!("document {:?}: {e}", ctx.corpus.documents[d].id))
        };
        let save = |tree: &Tree, path: &Path| Ok(arbor_eval::formats::tree_io::save(tree, path)?);
        let tree = ctx.cache.load_or_build(&path, load, build, save)?;
        trees[d] = Some(tree);
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(trees)
}

fn matrix<'a>(rows: impl Iterator<Item = &'a Vec<f32>>) -> Tensor<DefaultBackend, 2> {
    let rows: Vec<&Vec<f32>> = rows.collect();
    let dim = rows.first().map_or(0, |r| r.len());
    let flat: Vec<f32> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), dim]), &Default::default())
}

fn to_vec<const D: usize>(t: Tensor<DefaultBackend, D>) -> Vec<f32> {
    t.into_data().to_vec::<f32>().expect("f32")
}

/// The rows of a matrix.
fn rows(t: Tensor<DefaultBackend, 2>) -> Vec<Vec<f32>> {
    let dim = t.dims()[1];
    to_vec(t).chunks(dim.max(1)).map(<[f32]>::to_vec).collect()
}
