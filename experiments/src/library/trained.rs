//! A trained model of a run folder as the encoder of an index (`arbor index --from RUN_DIR --row NAME`): a
//! dense row's (the matched dense control's fine-tuned encoder or linear map over the frozen one, a dense
//! row over the documents' summaries), the student distilled from the reranker (`Distill`) or a fine-tuned SAC's (Reuter et al., 2025: every unit read after
//! its document's summary, [`crate::methods::summary_chunks`]). Units and queries are embedded exactly as
//! the row embeds them in the run (`methods::dense::flat_through`): a row over the summaries writes each
//! new document's summary as the run wrote it (the extractive summariser over the pretrained encoder's
//! vectors of its units, `methods::document_summary`) before every unit, so the index ranks as that row.

use arbor_models::pooling::Role;
use std::path::{Path, PathBuf};

use anyhow::Context;
use arbor_models::encoder::Kernel;
use arbor_models::{DefaultBackend, SentenceEncoder};
use serde::{Deserialize, Serialize};

use arbor_datasets::{Corpus, Span};
use arbor_eval::LeafIndex;

use crate::methods::chunks::headed;
use crate::methods::dense::{DenseConfig, through};
use crate::methods::distill::DistillConfig;
use crate::methods::document_summary::{DocumentSummary, header};
use crate::methods::summary_chunks::SummaryChunksConfig;
use crate::summaries::{Extractive, Summariser, SummariserConfig};
use crate::trained::{EarlierRun, TrainedModel};

/// Which trained model an index embeds with: recorded in its `meta.model` as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRecord {
    /// The row it was trained for.
    pub method: String,
    /// Its training folder.
    pub dir: PathBuf,
    /// Whether the encoder stayed frozen (a linear map was trained over it).
    pub frozen: bool,
    /// Every unit read after its document's summary (a fine-tuned SAC, a dense row over the summaries);
    /// absent in an index built before rows over summaries could serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<DocumentSummary>,
}

/// How a trained row of a run embeds, if an index can embed as it does: whether its encoder stayed frozen,
/// and the summary it reads every unit after.
fn servable(model: &TrainedModel) -> Option<(bool, Option<DocumentSummary>)> {
    if let Ok(dense) = serde_json::from_value::<DenseConfig>(model.settings.clone()) {
        return Some((dense.training.freeze_encoder, dense.summary));
    }
    // The student distilled from the reranker: a fine-tuned encoder, embedding as a dense row does.
    if serde_json::from_value::<DistillConfig>(model.settings.clone()).is_ok() {
        return Some((false, None));
    }
    let sac = serde_json::from_value::<SummaryChunksConfig>(model.settings.clone()).ok()?;
    sac.training.as_ref().map(|t| (t.freeze_encoder, Some(sac.summary())))
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
        let named: Vec<&TrainedModel> = earlier.models.iter().filter(|m| m.method.contains(name)).collect();
        let served: Vec<_> = named.iter().filter_map(|m| servable(m).map(|s| (*m, s))).collect();
        let listed = || earlier.models.iter().map(|m| format!("  {}", m.method)).collect::<Vec<_>>().join("\n");
        let [(model, (frozen, summary))] = &served[..] else {
            let cannot = named.iter().filter(|m| servable(m).is_none()).map(|m| format!(" ({} cannot serve from an index yet)", m.method));
            anyhow::bail!(
                "{} rows of {} an index can embed as are named like {name:?}{}; an index embeds as one row: a dense row's \
                 (a `Dense` control, a dense row over the summaries), a distilled student's or a fine-tuned SAC's. The run's models:\n{}",
                served.len(),
                run.display(),
                cannot.collect::<String>(),
                listed()
            )
        };
        if let Some(s) = summary.as_ref().filter(|s| s.summariser != SummariserConfig::Extractive) {
            anyhow::bail!(
                "{} reads summaries written by {:?}, which are the run's documents' only: an index writes a new document's \
                 summary with the extractive summariser, so it cannot embed as this row",
                model.method,
                s.summariser
            )
        }
        anyhow::ensure!(
            model.encoder == encoder.fingerprint,
            "{} was trained over encoder {}, not the one loaded now ({})",
            model.method,
            model.encoder,
            encoder.fingerprint
        );
        let dir = if model.dir.is_absolute() { model.dir.clone() } else { run.join(&model.dir) };
        Self::load(ModelRecord { method: model.method.clone(), dir, frozen: *frozen, summary: summary.clone() }, encoder)
    }

    /// The model an index's record names.
    pub fn load(record: ModelRecord, encoder: &SentenceEncoder<DefaultBackend>) -> anyhow::Result<Self> {
        let shape = (!record.frozen).then(|| encoder.bert.clone());
        let model = arbor_trainers::dense::finished(encoder.dim(), shape, &record.dir)?
            .with_context(|| format!("{} holds no finished training of {:?}", record.dir.display(), record.method))?;
        let kernel = model.encoder.as_ref().map(|bert| encoder.kernel_for(bert));
        Ok(Tuned { record, model, kernel })
    }

    /// The vectors of the units of `leaves` (one document's, cut from `corpus`; `inputs` their texts as the
    /// encoder reads them) as the row has them: after the document's summary, written as the run wrote it
    /// (`name`: its title, else its id), if the row reads one.
    pub fn embed_units(
        &self,
        encoder: &SentenceEncoder<DefaultBackend>,
        (corpus, leaves, name): (&Corpus, &LeafIndex, &str),
        inputs: &[&str],
        batch: usize,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        let Some(summary) = &self.record.summary else { return Ok(self.embed(encoder, Role::Passage, inputs, batch)) };
        let plain = encoder.embed(inputs, batch, &mut |_| {});
        let summariser = Extractive { corpus, leaves, unit_vectors: &plain };
        let written = summariser.summarise(0, &[Span::new(0, corpus.documents[0].text.len())], summary.summary_tokens)?;
        let header = header(name, &written.text);
        let headed: Vec<String> = inputs.iter().map(|i| headed(&header, i)).collect();
        Ok(self.embed(encoder, Role::Passage, &headed.iter().map(String::as_str).collect::<Vec<_>>(), batch))
    }

    /// The vectors of `texts` as the row has them: through the fine-tuned encoder, or the
    /// pretrained encoder's through the map.
    pub fn embed(&self, encoder: &SentenceEncoder<DefaultBackend>, role: Role, texts: &[&str], batch: usize) -> Vec<Vec<f32>> {
        match &self.kernel {
            Some(kernel) => encoder.embed_as(kernel, role, texts, batch, &mut |_| {}),
            None => through(&self.model, &encoder.embed_as(encoder.kernel(), role, texts, batch, &mut |_| {})),
        }
    }
}
