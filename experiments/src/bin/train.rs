//! `train FILE.ron [--out DIR] [--resume]`: trains the experiment's methods, then evaluates them. Methods
//! without training (flat, BM25) are evaluated directly.

use clap::Parser;

// mimalloc reuses the large tensor buffers that glibc's malloc maps and unmaps on every op (about 20 %
// faster encoding here).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    arbor_experiments::alloc::keep_freed_memory();
    arbor_experiments::cli::train(&arbor_experiments::cli::TrainArgs::parse())
}
