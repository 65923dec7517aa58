//! One experiment run, start to finish: a run folder, the corpus, leaf units cut to what the encoder
//! reads, the encoder, every method scored on the same queries, gold spans, k and token budget, the report.
//! `train` may train the methods' models; `evaluate` never does ([`Training`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use arbor_datasets::{Corpus, Document, Evidence, Query};
use arbor_eval::scoring::parents::Parents;
use arbor_eval::scoring::report::{Inputs, Report, Role, UnitStats};
use arbor_eval::scoring::retrievals;
use arbor_eval::scoring::runner::{EvalQuery, EvalSettings, evaluate};
use arbor_eval::{LeafIndex, QueryInput, Scope};
use arbor_files::atomic_write;
use arbor_models::{DefaultBackend, SentenceEncoder, default_device};

use crate::cache::{Cache, Keys, corpus_digest};
use crate::experiment::{Experiment, HandOn, Method};
use crate::leaves::{leaf_index, unit_rule};
use crate::methods::controls::matched;
use crate::methods::{Built, Context, QueryVectors, Trains};
use crate::progress::bar;
use crate::trained::{EarlierRun, TrainedModel, Training, record};
use crate::validation::VALIDATION;

/// Trains (where a method trains) and evaluates an experiment, writing its folder under `out`; returns the
/// folder and the report. With `resume`, the newest run folder of the experiment is reused: finished
/// artefacts are read back and training continues from its last checkpoint. Artefacts are kept in the run
/// folder, or in `cache` when given (a folder shared between runs: every artefact is keyed by its inputs).
pub fn run(exp: &Experiment, out: &Path, resume: bool, cache: Option<&Path>) -> anyhow::Result<(PathBuf, Report)> {
    trainable_here(exp)?;
    let dir = if resume { latest_run(out, exp)? } else { run_folder(out, &exp.name)? };
    let report = run_in(exp, &dir, &cache_in(&dir, cache), &Training::Allowed)?;
    Ok((dir, report))
}

/// Refuses, before anything is loaded or trained, a row whose training this build cannot run: bf16
/// autocast (`training.precision: Bf16`) on a build that computes in float32 only (the default CPU build),
/// or burn-train's DDP (`data_parallel: Ddp` in any of the row's schedules) on a build without `--features
/// ddp`; either would otherwise fail at that row's first step, after every row before it had trained. A
/// model trained so elsewhere is still scored here (`evaluate --from`).
pub fn trainable_here(exp: &Experiment) -> anyhow::Result<()> {
    let device = Default::default();
    let refuse = |method: &Method, why: String, build: &str| {
        anyhow::anyhow!(
            "{}: {why}. Nothing was trained: train this file on {build}, or score its models here with `evaluate --from` that run",
            method.label()
        )
    };
    for (method, _) in rows(exp) {
        if let Trains::Queries(t) = method.spec().trains()
            && let Err(e) = t.precision.ensure_supported::<burn::backend::Autodiff<DefaultBackend>>(&device)
        {
            return Err(refuse(&method, format!("training.{e}"), "a build that computes in bf16"));
        }
        if asks_for_ddp(&method)
            && let Err(e) = arbor_trainers::strategy::ensure_supported(arbor_trainers::schedule::DataParallel::Ddp)
        {
            return Err(refuse(&method, e.to_string(), "a CUDA build with `--features ddp`"));
        }
    }
    Ok(())
}

/// Whether any schedule in a row's settings asks for DDP: its training's, or a SmartChunk compressor's or
/// planner's, at any depth of the settings (a schedule writes `data_parallel` only when it is `Ddp`).
fn asks_for_ddp(method: &Method) -> bool {
    fn any(value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::Object(fields) => fields.get("data_parallel").is_some_and(|p| p == "Ddp") || fields.values().any(any),
            serde_json::Value::Array(items) => items.iter().any(any),
            _ => false,
        }
    }
    serde_json::to_value(method).is_ok_and(|settings| any(&settings))
}

