//! SproutRAG's training glue: the head weights learned on L_attn over the encoder's token attention
//! (arbor_trainers::head_weights), and the joint training of the SLLM on InfoNCE + lambda L_attn
//! (arbor_trainers::sproutrag, Section 4), from the training split of the run's corpus. Each trains in a
//! cache folder `train-<key>` (key: the encoder, the settings, the training documents and queries); a
//! finished training, or under `evaluate --from` an earlier run's model, is read back.

use std::collections::BTreeMap;
use std::path::PathBuf;

use arbor_datasets::merge_pairs::merge_pairs;
use arbor_datasets::{Corpus, DocSpan, Span};
use arbor_models::DefaultBackend;
use arbor_models::aggregator::HeadAggregator;
use arbor_models::bert::{Bert, load_bert};
use arbor_models::sproutrag::SproutRagModel;
use arbor_trainers::config::TrainConfig;
use arbor_trainers::data::{TrainDoc, TrainQuery};
use arbor_trainers::head_weights::AttentionDoc;
use burn::backend::Autodiff;

use super::SproutRagConfig;
use crate::cache::key;
use crate::methods::Context;
use crate::progress::{bar, with_bar};
use crate::trained::Located;

/// The gold snippets of the queries of `split`, by document: what `MergePairs::Evidence` pairs units by.
fn evidence_by_doc(corpus: &Corpus, split: &str) -> BTreeMap<usize, Vec<Span>> {
    let mut out: BTreeMap<usize, Vec<Span>> = BTreeMap::new();
    for q in corpus.eval_queries(Some(split)) {
        for g in corpus.gold(q) {
            out.entry(g.doc).or_default().push(g.span);
        }
    }
    out
}

/// The encoder's token attention at the gold pairs of `units` (of one document), every head.
fn token_attention(ctx: &Context, units: &[usize], window_tokens: usize, pairs: &[(usize, usize)]) -> Vec<f32> {
    let texts: Vec<&str> = units.iter().map(|&u| ctx.leaves.units.text(ctx.corpus, u)).collect();
    ctx.encoder.pair_attention(&texts, window_tokens, ctx.encoder_config.batch_size, pairs)
}

/// Learns the head weights over token attention on the documents of `training.split` (the last
/// `holdout_docs` held back), in the cache folder `train-<key>` (key: the encoder, the settings and the
/// training documents); a finished run, or the earlier run's model under `evaluate --from`, is read back.
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
    let doc_ids: Vec<usize> =
        (0..corpus.documents.len()).filter(|&d| corpus.documents[d].split.as_deref() == Some(training.split.as_str())).collect();
    let evidence = evidence_by_doc(corpus, &training.split);
    let Located { dir: train_dir, may_train } = ctx.training.locate(label, &config.model_settings(), &ctx.keys.encoder, || {
        let data = ctx.keys.of_docs(&doc_ids);
        let gold: Vec<_> = evidence.iter().map(|(&d, spans)| (&ctx.keys.docs[d], spans)).collect();
        ctx.cache.dir("train", &key(&(&ctx.keys.encoder, "head-weights", window_tokens, config.aggregation, training, data, gold)))
    })?;
    if let Some(aggregator) = arbor_trainers::head_weights::finished::<DefaultBackend>(shape, &train_dir)? {
        eprintln!("using the head weights learned in {}", train_dir.display());
        return Ok((aggregator, train_dir));
    }
    anyhow::ensure!(may_train, "{} holds no finished training for method {label:?}", train_dir.display());
    anyhow::ensure!(!doc_ids.is_empty(), "no document in training split {:?}", training.split);
    let pb = bar(doc_ids.len(), "training attention");
    let mut docs: Vec<AttentionDoc> = doc_ids
        .iter()
        .map(|&d| {
            let units: Vec<usize> = ctx.leaves.units.by_doc[d].clone().collect();
            let pairs = merge_pairs(&ctx.leaves.segments[d], training.merge_pairs, evidence.get(&d).map_or(&[], Vec::as_slice));
            // A document without gold pairs teaches nothing: its attention is not computed.
            let pair_attention = if pairs.is_empty() { Vec::new() } else { token_attention(ctx, &units, window_tokens, &pairs) };
            pb.inc(1);
            AttentionDoc { pair_attention, pairs: pairs.len() }
        })
        .collect();
    pb.finish_and_clear();
    let holdout = docs.split_off(docs.len().saturating_sub(training.holdout_docs).max(1));
    let aggregator = with_bar("learning head weights", |progress| {
        arbor_trainers::head_weights::train::<Autodiff<DefaultBackend>>(training, shape, config.aggregation, &docs, &holdout, &train_dir, progress)
    })?;
    Ok((aggregator, train_dir))
}

