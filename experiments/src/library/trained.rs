//! A trained model of a run folder as the encoder of an index (`arbor index --from RUN_DIR --model NAME`):
//! the matched dense control's, which is the fine-tuned encoder (or the linear map over the frozen one)
//! that carries the trained methods' gains. Units and queries are embedded exactly as the control's row
//! embeds them in the run (`methods::dense`), so the index ranks as that row does.

use arbor_models::pooling::Role;
use std::path::{Path, PathBuf};

use anyhow::Context;
use arbor_models::encoder::Kernel;
use arbor_models::{DefaultBackend, SentenceEncoder};
use serde::{Deserialize, Serialize};

use crate::methods::dense::{DenseConfig, through};
use crate::trained::EarlierRun;

/// Which trained model an index embeds with: recorded in its `meta.model` as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRecord {
    /// The row it was trained for.
    pub method: String,
    /// Its training folder.
    pub dir: PathBuf,
    /// Whether the encoder stayed frozen (a linear map was trained over it).
    pub frozen: bool,
}

/// A dense control's model, loaded.
pub struct Tuned {
    pub record: ModelRecord,
    model: arbor_models::dense::DenseModel<DefaultBackend>,
    kernel: Option<Kernel<DefaultBackend>>,
}

impl Tuned {
    /// The model of the row of run `run` whose name holds `name` (a dense control's).
    pub fn from_run(run: &Path, name: &str, encoder: &SentenceEncoder<DefaultBackend>) -> anyhow::Result<Self> {
        let earlier = EarlierRun::load(run)?;
        let dense: Vec<(&crate::trained::TrainedModel, DenseConfig)> = earlier
            .models
            .iter()
            .filter(|m| m.method.contains(name))
            .filter_map(|m| serde_json::from_value::<DenseConfig>(m.settings.clone()).ok().map(|c| (m, c)))
            .collect();
        let listed = || earlier.models.iter().map(|m| format!("  {}", m.method)).collect::<Vec<_>>().join("\n");
        let [(model, config)] = &dense[..] else {
            anyhow::bail!(
                "{} dense controls of {} are named like {name:?}; an index can embed with one (a `Dense` row's model). The run's models:\n{}",
                dense.len(),
                run.display(),
                listed()
            )
        };
        anyhow::ensure!(
            model.encoder == encoder.fingerprint,
            "{} was trained over encoder {}, not the one loaded now ({})",
            model.method,
            model.encoder,
            encoder.fingerprint
        );
        let dir = if model.dir.is_absolute() { model.dir.clone() } else { run.join(&model.dir) };
        Self::load(ModelRecord { method: model.method.clone(), dir, frozen: config.training.freeze_encoder }, encoder)
    }

    /// The model an index's record names.
    pub fn load(record: ModelRecord, encoder: &SentenceEncoder<DefaultBackend>) -> anyhow::Result<Self> {
        let shape = (!record.frozen).then(|| encoder.bert.clone());
        let model = arbor_trainers::dense::finished(encoder.dim(), shape, &record.dir)?
            .with_context(|| format!("{} holds no finished training of {:?}", record.dir.display(), record.method))?;
        let kernel = model.encoder.as_ref().map(|bert| encoder.kernel_for(bert));
        Ok(Tuned { record, model, kernel })
    }

    /// The vectors of `texts` as the control's row has them: through the fine-tuned encoder, or the
    /// pretrained encoder's through the map.
    pub fn embed(&self, encoder: &SentenceEncoder<DefaultBackend>, role: Role, texts: &[&str], batch: usize) -> Vec<Vec<f32>> {
        match &self.kernel {
            Some(kernel) => encoder.embed_as(kernel, role, texts, batch, &mut |_| {}),
            None => through(&self.model, &encoder.embed_as(encoder.kernel(), role, texts, batch, &mut |_| {})),
        }
    }
}
