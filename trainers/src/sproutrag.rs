//! SproutRAG's joint training (Section 4): per step, one document and a batch of its queries,
//!
//! ```text
//! L = L_ret + lambda * L_attn (+ CE + beta * KL with a SentenceVAE)
//! ```
//!
//! with L_ret InfoNCE between query embeddings and their positive units (in-batch negatives, plus the
//! document's other units as hard negatives), and L_attn on the aggregated attention M of the document's
//! gold merge pairs. The encoder is frozen (units and queries arrive as pooled vectors), or fine-tuned: it
//! is then part of the model and runs over the document's units and the batch's queries every step.
//! AdamW with separate learning rates for the aggregation weights, the new modules and the fine-tuned
//! encoder, linear warmup and decay, gradient
//! clipping; a checkpoint every N steps; `resume` continues from the last one with the same batches. A
//! NaN or infinite term stops the run, naming the step and the term.

use std::path::Path;

use anyhow::bail;
use arbor_datasets::{Corpus, DocSpan};
use arbor_eval::Item;
use arbor_eval::index::top_k;
use arbor_eval::metrics::{Metrics, score_query};
use arbor_losses::{attention_structure, info_nce, vae_loss};
use arbor_models::DefaultBackend;
use arbor_models::aggregator::AggregationInit;
use arbor_models::bert::Bert;
use arbor_models::sproutrag::{SproutRagModel, SproutRagModelConfig};
use burn::backend::Autodiff;
use burn::module::{AutodiffModule, Module};
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamWConfig, GradientsParams, Optimizer};
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor, TensorData};

use crate::checkpoint;
use crate::config::TrainConfig;
use crate::data::{Batch, TrainDoc, TrainQuery, epoch_batches};
use crate::logger::Logger;

type A = Autodiff<DefaultBackend>;

