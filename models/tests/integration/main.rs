//! arbor-models' tests of its public API, compiled into the library's own test harness (src/lib.rs,
//! `mod integration`; Cargo.toml's `autotests = false`): each test crate monomorphises Burn's generic
//! kernels anew in a release build, so these share the library's.

mod families;
mod grad;
mod kernels;
mod parity;
mod pooling;
mod reranker;
mod tokens;
mod unit_attention;
