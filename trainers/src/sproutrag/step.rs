//! SproutRAG's joint step and its held-out reading, which the skeleton's task ([`super`]) and the
//! data-parallel path ([`crate::parallel::sproutrag`]) both call: the loss terms of a step over one or
//! more documents' batches (L_ret, lambda * L_attn, mu * L_node over the tree M builds now, the
//! SentenceVAE's CE and beta * KL, the document term of issue 62),
//! and flat retrieval over the SLLM's unit embeddings of held-back documents, scored on their gold spans.

use arbor_datasets::Corpus;
use arbor_datasets::span::gold_units;
use arbor_eval::scoring::metrics::Metrics;
use arbor_eval::structures::node_targets::{NodeTargets, leaf_weights, node_targets, parents};
use arbor_eval::structures::tree::{Similarity, Tree};
use arbor_losses::{attention_structure, info_nce_over, node_contrastive, vae_loss};
use arbor_models::sentence_vae::{SentenceVae, VaeOutput};
use arbor_models::sproutrag::{DocumentOutput, SproutRagModel};
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Tensor, TensorData};

use crate::config::HeldOut;
use crate::config::TrainConfig;
use crate::data::{Part, StepRows, TrainDoc, TrainQuery};
use crate::encoder::{StepEncoder, Vectors, index};
use crate::negatives::StepMined;
use crate::objective::{flat_on_held_out, one_or_cat, retrieval_loss, step_false_negatives, validation_figures};
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

