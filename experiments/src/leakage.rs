//! No path from what is scored into training: the fair rules of arbor as refusals, not conventions.
//! Before any index is built, [`check`] refuses
//!
//! - a method that reads the test split or the validation split (which chooses every trainer's epoch) for
//!   training or look-up, naming the setting (`training.split`, `plan: Planner((split))`, ...);
//! - where that method reads its split in this run (it trains, under `train`; exemplars look up in any
//!   run): evaluated queries of the training split (`data.split: None`, or the same split);
//!   a query of the training split asked against a document of another split; and a document the
//!   training reads (its split's documents, and those of its queries) among the documents ranked for the
//!   evaluated queries.
//!
//! Under `evaluate --from RUN_DIR` nothing trains: each model carries the content keys of the documents
//! and questions its training read ([`TrainedModel::trained_on`], [`TrainedModel::trained_on_questions`],
//! written by the run that trained it), and [`check_models`] refuses one that read a document or a
//! question this run scores. Texts are compared after their whitespace is normalised, so the same corpus
//! extracted again (another pdftotext, lines joined) is still the same corpus; a model recorded before
//! arbor kept its documents is reported as unchecked.

use std::collections::HashSet;

use anyhow::bail;
use arbor_datasets::Corpus;

use crate::cache::key;
use crate::experiment::Experiment;
use crate::methods::{Method, Trains};
use crate::trained::{EarlierRun, TrainedModel};
use crate::validation::VALIDATION;

/// Refuses the rows of `exp` (its methods and their controls) that would read what `evaluated` (the
/// documents ranked for the scored queries) holds; `trains`: models may be trained in this run.
pub fn check(exp: &Experiment, rows: &[Method], corpus: &Corpus, evaluated: &[usize], trains: bool) -> anyhow::Result<()> {
    let evaluated: HashSet<usize> = evaluated.iter().copied().collect();
    let scored = corpus.eval_queries(exp.data.split.as_deref());
    for method in rows {
        let spec = method.spec();
        let label = spec.label();
        let reads_now = trains || matches!(spec.trains(), Trains::LooksUp(_));
        for (field, split) in spec.reads_splits() {
            if split == "test" || split == VALIDATION {
                bail!(
                    "{label:?}: {field} is {split:?}: no method trains on or looks up the {} (set it to \"train\")",
                    if split == "test" { "test split" } else { "validation split, which chooses every trainer's epoch" }
                );
            }
            if !reads_now {
                continue;
            }
            match exp.data.split.as_deref() {
                _ if !scored.iter().any(|q| q.split.as_deref() == Some(split.as_str())) => {}
                None => bail!(
                    "data.split is None: every query is scored, those of split {split:?} included, which {label:?} reads \
                     ({field}): score a split it never reads (data.split: Some(\"test\"))"
                ),
                Some(s) if s == split => {
                    bail!("data.split is {s:?}, the split {label:?} reads ({field}): its rows would be scored on their own training data")
                }
                _ => {}
            }
            let both: Vec<usize> = read_documents(corpus, &split)?.into_iter().filter(|d| evaluated.contains(d)).collect();
            if let Some(&d) = both.first() {
                bail!(
                    "{label:?} reads {} document(s) of split {split:?} ({field}) that the evaluated queries rank, e.g. {:?}: \
                     a document is either trained on or scored",
                    both.len(),
                    corpus.documents[d].id
                );
            }
        }
    }
    Ok(())
}

/// The documents a training on `split` reads: the split's documents and those its queries are asked
/// against or hold gold in. An error names a query of the split asked against a document of another one.
pub fn read_documents(corpus: &Corpus, split: &str) -> anyhow::Result<Vec<usize>> {
    let mut docs: Vec<usize> = (0..corpus.documents.len()).filter(|&d| corpus.documents[d].split.as_deref() == Some(split)).collect();
    for q in corpus.queries.iter().filter(|q| q.split.as_deref() == Some(split)) {
        for d in corpus.query_docs(q).into_iter().chain(corpus.gold(q).iter().map(|g| g.doc)) {
            if let Some(other) = corpus.documents[d].split.as_deref().filter(|&s| s != split) {
                bail!(
                    "query {:?} of split {split:?} is asked against document {:?} of split {other:?}: a training query reads \
                     only documents of its own split (fix the corpus's splits)",
                    q.id,
                    corpus.documents[d].id
                );
            }
            docs.push(d);
        }
    }
    docs.sort_unstable();
    docs.dedup();
    Ok(docs)
}

/// A text's key for [`TrainedModel::trained_on`] and [`TrainedModel::trained_on_questions`]: the text
/// alone, its runs of whitespace read as one space and its ends trimmed, so that the same text is the same
/// document (or question) in any corpus, under any unit rule and any extraction's line breaks.
pub fn text_key(text: &str) -> String {
    key(&("normalised", text.split_whitespace().collect::<Vec<_>>().join(" ")))
}

/// The key runs before whitespace was normalised wrote: the exact text.
pub fn exact_key(text: &str) -> String {
    key(&text)
}

/// What a method reading `splits` trains on (the validation split's included: every trainer reads it to
/// choose its epoch): the keys of its documents and of its questions.
pub fn trained_on(corpus: &Corpus, splits: &[(&str, String)]) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let read: Vec<&str> = splits.iter().map(|(_, s)| s.as_str()).chain([VALIDATION]).collect();
    let mut docs = Vec::new();
    for split in &read {
        docs.extend(read_documents(corpus, split)?);
    }
    let sorted = |mut keys: Vec<String>| -> Vec<String> {
        keys.sort();
        keys.dedup();
        keys
    };
    let doc_keys = docs.into_iter().map(|d| text_key(&corpus.documents[d].text)).collect();
    let questions = corpus.queries.iter().filter(|q| q.split.as_deref().is_some_and(|s| read.contains(&s))).map(|q| text_key(&q.text)).collect();
    Ok((sorted(doc_keys), sorted(questions)))
}

/// Under `evaluate --from`: refuses a model of `earlier` that trained on a document of `evaluated` or a
/// question of `questions` (the scored ones), their texts compared with whitespace normalised (a record
/// written before that was kept is compared by exact text); returns the models (by row) whose training
/// documents were not recorded, unchecked.
pub fn check_models(
    models: &[TrainedModel],
    earlier: &EarlierRun,
    corpus: &Corpus,
    evaluated: &[usize],
    questions: &[&str],
) -> anyhow::Result<Vec<String>> {
    let texts = evaluated.iter().map(|&d| corpus.documents[d].text.as_str());
    let scored: HashSet<String> = texts.flat_map(|t| [text_key(t), exact_key(t)]).collect();
    let asked: HashSet<String> = questions.iter().map(|q| text_key(q)).collect();
    let mut unchecked = Vec::new();
    for m in models {
        let Some(from) = earlier.models.iter().find(|e| e.dir == m.dir) else { continue };
        if from.trained_on.is_empty() {
            unchecked.push(m.method.clone());
            continue;
        }
        let overlap = from.trained_on.iter().filter(|k| scored.contains(*k)).count();
        let questions = from.trained_on_questions.iter().filter(|k| asked.contains(*k)).count();
        if overlap > 0 || questions > 0 {
            bail!(
                "--from {}: the model of {:?} trained on {overlap} of the documents and {questions} of the questions this run scores \
                 (the same text, whitespace aside): score it on documents and questions its training never read",
                earlier.dir.display(),
                m.method
            );
        }
    }
    Ok(unchecked)
}
