//! QASPER (Dasigi et al., 2021) in either layout:
//! - v0.3: one JSON object, paper id -> {title, abstract, full_text: [{section_name, paragraphs}], qas: [...],
//!   figures_and_tables: [{caption, file}]};
//! - Hugging Face: one object per paper (concatenated, not an array), with column-oriented `full_text`,
//!   `qas` and `figures_and_tables`.
//!
//! A paper becomes a document: the abstract, then every section's paragraphs, then the figure and table
//! captions, separated by blank lines. Section names nest with " ::: "; every prefix becomes a [`Section`]
//! whose level is its depth. Gold evidence is the union, over annotators, of the evidence paragraphs
//! (given verbatim) and captions (`FLOAT SELECTED: ...`).

use std::path::Path;

use serde_json::Value;

use crate::corpus::{Corpus, Document, Evidence, Query, Section};
use crate::error::DataError;
use crate::span::Span;

/// One paper in a layout-independent form.
struct Paper {
    id: String,
    title: String,
    abstract_: String,
    sections: Vec<(String, Vec<String>)>,
    captions: Vec<String>,
    qas: Vec<Qa>,
}

struct Qa {
    id: String,
    question: String,
    answers: Vec<Value>,
}

/// Reads a QASPER file in either layout; `split` is written on every query and document.
pub fn load_qasper(path: &Path, split: Option<&str>) -> Result<Corpus, DataError> {
    let text = crate::error::read_utf8(path)?;
    let mut papers = Vec::new();
    for value in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
        let value = value.map_err(|e| crate::error::json_error(path, 0, &e))?;
        let bad = |m: String| DataError::invalid(path, m);
        if value.get("full_text").is_some() {
            papers.push(hf_paper(&value).map_err(bad)?);
        } else if let Value::Object(map) = value {
            for (id, paper) in map {
                papers.push(v03_paper(&id, &paper).map_err(bad)?);
            }
        } else {
            return Err(bad("expected a QASPER paper or a dict of papers".into()));
        }
    }
    let mut documents = Vec::new();
    let mut queries = Vec::new();
    let mut unmatched = 0;
    for paper in papers {
        let (doc, paragraphs) = document(&paper, split);
        for qa in &paper.qas {
            let mut evidence: Vec<Span> = Vec::new();
            let mut answers = Vec::new();
            for answer in &qa.answers {
                for ev in answer["evidence"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                    let ev = ev.strip_prefix("FLOAT SELECTED: ").unwrap_or(ev).trim();
                    if ev.is_empty() {
                        continue;
                    }
                    match paragraphs.iter().find(|(t, _)| t.trim() == ev).or_else(|| paragraphs.iter().find(|(t, _)| t.contains(ev))) {
                        Some((_, span)) if !evidence.contains(span) => evidence.push(*span),
                        Some(_) => {}
                        None => unmatched += 1,
                    }
                }
                if let Some(a) = answer_text(answer).filter(|a| !answers.contains(a)) {
                    answers.push(a);
                }
            }
            evidence.sort();
            queries.push(Query {
                id: qa.id.clone(),
                text: qa.question.clone(),
                doc_ids: vec![paper.id.clone()],
                evidence: evidence.into_iter().map(|s| Evidence { doc_id: paper.id.clone(), start: s.start, end: s.end }).collect(),
                answers,
                split: split.map(str::to_owned),
            });
        }
        documents.push(doc);
    }
    if unmatched > 0 {
        eprintln!("warning: {}: {unmatched} evidence passages match no paragraph of their paper and are left out of the gold", path.display());
    }
    Corpus::new(documents, queries, path)
}

