//! `evaluate FILE.ron [--out DIR]`: evaluates the experiment's methods and writes a run folder.

use clap::Parser;

// mimalloc reuses the large tensor buffers that glibc's malloc maps and unmaps on every op (about 20 %
// faster encoding here).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    arbor_experiments::cli::run_experiment(&arbor_experiments::cli::RunArgs::parse())
}
