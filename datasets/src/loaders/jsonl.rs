//! arbor's own corpus format: a folder with `documents.jsonl` and `queries.jsonl` (docs/your-data.md, "Your own data").

use std::path::Path;

use crate::corpus::{Corpus, Document, Query};
use crate::error::DataError;

/// Reads `dir/documents.jsonl` and `dir/queries.jsonl`.
pub fn load_jsonl(dir: &Path) -> Result<Corpus, DataError> {
    let documents: Vec<Document> = super::read_jsonl(&dir.join("documents.jsonl"))?;
    let queries: Vec<Query> = super::read_jsonl(&dir.join("queries.jsonl"))?;
    Corpus::new(documents, queries, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, docs: &[u8], queries: &[u8]) {
        std::fs::write(dir.join("documents.jsonl"), docs).unwrap();
        std::fs::write(dir.join("queries.jsonl"), queries).unwrap();
    }

    #[test]
    fn reads_documents_and_queries() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            br#"{"id": "a", "title": "A", "text": "One. Two.", "sections": [{"title": "S", "start": 0, "end": 4, "level": 1}]}"#,
            br#"{"id": "q", "text": "?", "doc_ids": ["a"], "evidence": [{"doc_id": "a", "start": 5, "end": 9}], "answers": ["Two"], "split": "test"}"#,
        );
        let c = load_jsonl(dir.path()).unwrap();
        assert_eq!(c.documents[0].sections[0].title, "S");
        assert_eq!(c.queries[0].split.as_deref(), Some("test"));
    }

    #[test]
    fn malformed_json_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), b"{\"id\": \"a\", \"text\": \"x\"}\n\n{\"id\": \"b\", \"text\": }\n", b"");
        let err = load_jsonl(dir.path()).unwrap_err().to_string();
        assert!(err.contains("documents.jsonl:3:"), "{err}");
    }

    #[test]
    fn non_utf8_file_is_reported_with_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), b"{\"id\": \"a\", \"text\": \"caf\xe9\"}\n", b"");
        let err = load_jsonl(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not valid UTF-8") && err.contains("offset 24"), "{err}");
    }

    #[test]
    fn missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = load_jsonl(dir.path()).unwrap_err().to_string();
        assert!(err.contains("documents.jsonl"), "{err}");
    }
}
