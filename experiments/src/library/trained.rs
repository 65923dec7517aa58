//! A trained model of a run folder as the encoder of an index (`arbor index --from RUN_DIR --row NAME`): a
//! dense row's (the matched dense control's fine-tuned encoder or linear map over the frozen one, a dense
//! row over the documents' summaries), the student distilled from the reranker (`Distill`), a fine-tuned
//! SAC's (Reuter et al., 2025: every unit read after its document's summary,
//! [`crate::methods::summary_chunks`]), or a trained SproutRAG row's (its learned head weights or its
//! SLLM, with the trees they make: [`crate::methods::sproutrag::RowTrees`]). Units and queries are embedded
//! exactly as the row embeds them in the run (`methods::dense::flat_through`): a row over the summaries
//! writes each new document's summary as the run wrote it (the extractive summariser over the pretrained
//! encoder's vectors of its units, `methods::document_summary`) before every unit, so the index ranks as
//! that row.

use arbor_models::pooling::Role;
use std::path::{Path, PathBuf};

use anyhow::Context;
use arbor_models::encoder::Kernel;
use arbor_models::{DefaultBackend, SentenceEncoder};
use serde::{Deserialize, Serialize};

use arbor_datasets::{Corpus, Span};
use arbor_eval::LeafIndex;

use crate::experiment::Experiment;
use crate::methods::chunks::headed;
use crate::methods::dense::{DenseConfig, through};
use crate::methods::distill::DistillConfig;
use crate::methods::document_summary::{DocumentSummary, header};
use crate::methods::sproutrag::{RowTrees, SproutRagConfig};
use crate::methods::summary_chunks::SummaryChunksConfig;
use crate::methods::{Method, MethodSpec};
use crate::summaries::{Extractive, Summariser, SummariserConfig};
use crate::trained::{EarlierRun, TrainedModel};

/// Which trained model an index embeds with: recorded in its `meta.model` as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRecord {
    /// The row it was trained for.
    pub method: String,
    /// Its training folder.
    pub dir: PathBuf,
    /// Whether the encoder stayed frozen (a linear map, an SLLM or head weights were trained over it).
    pub frozen: bool,
    /// Every unit read after its document's summary (a fine-tuned SAC, a dense row over the summaries);
    /// absent in an index built before rows over summaries could serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<DocumentSummary>,
    /// The row itself where the index serves it as a method of its own: a trained SproutRAG row (the index
    /// keeps its trees, its leaves' and queries' vectors are the row's, and `arbor query --method sproutrag`
    /// searches as the row did) or a reranked row (`dir` its reranker's; the index holds the pretrained
    /// encoder's vectors, which the row's first stage and prior read, and `--method rerank` reranks as the
    /// row did). Absent for a dense row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<Method>,
}

impl ModelRecord {
    /// The trained SproutRAG row whose trees the index keeps.
    pub fn trees(&self) -> Option<&SproutRagConfig> {
        match &self.row {
            Some(Method::SproutRag(row)) => Some(row),
            _ => None,
        }
    }

    /// Whether the index holds the pretrained encoder's vectors (a reranked row's).
    pub fn reranks(&self) -> bool {
        matches!(self.row, Some(Method::Rerank(_)))
    }
}

/// How a trained row of a run embeds, if an index can embed as it does: what its [`ModelRecord`] says but
/// for the training folder, a SproutRAG row given by its model settings until [`tree_row`] finds the row.
struct Servable {
    frozen: bool,
    summary: Option<DocumentSummary>,
    row: Option<Method>,
}

impl Servable {
    fn dense(frozen: bool, summary: Option<DocumentSummary>) -> Option<Servable> {
        Some(Servable { frozen, summary, row: None })
    }
}