/// Evaluates an experiment without training: its trained methods take their models from the run folder
/// `from` (an error names the method when that folder has none for it). `cache` as for [`run`].
pub fn evaluate_only(exp: &Experiment, out: &Path, from: Option<&Path>, cache: Option<&Path>) -> anyhow::Result<(PathBuf, Report)> {
    let earlier = from.map(EarlierRun::load).transpose()?;
    let dir = run_folder(out, &exp.name)?;
    let report = run_in(exp, &dir, &cache_in(&dir, cache), &Training::Never(earlier))?;
    Ok((dir, report))
}

fn cache_in(dir: &Path, shared: Option<&Path>) -> Cache {
    Cache::new(shared.unwrap_or(dir))
}

/// What a run of `exp` computes from today: the digests of its corpus and of its encoder (without loading
/// the encoder's weights). A finished run whose report names other inputs is stale.
pub fn current_inputs(exp: &Experiment) -> anyhow::Result<Inputs> {
    let (corpus, _) = load_corpus(exp)?;
    Ok(Inputs { corpus: corpus_digest(&corpus), encoder: arbor_models::encoder::fingerprint(&exp.encoder)? })
}

/// The experiment's corpus, with the training split of every `data.train_with` corpus ahead of its own
/// documents; and the index of its own first document (documents before it are only trained on).
pub fn load_corpus(exp: &Experiment) -> anyhow::Result<(Corpus, usize)> {
    let data_path = exp.data.resolved_path()?;
    let own = load_one(&exp.data.format, &data_path, exp.data.collections.as_deref())
        .with_context(|| format!("cannot load the corpus of experiment {:?}", exp.name))?;
    // The validation split is carved from the experiment's own corpus only: lent corpora train whole.
    let own = match &exp.data.validation {
        Some(v) => v.carve(own).0,
        None => own,
    };
    if exp.data.train_with.is_empty() {
        return Ok((own, 0));
    }
    let mut lent = Vec::new();
    for source in &exp.data.train_with {
        let path = source.resolved_path()?;
        let corpus = load_one(&source.format, &path, source.collections.as_deref())
            .with_context(|| format!("cannot load {} (data.train_with)", path.display()))?;
        lent.push((source.name(), corpus));
    }
    with_training_corpora(own, lent, &data_path)
}

fn load_one(format: &arbor_datasets::loaders::Format, path: &Path, collections: Option<&[String]>) -> anyhow::Result<Corpus> {
    let (corpus, report) = arbor_datasets::loaders::load_reporting(format, path)?;
    for line in report {
        eprintln!("{}: {line}", path.display());
    }
    match collections {
        None => Ok(corpus),
        Some(collections) => keep_collections(corpus, collections, path),
    }
}

/// The documents of `collections` (ids `<collection>/...`) and the queries asked only against them.
pub fn keep_collections(corpus: Corpus, collections: &[String], source: &Path) -> anyhow::Result<Corpus> {
    let keep = |id: &str| id.split_once('/').is_some_and(|(c, _)| collections.iter().any(|k| k == c));
    let documents: Vec<_> = corpus.documents.into_iter().filter(|d| keep(&d.id)).collect();
    anyhow::ensure!(
        !documents.is_empty(),
        "data.collections {collections:?} keeps no document of {} (a document id names its collection before a '/')",
        source.display()
    );
    let queries = corpus.queries.into_iter().filter(|q| q.doc_ids.iter().all(|d| keep(d))).collect();
    Ok(Corpus::new(documents, queries, source)?)
}

