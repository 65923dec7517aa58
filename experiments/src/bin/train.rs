//! `train FILE.ron [--out DIR]`: trains the experiment's methods, then evaluates them. Methods without
//! training (flat, BM25) are evaluated directly.

use clap::Parser;

// mimalloc reuses the large tensor buffers that glibc's malloc maps and unmaps on every op (about 20 %
// faster encoding here).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    arbor_experiments::cli::run_experiment(&arbor_experiments::cli::RunArgs::parse())
}
