//! SQuAD v1.1 JSON (Rajpurkar et al., 2016) as a long-document benchmark: one document per article, its
//! paragraphs in order separated by a blank line; a question's gold evidence is the sentence(s) of its
//! paragraph that hold an annotator's answer. `answer_start` counts characters, not bytes.

use std::path::Path;

use serde::Deserialize;

use crate::corpus::{Corpus, Document, Evidence, Query};
use crate::error::DataError;
use crate::sentences::split_paragraph;
use crate::span::Span;

#[derive(Deserialize)]
struct SquadFile {
    data: Vec<Article>,
}

#[derive(Deserialize)]
struct Article {
    title: String,
    paragraphs: Vec<Paragraph>,
}

#[derive(Deserialize)]
struct Paragraph {
    context: String,
    qas: Vec<Qa>,
}

#[derive(Deserialize)]
struct Qa {
    id: String,
    question: String,
    #[serde(default)]
    answers: Vec<Answer>,
}

#[derive(Deserialize)]
struct Answer {
    text: String,
    answer_start: usize,
}

/// Reads a SQuAD v1.1 file; the first `train_articles` articles are split `train`, the rest `test`.
pub fn load_squad(path: &Path, train_articles: Option<usize>) -> Result<Corpus, DataError> {
    let text = crate::error::read_utf8(path)?;
    let file: SquadFile = serde_json::from_str(&text).map_err(|e| crate::error::json_error(path, 0, &e))?;
    let mut documents = Vec::with_capacity(file.data.len());
    let mut queries = Vec::new();
    for (a, article) in file.data.into_iter().enumerate() {
        let split = train_articles.map(|n| if a < n { "train" } else { "test" }.to_owned());
        let mut doc_text = String::new();
        for paragraph in &article.paragraphs {
            if !doc_text.is_empty() {
                doc_text.push_str("\n\n");
            }
            let base = doc_text.len();
            doc_text.push_str(&paragraph.context);
            let para_span = Span::new(base, doc_text.len());
            let sentences = split_paragraph(&doc_text, para_span);
            for qa in &paragraph.qas {
                let mut evidence: Vec<Span> = Vec::new();
                for answer in &qa.answers {
                    let answer_span = answer_bytes(&paragraph.context, answer).ok_or_else(|| {
                        DataError::invalid(path, format!("question {:?}: answer_start {} is past its paragraph", qa.id, answer.answer_start))
                    })?;
                    let answer_span = Span::new(base + answer_span.start, base + answer_span.end);
                    for s in sentences.iter().filter(|s| s.overlaps(&answer_span)) {
                        if !evidence.contains(s) {
                            evidence.push(*s);
                        }
                    }
                }
                evidence.sort();
                let mut answers: Vec<String> = Vec::new();
                for answer in &qa.answers {
                    if !answers.contains(&answer.text) {
                        answers.push(answer.text.clone());
                    }
                }
                queries.push(Query {
                    id: qa.id.clone(),
                    text: qa.question.clone(),
                    doc_ids: vec![article.title.clone()],
                    evidence: evidence.into_iter().map(|s| Evidence { doc_id: article.title.clone(), start: s.start, end: s.end }).collect(),
                    answers,
                    split: split.clone(),
                });
            }
        }
        documents.push(Document { id: article.title.clone(), title: article.title.replace('_', " "), text: doc_text, sections: vec![], split });
    }
    Corpus::new(documents, queries, path)
}

/// The byte span of an answer inside its paragraph, from its character offset and its text.
fn answer_bytes(context: &str, answer: &Answer) -> Option<Span> {
    let start = if answer.answer_start == context.chars().count() { context.len() } else { context.char_indices().nth(answer.answer_start)?.0 };
    let len: usize = context[start..].chars().take(answer.text.chars().count()).map(char::len_utf8).sum();
    Some(Span::new(start, start + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn articles_become_documents_and_answers_select_their_sentences() {
        let json = r#"{"version": "1.1", "data": [
          {"title": "Caf\u00e9_X", "paragraphs": [
            {"context": "Caf\u00e9 one opened. It sold tea.", "qas": [
              {"id": "q1", "question": "What did it sell?", "answers": [{"text": "tea", "answer_start": 26}, {"text": "tea", "answer_start": 26}]}]},
            {"context": "Later it closed. Nobody knows why.", "qas": [
              {"id": "q2", "question": "Did it close?", "answers": [{"text": "closed. Nobody", "answer_start": 9}]}]}]},
          {"title": "B", "paragraphs": [{"context": "Other text.", "qas": []}]}]}"#;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("squad.json");
        std::fs::write(&path, json).unwrap();
        let c = load_squad(&path, Some(1)).unwrap();
        let d = &c.documents[0];
        assert_eq!((d.id.as_str(), d.title.as_str()), ("Café_X", "Café X"));
        assert_eq!(d.text, "Café one opened. It sold tea.\n\nLater it closed. Nobody knows why.");
        let ev = |q: &Query| q.evidence.iter().map(|e| &d.text[e.start..e.end]).collect::<Vec<_>>();
        assert_eq!(ev(&c.queries[0]), vec!["It sold tea."]);
        assert_eq!(c.queries[0].answers, vec!["tea"]);
        assert_eq!(ev(&c.queries[1]), vec!["Later it closed.", "Nobody knows why."]);
        assert_eq!(c.documents[1].split.as_deref(), Some("test"));
        assert_eq!(c.queries[0].split.as_deref(), Some("train"));
    }
}
