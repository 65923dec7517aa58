//! arbor-models' integration tests, one binary: each test crate monomorphises Burn's generic kernels
//! anew in a release build, so one crate compiles them once (and links once).

mod parity;
mod reranker;
mod tokens;
mod unit_attention;
