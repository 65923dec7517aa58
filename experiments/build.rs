//! Records the code a binary is built from, for the provenance block of every report: the git commit,
//! whether the checkout had uncommitted changes, a digest of the workspace's sources (what a dirty
//! checkout held) and of Cargo.lock. Reruns when the checkout's HEAD, index or refs move, or a source
//! file changes, so the record is never stale.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The workspace's crates (each folder holds a Cargo.toml and src/).
const CRATES: [&str; 7] = ["datasets", "models", "losses", "eval", "trainers", "experiments", "ablations"];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.parent().expect("experiments/ sits in the workspace").to_path_buf();
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).current_dir(&root).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        for name in ["HEAD", "index", "refs", "packed-refs"] {
            let path = Path::new(&git_dir).join(name);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let mut sources = Vec::new();
    for krate in CRATES {
        for sub in ["src", "tests", "benches", "examples", "Cargo.toml", "build.rs"] {
            let path = root.join(krate).join(sub);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
                collect(&path, &mut sources);
            }
        }
    }
    for file in ["Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
        sources.push(root.join(file));
    }
    sources.sort();
    let mut hasher = Sha256::new();
    for path in &sources {
        hasher.update(path.strip_prefix(&root).unwrap_or(path).to_string_lossy().as_bytes());
        hasher.update(std::fs::read(path).unwrap_or_default());
    }
    let hex = |bytes: &[u8]| bytes.iter().take(8).map(|b| format!("{b:02x}")).collect::<String>();
    let lock = std::fs::read(root.join("Cargo.lock")).unwrap_or_default();
    // `--no-optional-locks`: status must not rewrite the index, which would make this script rerun forever.
    let dirty = git(&["--no-optional-locks", "status", "--porcelain", "--untracked-files=normal"]).map(|s| !s.is_empty());
    println!("cargo:rustc-env=ARBOR_COMMIT={}", git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into()));
    println!("cargo:rustc-env=ARBOR_DIRTY={}", dirty.map_or("unknown", |d| if d { "true" } else { "false" }));
    println!("cargo:rustc-env=ARBOR_SOURCES={}", hex(&hasher.finalize()));
    println!("cargo:rustc-env=ARBOR_CARGO_LOCK={}", hex(&Sha256::digest(&lock)));
}

/// Every file under `path` (itself, if it is a file).
fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        out.push(path.to_owned());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else { return };
    for entry in entries.flatten() {
        collect(&entry.path(), out);
    }
}