/// How the row of `exp` that trained `model` embeds, if an index can embed as it does.
fn servable(model: &TrainedModel, exp: &Experiment) -> Option<Servable> {
    // A reranker is recorded under its row's name, its settings the reranker's training.
    let reranked = exp.methods.iter().find(|m| matches!(m, Method::Rerank(r) if r.label() == model.method));
    if let Some(row) = reranked {
        return Some(Servable { frozen: true, summary: None, row: Some(row.clone()) });
    }
    if let Ok(d) = serde_json::from_value::<DenseConfig>(model.settings.clone()) {
        return Servable::dense(d.training.freeze_encoder, d.summary);
    }
    // The student distilled from the reranker: a fine-tuned encoder, embedding as a dense row does.
    if serde_json::from_value::<DistillConfig>(model.settings.clone()).is_ok() {
        return Servable::dense(false, None);
    }
    if let Ok(sac) = serde_json::from_value::<SummaryChunksConfig>(model.settings.clone()) {
        return sac.training.as_ref().and_then(|t| Servable::dense(t.freeze_encoder, Some(sac.summary())));
    }
    let sprout = serde_json::from_value::<SproutRagConfig>(model.settings.clone()).ok()?;
    let frozen = sprout.training.as_ref()?.freeze_encoder;
    Some(Servable { frozen, summary: sprout.summary.clone(), row: Some(Method::SproutRag(sprout)) })
}

/// The row of `run` named like `name` that reads the SproutRAG model trained for `trained` (its model
/// settings): rows sharing one model may read it with other leaves or linkage (one of them is asked for),
/// or search it otherwise (the first one's search is kept).
fn tree_row((run, exp): (&Path, &Experiment), trained: &SproutRagConfig, name: &str) -> anyhow::Result<SproutRagConfig> {
    let mut rows: Vec<&SproutRagConfig> = Vec::new();
    for m in &exp.methods {
        if let Method::SproutRag(c) = m
            && c.model_settings() == *trained
            && c.label().contains(name)
            && !rows.iter().any(|r| r.index_settings() == c.index_settings())
        {
            rows.push(c);
        }
    }
    match &rows[..] {
        [row] => Ok((*row).clone()),
        [] => anyhow::bail!("no row of {} named like {name:?} reads the model of {}", run.display(), trained.label()),
        many => {
            let named: Vec<String> = many.iter().map(|r| format!("  {}", r.label())).collect();
            anyhow::bail!("rows of {} named like {name:?} build other trees from one model; name one:\n{}", run.display(), named.join("\n"))
        }
    }
}

/// What a trained row puts over the encoder.
enum Over {
    /// A dense row's model (a fine-tuned encoder, or a map over the frozen one) and the fine-tuned kernel.
    Dense(Box<arbor_models::dense::DenseModel<DefaultBackend>>, Option<Kernel<DefaultBackend>>),
    /// A SproutRAG row's trees and vectors.
    Trees(Box<RowTrees>),
    /// Nothing: the pretrained encoder's vectors (a reranked row's first stage).
    Encoder,
}

/// A trained row's model, loaded.
pub struct Tuned {
    pub record: ModelRecord,
    over: Over,
}

