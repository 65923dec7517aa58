//! RAPTOR (Sarthi et al., arXiv:2401.18059): leaf chunks of about 100 tokens (sentences packed, RAPTOR's `split_text`), a tree of
//! summaries per document (arbor_eval::retrievers::raptor: PCA + Gaussian mixtures chosen by BIC, soft clusters,
//! layers until too few nodes), searched by collapsed tree or by tree traversal. Node summaries come from
//! the summariser ([`crate::summaries`]), extractive by default; each is embedded by the encoder.
//!
//! Two departures from RAPTOR's code, both stated in the report: the dimension reduction is PCA, not
//! UMAP (no maintained UMAP crate; PCA is deterministic), and a node summarises the source text of the
//! leaves under it rather than its children's summaries (the extractive summary points into the document).
//!
//! Trees go into the cache as `raptor-<key>/<doc key>.raptor` (key: the encoder, the tree settings, the
//! summariser and a summaries file's content), so both searches, and later runs, build each tree once.

use std::borrow::Cow;
use std::path::Path;

use arbor_eval::formats::raptor_io;
use arbor_eval::Retriever;
use arbor_eval::index::Chunks;
use arbor_eval::retrievers::document_level::DocumentLevel;
use arbor_eval::retrievers::raptor::{RaptorParams, RaptorRetriever, RaptorSearch, RaptorTree};
use arbor_eval::structures::chunkers::pack_sentences;
use arbor_eval::structures::gmm::ClusterParams;
use serde::{Deserialize, Serialize};

use arbor_datasets::{Span, TokenStarts};
use arbor_models::{DefaultBackend, SentenceEncoder};

use super::{Built, Context, MethodSpec, QueryVectors, Served, Serving, document_level};
use crate::cache::{Artefact, key};
use crate::progress::bar;
use crate::summaries::{Summariser, SummariserConfig};

/// `Raptor((search: Collapsed))` in an experiment file; the defaults are RAPTOR's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RaptorConfig {
    pub search: RaptorSearchConfig,
    /// Leaf chunk size in encoder tokens (RAPTOR: 100).
    pub leaf_tokens: usize,
    /// Summary length in tokens (RAPTOR's summarization_length: 100).
    pub summary_tokens: usize,
    pub reduction_dimension: usize,
    /// Soft-membership threshold on the mixture's posterior.
    pub threshold: f64,
    pub max_clusters: usize,
    /// A cluster over this many tokens is clustered again.
    pub max_length_in_cluster: usize,
    pub num_layers: usize,
    pub summariser: SummariserConfig,
    /// A document level above the trees (issue 62, [`super::document_level`]): each query searches only
    /// the documents whose vectors rank best for it (leaf mean, top layer, or summary). A search setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documents: Option<DocumentLevel>,
}

/// How the tree is searched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum RaptorSearchConfig {
    /// Every node ranked together (the token budget takes them in rank order).
    Collapsed,
    /// Layer by layer from the top, `top_k` nodes per layer.
    Traversal { top_k: usize },
}

impl Default for RaptorConfig {
    fn default() -> Self {
        RaptorConfig {
            search: RaptorSearchConfig::Collapsed,
            leaf_tokens: 100,
            summary_tokens: 100,
            reduction_dimension: 10,
            threshold: 0.1,
            max_clusters: 50,
            max_length_in_cluster: 3500,
            num_layers: 5,
            summariser: SummariserConfig::Extractive,
            documents: None,
        }
    }
}

impl RaptorConfig {
    /// A document's leaf chunks: its sentences packed to `leaf_tokens` (RAPTOR's `split_text`).
    pub fn leaf_spans(&self, text: &str, tokens: &TokenStarts, sentences: &[Span]) -> Vec<Span> {
        pack_sentences(text, tokens, sentences, self.leaf_tokens)
    }

