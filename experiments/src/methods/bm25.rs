//! BM25 over the shared leaf units (arbor_eval::retrievers::bm25): the keyword baseline.

use arbor_eval::Scope;

use super::{Built, Context, MethodSpec, QueryVectors, Served, Serving};

/// `Bm25` in an experiment file.
pub struct Bm25;

impl MethodSpec for Bm25 {
    fn label(&self) -> String {
        "BM25".into()
    }

    fn kind(&self) -> String {
        "BM25".into()
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let retriever = arbor_eval::retrievers::bm25::Bm25::build(ctx.corpus, &ctx.leaves.units, ctx.scope, ctx.docs);
        Ok(Built { retriever: Box::new(retriever), queries: QueryVectors::None, models: Vec::new(), details: None })
    }

    fn serve<'a>(&self, at: &Serving<'a>) -> anyhow::Result<Served<'a>> {
        let index = at.index;
        let retriever = arbor_eval::retrievers::bm25::Bm25::build(&index.corpus, &index.units, Scope::Corpus, &index.all());
        Ok(Served { retriever: Box::new(retriever), embeds_queries: false })
    }
}