/// `own` with the `train` documents of each lent corpus (named) in front of its own, ids `<name>:<id>`,
/// and the lent corpora's `train` queries asked only against those; returns where `own` starts.
pub fn with_training_corpora(own: Corpus, lent: Vec<(String, Corpus)>, source: &Path) -> anyhow::Result<(Corpus, usize)> {
    let train = Some("train");
    let (mut documents, mut queries) = (Vec::new(), Vec::new());
    for (name, corpus) in lent {
        let prefix = |id: &str| format!("{name}:{id}");
        let kept: HashSet<String> = corpus.documents.iter().filter(|d| d.split.as_deref() == train).map(|d| d.id.clone()).collect();
        anyhow::ensure!(!kept.is_empty(), "data.train_with: {name} has no document of split \"train\"");
        documents.extend(corpus.documents.into_iter().filter(|d| kept.contains(&d.id)).map(|d| Document { id: prefix(&d.id), ..d }));
        let lends = |q: &Query| q.split.as_deref().is_none_or(|s| Some(s) == train) && q.doc_ids.iter().all(|d| kept.contains(d));
        queries.extend(corpus.queries.into_iter().filter(lends).map(|q| Query {
            id: prefix(&q.id),
            doc_ids: q.doc_ids.iter().map(|d| prefix(d)).collect(),
            evidence: q.evidence.into_iter().map(|e| Evidence { doc_id: prefix(&e.doc_id), ..e }).collect(),
            split: train.map(String::from),
            ..q
        }));
    }
    let own_from = documents.len();
    documents.extend(own.documents);
    queries.extend(own.queries);
    Ok((Corpus::new(documents, queries, source)?, own_from))
}

