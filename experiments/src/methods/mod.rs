//! One home per retrieval method. A method is a config (a variant of [`Method`], in RON) that implements
//! [`MethodSpec`]: it names itself and what kind of method it is, says what it learns from the training
//! split, and builds its index over
//! a run's documents from a [`Context`] (the corpus, the shared leaf units and tokens, the encoder, the
//! content-keyed [`Cache`] and the [`Training`] policy), reading back what the cache holds. The index answers
//! queries through [`arbor_eval::Retriever`] with ranked items (spans, score, node), and the runner scores
//! every method the same way; it knows none of them by name.
//!
//! | method | module | paper |
//! |---|---|---|
//! | Flat (dense leaf units) | [`flat`] | SproutRAG / SmartChunk baselines |
//! | BM25 | [`bm25`] | keyword baseline |
//! | Dense over fixed windows or semantic chunks | [`chunks`] | Chroma / SmartChunk fixed-size; Forge's hierarchical index, L2 |
//! | Heading hierarchy with parent expansion | [`hierarchy`] | Forge's hierarchical index; LlamaIndex auto-merging |
//! | Hybrid (BM25 + dense, reciprocal rank fusion) | [`hybrid`] | Cormack et al. 2009 |
//! | RSE + AutoContext | [`rse`] | spRAG / dsRAG (D-Star AI) |
//! | Summary-augmented chunks (SAC) | [`summary_chunks`] | Reuter et al., arXiv:2510.06999 |
//! | RAPTOR (collapsed tree, tree traversal) | [`raptor`] | RAPTOR (Sarthi et al., arXiv:2401.18059) |
//! | SproutRAG | [`sproutrag`] | SproutRAG, Sections 2-4 |
//! | SmartChunk (multi-level chunks, compressor, plan) | [`smartchunk`] | SmartChunk, Section 4 |
//! | Any of these + a cross-encoder reranker | [`rerank`] | SproutRAG, Section 3 (reranking stage) |
//! | Dense fine-tuned by InfoNCE alone (matched control) | [`dense`] | the fair-comparison rules of arbor |
//! | Dense distilled from the reranker (MarginMSE) | [`distill`] | Hofstätter et al., arXiv:2010.02666 |
//! | Exemplar expansion (matched control) | [`exemplars`] | Rocchio 1971; nearest-neighbour query expansion |
//!
//! Methods that summarise use [`crate::summaries`]; trained methods get their matched controls from
//! [`controls`], and read their training data through [`training`].
//!
//! Every method is registered once, in the `methods!` list below: its variant in experiment files and its
//! home. Adding a method is a new module and one line there.

pub mod controls;
pub mod document_level;
pub mod document_summary;
pub mod training;

use arbor_models::pooling::Role;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use arbor_datasets::Corpus;
use arbor_eval::index::Chunks;
use arbor_eval::retrievers::approximate::Neighbours;
use arbor_eval::scoring::runner::EvalQuery;
use arbor_eval::{LeafIndex, Retriever, Scope};
use arbor_models::encoder::Kernel;
use arbor_models::{DefaultBackend, EncoderConfig, SentenceEncoder};
use serde::{Deserialize, Serialize};

use crate::cache::{Artefact, BuildTime, Cache, Keys, key};
use crate::stored::StoredIndex;
use crate::trained::{TrainedModel, Training};

