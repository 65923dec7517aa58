//! The plain retrieval trainer's tests: its lessons on hand-made documents, its corpus-wide and
//! in-document steps, GradCache's step against the plain one.

use super::step::held_out;
use super::*;
use crate::config::HeldOut;
use crate::data::TrainQuery;
use crate::objective::flat_on_held_out;
use crate::schedule::Schedule;
use crate::skeleton::Task;
use arbor_datasets::{DocSpan, Document, Span};
use arbor_models::DefaultBackend;
use burn::backend::Autodiff;
use burn::tensor::Tensor;

/// `n + 1` documents of five units in 8-d: units 0-3 are the axes e0..e3, unit 4 is e7; query k asks for
/// unit k but its pooled vector is e_k + 2 e7, nearer unit 4: the corpus, the `n` training documents
/// and the held-out one.
fn axis_docs_n(n: usize) -> (Corpus, Vec<TrainDoc>, Vec<TrainDoc>) {
    let text = "aaaa bbbb cccc dddd eeee";
    let corpus = Corpus::new(
        (0..=n).map(|i| Document { id: format!("d{i}"), title: String::new(), text: text.into(), sections: vec![], split: None }).collect(),
        vec![],
        Path::new("t"),
    )
    .unwrap();
    let axis = |k: usize| (0..8).map(|i| if i == k { 1.0 } else { 0.0 }).collect::<Vec<f32>>();
    let doc = |d: usize| {
        let units: Vec<DocSpan> = (0..5).map(|i| DocSpan { doc: d, span: Span::new(5 * i, 5 * i + 4) }).collect();
        let pooled = vec![axis(0), axis(1), axis(2), axis(3), axis(7)];
        let query = |k: usize| {
            let v: Vec<f32> = axis(k).iter().zip(axis(7)).map(|(a, b)| (a + 2.0 * b) / 5f32.sqrt()).collect();
            TrainQuery { text: format!("q{k}"), pooled: v, ids: vec![], positive: k, gold: vec![units[k]] }
        };
        TrainDoc { units: units.clone(), pooled, ids: vec![], pairs: vec![], tokens: vec![], queries: (0..4).map(query).collect() }
    };
    (corpus, (0..n).map(doc).collect(), vec![doc(n)])
}

fn axis_docs() -> (Corpus, Vec<TrainDoc>, Vec<TrainDoc>) {
    axis_docs_n(1)
}

/// The map trained on three documents of [`axis_docs_n`] with `negatives` (each mined by the frozen
/// encoder, two a query of ranks 0..4): its validation hit@1, the run's `negatives.json` and, per
/// step, what the log says of `figure`.
fn trained_with(negatives: fn(crate::negatives::CorpusNegatives) -> crate::negatives::Negatives, figure: &str) -> (f64, serde_json::Value, Vec<f64>) {
    let (corpus, train_docs, holdout) = axis_docs_n(3);
    let how = crate::negatives::CorpusNegatives { mine: crate::negatives::Mine::Encoder, per_query: 2, skip: 0, top: 4, margin: None };
    let config = TrainConfig {
        schedule: Schedule { epochs: 20, checkpoint_every: 1000, ..Schedule::default() },
        batch_size: 4,
        lr_new: 0.05,
        negatives: negatives(how),
        ..TrainConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let model = train::<Autodiff<DefaultBackend>>(&config, 8, None, &corpus, &train_docs, &holdout, dir.path(), &mut |_, _| {}).unwrap();
    let hit1 = flat_on_held_out(&corpus, &holdout, HeldOut::Documents, |d| held_out(&model, &Vectors::Given, d, &Default::default())).hit[0];
    let negatives: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("negatives.json")).unwrap()).unwrap();
    let log = std::fs::read_to_string(dir.path().join("log.jsonl")).unwrap();
    let per_step = log.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()?[figure].as_f64()).collect();
    (hit1, negatives, per_step)
}

