//! Checkpoints that survive a kill and are never read back damaged: the model and each optimizer are
//! recorded to temporary files, fsynced and renamed; `state.json` (the step they belong to, each file's
//! SHA-256, and the best epoch's model on validation) is written last, the same way, and is the commit
//! point. Files of older steps are removed after the new state is in place. An item whose digest does not
//! match its file is [`Damaged`]: the skeleton then trains again instead of reading it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use arbor_files::{atomic_write, sha256_file};
use burn::record::{BinFileRecorder, FullPrecisionSettings, Record, Recorder};
use burn::tensor::backend::Backend;
use serde::{Deserialize, Serialize};

/// What `state.json` says: the last completed step and the files that hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointState {
    pub step: usize,
    pub files: Vec<String>,
    /// The last step of training: the model is final.
    #[serde(default)]
    pub complete: bool,
    /// Each file's SHA-256 (files of states written before digests were kept are not checked).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub digests: BTreeMap<String, String>,
    /// The model of the epoch with the best validation figure so far, when the task gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<Best>,
}

/// The best epoch on validation: its last step, the figure, and the file of its model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Best {
    pub step: usize,
    pub score: f64,
    pub file: String,
}

/// A checkpoint item whose file does not match the digest its state recorded.
#[derive(Debug)]
pub struct Damaged(pub PathBuf);

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} does not match the checksum its checkpoint recorded (damaged on disk)", self.0.display())
    }
}

impl std::error::Error for Damaged {}

type Rec = BinFileRecorder<FullPrecisionSettings>;

/// Records one item of the checkpoint of `step` (fsynced, renamed); returns its file name for [`commit`].
pub fn write_item<B: Backend, R: Record<B>>(dir: &Path, name: &str, step: usize, record: R) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let final_name = format!("{name}-{step}.bin");
    let tmp = dir.join(format!(".tmp-{name}-{step}"));
    Rec::new().record(record, tmp.clone()).with_context(|| format!("cannot write checkpoint {final_name}"))?;
    let tmp = tmp.with_extension("bin");
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, dir.join(&final_name))?;
    Ok(final_name)
}

/// Makes the items of `step` the checkpoint: writes `state.json` atomically, with every file's digest and
/// the best model so far, then removes older files.
pub fn commit(dir: &Path, step: usize, files: Vec<String>, complete: bool, best: Option<Best>) -> anyhow::Result<()> {
    let mut digests = BTreeMap::new();
    for file in files.iter().chain(best.as_ref().map(|b| &b.file)) {
        let path = dir.join(file);
        digests.insert(file.clone(), sha256_file(&path).with_context(|| format!("cannot read {}", path.display()))?);
    }
    let state = CheckpointState { step, files, complete, digests, best };
    atomic_write(&dir.join("state.json"), serde_json::to_string_pretty(&state)?.as_bytes())?;
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let item = name.ends_with(".bin") || (name.starts_with("task-") && name.ends_with(".json"));
        if item && !state.digests.contains_key(&name) && !state.files.contains(&name) {
            let _ = std::fs::remove_file(dir.join(&name));
        }
    }
    Ok(())
}

/// The committed state of `dir`, if any. A damaged `state.json` (unreadable, not UTF-8, cut short) is said
/// on a warning line and read as no checkpoint: the training starts over, as for any damaged item.
pub fn state(dir: &Path) -> anyhow::Result<Option<CheckpointState>> {
    let path = dir.join("state.json");
    if !path.exists() {
        return Ok(None);
    }
    let read = std::fs::read_to_string(&path).map_err(|e| e.to_string()).and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()));
    match read {
        Ok(state) => Ok(Some(state)),
        Err(e) => {
            eprintln!("warning: {} is damaged ({e}): its checkpoint is not read back", path.display());
            Ok(None)
        }
    }
}

/// Checks a committed file against its recorded digest: [`Damaged`] (as the error) when it does not match.
pub fn verify(dir: &Path, state: &CheckpointState, file: &str) -> anyhow::Result<PathBuf> {
    let path = dir.join(file);
    if let Some(want) = state.digests.get(file) {
        let got = sha256_file(&path).map_err(|_| Damaged(path.clone()))?;
        if &got != want {
            return Err(Damaged(path).into());
        }
    }
    Ok(path)
}

/// Loads one recorded item of a committed state, after checking its digest.
pub fn load<B: Backend, R: Record<B>>(dir: &Path, state: &CheckpointState, name: &str, device: &B::Device) -> anyhow::Result<R> {
    let file =
        state.files.iter().find(|f| f.starts_with(&format!("{name}-"))).with_context(|| format!("checkpoint step {} has no {name}", state.step))?;
    load_file(dir, state, file, device)
}

/// Loads a committed file, after checking its digest.
pub fn load_file<B: Backend, R: Record<B>>(dir: &Path, state: &CheckpointState, file: &str, device: &B::Device) -> anyhow::Result<R> {
    let path = verify(dir, state, file)?;
    Rec::new().load(path.clone(), device).with_context(|| format!("cannot load {}", path.display()))
}

/// Whether an error is (or wraps) a [`Damaged`] item.
pub fn is_damage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<Damaged>())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_damaged_state_is_no_checkpoint_rather_than_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(super::state(dir.path()).unwrap().is_none());
        std::fs::write(dir.path().join("state.json"), b"{\"step\": 3, \"fil").unwrap();
        assert!(super::state(dir.path()).unwrap().is_none());
        std::fs::write(dir.path().join("state.json"), [0xff, 0xfe]).unwrap();
        assert!(super::state(dir.path()).unwrap().is_none());
    }
}
