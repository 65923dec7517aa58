//! Every kind of cached artefact carries the version of the code that makes it (`cache::Artefact`), part
//! of its folder's key: artefacts made by older code are never read back. This test holds those versions
//! to the code. It digests each kind's source files (comment lines, whitespace, `use` declarations and
//! test modules left out, so formatting, documentation and moving items between modules do not count; by
//! content, so moving a file does not count) and compares them with `experiments/artefact-versions.txt`:
//!
//! - the code changed under the same version: fails, asking for the version to be bumped;
//! - the version was bumped: fails until the new line is recorded, which
//!   `ARBOR_BLESS=1 cargo test --release -p arbor-experiments --test artefact_versions` does (it never records
//!   a changed digest under an unchanged version).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arbor_experiments::cache::{Artefact, key};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

const LOCK: &str = "experiments/artefact-versions.txt";

/// The Rust files at `path` (itself, or every one under a folder).
fn files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_owned()];
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
        let p = entry.unwrap().path();
        if p.is_dir() || p.extension().is_some_and(|e| e == "rs") {
            out.extend(files(&p));
        }
    }
    out
}

/// A file's code: up to its test module, without comment lines, `use` declarations or whitespace.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut in_use = false;
    for line in text.lines() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let trimmed = line.trim_start();
        if ["use ", "pub use ", "pub(crate) use "].iter().any(|p| trimmed.starts_with(p)) {
            in_use = true;
        }
        if in_use {
            in_use = !trimmed.trim_end().ends_with(';');
            continue;
        }
        if !trimmed.starts_with("//") {
            out.extend(line.chars().filter(|c| !c.is_whitespace()));
        }
    }
    out
}

fn digest(kind: Artefact) -> String {
    let mut parts: Vec<String> = Vec::new();
    for source in kind.sources() {
        let path = workspace().join(source);
        assert!(path.exists(), "{}: {source} is listed as its code but does not exist", kind.name());
        parts.extend(files(&path).iter().map(|f| key(&code(&std::fs::read_to_string(f).unwrap()))));
    }
    parts.sort();
    key(&parts)
}

fn recorded() -> BTreeMap<String, (u32, String)> {
    let text = std::fs::read_to_string(workspace().join(LOCK)).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_owned(), (f[1].parse().unwrap(), f[2].to_owned()))
        })
        .collect()
}

#[test]
fn every_artefact_version_follows_its_code() {
    let before = recorded();
    let mut problems = Vec::new();
    let mut lines = vec![
        "# artefact kind, the version of the code that makes it (experiments/src/cache.rs), a digest of that code.".to_owned(),
        "# Written by ARBOR_BLESS=1 cargo test --release -p arbor-experiments --test artefact_versions".to_owned(),
    ];
    for kind in Artefact::ALL {
        let (name, version, now) = (kind.name(), kind.version(), digest(kind));
        match before.get(name) {
            Some((v, d)) if *v == version && *d != now => problems.push(format!(
                "the code of `{name}` artefacts changed (digest {d} -> {now}) but its version is still {v}: bump Artefact::{kind:?}'s \
                 version in experiments/src/cache.rs (so that artefacts of the old code are not read back), then record it"
            )),
            Some((v, d)) if *v == version && *d == now => {}
            _ if std::env::var_os("ARBOR_BLESS").is_some() => {}
            Some((v, _)) => problems.push(format!("`{name}`: version {v} -> {version} is not recorded: run with ARBOR_BLESS=1")),
            None => problems.push(format!("`{name}` is not recorded: run with ARBOR_BLESS=1")),
        }
        lines.push(format!("{name} {version} {now}"));
    }
    if problems.is_empty() && std::env::var_os("ARBOR_BLESS").is_some() {
        std::fs::write(workspace().join(LOCK), lines.join("\n") + "\n").unwrap();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_digest_ignores_comments_formatting_and_tests_but_not_code() {
    let a = "use a::{\n    b,\n    c,\n};\nfn f() -> u32 {\n    // why\n    1\n}\n#[cfg(test)]\nmod tests { fn t() {} }\n";
    assert_eq!(code(a), code("use d::e;\nfn f() -> u32 { 1 }\n"));
    assert_ne!(code(a), code("fn f() -> u32 { 2 }\n"));
}
