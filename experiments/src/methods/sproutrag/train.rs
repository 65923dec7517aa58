//! SproutRAG's training glue: the head weights learned on L_attn over the encoder's token attention
//! (arbor_trainers::head_weights), and the joint training of the SLLM on InfoNCE + lambda L_attn
//! (arbor_trainers::sproutrag, Section 4), from the training split of the run's corpus, the validation
//! split held out. Each trains in a
//! cache folder `train-<key>` (key: the encoder, the settings, the training documents and queries); a
//! finished training, or under `evaluate --from` an earlier run's model, is read back.

use std::collections::BTreeMap;
use std::path::PathBuf;

use arbor_datasets::Span;
use arbor_datasets::merge_pairs::merge_pairs;
use arbor_models::DefaultBackend;
use arbor_models::aggregator::HeadAggregator;
use arbor_models::sproutrag::SproutRagModel;
use arbor_trainers::config::TrainConfig;
use arbor_trainers::head_weights::AttentionDoc;
use burn::backend::Autodiff;

use super::SproutRagConfig;
use crate::cache::{Artefact, key};
use crate::methods::Context;
use crate::methods::training::{
    Needs, data_key, evidence_of, headed_key, pretrained, queries_by_doc, record_merge_pairs, train_docs, training_queries,
};
use crate::progress::{bar, with_bar};
use crate::trained::Located;
use crate::validation::VALIDATION;

/// The encoder's token attention at the gold pairs of `units` (of one document), every head.
fn token_attention(ctx: &Context, units: &[usize], window_tokens: usize, pairs: &[(usize, usize)]) -> Vec<f32> {
    let texts: Vec<&str> = units.iter().map(|&u| ctx.leaves.units.text(ctx.corpus, u)).collect();
    ctx.encoder.pair_attention(&texts, window_tokens, ctx.encoder_config.batch_size, pairs)
}

/// Learns the head weights over token attention on the documents of `training.split` (the validation
/// split's held out: the epoch with the lowest validation L_attn is kept), in the cache folder `train-<key>`
/// (key: the encoder, the settings and the training and validation documents); a finished run, or the
/// earlier run's model under `evaluate --from`, is read back.
pub(super) fn train_head_weights(
    ctx: &Context,
    label: &str,
    config: &SproutRagConfig,
    window_tokens: usize,
    training: &TrainConfig,
) -> anyhow::Result<(HeadAggregator<DefaultBackend>, PathBuf)> {
    let e = ctx.encoder;
    let shape = (e.config.num_hidden_layers, e.config.num_attention_heads);
    let corpus = ctx.corpus;
    let of_split =
        |split: &str| -> Vec<usize> { (0..corpus.documents.len()).filter(|&d| corpus.documents[d].split.as_deref() == Some(split)).collect() };
    let (doc_ids, held_ids) = (of_split(&training.split), of_split(VALIDATION));
    // The targets come from the training's own sample of questions (`train_queries`), as its control's.
    let evidence = evidence_of(corpus, &training_queries(corpus, training));
    let held_evidence = evidence_of(corpus, &queries_by_doc(corpus, VALIDATION));
    let Located { dir: train_dir, may_train } = ctx.training.locate(label, &config.model_settings(), &ctx.keys.encoder, || {
        let data = (ctx.keys.of_docs(&doc_ids), ctx.keys.of_docs(&held_ids));
        let gold: Vec<_> = evidence.iter().chain(&held_evidence).map(|(&d, spans)| (&ctx.keys.docs[d], spans)).collect();
        ctx.cache.dir(Artefact::HeadWeights, &key(&(&ctx.keys.encoder, "head-weights", window_tokens, config.aggregation, training, data, gold)))
    })?;
    if let Some(aggregator) = arbor_trainers::head_weights::finished::<DefaultBackend>(shape, &train_dir)? {
        eprintln!("using the head weights learned in {}", train_dir.display());
        return Ok((aggregator, train_dir));
    }
    anyhow::ensure!(may_train, "{} holds no finished training for method {label:?}", train_dir.display());
    anyhow::ensure!(!doc_ids.is_empty(), "no document in training split {:?}", training.split);
    let pb = bar(doc_ids.len() + held_ids.len(), "training attention");
    let pairs_of = |ids: &[usize], evidence: &BTreeMap<usize, Vec<Span>>| -> Vec<Vec<(usize, usize)>> {
        ids.iter().map(|&d| merge_pairs(&ctx.leaves.segments[d], training.merge_pairs, evidence.get(&d).map_or(&[], Vec::as_slice))).collect()
    };
    let attention = |ids: &[usize], pairs: &[Vec<(usize, usize)>]| -> Vec<AttentionDoc> {
        ids.iter()
            .zip(pairs)
            .map(|(&d, pairs)| {
                let units: Vec<usize> = ctx.leaves.units.by_doc[d].clone().collect();
                // A document without gold pairs teaches nothing: its attention is not computed.
                let pair_attention = if pairs.is_empty() { Vec::new() } else { token_attention(ctx, &units, window_tokens, pairs) };
                pb.inc(1);
                AttentionDoc { pair_attention, pairs: pairs.len() }
            })
            .collect()
    };
    let (pairs, held_pairs) = (pairs_of(&doc_ids, &evidence), pairs_of(&held_ids, &held_evidence));
    let units_of = |d: usize| &ctx.leaves.units.spans[ctx.leaves.units.by_doc[d].clone()];
    record_merge_pairs(&train_dir, corpus, doc_ids.iter().zip(&pairs).map(|(&d, p)| (units_of(d), &p[..])))?;
    let docs = attention(&doc_ids, &pairs);
    let holdout = attention(&held_ids, &held_pairs);
    pb.finish_and_clear();
    let aggregator = with_bar("learning head weights", |progress| {
        arbor_trainers::head_weights::train::<Autodiff<DefaultBackend>>(training, shape, config.aggregation, &docs, &holdout, &train_dir, progress)
    })?;
    Ok((aggregator, train_dir))
}

