//! One experiment run, start to finish: a run folder, the corpus, leaf units, the encoder, every method
//! scored on the same queries and gold spans, the report.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use arbor_datasets::Corpus;
use arbor_eval::bm25::Bm25;
use arbor_eval::flat::FlatDense;
use arbor_eval::report::{atomic_write, Report};
use arbor_eval::runner::{evaluate, EvalQuery};
use arbor_eval::tree_retrieval::TreeRetriever;
use arbor_eval::{LeafIndex, QueryInput, Retriever, Scope};
use arbor_models::{default_device, DefaultBackend, SentenceEncoder};

use crate::cache::{corpus_key, Cache};
use crate::experiment::{Experiment, Method, SproutRagConfig};
use crate::progress::bar;
use crate::sproutrag::{build_index, IndexInputs, SproutRagIndex};

/// Runs an experiment and writes its folder under `out`; returns the folder and the report. With
/// `resume`, the newest run folder of the experiment is reused: finished artefacts are read back and
/// training continues from its last checkpoint.
pub fn run(exp: &Experiment, out: &Path, resume: bool) -> anyhow::Result<(PathBuf, Report)> {
    let dir = if resume { latest_run(out, exp)? } else { run_folder(out, &exp.name)? };
    let report = run_in(exp, &dir, &Cache { root: dir.clone() })?;
    Ok((dir, report))
}

/// Runs an experiment into the folder `dir`, keeping (and reusing) embeddings, trained models and trees
/// in `cache` (the run folder itself, or a sweep's shared folder).
pub fn run_in(exp: &Experiment, dir: &Path, cache: &Cache) -> anyhow::Result<Report> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    atomic_write(&dir.join("experiment.ron"), exp.to_ron().as_bytes())?;
    let data_path = exp.data.resolved_path()?;
    let corpus = arbor_datasets::loaders::load(&exp.data.format, &data_path)
        .with_context(|| format!("cannot load the corpus of experiment {:?}", exp.name))?;
    let mut selected = corpus.eval_queries(exp.data.split.as_deref());
    if let Some(n) = exp.data.max_queries {
        selected.truncate(n);
    }
    anyhow::ensure!(!selected.is_empty(), "no query with gold evidence in split {:?} of {}", exp.data.split, data_path.display());
    let encoder = SentenceEncoder::<DefaultBackend>::load(&exp.encoder, &default_device())?;
    let index = LeafIndex::build(&corpus, &exp.units);
    let corpus_key = corpus_key(&exp.data, &exp.units, &exp.encoder);
    let mut queries: Vec<EvalQuery> = selected
        .iter()
        .map(|q| EvalQuery {
            id: q.id.clone(),
            input: QueryInput { text: q.text.clone(), docs: corpus.query_docs(q), embedding: None },
            gold: corpus.gold(q),
        })
        .collect();
    let docs = needed_docs(&corpus, &queries, exp.retrieval.scope);
    let count_tokens = |t: &str| encoder.count_tokens(t);
    let mut report = Report { experiment: exp.name.clone(), setting: setting(exp, &corpus, &index, &docs, queries.len()), methods: vec![] };
    if cache.root != dir {
        report.setting.push_str(&format!(" Embeddings, trained models and trees are shared in {}.", cache.root.display()));
    }
    let score = |retriever: &dyn Retriever, queries: &[EvalQuery], index_ms_per_doc: f64| {
        let pb = bar(queries.len(), retriever.name());
        let mut result = evaluate(retriever, &corpus, queries, exp.retrieval.top_k, &count_tokens, &mut || pb.inc(1));
        pb.finish_and_clear();
        result.index_ms_per_doc = index_ms_per_doc;
        result
    };
    // Unit and query embeddings are computed once, for every dense method that needs them.
    let mut dense: Option<(Vec<Vec<f32>>, f64)> = None;
    let mut indexes: Vec<(SproutRagConfig, SproutRagIndex, f64)> = Vec::new();
    for method in &exp.methods {
        let name = method.label();
        if matches!(method, Method::Flat | Method::SproutRag(_)) && dense.is_none() {
            let start = Instant::now();
            let embeddings = cache.unit_embeddings(&encoder, &corpus, &index, &docs, &corpus_key, exp.encoder.batch_size)?;
            dense = Some((embeddings, start.elapsed().as_secs_f64() * 1e3 / docs.len() as f64));
            let texts: Vec<&str> = queries.iter().map(|q| q.input.text.as_str()).collect();
            let vectors = cache.text_embeddings(&encoder, &exp.encoder, &texts, "queries")?;
            for (q, v) in queries.iter_mut().zip(vectors) {
                q.input.embedding = Some(v);
            }
        }
        let result = match method {
            Method::Flat => {
                let (embeddings, ms) = dense.as_ref().expect("computed above");
                let flat = FlatDense { name, index: &index, embeddings, scope: exp.retrieval.scope };
                score(&flat, &queries, *ms)
            }
            Method::Bm25 => {
                let start = Instant::now();
                let bm25 = Bm25::build(&corpus, &index, exp.retrieval.scope);
                score(&bm25, &queries, start.elapsed().as_secs_f64() * 1e3 / docs.len() as f64)
            }
            Method::SproutRag(config) => {
                let (embeddings, embed_ms) = dense.as_ref().expect("computed above");
                // Methods that differ only in how they search share one index (and one training run).
                let key = config.index_settings();
                let at = match indexes.iter().position(|(k, _, _)| *k == key) {
                    Some(at) => at,
                    None => {
                        let start = Instant::now();
                        let inputs = IndexInputs {
                            encoder: &encoder,
                            encoder_config: &exp.encoder,
                            corpus: &corpus,
                            index: &index,
                            units: &exp.units,
                            corpus_key: &corpus_key,
                            docs: &docs,
                            unit_embeddings: embeddings,
                        };
                        let built = build_index(&inputs, config, &queries, cache)?;
                        let ms = embed_ms + start.elapsed().as_secs_f64() * 1e3 / docs.len() as f64;
                        indexes.push((key, built, ms));
                        indexes.len() - 1
                    }
                };
                let (_, built, ms) = &indexes[at];
                let retriever = TreeRetriever { name, trees: &built.trees, search: config.search, scope: exp.retrieval.scope };
                match &built.query_embeddings {
                    None => score(&retriever, &queries, *ms),
                    Some(embedded) => {
                        let mut own = queries.clone();
                        for (q, e) in own.iter_mut().zip(embedded) {
                            q.input.embedding = Some(e.clone());
                        }
                        score(&retriever, &own, *ms)
                    }
                }
            }
        };
        report.methods.push(result);
    }
    report.write(dir)?;
    Ok(report)
}