/// Trains SproutRAG's modules; returns the trained model (without autodiff) for indexing. `encoder`: the
/// pretrained encoder when it is fine-tuned (`training.freeze_encoder: false`), else `None`.
#[allow(clippy::too_many_arguments)]
pub fn train(
    config: &TrainConfig,
    model_config: &SproutRagModelConfig,
    aggregation: AggregationInit,
    dims: (usize, usize),
    encoder: Option<Bert<A>>,
    corpus: &Corpus,
    train: &[TrainDoc],
    holdout: &[TrainDoc],
    run_dir: &Path,
    resume: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<SproutRagModel<DefaultBackend>> {
    config.check().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(train.iter().any(|d| !d.queries.is_empty()), "no training query: check training.split");
    let device = Default::default();
    <A as Backend>::seed(&device, config.seed);
    let (d_input, vocab) = dims;
    anyhow::ensure!(
        encoder.is_some() != config.freeze_encoder,
        "training.freeze_encoder is {} but the encoder was {}given",
        config.freeze_encoder,
        if encoder.is_some() { "" } else { "not " }
    );
    let mut model: SproutRagModel<A> = model_config.init(d_input, vocab, aggregation, &device);
    if let Some(encoder) = encoder {
        model = model.with_encoder(encoder);
    }
    let adamw = AdamWConfig::new().with_weight_decay(config.weight_decay).with_grad_clipping(Some(GradientClippingConfig::Norm(config.grad_clip)));
    let mut optim_agg = adamw.init::<A, SproutRagModel<A>>();
    let mut optim_new = adamw.init::<A, SproutRagModel<A>>();
    let mut optim_enc = adamw.init::<A, SproutRagModel<A>>();
    let ckpt_dir = run_dir.join("checkpoints");
    let mut start = 0;
    if resume {
        if let Some(state) = checkpoint::state(&ckpt_dir)? {
            model = model.load_record(checkpoint::load(&ckpt_dir, &state, "model", &device)?);
            optim_agg = optim_agg.load_record(checkpoint::load(&ckpt_dir, &state, "optim-aggregation", &device)?);
            optim_new = optim_new.load_record(checkpoint::load(&ckpt_dir, &state, "optim-new", &device)?);
            if model.encoder.is_some() {
                optim_enc = optim_enc.load_record(checkpoint::load(&ckpt_dir, &state, "optim-encoder", &device)?);
            }
            start = state.step;
            eprintln!("resuming from step {start}");
        }
    }
    let mut logger = Logger::open(run_dir, resume.then_some(start))?;
    let per_epoch = epoch_batches(train, config.batch_size, config.seed, 0).len();
    let total = per_epoch * config.epochs;
    let max_tokens = model_config.vae.map_or(0, |v| v.max_tokens);
    // The current epoch's batches, made when the epoch changes (they depend only on seed and epoch).
    let mut batches: (usize, Vec<Batch>) = (usize::MAX, Vec::new());
    for step in start..total {
        let (epoch, at) = (step / per_epoch, step % per_epoch);
        if batches.0 != epoch {
            batches = (epoch, epoch_batches(train, config.batch_size, config.seed, epoch));
        }
        let batch = &batches.1[at];
        let terms = losses(&model, config, &train[batch.doc], &batch.queries, max_tokens, &device);
        let mut logged = Vec::with_capacity(terms.len() + 5);
        for (name, term) in &terms {
            let v: f32 = term.clone().into_scalar();
            if !v.is_finite() {
                bail!("step {}: loss term {name} is {v} (document {}, {} queries)", step + 1, batch.doc, batch.queries.len());
            }
            logged.push((*name, f64::from(v)));
        }
        let loss = terms.into_iter().map(|(_, t)| t).reduce(|a, b| a + b).expect("InfoNCE is always there");
        logged.push(("loss/total", logged.iter().map(|(_, v)| v).sum()));
        let factor = config.schedule(step, total);
        let mut grads = loss.backward();
        let agg_grads = GradientsParams::from_module(&mut grads, &model.aggregator);
        let enc_grads = model.encoder.as_ref().map(|e| GradientsParams::from_module(&mut grads, e));
        let new_grads = GradientsParams::from_grads(grads, &model);
        model = optim_agg.step(config.lr_aggregation * factor, model, agg_grads);
        model = optim_new.step(config.lr_new * factor, model, new_grads);
        if let Some(enc_grads) = enc_grads {
            model = optim_enc.step(config.lr_encoder * factor, model, enc_grads);
            logged.push(("lr/encoder", config.lr_encoder * factor));
        }
        logged.extend([
            ("lr/aggregation", config.lr_aggregation * factor),
            ("lr/new", config.lr_new * factor),
            ("head_weight_entropy", crate::head_weights::entropy(&model.aggregator.valid())),
            ("epoch", epoch as f64),
        ]);
        let done = step + 1;
        logger.log(done, &logged)?;
        if done % per_epoch == 0 && !holdout.is_empty() {
            let m = evaluate(&model.valid(), corpus, holdout);
            logger.log(done, &[("eval/ie_mean", m.ie_mean), ("eval/hit@1", m.hit[0]), ("eval/hit@5", m.hit[2])])?;
        }
        if done % config.checkpoint_every == 0 || done == total {
            logger.flush()?;
            let mut files = vec![
                checkpoint::write_item::<A, _>(&ckpt_dir, "model", done, model.clone().into_record())?,
                checkpoint::write_item::<A, _>(&ckpt_dir, "optim-aggregation", done, optim_agg.to_record())?,
                checkpoint::write_item::<A, _>(&ckpt_dir, "optim-new", done, optim_new.to_record())?,
            ];
            if model.encoder.is_some() {
                files.push(checkpoint::write_item::<A, _>(&ckpt_dir, "optim-encoder", done, optim_enc.to_record())?);
            }
            checkpoint::commit(&ckpt_dir, done, files, done == total)?;
        }
        progress(done, total);
    }
    logger.flush()?;
    Ok(model.valid())
}

/// The model of a training run in `run_dir` that has finished, if it has (nothing is recomputed).
/// `encoder`: the pretrained encoder when it was fine-tuned (its trained weights are then read back).
pub fn finished(
    model_config: &SproutRagModelConfig,
    aggregation: AggregationInit,
    dims: (usize, usize),
    encoder: Option<Bert<A>>,
    run_dir: &Path,
) -> anyhow::Result<Option<SproutRagModel<DefaultBackend>>> {
    let ckpt_dir = run_dir.join("checkpoints");
    let Some(state) = checkpoint::state(&ckpt_dir)?.filter(|s| s.complete) else { return Ok(None) };
    let device = Default::default();
    let mut model: SproutRagModel<A> = model_config.init(dims.0, dims.1, aggregation, &device);
    if let Some(encoder) = encoder {
        model = model.with_encoder(encoder);
    }
    Ok(Some(model.load_record(checkpoint::load(&ckpt_dir, &state, "model", &device)?).valid()))
}

/// The loss terms of one batch, by name: InfoNCE, lambda * L_attn, and the VAE's CE and beta * KL.
fn losses(
    model: &SproutRagModel<A>,
    config: &TrainConfig,
    doc: &TrainDoc,
    queries: &[usize],
    max_tokens: usize,
    device: &burn::tensor::Device<A>,
) -> Vec<(&'static str, Tensor<A, 1>)> {
    let n = doc.units.len();
    let out = model.document(unit_vectors(model, doc, device), model.vae.is_some());
    let batch: Vec<&TrainQuery> = queries.iter().map(|&q| &doc.queries[q]).collect();
    let eq = model.queries(query_vectors(model, &batch, device));
    let positives: Vec<usize> = queries.iter().map(|&q| doc.queries[q].positive).collect();
    let ep = out.embeddings.clone().select(0, ids(&positives, device));
    let others: Vec<usize> = (0..n).filter(|u| !positives.contains(u)).collect();
    let hard = (config.hard_negatives && !others.is_empty()).then(|| out.embeddings.clone().select(0, ids(&others, device)));
    let mut terms = vec![("loss/ret", info_nce(eq, ep, hard, config.tau))];
    if !doc.pairs.is_empty() {
        terms.push(("loss/attn_weighted", attention_structure(out.m, &doc.pairs, config.eps) * config.lambda));
    }
    if let (Some(vae), Some(latents)) = (&model.vae, out.vae) {
        // Reconstruct the positive units (teacher forcing): inputs are the tokens shifted right.
        let rows: Vec<&[u32]> = positives.iter().map(|&u| doc.tokens[u].as_slice()).collect();
        let t = rows.iter().map(|r| r.len().saturating_sub(1).min(max_tokens)).max().unwrap_or(0).max(1);
        let b = rows.len();
        let (mut inputs, mut targets, mut mask) = (vec![0i64; b * t], vec![0i64; b * t], vec![false; b * t]);
        for (r, row) in rows.iter().enumerate() {
            for k in 0..row.len().saturating_sub(1).min(t) {
                inputs[r * t + k] = i64::from(row[k]);
                targets[r * t + k] = i64::from(row[k + 1]);
                mask[r * t + k] = true;
            }
        }
        let mask = Tensor::<A, 2, Bool>::from_data(TensorData::new(mask, [b, t]), device);
        let pick = ids(&positives, device);
        let logits = vae.decode(latents.z.select(0, pick.clone()), Tensor::from_data(TensorData::new(inputs, [b, t]), device), mask.clone());
        let targets = Tensor::from_data(TensorData::new(targets, [b, t]), device);
        let (ce, kl) = vae_loss(logits, targets, mask, latents.mu.select(0, pick.clone()), latents.log_var.select(0, pick));
        terms.push(("loss/vae_ce", ce));
        terms.push(("loss/vae_kl_weighted", kl * config.beta));
    }
    terms
}

/// The pooled vectors of a document's units: given (frozen encoder), or from the model's own encoder.
fn unit_vectors<B: Backend>(model: &SproutRagModel<B>, doc: &TrainDoc, device: &B::Device) -> Tensor<B, 2> {
    match &model.encoder {
        Some(_) => model.pool(&doc.ids.iter().map(Vec::as_slice).collect::<Vec<_>>(), device),
        None => Tensor::from_data(TensorData::new(doc.pooled.concat(), [doc.pooled.len(), doc.pooled[0].len()]), device),
    }
}

/// The pooled vectors of queries, as [`unit_vectors`].
fn query_vectors<B: Backend>(model: &SproutRagModel<B>, queries: &[&TrainQuery], device: &B::Device) -> Tensor<B, 2> {
    match &model.encoder {
        Some(_) => model.pool(&queries.iter().map(|q| q.ids.as_slice()).collect::<Vec<_>>(), device),
        None => {
            let d = queries[0].pooled.len();
            Tensor::from_data(TensorData::new(queries.iter().flat_map(|q| q.pooled.iter().copied()).collect::<Vec<_>>(), [queries.len(), d]), device)
        }
    }
}

fn ids(values: &[usize], device: &burn::tensor::Device<A>) -> Tensor<A, 1, Int> {
    Tensor::from_data(TensorData::new(values.iter().map(|&i| i as i64).collect::<Vec<_>>(), [values.len()]), device)
}

/// Flat retrieval over the SLLM's unit embeddings of held-back documents, scored on their gold spans.
pub fn evaluate(model: &SproutRagModel<DefaultBackend>, corpus: &Corpus, docs: &[TrainDoc]) -> Metrics {
    let device = Default::default();
    let mut per_query = Vec::new();
    for doc in docs.iter().filter(|d| !d.queries.is_empty()) {
        let n = doc.units.len();
        let out = model.document(unit_vectors(model, doc, &device), false);
        let units = out.embeddings.into_data().to_vec::<f32>().expect("f32");
        let eq = model.queries(query_vectors(model, &doc.queries.iter().collect::<Vec<_>>(), &device));
        let dm = eq.dims()[1];
        let eq = eq.into_data().to_vec::<f32>().expect("f32");
        for (qi, q) in doc.queries.iter().enumerate() {
            let qv = &eq[qi * dm..(qi + 1) * dm];
            let scores = (0..n).map(|u| (u, arbor_eval::beam::cosine(qv, &units[u * dm..(u + 1) * dm])));
            let items: Vec<Item> = top_k(scores, 10).into_iter().map(|(u, s)| Item::unit(doc.units[u], s)).collect();
            let gold_units: Vec<DocSpan> =
                doc.units.iter().filter(|u| q.gold.iter().any(|g| g.doc == u.doc && g.span.overlaps(&u.span))).copied().collect();
            per_query.push(score_query(corpus, &q.gold, &gold_units, &items));
        }
    }
    Metrics::mean(&per_query)
}