impl Tuned {
    /// The model of the row of run `run` whose name holds `name`.
    pub fn from_run(run: &Path, name: &str, encoder: &SentenceEncoder<DefaultBackend>) -> anyhow::Result<Self> {
        let earlier = EarlierRun::load(run)?;
        let exp = Experiment::load(&run.join("experiment.ron"))?;
        let named: Vec<&TrainedModel> = earlier.models.iter().filter(|m| m.method.contains(name)).collect();
        let served: Vec<_> = named.iter().filter_map(|m| servable(m, &exp).map(|s| (*m, s))).collect();
        let listed = || earlier.models.iter().map(|m| format!("  {}", m.method)).collect::<Vec<_>>().join("\n");
        let [(model, serving)] = &served[..] else {
            let cannot = named.iter().filter(|m| servable(m, &exp).is_none()).map(|m| format!(" ({} cannot serve from an index yet)", m.method));
            anyhow::bail!(
                "{} rows of {} an index can embed as are named like {name:?}{}; an index embeds as one row: a dense row's \
                 (a `Dense` control, a dense row over the summaries), a distilled student's, a fine-tuned SAC's, a trained \
                 SproutRAG row's or a reranked row's. The run's models:\n{}",
                served.len(),
                run.display(),
                cannot.collect::<String>(),
                listed()
            )
        };
        if let Some(s) = serving.summary.as_ref().filter(|s| s.summariser != SummariserConfig::Extractive) {
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
        let row = match &serving.row {
            Some(Method::SproutRag(trained)) => Some(Method::SproutRag(tree_row((run, &exp), trained, name)?)),
            other => other.clone(),
        };
        let dir = std::path::absolute(earlier.folder_of(model))?;
        let record = ModelRecord { method: model.method.clone(), dir, frozen: serving.frozen, summary: serving.summary.clone(), row };
        Self::load(record, encoder)
    }

    /// The model an index's record names.
    pub fn load(record: ModelRecord, encoder: &SentenceEncoder<DefaultBackend>) -> anyhow::Result<Self> {
        if let Some(row) = record.trees() {
            let over = Over::Trees(Box::new(RowTrees::trained(row.clone(), &record.dir, encoder)?));
            return Ok(Tuned { record, over });
        }
        if record.reranks() {
            // The reranker itself is loaded by the method that serves it.
            return Ok(Tuned { record, over: Over::Encoder });
        }
        let shape = (!record.frozen).then(|| encoder.bert.clone());
        let model = arbor_trainers::dense::finished(encoder.dim(), shape, &record.dir)?
            .with_context(|| format!("{} holds no finished training of {:?}", record.dir.display(), record.method))?;
        let kernel = model.encoder.as_ref().map(|bert| encoder.kernel_for(bert));
        Ok(Tuned { record, over: Over::Dense(Box::new(model), kernel) })
    }

    /// The width of the vectors the index stores.
    pub fn dim(&self, encoder: &SentenceEncoder<DefaultBackend>) -> usize {
        match &self.over {
            Over::Dense(..) | Over::Encoder => encoder.dim(),
            Over::Trees(trees) => trees.dim(encoder),
        }
    }

    /// The vectors of the units of `leaves` (one document's, cut from `corpus`; `inputs` their texts as the
    /// encoder reads them) as the row has them, after the document's summary, written as the run wrote it
    /// (`name`: its title, else its id), if the row reads one; and a SproutRAG row's tree over them (its
    /// merges).
    pub fn document(
        &self,
        encoder: &SentenceEncoder<DefaultBackend>,
        (corpus, leaves, name): (&Corpus, &LeafIndex, &str),
        inputs: &[&str],
        batch: usize,
    ) -> anyhow::Result<(Vec<Vec<f32>>, Option<Vec<(u32, u32)>>)> {
        let headed: Option<Vec<String>> = match &self.record.summary {
            None => None,
            Some(summary) => {
                let plain = encoder.embed(inputs, batch, &mut |_| {});
                let summariser = Extractive { corpus, leaves, unit_vectors: &plain };
                let written = summariser.summarise(0, &[Span::new(0, corpus.documents[0].text.len())], summary.summary_tokens)?;
                let header = header(name, &written.text);
                Some(inputs.iter().map(|i| headed(&header, i)).collect())
            }
        };
        let read: Vec<&str> = headed.as_ref().map_or_else(|| inputs.to_vec(), |h| h.iter().map(String::as_str).collect());
        match &self.over {
            Over::Dense(model, kernel) => Ok((dense(encoder, model, kernel.as_ref(), Role::Passage, &read, batch), None)),
            Over::Encoder => Ok((encoder.embed(&read, batch, &mut |_| {}), None)),
            Over::Trees(trees) => {
                let texts: Vec<&str> = (0..leaves.units.len()).map(|u| leaves.units.text(corpus, u)).collect();
                let tree = trees.document(encoder, &texts, &read, None, batch)?;
                Ok((tree.leaves, Some(tree.merges)))
            }
        }
    }

    /// The vectors of `questions` as the row has them.
    pub fn queries(&self, encoder: &SentenceEncoder<DefaultBackend>, questions: &[&str], batch: usize) -> Vec<Vec<f32>> {
        match &self.over {
            Over::Dense(model, kernel) => dense(encoder, model, kernel.as_ref(), Role::Query, questions, batch),
            Over::Trees(trees) => trees.queries(encoder, questions, batch),
            Over::Encoder => encoder.embed_queries(questions, batch, &mut |_| {}),
        }
    }
}

/// The vectors of `texts` as a dense row has them: through the fine-tuned encoder, or the pretrained
/// encoder's through the map.
fn dense(
    encoder: &SentenceEncoder<DefaultBackend>,
    model: &arbor_models::dense::DenseModel<DefaultBackend>,
    kernel: Option<&Kernel<DefaultBackend>>,
    role: Role,
    texts: &[&str],
    batch: usize,
) -> Vec<Vec<f32>> {
    match kernel {
        Some(kernel) => encoder.embed_as(kernel, role, texts, batch, &mut |_| {}),
        None => through(model, &encoder.embed_as(encoder.kernel(), role, texts, batch, &mut |_| {})),
    }
}
