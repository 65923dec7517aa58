//! Hybrid retrieval: BM25 and a dense method fused by reciprocal rank over the shared leaf units
//! (arbor_eval::retrievers::fusion). The dense side is flat ranking of the encoder's unit vectors unless the
//! experiment names another method (a trained SproutRAG, say), whose items credit the units they cover.

use std::borrow::Cow;

use arbor_eval::retrievers::bm25::Bm25;
use arbor_eval::retrievers::flat::FlatDense;
use arbor_eval::retrievers::fusion::Fusion;
use serde::{Deserialize, Serialize};

use super::{Built, Context, Method, MethodSpec, QueryVectors, Served, Serving, Trains};

/// `Hybrid((k_rrf: 60))`, or `Hybrid((dense: Some(SproutRag((...)))))`, in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HybridConfig {
    /// RRF's constant (60 in Cormack et al.).
    pub k_rrf: f32,
    /// How deep each ranking is read (`None`: every unit in scope).
    pub depth: Option<usize>,
    /// The dense side (`None`: flat ranking of the encoder's vectors of the shared units).
    pub dense: Option<Box<Method>>,
}

impl Default for HybridConfig {
    fn default() -> Self {
        HybridConfig { k_rrf: 60.0, depth: None, dense: None }
    }
}

impl MethodSpec for HybridConfig {
    fn label(&self) -> String {
        let depth = self.depth.map_or(String::new(), |d| format!(", depth {d}"));
        let dense = self.dense.as_ref().map_or("dense units".to_string(), |m| m.label());
        format!("Hybrid (BM25 + {dense}, RRF k={}{depth})", self.k_rrf)
    }

    fn kind(&self) -> String {
        self.dense.as_ref().map_or("Hybrid".into(), |m| format!("Hybrid with {}", m.kind()))
    }

    fn trains(&self) -> Trains {
        self.dense.as_ref().map_or(Trains::No, |m| m.spec().trains())
    }

    fn dense_control(&self) -> Option<super::dense::DenseConfig> {
        self.dense.as_ref().and_then(|m| m.spec().dense_control())
    }

    fn reads_splits(&self) -> Vec<(&'static str, String)> {
        self.dense.as_ref().map_or(Vec::new(), |m| m.spec().reads_splits())
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.k_rrf >= 0.0 && self.depth != Some(0), "Hybrid: k_rrf must be >= 0 and depth at least 1");
        self.dense.as_ref().map_or(Ok(()), |m| m.spec().check())
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let units = &ctx.leaves.units;
        let dense = match &self.dense {
            Some(method) => method.spec().build(ctx)?,
            None => Built {
                retriever: Box::new(FlatDense { name: "dense".into(), chunks: Cow::Borrowed(units), embeddings: Cow::Borrowed(ctx.unit_vectors()?) }),
                queries: QueryVectors::Encoder,
                models: Vec::new(),
                details: None,
            },
        };
        let bm25 = Bm25::build(ctx.corpus, units, ctx.scope, ctx.docs);
        let fusion = Fusion {
            name: self.label(),
            parts: vec![Box::new(bm25), dense.retriever],
            chunks: Cow::Borrowed(units),
            k_rrf: self.k_rrf,
            depth: self.depth.unwrap_or(usize::MAX),
        };
        Ok(Built { retriever: Box::new(fusion), ..dense })
    }

    fn serve<'a>(&self, at: &Serving<'a>) -> anyhow::Result<Served<'a>> {
        let index = at.index;
        let dense = self.dense.as_deref().unwrap_or(&Method::Flat).spec().serve(at)?;
        let bm25 = Method::Bm25.spec().serve(at)?;
        let fusion = Fusion {
            name: self.label(),
            parts: vec![bm25.retriever, dense.retriever],
            chunks: Cow::Borrowed(&index.units),
            k_rrf: self.k_rrf,
            depth: self.depth.unwrap_or(usize::MAX),
        };
        Ok(Served { retriever: Box::new(fusion), embeds_queries: dense.embeds_queries })
    }
}
