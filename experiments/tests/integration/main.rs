//! The experiments crate's integration tests, one binary: one release link instead of one per file, and
//! the slow tests (each trains a model on the committed fixture) share the cores under one harness.
//! Every test runs with the workspace root as its working directory (experiment files name fixtures from it).

mod common;
mod finetune;
mod library;
mod pipeline;
mod rerank;
