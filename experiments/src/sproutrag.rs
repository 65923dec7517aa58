//! SproutRAG indexing (Sections 2.1-2.3): unit attention -> HeadAggregator -> M -> greedy tree with
//! progressive embeddings, one tree per document, saved into the run folder. Two attention sources:
//! - `TokenBlocks`: the frozen encoder's token attention pooled into unit blocks; leaves and queries keep
//!   the encoder's embeddings; the head weights stay at their initial values, or, with `training`, are
//!   learned on L_attn over the training split's documents (arbor_trainers::head_weights);
//! - `Sllm`: the trained SLLM (arbor_trainers::sproutrag); leaves are its unit embeddings, queries its
//!   query embeddings.
//!
//! Trees and trained models go into the [`Cache`] under keys of what they were computed from, so a later
//! run with the same inputs (a sweep over search settings, an interrupted run) reuses them. Whether a
//! model may be trained, or must come from an earlier run, is the [`Training`] policy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arbor_datasets::merge_pairs::merge_pairs;
use arbor_datasets::{Corpus, DocSpan};
use arbor_eval::LeafIndex;
use arbor_eval::runner::EvalQuery;
use arbor_eval::tree::{Similarity, Tree};
use arbor_models::aggregator::HeadAggregator;
use arbor_models::bert::{Bert, load_bert};
use arbor_models::sproutrag::SproutRagModel;
use arbor_models::{DefaultBackend, EncoderConfig, SentenceEncoder};
use arbor_trainers::config::TrainConfig;
use arbor_trainers::data::{TrainDoc, TrainQuery};
use arbor_trainers::head_weights::AttentionDoc;
use burn::backend::Autodiff;
use burn::tensor::{Tensor, TensorData};

use crate::cache::{Cache, Keys, key};
use crate::experiment::{AttentionSource, SproutRagConfig};
use crate::progress::bar;
use crate::trained::{Located, TrainedModel, Training};

/// What indexing the evaluated documents needs.
pub struct IndexInputs<'a> {
    pub encoder: &'a SentenceEncoder<DefaultBackend>,
    pub encoder_config: &'a EncoderConfig,
    pub corpus: &'a Corpus,
    pub index: &'a LeafIndex,
    pub keys: &'a Keys,
    /// The documents to index.
    pub docs: &'a [usize],
    /// The encoder's embedding of every unit of `docs`.
    pub unit_embeddings: &'a [Vec<f32>],
    pub cache: &'a Cache,
    pub training: &'a Training,
}

/// The trees, the query embeddings to search them with when they differ from the encoder's, and the
/// trained model they come from.
pub struct SproutRagIndex {
    pub trees: Vec<Option<Tree>>,
    pub query_embeddings: Option<Vec<Vec<f32>>>,
    pub model: Option<TrainedModel>,
}

