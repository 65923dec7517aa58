//! The crate's unit tests, one module per source file they test: here rather than in the files, so that
//! `cargo test` compiles the crate once (its lib in test mode was a second copy of the whole crate, about
//! 200 s of a clean build's compiler time) and they see its public API as a caller does.

mod alloc;
mod bench_step;
mod cache;
mod experiment;
mod inspect_page;
mod leakage;
mod library_serve;
mod methods;
mod methods_controls;
mod methods_exemplars;
mod methods_rse;
mod methods_smartchunk_plan;
mod methods_sproutrag;
mod methods_summary_chunks;
mod methods_training;
mod provenance;
mod run;
mod summaries;
mod summaries_endpoint;
mod validation;
