//! Content-addressed artefacts that runs share: unit and query embeddings, trained models, trees. Each
//! lives under `<root>/<kind>-<key>`, where the key hashes every setting that determines it, so a run
//! that needs an artefact with the same settings reuses it instead of recomputing it. A run keeps its
//! artefacts in its own folder; a sweep points all of its runs at one shared folder, so runs that differ
//! only in retrieval settings train once and index once (ablations). Files are written atomically, so an
//! interrupted run leaves complete files only, and the next one picks up what is there.

use std::path::PathBuf;

use anyhow::Context;
use arbor_datasets::{Corpus, UnitConfig};
use arbor_eval::{vectors_io, LeafIndex};
use arbor_models::{DefaultBackend, EncoderConfig, SentenceEncoder};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::experiment::DataConfig;
use crate::progress::bar;

pub struct Cache {
    pub root: PathBuf,
}

/// A short hex digest of the settings `parts` (their JSON form).
pub fn key(parts: &impl Serialize) -> String {
    let json = serde_json::to_vec(parts).expect("settings serialise");
    Sha256::digest(&json).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The settings that fix the leaf units and their encoder vectors.
pub fn corpus_key(data: &DataConfig, units: &UnitConfig, encoder: &EncoderConfig) -> String {
    key(&(&data.format, &data.path, units, encoder))
}

impl Cache {
    /// The folder of one artefact, created if missing.
    pub fn dir(&self, kind: &str, key: &str) -> anyhow::Result<PathBuf> {
        let dir = self.root.join(format!("{kind}-{key}"));
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(dir)
    }

    /// The encoder's vector of every unit of `docs`, by global unit index (other units stay empty). Saved
    /// per document; documents already saved are read back, the rest are encoded in one pass.
    pub fn unit_embeddings(
        &self,
        encoder: &SentenceEncoder<DefaultBackend>,
        corpus: &Corpus,
        index: &LeafIndex,
        docs: &[usize],
        corpus_key: &str,
        batch: usize,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        let dir = self.dir("units", corpus_key)?;
        let path = |d: usize| dir.join(format!("{d}.vec"));
        let mut out = vec![Vec::new(); index.units.len()];
        let mut missing = Vec::new();
        for &d in docs {
            let range = index.doc_units[d].clone();
            match path(d).exists() {
                true => {
                    let rows = vectors_io::load(&path(d)).map_err(anyhow::Error::msg)?;
                    anyhow::ensure!(rows.len() == range.len(), "{} holds {} vectors for {} units: delete it", path(d).display(), rows.len(), range.len());
                    for (u, v) in range.zip(rows) {
                        out[u] = v;
                    }
                }
                false => missing.push(d),
            }
        }
        let units: Vec<usize> = missing.iter().flat_map(|&d| index.doc_units[d].clone()).collect();
        if units.is_empty() {
            return Ok(out);
        }
        let texts: Vec<&str> = units.iter().map(|&u| index.text(corpus, u)).collect();
        let pb = bar(texts.len(), "embedding units");
        let vectors = encoder.embed(&texts, batch, &mut |n| pb.inc(n as u64));
        pb.finish_and_clear();
        for (u, v) in units.into_iter().zip(vectors) {
            out[u] = v;
        }
        for d in missing {
            vectors_io::save(&out[index.doc_units[d].clone()], &path(d))?;
        }
        Ok(out)
    }

    /// The encoder's vectors of `texts` (queries), saved as `queries-<key>.vec` under a key of the encoder
    /// and the texts; `what` names them on the progress bar.
    pub fn text_embeddings(
        &self,
        encoder: &SentenceEncoder<DefaultBackend>,
        encoder_config: &EncoderConfig,
        texts: &[&str],
        what: &str,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        let path = self.root.join(format!("queries-{}.vec", key(&(encoder_config, texts))));
        if path.exists() {
            let rows = vectors_io::load(&path).map_err(anyhow::Error::msg)?;
            anyhow::ensure!(rows.len() == texts.len(), "{} holds {} vectors for {} texts: delete it", path.display(), rows.len(), texts.len());
            return Ok(rows);
        }
        let pb = bar(texts.len(), &format!("embedding {what}"));
        let vectors = encoder.embed(texts, encoder_config.batch_size, &mut |n| pb.inc(n as u64));
        pb.finish_and_clear();
        std::fs::create_dir_all(&self.root)?;
        vectors_io::save(&vectors, &path)?;
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_change_with_any_setting_and_only_then() {
        let a = key(&("x", 1, [0.5f32]));
        assert_eq!(a, key(&("x", 1, [0.5f32])));
        assert_eq!(a.len(), 16);
        assert_ne!(a, key(&("x", 2, [0.5f32])));
        assert_ne!(a, key(&("x", 1, [0.25f32])));
    }
}
