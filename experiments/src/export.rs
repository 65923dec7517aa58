//! `arbor export RUN_DIR --row NAME --to DIR`: a run's fine-tuned encoder written as a sentence-transformers
//! folder (issue 43, models that leave arbor): `SentenceTransformer(DIR)` loads it and gives arbor's vectors
//! (`scripts/check_export.py`), and `encoder: (model: Dir(DIR))` reads it back into arbor with the same
//! vectors bit for bit.
//!
//! The folder: the base encoder's config.json and tokenizer files, the fine-tuned weights as
//! `model.safetensors` (`arbor_models::save::bert_safetensors`, the base checkpoint's pooler copied as it
//! was), `sentence_bert_config.json` with the
//! token limit the run encoded with, and the pipeline arbor embeds with in `modules.json`: the
//! transformer, the encoder's pooling (`1_Pooling`: mean, CLS or last token), L2 normalisation
//! (`2_Normalize`), and its query and passage prompts (config_sentence_transformers.json, "query" and
//! "document", read by `encode_query` and `encode_document`). Beside
//! them `arbor-export.json` says where it came from (run, row, training folder, the base encoder's
//! fingerprint). It is written into a sibling folder and renamed into place, so a failed export leaves
//! nothing behind; an existing `DIR` is never overwritten.
//!
//! Exported: the encoder of a `Dense` row trained with `freeze_encoder: false` (the reranker's control
//! included), of a `Distill` row (the student), of a `SummaryChunks` row fine-tuned with `freeze_encoder:
//! false` (its units are then to be embedded after their document's summary, as arbor does), and of a
//! `SproutRag` row with `attention: Sllm` trained with `freeze_encoder: false`. Refused,
//! with the reason: rows whose encoder stayed frozen (a linear map, head weights, a frozen SLLM's
//! encoder is the pretrained one), and the reranker, whose score adds gamma x the first-stage cosine to
//! its head's output, which no sentence-transformers cross-encoder computes.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use arbor_files::atomic_write;
use arbor_models::bert::Bert;
use arbor_models::pooling::Pooling;
use arbor_models::save::bert_safetensors;
use arbor_models::{DefaultBackend, SentenceEncoder, default_device};
use serde_json::json;

use crate::experiment::Experiment;
use crate::methods::dense::DenseConfig;
use crate::methods::distill::DistillConfig;
use crate::methods::sproutrag::{AttentionSource, SproutRagConfig};
use crate::methods::summary_chunks::SummaryChunksConfig;
use crate::trained::{EarlierRun, TrainedModel};

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// A run folder of `arbor train` (it holds experiment.ron and models.json)
    pub run: PathBuf,
    /// The row whose fine-tuned encoder is written, by its name in the report
    #[arg(long)]
    pub row: String,
    /// The folder to create (it must not exist yet)
    #[arg(long)]
    pub to: PathBuf,
}

/// The tokenizer's files copied from the base encoder where it has them (tokenizer.json is required).
pub(crate) const TOKENIZER_FILES: [&str; 4] = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"];

pub fn export(args: &ExportArgs) -> anyhow::Result<()> {
    anyhow::ensure!(!args.to.exists(), "{} exists: export writes a new folder (remove it, or name another)", args.to.display());
    let run = EarlierRun::load(&args.run)?;
    let entry = run.models.iter().find(|m| m.method == args.row).with_context(|| {
        let rows: Vec<&str> = run.models.iter().map(|m| m.method.as_str()).collect();
        format!("{}: no trained row named {:?} (its trained rows: {rows:?})", args.run.display(), args.row)
    })?;
    let exp = Experiment::load(&args.run.join("experiment.ron"))?;
    let encoder = arbor_models::SentenceEncoder::<DefaultBackend>::load(&exp.encoder, &default_device())?;
    anyhow::ensure!(
        encoder.fingerprint == entry.encoder,
        "the encoder {}/experiment.ron names is not the one the row was trained with (its files changed since the run?)",
        args.run.display()
    );
    let base = arbor_models::hub::resolve(&exp.encoder.model)?.path;
    let tuned = tuned_encoder(entry, &encoder)?;
    write_into_place(&args.to, |partial| write_folder(partial, &base, &tuned, &encoder, provenance(args, entry, &encoder)))?;
    eprintln!("wrote {} (sentence-transformers: SentenceTransformer({:?}); arbor: encoder: (model: Dir({:?})))", args.to.display(), args.to, args.to);
    Ok(())
}

/// Writes the new folder `to` by `write` into a sibling folder, then renames it into place, so that a
/// failed write leaves nothing at `to` (the partial folder is removed).
pub(crate) fn write_into_place(to: &Path, write: impl FnOnce(&Path) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let parent = to.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let name = to.file_name().with_context(|| format!("{} names no folder", to.display()))?;
    let partial = parent.join(format!(".{}.partial-{}", name.to_string_lossy(), std::process::id()));
    let written = std::fs::create_dir_all(&partial).with_context(|| format!("cannot create {}", partial.display())).and_then(|()| write(&partial));
    let placed = written.and_then(|()| std::fs::rename(&partial, to).with_context(|| format!("cannot move the folder to {}", to.display())));
    if placed.is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    placed
}

