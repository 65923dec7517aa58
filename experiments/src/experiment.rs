//! The experiment file: one RON document that says what to load, how to cut it, which methods to run and
//! how to score them. Every field that changes a result lives here and is written, resolved, into the
//! run folder (ARCHITECTURE.md, "The run folder"), so a run can be reproduced from its folder alone.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use arbor_datasets::UnitConfig;
use arbor_datasets::loaders::Format;
use arbor_eval::Scope;
use arbor_models::EncoderConfig;
use serde::{Deserialize, Serialize};

pub use crate::methods::Method;
use crate::methods::controls::{ControlKind, matched};
pub use crate::methods::smartchunk::SmartChunkConfig;
pub use crate::methods::sproutrag::{AttentionSource, SproutRagConfig};
use crate::validation::ValidationConfig;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Names the run folder: `<out>/<name>/<timestamp>`.
    pub name: String,
    pub data: DataConfig,
    #[serde(default)]
    pub units: UnitConfig,
    #[serde(default)]
    pub encoder: EncoderConfig,
    #[serde(default)]
    pub retrieval: RetrievalConfig,
    /// The methods to evaluate, each a row of the report.
    pub methods: Vec<Method>,
    /// The matched controls added after the methods for every method trained on the training queries
    /// (crate::methods::controls): `Dense` (dense retrieval fine-tuned on the same queries, batches and
    /// epochs by InfoNCE alone), `Exemplars` (the nearest training questions' gold text added to the query,
    /// for BM25 and dense), `Fused` (those dense rows fused with BM25 by RRF). `[]` leaves them out, and the
    /// report then says that its trained rows have no control.
    #[serde(default = "ControlKind::all")]
    pub controls: Vec<ControlKind>,
    /// Rows (by their place in `methods`, from 0) that every trained row is also compared with, in the
    /// report's Holm family: named comparators, such as the best row measured before (issue 62).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compare_with: Vec<usize>,
    /// How the configuration of the trained methods was chosen, for the report to say in words.
    #[serde(default)]
    pub selection: Selection,
    /// How near a scored document may be to one a model of `evaluate --from` trained on (crate::leakage).
    #[serde(default, skip_serializing_if = "Contamination::is_default")]
    pub contamination: Contamination,
}

/// How an experiment's configuration was chosen (`selection: ...` in the file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selection {
    /// Not tuned on any figure of this corpus (the file's settings were fixed beforehand).
    #[default]
    Fixed,
    /// The best point of a sweep on the validation split (`ablate` with `select`); test scored once.
    Validation,
    /// Chosen by looking at figures of the evaluated split itself: its figures are optimistic.
    Test,
    /// A point of a sweep without `select` (set by `ablate`): every point is scored on the evaluated split,
    /// so a point picked from the sweep's table is chosen on it.
    EveryPointOnTest,
}

impl Selection {
    /// What a report says of it.
    pub fn describe(self, split: Option<&str>) -> String {
        let split = split.unwrap_or("all");
        match self {
            Selection::Fixed => format!("fixed beforehand (the file declares no tuning on split {split:?})."),
            Selection::Validation => format!(
                "chosen on the validation split by `ablate` (its `select` step); split {split:?} was scored once, for this \
                 configuration only."
            ),
            Selection::EveryPointOnTest => format!(
                "one point of a sweep without `select`: **every point was scored on split {split:?}**, so a point picked \
                 from the sweep's table is chosen on {split:?} and its figures are optimistic. Select on validation \
                 (`ablate` with `select`) for a fair figure."
            ),
            Selection::Test => format!(
                "**chosen by looking at figures of split {split:?} itself**: the trained rows' figures here are optimistic \
                 and are not an estimate of how they do on unseen data. Select on validation (`ablate` with `select`) for \
                 a fair figure."
            ),
        }
    }
}

/// Where the corpus is and which part of it to evaluate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    pub format: Format,
    /// A path; a leading `$ARBOR_DATA` is replaced by that environment variable (the data root).
    pub path: String,
    /// Evaluate the queries of this split only (`None`: all of them).
    #[serde(default)]
    pub split: Option<String>,
    /// Evaluate at most this many queries (in file order), for quick runs.
    #[serde(default)]
    pub max_queries: Option<usize>,
    /// Keep only the documents of these collections (a document id `<collection>/<name>`, as
    /// legalbench-rag-mini's `contractnli/...`) and the queries asked against them; `None`: every document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collections: Option<Vec<String>>,
    /// Other corpora whose `train` split joins this one's for training (never their other splits): their
    /// training documents and queries are added under ids `<source>:<id>`, ahead of this corpus's own, so
    /// held-out training documents stay this corpus's. Nothing of theirs is evaluated. Needs
    /// `retrieval.scope: QueryDocuments` (under `Corpus` their documents would join the ranked pool).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub train_with: Vec<TrainSource>,
    /// The validation split carved from `train` (crate::validation); `None`: none (trainers then keep
    /// their last epoch and hold nothing out).
    #[serde(default = "default_validation")]
    pub validation: Option<ValidationConfig>,
}