/// The documents whose units can be retrieved: those the queries name, or all under corpus scope.
fn needed_docs(corpus: &Corpus, queries: &[EvalQuery], scope: Scope) -> Vec<usize> {
    match scope {
        Scope::Corpus => (0..corpus.documents.len()).collect(),
        Scope::QueryDocuments => {
            let mut docs: Vec<usize> = queries.iter().flat_map(|q| q.input.docs.iter().copied()).collect();
            docs.sort_unstable();
            docs.dedup();
            docs
        }
    }
}

fn setting(exp: &Experiment, corpus: &Corpus, index: &LeafIndex, docs: &[usize], queries: usize) -> String {
    let units: usize = docs.iter().map(|&d| index.doc_units[d].len()).sum();
    format!(
        "Corpus `{}` ({:?}, {} documents), split {}: {queries} queries over {} documents, {units} leaf units of at \
         most {} sentences; scope {:?}; top_k {}.",
        exp.data.path,
        exp.data.format,
        corpus.documents.len(),
        exp.data.split.as_deref().unwrap_or("all"),
        docs.len(),
        exp.units.max_sentences,
        exp.retrieval.scope,
        exp.retrieval.top_k,
    )
}

/// The newest run folder of `exp` under `out`, which must hold the same experiment.
fn latest_run(out: &Path, exp: &Experiment) -> anyhow::Result<PathBuf> {
    let base = out.join(&exp.name);
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&base)
        .with_context(|| format!("--resume: no run of {:?} under {}", exp.name, base.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("experiment.ron").is_file())
        .collect();
    runs.sort();
    let dir = runs.pop().with_context(|| format!("--resume: no run of {:?} under {}", exp.name, base.display()))?;
    let saved = Experiment::load(&dir.join("experiment.ron"))?;
    anyhow::ensure!(saved == *exp, "--resume: {} was run with a different experiment file", dir.display());
    Ok(dir)
}

/// A fresh folder `<out>/<name>/<UTC timestamp>` (a suffix is added if that exists already).
pub fn run_folder(out: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let stamp = utc_stamp(std::time::SystemTime::now());
    let base = out.join(name);
    std::fs::create_dir_all(&base).with_context(|| format!("cannot create {}", base.display()))?;
    for i in 0.. {
        let dir = if i == 0 { base.join(&stamp) } else { base.join(format!("{stamp}-{i}")) };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
        }
    }
    unreachable!("some suffix is free")
}

/// `YYYYMMDD-HHMMSS` in UTC.
fn utc_stamp(t: std::time::SystemTime) -> String {
    let secs = t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}-{:02}{:02}{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps_match_known_dates() {
        let at = |s: u64| utc_stamp(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0), "19700101-000000");
        assert_eq!(at(951_782_400), "20000229-000000");
        assert_eq!(at(1_795_315_414), "20261122-024334");
    }
}