/// The loss terms of one step, by name, over its `parts` (one document each, issue 62: `docs_per_step`):
/// InfoNCE over the units of every part (each document run through the SLLM on its own, its units then
/// the others' negatives), lambda * L_attn and mu * L_node per document and the VAE's CE and beta * KL
/// per document, each the mean over the step's documents, and with `doc_loss` the document term. One
/// part is the paper's step, exactly (every mean is of one term, taken as it is).
pub(crate) fn losses<B: Backend>(
    model: &SproutRagModel<B>,
    vectors: &Vectors<B>,
    config: &TrainConfig,
    parts: &[Part<'_>],
    mined: Option<StepMined<'_>>,
    max_tokens: usize,
) -> Vec<(&'static str, Tensor<B, 1>)> {
    let device = &model.aggregator.head_weights().device();
    let rows = StepRows::of(parts);
    let outs: Vec<DocumentOutput<B>> = parts
        .iter()
        .map(|part| {
            let batch: Vec<&TrainQuery> = part.queries.iter().map(|&q| &part.doc.queries[q]).collect();
            // A fine-tuned encoder runs over the window only; the SLLM still reads the whole document.
            let kept = window(part.doc, &batch, config.step_tokens.filter(|_| vectors.fine_tuned()));
            model.document(vectors.units_within(part.doc, &kept, device), model.vae.is_some())
        })
        .collect();
    let eq = model.queries(vectors.queries(&rows.queries, device));
    let false_negatives = step_false_negatives(&rows, &mined.map_or_else(Vec::new, |m| m.spans()), config);
    let mined = mined.map(|m| mined_embeddings(model, vectors, m, device));
    let units = one_or_cat(outs.iter().map(|o| o.embeddings.clone()).collect());
    let mut terms = vec![("loss/ret", retrieval_loss(units, eq.clone(), &rows.positives, mined, &false_negatives, config))];
    let mut per_doc = PerDocument::default();
    let mut first = 0;
    for (part, out) in parts.iter().zip(&outs) {
        let (doc, queries) = (part.doc, first..first + part.queries.len());
        first = queries.end;
        if !doc.pairs.is_empty() {
            per_doc.attn.push(attention_structure(out.m.clone(), &doc.pairs, config.eps));
        }
        if config.node_loss > 0.0 {
            let eq = if parts.len() == 1 { eq.clone() } else { eq.clone().slice([queries.clone()]) };
            per_doc.node.extend(node_loss(out.embeddings.clone(), out.m.clone(), doc, &rows.queries[queries.clone()], eq, config.tau));
        }
        if let (Some(vae), Some(latents)) = (&model.vae, &out.vae) {
            let positives: Vec<usize> = part.queries.iter().map(|&q| doc.queries[q].positive).collect();
            let (ce, kl) = reconstruction(vae, latents, doc, &positives, max_tokens, device);
            per_doc.ce.push(ce);
            per_doc.kl.push(kl);
        }
    }
    if !per_doc.attn.is_empty() {
        terms.push(("loss/attn_weighted", mean(per_doc.attn) * config.lambda));
    }
    if !per_doc.node.is_empty() {
        terms.push(("loss/node_weighted", mean(per_doc.node) * config.node_loss));
    }
    if config.doc_loss > 0.0 && parts.len() > 1 {
        terms.push(("loss/doc_weighted", document_loss(&outs, eq, parts, config.tau) * config.doc_loss));
    }
    if !per_doc.ce.is_empty() {
        terms.push(("loss/vae_ce", mean(per_doc.ce)));
        terms.push(("loss/vae_kl_weighted", mean(per_doc.kl) * config.beta));
    }
    terms
}

/// The per-document terms of a step, gathered before each is averaged over the step's documents.
struct PerDocument<B: Backend> {
    attn: Vec<Tensor<B, 1>>,
    node: Vec<Tensor<B, 1>>,
    ce: Vec<Tensor<B, 1>>,
    kl: Vec<Tensor<B, 1>>,
}

impl<B: Backend> Default for PerDocument<B> {
    fn default() -> Self {
        PerDocument { attn: Vec::new(), node: Vec::new(), ce: Vec::new(), kl: Vec::new() }
    }
}

/// The mean of a step's per-document terms; one term is returned as it is (the one-document step).
fn mean<B: Backend>(mut terms: Vec<Tensor<B, 1>>) -> Tensor<B, 1> {
    match terms.len() {
        1 => terms.pop().expect("one"),
        n => Tensor::cat(terms, 0).sum() / n as f32,
    }
}

/// The document term (issue 62, `doc_loss`): InfoNCE of each query of the step against the step's
/// documents, each the mean of its SLLM unit embeddings (the vector the document level ranks documents
/// by, `DocumentVector::LeafMean`), its own document the positive. A step's other document that holds
/// some of the query's gold is a false negative and is left out of its denominator (issue 86: a question
/// whose gold spans two of the step's documents was pushed away from one of them).
pub(crate) fn document_loss<B: Backend>(outs: &[DocumentOutput<B>], eq: Tensor<B, 2>, parts: &[Part<'_>], tau: f64) -> Tensor<B, 1> {
    let docs = Tensor::cat(outs.iter().map(|o| o.embeddings.clone().mean_dim(0)).collect(), 0);
    let (targets, excluded) = document_targets(parts);
    info_nce_over(eq, docs, &targets, &excluded, tau)
}

/// Each query's own document among the step's, in step order, and the (query, document) pairs of other
/// documents that hold some of its gold.
pub(crate) fn document_targets(parts: &[Part<'_>]) -> (Vec<usize>, Vec<(usize, usize)>) {
    let ids: Vec<Option<usize>> = parts.iter().map(|p| p.doc.units.first().map(|u| u.doc)).collect();
    let (mut targets, mut excluded) = (Vec::new(), Vec::new());
    for (d, p) in parts.iter().enumerate() {
        for &q in p.queries {
            let gold = &p.doc.queries[q].gold;
            for (e, id) in ids.iter().enumerate() {
                if e != d && id.is_some_and(|id| gold.iter().any(|g| g.doc == id)) {
                    excluded.push((targets.len(), e));
                }
            }
            targets.push(d);
        }
    }
    (targets, excluded)
}

/// The SentenceVAE's CE and KL on reconstructing a document's `positives` (teacher forcing: inputs are
/// the tokens shifted right), at most `max_tokens` each.
fn reconstruction<B: Backend>(
    vae: &SentenceVae<B>,
    latents: &VaeOutput<B>,
    doc: &TrainDoc,
    positives: &[usize],
    max_tokens: usize,
    device: &B::Device,
) -> (Tensor<B, 1>, Tensor<B, 1>) {
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
    let pick = index(positives, device);
    let logits = vae.decode(latents.z.clone().select(0, pick.clone()), Tensor::from_data(TensorData::new(inputs, [b, t]), device), mask.clone());
    let targets = Tensor::from_data(TensorData::new(targets, [b, t]), device);
    vae_loss(logits, targets, mask, latents.mu.clone().select(0, pick.clone()), latents.log_var.clone().select(0, pick))
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
