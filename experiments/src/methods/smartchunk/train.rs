//! The embeddings of SmartChunk's higher-level chunks: their summaries' (the "summarize" row and the
//! compressor's targets, cached per document), and the trained compressor's (arbor_trainers::compressor,
//! trained on the chunks of the `split` documents, in the cache folder `train-<key>`; a finished training,
//! or the earlier run's under `evaluate --from`, is read back).

use arbor_eval::index::Chunks;
use arbor_eval::structures::levels::Levels;
use arbor_models::DefaultBackend;
use arbor_models::compressor::Compressor;
use arbor_trainers::compressor::{CompressionExample, compress};
use burn::backend::Autodiff;

use super::{CompressSettings, Context, MethodSpec, SmartChunkConfig, hierarchy, upper_chunks};
use crate::cache::{Artefact, key};
use crate::progress::with_bar;
use crate::summaries::Summariser;
use crate::trained::{Located, TrainedModel};
use crate::validation::VALIDATION;

/// The encoder's vectors of the summaries of `uppers`' chunks in `docs` (others empty), cached per
/// document under a key of the encoder, the chunks' levels and the summaries' settings.
pub(super) fn summary_vectors(
    ctx: &Context,
    summariser: &dyn Summariser,
    uppers: &Chunks,
    docs: &[usize],
    summary_tokens: usize,
    what: &impl serde::Serialize,
) -> anyhow::Result<Vec<Vec<f32>>> {
    let mut texts = vec![String::new(); uppers.len()];
    for &d in docs {
        for c in uppers.by_doc[d].clone() {
            texts[c] = summariser.summarise(d, &[uppers.spans[c].span], summary_tokens)?.text;
        }
    }
    ctx.chunk_vectors_of(&("smartchunk summaries", what, summary_tokens), uppers, docs, &|c| texts[c].clone())
}

/// The compressed vector of every chunk of `uppers`, from the unit vectors of its leaves.
pub(super) fn compressed(
    ctx: &Context,
    compressor: &Compressor<DefaultBackend>,
    levels: &[Option<Levels>],
    uppers: &Chunks,
    unit_vectors: &[Vec<f32>],
    batch: usize,
) -> Vec<Vec<f32>> {
    let mut parts: Vec<Vec<Vec<f32>>> = vec![Vec::new(); uppers.len()];
    for (d, l) in levels.iter().enumerate() {
        let Some(l) = l else { continue };
        let first_unit = ctx.leaves.units.by_doc[d].start;
        for (c, chunk) in uppers.by_doc[d].clone().zip(&l.chunks[l.by_level[0].end..]) {
            parts[c] = chunk.leaves.clone().map(|u| unit_vectors[first_unit + u].clone()).collect();
        }
    }
    let refs: Vec<&[Vec<f32>]> = parts.iter().map(Vec::as_slice).collect();
    compress(compressor, &refs, batch)
}

/// The compressor (trained now, read back from the cache, or from the earlier run) and its record.
pub(super) fn compressor(
    ctx: &Context,
    config: &SmartChunkConfig,
    settings: &CompressSettings,
) -> anyhow::Result<(Compressor<DefaultBackend>, TrainedModel)> {
    let label = config.label();
    let corpus = ctx.corpus;
    let of_split =
        |split: &str| -> Vec<usize> { (0..corpus.documents.len()).filter(|&d| corpus.documents[d].split.as_deref() == Some(split)).collect() };
    let (train_docs, held_docs) = (of_split(&settings.split), of_split(VALIDATION));
    // What the compressor depends on besides its own settings: the levels and how the targets are made.
    let trained_for = (&config.levels, config.summary_tokens, config.summariser.key()?, settings);
    let Located { dir, may_train } = ctx.training.locate(&label, &trained_for, &ctx.keys.encoder, || {
        let docs = (ctx.keys.of_docs(&train_docs), ctx.keys.of_docs(&held_docs));
        ctx.cache.dir(Artefact::Compressor, &key(&(&ctx.keys.encoder, "compressor", &trained_for, docs)))
    })?;
    let record =
        TrainedModel { method: label.clone(), settings: serde_json::to_value(&trained_for)?, encoder: ctx.keys.encoder.clone(), dir: dir.clone(), ..Default::default() };
    let d_input = ctx.encoder.dim();
    if let Some(model) = arbor_trainers::compressor::finished::<DefaultBackend>(&settings.model, d_input, &dir)? {
        eprintln!("using the compressor trained in {}", dir.display());
        return Ok((model, record));
    }
    anyhow::ensure!(may_train, "{} holds no finished training for method {label:?}", dir.display());
    anyhow::ensure!(!train_docs.is_empty(), "SmartChunk: no document in the compressor's training split {:?}", settings.split);
    let all_docs: Vec<usize> = train_docs.iter().chain(&held_docs).copied().collect();
    let unit_vectors = ctx.cache.unit_embeddings(ctx.encoder, corpus, ctx.leaves, ctx.keys, &all_docs, ctx.encoder_config.batch_size)?;
    let levels: Vec<Option<Levels>> = (0..corpus.documents.len()).map(|d| all_docs.contains(&d).then(|| hierarchy(ctx, &config.levels, d))).collect();
    let uppers = upper_chunks(&levels);
    let summariser = config.summariser.open(corpus, ctx.leaves, &unit_vectors, &ctx.cache.root)?;
    let targets = summary_vectors(ctx, &*summariser, &uppers, &all_docs, config.summary_tokens, &config.levels)?;
    // Each document's chunks with their parts' vectors and their summary's vector.
    let (unit_vectors, targets) = (&unit_vectors, &targets);
    let examples_of = |docs: &[usize]| -> Vec<CompressionExample> {
        docs.iter()
            .flat_map(|&d| {
                let l = levels[d].as_ref().expect("built above");
                let first_unit = ctx.leaves.units.by_doc[d].start;
                uppers.by_doc[d].clone().zip(&l.chunks[l.by_level[0].end..]).filter(|(_, chunk)| chunk.leaves.len() <= settings.max_parts).map(
                    move |(c, chunk)| CompressionExample {
                        parts: chunk.leaves.clone().map(|u| unit_vectors[first_unit + u].clone()).collect(),
                        target: targets[c].clone(),
                    },
                )
            })
            .collect()
    };
    let (examples, holdout) = (examples_of(&train_docs), examples_of(&held_docs));
    eprintln!(
        "training the compressor on {} chunks of {} documents ({} chunks of {} validation documents held out)",
        examples.len(),
        train_docs.len(),
        holdout.len(),
        held_docs.len()
    );
    let model = with_bar("training the compressor", |progress| {
        arbor_trainers::compressor::train::<Autodiff<DefaultBackend>>(
            &settings.training,
            &settings.model,
            d_input,
            &examples,
            &holdout,
            &dir,
            progress,
        )
    })?;
    Ok((model, record))
}
