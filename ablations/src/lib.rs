//! arbor-ablations: what each design choice buys.
//!
//! - [`sweep`]: the sweep file (a base experiment and axes of overrides) and its expansion into runs;
//!   [`overrides`] sets experiment fields by path.
//! - [`runner`]: runs a sweep (each run a normal run folder; artefacts shared, so retrieval-only axes
//!   never retrain; finished runs reused), then [`table`] and [`plot`] write its table and SVG charts.
//! - [`reproduce`]: the papers' tables regenerated on our data, beside the papers' own numbers.

pub mod overrides;
pub mod plot;
pub mod reproduce;
pub mod runner;
pub mod sweep;
pub mod table;