/// Declares every method's module and the [`Method`] enum of experiment files, with the one match that
/// hands each variant its implementation. `Variant => module::Type` is a method without settings (`Flat` in
/// RON, `Type` a unit struct); `Variant(module::Type)` one whose settings are `Type`.
macro_rules! methods {
    ($( $(#[$doc:meta])* $variant:ident $(=> $unit_module:ident :: $unit:ident)? $(( $module:ident :: $config:ident ))? ,)*) => {
        $( $(pub mod $unit_module;)? $(pub mod $module;)? )*

        /// A retrieval method of an experiment file: each variant's config lives in its module.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub enum Method {
            $( $(#[$doc])* $variant $(($module::$config))?, )*
        }

        impl Method {
            /// Every variant's name, as experiment files write it.
            pub const NAMES: &[&str] = &[$(stringify!($variant)),*];

            /// The method's implementation.
            pub fn spec(&self) -> &dyn MethodSpec {
                match self {
                    $( methods!(@pattern c $variant $($config)?) => methods!(@spec c $($unit_module::$unit)? $($config)?), )*
                }
            }
        }
    };
    // `$c` is the binding's name, written once above so that the pattern and the expression share it.
    (@pattern $c:ident $variant:ident $config:ident) => { Method::$variant($c) };
    (@pattern $c:ident $variant:ident) => { Method::$variant };
    (@spec $c:ident $module:ident :: $unit:ident) => { &$module::$unit };
    (@spec $c:ident $config:ident) => { $c };
}

methods! {
    /// Dense retrieval over leaf units with the configured encoder.
    Flat => flat::Flat,
    /// BM25 over the same leaf units.
    Bm25 => bm25::Bm25,
    /// Dense retrieval over the method's own chunks (fixed token windows, semantic chunks).
    Chunks(chunks::Chunking),
    /// BM25 + dense units, reciprocal rank fusion.
    Hybrid(hybrid::HybridConfig),
    /// Dense units with parent expansion into sections (given or derived from headings).
    Hierarchy(hierarchy::HierarchyConfig),
    /// Relevant Segment Extraction over (AutoContext-embedded) chunks.
    Rse(rse::RseConfig),
    /// Dense retrieval over chunks embedded with their document's summary before them (SAC).
    SummaryChunks(summary_chunks::SummaryChunksConfig),
    /// A RAPTOR tree of summaries per document.
    Raptor(raptor::RaptorConfig),
    /// A SproutRAG tree per document, searched with beam search (or collapsed).
    SproutRag(sproutrag::SproutRagConfig),
    /// SmartChunk's multi-level chunks, searched within a plan's levels.
    SmartChunk(smartchunk::SmartChunkConfig),
    /// Another method's candidates, their leaves reranked by a trained cross-encoder.
    Rerank(rerank::RerankConfig),
    /// Dense retrieval over units with the encoder fine-tuned (or an adapter trained) by InfoNCE alone:
    /// the matched control of a trained method.
    Dense(dense::DenseConfig),
    /// The nearest training questions' gold text added to the query, for BM25 or dense: a control that
    /// uses the training queries without training.
    Exemplars(exemplars::ExemplarsConfig),
    /// Dense retrieval with the encoder distilled from the trained reranker by MarginMSE.
    Distill(distill::DistillConfig),
}

impl Method {
    /// The row name in reports.
    pub fn label(&self) -> String {
        self.spec().label()
    }

    /// What the method is without its numeric settings: a line of a sweep's plots.
    pub fn kind(&self) -> String {
        self.spec().kind()
    }
}

impl std::str::FromStr for Method {
    type Err = anyhow::Error;

    /// A method as an experiment file writes it (`Flat`, `Hybrid((depth: Some(100)))`,
    /// `SproutRag((search: Beam((beam_width: 3))))`), or a variant's name in any case for its defaults
    /// (`hybrid` is `Hybrid(())`); a syntax error names the column. Its settings are checked.
    fn from_str(text: &str) -> anyhow::Result<Method> {
        let named = Method::NAMES.iter().find(|n| n.eq_ignore_ascii_case(text.trim()));
        let method: Method = match named.and_then(|n| ron::from_str::<Method>(n).or_else(|_| ron::from_str(&format!("{n}(())"))).ok()) {
            Some(m) => m,
            None => ron::from_str(text).map_err(|e| {
                anyhow::anyhow!(
                    "method {text:?}, column {}: {} (write a method as an experiment file does, e.g. Flat or \
                     'Hybrid((depth: Some(100)))', or one of {} for its defaults)",
                    e.span.start.col,
                    e.code,
                    Method::NAMES.join(", ")
                )
            })?,
        };
        method.spec().check()?;
        Ok(method)
    }
}

/// What a method learns from the corpus's training split: whether it is a trained row of the report, and
/// which matched controls it needs ([`controls`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Trains {
    /// Nothing: an untrained baseline.
    No,
    /// The documents of this split only (no query): trained, with no query-matched control.
    Documents(String),
    /// The training queries, with these settings: its controls use the same queries, batches and epochs.
    Queries(arbor_trainers::config::TrainConfig),
    /// Reads the queries of this split at query time without training (exemplar expansion): not a
    /// baseline, and a control in itself.
    LooksUp(String),
}

impl Trains {
    /// Whether it needs a trained model (which `evaluate` reads from `--from`, never trains).
    pub fn needs_model(&self) -> bool {
        matches!(self, Trains::Queries(_) | Trains::Documents(_))
    }

    /// The split it reads: its training queries or documents, or the queries it looks up.
    pub fn split(&self) -> Option<&str> {
        match self {
            Trains::No => None,
            Trains::Queries(t) => Some(&t.split),
            Trains::Documents(split) | Trains::LooksUp(split) => Some(split),
        }
    }
}

/// A retrieval method.
pub trait MethodSpec {
    /// The row name in reports (with the settings that tell two rows of one kind apart).
    fn label(&self) -> String;
    /// What the method is without its numeric settings (a line of a sweep's plots): read off its own config.
    fn kind(&self) -> String;
    /// Rejects settings that cannot run, before anything is loaded.
    fn check(&self) -> anyhow::Result<()> {
        Ok(())
    }
    /// What it learns from the training split (an untrained baseline by default).
    fn trains(&self) -> Trains {
        Trains::No
    }
    /// Its matched dense control, built from its own resolved training: by default the dense retrieval
    /// fine-tuned on the same queries, batches, epochs, seed, rates and window rule
    /// ([`dense::DenseConfig::matching`]); a method whose training is of another shape builds its own (the
    /// reranker's: a bi-encoder on its very groups). `None`: it trains on no query.
    fn dense_control(&self) -> Option<dense::DenseConfig> {
        match self.trains() {
            Trains::Queries(training) => Some(dense::DenseConfig::matching(&training)),
            _ => None,
        }
    }
    /// Every split the method reads while it is built (its own training's and those of the methods it is
    /// built on): the run refuses a test split or the evaluated one here (crate::leakage).
    /// Each with the setting that names it (`training.split`).
    fn reads_splits(&self) -> Vec<(&'static str, String)> {
        self.trains().split().map(|s| ("training.split", s.to_owned())).into_iter().collect()
    }
    /// Methods with the same index key share one index (and report its build time); `None`: not shared.
    fn index_key(&self) -> Option<String> {
        None
    }
    /// Builds (or reads back) the method's index over `ctx.docs`, training first where it trains.
    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>>;
    /// Its retriever over a stored index (`arbor query`): the index's units, their vectors and the trees
    /// it keeps, in corpus scope, as its experiment row would rank them. By default it has none (it
    /// trains, or reads what an index does not keep).
    fn serve<'a>(&self, _at: &Serving<'a>) -> anyhow::Result<Served<'a>> {
        anyhow::bail!(
            "`arbor query` cannot serve {}: an index keeps units, their vectors and untrained trees only; run it in an experiment \
             (`arbor query` serves Flat, Bm25, Hybrid, Hierarchy, and SproutRag and Raptor with their default trees)",
            self.label()
        )
    }
}