/// The fine-tuned encoder of `entry`'s row, read from its training folder over `encoder`, the one it was
/// fine-tuned from.
fn tuned_encoder(entry: &TrainedModel, encoder: &SentenceEncoder<DefaultBackend>) -> anyhow::Result<Bert<DefaultBackend>> {
    let row = &entry.method;
    let unfinished = || format!("{} holds no finished training for row {row:?}", entry.dir.display());
    // The encoder of a row the dense trainer (or the reranker's control's trainer) fine-tuned.
    let dense_encoder = || -> anyhow::Result<_> {
        Ok(arbor_trainers::dense::finished(encoder.dim(), Some(encoder.bert.clone()), &entry.dir)?.with_context(unfinished)?.encoder)
    };
    let tuned = if let Ok(dense) = serde_json::from_value::<DenseConfig>(entry.settings.clone()) {
        anyhow::ensure!(
            !dense.training.freeze_encoder || dense.reranker.is_some(),
            "row {row:?} trained a linear map over the frozen encoder, not the encoder: there is no fine-tuned encoder to export"
        );
        dense_encoder()?
    } else if let Ok(sprout) = serde_json::from_value::<SproutRagConfig>(entry.settings.clone()) {
        let fine_tuned = sprout.training.as_ref().is_some_and(|t| !t.freeze_encoder);
        anyhow::ensure!(
            sprout.attention == AttentionSource::Sllm && fine_tuned,
            "row {row:?} left the encoder frozen (it learned {}): there is no fine-tuned encoder to export",
            if sprout.attention == AttentionSource::Sllm { "an SLLM over its vectors" } else { "head weights" }
        );
        let dims = (encoder.dim(), encoder.config.vocab_size);
        arbor_trainers::sproutrag::finished(&sprout.model, sprout.aggregation, dims, Some(encoder.bert.clone()), &entry.dir)?
            .with_context(unfinished)?
            .encoder
    } else if serde_json::from_value::<DistillConfig>(entry.settings.clone()).is_ok() {
        dense_encoder()?
    } else if let Ok(sac) = serde_json::from_value::<SummaryChunksConfig>(entry.settings.clone()) {
        anyhow::ensure!(
            sac.training.as_ref().is_some_and(|t| !t.freeze_encoder),
            "row {row:?} left the encoder frozen: there is no fine-tuned encoder to export"
        );
        dense_encoder()?
    } else if entry.settings.get("over").is_some() {
        anyhow::bail!(
            "row {row:?} is the reranker: its score adds gamma x the first-stage cosine to the head's output over the pair's \
             mean-pooled vector, which no sentence-transformers cross-encoder computes; export its control (the Dense row \
             trained on its groups) for a bi-encoder"
        );
    } else {
        anyhow::bail!(
            "row {row:?} trained no encoder: export writes the encoder of a Dense or SproutRag (attention: Sllm) row trained with `freeze_encoder: false`"
        )
    };
    tuned.with_context(|| format!("row {row:?}: its trained model holds no encoder"))
}

/// Where the export came from, for `arbor-export.json`.
fn provenance(args: &ExportArgs, entry: &TrainedModel, encoder: &SentenceEncoder<DefaultBackend>) -> serde_json::Value {
    json!({
        "run": args.run,
        "row": entry.method,
        "training": entry.dir,
        "base_encoder_fingerprint": encoder.fingerprint,
        "arbor": env!("CARGO_PKG_VERSION"),
    })
}

fn write_json(path: &Path, value: &serde_json::Value) -> anyhow::Result<()> {
    atomic_write(path, serde_json::to_string_pretty(value)?.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
}

/// The sentence-transformers folder in `dir` (created).
fn write_folder(
    dir: &Path,
    base: &Path,
    tuned: &Bert<DefaultBackend>,
    encoder: &SentenceEncoder<DefaultBackend>,
    provenance: serde_json::Value,
) -> anyhow::Result<()> {
    for folder in [dir.to_owned(), dir.join("1_Pooling"), dir.join("2_Normalize")] {
        std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
    }
    for file in std::iter::once("config.json").chain(TOKENIZER_FILES) {
        let from = base.join(file);
        if from.is_file() {
            std::fs::copy(&from, dir.join(file)).with_context(|| format!("cannot copy {}", from.display()))?;
        }
    }
    let base_weights = base.join("model.safetensors");
    let base_bytes = std::fs::read(&base_weights).with_context(|| format!("cannot read {}", base_weights.display()))?;
    atomic_write(&dir.join("model.safetensors"), &bert_safetensors(tuned, encoder.config.family().map_err(anyhow::Error::msg)?, Some(&base_bytes))?)
        .context("cannot write model.safetensors")?;
    write_json(&dir.join("sentence_bert_config.json"), &json!({"max_seq_length": encoder.max_seq_length(), "do_lower_case": false}))?;
    write_json(
        &dir.join("modules.json"),
        &json!([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ]),
    )?;
    let pooling = encoder.pipeline.pooling;
    write_json(
        &dir.join("1_Pooling/config.json"),
        &json!({
            "word_embedding_dimension": encoder.dim(),
            "pooling_mode_cls_token": pooling == Pooling::Cls,
            "pooling_mode_mean_tokens": pooling == Pooling::Mean,
            "pooling_mode_max_tokens": false,
            "pooling_mode_mean_sqrt_len_tokens": false,
            "pooling_mode_weightedmean_tokens": false,
            "pooling_mode_lasttoken": pooling == Pooling::LastToken,
            "include_prompt": true,
        }),
    )?;
    let prompts = &encoder.pipeline.prompts;
    let prompts: serde_json::Map<String, serde_json::Value> = [("query", &prompts.query), ("document", &prompts.passage)]
        .into_iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(k, p)| (k.to_owned(), json!(p)))
        .collect();
    write_json(
        &dir.join("config_sentence_transformers.json"),
        &json!({"prompts": prompts, "default_prompt_name": null, "similarity_fn_name": "cosine"}),
    )?;
    write_json(&dir.join("arbor-export.json"), &provenance)
}
