//! Training data from a run's corpus for the trainers that learn from the training queries: SproutRAG's
//! joint training and its matched dense control read exactly the same documents, queries and positive
//! units from here, so the control is matched by construction. The queries of a split are grouped by the
//! document of their first gold span; each document comes with its units, the frozen encoder's pooled
//! vectors (or token ids, when the encoder is fine-tuned), the gold merge pairs and the VAE's tokens as
//! the trainer needs them. A unit's token ids are what the encoder reads of it at evaluation (its
//! `units.context` header, then its text, after its document's header where the method writes one: SAC's
//! summary), its frozen vector the evaluation's; the VAE's tokens are its own text. The held-out documents are the validation split's (crate::validation).

use arbor_models::pooling::Role;
use std::collections::BTreeMap;

use arbor_datasets::merge_pairs::{MergePairs, merge_pairs};
use arbor_datasets::{Corpus, DocSpan, Query, Span};
use arbor_models::DefaultBackend;
use arbor_models::bert::load_bert;
use arbor_trainers::config::TrainConfig;
use arbor_trainers::data::{TrainDoc, TrainQuery};
use arbor_trainers::encoder::FineTune;
use burn::backend::Autodiff;

use super::Context;
use super::chunks::prefixed_input;
use crate::cache::key;

/// A row's name says so when its training runs on burn-train's Learner over `schedule.devices`
/// (another training procedure, so another row): "Learner on devices [0, 1]", "Learner, DDP on devices
/// [0, 1]".
pub fn on_devices(training: &TrainConfig) -> Option<String> {
    let how = match training.schedule.data_parallel {
        arbor_trainers::schedule::DataParallel::MultiDevice => "Learner",
        arbor_trainers::schedule::DataParallel::Ddp => "Learner, DDP",
    };
    training.schedule.devices.as_ref().map(|d| format!("{how} on devices {d:?}"))
}

/// A row's name says so when its training reads a sample of its split's questions (`train_queries`):
/// another row than the same training on every question (a learning curve's points, a trained row's
/// matched control, which reads the row's own sample).
pub fn on_a_sample(training: &TrainConfig) -> Option<String> {
    training.train_queries.map(|n| format!("a sample of {n} training questions"))
}

/// A row's name says so when its encoder trains in bf16 autocast (`training.precision: Bf16`): another
/// arithmetic, so another row, which `compare_with` can set against its float32 twin.
pub fn in_bf16(training: &TrainConfig) -> Option<String> {
    (!training.precision.is_f32()).then(|| "bf16 autocast".to_owned())
}

/// A split's queries with gold evidence, by the document of their first gold span.
pub fn queries_by_doc<'c>(corpus: &'c Corpus, split: &str) -> BTreeMap<usize, Vec<&'c Query>> {
    by_doc(corpus, corpus.eval_queries(Some(split)))
}

/// The queries a training reads, by document: its split's, or with `train_queries` a sample of that many
/// drawn by its seed. Samples are nested (with one seed, the 100 queries of a sample are among the 1,000
/// of a larger one), and a sample at least as large as the split is the split itself.
pub fn training_queries<'c>(corpus: &'c Corpus, training: &TrainConfig) -> BTreeMap<usize, Vec<&'c Query>> {
    by_doc(corpus, sample(corpus.eval_queries(Some(&training.split)), training.train_queries, training.schedule.seed))
}

/// At most `n` of `queries`, drawn by `seed`, in their own order: every trainer's sample of its split,
/// so that a trained method and its matched control read the same queries. Nested across `n` for one
/// seed; `None` (or `n` at least their number) keeps them all.
pub fn sample(mut queries: Vec<&Query>, n: Option<usize>, seed: u64) -> Vec<&Query> {
    if let Some(n) = n.filter(|&n| n < queries.len()) {
        let mut order: Vec<(String, &str)> = queries.iter().map(|q| (key(&(seed, &q.id)), q.id.as_str())).collect();
        order.sort();
        let chosen: std::collections::HashSet<&str> = order[..n].iter().map(|(_, id)| *id).collect();
        queries.retain(|q| chosen.contains(q.id.as_str()));
    }
    queries
}

fn by_doc<'c>(corpus: &'c Corpus, queries: Vec<&'c Query>) -> BTreeMap<usize, Vec<&'c Query>> {
    let mut by_doc: BTreeMap<usize, Vec<&Query>> = BTreeMap::new();
    for q in queries {
        by_doc.entry(corpus.gold(q)[0].doc).or_default().push(q);
    }
    by_doc
}

