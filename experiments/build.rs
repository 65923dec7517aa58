//! Records the code a binary is built from, for the provenance block of every report: the git commit,
//! whether the checkout had uncommitted changes, a digest of the workspace's sources (every crate's; what
//! a dirty checkout held) and of Cargo.lock, and the workspace's path, where the binary checks the
//! checkout again when it runs (crate::provenance). Reruns when the checkout's HEAD, index or refs move,
//! or a source file changes.

// `Path`, `PathBuf`, `Sha256` and the functions below come from here, shared with the crate.
include!("src/source_state.rs");

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.parent().expect("experiments/ sits in the workspace").to_path_buf();
    if let Some(git_dir) = git(&root, &["rev-parse", "--absolute-git-dir"]) {
        for name in ["HEAD", "index", "refs", "packed-refs"] {
            let path = Path::new(&git_dir).join(name);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    for path in watched(&root) {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    let lock = std::fs::read(root.join("Cargo.lock")).unwrap_or_default();
    let dirty = dirty(&root);
    println!("cargo:rustc-env=ARBOR_COMMIT={}", git(&root, &["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into()));
    println!("cargo:rustc-env=ARBOR_DIRTY={}", dirty.map_or("unknown", |d| if d { "true" } else { "false" }));
    println!("cargo:rustc-env=ARBOR_SOURCES={}", source_digest(&root));
    println!("cargo:rustc-env=ARBOR_CARGO_LOCK={}", short_hex(&Sha256::digest(&lock)));
    println!("cargo:rustc-env=ARBOR_WORKSPACE={}", root.display());
}
