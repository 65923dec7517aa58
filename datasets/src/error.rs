//! Errors of corpus loading: each names the file, and the line where there is one.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} is not valid UTF-8 (first bad byte at offset {offset})")]
    NotUtf8 { path: PathBuf, offset: usize },
    #[error("{path}:{line}:{column}: {message}")]
    Parse { path: PathBuf, line: usize, column: usize, message: String },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

impl DataError {
    pub fn invalid(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        DataError::Invalid { path: path.into(), message: message.into() }
    }
}

/// Reads a whole file as UTF-8, naming the file (and the offset of the first bad byte) on failure.
pub fn read_utf8(path: &std::path::Path) -> Result<String, DataError> {
    let bytes = std::fs::read(path).map_err(|source| DataError::Io { path: path.to_owned(), source })?;
    String::from_utf8(bytes).map_err(|e| DataError::NotUtf8 { path: path.to_owned(), offset: e.utf8_error().valid_up_to() })
}

/// A serde_json error located in `path`, with `line_offset` added when the text was one line of a larger file.
pub fn json_error(path: &std::path::Path, line_offset: usize, e: &serde_json::Error) -> DataError {
    DataError::Parse {
        path: path.to_owned(),
        line: e.line() + line_offset,
        column: e.column(),
        // serde_json appends " at line L column C"; the line is reported ourselves, relative to the file.
        message: e.to_string().split(" at line ").next().unwrap_or_default().to_owned(),
    }
}