fn default_validation() -> Option<ValidationConfig> {
    Some(ValidationConfig::default())
}

/// A corpus that lends its `train` split to an experiment's training (`data.train_with`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainSource {
    pub format: Format,
    /// A path, `$ARBOR_DATA` expanded as in `data.path`.
    pub path: String,
    /// Keep only these collections' documents (as `data.collections`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collections: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalConfig {
    /// Rank within each query's own documents, or over every document of the evaluated split (LegalBench-RAG's
    /// protocol: the right contract must be found first).
    pub scope: Scope,
    /// Items retrieved per query (metrics read the top 1, 3, 5 and 10).
    pub top_k: usize,
    /// A budget on the encoder tokens every method hands on per query, spent in rank order
    /// (arbor_eval::scoring::budget); `None` for none. The default, 2,000, is RAPTOR's collapsed-tree context: it
    /// leaves a 4k-token reader room for its prompt and answer.
    pub max_tokens: Option<usize>,
    /// What every method hands on for an item it ranked (arbor_eval::scoring::parents): the item itself
    /// (`Items`), or the parent it lies in, ranked by the children the encoder reads whole: the cut table
    /// (`Tables`, the default), the cut sentence or the paragraph.
    pub hand_on: HandOn,
}

/// What an item is handed on as (see [`RetrievalConfig::hand_on`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum HandOn {
    /// The item as ranked.
    Items,
    /// An item holding part of a cut sentence that is a table (arbor_datasets::units: at least three data
    /// rows, a third of its lines) as the whole table: a statement of a filing cut into pieces is handed
    /// on as the statement; cut prose and other items as ranked. Where no table is cut, `Items`.
    #[default]
    Tables,
    /// An item holding part of a sentence cut into several units (`units.max_tokens`) as the whole
    /// sentence: a table cut into pieces is handed on as the table; other items as ranked.
    WholeSentences,
    /// Every item as the whole of the paragraphs it lies in (blank-line blocks, cut at sections: a page of
    /// a PDF-extracted filing).
    Paragraphs,
}

/// The default token budget (see [`RetrievalConfig::max_tokens`]).
pub const DEFAULT_MAX_TOKENS: usize = 2000;

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig { scope: Scope::QueryDocuments, top_k: 10, max_tokens: Some(DEFAULT_MAX_TOKENS), hand_on: HandOn::Tables }
    }
}

impl Experiment {
    /// Reads and checks an experiment file; a syntax error names the file, line and column.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read experiment file {}", path.display()))?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> anyhow::Result<Self> {
        let exp: Experiment = ron::from_str(text).map_err(|e| {
            let hint = moved_to_schedule(&e.code.to_string()) + renamed_hand_on(&e.code.to_string());
            anyhow::anyhow!("{}:{}:{}: {}{hint}", path.display(), e.span.start.line, e.span.start.col, e.code)
        })?;
        exp.check()?;
        Ok(exp)
    }

    /// Rejects settings that cannot run (before anything is loaded).
    pub fn check(&self) -> anyhow::Result<()> {
        if self.methods.is_empty() {
            bail!("experiment {:?} lists no methods", self.name);
        }
        if self.units.max_sentences == 0 {
            bail!("units.max_sentences must be at least 1");
        }
        self.contamination.check()?;
        if self.units.max_tokens == Some(0) || self.retrieval.max_tokens == Some(0) {
            bail!("units.max_tokens and retrieval.max_tokens must be at least 1 (or None)");
        }
        if self.units.context == Some(0) {
            bail!("units.context must be at least 1 (or None: no header)");
        }
        if self.encoder.batch_size == 0 {
            bail!("encoder.batch_size must be at least 1");
        }
        if self.retrieval.top_k == 0 {
            bail!("retrieval.top_k must be at least 1 (metrics read the top 1, 3, 5 and 10)");
        }
        if let Some(&i) = self.compare_with.iter().find(|&&i| i >= self.methods.len()) {
            bail!("compare_with names method {i}, but `methods` lists {} (counted from 0)", self.methods.len());
        }
        if let Some(v) = &self.data.validation {
            v.check()?;
        }
        for m in &self.methods {
            m.spec().check()?;
        }
        // A report, its retrievals and `arbor compare` know a row by its name: two rows of one name would
        // share their retrievals and pair with each other's queries. A matched control equal to a method is
        // that method's row ([`crate::run::rows`]); one that only shares its name is refused as well.
        let mut labels: Vec<(String, usize)> = self.methods.iter().map(Method::label).zip(0..).collect();
        for (control, _) in matched(&self.methods, &self.controls) {
            if !self.methods.contains(&control) {
                labels.push((control.label(), usize::MAX));
            }
        }
        labels.sort();
        if let Some(w) = labels.windows(2).find(|w| w[0].0 == w[1].0) {
            let which = |i: usize| if i == usize::MAX { "a matched control".to_owned() } else { format!("method {i}") };
            bail!(
                "{} and {} are both named {:?} in the report: give them settings that tell them apart (or drop one)",
                which(w[0].1),
                which(w[1].1),
                w[0].0
            );
        }
        if !self.data.train_with.is_empty() && self.retrieval.scope != Scope::QueryDocuments {
            bail!(
                "data.train_with needs retrieval.scope: QueryDocuments (under Corpus the training corpora's documents would \
                 join the ranked pool): train in an experiment ranked within each query's documents and score this one \
                 with `evaluate --from` that run"
            );
        }
        let mut names: Vec<String> = self.data.train_with.iter().map(TrainSource::name).collect();
        names.sort();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            bail!("data.train_with names the corpus {:?} twice", w[0]);
        }
        if self.name.is_empty() || self.name.contains(['/', '\\']) {
            bail!("name {:?} must be a non-empty folder name", self.name);
        }
        Ok(())
    }

    /// The resolved experiment as RON, for the run folder.
    pub fn to_ron(&self) -> String {
        ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default()).expect("an experiment serialises")
    }
}

