// The state of a workspace checkout that provenance records: the digest of its sources (every crate's
// src/, tests/, benches/, examples/, Cargo.toml and build.rs, the workspace's Cargo.toml and Cargo.lock),
// its git commit, and whether it holds changes not committed. Read by build.rs (what a binary is built
// from, through `include!`, hence plain comments) and by crate::provenance at run time (what the checkout
// holds when the binary runs), so that both compute the same figures.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The workspace's crates (each folder holds a Cargo.toml and src/).
pub const CRATES: [&str; 9] = ["files", "datasets", "models", "losses", "eval", "trainers", "store", "experiments", "ablations"];

/// What a crate folder holds that is code: digested, and watched by build.rs.
pub const CRATE_PARTS: [&str; 6] = ["src", "tests", "benches", "examples", "Cargo.toml", "build.rs"];

/// The files and folders the digest reads, relative to the workspace (those that exist).
pub fn watched(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = CRATES.iter().flat_map(|c| CRATE_PARTS.iter().map(move |p| Path::new(c).join(p))).collect();
    out.extend(["Cargo.toml", "Cargo.lock"].map(PathBuf::from));
    out.retain(|p| root.join(p).exists());
    out
}

/// The first 8 bytes of a SHA-256, in hex.
pub fn short_hex(bytes: &[u8]) -> String {
    bytes.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The digest of the workspace's sources at `root`: every watched file's path and bytes, in path order.
pub fn source_digest(root: &Path) -> String {
    let mut files = Vec::new();
    for path in watched(root) {
        collect(&root.join(path), &mut files);
    }
    files.sort();
    let mut hasher = Sha256::new();
    for path in &files {
        hasher.update(path.strip_prefix(root).unwrap_or(path).to_string_lossy().as_bytes());
        hasher.update(std::fs::read(path).unwrap_or_default());
    }
    short_hex(&hasher.finalize())
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

/// `git ARGS` in `root`, its output trimmed; `None` when git is missing or fails (not a checkout).
pub fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(root).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether the checkout at `root` has uncommitted changes to tracked files (sources, experiment and sweep
/// files, scripts, fixtures), or new files among the sources; output folders and other untracked files
/// elsewhere do not count. `None` outside a git checkout.
pub fn dirty(root: &Path) -> Option<bool> {
    // `--no-optional-locks`: status must not rewrite the index (build.rs watches it).
    let tracked = git(root, &["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"])?;
    let mut args = vec!["ls-files".to_owned(), "--others".to_owned(), "--exclude-standard".to_owned(), "--".to_owned()];
    args.extend(watched(root).iter().map(|p| p.to_string_lossy().into_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let untracked = git(root, &args)?;
    Some(!tracked.is_empty() || !untracked.is_empty())
}