/// Trains SproutRAG on the queries of `training.split` with the encoder frozen (its vectors computed once),
/// in the cache folder `train-<key>` (checkpoints/, tb/, log.jsonl; key: the encoder, the settings, the
/// training documents and queries): a finished training (or the earlier run's model under `evaluate
/// --from`) is read back, an interrupted one continues from its last checkpoint.
pub(super) fn train_model(
    ctx: &Context,
    label: &str,
    config: &SproutRagConfig,
    training: &TrainConfig,
) -> anyhow::Result<(SproutRagModel<DefaultBackend>, PathBuf)> {
    let (corpus, index, encoder, keys) = (ctx.corpus, ctx.leaves, ctx.encoder, ctx.keys);
    // Training queries by the document of their first gold span.
    let mut by_doc: BTreeMap<usize, Vec<&arbor_datasets::Query>> = BTreeMap::new();
    for q in corpus.eval_queries(Some(&training.split)) {
        by_doc.entry(corpus.gold(q)[0].doc).or_default().push(q);
    }
    let Located { dir: train_dir, may_train } = ctx.training.locate(label, &config.model_settings(), &keys.encoder, || {
        let gold = |q: &arbor_datasets::Query| corpus.gold(q).iter().map(|g| (&keys.docs[g.doc], g.span.start, g.span.end)).collect::<Vec<_>>();
        let data: Vec<_> = by_doc.iter().map(|(&d, qs)| (&keys.docs[d], qs.iter().map(|q| (&q.text, gold(q))).collect::<Vec<_>>())).collect();
        ctx.cache.dir("train", &key(&(&keys.encoder, &config.model, config.aggregation, training, key(&data))))
    })?;
    let dims = (encoder.dim(), encoder.config.vocab_size);
    // The pretrained weights again, on the autodiff backend, when they are fine-tuned (read once).
    let pretrained: Option<Bert<Autodiff<DefaultBackend>>> = match training.freeze_encoder {
        true => None,
        false => {
            let dir = arbor_models::hub::resolve(&ctx.encoder_config.model)?;
            Some(load_bert(&encoder.config, &dir.path.join("model.safetensors"), &Default::default())?)
        }
    };
    if let Some(model) = arbor_trainers::sproutrag::finished(&config.model, config.aggregation, dims, pretrained.clone(), &train_dir)? {
        eprintln!("using the trained model in {}", train_dir.display());
        return Ok((model, train_dir));
    }
    anyhow::ensure!(may_train, "{} holds no finished training for method {label:?}", train_dir.display());
    anyhow::ensure!(!by_doc.is_empty(), "no query with evidence in training split {:?}", training.split);
    let doc_ids: Vec<usize> = by_doc.keys().copied().collect();
    let evidence = evidence_by_doc(corpus, &training.split);
    let batch = ctx.encoder_config.batch_size;
    let unit_vectors = ctx.cache.unit_embeddings(encoder, corpus, index, keys, &doc_ids, batch)?;
    let query_list: Vec<&arbor_datasets::Query> = by_doc.values().flatten().copied().collect();
    let query_texts: Vec<&str> = query_list.iter().map(|q| q.text.as_str()).collect();
    let query_vectors = ctx.cache.text_embeddings(encoder, batch, &query_texts, "training queries")?;
    let start_token = encoder.special_ids().0;
    let mut query_at = 0;
    let mut docs = Vec::with_capacity(doc_ids.len());
    let mut skipped = 0;
    for (&d, qs) in &by_doc {
        let range = index.units.by_doc[d].clone();
        let spans: Vec<DocSpan> = index.units.spans[range.clone()].to_vec();
        let texts: Vec<&str> = range.clone().map(|u| index.units.text(corpus, u)).collect();
        let tokens = match config.model.vae {
            Some(_) => encoder.word_pieces(&texts).into_iter().map(|t| std::iter::once(start_token).chain(t).collect()).collect(),
            None => Vec::new(),
        };
        let mut queries = Vec::with_capacity(qs.len());
        for (q, pooled) in qs.iter().zip(&query_vectors[query_at..query_at + qs.len()]) {
            let gold = corpus.gold(q);
            match positive_unit(&spans, &gold) {
                Some(positive) => {
                    let ids = if training.freeze_encoder { Vec::new() } else { encoder.tokenize(&[q.text.as_str()]).remove(0) };
                    queries.push(TrainQuery { pooled: pooled.clone(), ids, positive, gold })
                }
                None => skipped += 1,
            }
        }
        docs.push(TrainDoc {
            units: spans,
            pooled: unit_vectors[range].to_vec(),
            ids: if training.freeze_encoder { Vec::new() } else { encoder.tokenize(&texts) },
            pairs: merge_pairs(&index.segments[d], training.merge_pairs, evidence.get(&d).map_or(&[], Vec::as_slice)),
            tokens,
            queries,
        });
        query_at += qs.len();
    }
    if skipped > 0 {
        eprintln!("note: {skipped} training queries have gold text in no unit of their document and are left out");
    }
    let holdout = docs.split_off(docs.len().saturating_sub(training.holdout_docs).max(1));
    let model = with_bar("training", |progress| {
        arbor_trainers::sproutrag::train(training, &config.model, config.aggregation, dims, pretrained, corpus, &docs, &holdout, &train_dir, progress)
    })?;
    Ok((model, train_dir))
}

/// The unit holding most of a query's gold text (ties: the earlier unit).
fn positive_unit(units: &[DocSpan], gold: &[DocSpan]) -> Option<usize> {
    let overlap = |u: &DocSpan| -> usize {
        gold.iter().filter(|g| g.doc == u.doc).map(|g| g.span.end.min(u.span.end).saturating_sub(g.span.start.max(u.span.start))).sum()
    };
    let (best, amount) = units.iter().enumerate().map(|(i, u)| (i, overlap(u))).fold((0, 0), |a, b| if b.1 > a.1 { b } else { a });
    (amount > 0).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_datasets::Span;

    #[test]
    fn the_positive_unit_holds_most_gold_text() {
        let ds = |s, e| DocSpan { doc: 0, span: Span::new(s, e) };
        let units = [ds(0, 10), ds(11, 30), ds(31, 40)];
        assert_eq!(positive_unit(&units, &[ds(8, 25)]), Some(1));
        assert_eq!(positive_unit(&units, &[ds(41, 50)]), None);
    }
}
