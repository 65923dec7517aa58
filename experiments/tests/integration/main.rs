//! The experiments crate's integration tests, one binary: one release link instead of one per file, and
//! the slow tests (each trains a model on the committed fixture) share the cores under one harness.
//! Every test runs with the workspace root as its working directory (experiment files name fixtures from it).
//!
//! The harness starts tests in the order of their names, two at a time on two cores, so where a slow test
//! sits decides how long the binary runs: the reranker's (87 s) lives in `finetune::rerank`, which starts
//! it early, beside the others, instead of last and alone (measured with `--report-time`: 324 s as
//! `rerank::`, about 290 s here; the reranker is a fine-tuned model too).
//!
//! `unit` holds the crate's unit tests, one module per source file (the lib is built without a test
//! harness: its test-mode copy of the whole crate cost about 200 s of a clean build on 2 cores).

mod common;
mod finetune;
mod hierarchy;
mod library;
mod pipeline;
mod protocol;
mod serve;
mod unit;
