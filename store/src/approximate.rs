//! The approximate nearest-neighbour index kept beside a large index (`INDEX.hnsw`): a USearch HNSW graph
//! over every stored unit vector, keyed by the unit's row id in the SQLite file, for corpus-scope dense
//! search at a million units where exact search is past 20 ms a question (`arbor index --approximate`).
//!
//! One file, written whole to a temporary name and renamed over the old one, so a kill leaves the old
//! graph or the new one, never half of either:
//!
//! ```text
//! ARBOR-HNSW 1\n
//! {header JSON}\n      format, graph settings, the encoder and model the vectors came from, dim, and the
//!                      unit ids it holds (sorted, as [first, last] runs)
//! USearch's own serialisation of the graph and its vectors
//! ```
//!
//! A graph whose header does not match the store (its generation, so any unit added, removed or stored
//! anew since; another encoder or model) is stale: [`Approximate::open`] says why and the caller searches
//! exactly; [`Approximate::refresh`] brings it in line, adding and removing the units that changed, or
//! building it again when most did.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use crate::{Meta, Store, from_le};

const MAGIC: &[u8] = b"ARBOR-HNSW 1\n";

/// The graph's settings: USearch's defaults for connectivity, a wider construction beam. Its vectors are
/// kept as 8-bit codes (a quarter of float32's memory; the candidates are scored again on the stored
/// float32 vectors): built without USearch's `numkong` kernels (3 minutes of compiling), 8-bit codes
/// build the graph faster than half or full precision (37 s against 124 and 41 s for 100,000 units).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graph {
    pub connectivity: usize,
    pub expansion_add: usize,
    pub expansion_search: usize,
}

impl Default for Graph {
    fn default() -> Self {
        Graph { connectivity: 16, expansion_add: 128, expansion_search: 64 }
    }
}

/// What the file's header records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Header {
    graph: Graph,
    encoder: String,
    model: String,
    dim: usize,
    /// The unit ids held, as sorted `[first, last]` runs.
    ids: Vec<[i64; 2]>,
    /// The store's generation it was built or refreshed at ([`Store::generation`]); `None` in a graph
    /// written before generations were kept (ids could be reused then: such a graph is built again).
    #[serde(default)]
    generation: Option<u64>,
}

/// An opened graph.
pub struct Approximate {
    index: Index,
    header: Header,
}

impl std::fmt::Debug for Approximate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approximate").field("units", &self.len()).field("graph", &self.header.graph).finish()
    }
}

/// The graph file of the index at `path`.
pub fn path_of(index: &Path) -> PathBuf {
    let mut name = index.as_os_str().to_owned();
    name.push(".hnsw");
    PathBuf::from(name)
}

/// What [`Approximate::refresh`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refreshed {
    Unchanged,
    Updated { added: usize, removed: usize },
    Built { units: usize },
}

impl Approximate {
    /// The graph beside the index at `path`, if there is one and it holds exactly the store's units as
    /// embedded now; `Err` says why it cannot be used (absent, damaged or stale).
    pub fn open(path: &Path, store: &Store) -> anyhow::Result<Result<Self, String>> {
        let file = path_of(path);
        if !file.exists() {
            return Ok(Err(format!("{} has no approximate index", path.display())));
        }
        let Some(meta) = store.meta()? else { return Ok(Err("the index holds no document".into())) };
        let graph = match Self::read(&file) {
            Ok(g) => g,
            Err(e) => return Ok(Err(format!("{} is damaged ({e:#}): run `arbor index` again to rebuild it", file.display()))),
        };
        if !graph.matches(&meta) || graph.header.generation != Some(store.generation()?) || graph.header.ids != runs(&store.unit_ids_sorted()?) {
            return Ok(Err(format!("{} is older than the index: run `arbor index` again to refresh it", file.display())));
        }
        Ok(Ok(graph))
    }