/// A key of what a training reads of `by_doc`: each document's key with its queries' texts and gold spans.
pub fn data_key(ctx: &Context, by_doc: &BTreeMap<usize, Vec<&Query>>) -> String {
    let (corpus, keys) = (ctx.corpus, ctx.keys);
    let gold = |q: &Query| corpus.gold(q).iter().map(|g| (&keys.docs[g.doc], g.span.start, g.span.end)).collect::<Vec<_>>();
    let data: Vec<_> = by_doc.iter().map(|(&d, qs)| (&keys.docs[d], qs.iter().map(|q| (&q.text, gold(q))).collect::<Vec<_>>())).collect();
    key(&data)
}

/// The content key of a training that reads `read` over the documents of `by_doc` and `held`: with
/// `headers`, those documents' headers too, so that another summary trains another model.
pub fn headed_key(
    read: &impl serde::Serialize,
    headers: Option<&[String]>,
    by_doc: &BTreeMap<usize, Vec<&Query>>,
    held: &BTreeMap<usize, Vec<&Query>>,
) -> String {
    match headers {
        None => key(read),
        Some(h) => key(&(read, "document headers", by_doc.keys().chain(held.keys()).map(|&d| &h[d]).collect::<Vec<_>>())),
    }
}

/// The gold snippets of the queries of `by_doc` (a training's own sample, [`training_queries`], or the
/// validation split's), by document: what `MergePairs::Evidence` pairs units by and the head weights'
/// targets are made of. Never a query outside the sample, so a trainer reads the gold its control reads.
pub fn evidence_of(corpus: &Corpus, by_doc: &BTreeMap<usize, Vec<&Query>>) -> BTreeMap<usize, Vec<Span>> {
    let mut out: BTreeMap<usize, Vec<Span>> = BTreeMap::new();
    for q in by_doc.values().flatten() {
        for g in corpus.gold(q) {
            out.entry(g.doc).or_default().push(g.span);
        }
    }
    out
}

/// Writes `merge_pairs.json` into the training folder `dir`: the gold merge pairs G of L_attn (SproutRAG,
/// Eq. 5) that the training read, by training document, each pair as its two units' byte spans
/// (`{"documents": [{"document": id, "pairs": [[[start, end], [start, end]], ..]}, ..]}`, documents
/// without a pair left out), so that a reader sees whose gold taught the attention: with `train_queries`,
/// the sample's only. `docs` gives each document's units and its pairs of unit indices.
pub fn record_merge_pairs<'a>(
    dir: &std::path::Path,
    corpus: &Corpus,
    docs: impl IntoIterator<Item = (&'a [DocSpan], &'a [(usize, usize)])>,
) -> anyhow::Result<()> {
    let span = |u: &DocSpan| [u.span.start, u.span.end];
    let documents: Vec<serde_json::Value> = docs
        .into_iter()
        .filter(|(_, pairs)| !pairs.is_empty())
        .map(|(units, pairs)| {
            let pairs: Vec<[[usize; 2]; 2]> = pairs.iter().map(|&(a, b)| [span(&units[a]), span(&units[b])]).collect();
            serde_json::json!({ "document": corpus.documents[units[0].doc].id, "pairs": pairs })
        })
        .collect();
    std::fs::create_dir_all(dir)?;
    arbor_files::atomic_write(&dir.join("merge_pairs.json"), serde_json::json!({ "documents": documents }).to_string().as_bytes())?;
    Ok(())
}

/// What a trainer needs of each document beyond its units and queries.
#[derive(Debug, Clone, Copy)]
pub struct Needs<'h> {
    /// Token ids of units and queries (the encoder is fine-tuned); else the frozen encoder's pooled vectors.
    pub ids: bool,
    /// The SentenceVAE's word pieces of each unit.
    pub vae_tokens: bool,
    /// The gold merge pairs of L_attn (`None`: none).
    pub merge_pairs: Option<MergePairs>,
    /// A header written before every unit of a document, by document (SAC's document summary:
    /// [`super::summary_chunks`]), read by the encoder in training as at evaluation; `None`: none.
    pub headers: Option<&'h [String]>,
}

/// The cache key of the leaf units' vectors read after their document's header
/// ([`super::chunks::prefixed_input`]): the key `Chunking::Units` with SAC's prefix gives them, so that the
/// untrained and the trained method share them.
pub const HEADED_UNITS: (&super::chunks::Chunking, Option<&str>) = (&super::chunks::Chunking::Units, Some("sac"));

