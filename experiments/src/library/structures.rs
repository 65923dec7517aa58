//! The per-document trees an index may keep beside its units, built as the experiment rows build them:
//! SproutRAG's attention-guided tree (`--trees`, the untrained `SproutRag(())` row) and RAPTOR's tree of
//! summaries (`--raptor`, the `Raptor(())` row: 100-token leaves packed from sentences, PCA + Gaussian
//! mixtures, extractive summaries). Both are computed from what the index stores of a document (its text,
//! token starts, units and their vectors), so a document stored without them gets them later, and each is
//! rebuilt only with its document.

use std::path::Path;

use anyhow::Context;
use arbor_datasets::{Corpus, Document, Span, TokenStarts, UnitConfig};
use arbor_eval::LeafIndex;
use arbor_eval::formats::raptor_io;
use arbor_eval::retrievers::raptor::RaptorTree;
use arbor_models::{DefaultBackend, SentenceEncoder};
use arbor_store::{DocumentRow, Meta, Store, Structure};

use crate::methods::raptor::RaptorConfig;
use crate::methods::sproutrag::RowTrees;
use crate::summaries::Extractive;

/// The `meta.trees` of an index that keeps SproutRAG trees.
pub const TREES: &str = "SproutRag(()): token attention w=256, uniform head weights";

/// The `meta.raptor` of an index that keeps RAPTOR trees.
pub const RAPTOR: &str = "Raptor(()): 100-token leaves, extractive summaries, PCA";

/// Which trees an index keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kept {
    pub trees: bool,
    pub raptor: bool,
}

impl Kept {
    /// The trees asked for and those the index `meta` describes already keeps (an index keeps them from
    /// the first time they are asked for).
    pub fn and_held(self, meta: Option<&Meta>) -> Kept {
        Kept { trees: self.trees || meta.is_some_and(|m| !m.trees.is_empty()), raptor: self.raptor || meta.is_some_and(|m| !m.raptor.is_empty()) }
    }

    /// The structures kept, as the store names them.
    pub fn structures(self) -> Vec<Structure> {
        [(self.trees, Structure::Trees), (self.raptor, Structure::Raptor)].into_iter().filter(|&(on, _)| on).map(|(_, s)| s).collect()
    }
}

/// What builds the trees: the pretrained encoder, the index's unit rule, the batch size.
pub struct Builder<'a> {
    pub encoder: &'a SentenceEncoder<DefaultBackend>,
    pub rule: &'a UnitConfig,
    pub batch: usize,
}

impl Builder<'_> {
    /// Adds the kept trees to a document row about to be stored (a trained SproutRAG row's come with its
    /// vectors).
    pub fn complete(&self, row: &mut DocumentRow, kept: Kept) -> anyhow::Result<()> {
        if kept.trees && row.merges.is_none() {
            row.merges = Some(self.merges(row)?);
        }
        if kept.raptor {
            row.raptor = Some(raptor_io::encode(&self.raptor(row)?));
        }
        Ok(())
    }

    /// Builds structure `s` of every stored document that lacks it (an index given `--trees` or
    /// `--raptor` after it was created, or a run killed before), one document at a time; how many.
    pub fn add_missing(&self, store: &mut Store, s: Structure) -> anyhow::Result<usize> {
        let keys = store.without(s)?;
        let pb = crate::progress::bar(keys.len(), if s == Structure::Trees { "trees" } else { "RAPTOR trees" });
        for key in &keys {
            let doc = store.load_one(key)?.with_context(|| format!("{key} left the index while its tree was built"))?;
            match s {
                Structure::Trees => store.put_tree(key, &self.merges(&doc)?)?,
                Structure::Raptor => store.put_structure(key, s, &raptor_io::encode(&self.raptor(&doc)?))?,
            }
            pb.inc(1);
        }
        pb.finish_and_clear();
        Ok(keys.len())
    }

    /// The merges of the default SproutRAG tree over a document's units, their texts and vectors.
    fn merges(&self, doc: &DocumentRow) -> anyhow::Result<Vec<(u32, u32)>> {
        let texts: Vec<&str> = doc.units.iter().map(|u| &doc.text[u.span.start..u.span.end]).collect();
        let leaves = doc.units.iter().map(|u| u.vector.clone()).collect();
        Ok(RowTrees::untrained(self.encoder).document(self.encoder, &texts, &texts, Some(leaves), self.batch)?.merges)
    }

    /// The default RAPTOR tree of a document: its sentences (from the unit rule's segmentation) packed
    /// into leaf chunks, embedded, clustered and summarised from its stored units and their vectors.
    fn raptor(&self, doc: &DocumentRow) -> anyhow::Result<RaptorTree> {
        let one = Document { id: doc.key.clone(), title: doc.title.clone(), text: doc.text.clone(), sections: Vec::new(), split: None };
        let corpus = Corpus::new(vec![one], Vec::new(), Path::new(&doc.file))?;
        let leaves = LeafIndex::build(&corpus, self.rule, vec![TokenStarts::new(doc.tokens.clone())])?;
        let same = leaves.units.spans.iter().map(|s| s.span).eq(doc.units.iter().map(|u| u.span));
        anyhow::ensure!(same, "the stored units of {} are not the index's unit rule's: index it again", doc.key);
        let sentences: Vec<Span> = leaves.segments[0].units.iter().flat_map(|u| u.sentences.iter().copied()).collect();
        let config = RaptorConfig::default();
        let tokens = &leaves.tokens.0[0];
        let spans = config.leaf_spans(&doc.text, tokens, &sentences);
        let texts: Vec<&str> = spans.iter().map(|s| &doc.text[s.start..s.end]).collect();
        let vectors = self.encoder.embed(&texts, self.batch, &mut |_| {});
        let unit_vectors: Vec<Vec<f32>> = doc.units.iter().map(|u| u.vector.clone()).collect();
        let summariser = Extractive { corpus: &corpus, leaves: &leaves, unit_vectors: &unit_vectors };
        config.tree(0, &spans, vectors, tokens, &summariser, self.encoder, self.batch)
    }
}
