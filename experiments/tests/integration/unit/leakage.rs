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

#[test]
fn a_model_from_another_run_is_refused_on_what_it_trained_on() {
    let c = corpus();
    let (trained_on, trained_on_questions) = trained_on(&c, &[("training.split", "train".into())]).unwrap();
    assert_eq!((trained_on.len(), trained_on_questions.len()), (2, 2));
    let model = TrainedModel { method: "m".into(), dir: "train-x".into(), trained_on, trained_on_questions, ..Default::default() };
    let earlier = EarlierRun { dir: "run".into(), models: vec![model.clone()] };
    assert!(check_models(std::slice::from_ref(&model), &earlier, &c, &[2, 3], &["Question 2?"]).unwrap().is_empty());
    let err = format!("{:#}", check_models(std::slice::from_ref(&model), &earlier, &c, &[0, 2], &[]).unwrap_err());
    assert!(err.contains("trained on 1 of the documents"), "{err}");
    let old = EarlierRun { dir: "run".into(), models: vec![TrainedModel { trained_on: vec![], ..model.clone() }] };
    assert_eq!(check_models(std::slice::from_ref(&model), &old, &c, &[0], &[]).unwrap(), ["m"]);
    // A record written before whitespace was normalised (exact text keys) is still checked.
    let exact = TrainedModel { trained_on: vec![exact_key(&c.documents[0].text)], trained_on_questions: vec![], ..model.clone() };
    let old = EarlierRun { dir: "run".into(), models: vec![exact.clone()] };
    assert!(check_models(&[exact], &old, &c, &[0], &[]).is_err());
    // The same corpus extracted again (its lines broken and spaced otherwise) with the same questions: refused.
    let mut again = corpus();
    for d in &mut again.documents {
        d.text = d.text.replace(' ', "\n  ") + "\n";
    }
    let err = format!("{:#}", check_models(std::slice::from_ref(&model), &earlier, &again, &[1], &[]).unwrap_err());
    assert!(err.contains("1 of the documents"), "{err}");
    // A question the model trained on, asked again on documents it never read: refused too.
    let trained_question = "Train  question\n0?";
    let asked = TrainedModel { trained_on_questions: vec![text_key("Train question 0?")], ..model.clone() };
    let err = format!(
        "{:#}",
        check_models(std::slice::from_ref(&asked), &EarlierRun { dir: "run".into(), models: vec![asked.clone()] }, &c, &[2], &[trained_question])
            .unwrap_err()
    );
    assert!(err.contains("1 of the questions"), "{err}");
}
