//! arbor-datasets: one span-based model for every corpus arbor reads.
//!
//! - [`Corpus`] holds [`Document`]s (id, title, text, optional [`Section`] tree with byte spans) and
//!   [`Query`]s (id, text, doc ids, gold [`Evidence`] as byte spans, answers, split).
//! - [`loaders`] read arbor JSONL, SQuAD v1.1, QASPER (v0.3 and Hugging Face layouts), BEIR folders and
//!   LegalBench-RAG as published; [`recursive_split`] is LegalBench-RAG's baseline chunker (LangChain's).
//! - [`sentences`] splits text into sentences with byte spans; [`units`] groups them into leaf units of at
//!   most N sentences (and at most a token limit, counted with [`tokens::TokenStarts`]) that never cross
//!   a paragraph or a section.
//!
//! A [`Span`] is always a UTF-8 byte range into a document's original `text` (ARCHITECTURE.md, "The metric contract": every method
//! returns spans and every metric is computed on spans).

pub mod corpus;
pub mod error;
pub mod headings;
pub mod loaders;
pub mod merge_pairs;
pub mod recursive_split;
pub mod sentences;
pub mod span;
pub mod tokens;
pub mod units;

pub use corpus::{Corpus, Document, Evidence, Query, Section};
pub use error::DataError;
pub use span::{DocSpan, Span};
pub use tokens::TokenStarts;
pub use units::{Paragraph, Unit, UnitConfig, UnitError};
