//! The shared vocabulary of retrieval: leaf units of a corpus, queries, retrieved items, scopes.

use std::borrow::Cow;
use std::ops::Range;

use arbor_datasets::span::merge;
use arbor_datasets::units::{Segmented, UnitConfig, UnitError, segment};
use arbor_datasets::{Corpus, DocSpan, Span, TokenStarts};
use serde::{Deserialize, Serialize};

use crate::structures::tree_shape::ShapeSummary;

/// Which units a query is ranked against. Retrievers rank within [`QueryInput::docs`]; the runner fills it
/// by the scope, and BM25 takes its IDF from it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scope {
    /// Only the units of the documents the query names (long-document QA): IDF per document.
    #[default]
    QueryDocuments,
    /// Every unit of every evaluated document (open retrieval, BEIR, LegalBench-RAG's protocol): the
    /// query's `docs` hold the whole pool; one IDF over it.
    Corpus,
}

/// The leaf chunks of a method over a corpus (the shared sentence units, or a method's own windows),
/// documents in corpus order, chunks in text order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chunks {
    pub spans: Vec<DocSpan>,
    /// The chunks of document `d` are `spans[by_doc[d].clone()]`.
    pub by_doc: Vec<Range<usize>>,
    /// Empty, or for each chunk the spans of its header (its document's lines it is read after: the
    /// contextual header of a piece of a cut sentence, `units.context`), in reading order.
    pub headers: Vec<Vec<Span>>,
}

impl Chunks {
    /// From each document's chunk spans, in corpus order.
    pub fn from_docs(per_doc: impl IntoIterator<Item = Vec<Span>>) -> Self {
        let mut chunks = Chunks::default();
        for (d, spans) in per_doc.into_iter().enumerate() {
            let start = chunks.spans.len();
            chunks.spans.extend(spans.into_iter().map(|span| DocSpan { doc: d, span }));
            chunks.by_doc.push(start..chunks.spans.len());
        }
        chunks
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The chunks a query may retrieve: those of the documents in its scope.
    pub fn candidates<'a>(&'a self, query: &'a QueryInput) -> impl Iterator<Item = usize> + 'a {
        query.docs.iter().flat_map(|&d| self.by_doc[d].clone())
    }

    /// The text of a chunk: what it hands on.
    pub fn text<'a>(&self, corpus: &'a Corpus, chunk: usize) -> &'a str {
        let c = self.spans[chunk];
        &corpus.documents[c.doc].text[c.span.start..c.span.end]
    }

    /// What an encoder or BM25 reads of a chunk: its header's lines, then its text, each on a line.
    pub fn input<'a>(&self, corpus: &'a Corpus, chunk: usize) -> Cow<'a, str> {
        let text = self.text(corpus, chunk);
        match self.headers.get(chunk).filter(|h| !h.is_empty()) {
            None => Cow::Borrowed(text),
            Some(header) => {
                let doc = &corpus.documents[self.spans[chunk].doc].text;
                let mut lines: Vec<&str> = header.iter().map(|h| &doc[h.start..h.end]).collect();
                lines.push(text);
                Cow::Owned(lines.join("\n"))
            }
        }
    }

    /// The chunks overlapping any of `spans` (in index order, each once).
    pub fn overlapping(&self, spans: &[DocSpan]) -> Vec<usize> {
        let mut out: Vec<usize> =
            spans.iter().flat_map(|s| self.by_doc[s.doc].clone().filter(move |&c| self.spans[c].span.overlaps(&s.span))).collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Every document's token starts under the encoder's tokenizer: the tokens of any span.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tokens(pub Vec<TokenStarts>);

impl Tokens {
    /// The tokens of a set of spans (overlaps counted once).
    pub fn of(&self, spans: &[DocSpan]) -> usize {
        merge(spans.to_vec()).iter().map(|s| self.0[s.doc].count(s.span)).sum()
    }

    /// The tokens of one span.
    pub fn count(&self, span: DocSpan) -> usize {
        self.0[span.doc].count(span.span)
    }
}

/// The shared leaf units of a corpus (at most N sentences of one paragraph, at most a token limit), each
/// document's segmentation, and the token starts of every document.
#[derive(Debug, Clone)]
pub struct LeafIndex {
    pub units: Chunks,
    /// Each document's paragraphs and units (for gold merge pairs).
    pub segments: Vec<Segmented>,
    pub tokens: Tokens,
}

impl LeafIndex {
    /// Segments every document into leaf units; `tokens` holds each document's token starts.
    pub fn build(corpus: &Corpus, config: &UnitConfig, tokens: Vec<TokenStarts>) -> Result<Self, UnitError> {
        assert_eq!(tokens.len(), corpus.documents.len(), "token starts for every document");
        let segments = corpus.documents.iter().zip(&tokens).map(|(doc, starts)| segment(doc, config, starts)).collect::<Result<Vec<_>, _>>()?;
        let mut units = Chunks::from_docs(segments.iter().map(|s| s.units.iter().map(|u| u.span).collect()));
        if config.context.is_some() {
            units.headers = segments.iter().flat_map(|s| s.units.iter().map(|u| u.header.clone())).collect();
        }
        Ok(LeafIndex { units, segments, tokens: Tokens(tokens) })
    }

    /// Sentences cut into several units because they exceeded the token limit, over `docs`.
    pub fn cut_sentences(&self, docs: &[usize]) -> usize {
        docs.iter().map(|&d| self.segments[d].cut.len()).sum()
    }

    /// The cut sentences that are tables (arbor_datasets::units), over `docs`.
    pub fn cut_tables(&self, docs: &[usize]) -> usize {
        docs.iter().map(|&d| self.segments[d].tables.len()).sum()
    }
}

/// What a retriever sees of a query.
#[derive(Debug, Clone)]
pub struct QueryInput {
    pub text: String,
    /// The documents the query ranks, as corpus indices: its own, or under [`Scope::Corpus`] every evaluated
    /// document.
    pub docs: Vec<usize>,
    /// The query's dense embedding, for dense retrievers.
    pub embedding: Option<Vec<f32>>,
}

/// One retrieved item: the spans it hands on (one for a unit, several for a merged node), its score, and
/// the tree node it is, for methods with a hierarchy.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub spans: Vec<DocSpan>,
    pub score: f32,
    pub node: Option<NodeRef>,
}

