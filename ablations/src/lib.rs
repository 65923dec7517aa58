//! arbor-ablations: sweeps over experiment fields (`ablate`: beam width, delta, lambda, aggregation,
//! linkage, leaf size) and the papers' tables regenerated beside their own numbers (`reproduce`).
//!
//! Nothing lives here yet: the ablation issue brings the sweep runner.
