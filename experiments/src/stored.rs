//! A stored index opened for querying (`arbor query`): its documents as a corpus, its units as chunks
//! with their vectors and token starts, and the per-document trees it keeps, read back as the experiment
//! rows build them. Each method serves itself over it ([`crate::methods::MethodSpec::serve`]), with the
//! retrievers and settings of its experiment row, in corpus scope; this module knows no method.

use std::path::Path;

use anyhow::Context;
use arbor_datasets::{Corpus, Document, TokenStarts, UnitConfig};
use arbor_eval::LeafIndex;
use arbor_eval::formats::raptor_io;
use arbor_eval::index::{Chunks, Tokens};
use arbor_eval::retrievers::raptor::RaptorTree;
use arbor_eval::scoring::parents::Parents;
use arbor_eval::structures::tree::Tree;
use arbor_store::{Meta, Store};

/// An opened index: its documents as a corpus, units as chunks, vectors and token starts.
pub struct StoredIndex {
    pub corpus: Corpus,
    pub units: Chunks,
    pub vectors: Vec<Vec<f32>>,
    pub tokens: Tokens,
    /// Each document's SproutRAG tree as stored (its merges), when the index keeps trees; the trees
    /// themselves are built by the retriever that searches them.
    merges: Option<Vec<Option<Vec<(u32, u32)>>>>,
    /// Each document's RAPTOR tree as stored (`raptor_io` bytes), when the index keeps them.
    raptor: Option<Vec<Option<Vec<u8>>>>,
    /// The encoder's fingerprint.
    pub encoder: String,
    /// The trained model it embeds with, as the index records it (`meta.model` JSON), if any.
    pub model: Option<String>,
    /// Under the default rule each document's cut tables with their heads, in which an item is handed on
    /// whole (the experiments' `hand_on: Tables`); `None` under the plain rule (items handed on as ranked).
    pub parents: Option<Parents>,
}

impl StoredIndex {
    pub fn read(store: &Store) -> anyhow::Result<Self> {
        let meta = store.meta()?.context("the index holds no document yet: add some with `arbor index DIR --into INDEX`")?;
        let stored = store.load()?;
        let (mut documents, mut per_doc, mut vectors, mut tokens, mut headers) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut merges, mut raptor) = (Vec::new(), Vec::new());
        for d in stored {
            merges.push(d.merges);
            raptor.push(d.raptor);
            per_doc.push(d.units.iter().map(|u| u.span).collect::<Vec<_>>());
            headers.extend(d.units.iter().map(|u| u.header.clone()));
            vectors.extend(d.units.into_iter().map(|u| u.vector));
            tokens.push(TokenStarts::new(d.tokens));
            documents.push(Document { id: d.key, title: d.title, text: d.text, sections: Vec::new(), split: None });
        }
        let mut units = Chunks::from_docs(per_doc);
        if headers.iter().any(|h| !h.is_empty()) {
            units.headers = headers;
        }
        let corpus = Corpus::new(documents, Vec::new(), Path::new("index"))?;
        let merges = (!meta.trees.is_empty()).then_some(merges);
        let raptor = (!meta.raptor.is_empty()).then_some(raptor);
        let rule = unit_rule(&meta)?;
        let model = (!meta.model.is_empty()).then_some(meta.model);
        let tokens = Tokens(tokens);
        let parents = tables(&corpus, &rule, &tokens, &units)?;
        Ok(StoredIndex { corpus, units, vectors, tokens, merges, raptor, encoder: meta.encoder, model, parents })
    }

    /// Every document's index: corpus scope.
    pub fn all(&self) -> Vec<usize> {
        (0..self.corpus.documents.len()).collect()
    }

    /// Every document's SproutRAG tree (`arbor index --trees`), built from its stored merges over its units
    /// and their vectors.
    pub fn sproutrag_trees(&self) -> anyhow::Result<Vec<Option<Tree>>> {
        let merges = self.merges.as_ref().context("this index keeps no trees: build them with `arbor index DIR --into INDEX --trees`")?;
        all_built(merges)?;
        Ok(merges.iter().enumerate().map(|(d, m)| m.clone().map(|m| self.tree(d, m))).collect())
    }

    /// Every document's RAPTOR tree (`arbor index --raptor`), decoded.
    pub fn raptor_trees(&self) -> anyhow::Result<Vec<Option<RaptorTree>>> {
        let stored = self.raptor.as_ref().context("this index keeps no RAPTOR trees: build them with `arbor index DIR --into INDEX --raptor`")?;
        all_built(stored)?;
        stored
            .iter()
            .zip(&self.corpus.documents)
            .map(|(bytes, doc)| {
                bytes
                    .as_deref()
                    .map(|b| raptor_io::decode(b).map_err(|e| anyhow::anyhow!("the RAPTOR tree of {} is damaged: {e}", doc.id)))
                    .transpose()
            })
            .collect()
    }

    /// Document `d`'s tree from its stored merges, over its units and their vectors.
    fn tree(&self, d: usize, merges: Vec<(u32, u32)>) -> Tree {
        let units = self.units.by_doc[d].clone();
        let leaves: Vec<f32> = self.vectors[units.clone()].concat();
        let dim = self.vectors.first().map_or(0, Vec::len);
        Tree::from_merges(self.units.spans[units].to_vec(), &leaves, dim, merges)
    }

    /// The corpus indices of the documents `keys` (every document when empty); an unknown key is an error.
    pub fn scope(&self, keys: &[String]) -> anyhow::Result<Vec<usize>> {
        if keys.is_empty() {
            return Ok(self.all());
        }
        keys.iter().map(|k| self.corpus.doc_index(k).with_context(|| format!("the index holds no document {k:?}"))).collect()
    }
}

/// The unit rule an index holds (`meta.units`): the default, or the plain rule of an index built before it.
pub fn unit_rule(meta: &Meta) -> anyhow::Result<UnitConfig> {
    serde_json::from_str(&meta.units).context("the index's meta.units is damaged")
}

/// Each document's cut tables with their heads, as the experiments hand them on (`hand_on: Tables`), cut
/// again from the stored text by the index's rule; `None` under the plain rule (`context: None`, the rule of
/// indexes built before the default), whose items are handed on as ranked. Units cut again otherwise than
/// stored are an error: the index was built by other code.
fn tables(corpus: &Corpus, rule: &UnitConfig, tokens: &Tokens, units: &Chunks) -> anyhow::Result<Option<Parents>> {
    if rule.context.is_none() {
        return Ok(None);
    }
    let leaves = LeafIndex::build(corpus, rule, tokens.0.clone()).context("cannot cut the index's documents by its unit rule")?;
    anyhow::ensure!(leaves.units.spans == units.spans, "the index's units are not what its unit rule cuts now: index into a new file");
    Ok(Some(Parents::with_heads(&leaves.segments, |s| s.tables.clone())))
}

/// Every document has its tree (an index whose `arbor index` was killed while building them has not).
fn all_built<T>(trees: &[Option<T>]) -> anyhow::Result<()> {
    let bare = trees.iter().filter(|m| m.is_none()).count();
    anyhow::ensure!(bare == 0, "{bare} documents of the index have no tree yet (an interrupted `arbor index`): run it again");
    Ok(())
}