/// The training documents of `by_doc` (queries of `split`), each with its queries' positive units; queries
/// whose gold lies in no unit of their document are left out, and counted on a note line.
pub fn train_docs(ctx: &Context, by_doc: &BTreeMap<usize, Vec<&Query>>, split: &str, needs: Needs) -> anyhow::Result<Vec<TrainDoc>> {
    let (corpus, index, encoder, keys) = (ctx.corpus, ctx.leaves, ctx.encoder, ctx.keys);
    if by_doc.is_empty() {
        return Ok(Vec::new());
    }
    let doc_ids: Vec<usize> = by_doc.keys().copied().collect();
    let batch = ctx.encoder_config.batch_size;
    let unit_vectors = match needs.headers {
        None => ctx.cache.unit_embeddings(encoder, corpus, index, keys, &doc_ids, batch)?,
        Some(headers) => ctx.chunk_vectors_of(&HEADED_UNITS, &index.units, &doc_ids, &|u| prefixed_input(corpus, &index.units, headers, u))?,
    };
    let query_list: Vec<&Query> = by_doc.values().flatten().copied().collect();
    let query_texts: Vec<&str> = query_list.iter().map(|q| q.text.as_str()).collect();
    let query_vectors = ctx.cache.text_embeddings(encoder, Role::Query, batch, &query_texts, &format!("{split} queries"))?;
    let evidence = evidence_of(corpus, by_doc);
    let start_token = encoder.special_ids().0;
    let (mut query_at, mut skipped) = (0, 0);
    let mut docs = Vec::with_capacity(doc_ids.len());
    for (&d, qs) in by_doc {
        let range = index.units.by_doc[d].clone();
        let spans: Vec<DocSpan> = index.units.spans[range.clone()].to_vec();
        // What the encoder reads at evaluation: the document's header (SAC's), the unit's header
        // (`units.context`), then its text.
        let inputs: Vec<std::borrow::Cow<str>> = match needs.headers {
            None => range.clone().map(|u| index.units.input(corpus, u)).collect(),
            Some(headers) => range.clone().map(|u| prefixed_input(corpus, &index.units, headers, u).into()).collect(),
        };
        let inputs: Vec<&str> = inputs.iter().map(|t| t.as_ref()).collect();
        let tokens = match needs.vae_tokens {
            true => encoder.word_pieces(&inputs).into_iter().map(|t| std::iter::once(start_token).chain(t).collect()).collect(),
            false => Vec::new(),
        };
        let mut queries = Vec::with_capacity(qs.len());
        for (q, pooled) in qs.iter().zip(&query_vectors[query_at..query_at + qs.len()]) {
            let gold = corpus.gold(q);
            match positive_unit(&spans, &gold) {
                Some(positive) => {
                    let ids = if needs.ids { encoder.tokenize_queries(&[q.text.as_str()]).remove(0) } else { Vec::new() };
                    queries.push(TrainQuery { text: q.text.clone(), pooled: pooled.clone(), ids, positive, gold })
                }
                None => skipped += 1,
            }
        }
        let pairs = match needs.merge_pairs {
            Some(rule) => merge_pairs(&index.segments[d], rule, evidence.get(&d).map_or(&[], Vec::as_slice)),
            None => Vec::new(),
        };
        docs.push(TrainDoc {
            units: spans,
            pooled: unit_vectors[range].to_vec(),
            ids: if needs.ids { encoder.tokenize(&inputs) } else { Vec::new() },
            pairs,
            tokens,
            queries,
        });
        query_at += qs.len();
    }
    if skipped > 0 {
        eprintln!("note: {skipped} {split} queries have gold text in no unit of their document and are left out");
    }
    Ok(docs)
}

/// The pretrained encoder's weights again, on the autodiff backend, to be fine-tuned.
pub fn pretrained(ctx: &Context) -> anyhow::Result<FineTune<Autodiff<DefaultBackend>>> {
    let dir = arbor_models::hub::resolve(&ctx.encoder_config.model)?;
    let bert = load_bert(&ctx.encoder.config, &dir.path.join("model.safetensors"), &Default::default())?;
    Ok(FineTune { bert, layer_norm_eps: ctx.encoder.config.layer_norm_eps, pooling: ctx.encoder.pipeline.pooling })
}

/// The unit holding most of a query's gold text (ties: the earlier unit).
pub fn positive_unit(units: &[DocSpan], gold: &[DocSpan]) -> Option<usize> {
    let overlap = |u: &DocSpan| -> usize {
        gold.iter().filter(|g| g.doc == u.doc).map(|g| g.span.end.min(u.span.end).saturating_sub(g.span.start.max(u.span.start))).sum()
    };
    let (best, amount) = units.iter().enumerate().map(|(i, u)| (i, overlap(u))).fold((0, 0), |a, b| if b.1 > a.1 { b } else { a });
    (amount > 0).then_some(best)
}