/// Runs an experiment into the folder `dir`, keeping (and reusing) embeddings, trained models and trees
/// in `cache` (the run folder itself, or a sweep's shared folder); `training` says whether models may be
/// trained. Writes report.json, report.md, models.json (the trained models used) and retrievals.jsonl (what
/// each method handed on per query) into `dir`.
pub fn run_in(exp: &Experiment, dir: &Path, cache: &Cache, training: &Training) -> anyhow::Result<Report> {
    let rows = rows(exp);
    // `evaluate` without --from refuses a trained row before anything is loaded or embedded.
    if let Training::Never(None) = training
        && let Some((method, _)) = rows.iter().find(|(m, _)| m.spec().trains().needs_model())
    {
        return Err(Training::never_trained(&method.label()));
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    atomic_write(&dir.join("experiment.ron"), exp.to_ron().as_bytes())?;
    let (corpus, own_from) = load_corpus(exp)?;
    // Only the experiment's own corpus is evaluated (`data.train_with` lends training data alone).
    let mut selected: Vec<&Query> =
        corpus.eval_queries(exp.data.split.as_deref()).into_iter().filter(|q| corpus.query_docs(q).iter().all(|&d| d >= own_from)).collect();
    if let Some(n) = exp.data.max_queries {
        selected.truncate(n);
    }
    anyhow::ensure!(!selected.is_empty(), "no query with gold evidence in split {:?} of {}", exp.data.split, exp.data.path);
    let Prepared { encoder, leaves, keys, max_tokens } = prepare(exp, &corpus)?;
    let docs = ranked_docs(&corpus, own_from, &selected, exp.data.split.as_deref(), exp.retrieval.scope);
    let methods: Vec<Method> = rows.iter().map(|(m, _)| m.clone()).collect();
    crate::leakage::check(exp, &methods, &corpus, &docs, matches!(training, Training::Allowed))?;
    let queries: Vec<EvalQuery> = selected
        .iter()
        .map(|q| {
            // Under corpus scope every query ranks the whole pool of evaluated documents.
            let scope = match exp.retrieval.scope {
                Scope::QueryDocuments => corpus.query_docs(q),
                Scope::Corpus => docs.clone(),
            };
            EvalQuery { id: q.id.clone(), input: QueryInput { text: q.text.clone(), docs: scope, embedding: None }, gold: corpus.gold(q) }
        })
        .collect();
    let mut report = Report {
        experiment: exp.name.clone(),
        setting: setting(exp, &corpus, own_from, &docs, queries.len()),
        inputs: Inputs { corpus: corpus_digest(&corpus), encoder: encoder.fingerprint.clone() },
        units: unit_stats(&leaves, &docs, &queries, &encoder, max_tokens),
        methods: vec![],
        selection: exp.selection.describe(exp.data.split.as_deref()),
        queries: queries.iter().map(|q| q.id.clone()).collect(),
        comparisons: vec![],
        comparators: vec![],
        provenance: Some(crate::provenance::current()),
    };
    if cache.root != dir {
        report.setting.push_str(&format!(" Embeddings, trained models and trees are shared in {}.", cache.root.display()));
    }
    let settings = EvalSettings { top_k: exp.retrieval.top_k, max_tokens: exp.retrieval.max_tokens };
    let parents: Option<Parents> = match exp.retrieval.hand_on {
        HandOn::Items => None,
        HandOn::Tables => Some(Parents::with_heads(&leaves.segments, |s| s.tables.clone())),
        HandOn::WholeSentences => Some(Parents::with_heads(&leaves.segments, |s| s.cut.clone())),
        HandOn::Paragraphs => Some(Parents::plain(leaves.segments.iter().map(|s| s.paragraphs.iter().map(|p| p.span).collect()).collect())),
    };
    let ctx = Context::new(&corpus, &leaves, &keys, &encoder, &exp.encoder, cache, training, &docs, &queries, exp.retrieval.scope);
    // Methods that share an index (SproutRAG search variants) report the time it took to build once.
    let mut index_ms: HashMap<String, Option<f64>> = HashMap::new();
    let mut models: Vec<TrainedModel> = Vec::new();
    let mut retrieved = Vec::new();
    let (mut unchecked, mut text_only) = (Vec::new(), Vec::new());
    for (method, role) in rows {
        let spec = method.spec();
        let (built, ms) = ctx.build(spec)?;
        let ms = match spec.index_key() {
            Some(key) => *index_ms.entry(key).or_insert(ms),
            None => ms,
        };
        let Built { retriever, queries: query_vectors, models: mut used, details } = built;
        // What each model trained on: recorded where it trains, checked against the scored documents where
        // it comes from an earlier run.
        match training {
            Training::Allowed => {
                let read = crate::leakage::trained_on(&corpus, &spec.reads_splits())?;
                for m in &mut used {
                    (m.trained_on, m.trained_on_questions, m.trained_on_sketches) =
                        (read.documents.clone(), read.questions.clone(), read.sketches.clone());
                }
            }
            Training::Never(Some(earlier)) => {
                let scored: Vec<&str> = queries.iter().map(|q| q.input.text.as_str()).collect();
                let not = crate::leakage::check_models(&used, earlier, &corpus, &docs, &scored, &exp.contamination)?;
                unchecked.extend(not.models);
                text_only.extend(not.near_duplicates);
                for m in &mut used {
                    if let Some(e) = earlier.models.iter().find(|e| e.dir == m.dir) {
                        (m.trained_on, m.trained_on_questions, m.trained_on_sketches) =
                            (e.trained_on.clone(), e.trained_on_questions.clone(), e.trained_on_sketches.clone());
                    }
                }
            }
            Training::Never(None) => {}
        }
        // A model several rows use (one compressor under several plans, one SLLM read two ways) is listed once.
        for m in used {
            if !models.iter().any(|known| known.dir == m.dir) {
                models.push(m);
            }
        }
        let mut queries = queries.clone();
        let vectors = match query_vectors {
            QueryVectors::None => None,
            QueryVectors::Encoder => Some(ctx.query_vectors()?.to_vec()),
            QueryVectors::Own(vectors) => Some(vectors),
        };
        for (q, v) in queries.iter_mut().zip(vectors.into_iter().flatten()) {
            q.input.embedding = Some(v);
        }
        let retriever = retriever.as_ref();
        let pb = bar(queries.len(), retriever.name());
        let (mut result, handed) = evaluate(retriever, &corpus, &leaves.tokens, &queries, &settings, parents.as_ref(), &mut || pb.inc(1));
        retrieved.extend(handed);
        pb.finish_and_clear();
        result.index_ms_per_doc = ms;
        // A tree method's line says its trees' shape (issue 45), after what the method said it built.
        result.tree_shape = retriever.tree_shape();
        let shape = result.tree_shape.map(|s| s.line());
        result.details = [details, shape].into_iter().flatten().collect::<Vec<_>>().join("; ");
        result.role = role;
        report.methods.push(result);
    }
    if let Training::Never(Some(earlier)) = training {
        text_only.retain(|m| !unchecked.contains(m));
        text_only.dedup();
        let (near, not_near) = match text_only.is_empty() {
            true => (format!(" or as a near-duplicate (containment {})", exp.contamination.near_duplicate), String::new()),
            false => (String::new(), format!("; near-duplicates not checked for {} (recorded before arbor kept sketches)", text_only.join(", "))),
        };
        report.setting.push_str(&match unchecked.is_empty() {
            true => format!(
                " Trained models from {}: none of them trained on a document or question scored here, by its words{near} (checked){not_near}.",
                earlier.dir.display()
            ),
            false => format!(
                " Trained models from {}: {} recorded no training documents (made before arbor kept them), so whether they \
                 trained on documents scored here is not checked.",
                earlier.dir.display(),
                unchecked.join(", ")
            ),
        });
    }
    record(dir, &models)?;
    retrievals::write(dir, &retrieved)?;
    // The methods' rows come first, in the file's order, then their controls.
    report.comparators = exp.compare_with.iter().map(|&i| report.methods[i].name.clone()).collect();
    report.compare();
    report.write(dir)?;
    if matches!(exp.data.format, arbor_datasets::loaders::Format::LegalBenchRag { .. }) {
        crate::protocol::write(dir, exp, &corpus, &report, &retrieved)?;
        eprintln!("LegalBench-RAG's own protocol: {}", dir.join("legalbench-rag.md").display());
    }
    Ok(report)
}

/// What every row of an experiment reads besides its method: the encoder, every document's leaf units
/// cut to what it reads (`max_tokens` word pieces at most), and the artefacts' keys.
pub struct Prepared {
    pub encoder: SentenceEncoder<DefaultBackend>,
    pub leaves: LeafIndex,
    pub keys: Keys,
    pub max_tokens: usize,
}

/// Loads `exp`'s encoder and cuts `corpus` into its leaf units.
pub fn prepare(exp: &Experiment, corpus: &Corpus) -> anyhow::Result<Prepared> {
    let encoder = arbor_models::SentenceEncoder::<DefaultBackend>::load(&exp.encoder, &default_device())?;
    let units = unit_rule(&exp.units, &encoder);
    let max_tokens = units.max_tokens.expect("the rule sets it");
    let leaves = leaf_index(corpus, &units, &encoder)?;
    let keys = Keys::new(corpus, &units, &encoder.fingerprint);
    Ok(Prepared { encoder, leaves, keys, max_tokens })
}

/// The report's rows: the experiment's methods (trained or not), then the matched controls of its trained
/// methods, each naming the rows it controls (a control already among the methods is that row).
pub fn rows(exp: &Experiment) -> Vec<(Method, Role)> {
    let labels: Vec<String> = exp.methods.iter().map(Method::label).collect();
    let mut rows: Vec<(Method, Role)> = exp
        .methods
        .iter()
        .map(|m| {
            let role = match m.spec().trains() {
                Trains::No => Role::Untrained,
                _ => Role::Trained,
            };
            (m.clone(), role)
        })
        .collect();
    for (control, of) in matched(&exp.methods, &exp.controls) {
        let of: Vec<String> = of.iter().map(|&i| labels[i].clone()).collect();
        // A control the experiment lists as a method keeps its row, compared as a control as well.
        match exp.methods.iter().position(|m| *m == control) {
            Some(j) if rows[j].1.is_trained() => rows[j].1 = Role::TrainedControl { of },
            Some(j) => rows[j].1 = Role::Control { of },
            None => rows.push((control, Role::Control { of })),
        }
    }
    rows
}

/// What the encoder sees of the evaluated documents and queries.
fn unit_stats(index: &LeafIndex, docs: &[usize], queries: &[EvalQuery], encoder: &SentenceEncoder<DefaultBackend>, max_tokens: usize) -> UnitStats {
    let limit = encoder.max_content_tokens();
    let lengths: Vec<usize> = docs.iter().flat_map(|&d| index.units.by_doc[d].clone()).map(|u| index.tokens.count(index.units.spans[u])).collect();
    let long_units = lengths.iter().filter(|&&t| t > limit).count();
    let long_queries = queries.iter().filter(|q| encoder.count_tokens(&q.input.text) > limit).count();
    UnitStats {
        units: lengths.len(),
        max_tokens,
        cut_sentences: index.cut_sentences(docs),
        cut_tables: index.cut_tables(docs),
        truncated_inputs: long_units + long_queries,
        tokens: lengths.iter().sum(),
        unseen_tokens: lengths.iter().map(|&t| t.saturating_sub(limit)).sum(),
    }
}

/// The documents whose units are ranked: those the queries name; under corpus scope the pool, every
/// document of the experiment's own corpus in the evaluated split (or with no split), and those the
/// queries name.
fn ranked_docs(corpus: &Corpus, own_from: usize, queries: &[&Query], split: Option<&str>, scope: Scope) -> Vec<usize> {
    let mut docs: Vec<usize> = queries.iter().flat_map(|q| corpus.query_docs(q)).collect();
    if scope == Scope::Corpus {
        let in_pool = |d: &usize| {
            let s = corpus.documents[*d].split.as_deref();
            s.is_none() || split.is_none() || s == split
        };
        docs.extend((own_from..corpus.documents.len()).filter(in_pool));
    }
    docs.sort_unstable();
    docs.dedup();
    docs
}

fn setting(exp: &Experiment, corpus: &Corpus, own_from: usize, docs: &[usize], queries: usize) -> String {
    let mut budget = exp.retrieval.max_tokens.map_or("no token budget".to_owned(), |b| format!("a budget of {b} tokens handed on per query"));
    match exp.retrieval.hand_on {
        HandOn::Items => {}
        HandOn::Tables => budget.push_str(", an item holding part of a cut table handed on as the whole table"),
        HandOn::WholeSentences => budget.push_str(", an item holding part of a cut sentence handed on as the whole sentence"),
        HandOn::Paragraphs => budget.push_str(", every item handed on as the whole of the paragraphs it lies in"),
    }
    let lent = match own_from {
        0 => String::new(),
        n => {
            let names: Vec<String> = exp.data.train_with.iter().map(|s| s.name()).collect();
            let lent_queries = corpus.queries.iter().filter(|q| corpus.query_docs(q).iter().all(|&d| d < n)).count();
            format!(" Training also reads the `train` split of {} ({n} documents, {lent_queries} queries).", names.join(", "))
        }
    };
    let validation = match &exp.data.validation {
        Some(v) => {
            let held = corpus.documents[own_from..].iter().filter(|d| d.split.as_deref() == Some(VALIDATION)).count();
            format!(" The validation split holds {held} of the training documents (fraction {}, seed {}, by collection).", v.fraction, v.seed)
        }
        None => " No validation split.".into(),
    };
    let scope = match exp.retrieval.scope {
        Scope::QueryDocuments => "each query ranks its own documents",
        Scope::Corpus => "each query ranks every unit of all of them (corpus scope)",
    };
    format!(
        "Corpus `{}` ({:?}, {} documents), split {}: {queries} queries over {} documents; leaf units of at most {} \
         sentences; {scope}; top_k {}; {budget}.",
        exp.data.path,
        exp.data.format,
        corpus.documents.len() - own_from,
        exp.data.split.as_deref().unwrap_or("all"),
        docs.len(),
        exp.units.max_sentences,
        exp.retrieval.top_k,
    ) + &validation
        + &lent
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
    let stamp = crate::provenance::utc_stamp(std::time::SystemTime::now());
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