impl Item {
    /// A leaf unit (or any item without a hierarchy above or below it).
    pub fn unit(span: DocSpan, score: f32) -> Self {
        Item { spans: vec![span], score, node: None }
    }
}

/// A node of the per-document hierarchy of a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeRef {
    pub doc: usize,
    pub node: usize,
}

/// A retrieval method: ranks items for a query, best first.
///
/// The metric contract (ARCHITECTURE.md): `retrieve` returns `min(k, leaves in scope)` items (never more than
/// k), or fewer only when its items already hold every leaf in scope (RSE's segments are runs of leaves);
/// a method with a natural cut (BM25's matching terms, beam search's delta, RSE's minimum value) ranks
/// the rest after it.
pub trait Retriever: Send + Sync {
    fn name(&self) -> &str;
    /// The method's leaf chunks (what its strict reading counts as relevant, and its scope's size).
    fn leaves(&self) -> &Chunks;
    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item>;
    /// The children of an item, scored for the query and ranked, where the method has a hierarchy (a token
    /// budget hands them on in place of an item larger than the whole budget).
    fn children(&self, _query: &QueryInput, _item: &Item) -> Option<Vec<Item>> {
        None
    }
    /// The way the method reached a node of its hierarchy, from the top: each step's node, the leaves it
    /// covers and its score for the query (`None`: the method has no hierarchy to descend).
    fn path(&self, _query: &QueryInput, _node: NodeRef) -> Option<Vec<Step>> {
        None
    }
    /// The layer of an item's node above the leaves (0 = a leaf), for a method whose nodes have layers
    /// (RAPTOR).
    fn layer(&self, _item: &Item) -> Option<usize> {
        None
    }
    /// The shape of the method's trees, for a method that searches trees (issue 45).
    fn tree_shape(&self) -> Option<ShapeSummary> {
        None
    }
    /// The documents a document level above the method's hierarchy keeps for the query, best first
    /// (issue 62; `None`: the method has no such level).
    fn kept_documents(&self, _query: &QueryInput) -> Option<Vec<usize>> {
        None
    }
}

/// One node on the way down a hierarchy to a retrieved item.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub node: usize,
    /// The leaves under it.
    pub leaves: usize,
    pub score: f32,
}

/// One token per word in every document of `corpus` (tests build leaf indexes without a tokenizer).
#[cfg(test)]
pub(crate) fn word_tokens(corpus: &Corpus) -> Vec<TokenStarts> {
    corpus.documents.iter().map(|d| TokenStarts::words(&d.text)).collect()
}

/// A retriever that ranks its chunks in a fixed order (tests of what comes after ranking).
#[cfg(test)]
pub(crate) struct FixedRanking(pub Vec<usize>, pub Chunks);

#[cfg(test)]
impl Retriever for FixedRanking {
    fn name(&self) -> &str {
        "fixed"
    }
    fn leaves(&self) -> &Chunks {
        &self.1
    }
    fn retrieve(&self, _: &QueryInput, k: usize) -> Vec<Item> {
        self.0.iter().take(k).map(|&c| Item::unit(self.1.spans[c], 0.0)).collect()
    }
}

/// The indices of the `k` largest scores, best first; ties go to the lower index.
pub fn top_k(scores: impl Iterator<Item = (usize, f32)>, k: usize) -> Vec<(usize, f32)> {
    let mut all: Vec<(usize, f32)> = scores.collect();
    let by_score = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if all.len() > k {
        all.select_nth_unstable_by(k, by_score);
        all.truncate(k);
    }
    all.sort_by(by_score);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_orders_by_score_then_index() {
        let got = top_k([(0, 0.5), (1, 0.9), (2, 0.5), (3, 0.1), (4, 0.9)].into_iter(), 3);
        assert_eq!(got, vec![(1, 0.9), (4, 0.9), (0, 0.5)]);
        assert_eq!(top_k([(7, 1.0)].into_iter(), 5), vec![(7, 1.0)]);
    }
}