    fn read(file: &Path) -> anyhow::Result<Self> {
        let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let rest = bytes.strip_prefix(MAGIC).context("not an arbor HNSW file")?;
        let line = rest.iter().position(|&b| b == b'\n').context("no header")?;
        let header: Header = serde_json::from_slice(&rest[..line]).context("its header is damaged")?;
        let index = Index::new(&options(header.dim, header.graph))?;
        index.load_from_buffer(&rest[line + 1..]).map_err(|e| anyhow::anyhow!("USearch cannot load it: {e}"))?;
        anyhow::ensure!(
            index.size() == header.ids.iter().map(|[a, b]| (b - a + 1) as usize).sum::<usize>(),
            "it holds other units than its header says"
        );
        Ok(Approximate { index, header })
    }

    fn matches(&self, meta: &Meta) -> bool {
        self.header.encoder == meta.encoder && self.header.model == meta.model && self.header.dim == meta.dim
    }

    /// Brings the graph beside the index at `path` in line with `store` (building it when there is none,
    /// or when it was made from other vectors or most units changed), and writes it.
    pub fn refresh(path: &Path, store: &Store, graph: Graph) -> anyhow::Result<Refreshed> {
        let meta = store.meta()?.context("the index holds no document")?;
        let ids = store.unit_ids_sorted()?;
        let file = path_of(path);
        let generation = store.generation()?;
        let old = file
            .exists()
            .then(|| Self::read(&file).ok())
            .flatten()
            .filter(|g| g.matches(&meta) && g.header.graph == graph && g.header.generation.is_some());
        let held = old.as_ref().map(|g| expand(&g.header.ids)).unwrap_or_default();
        let gone: Vec<i64> = held.iter().copied().filter(|id| ids.binary_search(id).is_err()).collect();
        let new: Vec<i64> = ids.iter().copied().filter(|id| held.binary_search(id).is_err()).collect();
        let header =
            Header { graph, encoder: meta.encoder.clone(), model: meta.model.clone(), dim: meta.dim, ids: runs(&ids), generation: Some(generation) };
        let (graph, done) = match old {
            Some(g) if gone.is_empty() && new.is_empty() && g.header.generation == Some(generation) => return Ok(Refreshed::Unchanged),
            // Unit ids are never reused (the store's AUTOINCREMENT), so the ids tell every unit changed.
            Some(g) if gone.len() + new.len() < ids.len() / 2 => {
                for &id in &gone {
                    g.index.remove(id as u64).map_err(|e| anyhow::anyhow!("USearch: {e}"))?;
                }
                add(&g.index, store, &new)?;
                (Approximate { header, ..g }, Refreshed::Updated { added: new.len(), removed: gone.len() })
            }
            stale => {
                // The old graph (if any) freed before the new one is built: one graph in memory at a time.
                drop(stale);
                let index = Index::new(&options(meta.dim, graph))?;
                add(&index, store, &ids)?;
                (Approximate { index, header }, Refreshed::Built { units: ids.len() })
            }
        };
        graph.write(&file)?;
        Ok(done)
    }

    fn write(&self, file: &Path) -> anyhow::Result<()> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend(serde_json::to_vec(&self.header)?);
        bytes.push(b'\n');
        let at = bytes.len();
        bytes.resize(at + self.index.serialized_length(), 0);
        self.index.save_to_buffer(&mut bytes[at..]).map_err(|e| anyhow::anyhow!("USearch cannot save the graph: {e}"))?;
        let tmp = file.with_extension("hnsw.tmp");
        std::fs::write(&tmp, &bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, file).with_context(|| format!("cannot write {}", file.display()))
    }

    /// Removes the graph beside the index at `path`; whether there was one.
    pub fn remove(path: &Path) -> anyhow::Result<bool> {
        let file = path_of(path);
        if !file.exists() {
            return Ok(false);
        }
        std::fs::remove_file(&file).with_context(|| format!("cannot remove {}", file.display()))?;
        Ok(true)
    }

    /// The ids of the (about) `count` units nearest `query` by cosine that `keep` accepts, nearest first.
    pub fn nearest(&self, query: &[f32], count: usize, keep: Option<&dyn Fn(i64) -> bool>) -> anyhow::Result<Vec<i64>> {
        let found = match keep {
            None => self.index.search(query, count),
            Some(keep) => self.index.filtered_search(query, count, |key| keep(key as i64)),
        };
        Ok(found.map_err(|e| anyhow::anyhow!("USearch: {e}"))?.keys.into_iter().map(|k| k as i64).collect())
    }

    /// How many units it holds.
    pub fn len(&self) -> usize {
        self.index.size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn graph(&self) -> Graph {
        self.header.graph
    }
}

