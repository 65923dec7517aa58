//! SproutRAG's joint step and its held-out reading, which the skeleton's task ([`super`]) and the
//! data-parallel path ([`crate::parallel::sproutrag`]) both call: the loss terms of one document's batch
//! (L_ret, lambda * L_attn, mu * L_node over the tree M builds now, the SentenceVAE's CE and beta * KL),
//! and flat retrieval over the SLLM's unit embeddings of held-back documents, scored on their gold spans.

use arbor_datasets::Corpus;
use arbor_datasets::span::gold_units;
use arbor_eval::scoring::metrics::Metrics;
use arbor_eval::structures::node_targets::{NodeTargets, leaf_weights, node_targets, parents};
use arbor_eval::structures::tree::{Similarity, Tree};
use arbor_losses::{attention_structure, node_contrastive, vae_loss};
use arbor_models::sproutrag::SproutRagModel;
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Tensor, TensorData};

use crate::config::HeldOut;
use crate::config::TrainConfig;
use crate::data::{TrainDoc, TrainQuery};
use crate::encoder::{StepEncoder, Vectors, index};
use crate::negatives::StepMined;
use crate::objective::{flat_on_held_out, in_document_false_negatives, retrieval_loss, validation_figures};
use crate::window::window;

/// Validation IE and hit@1, 5 of `model` on the `holdout` documents (none when there is none), a
/// fine-tuned encoder run by the inference kernel.
pub(crate) fn held_out_figures<B: Backend>(
    corpus: &Corpus,
    holdout: &[TrainDoc],
    scope: HeldOut,
    encoder: Option<&StepEncoder>,
    model: &SproutRagModel<B>,
) -> Vec<(&'static str, f64)> {
    if holdout.is_empty() {
        return Vec::new();
    }
    validation_figures(&evaluate(model, &Vectors::validation(encoder, model.encoder.as_ref()), corpus, holdout, scope))
}

/// The loss terms of one batch, by name: InfoNCE, lambda * L_attn, and the VAE's CE and beta * KL.
pub(crate) fn losses<B: Backend>(
    model: &SproutRagModel<B>,
    vectors: &Vectors<B>,
    config: &TrainConfig,
    doc: &TrainDoc,
    queries: &[usize],
    mined: Option<StepMined<'_>>,
    max_tokens: usize,
) -> Vec<(&'static str, Tensor<B, 1>)> {
    let device = &model.aggregator.head_weights().device();
    let batch: Vec<&TrainQuery> = queries.iter().map(|&q| &doc.queries[q]).collect();
    // A fine-tuned encoder runs over the window only; the SLLM still reads the whole document.
    let kept = window(doc, &batch, config.step_tokens.filter(|_| vectors.fine_tuned()));
    let out = model.document(vectors.units_within(doc, &kept, device), model.vae.is_some());
    let eq = model.queries(vectors.queries(&batch, device));
    let positives: Vec<usize> = queries.iter().map(|&q| doc.queries[q].positive).collect();
    let false_negatives = in_document_false_negatives(doc, &batch, &mined.map_or_else(Vec::new, |m| m.spans()), config);
    let mined = mined.map(|m| mined_embeddings(model, vectors, m, device));
    let mut terms = vec![("loss/ret", retrieval_loss(out.embeddings.clone(), eq.clone(), &positives, mined, &false_negatives, config))];
    if !doc.pairs.is_empty() {
        terms.push(("loss/attn_weighted", attention_structure(out.m.clone(), &doc.pairs, config.eps) * config.lambda));
    }
    if config.node_loss > 0.0
        && let Some(l_node) = node_loss(out.embeddings.clone(), out.m.clone(), doc, &batch, eq, config.tau)
    {
        terms.push(("loss/node_weighted", l_node * config.node_loss));
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
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(mask, [b, t]), device);
        let pick = index(&positives, device);
        let logits = vae.decode(latents.z.select(0, pick.clone()), Tensor::from_data(TensorData::new(inputs, [b, t]), device), mask.clone());
        let targets = Tensor::from_data(TensorData::new(targets, [b, t]), device);
        let (ce, kl) = vae_loss(logits, targets, mask, latents.mu.select(0, pick.clone()), latents.log_var.select(0, pick));
        terms.push(("loss/vae_ce", ce));
        terms.push(("loss/vae_kl_weighted", kl * config.beta));
    }
    terms
}