/// Builds (training first, for `Sllm`) the trees of `inputs.docs`, or reads back those already in the
/// cache (`trees-<key>/<doc key>.tree`). `label` names the method in errors.
pub fn build_index(inputs: &IndexInputs, label: &str, config: &SproutRagConfig, queries: &[EvalQuery]) -> anyhow::Result<SproutRagIndex> {
    let trees_dir = |model: Option<&Path>| {
        let model_key = model.and_then(|m| m.file_name()).map(|n| n.to_string_lossy().into_owned());
        inputs.cache.dir("trees", &key(&(&inputs.keys.encoder, config.index_settings(), model_key)))
    };
    let record =
        |dir: PathBuf| TrainedModel { method: label.to_owned(), settings: config.index_settings(), encoder: inputs.keys.encoder.clone(), dir };
    match (&config.attention, &config.training) {
        (AttentionSource::TokenBlocks { window_tokens }, training) => {
            let e = inputs.encoder;
            let shape = (e.config.num_hidden_layers, e.config.num_attention_heads);
            let (aggregator, model_dir) = match training {
                None => (HeadAggregator::<DefaultBackend>::new(shape.0, shape.1, config.aggregation, e.device()), None),
                Some(training) => {
                    let (aggregator, dir) = train_head_weights(inputs, label, config, *window_tokens, training)?;
                    (aggregator, Some(dir))
                }
            };
            let trees = index_docs(inputs, &trees_dir(model_dir.as_deref())?, "token attention trees", |units| {
                let a = token_attention(inputs, units, *window_tokens);
                let attention = Tensor::from_data(TensorData::new(a.values, [a.layers, a.heads, a.n, a.n]), e.device());
                let leaves: Vec<f32> = units.iter().flat_map(|&u| inputs.unit_embeddings[u].iter().copied()).collect();
                (leaves, e.dim(), to_vec(aggregator.forward(attention)))
            })?;
            Ok(SproutRagIndex { trees, query_embeddings: None, model: model_dir.map(record) })
        }
        (AttentionSource::Sllm, Some(training)) => {
            let (model, model_dir) = train_model(inputs, label, config, training)?;
            // A fine-tuned encoder (inside the model) re-encodes units and queries; a frozen one's vectors are given.
            let own = |texts: Vec<&str>| own_pooled(&model, inputs.encoder, &texts, inputs.encoder_config.batch_size);
            let trees = index_docs(inputs, &trees_dir(Some(&model_dir))?, "SLLM trees", |units| {
                let pooled = match model.encoder {
                    Some(_) => own(units.iter().map(|&u| inputs.index.text(inputs.corpus, u)).collect()),
                    None => matrix(units.iter().map(|&u| &inputs.unit_embeddings[u])),
                };
                let out = model.document(pooled, false);
                let dim = out.embeddings.dims()[1];
                (to_vec(out.embeddings), dim, to_vec(out.m))
            })?;
            let pooled = match model.encoder {
                Some(_) => own(queries.iter().map(|q| q.input.text.as_str()).collect()),
                None => matrix(queries.iter().map(|q| q.input.embedding.as_ref().expect("queries are embedded"))),
            };
            let q = model.queries(pooled);
            let dim = q.dims()[1];
            let flat = to_vec(q);
            Ok(SproutRagIndex { trees, query_embeddings: Some(flat.chunks(dim).map(<[f32]>::to_vec).collect()), model: Some(record(model_dir)) })
        }
        (AttentionSource::Sllm, None) => anyhow::bail!("attention: Sllm needs training (the experiment check rejects this)"),
    }
}