/// Trains SproutRAG on the queries of `training.split`, holding out the validation split's (the epoch
/// with the best validation IE is kept), in the cache folder `train-<key>` (checkpoints/, tb/, log.jsonl;
/// key: the encoder, the settings, the training and validation documents and queries): a finished training
/// (or the earlier run's model under `evaluate --from`) is read back, an interrupted one continues from its
/// last checkpoint. With `headers` (by document: SAC's summaries), every unit is read after its
/// document's header, and the key holds them.
pub(super) fn train_model(
    ctx: &Context,
    label: &str,
    config: &SproutRagConfig,
    training: &TrainConfig,
    headers: Option<&[String]>,
) -> anyhow::Result<(SproutRagModel<DefaultBackend>, PathBuf)> {
    let (corpus, encoder, keys) = (ctx.corpus, ctx.encoder, ctx.keys);
    let by_doc = training_queries(corpus, training);
    let held = queries_by_doc(corpus, VALIDATION);
    let Located { dir: train_dir, may_train } = ctx.training.locate(label, &config.model_settings(), &keys.encoder, || {
        let data = (data_key(ctx, &by_doc), data_key(ctx, &held));
        let read = (&keys.encoder, &config.model, config.aggregation, training, data);
        ctx.cache.dir(Artefact::SproutRag, &headed_key(&read, headers, &by_doc, &held))
    })?;
    let dims = (encoder.dim(), encoder.config.vocab_size);
    let fine_tuned = (!training.freeze_encoder).then(|| encoder.bert.clone());
    if let Some(model) = arbor_trainers::sproutrag::finished(&config.model, config.aggregation, dims, fine_tuned, &train_dir)? {
        eprintln!("using the trained model in {}", train_dir.display());
        return Ok((model, train_dir));
    }
    // The pretrained weights again, on the autodiff backend, when they are fine-tuned.
    let encoder_weights = if training.freeze_encoder { None } else { Some(pretrained(ctx)?) };
    anyhow::ensure!(may_train, "{} holds no finished training for method {label:?}", train_dir.display());
    anyhow::ensure!(!by_doc.is_empty(), "no query with evidence in training split {:?}", training.split);
    let needs = Needs { ids: !training.freeze_encoder, vae_tokens: config.model.vae.is_some(), merge_pairs: Some(training.merge_pairs), headers };
    let docs = train_docs(ctx, &by_doc, &training.split, needs)?;
    let holdout = train_docs(ctx, &held, VALIDATION, needs)?;
    record_merge_pairs(&train_dir, corpus, docs.iter().map(|d| (&d.units[..], &d.pairs[..])))?;
    let model = with_bar("training", |progress| {
        arbor_trainers::sproutrag::train(
            training,
            &config.model,
            config.aggregation,
            dims,
            encoder_weights,
            corpus,
            &docs,
            &holdout,
            &train_dir,
            progress,
        )
    })?;
    Ok((model, train_dir))
}