/// Lays a paper out as a document; returns it with every paragraph's text and span.
fn document(paper: &Paper, split: Option<&str>) -> (Document, Vec<(String, Span)>) {
    let mut text = String::new();
    let mut paragraphs = Vec::new();
    let mut push = |text: &mut String, p: &str| -> Option<Span> {
        let p = p.trim();
        if p.is_empty() {
            return None;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        let start = text.len();
        text.push_str(p);
        let span = Span::new(start, text.len());
        paragraphs.push((p.to_owned(), span));
        Some(span)
    };
    let mut named: Vec<(Vec<String>, Span)> = Vec::new();
    let groups = std::iter::once(("Abstract".to_owned(), vec![paper.abstract_.clone()]))
        .chain(paper.sections.iter().cloned())
        .chain((!paper.captions.is_empty()).then(|| ("Figures and tables".to_owned(), paper.captions.clone())));
    for (name, paras) in groups {
        let spans: Vec<Span> = paras.iter().filter_map(|p| push(&mut text, p)).collect();
        if let (Some(first), Some(last)) = (spans.first(), spans.last()) {
            let path = name.split(" ::: ").map(|s| s.trim().to_owned()).collect();
            named.push((path, first.cover(last)));
        }
    }
    (Document { id: paper.id.clone(), title: paper.title.clone(), text, sections: section_tree(&named), split: split.map(str::to_owned) }, paragraphs)
}

/// Every prefix of every section path becomes a section covering all the paths below it.
fn section_tree(named: &[(Vec<String>, Span)]) -> Vec<Section> {
    let mut out: Vec<(Vec<String>, Span)> = Vec::new();
    for (path, span) in named {
        for depth in 1..=path.len() {
            let prefix = &path[..depth];
            match out.iter_mut().find(|(p, _)| p.as_slice() == prefix) {
                Some((_, s)) => *s = s.cover(span),
                None => out.push((prefix.to_vec(), *span)),
            }
        }
    }
    out.into_iter()
        .map(|(path, span)| Section { title: path.last().cloned().unwrap_or_default(), start: span.start, end: span.end, level: path.len() })
        .collect()
}

fn answer_text(answer: &Value) -> Option<String> {
    let free = answer["free_form_answer"].as_str().unwrap_or("").trim();
    let spans: Vec<&str> = answer["extractive_spans"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if !free.is_empty() {
        Some(free.to_owned())
    } else if !spans.is_empty() {
        Some(spans.join("; "))
    } else if let Some(yes) = answer["yes_no"].as_bool() {
        Some(if yes { "Yes" } else { "No" }.to_owned())
    } else if answer["unanswerable"].as_bool() == Some(true) {
        Some("Unanswerable".to_owned())
    } else {
        None
    }
}

fn strings(v: &Value, what: &str) -> Result<Vec<String>, String> {
    v.as_array()
        .ok_or_else(|| format!("{what} is not a list"))?
        .iter()
        .map(|s| s.as_str().map(str::to_owned).ok_or_else(|| format!("{what} holds a non-string")))
        .collect()
}

fn str_field(v: &Value, key: &str) -> Result<String, String> {
    v[key].as_str().map(str::to_owned).ok_or_else(|| format!("missing string field {key:?}"))
}

fn v03_paper(id: &str, v: &Value) -> Result<Paper, String> {
    let ctx = |m: String| format!("paper {id:?}: {m}");
    let full = v["full_text"].as_array().ok_or_else(|| ctx("full_text is not a list".into()))?;
    let sections = full
        .iter()
        .map(|s| Ok((s["section_name"].as_str().unwrap_or("").to_owned(), strings(&s["paragraphs"], "paragraphs")?)))
        .collect::<Result<_, String>>()
        .map_err(ctx)?;
    let captions = v["figures_and_tables"].as_array().into_iter().flatten().filter_map(|f| f["caption"].as_str().map(str::to_owned)).collect();
    let qas = v["qas"]
        .as_array()
        .ok_or_else(|| ctx("qas is not a list".into()))?
        .iter()
        .map(|q| {
            Ok(Qa {
                id: str_field(q, "question_id")?,
                question: str_field(q, "question")?,
                answers: q["answers"].as_array().into_iter().flatten().map(|a| a["answer"].clone()).collect(),
            })
        })
        .collect::<Result<_, String>>()
        .map_err(ctx)?;
    Ok(Paper {
        id: id.to_owned(),
        title: str_field(v, "title").map_err(ctx)?,
        abstract_: v["abstract"].as_str().unwrap_or("").to_owned(),
        sections,
        captions,
        qas,
    })
}

fn hf_paper(v: &Value) -> Result<Paper, String> {
    let id = str_field(v, "id")?;
    let ctx = |m: String| format!("paper {id:?}: {m}");
    let names = strings(&v["full_text"]["section_name"], "full_text.section_name").map_err(ctx)?;
    let paras = v["full_text"]["paragraphs"].as_array().ok_or_else(|| ctx("full_text.paragraphs is not a list".into()))?;
    let sections = names.into_iter().zip(paras).map(|(n, p)| Ok((n, strings(p, "paragraphs")?))).collect::<Result<_, String>>().map_err(ctx)?;
    let captions = strings(&v["figures_and_tables"]["caption"], "captions").unwrap_or_default();
    let q = &v["qas"];
    let questions = strings(&q["question"], "qas.question").map_err(ctx)?;
    let ids = strings(&q["question_id"], "qas.question_id").map_err(ctx)?;
    let answers = q["answers"].as_array().ok_or_else(|| ctx("qas.answers is not a list".into()))?;
    let qas = questions
        .into_iter()
        .zip(ids)
        .zip(answers)
        .map(|((question, id), a)| Qa { id, question, answers: a["answer"].as_array().cloned().unwrap_or_default() })
        .collect();
    Ok(Paper {
        id: id.clone(),
        title: str_field(v, "title").map_err(ctx)?,
        abstract_: v["abstract"].as_str().unwrap_or("").to_owned(),
        sections,
        captions,
        qas,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V03: &str = r#"{"p1": {"title": "T", "abstract": "We study X.",
      "full_text": [{"section_name": "Intro", "paragraphs": ["First para.", ""]},
                    {"section_name": "Method ::: Data", "paragraphs": ["Data para. Two."]},
                    {"section_name": "Method ::: Model", "paragraphs": ["Model para."]}],
      "figures_and_tables": [{"caption": "Table 1: Scores.", "file": "t1.png"}],
      "qas": [{"question": "What data?", "question_id": "q1", "answers": [
          {"answer": {"unanswerable": false, "extractive_spans": ["Data"], "yes_no": null, "free_form_answer": "",
                      "evidence": ["Data para. Two.", "FLOAT SELECTED: Table 1: Scores."], "highlighted_evidence": []}},
          {"answer": {"unanswerable": false, "extractive_spans": [], "yes_no": true, "free_form_answer": "",
                      "evidence": ["Data para. Two."], "highlighted_evidence": []}}]}]}}"#;

    const HF: &str = r#"{"id": "p1", "title": "T", "abstract": "We study X.",
      "full_text": {"section_name": ["Intro", "Method ::: Data", "Method ::: Model"],
                    "paragraphs": [["First para.", ""], ["Data para. Two."], ["Model para."]]},
      "figures_and_tables": {"caption": ["Table 1: Scores."], "file": ["t1.png"]},
      "qas": {"question": ["What data?"], "question_id": ["q1"], "answers": [{"answer": [
          {"unanswerable": false, "extractive_spans": ["Data"], "yes_no": null, "free_form_answer": "",
           "evidence": ["Data para. Two.", "FLOAT SELECTED: Table 1: Scores."], "highlighted_evidence": []},
          {"unanswerable": false, "extractive_spans": [], "yes_no": true, "free_form_answer": "",
           "evidence": ["Data para. Two."], "highlighted_evidence": []}], "annotation_id": ["a", "b"], "worker_id": ["w", "v"]}]}}
    {"id": "p2", "title": "U", "abstract": "Other.", "full_text": {"section_name": [], "paragraphs": []},
     "figures_and_tables": {"caption": [], "file": []}, "qas": {"question": [], "question_id": [], "answers": []}}"#;

    fn load(text: &str) -> Corpus {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("qasper.json");
        std::fs::write(&path, text).unwrap();
        load_qasper(&path, Some("train")).unwrap()
    }

    #[test]
    fn both_layouts_give_the_same_document_sections_and_gold() {
        let (a, b) = (load(V03), load(HF));
        assert_eq!(b.documents.len(), 2);
        assert_eq!(a.documents[0], b.documents[0]);
        assert_eq!(a.queries, b.queries);
        let d = &a.documents[0];
        assert_eq!(d.text, "We study X.\n\nFirst para.\n\nData para. Two.\n\nModel para.\n\nTable 1: Scores.");
        let titles: Vec<(&str, usize, &str)> = d.sections.iter().map(|s| (s.title.as_str(), s.level, &d.text[s.start..s.end])).collect();
        assert_eq!(
            titles,
            vec![
                ("Abstract", 1, "We study X."),
                ("Intro", 1, "First para."),
                ("Method", 1, "Data para. Two.\n\nModel para."),
                ("Data", 2, "Data para. Two."),
                ("Model", 2, "Model para."),
                ("Figures and tables", 1, "Table 1: Scores."),
            ]
        );
        let q = &a.queries[0];
        let gold: Vec<&str> = q.evidence.iter().map(|e| &d.text[e.start..e.end]).collect();
        assert_eq!(gold, vec!["Data para. Two.", "Table 1: Scores."]);
        assert_eq!(q.answers, vec!["Data", "Yes"]);
        assert_eq!(q.split.as_deref(), Some("train"));
    }
}