/// The same lesson with batches across three training documents and negatives mined by the frozen
/// encoder from all of them: the map learns it, the run records its negatives, and each step logs
/// how many documents its candidates came from.
#[test]
fn corpus_wide_negatives_teach_the_adapter_the_same_lesson() {
    let (hit1, negatives, documents) = trained_with(crate::negatives::Negatives::Corpus, "negatives/documents");
    assert_eq!(hit1, 100.0);
    assert_eq!(negatives["stats"]["queries"], 12);
    let most = documents.into_iter().fold(0.0, f64::max);
    assert!(most >= 2.0, "batches mix documents: {most}");
}

/// The same lesson one document a step with negatives mined from the other two (`negatives: Mined`):
/// the map learns it, the run records negatives from other documents only, and each step logs how
/// many mined units it scored.
#[test]
fn mined_negatives_from_other_documents_teach_the_same_lesson() {
    let (hit1, negatives, mined) = trained_with(crate::negatives::Negatives::Mined, "negatives/mined");
    assert_eq!(hit1, 100.0);
    assert_eq!(negatives["stats"]["from_other_documents"], 1.0, "{}", negatives["stats"]);
    assert!(!mined.is_empty() && mined.iter().all(|&m| (1.0..=8.0).contains(&m)), "{mined:?}");
}