/// An index opened to be served (`arbor query`, `arbor serve`): what it stores, the encoder that built it
/// and its batch size, and the row of a run it was built from (`arbor index --from RUN --row NAME`: a
/// trained SproutRAG row, whose trees it keeps, or a reranked row), with that row's training folder, and
/// the approximate index over its units when it keeps one and it is used (`arbor index --approximate`).
pub struct Serving<'a> {
    pub index: &'a StoredIndex,
    pub encoder: &'a SentenceEncoder<DefaultBackend>,
    pub batch: usize,
    pub row: Option<(&'a Method, &'a Path)>,
    pub neighbours: Option<&'a dyn Neighbours>,
}

/// A method served over a stored index ([`MethodSpec::serve`]).
pub struct Served<'a> {
    pub retriever: Box<dyn Retriever + 'a>,
    /// Whether it reads the query's vector (the encoder's, or the index's trained model's).
    pub embeds_queries: bool,
}

/// A method's index, ready to answer queries.
pub struct Built<'a> {
    pub retriever: Box<dyn Retriever + 'a>,
    /// How the method embeds queries.
    pub queries: QueryVectors,
    /// The trained models it uses (recorded in the run's models.json).
    pub models: Vec<TrainedModel>,
    /// What it built, in a sentence for the report.
    pub details: Option<String>,
}

/// The query embeddings a method searches with.
pub enum QueryVectors {
    /// None: the method reads query text only.
    None,
    /// The encoder's.
    Encoder,
    /// Its own, one per evaluated query, in order.
    Own(Vec<Vec<f32>>),
}