/// The SLLM's embeddings of a step's mined negatives (`negatives: Mined`): each of their documents run
/// through the model whole, the mined units through a fine-tuned encoder (the others by their frozen
/// vectors, as a window is), those rows kept; `[mined units, d]` in `m.units` order (sorted).
fn mined_embeddings<B: Backend>(model: &SproutRagModel<B>, vectors: &Vectors<B>, m: StepMined<'_>, device: &B::Device) -> Tensor<B, 2> {
    let mut parts = Vec::new();
    for group in m.units.chunk_by(|a, b| a.0 == b.0) {
        let doc = &m.docs[group[0].0];
        let kept: Vec<usize> = group.iter().map(|r| r.1).collect();
        let out = model.document(vectors.units_within(doc, &kept, device), false);
        parts.push(out.embeddings.select(0, index(&kept, device)));
    }
    Tensor::cat(parts, 0)
}

/// L_node over the document's tree as the model builds it now (M and the unit embeddings read as data, so
/// the tree is fixed): node embeddings are the progressive ones, written as their leaves' weighted sums so
/// that the gradient reaches the units. `None` when no query of the batch has a positive below the root.
pub(super) fn node_loss<B: Backend>(
    units: Tensor<B, 2>,
    m: Tensor<B, 2>,
    doc: &TrainDoc,
    batch: &[&TrainQuery],
    eq: Tensor<B, 2>,
    tau: f64,
) -> Option<Tensor<B, 1>> {
    let device = units.device();
    let [n, dim] = units.dims();
    let (embeddings, m) = (units.clone().into_data().to_vec::<f32>().ok()?, m.into_data().to_vec::<f32>().ok()?);
    let tree = Tree::build(doc.units.clone(), &embeddings, dim, &Similarity::Dense { n, values: &m });
    let parent = parents(&tree);
    let (mut kept, mut targets) = (Vec::new(), Vec::new());
    for (i, q) in batch.iter().enumerate() {
        let gold = match gold_units(&doc.units, &q.gold) {
            g if g.is_empty() => vec![q.positive],
            g => g,
        };
        if let Some(t) = node_targets(&tree, &parent, &gold) {
            kept.push(i);
            targets.push(t);
        }
    }
    if kept.is_empty() {
        return None;
    }
    // Every node any query reads, once: a row of leaf weights each.
    let mut nodes: Vec<usize> = targets.iter().flat_map(NodeTargets::candidates).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let row = |node: usize| nodes.binary_search(&node).expect("collected above");
    let mut weights = vec![0f32; nodes.len() * n];
    for (r, &node) in nodes.iter().enumerate() {
        leaf_weights(&tree, node).into_iter().for_each(|(leaf, w)| weights[r * n + leaf] = w);
    }
    let mut candidates = vec![false; kept.len() * nodes.len()];
    for (q, t) in targets.iter().enumerate() {
        t.candidates().for_each(|c| candidates[q * nodes.len() + row(c)] = true);
    }
    let weights = Tensor::<B, 2>::from_data(TensorData::new(weights, [nodes.len(), n]), &device);
    let positive: Vec<usize> = targets.iter().map(|t| row(t.positive)).collect();
    let candidates = Tensor::from_data(TensorData::new(candidates, [kept.len(), nodes.len()]), &device);
    Some(node_contrastive(eq.select(0, index(&kept, &device)), weights.matmul(units), index(&positive, &device), candidates, tau))
}

/// Flat retrieval over the SLLM's unit embeddings of held-back documents, scored on their gold spans;
/// `vectors`: the pooled vectors the model reads.
pub fn evaluate<B: Backend>(model: &SproutRagModel<B>, vectors: &Vectors<B>, corpus: &Corpus, docs: &[TrainDoc], scope: HeldOut) -> Metrics {
    let device = model.aggregator.head_weights().device();
    flat_on_held_out(corpus, docs, scope, |doc| {
        let units = model.document(vectors.all_units(doc, &device), false).embeddings;
        let queries = model.queries(vectors.queries(&doc.queries.iter().collect::<Vec<_>>(), &device));
        (units, queries)
    })
}