/// On [`axis_docs`] the map must learn to shrink e7, and validation hit@1 goes from 0 to 100.
#[test]
fn the_adapter_learns_what_the_queries_teach_and_keeps_the_best_epoch() {
    let (corpus, train_docs, holdout) = axis_docs();
    let config = TrainConfig {
        schedule: Schedule { epochs: 20, checkpoint_every: 1000, ..Schedule::default() },
        batch_size: 4,
        lr_new: 0.05,
        ..TrainConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let model = train::<Autodiff<DefaultBackend>>(&config, 8, None, &corpus, &train_docs, &holdout, dir.path(), &mut |_, _| {}).unwrap();
    let hit1 = |m: &DenseModel<DefaultBackend>| {
        flat_on_held_out(&corpus, &holdout, HeldOut::Documents, |d| held_out(m, &Vectors::Given, d, &Default::default())).hit[0]
    };
    let (before, after) = (hit1(&DenseModel::new(8, None, &Default::default())), hit1(&model));
    assert!(before == 0.0 && after == 100.0, "hit@1 {before} -> {after}");
    let back = finished::<DefaultBackend>(8, None, dir.path()).unwrap().expect("complete");
    let state = crate::checkpoint::state(&dir.path().join("checkpoints")).unwrap().unwrap();
    assert!(state.best.is_some(), "the best epoch on validation is kept");
    let probe = crate::encoder::matrix::<DefaultBackend>(&[&[0.3; 8]], &Default::default());
    assert_eq!(back.embed(probe.clone()).into_data(), model.embed(probe).into_data(), "the trained model is the best epoch's");
}

/// The same lesson on burn-train's Learner (`devices: Some([0])`); and a run killed after its last
/// epoch but before its commit (`state.json` gone) still keeps the epoch validation chose when rerun:
/// the same best step, the same model.
#[test]
fn on_the_learner_a_rerun_after_the_last_epoch_keeps_the_chosen_epoch() {
    let (corpus, train_docs, holdout) = axis_docs();
    let schedule = Schedule { epochs: 20, checkpoint_every: 1000, devices: Some(vec![0]), ..Schedule::default() };
    let config = TrainConfig { schedule, batch_size: 4, lr_new: 0.05, ..TrainConfig::default() };
    let dir = tempfile::tempdir().unwrap();
    let run = || train::<Autodiff<DefaultBackend>>(&config, 8, None, &corpus, &train_docs, &holdout, dir.path(), &mut |_, _| {}).unwrap();
    let hit1 = |m: &DenseModel<DefaultBackend>| {
        flat_on_held_out(&corpus, &holdout, HeldOut::Documents, |d| held_out(m, &Vectors::Given, d, &Default::default())).hit[0]
    };
    let first = run();
    assert_eq!(hit1(&first), 100.0);
    let ckpt = dir.path().join("checkpoints");
    let best = crate::checkpoint::state(&ckpt).unwrap().unwrap().best.expect("the epoch is chosen on validation");
    std::fs::remove_file(ckpt.join("state.json")).unwrap();
    let again = run();
    let state = crate::checkpoint::state(&ckpt).unwrap().unwrap();
    assert_eq!(state.best.map(|b| (b.step, b.score)), Some((best.step, best.score)), "the rerun keeps the chosen epoch");
    let probe = crate::encoder::matrix::<DefaultBackend>(&[&[0.3; 8]], &Default::default());
    assert_eq!(again.embed(probe.clone()).into_data(), first.embed(probe).into_data(), "and its model");
}

/// A real step with the pretrained encoder: a window holding the whole document gives the whole-document
/// step's loss exactly; a smaller one still scores every unit (the others by their frozen vectors, the
/// same function at the pretrained weights), so its loss is the whole document's to rounding, as
/// SproutRAG's windowed step is (`a_windowed_joint_step_reads_the_whole_document`): the control sees
/// the method's negatives. Without document negatives the loss is lower.
#[test]
fn a_window_holding_the_document_gives_the_whole_document_loss() {
    let crate::fixtures::Lease { corpus, docs, tune, ids, dim } = crate::fixtures::lease();
    let device = Default::default();
    let model = DenseModel::new(dim, Some(tune.bert.clone()), &device);
    let loss_frozen = |step_tokens: Option<usize>, hard_negatives: bool, frozen_layers: Option<usize>| -> f32 {
        let config = TrainConfig { batch_size: 2, step_tokens, hard_negatives, frozen_layers, ..TrainConfig::default() };
        let batches = EpochBatches::new(&docs, 2, config.schedule.seed);
        let encoder = Some(StepEncoder::new(&tune, frozen_layers).unwrap());
        let mut task =
            PlainRetrieval { config: &config, corpus: &corpus, train: &docs, holdout: &[], batches: Batches::InDocument(batches, None), encoder };
        let step = Task::<Autodiff<DefaultBackend>>::step(&mut task, &model, 0).unwrap();
        step.terms[0].1.clone().into_scalar()
    };
    let loss = |step_tokens, hard_negatives| loss_frozen(step_tokens, hard_negatives, None);
    let all: usize = ids.iter().map(Vec::len).sum();
    let whole = loss(None, true);
    assert_eq!(loss(Some(all), true), whole, "a window holding every token is the whole document");
    // The two positives and one more unit: the nearest negative only.
    let three = ids[0].len() + ids[1].len() + ids.iter().skip(2).map(Vec::len).max().unwrap();
    let (window, in_batch) = (loss(Some(three), true), loss(None, false));
    assert!((window - whole).abs() < 1e-4 * whole.abs().max(1.0), "window {window} against whole {whole}");
    assert!(in_batch < whole, "in-batch negatives only {in_batch} < whole {whole}");
    // Lower blocks frozen and run by the CPU kernel: the same forward pass, so the same loss to rounding.
    for k in [0, 3] {
        let frozen = loss_frozen(None, true, Some(k));
        assert!((frozen - whole).abs() < 1e-4 * whole.abs().max(1.0), "{k} frozen blocks: {frozen} against {whole}");
    }
}

/// With the fine-tuned encoder, a corpus-wide batch whose candidates are every unit of the one
/// document gives the in-document whole-document loss (InfoNCE is blind to the candidates' order).
#[test]
fn a_corpus_batch_holding_the_document_gives_the_in_document_loss() {
    let crate::fixtures::Lease { corpus, docs, tune, .. } = crate::fixtures::lease();
    let device = Default::default();
    let model = DenseModel::new(docs[0].pooled[0].len(), Some(tune.bert.clone()), &device);
    let encoder = StepEncoder::new(&tune, None).unwrap();
    let vectors = Vectors::step(Some(&encoder), model.encoder.as_ref());
    let config = TrainConfig { batch_size: 2, ..TrainConfig::default() };
    let (whole, _) = plain_loss(&model, &vectors, &config, &[Part { doc: &docs[0], queries: &[0, 1] }], None, &device);
    let n = docs[0].units.len();
    let how = crate::negatives::CorpusNegatives { mine: crate::negatives::Mine::Encoder, per_query: n - 1, skip: 0, top: n, margin: None };
    let mined = how.mine(&corpus, &docs, 0, false);
    let batch = CorpusBatch::new(&docs, &mined, n - 1, vec![(0, 0), (0, 1)], 0, 0);
    assert_eq!(batch.candidates.len(), n);
    let corpus_wide: f32 = corpus_loss(&model, &vectors, &config, &docs, &batch, &device).into_scalar();
    let whole: f32 = whole.into_scalar();
    assert!((corpus_wide - whole).abs() < 1e-4 * whole.abs().max(1.0), "corpus-wide {corpus_wide}, in-document {whole}");
}

/// GradCache's step under `config` (`grad_cache`; batches across documents with `negatives: Corpus`,
/// else within them) against the plain step on step 0's batch, the encoder `tune` fine-tuned: the loss
/// and the gradients of `weights` of its encoder equal to float rounding (each weight's largest
/// difference within `tolerance` of its largest gradient), one piece a chunk of each side.
fn assert_cached_step_is_plain(
    corpus: &Corpus,
    docs: &[TrainDoc],
    tune: &FineTune<Autodiff<DefaultBackend>>,
    config: &TrainConfig,
    tolerance: f32,
    weights: impl Fn(&Bert<Autodiff<DefaultBackend>>) -> Vec<&burn::module::Param<Tensor<Autodiff<DefaultBackend>, 2>>>,
) {
    use burn::optim::GradientsParams;
    use std::collections::HashSet;
    type A = Autodiff<DefaultBackend>;
    config.check().unwrap();
    let chunk = config.grad_cache.unwrap();
    let dim = tune.bert.embeddings.word_embeddings.weight.dims()[1];
    let model = DenseModel::new(dim, Some(tune.bert.clone()), &Default::default());
    let batches = match config.negatives.corpus() {
        Some(how) => Batches::Corpus { queries: negatives::all_queries(docs), mined: how.mine(corpus, docs, 0, false), per_query: how.per_query },
        None => Batches::InDocument(EpochBatches::with_docs(docs, config.batch_size, config.docs_per_step, 0), None),
    };
    let encoder = Some(StepEncoder::new(tune, config.frozen_layers).unwrap());
    let mut task = PlainRetrieval { config, corpus, train: docs, holdout: &[], batches, encoder };
    let ((plain, plain_grads), (cached, cached_grads), pieces) = grad_cache::plain_and_cached::<A, _>(&mut task, &model);
    let plain_loss: f32 = plain.terms[0].1.clone().into_scalar();
    let cached_loss: f32 = cached.terms[0].1.clone().into_scalar();
    let what = format!("{} questions, chunks of {chunk}, {:?} frozen", config.batch_size, config.frozen_layers);
    assert!((plain_loss - cached_loss).abs() < 1e-5 * plain_loss.abs().max(1.0), "{what}: loss {plain_loss} against {cached_loss}");
    // One piece for the loss, then one a chunk of the distinct inputs (equal token ids have equal vectors,
    // embedded once), the units first (the loss reads them first), then the questions not among them.
    let (units, questions): (HashSet<&[u32]>, Vec<&TrainQuery>) = match &task.batches {
        Batches::Corpus { queries, mined, per_query } => {
            let batch = corpus_batch(docs, config, queries, mined, *per_query, 0);
            (batch.candidates.iter().map(|&(d, u)| docs[d].ids[u].as_slice()).collect(), batch.questions(docs))
        }
        Batches::InDocument(..) => {
            let questions: Vec<&TrainQuery> = docs[0].queries.iter().collect();
            let window = crate::window::window(&docs[0], &questions, config.step_tokens);
            assert!(window.len() < docs[0].units.len(), "{what}: a window of the document");
            (window.iter().map(|&u| docs[0].ids[u].as_slice()).collect(), questions)
        }
    };
    let questions: HashSet<&[u32]> = questions.iter().map(|q| q.ids.as_slice()).filter(|q| !units.contains(q)).collect();
    assert_eq!(pieces, 1 + units.len().div_ceil(chunk) + questions.len().div_ceil(chunk), "{what}: one piece a chunk");
    for weight in weights(model.encoder.as_ref().unwrap()) {
        let get = |g: &GradientsParams| {
            g.get::<DefaultBackend, 2>(weight.id).expect("a trained weight has a gradient").into_data().to_vec::<f32>().unwrap()
        };
        let (p, c) = (get(&plain_grads), get(&cached_grads));
        let scale = p.iter().fold(0f32, |m, x| m.max(x.abs()));
        let diff = p.iter().zip(&c).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(scale > 0.0 && diff <= tolerance * scale, "{what}: gradient differs by {diff} (largest {scale})");
    }
}

/// GradCache's step has the plain step's gradient, in pieces of one row (two queries, then each unit,
/// taken in order of length) or of three rows of unequal lengths:
/// the loss and the gradients of the encoder's weights equal to float rounding, the whole encoder
/// trained and with its lower blocks frozen.
#[test]
fn the_cached_step_has_the_plain_steps_gradient() {
    let crate::fixtures::Lease { corpus, docs, tune, .. } = crate::fixtures::lease();
    let n = docs[0].units.len();
    let how = crate::negatives::CorpusNegatives { mine: crate::negatives::Mine::Encoder, per_query: 2, skip: 0, top: n, margin: None };
    for (frozen_layers, chunk) in [(None, 1), (Some(3), 1), (None, 3)] {
        let negatives = crate::negatives::Negatives::Corpus(how.clone());
        let config =
            TrainConfig { batch_size: 2, freeze_encoder: false, negatives, grad_cache: Some(chunk), frozen_layers, ..TrainConfig::default() };
        assert_cached_step_is_plain(&corpus, &docs, &tune, &config, 1e-4, |bert| {
            let mut weights = vec![&bert.layers[5].query.weight, &bert.layers[5].intermediate.weight];
            if frozen_layers.is_none() {
                weights.extend([&bert.layers[0].intermediate.weight, &bert.embeddings.word_embeddings.weight]);
            }
            weights
        });
    }
}

/// GradCache within a document (the matched control of a cached SproutRAG row): the lease's two
/// questions against a window of three of its five units, the others by their frozen vectors, in
/// chunks of two; the loss and the encoder's gradients are the plain step's.
#[test]
fn an_in_document_cached_step_has_the_plain_steps_gradient() {
    let crate::fixtures::Lease { corpus, docs, tune, ids, .. } = crate::fixtures::lease();
    let step_tokens = Some(ids[0].len() + ids[1].len() + ids.iter().skip(2).map(Vec::len).max().unwrap());
    let config = TrainConfig { batch_size: 2, freeze_encoder: false, grad_cache: Some(2), step_tokens, ..TrainConfig::default() };
    assert_cached_step_is_plain(&corpus, &docs, &tune, &config, 1e-4, |bert| {
        vec![&bert.layers[5].query.weight, &bert.layers[0].intermediate.weight, &bert.embeddings.word_embeddings.weight]
    });
}

/// At the field's batch size (issue 65): 256 questions across 64 documents, each with a mined negative,
/// in chunks of 32 (a small random encoder, hidden 32 and two blocks, so that the test stays quick): the
/// cached step's loss and gradients are the plain step's, for a BERT and for an MPNet (issue 85: its
/// relative position bias's gradient too). Rounding grows with the rows a gradient sums (2,500 word
/// pieces here: 1.7e-4 of the largest gradient, against 5e-6 for the two-question batch), hence 1e-3,
/// far below what a chunk lost or counted twice (one of 8 a side) would move it.
#[test]
fn a_256_question_cached_step_has_the_plain_steps_gradient() {
    let (corpus, mut docs, _) = axis_docs_n(64);
    // Token ids both random encoders read (their vocabularies are 300 and 298; 0 to 2 are special): of
    // unequal lengths, so chunks pad.
    let ids = |seed: usize| (0..4 + seed % 9).map(|t| 3 + ((seed * 31 + t * 17) % 293) as u32).collect::<Vec<u32>>();
    for (d, doc) in docs.iter_mut().enumerate() {
        doc.ids = (0..doc.units.len()).map(|u| ids(d * 10 + u)).collect();
        for (k, q) in doc.queries.iter_mut().enumerate() {
            q.ids = ids(d * 10 + 5 + k);
        }
    }
    let how = crate::negatives::CorpusNegatives { mine: crate::negatives::Mine::Encoder, per_query: 1, skip: 0, top: 4, margin: None };
    let config = TrainConfig {
        batch_size: 256,
        freeze_encoder: false,
        negatives: crate::negatives::Negatives::Corpus(how),
        grad_cache: Some(32),
        ..TrainConfig::default()
    };
    assert_cached_step_is_plain(&corpus, &docs, &crate::fixtures::tiny(), &config, 1e-3, |bert| {
        vec![&bert.layers[1].query.weight, &bert.layers[0].intermediate.weight, &bert.embeddings.word_embeddings.weight]
    });
    assert_cached_step_is_plain(&corpus, &docs, &crate::fixtures::tiny_of("tiny-mpnet"), &config, 1e-3, |bert| {
        let relative = &bert.relative_attention_bias.as_ref().expect("MPNet's table").weight;
        vec![&bert.layers[1].query.weight, relative, &bert.embeddings.word_embeddings.weight]
    });
}

/// The data-parallel trainer's step ([`crate::parallel`]) on its first window is the skeleton's step 0:
/// the same batch, the same window (here two of the five units), the same InfoNCE.
#[test]
fn the_learner_step_is_the_skeleton_step() {
    let crate::fixtures::Lease { corpus, docs, tune, ids, dim } = crate::fixtures::lease();
    let device = Default::default();
    let model = DenseModel::new(dim, Some(tune.bert.clone()), &device);
    let step_tokens = Some(ids[0].len() + ids[1].len());
    let config = TrainConfig { batch_size: 2, step_tokens, frozen_layers: Some(3), ..TrainConfig::default() };
    let encoder = StepEncoder::new(&tune, config.frozen_layers).unwrap();
    let batches = EpochBatches::new(&docs, 2, config.schedule.seed);
    let mut task = PlainRetrieval {
        config: &config,
        corpus: &corpus,
        train: &docs,
        holdout: &[],
        batches: Batches::InDocument(batches, None),
        encoder: Some(encoder.clone()),
    };
    let step = Task::<Autodiff<DefaultBackend>>::step(&mut task, &model, 0).unwrap();
    assert!(step.context.ends_with("2 of 5 units"), "{}", step.context);
    let skeleton: f32 = step.terms[0].1.clone().into_scalar();
    let items = parallel::items(&docs, &config);
    let learner: f32 = parallel::dense::DenseStep::new(model, Some(encoder), config.clone()).loss(&items[..1]).into_scalar();
    assert!((skeleton - learner).abs() < 1e-5 * skeleton.abs().max(1.0), "skeleton {skeleton}, Learner {learner}");
}

/// The trainer's own corpus-wide step (`negatives: Corpus`: [`PlainRetrieval`]'s step, where the batch is
/// drawn and its loss taken) leaves each query's false negatives out of its denominator: on two documents
/// of [`axis_docs_n`], query (0, 1)'s gold also covering unit (0, 0), query (0, 0)'s positive (and its
/// vector that unit's), step 0's
/// loss is InfoNCE computed here from the vectors, each query's denominator its batch's candidates less
/// those overlapping its gold (found from the gold, not from the batch), and not InfoNCE over every
/// candidate. A step that went back to pooling every candidate fails.
#[test]
fn the_trainers_corpus_step_leaves_a_querys_false_negatives_out() {
    use crate::negatives::{CorpusNegatives, Mine};
    let (corpus, mut docs, _) = axis_docs_n(2);
    let unit0 = docs[0].units[0];
    docs[0].queries[1].gold.push(unit0);
    // Its vector is unit (0, 0)'s, so that the false negative weighs in its denominator.
    docs[0].queries[1].pooled = docs[0].pooled[0].clone();
    let how = CorpusNegatives { mine: Mine::Encoder, per_query: 2, skip: 0, top: 4, margin: None };
    let config = TrainConfig { batch_size: 8, negatives: Negatives::Corpus(how.clone()), ..TrainConfig::default() };
    let mined = how.mine(&corpus, &docs, 0, false);
    let batches = Batches::Corpus { queries: negatives::all_queries(&docs), mined: mined.clone(), per_query: 2 };
    let mut task = PlainRetrieval { config: &config, corpus: &corpus, train: &docs, holdout: &[], batches, encoder: None };
    let model = DenseModel::<Autodiff<DefaultBackend>>::new(8, None, &Default::default());
    let step = Task::<Autodiff<DefaultBackend>>::step(&mut task, &model, 0).unwrap();
    let trained: f32 = step.terms[0].1.clone().into_scalar();
    // The step's queries and candidates (every query of both documents: one batch), then InfoNCE by hand
    // over the identity map's cosines.
    let batch = corpus_batch(&docs, &config, &negatives::all_queries(&docs), &mined, 2, 0);
    assert_eq!(batch.queries.len(), 8);
    let cosine = |a: &[f32], b: &[f32]| {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
        let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        dot / (norm(a) * norm(b))
    };
    let overlaps = |c: DocSpan, g: &DocSpan| c.doc == g.doc && c.span.start < g.span.end && g.span.start < c.span.end;
    let by_hand = |leave_out: bool| -> f64 {
        let mut total = 0.0;
        for (i, &(d, q)) in batch.queries.iter().enumerate() {
            let query = &docs[d].queries[q];
            let logits: Vec<Option<f64>> = batch
                .candidates
                .iter()
                .enumerate()
                .map(|(j, &(cd, cu))| {
                    let false_negative = j != batch.targets[i] && query.gold.iter().any(|g| overlaps(docs[cd].units[cu], g));
                    (!(leave_out && false_negative)).then(|| cosine(&query.pooled, &docs[cd].pooled[cu]) / config.tau)
                })
                .collect();
            let log_sum = logits.iter().flatten().map(|l| l.exp()).sum::<f64>().ln();
            total += log_sum - logits[batch.targets[i]].unwrap();
        }
        total / batch.queries.len() as f64
    };
    let (left_out, pooled) = (by_hand(true), by_hand(false));
    assert!((f64::from(trained) - left_out).abs() < 1e-4 * left_out.abs().max(1.0), "the step's loss {trained}, by hand {left_out}");
    assert!((pooled - left_out).abs() > 1e-2, "the false negative moves the loss: {pooled} against {left_out}");
    assert_eq!(step.scalars.iter().find(|s| s.0 == "negatives/excluded").map(|s| s.1), Some(1.0), "{:?}", step.scalars);
}
