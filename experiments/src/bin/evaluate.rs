//! `evaluate FILE.ron [--out DIR] [--from RUN_DIR]`: evaluates the experiment's methods and writes a run
//! folder, training nothing; trained methods take their models from the run folder given with `--from`.

use clap::Parser;

// mimalloc reuses the large tensor buffers that glibc's malloc maps and unmaps on every op (about 20 %
// faster encoding here).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    arbor_experiments::alloc::keep_freed_memory();
    arbor_experiments::cli::evaluate(&arbor_experiments::cli::EvaluateArgs::parse())
}
