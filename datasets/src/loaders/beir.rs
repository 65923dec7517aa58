//! BEIR folders (Thakur et al., 2021): `corpus.jsonl` ({_id, title, text}), `queries.jsonl` ({_id, text})
//! and `qrels/<split>.tsv` (query-id, corpus-id, score, with a header line). Gold evidence is each
//! relevant document (score > 0) as a whole; a query's `doc_ids` are those documents, so BEIR is meant to
//! be evaluated with corpus-wide scope.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Deserialize;

use crate::corpus::{Corpus, Document, Evidence, Query};
use crate::error::DataError;

#[derive(Deserialize)]
struct BeirDoc {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    title: String,
    text: String,
}

#[derive(Deserialize)]
struct BeirQuery {
    #[serde(rename = "_id")]
    id: String,
    text: String,
}

/// Reads a BEIR folder; only queries with a relevant document in `qrels/<split>.tsv` are kept.
pub fn load_beir(dir: &Path, split: &str) -> Result<Corpus, DataError> {
    let docs: Vec<BeirDoc> = super::read_jsonl(&dir.join("corpus.jsonl"))?;
    let raw_queries: Vec<BeirQuery> = super::read_jsonl(&dir.join("queries.jsonl"))?;
    let qrels_path = dir.join("qrels").join(format!("{split}.tsv"));
    let qrels = crate::error::read_utf8(&qrels_path)?;
    let mut relevant: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, line) in qrels.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        if i == 0 && fields.first().is_some_and(|f| f.contains("query")) || line.trim().is_empty() {
            continue;
        }
        let [qid, did, score] = fields[..] else {
            return Err(DataError::Parse { path: qrels_path, line: i + 1, column: 1, message: "expected query-id, corpus-id, score".into() });
        };
        let score: f64 = score.trim().parse().map_err(|_| DataError::Parse {
            path: qrels_path.clone(),
            line: i + 1,
            column: qid.len() + did.len() + 3,
            message: format!("score {score:?} is not a number"),
        })?;
        if score > 0.0 {
            relevant.entry(qid.to_owned()).or_default().push(did.to_owned());
        }
    }
    let documents: Vec<Document> =
        docs.into_iter().map(|d| Document { id: d.id, title: d.title, text: d.text, sections: vec![], split: None }).collect();
    let lengths: HashMap<&str, usize> = documents.iter().map(|d| (d.id.as_str(), d.text.len())).collect();
    let mut queries = Vec::new();
    for q in raw_queries {
        let Some(dids) = relevant.remove(&q.id) else { continue };
        let evidence = dids
            .iter()
            .map(|d| {
                let end = *lengths
                    .get(d.as_str())
                    .ok_or_else(|| DataError::invalid(&qrels_path, format!("query {:?} names unknown document {d:?}", q.id)))?;
                Ok(Evidence { doc_id: d.clone(), start: 0, end })
            })
            .collect::<Result<_, DataError>>()?;
        queries.push(Query { id: q.id, text: q.text, doc_ids: dids, evidence, answers: vec![], split: Some(split.to_owned()) });
    }
    if let Some(qid) = relevant.keys().next() {
        return Err(DataError::invalid(&qrels_path, format!("query {qid:?} is not in queries.jsonl")));
    }
    Corpus::new(documents, queries, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relevant_documents_are_whole_document_gold() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("corpus.jsonl"), "{\"_id\": \"d1\", \"title\": \"T\", \"text\": \"abc\"}\n{\"_id\": \"d2\", \"text\": \"hello\"}\n")
            .unwrap();
        std::fs::write(p.join("queries.jsonl"), "{\"_id\": \"q1\", \"text\": \"hi\"}\n{\"_id\": \"q2\", \"text\": \"x\"}\n").unwrap();
        std::fs::create_dir(p.join("qrels")).unwrap();
        std::fs::write(p.join("qrels/test.tsv"), "query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td1\t0\n").unwrap();
        let c = load_beir(p, "test").unwrap();
        assert_eq!(c.queries.len(), 1);
        assert_eq!(c.queries[0].evidence, vec![Evidence { doc_id: "d2".into(), start: 0, end: 5 }]);
        std::fs::write(p.join("qrels/test.tsv"), "query-id\tcorpus-id\tscore\nq1\td9\t1\n").unwrap();
        let err = load_beir(p, "test").unwrap_err().to_string();
        assert!(err.contains("unknown document \"d9\""), "{err}");
    }
}