/// One tree per document, read back from `trees_dir` if it is there; else `leaf_inputs` gives the leaf
/// embeddings, their width and M for the document's units, and the tree is built and saved.
fn index_docs(
    inputs: &IndexInputs,
    trees_dir: &Path,
    what: &str,
    mut leaf_inputs: impl FnMut(&[usize]) -> (Vec<f32>, usize, Vec<f32>),
) -> anyhow::Result<Vec<Option<Tree>>> {
    let mut trees = vec![None; inputs.corpus.documents.len()];
    let pb = bar(inputs.docs.len(), what);
    for &d in inputs.docs {
        let units: Vec<usize> = inputs.index.doc_units[d].clone().collect();
        let spans: Vec<DocSpan> = units.iter().map(|&u| inputs.index.units[u]).collect();
        let path = trees_dir.join(format!("{}.tree", inputs.keys.docs[d]));
        let tree = match path.exists() {
            true => {
                let mut tree = arbor_eval::tree_io::load(&path).map_err(anyhow::Error::msg)?;
                // The file is named by the document's content; where the document sits in this corpus is ours.
                let same = tree.leaves.len() == spans.len() && tree.leaves.iter().zip(&spans).all(|(a, b)| a.span == b.span);
                anyhow::ensure!(same, "{} does not hold the units of document {:?}: delete it", path.display(), inputs.corpus.documents[d].id);
                tree.leaves.iter_mut().for_each(|leaf| leaf.doc = d);
                tree
            }
            false => {
                let (leaves, dim, m) = leaf_inputs(&units);
                let tree = Tree::build(spans, &leaves, dim, &Similarity { n: units.len(), values: &m });
                arbor_eval::tree_io::save(&tree, &path)?;
                tree
            }
        };
        trees[d] = Some(tree);
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(trees)
}

/// The encoder's token attention between `units` (of one document), pooled into unit blocks.
fn token_attention(inputs: &IndexInputs, units: &[usize], window_tokens: usize) -> arbor_models::unit_attention::UnitAttention {
    let texts: Vec<&str> = units.iter().map(|&u| inputs.index.text(inputs.corpus, u)).collect();
    inputs.encoder.unit_attention(&texts, window_tokens, inputs.encoder_config.batch_size)
}

/// Learns the head weights over token attention on the documents of `training.split` (the last
/// `holdout_docs` held back), in the cache folder `train-<key>` (key: the encoder, the settings and the
/// training documents); a finished run, or the earlier run's model under `evaluate --from`, is read back.
fn train_head_weights(
    inputs: &IndexInputs,
    label: &str,
    config: &SproutRagConfig,
    window_tokens: usize,
    training: &TrainConfig,
) -> anyhow::Result<(HeadAggregator<DefaultBackend>, PathBuf)> {
    let e = inputs.encoder;
    let shape = (e.config.num_hidden_layers, e.config.num_attention_heads);
    let corpus = inputs.corpus;
    let doc_ids: Vec<usize> =
        (0..corpus.documents.len()).filter(|&d| corpus.documents[d].split.as_deref() == Some(training.split.as_str())).collect();
    let Located { dir: train_dir, may_train } = inputs.training.locate(label, config, &inputs.keys.encoder, || {
        let data = inputs.keys.of_docs(&doc_ids);
        inputs.cache.dir("train", &key(&(&inputs.keys.encoder, "head-weights", window_tokens, config.aggregation, training, data)))
    })?;
    if let Some(aggregator) = arbor_trainers::head_weights::finished(shape, &train_dir)? {
        eprintln!("using the head weights learned in {}", train_dir.display());
        return Ok((aggregator, train_dir));
    }
    anyhow::ensure!(may_train, "{} holds no finished training for method {label:?}", train_dir.display());
    anyhow::ensure!(!doc_ids.is_empty(), "no document in training split {:?}", training.split);
    let pb = bar(doc_ids.len(), "training attention");
    let mut docs: Vec<AttentionDoc> = doc_ids
        .iter()
        .map(|&d| {
            let units: Vec<usize> = inputs.index.doc_units[d].clone().collect();
            let a = token_attention(inputs, &units, window_tokens);
            pb.inc(1);
            AttentionDoc { attention: a.values, n: a.n, pairs: merge_pairs(&inputs.index.segments[d], training.merge_pairs) }
        })
        .collect();
    pb.finish_and_clear();
    let holdout = docs.split_off(docs.len().saturating_sub(training.holdout_docs).max(1));
    let pb = bar(0, "learning head weights");
    let aggregator = arbor_trainers::head_weights::train(training, shape, config.aggregation, &docs, &holdout, &train_dir, &mut |done, total| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
    })?;
    pb.finish_and_clear();
    Ok((aggregator, train_dir))
}

