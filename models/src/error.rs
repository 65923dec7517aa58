//! Errors of model loading: each names the file at fault and, where it helps, how to fix it.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} is missing. {hint}")]
    Missing { path: PathBuf, hint: String },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot fetch the default encoder: {0}")]
    Fetch(String),
}

impl ModelError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        ModelError::Io { path: path.to_owned(), source }
    }

    pub fn weights(path: &Path, message: impl Into<String>) -> Self {
        ModelError::Invalid { path: path.to_owned(), message: message.into() }
    }
}
