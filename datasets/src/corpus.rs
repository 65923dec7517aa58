//! The corpus model: documents with optional section trees, queries with gold evidence spans.
//!
//! This is the arbor JSONL format (docs/your-data.md, "Your own data"); every loader produces these types, and
//! [`Corpus::new`] checks what a loader cannot: unique ids, known doc ids, spans inside their documents
//! on character boundaries, non-empty documents.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::DataError;
use crate::span::{DocSpan, Span};

/// A section of a document: a titled byte range, `level` 1 for top-level sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub title: String,
    pub start: usize,
    pub end: usize,
    #[serde(default = "one")]
    pub level: usize,
}

fn one() -> usize {
    1
}

impl Section {
    pub fn span(&self) -> Span {
        Span::new(self.start, self.end)
    }
}

/// A document: paragraphs are separated by a blank line in `text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    pub id: String,
    #[serde(default)]
    pub title: String,
    pub text: String,
    #[serde(default)]
    pub sections: Vec<Section>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
}

/// A gold evidence span, named by document id as in the JSONL format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub doc_id: String,
    pub start: usize,
    pub end: usize,
}

/// A query: the documents it is asked against, its gold evidence and reference answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Query {
    pub id: String,
    pub text: String,
    pub doc_ids: Vec<String>,
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    #[serde(default)]
    pub answers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
}

/// A validated corpus. Documents and queries keep their file order.
#[derive(Debug, Clone)]
pub struct Corpus {
    pub documents: Vec<Document>,
    pub queries: Vec<Query>,
    by_id: HashMap<String, usize>,
}

impl Corpus {
    /// Validates and indexes a corpus. `source` names where it came from, for error messages.
    pub fn new(documents: Vec<Document>, queries: Vec<Query>, source: &Path) -> Result<Self, DataError> {
        let mut by_id = HashMap::with_capacity(documents.len());
        for (i, doc) in documents.iter().enumerate() {
            if by_id.insert(doc.id.clone(), i).is_some() {
                return Err(DataError::invalid(source, format!("duplicate document id {:?}", doc.id)));
            }
            if doc.text.trim().is_empty() {
                return Err(DataError::invalid(source, format!("document {:?} is empty", doc.id)));
            }
            for s in &doc.sections {
                check_span(&doc.text, s.start, s.end)
                    .map_err(|m| DataError::invalid(source, format!("document {:?}, section {:?}: {m}", doc.id, s.title)))?;
            }
        }
        let corpus = Corpus { documents, queries, by_id };
        for q in &corpus.queries {
            if q.doc_ids.is_empty() {
                return Err(DataError::invalid(source, format!("query {:?} names no document", q.id)));
            }
            for d in &q.doc_ids {
                if !corpus.by_id.contains_key(d) {
                    return Err(DataError::invalid(source, format!("query {:?} names unknown document {d:?}", q.id)));
                }
            }
            for e in &q.evidence {
                let Some(&doc) = corpus.by_id.get(&e.doc_id) else {
                    return Err(DataError::invalid(source, format!("query {:?} has evidence in unknown document {:?}", q.id, e.doc_id)));
                };
                check_span(&corpus.documents[doc].text, e.start, e.end)
                    .map_err(|m| DataError::invalid(source, format!("query {:?}, evidence in {:?}: {m}", q.id, e.doc_id)))?;
            }
        }
        Ok(corpus)
    }

    /// The position of a document in [`Corpus::documents`].
    pub fn doc_index(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// The gold evidence of a query as document-indexed spans.
    pub fn gold(&self, query: &Query) -> Vec<DocSpan> {
        query.evidence.iter().map(|e| DocSpan { doc: self.by_id[&e.doc_id], span: Span::new(e.start, e.end) }).collect()
    }

    /// The documents a query is asked against, as indices.
    pub fn query_docs(&self, query: &Query) -> Vec<usize> {
        query.doc_ids.iter().map(|d| self.by_id[d]).collect()
    }

    /// Keeps the queries of one split (all of them when `split` is `None`), and only those with evidence.
    pub fn eval_queries(&self, split: Option<&str>) -> Vec<&Query> {
        self.queries.iter().filter(|q| split.is_none_or(|s| q.split.as_deref() == Some(s))).filter(|q| !q.evidence.is_empty()).collect()
    }
}

fn check_span(text: &str, start: usize, end: usize) -> Result<(), String> {
    if start > end || end > text.len() {
        return Err(format!("span {start}..{end} is outside the text ({} bytes)", text.len()));
    }
    if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return Err(format!("span {start}..{end} does not fall on UTF-8 character boundaries"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, text: &str) -> Document {
        Document { id: id.into(), title: String::new(), text: text.into(), sections: vec![], split: None }
    }

    fn query(doc_ids: &[&str], evidence: Vec<Evidence>) -> Query {
        Query { id: "q".into(), text: "?".into(), doc_ids: doc_ids.iter().map(|s| s.to_string()).collect(), evidence, answers: vec![], split: None }
    }

    #[test]
    fn unknown_doc_id_is_reported() {
        let err = Corpus::new(vec![doc("a", "text")], vec![query(&["b"], vec![])], Path::new("x")).unwrap_err();
        assert!(err.to_string().contains("unknown document \"b\""), "{err}");
    }

    #[test]
    fn empty_document_is_reported() {
        let err = Corpus::new(vec![doc("a", "  \n")], vec![], Path::new("x")).unwrap_err();
        assert!(err.to_string().contains("document \"a\" is empty"), "{err}");
    }

    #[test]
    fn evidence_outside_text_or_inside_a_character_is_reported() {
        let ev = |s, e| vec![Evidence { doc_id: "a".into(), start: s, end: e }];
        let err = Corpus::new(vec![doc("a", "héllo")], vec![query(&["a"], ev(0, 99))], Path::new("x")).unwrap_err();
        assert!(err.to_string().contains("outside the text"), "{err}");
        let err = Corpus::new(vec![doc("a", "héllo")], vec![query(&["a"], ev(0, 2))], Path::new("x")).unwrap_err();
        assert!(err.to_string().contains("character boundaries"), "{err}");
    }
}