/// Trains SproutRAG on the queries of `training.split` with the encoder frozen (its vectors computed once),
/// in the cache folder `train-<key>` (checkpoints/, tb/, log.jsonl; key: the encoder, the settings, the
/// training documents and queries): a finished training (or the earlier run's model under `evaluate
/// --from`) is read back, an interrupted one continues from its last checkpoint.
fn train_model(
    inputs: &IndexInputs,
    label: &str,
    config: &SproutRagConfig,
    training: &TrainConfig,
) -> anyhow::Result<(SproutRagModel<DefaultBackend>, PathBuf)> {
    let (corpus, index, encoder, keys) = (inputs.corpus, inputs.index, inputs.encoder, inputs.keys);
    // Training queries by the document of their first gold span.
    let mut by_doc: BTreeMap<usize, Vec<&arbor_datasets::Query>> = BTreeMap::new();
    for q in corpus.eval_queries(Some(&training.split)) {
        by_doc.entry(corpus.gold(q)[0].doc).or_default().push(q);
    }
    let Located { dir: train_dir, may_train } = inputs.training.locate(label, config, &keys.encoder, || {
        let gold = |q: &arbor_datasets::Query| corpus.gold(q).iter().map(|g| (&keys.docs[g.doc], g.span.start, g.span.end)).collect::<Vec<_>>();
        let data: Vec<_> = by_doc.iter().map(|(&d, qs)| (&keys.docs[d], qs.iter().map(|q| (&q.text, gold(q))).collect::<Vec<_>>())).collect();
        inputs.cache.dir("train", &key(&(&keys.encoder, &config.model, config.aggregation, training, key(&data))))
    })?;
    let dims = (encoder.dim(), encoder.config.vocab_size);
    // The pretrained weights again, on the autodiff backend, when they are fine-tuned (read once).
    let pretrained: Option<Bert<Autodiff<DefaultBackend>>> = match training.freeze_encoder {
        true => None,
        false => {
            let dir = arbor_models::hub::resolve(&inputs.encoder_config.model)?;
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
    let batch = inputs.encoder_config.batch_size;
    let unit_vectors = inputs.cache.unit_embeddings(encoder, corpus, index, keys, &doc_ids, batch)?;
    let query_list: Vec<&arbor_datasets::Query> = by_doc.values().flatten().copied().collect();
    let query_texts: Vec<&str> = query_list.iter().map(|q| q.text.as_str()).collect();
    let query_vectors = inputs.cache.text_embeddings(encoder, batch, &query_texts, "training queries")?;
    let start_token = encoder.special_ids().0;
    let mut query_at = 0;
    let mut docs = Vec::with_capacity(doc_ids.len());
    let mut skipped = 0;
    for (&d, qs) in &by_doc {
        let range = index.doc_units[d].clone();
        let spans: Vec<DocSpan> = index.units[range.clone()].to_vec();
        let texts: Vec<&str> = range.clone().map(|u| index.text(corpus, u)).collect();
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
            pairs: merge_pairs(&index.segments[d], training.merge_pairs),
            tokens,
            queries,
        });
        query_at += qs.len();
    }
    if skipped > 0 {
        eprintln!("note: {skipped} training queries have gold text in no unit of their document and are left out");
    }
    let holdout = docs.split_off(docs.len().saturating_sub(training.holdout_docs).max(1));
    let pb = bar(0, "training");
    let model = arbor_trainers::sproutrag::train(
        training,
        &config.model,
        config.aggregation,
        dims,
        pretrained,
        corpus,
        &docs,
        &holdout,
        &train_dir,
        true,
        &mut |done, total| {
            pb.set_length(total as u64);
            pb.set_position(done as u64);
        },
    )?;
    pb.finish_and_clear();
    Ok((model, train_dir))
}

/// Pooled vectors of `texts` through the model's fine-tuned encoder, in batches.
fn own_pooled(
    model: &SproutRagModel<DefaultBackend>,
    encoder: &SentenceEncoder<DefaultBackend>,
    texts: &[&str],
    batch: usize,
) -> Tensor<DefaultBackend, 2> {
    let ids = encoder.tokenize(texts);
    let rows: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let parts: Vec<Tensor<DefaultBackend, 2>> = rows.chunks(batch.max(1)).map(|b| model.pool(b, encoder.device())).collect();
    Tensor::cat(parts, 0)
}

/// The unit holding most of a query's gold text (ties: the earlier unit).
fn positive_unit(units: &[DocSpan], gold: &[DocSpan]) -> Option<usize> {
    let overlap = |u: &DocSpan| -> usize {
        gold.iter().filter(|g| g.doc == u.doc).map(|g| g.span.end.min(u.span.end).saturating_sub(g.span.start.max(u.span.start))).sum()
    };
    let (best, amount) = units.iter().enumerate().map(|(i, u)| (i, overlap(u))).fold((0, 0), |a, b| if b.1 > a.1 { b } else { a });
    (amount > 0).then_some(best)
}

fn matrix<'a>(rows: impl Iterator<Item = &'a Vec<f32>>) -> Tensor<DefaultBackend, 2> {
    let rows: Vec<&Vec<f32>> = rows.collect();
    let dim = rows.first().map_or(0, |r| r.len());
    let flat: Vec<f32> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), dim]), &Default::default())
}

fn to_vec<const D: usize>(t: Tensor<DefaultBackend, D>) -> Vec<f32> {
    t.into_data().to_vec::<f32>().expect("f32")
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