fn options(dim: usize, graph: Graph) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        quantization: ScalarKind::I8,
        connectivity: graph.connectivity,
        expansion_add: graph.expansion_add,
        expansion_search: graph.expansion_search,
        multi: false,
    }
}

/// Adds the units `ids` (sorted) with their stored vectors, on every core.
fn add(index: &Index, store: &Store, ids: &[i64]) -> anyhow::Result<()> {
    use rayon::prelude::*;
    let Some(&first) = ids.first() else { return Ok(()) };
    index.reserve(index.size() + ids.len()).map_err(|e| anyhow::anyhow!("USearch: {e}"))?;
    // In slices, so that a million units' vectors are not all read at once.
    let mut from = first;
    loop {
        let batch = store.unit_vectors_from(from, 50_000)?;
        let Some(&(last, _)) = batch.last() else { return Ok(()) };
        batch
            .par_iter()
            .filter(|(id, _)| ids.binary_search(id).is_ok())
            .try_for_each(|(id, v)| index.add(*id as u64, &from_le::<f32>(v)).map_err(|e| anyhow::anyhow!("USearch cannot add unit {id}: {e}")))?;
        from = last + 1;
    }
}

/// Sorted ids as `[first, last]` runs of consecutive ids.
fn runs(ids: &[i64]) -> Vec<[i64; 2]> {
    let mut out: Vec<[i64; 2]> = Vec::new();
    for &id in ids {
        match out.last_mut() {
            Some(run) if run[1] + 1 == id => run[1] = id,
            _ => out.push([id, id]),
        }
    }
    out
}