    /// Document `d`'s tree over its leaf chunks (`spans` and their vectors): clustered, each cluster
    /// summarised by `summariser`, the summaries embedded by `encoder`. The one way a tree is built, for
    /// experiments and for `arbor index --raptor`.
    #[allow(clippy::too_many_arguments)]
    pub fn tree(
        &self,
        d: usize,
        spans: &[Span],
        vectors: Vec<Vec<f32>>,
        tokens: &TokenStarts,
        summariser: &dyn Summariser,
        encoder: &SentenceEncoder<DefaultBackend>,
        batch: usize,
    ) -> anyhow::Result<RaptorTree> {
        let counts: Vec<usize> = spans.iter().map(|&s| tokens.count(s)).collect();
        let mut summarise = |under: &[Span]| summariser.summarise(d, under, self.summary_tokens);
        let mut embed = |texts: &[String]| -> anyhow::Result<Vec<Vec<f32>>> {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            Ok(encoder.embed(&refs, batch, &mut |_| {}))
        };
        RaptorTree::build(spans, vectors, &counts, &self.params(), &mut summarise, &mut embed)
    }

    /// The settings the tree depends on (everything but the search): both searches share one tree.
    fn tree_settings(&self) -> RaptorConfig {
        RaptorConfig { search: RaptorSearchConfig::Collapsed, documents: None, ..self.clone() }
    }

    /// How the search is named and run.
    pub fn search(&self) -> RaptorSearch {
        match self.search {
            RaptorSearchConfig::Collapsed => RaptorSearch::Collapsed,
            RaptorSearchConfig::Traversal { top_k } => RaptorSearch::Traversal { top_k },
        }
    }

    /// The retriever over `trees`: this row's search, under its document level if it has one (`ctx`: an
    /// experiment's, where a summary's vector can be made; `None` when serving an index).
    fn retriever<'a>(&self, trees: Vec<Option<RaptorTree>>, leaves: Chunks, ctx: Option<&Context>) -> anyhow::Result<Box<dyn Retriever + 'a>> {
        let of_trees = |vector| trees.iter().map(|t| t.as_ref().and_then(|t| t.document_vector(vector))).collect();
        let level = document_level::vectors(self.documents, ctx, None, of_trees)?;
        let retriever = RaptorRetriever { name: self.label(), trees, leaves: Cow::Owned(leaves), search: self.search() };
        Ok(document_level::scoped(Box::new(retriever), level))
    }

    fn params(&self) -> RaptorParams {
        RaptorParams {
            cluster: ClusterParams { reduction_dimension: self.reduction_dimension, max_clusters: self.max_clusters, threshold: self.threshold },
            max_length_in_cluster: self.max_length_in_cluster,
            num_layers: self.num_layers,
        }
    }
}

impl MethodSpec for RaptorConfig {
    fn label(&self) -> String {
        let search = match self.search {
            RaptorSearchConfig::Collapsed => "collapsed tree".to_owned(),
            RaptorSearchConfig::Traversal { top_k } => format!("tree traversal, top {top_k}"),
        };
        format!("RAPTOR ({search}, {}-token leaves{})", self.leaf_tokens, document_level::describe(self.documents))
    }

