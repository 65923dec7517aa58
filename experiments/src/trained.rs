//! Where a run's trained models come from, and the record of them it leaves (`models.json`), so that
//! `evaluate EXP.ron --from RUN_DIR` scores the models an earlier run trained, on any corpus, without
//! training (SmartChunk's out-of-domain rows are made this way).
//!
//! A trained model is found by the method settings it was trained for (for SproutRAG
//! `SproutRagConfig::model_settings`, everything but the search and the vectors read from it; for SmartChunk its compressor's settings)
//! and must have been trained with the same encoder.

use std::path::{Path, PathBuf};

use anyhow::Context;
use arbor_files::atomic_write;
use serde::{Deserialize, Serialize};

/// One trained model a run used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainedModel {
    /// The method's row name in the report.
    pub method: String,
    /// The settings it was trained for (the method's own config type, as JSON).
    pub settings: serde_json::Value,
    /// The fingerprint of the encoder it was trained with.
    pub encoder: String,
    /// Its training folder (checkpoints/, log.jsonl, tb/).
    pub dir: PathBuf,
    /// The content keys of the documents its training read, validation included (crate::leakage): a later
    /// `evaluate --from` refuses to score it on any of them. Empty in runs made before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trained_on: Vec<String>,
    /// The content keys of the questions its training read, validation included: `evaluate --from`
    /// refuses to score it on any of them. Empty in runs made before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trained_on_questions: Vec<String>,
    /// The sketches of the documents its training read (crate::leakage::sketch): `evaluate --from` refuses
    /// to score it on a near-duplicate of any. Empty in runs made before stop 89.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trained_on_sketches: Vec<Vec<u32>>,
}

/// The file in a run folder that lists its trained models.
pub const MODELS_FILE: &str = "models.json";

/// Writes a run's `models.json`.
pub fn record(run_dir: &Path, models: &[TrainedModel]) -> anyhow::Result<()> {
    Ok(atomic_write(&run_dir.join(MODELS_FILE), serde_json::to_string_pretty(models)?.as_bytes())?)
}

/// How a run obtains the trained models its methods need.
#[derive(Debug, Clone)]
pub enum Training {
    /// `train`: a finished training in the cache is read back, anything else is trained (or resumed).
    Allowed,
    /// `evaluate`: nothing is trained; trained models come from an earlier run, when one is given.
    Never(Option<EarlierRun>),
}

/// The trained models of an earlier run folder.
#[derive(Debug, Clone)]
pub struct EarlierRun {
    pub dir: PathBuf,
    pub models: Vec<TrainedModel>,
}

impl EarlierRun {
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join(MODELS_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("--from {}: no {MODELS_FILE} there (not a run folder of arbor's `train`?)", dir.display()))?;
        let models = serde_json::from_str(&text).with_context(|| format!("{} is damaged", path.display()))?;
        Ok(EarlierRun { dir: dir.to_owned(), models })
    }

    /// The training folder of `model` from wherever the caller stands: the run folder's own `train-<key>`
    /// when it holds it (a run records its folders as the path `train` was given, often relative to where it
    /// ran), else the path as recorded.
    pub fn folder_of(&self, model: &TrainedModel) -> PathBuf {
        let own = model.dir.file_name().map(|name| self.dir.join(name));
        match own {
            Some(own) if !model.dir.is_absolute() && own.is_dir() => own,
            _ => model.dir.clone(),
        }
    }
}

/// Where the model of one method is: the folder, and whether it may be trained there.
pub struct Located {
    pub dir: PathBuf,
    pub may_train: bool,
}

impl Training {
    /// Why `evaluate` without --from cannot score the method `label`.
    pub fn never_trained(label: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "method {label:?} needs a trained model and `evaluate` never trains: run `train` on this experiment, \
             or pass --from RUN_DIR (a run folder that trained it)"
        )
    }

    /// The training folder for the method `label` with `settings`: `cache_dir` (where `train` trains) or
    /// the earlier run's. An error names the run folder and the method when there is no such model.
    pub fn locate(
        &self,
        label: &str,
        settings: &impl Serialize,
        encoder: &str,
        cache_dir: impl FnOnce() -> anyhow::Result<PathBuf>,
    ) -> anyhow::Result<Located> {
        match self {
            Training::Allowed => Ok(Located { dir: cache_dir()?, may_train: true }),
            Training::Never(None) => Err(Training::never_trained(label)),
            Training::Never(Some(run)) => {
                let settings = serde_json::to_value(settings)?;
                let found = run.models.iter().find(|m| m.settings == settings).with_context(|| {
                    let there: Vec<&str> = run.models.iter().map(|m| m.method.as_str()).collect();
                    format!("--from {}: no model trained for method {label:?} there (it holds: {there:?})", run.dir.display())
                })?;
                anyhow::ensure!(
                    found.encoder == encoder,
                    "--from {}: the model for method {label:?} was trained with another encoder than this experiment's",
                    run.dir.display()
                );
                Ok(Located { dir: found.dir.clone(), may_train: false })
            }
        }
    }
}