impl DataConfig {
    /// The corpus path with `$ARBOR_DATA` expanded.
    pub fn resolved_path(&self) -> anyhow::Result<PathBuf> {
        resolve(&self.path)
    }
}

impl TrainSource {
    /// The corpus path with `$ARBOR_DATA` expanded.
    pub fn resolved_path(&self) -> anyhow::Result<PathBuf> {
        resolve(&self.path)
    }

    /// The prefix of its documents' and queries' ids: the corpus folder's (or file's) name.
    pub fn name(&self) -> String {
        let path = Path::new(&self.path);
        path.file_stem().map_or_else(|| self.path.clone(), |n| n.to_string_lossy().into_owned())
    }
}

/// What to write instead when a parse error names a training setting that moved into `schedule`.
fn moved_to_schedule(error: &str) -> String {
    match arbor_trainers::schedule::MOVED.iter().find(|f| error.contains(&format!("field: \"{f}\"")) || error.contains(&format!("`{f}`"))) {
        Some(field) => format!(
            " (the training settings {} now live in one nested `schedule`: write `training: Some((schedule: ({field}: ..), \
             ...))` or `training: (schedule: ({field}: ..), ...)`)",
            arbor_trainers::schedule::MOVED.join(", ")
        ),
        None => String::new(),
    }
}

/// The hint for `retrieval.whole_sentences`, which became `hand_on: WholeSentences`.
fn renamed_hand_on(error: &str) -> &'static str {
    if error.contains("whole_sentences") {
        " (`retrieval.whole_sentences: true` is now `retrieval: (hand_on: WholeSentences)`; `hand_on: Paragraphs` hands on whole paragraphs)"
    } else {
        ""
    }
}

/// A data path with a leading `$ARBOR_DATA` replaced by that environment variable.
fn resolve(path: &str) -> anyhow::Result<PathBuf> {
    match path.strip_prefix("$ARBOR_DATA") {
        None => Ok(PathBuf::from(path)),
        Some(rest) => {
            let root = std::env::var_os("ARBOR_DATA").with_context(|| {
                format!(
                    "data.path {path:?} needs the data root: set ARBOR_DATA to the folder that holds it \
                     (for example ARBOR_DATA=../shared/data)"
                )
            })?;
            Ok(PathBuf::from(root).join(rest.trim_start_matches(['/', '\\'])))
        }
    }
}

/// How close a scored document may come to a trained-on one (`contamination` in an experiment file;
/// crate::leakage checks it under `evaluate --from`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contamination {
    /// The containment of 8-word shingles, either way, at which a scored document is the trained-on one
    /// (1.0: only what contains a whole trained-on document or lies whole in one).
    #[serde(default = "Contamination::default_near_duplicate")]
    pub near_duplicate: f64,
}

impl Default for Contamination {
    fn default() -> Self {
        Contamination { near_duplicate: Self::default_near_duplicate() }
    }
}

impl Contamination {
    fn default_near_duplicate() -> f64 {
        0.8
    }

    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.near_duplicate > 0.0 && self.near_duplicate <= 1.0,
            "contamination.near_duplicate is {}: a containment in (0, 1]",
            self.near_duplicate
        );
        Ok(())
    }
}