    fn kind(&self) -> String {
        match self.search {
            RaptorSearchConfig::Traversal { .. } => "RAPTOR, traversal".into(),
            _ => "RAPTOR, collapsed".into(),
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.leaf_tokens > 0 && self.summary_tokens > 0 && self.max_clusters > 0,
            "RAPTOR: leaf_tokens, summary_tokens and max_clusters must be at least 1"
        );
        anyhow::ensure!(self.threshold > 0.0 && self.threshold < 1.0, "RAPTOR: threshold {} must lie in (0, 1)", self.threshold);
        anyhow::ensure!(!matches!(self.search, RaptorSearchConfig::Traversal { top_k: 0 }), "RAPTOR: traversal top_k must be at least 1");
        document_level::check(self.documents, "RAPTOR", document_level::Vectors { root: true, frozen_queries: true })?;
        self.summariser.check()
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let limit = ctx.encoder.max_content_tokens();
        anyhow::ensure!(self.leaf_tokens <= limit, "RAPTOR: leaf_tokens {} is more than the {limit} tokens the encoder reads", self.leaf_tokens);
        let sentences = ctx.sentences();
        let docs = &ctx.corpus.documents;
        let leaves = Chunks::from_docs((0..docs.len()).map(|d| {
            let spans: Vec<_> = sentences.spans[sentences.by_doc[d].clone()].iter().map(|s| s.span).collect();
            if ctx.docs.contains(&d) { self.leaf_spans(&docs[d].text, &ctx.leaves.tokens.0[d], &spans) } else { Vec::new() }
        }));
        let vectors = ctx.chunk_vectors(&("raptor leaves", self.leaf_tokens), &leaves, &|c| leaves.text(ctx.corpus, c).to_owned())?;
        let summariser = self.summariser.open(ctx.corpus, ctx.leaves, ctx.unit_vectors()?, &ctx.cache.root)?;
        // The tree does not depend on how it is searched: both searches share one cached tree per document.
        let dir = ctx.cache.dir(Artefact::Raptor, &key(&(&ctx.keys.encoder, &self.tree_settings(), self.summariser.key()?)))?;
        let mut trees: Vec<Option<RaptorTree>> = vec![None; docs.len()];
        let pb = bar(ctx.docs.len(), "RAPTOR trees");
        for &d in ctx.docs {
            let range = leaves.by_doc[d].clone();
            let spans: Vec<_> = leaves.spans[range.clone()].iter().map(|s| s.span).collect();
            let path = dir.join(format!("{}.raptor", ctx.keys.docs[d]));
            let load = |path: &Path| raptor_io::load(path).map_err(anyhow::Error::msg);
            let tokens = &ctx.leaves.tokens.0[d];
            let batch = ctx.encoder_config.batch_size;
            let build = || self.tree(d, &spans, vectors[range.clone()].to_vec(), tokens, summariser.as_ref(), ctx.encoder, batch);
            let save = |tree: &RaptorTree, path: &Path| Ok(raptor_io::save(tree, path)?);
            let tree = ctx.cache.load_or_build(&path, load, build, save)?;
            // The file is named by the document's content; its leaves must be this run's leaf chunks.
            let same = tree.nodes.iter().filter(|n| n.layer == 0).count() == spans.len()
                && tree.nodes.iter().zip(&spans).all(|(n, s)| n.layer == 0 && n.spans == [*s]);
            anyhow::ensure!(same, "{} does not hold the leaf chunks of document {:?}: delete it", path.display(), docs[d].id);
            trees[d] = Some(tree);
            pb.inc(1);
        }
        pb.finish_and_clear();
        let details = describe(&trees, &summariser.describe(), self.summary_tokens);
        let retriever = self.retriever(trees, leaves, Some(ctx))?;
        Ok(Built { retriever, queries: QueryVectors::Encoder, models: Vec::new(), details: Some(details) })
    }

    /// The trees an index keeps (`arbor index --raptor`) are the default row's: any search over them.
    fn serve<'a>(&self, at: &Serving<'a>) -> anyhow::Result<Served<'a>> {
        let index = at.index;
        anyhow::ensure!(
            self.tree_settings() == RaptorConfig::default().tree_settings(),
            "an index keeps the trees of `Raptor(())`; {} needs trees built otherwise: run it in an experiment (only `search` may differ)",
            self.label()
        );
        let trees = index.raptor_trees()?;
        let leaves = Chunks::from_docs(trees.iter().map(|t| t.as_ref().map_or_else(Vec::new, RaptorTree::leaf_spans)));
        Ok(Served { retriever: self.retriever(trees, leaves, None)?, embeds_queries: true })
    }
}

/// Depth and node counts over the trees, and the summariser.
fn describe(trees: &[Option<RaptorTree>], summariser: &str, summary_tokens: usize) -> String {
    let mut per_layer: Vec<usize> = Vec::new();
    let mut depths: Vec<usize> = Vec::new();
    for tree in trees.iter().flatten() {
        for (layer, n) in tree.layer_sizes().into_iter().enumerate() {
            if per_layer.len() <= layer {
                per_layer.push(0);
            }
            per_layer[layer] += n;
        }
        depths.push(tree.layers);
    }
    let mean_depth = depths.iter().sum::<usize>() as f64 / depths.len().max(1) as f64;
    format!(
        "{} trees, layers above the leaves: mean {mean_depth:.1}, max {}; nodes per layer (leaves first, summed over documents): {per_layer:?}; \
         summaries of at most {summary_tokens} tokens, {summariser}; dimension reduction by PCA (RAPTOR: UMAP)",
        depths.len(),
        depths.iter().max().copied().unwrap_or(0),
    )
}
