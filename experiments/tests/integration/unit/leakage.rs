//! The unit tests of `arbor_experiments::leakage` (src/leakage.rs).

use arbor_datasets::Corpus;
use arbor_datasets::{Document, Evidence, Query};
use arbor_experiments::experiment::Experiment;
use arbor_experiments::leakage::*;
use arbor_experiments::methods::Method;
use arbor_experiments::trained::{EarlierRun, TrainedModel};
use std::path::Path;

/// Documents d0, d1 (train), d2, d3 (test); one query per document in its document's split.
fn corpus() -> Corpus {
    let split = |d: usize| if d < 2 { "train" } else { "test" };
    let docs = (0..4).map(|d| Document {
        id: format!("d{d}"),
        title: String::new(),
        text: format!("Document {d} text."),
        sections: vec![],
        split: Some(split(d).into()),
    });
    let queries = (0..4).map(|d| Query {
        id: format!("q{d}"),
        text: format!("Question {d}?"),
        doc_ids: vec![format!("d{d}")],
        evidence: vec![Evidence { doc_id: format!("d{d}"), start: 0, end: 8 }],
        answers: vec![],
        split: Some(split(d).into()),
    });
    Corpus::new(docs.collect(), queries.collect(), Path::new("t")).unwrap()
}

fn experiment(split: &str, method: &str) -> Experiment {
    let text = format!(r#"Experiment(name: "t", data: (format: Jsonl, path: "x", split: {split}), methods: [Flat, {method}])"#);
    Experiment::parse(&text, Path::new("t.ron")).unwrap()
}

fn run(split: &str, method: &str, evaluated: &[usize], trains: bool) -> anyhow::Result<()> {
    let exp = experiment(split, method);
    let rows: Vec<Method> = arbor_experiments::run::rows(&exp).into_iter().map(|(m, _)| m).collect();
    check(&exp, &rows, &corpus(), evaluated, trains)
}

const DENSE: &str = "Dense((training: (schedule: (epochs: 1){})))";

fn dense(extra: &str) -> String {
    DENSE.replace("{}", extra)
}

#[test]
fn a_training_never_reads_test_validation_or_the_evaluated_split() {
    let test = r#"Some("test")"#;
    assert!(run(test, &dense(""), &[2, 3], true).is_ok());
    for (split, field) in [("test", "training.split"), ("validation", "training.split")] {
        let err = format!("{:#}", run(test, &dense(&format!(r#", split: "{split}""#)), &[2, 3], true).unwrap_err());
        assert!(err.contains(field) && err.contains(split), "{err}");
    }
    let err = format!("{:#}", run("None", &dense(""), &[0, 1, 2, 3], true).unwrap_err());
    assert!(err.contains("data.split is None"), "{err}");
    let err = format!("{:#}", run(r#"Some("train")"#, &dense(""), &[0, 1], true).unwrap_err());
    assert!(err.contains(r#"data.split is "train""#), "{err}");
    // The exemplar controls look up in any run; a split no row reads is refused under `evaluate` only
    // when the method reads it (a model from elsewhere is checked by its own record).
    assert!(run("None", &dense(""), &[0, 1, 2, 3], false).unwrap_err().to_string().contains("Exemplars"));
    let exp = experiment("None", &dense(""));
    assert!(check(&exp, &exp.methods, &corpus(), &[0, 1, 2, 3], false).is_ok());
    let err = format!("{:#}", run(test, r#"Exemplars((split: "test"))"#, &[2, 3], false).unwrap_err());
    assert!(err.contains("Exemplars((split))"), "{err}");
}

#[test]
fn a_document_is_either_trained_on_or_scored() {
    let err = format!("{:#}", run(r#"Some("test")"#, &dense(""), &[1, 2, 3], true).unwrap_err());
    assert!(err.contains("1 document(s)") && err.contains("\"d1\""), "{err}");
    // A training query asked against a test document is refused, naming both.
    let mut c = corpus();
    c.queries[0].doc_ids.push("d2".into());
    let err = format!("{:#}", read_documents(&c, "train").unwrap_err());
    assert!(err.contains("\"q0\"") && err.contains("\"d2\""), "{err}");
}

/// The model `m` trained on the train split of `c`, and the earlier run holding it.
fn trained_model(c: &Corpus) -> (TrainedModel, EarlierRun) {
    let read = trained_on(c, &[("training.split", "train".into())]).unwrap();
    let model = TrainedModel {
        method: "m".into(),
        dir: "train-x".into(),
        trained_on: read.documents,
        trained_on_questions: read.questions,
        trained_on_sketches: read.sketches,
        ..Default::default()
    };
    let earlier = EarlierRun { dir: "run".into(), models: vec![model.clone()] };
    (model, earlier)
}

fn checked(model: &TrainedModel, earlier: &EarlierRun, c: &Corpus, evaluated: &[usize], questions: &[&str]) -> anyhow::Result<Unchecked> {
    check_models(std::slice::from_ref(model), earlier, c, evaluated, questions, &Contamination::default())
}

#[test]
fn a_model_from_another_run_is_refused_on_what_it_trained_on() {
    let c = corpus();
    let (model, earlier) = trained_model(&c);
    assert_eq!((model.trained_on.len(), model.trained_on_questions.len()), (2, 2));
    assert_eq!(checked(&model, &earlier, &c, &[2, 3], &["Question 2?"]).unwrap(), Unchecked::default());
    let err = format!("{:#}", checked(&model, &earlier, &c, &[0, 2], &[]).unwrap_err());
    assert!(err.contains("trained on 1 of the documents"), "{err}");
    let old = EarlierRun { dir: "run".into(), models: vec![TrainedModel { trained_on: vec![], ..model.clone() }] };
    assert_eq!(checked(&model, &old, &c, &[0], &[]).unwrap().models, ["m"]);
    // Records written before: exact text keys, whitespace-normalised keys, no sketches; each still checked
    // by what it holds, and a record without sketches is said to be checked by text only.
    for key in [exact_key(&c.documents[0].text), text_key(&c.documents[0].text)] {
        let before = TrainedModel { trained_on: vec![key], trained_on_questions: vec![], trained_on_sketches: vec![], ..model.clone() };
        let old = EarlierRun { dir: "run".into(), models: vec![before.clone()] };
        assert!(checked(&before, &old, &c, &[0], &[]).is_err());
        assert_eq!(checked(&before, &old, &c, &[2], &[]).unwrap().near_duplicates, ["m"]);
    }
    // The same corpus extracted again (its lines broken and spaced otherwise) with the same questions: refused.
    let mut again = corpus();
    for d in &mut again.documents {
        d.text = d.text.replace(' ', "\n  ") + "\n";
    }
    let err = format!("{:#}", checked(&model, &earlier, &again, &[1], &[]).unwrap_err());
    assert!(err.contains("1 of the documents"), "{err}");
    // A question the model trained on, asked again on documents it never read, re-spaced, re-cased or
    // re-punctuated: refused; so is one of a record that kept whitespace-normalised keys.
    for asked in ["Question  0?", "QUESTION 0", "question 0 ?", "Question, 0!"] {
        let err = format!("{:#}", checked(&model, &earlier, &c, &[2], &[asked]).unwrap_err());
        assert!(err.contains("1 of the questions"), "{asked}: {err}");
    }
    let before = TrainedModel { trained_on_questions: vec![text_key("Train question 0?")], ..model.clone() };
    let old = EarlierRun { dir: "run".into(), models: vec![before.clone()] };
    assert!(format!("{:#}", checked(&before, &old, &c, &[2], &["Train  question\n0?"]).unwrap_err()).contains("1 of the questions"));
}

#[test]
fn words_fold_what_extraction_changes() {
    assert_eq!(words("The ﬁrst Con-\n  tract, of ＡＢＣ Corp."), ["the", "first", "contract", "of", "abc", "corp"]);
    assert_eq!(words("non-\ndisclosure"), ["nondisclosure"]);
    assert_eq!(words("well-known party"), ["well", "known", "party"], "a hyphen inside a line is a word break");
    assert_eq!(words("co\u{ad}operate 12-\n3"), ["cooperate", "12", "3"], "soft hyphens dropped; digits are not joined");
    assert_eq!(content_key("The  Lease, signed."), content_key("the lease signed"));
    assert_ne!(content_key("the lease signed"), content_key("the lease unsigned"));
}

/// A deterministic contract-like text of `n` words from a vocabulary of 400, differing by `seed`.
fn prose(seed: u64, n: usize) -> String {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|i| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let w = format!("w{}", (x >> 33) % 400);
            if i % 13 == 12 { format!("{w}.") } else { w }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Issue 86: a scored document that is a trained-on one extracted again (ligatures, hyphenation at line
/// ends, page headers, case), a section of one, or one with as much new text around it, is refused as a
/// near-duplicate; an unrelated document of the same vocabulary is not; the threshold is the setting's.
#[test]
fn near_duplicates_of_a_trained_on_document_are_refused() {
    let contract = prose(7, 1200);
    let mut c = corpus();
    c.documents[0].text = contract.clone();
    let (model, earlier) = trained_model(&c);
    assert!(model.trained_on_sketches.iter().any(|s| s.len() > 40), "{:?}", model.trained_on_sketches.iter().map(Vec::len).collect::<Vec<_>>());
    let words: Vec<&str> = contract.split(' ').collect();
    let reextracted = words
        .chunks(200)
        .enumerate()
        .map(|(page, chunk)| format!("ACME CONFIDENTIAL    Page {}\n{}", page + 1, chunk.join(" ").replace("w1", "W1").replacen(' ', "-\n", 1)))
        .collect::<Vec<_>>()
        .join("\n\u{c}");
    let section = words[400..800].join(" ");
    let around = format!("{} {} {}", prose(8, 600), contract, prose(9, 600));
    for (name, text) in [("re-extracted", reextracted), ("a section", section), ("with text around it", around)] {
        let mut scored = corpus();
        scored.documents[2].text = text.clone();
        assert!(content_key(&text) != content_key(&contract) || name == "re-extracted");
        let err = format!("{:#}", checked(&model, &earlier, &scored, &[2], &[]).unwrap_err());
        assert!(err.contains("near-duplicate of the scored document \"d2\""), "{name}: {err}");
    }
    let mut unrelated = corpus();
    unrelated.documents[2].text = prose(11, 1200);
    assert_eq!(checked(&model, &earlier, &unrelated, &[2], &[]).unwrap(), Unchecked::default());
    // Half of it, half new text: under the default 0.8, over a threshold of 0.4.
    let mut half = corpus();
    half.documents[2].text = format!("{} {}", words[..600].join(" "), prose(12, 600));
    assert!(checked(&model, &earlier, &half, &[2], &[]).is_ok());
    let strict = Contamination { near_duplicate: 0.4 };
    assert!(check_models(std::slice::from_ref(&model), &earlier, &half, &[2], &[], &strict).is_err());
    let (a, b) = (sketch(&contract), sketch(&half.documents[2].text));
    let c = containment(&a, &b);
    assert!((0.3..0.7).contains(&c), "{c}");
}