/// What a run gives every method.
pub struct Context<'a> {
    pub corpus: &'a Corpus,
    /// The shared leaf units and every document's token starts.
    pub leaves: &'a LeafIndex,
    pub keys: &'a Keys,
    pub encoder: &'a SentenceEncoder<DefaultBackend>,
    pub encoder_config: &'a EncoderConfig,
    pub cache: &'a Cache,
    pub training: &'a Training,
    /// The documents to index.
    pub docs: &'a [usize],
    /// The evaluated queries (embeddings not filled in).
    pub queries: &'a [EvalQuery],
    /// How the queries rank (their `docs` already hold what they rank; BM25's IDF follows the scope).
    pub scope: Scope,
    /// The unit vectors and what they cost to build (encoding now, or as recorded when read back).
    unit_vectors: OnceCell<(Vec<Vec<f32>>, BuildTime)>,
    query_vectors: OnceCell<Vec<Vec<f32>>>,
    /// Whether the method being built used the unit vectors, and what filling them took during it: wall
    /// time, and the recorded build time of the vectors read back.
    used_units: Cell<bool>,
    filled: Cell<(f64, BuildTime)>,
    /// The optimizer steps each trained row of this run took, by its label, where only its training knows
    /// them (SmartChunk's planner): what its matched control runs (`Dense((steps_of: ..))`).
    steps_run: RefCell<HashMap<String, usize>>,
}