fn expand(runs: &[[i64; 2]]) -> Vec<i64> {
    runs.iter().flat_map(|&[a, b]| a..=b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DocumentRow;

    #[test]
    fn runs_of_ids_round_trip() {
        let ids = vec![1, 2, 3, 7, 9, 10];
        assert_eq!(runs(&ids), vec![[1, 3], [7, 7], [9, 10]]);
        assert_eq!(expand(&runs(&ids)), ids);
        assert!(runs(&[]).is_empty());
    }

    /// Document `key` of `n` units whose vectors point at angles `first + u / 10` (in the plane of the
    /// first two of 8 components).
    fn doc(key: &str, first: f32, n: usize) -> DocumentRow {
        let at = |a: f32| [a.cos(), a.sin(), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0].to_vec();
        DocumentRow::of_vectors(key, (0..n).map(|u| at(first + u as f32 / 10.0)).collect())
    }

    fn store(path: &Path) -> Store {
        let mut store = Store::open(path).unwrap();
        let meta = Meta {
            arbor_version: "0".into(),
            encoder: "enc".into(),
            units: "{}".into(),
            dim: 8,
            trees: String::new(),
            raptor: String::new(),
            model: String::new(),
        };
        store.set_meta(&meta).unwrap();
        store
    }

    /// The stored vector of unit `id`.
    fn angle_of(store: &Store, id: i64) -> f32 {
        let v = from_le::<f32>(&store.unit_vectors_from(id, 1).unwrap()[0].1);
        v[1].atan2(v[0])
    }

    #[test]
    fn the_graph_follows_the_store_and_a_stale_or_damaged_one_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.arbor");
        let mut s = store(&path);
        s.put(&doc("a", 0.0, 20), "t").unwrap();
        s.put(&doc("b", 0.05, 20), "t").unwrap();
        assert!(Approximate::open(&path, &s).unwrap().is_err(), "none yet");
        assert_eq!(Approximate::refresh(&path, &s, Graph::default()).unwrap(), Refreshed::Built { units: 40 });
        assert_eq!(Approximate::refresh(&path, &s, Graph::default()).unwrap(), Refreshed::Unchanged);
        let graph = Approximate::open(&path, &s).unwrap().unwrap();
        assert_eq!(graph.len(), 40);
        // Nearest to the angle 1.02: units at 1.0 (a's 11th) and 1.05 (b's 11th), then 0.95 and 1.1.
        let q = [1.02f32.cos(), 1.02f32.sin(), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let angles: Vec<f32> = graph.nearest(&q, 2, None).unwrap().iter().map(|&id| angle_of(&s, id)).collect();
        assert!((angles[0] - 1.0).abs() < 1e-4 && (angles[1] - 1.05).abs() < 1e-4, "{angles:?}");
        // Only b's units.
        let b: Vec<i64> = s.unit_ids().unwrap()[20..].to_vec();
        let of_b = |id: i64| b.contains(&id);
        let got = graph.nearest(&q, 3, Some(&of_b)).unwrap();
        assert!(got.iter().all(|id| b.contains(id)) && got.len() == 3, "{got:?}");
        drop(graph);

        // A document added: the graph is stale until refreshed, then holds its units too.
        s.put(&doc("c", 3.0, 5), "t").unwrap();
        assert!(Approximate::open(&path, &s).unwrap().unwrap_err().contains("older than the index"));
        assert_eq!(Approximate::refresh(&path, &s, Graph::default()).unwrap(), Refreshed::Updated { added: 5, removed: 0 });
        let q = [3.0f32.cos(), 3.0f32.sin(), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let graph = Approximate::open(&path, &s).unwrap().unwrap();
        assert_eq!(angle_of(&s, graph.nearest(&q, 1, None).unwrap()[0]), 3.0);
        drop(graph);
        // Removed: its units leave the graph.
        s.remove("c").unwrap();
        assert_eq!(Approximate::refresh(&path, &s, Graph::default()).unwrap(), Refreshed::Updated { added: 0, removed: 5 });
        let graph = Approximate::open(&path, &s).unwrap().unwrap();
        assert_eq!(graph.len(), 40);
        assert!(graph.nearest(&q, 40, None).unwrap().iter().all(|&id| angle_of(&s, id) < 3.0));
        drop(graph);

        // A damaged file is not used, and is built again.
        let file = path_of(&path);
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
        assert!(Approximate::open(&path, &s).unwrap().unwrap_err().contains("damaged"));
        assert_eq!(Approximate::refresh(&path, &s, Graph::default()).unwrap(), Refreshed::Built { units: 40 });
        // Most units replaced: built again rather than updated.
        s.remove("a").unwrap();
        s.put(&doc("d", 2.0, 30), "t").unwrap();
        assert_eq!(Approximate::refresh(&path, &s, Graph::default()).unwrap(), Refreshed::Built { units: 50 });
        assert!(Approximate::remove(&path).unwrap() && !file.exists());
    }

    /// Issue 86: the last document stored again with as many units (ids SQLite reused before) leaves the
    /// graph stale until it is refreshed, and the refreshed graph finds the new vectors; a smaller change
    /// is an update.
    #[test]
    fn a_document_stored_again_with_as_many_units_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.arbor");
        let mut s = store(&path);
        s.put(&doc("a", 0.0, 20), "t").unwrap();
        s.put(&doc("b", 0.05, 20), "t").unwrap();
        s.put(&doc("c", 1.0, 5), "t").unwrap();
        Approximate::refresh(&path, &s, Graph::default()).unwrap();
        s.put(&doc("c", 3.0, 5), "t").unwrap();
        assert!(Approximate::open(&path, &s).unwrap().unwrap_err().contains("older than the index"));
        assert_eq!(Approximate::refresh(&path, &s, Graph::default()).unwrap(), Refreshed::Updated { added: 5, removed: 5 });
        let graph = Approximate::open(&path, &s).unwrap().unwrap();
        let q = [3.0f32.cos(), 3.0f32.sin(), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        assert_eq!(angle_of(&s, graph.nearest(&q, 1, None).unwrap()[0]), 3.0);
        drop(graph);
        // Stored anew once more: stale again, then refreshed and current.
        s.put(&doc("c", 2.0, 5), "t").unwrap();
        assert!(Approximate::open(&path, &s).unwrap().is_err());
        assert_ne!(Approximate::refresh(&path, &s, Graph::default()).unwrap(), Refreshed::Unchanged);
        let q = [2.0f32.cos(), 2.0f32.sin(), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        assert_eq!(angle_of(&s, Approximate::open(&path, &s).unwrap().unwrap().nearest(&q, 1, None).unwrap()[0]), 2.0);
    }
}
