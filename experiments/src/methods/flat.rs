//! Flat dense retrieval over the shared leaf units (at most two sentences each): every unit scored by
//! cosine with the query, the top k handed on. The baseline every SproutRAG table starts from.

use std::borrow::Cow;

use arbor_eval::Retriever;
use arbor_eval::retrievers::approximate::Approximate;
use arbor_eval::retrievers::flat::FlatDense;
use arbor_eval::retrievers::prefilter::Prefiltered;

use super::{Built, Context, MethodSpec, QueryVectors, Served, Serving};

/// Candidates asked of an approximate index, scored exactly (recall@10 against exact search:
/// `scripts/bench_index.sh`).
const CANDIDATES: usize = 250;

/// `Flat` in an experiment file.
pub struct Flat;

impl MethodSpec for Flat {
    fn label(&self) -> String {
        "Flat (dense units)".into()
    }

    fn kind(&self) -> String {
        "Flat".into()
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let embeddings = ctx.unit_vectors()?;
        let retriever = FlatDense { name: self.label(), chunks: Cow::Borrowed(&ctx.leaves.units), embeddings: Cow::Borrowed(embeddings) };
        Ok(Built { retriever: Box::new(retriever), queries: QueryVectors::Encoder, models: Vec::new(), details: None })
    }

    /// Exact flat search in two passes (8-bit codes, then the full vectors of the few that can be in the
    /// top k): the runner's ranking at a quarter of the reading. Over an index that keeps an approximate
    /// index (a million units), its candidates scored exactly instead.
    fn serve<'a>(&self, at: &Serving<'a>) -> anyhow::Result<Served<'a>> {
        let index = at.index;
        let flat = FlatDense { name: self.label(), chunks: Cow::Borrowed(&index.units), embeddings: Cow::Borrowed(&index.vectors[..]) };
        let retriever: Box<dyn Retriever + 'a> = match at.neighbours {
            Some(neighbours) => Box::new(Approximate { flat, neighbours, depth: CANDIDATES }),
            None => Box::new(Prefiltered::new(flat)),
        };
        Ok(Served { retriever, embeds_queries: true })
    }
}