impl<'a> Context<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        corpus: &'a Corpus,
        leaves: &'a LeafIndex,
        keys: &'a Keys,
        encoder: &'a SentenceEncoder<DefaultBackend>,
        encoder_config: &'a EncoderConfig,
        cache: &'a Cache,
        training: &'a Training,
        docs: &'a [usize],
        queries: &'a [EvalQuery],
        scope: Scope,
    ) -> Self {
        Context {
            corpus,
            leaves,
            keys,
            encoder,
            encoder_config,
            cache,
            training,
            docs,
            queries,
            scope,
            unit_vectors: OnceCell::new(),
            query_vectors: OnceCell::new(),
            used_units: Cell::new(false),
            filled: Cell::new((0.0, BuildTime::default())),
            steps_run: RefCell::new(HashMap::new()),
        }
    }

    /// Records that the row labelled `label` took `steps` optimizer steps.
    pub fn record_steps(&self, label: &str, steps: usize) {
        self.steps_run.borrow_mut().insert(label.to_owned(), steps);
    }

    /// The optimizer steps the row labelled `label` took in this run, if it recorded them.
    pub fn steps_run(&self, label: &str) -> Option<usize> {
        self.steps_run.borrow().get(label).copied()
    }

    /// The encoder's vector of every shared leaf unit of `docs` (others empty), computed once per run.
    pub fn unit_vectors(&self) -> anyhow::Result<&[Vec<f32>]> {
        self.used_units.set(true);
        if self.unit_vectors.get().is_none() {
            let (start, before) = (Instant::now(), self.cache.reused());
            let vectors = self.cache.unit_embeddings(self.encoder, self.corpus, self.leaves, self.keys, self.docs, self.encoder_config.batch_size)?;
            let read_back = self.cache.reused() - before;
            let wall = start.elapsed().as_secs_f64() * 1e3;
            self.filled.set((wall, read_back));
            let _ = self.unit_vectors.set((vectors, BuildTime { ms: wall, unrecorded: 0 } + read_back));
        }
        Ok(&self.unit_vectors.get().expect("set above").0)
    }

    /// The encoder's vector of `text(c)` for every chunk of `chunks` in the context's documents, cached
    /// under a key of the encoder and `what` (the chunking's settings) per document key.
    pub fn chunk_vectors(&self, what: &impl Serialize, chunks: &Chunks, text: &dyn Fn(usize) -> String) -> anyhow::Result<Vec<Vec<f32>>> {
        self.chunk_vectors_of(what, chunks, self.docs, text)
    }

    /// [`Context::chunk_vectors`] for the chunks of `docs` (a method's training documents, say).
    pub fn chunk_vectors_of(
        &self,
        what: &impl Serialize,
        chunks: &Chunks,
        docs: &[usize],
        text: &dyn Fn(usize) -> String,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        let dir = self.cache.dir(Artefact::Chunks, &key(&(&self.keys.encoder, what)))?;
        self.cache.chunk_embeddings(&dir, &|t, p| self.encoder.embed(t, self.encoder_config.batch_size, p), chunks, self.keys, docs, text)
    }

    /// The frozen encoder's vector of every shared leaf unit of the context's documents, read after its
    /// document's header where `headers` gives one (SAC's inputs: cached under
    /// [`training::HEADED_UNITS`], which untrained SAC's units share), else [`Context::unit_vectors`].
    pub fn leaf_vectors(&self, headers: Option<&[String]>) -> anyhow::Result<std::borrow::Cow<'_, [Vec<f32>]>> {
        Ok(match headers {
            None => std::borrow::Cow::Borrowed(self.unit_vectors()?),
            Some(h) => std::borrow::Cow::Owned(
                self.chunk_vectors(&training::HEADED_UNITS, &self.leaves.units, &|u| chunks::prefixed_input(self.corpus, &self.leaves.units, h, u))?,
            ),
        })
    }

    /// The pooled vector of every shared leaf unit of the context's documents through `kernel`, the
    /// encoder as fine-tuned in the trained model `model` (a `train-<key>` folder, whose content key names
    /// them), cached in `units-<encoder and model>/` as the frozen encoder's are: a run's rows over one
    /// fine-tuned encoder (the SLLM's and its control's) encode the corpus once, later runs not at all.
    /// With `headers`, each unit is read after its document's header (SAC's summary: [`chunks::prefixed_input`]).
    pub fn tuned_unit_vectors(&self, model: &Path, kernel: &Kernel<DefaultBackend>, headers: Option<&[String]>) -> anyhow::Result<Vec<Vec<f32>>> {
        let trained = model.file_name().map(|n| n.to_string_lossy().into_owned());
        let dir = self.cache.dir(Artefact::Units, &key(&(&self.keys.encoder, "fine-tuned in", trained)))?;
        let embed = |t: &[&str], p: &mut dyn FnMut(usize)| self.encoder.embed_with(kernel, t, self.encoder_config.batch_size, p);
        let text = |c: usize| match headers {
            None => self.leaves.units.input(self.corpus, c).into_owned(),
            Some(headers) => chunks::prefixed_input(self.corpus, &self.leaves.units, headers, c),
        };
        self.cache.chunk_embeddings(&dir, &embed, &self.leaves.units, self.keys, self.docs, &text)
    }

    /// Every document's sentences (those of its leaf units, over-long ones already cut to the encoder's
    /// limit), as chunks.
    pub fn sentences(&self) -> Chunks {
        Chunks::from_docs(self.leaves.segments.iter().map(|s| s.units.iter().flat_map(|u| u.sentences.iter().copied()).collect()))
    }

    /// The encoder's vector of every evaluated query, computed once per run.
    pub fn query_vectors(&self) -> anyhow::Result<&[Vec<f32>]> {
        if self.query_vectors.get().is_none() {
            let texts: Vec<&str> = self.queries.iter().map(|q| q.input.text.as_str()).collect();
            let vectors = self.cache.text_embeddings(self.encoder, Role::Query, self.encoder_config.batch_size, &texts, "queries")?;
            let _ = self.query_vectors.set(vectors);
        }
        Ok(self.query_vectors.get().expect("set above"))
    }

    /// Builds one method's index, timing it per document: the build itself plus the encoding of the unit
    /// vectors when it uses them (whichever method encoded them first), artefacts read back from the cache
    /// counted at their recorded build time; None when one of them has no recorded time.
    pub fn build(&'a self, method: &dyn MethodSpec) -> anyhow::Result<(Built<'a>, Option<f64>)> {
        self.used_units.set(false);
        self.filled.set((0.0, BuildTime::default()));
        let (start, before) = (Instant::now(), self.cache.reused());
        let built = method.build(self)?;
        // Wall time and the recorded build time of what was read back, both less filling the unit vectors;
        // then the unit vectors' whole cost if the method used them.
        let (filled_wall, filled_read) = self.filled.get();
        let read_back = self.cache.reused() - before - filled_read;
        let mut cost = BuildTime { ms: start.elapsed().as_secs_f64() * 1e3 - filled_wall, unrecorded: 0 } + read_back;
        if self.used_units.get() {
            cost = cost + self.unit_vectors.get().map_or(BuildTime::default(), |(_, units)| *units);
        }
        Ok((built, (cost.unrecorded == 0).then(|| cost.ms / self.docs.len().max(1) as f64)))
    }
}
