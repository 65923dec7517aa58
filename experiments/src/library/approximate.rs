//! The approximate index a large index keeps beside it (`INDEX.hnsw`, arbor-store's `approximate`):
//! `arbor index --approximate` keeps it in line with the stored units, and `arbor query` / `arbor serve`
//! search through it (as the methods' [`Neighbours`] over the opened index's units) unless `--exact`.
//! Exact search stays the default below [`APPROXIMATE_FROM`] units, where it answers within 20 ms a
//! question on 2 cores (RESULTS.md, "Your own documents at a million units").

use std::path::Path;

use arbor_eval::retrievers::approximate::Neighbours;
use arbor_store::Store;
use arbor_store::approximate::{Approximate, Graph, Refreshed, path_of};
use clap::{Args, ValueEnum};

/// From this many units `arbor index` keeps an approximate index unless told `--approximate off`.
pub const APPROXIMATE_FROM: usize = 100_000;

/// Whether `arbor index` keeps an approximate index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Approximating {
    /// From 100,000 units, and whenever the index keeps one already
    #[default]
    Auto,
    /// Always
    On,
    /// Never (an approximate index kept is removed)
    Off,
}

/// The search option `query` and `serve` share.
#[derive(Debug, Clone, Args)]
pub struct SearchArgs {
    /// Search exactly even where the index keeps an approximate index (`arbor index --approximate`)
    #[arg(long)]
    pub exact: bool,
}

/// Brings the approximate index beside `path` in line with `store` as `how` asks; what it did, for the user.
pub fn keep(path: &Path, store: &Store, how: Approximating) -> anyhow::Result<Option<String>> {
    let kept = path_of(path).exists();
    let units = store.unit_ids_sorted()?.len();
    let wanted = match how {
        Approximating::On => true,
        Approximating::Off => false,
        Approximating::Auto => kept || units >= APPROXIMATE_FROM,
    };
    if !wanted {
        return Ok(Approximate::remove(path)?.then(|| format!("removed the approximate index {}", path_of(path).display())));
    }
    let t = std::time::Instant::now();
    let done = Approximate::refresh(path, store, Graph::default())?;
    let secs = t.elapsed().as_secs_f64();
    let file = path_of(path);
    Ok(match done {
        Refreshed::Unchanged => None,
        Refreshed::Updated { added, removed } => Some(format!("{}: {added} units added, {removed} removed in {secs:.1} s", file.display())),
        Refreshed::Built { units } => Some(format!("built the approximate index {} over {units} units in {secs:.1} s", file.display())),
    })
}

/// An opened approximate index over the opened index's units (positions in load order).
pub struct Nearest {
    graph: Approximate,
    /// `(unit row id, position)`, by id.
    by_id: Vec<(i64, usize)>,
}

impl Nearest {
    /// The approximate index beside `path`, when it keeps a fresh one and `exact` is not asked; a stale or
    /// damaged one is said on standard error and exact search used.
    pub fn open(path: &Path, store: &Store, exact: bool) -> anyhow::Result<Option<Self>> {
        if exact {
            return Ok(None);
        }
        match Approximate::open(path, store)? {
            Ok(graph) => {
                let mut by_id: Vec<(i64, usize)> = store.unit_ids()?.into_iter().enumerate().map(|(p, id)| (id, p)).collect();
                by_id.sort_unstable();
                Ok(Some(Nearest { graph, by_id }))
            }
            Err(why) => {
                if path_of(path).exists() {
                    eprintln!("{why}; searching exactly");
                }
                Ok(None)
            }
        }
    }

    fn position(&self, id: i64) -> Option<usize> {
        self.by_id.binary_search_by_key(&id, |&(i, _)| i).ok().map(|at| self.by_id[at].1)
    }
}

impl Neighbours for Nearest {
    fn nearest(&self, query: &[f32], count: usize, keep: Option<&(dyn Fn(usize) -> bool + Sync)>) -> Vec<usize> {
        let by_id = keep.map(|keep| move |id: i64| self.position(id).is_some_and(keep));
        let ids = self
            .graph
            .nearest(query, count, by_id.as_ref().map(|f| f as &dyn Fn(i64) -> bool))
            // Opening checked the graph's width against the index's, which every query vector has.
            .expect("an approximate index searched with a vector of its width");
        ids.into_iter().filter_map(|id| self.position(id)).collect()
    }
}

#[cfg(test)]
mod tests {
    use arbor_store::{DocumentRow, Meta};

    use super::*;

    /// Units of a document stored first (key "b", lower row ids) come after those of "a" in the opened
    /// index (documents by key): the graph's ids are read back as the opened index's positions.
    #[test]
    fn the_graph_answers_in_the_opened_index_positions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.arbor");
        let mut store = Store::open(&path).unwrap();
        let meta = Meta {
            arbor_version: "0".into(),
            encoder: "e".into(),
            units: "{}".into(),
            dim: 2,
            trees: String::new(),
            raptor: String::new(),
            model: String::new(),
        };
        store.set_meta(&meta).unwrap();
        let doc =
            |key: &str, first: f32| DocumentRow::of_vectors(key, (0..10).map(|u| first + u as f32 / 10.0).map(|a| vec![a.cos(), a.sin()]).collect());
        store.put(&doc("b", 0.0), "t").unwrap();
        store.put(&doc("a", 2.0), "t").unwrap();
        keep(&path, &store, Approximating::On).unwrap();
        assert!(Nearest::open(&path, &store, true).unwrap().is_none(), "--exact");
        let nearest = Nearest::open(&path, &store, false).unwrap().unwrap();
        // Nearest the angle 0.3: b's unit 3, at position 10 + 3.
        assert_eq!(nearest.nearest(&[0.3f32.cos(), 0.3f32.sin()], 1, None), vec![13]);
        // Only a's units (positions 0..10): its first, at angle 2.0, is the nearest of them.
        let of_a = |p: usize| p < 10;
        assert_eq!(nearest.nearest(&[0.3f32.cos(), 0.3f32.sin()], 1, Some(&of_a)), vec![0]);
    }
}
