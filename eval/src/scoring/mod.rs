//! Scoring every method the same way: [`metrics`] (the metric contract on spans), [`characters`] (LegalBench-RAG's precision and recall on characters), [`budget`] (the token
//! budget), [`parents`] (items handed on as the cut sentence or paragraph they lie in), [`columns`] (the metric columns every table prints), [`runner`] (one method over every query), [`stats`] (paired intervals and p-values),
//! [`report`] (report.md and report.json), [`retrievals`] (what each method handed on, per query) and
//! [`across`] (the same rows of two runs, paired).

pub mod across;
pub mod budget;
pub mod characters;
pub mod columns;
pub mod metrics;
pub mod parents;
pub mod report;
pub mod retrievals;
pub mod runner;
pub mod stats;
