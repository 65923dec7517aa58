//! Checkpoints that survive a kill: the model and each optimizer are recorded to temporary files,
//! fsynced and renamed; `state.json` (the step they belong to) is written last, the same way, and is the
//! commit point. Files of older steps are removed after the new state is in place.

use std::path::{Path, PathBuf};

use anyhow::Context;
use arbor_eval::report::atomic_write;
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
}

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

/// Makes the items of `step` the checkpoint: writes `state.json` atomically, then removes older files.
pub fn commit(dir: &Path, step: usize, files: Vec<String>, complete: bool) -> anyhow::Result<()> {
    let state = CheckpointState { step, files, complete };
    atomic_write(&dir.join("state.json"), serde_json::to_string_pretty(&state)?.as_bytes())?;
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let item = name.ends_with(".bin") || (name.starts_with("task-") && name.ends_with(".json"));
        if item && !state.files.contains(&name) {
            let _ = std::fs::remove_file(dir.join(&name));
        }
    }
    Ok(())
}

/// The committed state of `dir`, if any.
pub fn state(dir: &Path) -> anyhow::Result<Option<CheckpointState>> {
    let path = dir.join("state.json");
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)?;
    Ok(Some(serde_json::from_str(&text).with_context(|| format!("{} is damaged", path.display()))?))
}

/// Loads one recorded item of a committed state.
pub fn load<B: Backend, R: Record<B>>(dir: &Path, state: &CheckpointState, name: &str, device: &B::Device) -> anyhow::Result<R> {
    let file =
        state.files.iter().find(|f| f.starts_with(&format!("{name}-"))).with_context(|| format!("checkpoint step {} has no {name}", state.step))?;
    let path: PathBuf = dir.join(file);
    Rec::new().load(path.clone(), device).with_context(|| format!("cannot load {}", path.display()))
}
