//! Tree build time vs document size, and beam-search latency per query (a table, not a timed test).
//!
//!     cargo bench --profile release -p arbor-eval --bench tree
//!
//! `--profile release`: the build users run (the bench profile inherits it unchanged since stop 78).
//!
//! Random symmetric similarities and 384-d leaf embeddings (all-MiniLM-L6-v2's width); each figure is
//! the best of 3 builds and the mean over 200 queries.

use std::time::Instant;

use arbor_datasets::{DocSpan, Span};
use arbor_eval::retrievers::beam::{BeamConfig, Layers, beam_search, collapsed};
use arbor_eval::structures::tree::{Similarity, Tree};

const DIM: usize = 384;

/// A small deterministic generator (xorshift), so the table is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

fn main() {
    println!("| units | tree build (ms) | beam search b=5 (ms/query) | collapsed tree (ms/query) |");
    println!("|---|---|---|---|");
    for n in [250, 1000, 4000] {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ n as u64);
        let mut m = vec![0.0f32; n * n];
        for i in 0..n {
            for j in i + 1..n {
                let v = rng.next();
                m[i * n + j] = v;
                m[j * n + i] = v;
            }
        }
        let emb: Vec<f32> = (0..n * DIM).map(|_| rng.next()).collect();
        let leaves: Vec<DocSpan> = (0..n).map(|i| DocSpan { doc: 0, span: Span::new(i * 10, i * 10 + 9) }).collect();
        let mut best = f64::INFINITY;
        let mut tree = None;
        for _ in 0..3 {
            let start = Instant::now();
            tree = Some(Tree::build(leaves.clone(), &emb, DIM, &Similarity::Dense { n, values: &m }));
            best = best.min(start.elapsed().as_secs_f64() * 1e3);
        }
        let tree = tree.expect("built");
        let queries: Vec<Vec<f32>> = (0..200).map(|_| (0..DIM).map(|_| rng.next()).collect()).collect();
        let time = |f: &dyn Fn(&[f32])| {
            let start = Instant::now();
            for q in &queries {
                f(q);
            }
            start.elapsed().as_secs_f64() * 1e3 / queries.len() as f64
        };
        let beam = time(&|q| {
            std::hint::black_box(beam_search(&tree, q, &BeamConfig::default(), 10));
        });
        let flat = time(&|q| {
            std::hint::black_box(collapsed(&tree, q, Layers::All, 10));
        });
        println!("| {n} | {best:.1} | {beam:.3} | {flat:.3} |");
    }
}
