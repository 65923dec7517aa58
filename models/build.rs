//! Records the optimisation level this crate is compiled at (cargo hands a build script its package's
//! `OPT_LEVEL` under the profile being built, per-package overrides included), so that the encoder
//! benchmark can refuse to time a build slower than the one users run
//! ([`arbor_models::processor::OPT_LEVEL`]).

fn main() {
    println!("cargo:rustc-env=ARBOR_MODELS_OPT_LEVEL={}", std::env::var("OPT_LEVEL").unwrap_or_default());
    println!("cargo:rerun-if-changed=build.rs");
}
