//! arbor-experiments: the experiment schema ([`experiment::Experiment`], RON), the run pipeline
//! ([`run::run`], [`run::evaluate_only`]), the content-keyed artefact cache ([`cache`]), one home per retrieval method
//! ([`methods`]), the summariser they share ([`summaries`]), the record of trained models ([`trained`]) and the command-line entry
//! points behind the `train`, `evaluate` and `arbor` binaries.

pub mod alloc;
pub mod artefact;
pub mod bench_step;
pub mod cache;
pub mod cli;
pub mod compare;
pub mod data_check;
pub mod embed;
pub mod experiment;
pub mod export;
pub mod init_model;
pub mod inspect;
pub mod leakage;
pub mod leaves;
pub mod library;
pub mod methods;
pub mod progress;
pub mod protocol;
pub mod provenance;
pub mod run;
pub mod source_state;
pub mod stored;
pub mod summaries;
pub mod trace;
pub mod trained;
pub mod validation;
