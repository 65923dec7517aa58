//! The dependencies whose code computes an artefact's numbers, as Cargo.lock pins them: every package the
//! computing crates ([`COMPUTING`]) reach through the lock's dependency lists, with its version and
//! checksum, and the workspace manifest's lines that ask for them (their features: gemm's `x86-v4`
//! kernels, say). Part of every kind's digest, so that a new burn, gemm or tokenizers, or other features of
//! them (another kernel, another tokenization), asks for every version to be bumped, while a dependency
//! that computes nothing (the command line's parser, the HTTP client) does not.

use std::collections::{BTreeMap, BTreeSet};

/// The crates arbor computes with: the tensor backends and autodiff, the matrix products, the tokenizer,
/// the weights' reader, the random numbers, the BM25 scorer.
pub const COMPUTING: [&str; 9] = ["burn", "burn-ndarray", "burn-autodiff", "gemm", "tokenizers", "safetensors", "rand", "ndarray", "bm25"];

/// One `[[package]]` of Cargo.lock.
#[derive(Debug, Default, Clone)]
struct Package {
    version: String,
    checksum: String,
    dependencies: Vec<String>,
}

/// The lock's packages by name (several versions of one name: each, as `name version`).
fn packages(lock: &str) -> BTreeMap<String, Vec<Package>> {
    let mut out: BTreeMap<String, Vec<Package>> = BTreeMap::new();
    for block in lock.split("[[package]]").skip(1) {
        let (mut name, mut p, mut in_deps) = (String::new(), Package::default(), false);
        for line in block.lines().map(str::trim) {
            let value = |l: &str| l.split_once('=').map_or(String::new(), |(_, v)| v.trim().trim_matches('"').to_owned());
            if in_deps {
                if line.starts_with(']') {
                    in_deps = false;
                } else {
                    p.dependencies.push(line.trim_end_matches(',').trim_matches('"').to_owned());
                }
            } else if line.starts_with("name =") {
                name = value(line);
            } else if line.starts_with("version =") {
                p.version = value(line);
            } else if line.starts_with("checksum =") {
                p.checksum = value(line);
            } else if line.starts_with("dependencies = [") {
                in_deps = !line.ends_with(']');
            }
        }
        out.entry(name).or_default().push(p);
    }
    out
}

/// What the workspace's manifests (`(path, text)`: the workspace's Cargo.toml and every member's) ask of the
/// computing crates: each `[*dependencies]` entry of one, inline or as a table of its own
/// (`[dependencies.gemm]`, `[target.'cfg(..)'.dependencies]`), with the lines a multi-line value continues
/// on; and every `[features]` table (a member's feature turns on a computing crate's features). Each line
/// prefixed with its file and section, comments and blank lines left out.
pub fn asked(manifests: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in manifests {
        let (mut section, mut open) = (String::new(), 0i32);
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            if open > 0 {
                out.push(format!("{path} [{section}] {line}"));
                open += depth(line);
                continue;
            }
            if line.starts_with('[') {
                section = line.trim_start_matches('[').trim_end_matches(']').trim().to_owned();
                continue;
            }
            let name = line.split('=').next().unwrap_or_default().trim();
            let table = section.rsplit_once('.').is_some_and(|(head, dep)| head.ends_with("dependencies") && COMPUTING.contains(&dep));
            if section == "features" || table || (section.ends_with("dependencies") && COMPUTING.contains(&name)) {
                out.push(format!("{path} [{section}] {line}"));
                open = depth(line).max(0);
            }
        }
    }
    out
}

/// Brackets and braces a line opens and does not close.
fn depth(line: &str) -> i32 {
    line.chars()
        .map(|c| match c {
            '[' | '{' => 1,
            ']' | '}' => -1,
            _ => 0,
        })
        .sum()
}

/// Every package `COMPUTING` reaches in `lock`, as `name version checksum` lines, sorted.
pub fn computing(lock: &str) -> Vec<String> {
    let all = packages(lock);
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue: Vec<String> = COMPUTING.iter().map(|s| s.to_string()).collect();
    while let Some(dep) = queue.pop() {
        // `name` or `name version` (when the lock holds several versions of it).
        let (name, version) = dep.split_once(' ').map_or((dep.as_str(), None), |(n, v)| (n, Some(v)));
        for p in all.get(name).into_iter().flatten().filter(|p| version.is_none_or(|v| p.version == v)) {
            if seen.insert(format!("{name} {} {}", p.version, p.checksum)) {
                queue.extend(p.dependencies.iter().cloned());
            }
        }
    }
    seen.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = r#"
[[package]]
name = "burn"
version = "0.21.0"
checksum = "aa"
dependencies = [
 "burn-core",
 "rand 0.9.0",
]

[[package]]
name = "burn-core"
version = "0.21.0"
checksum = "bb"

[[package]]
name = "rand"
version = "0.8.5"
checksum = "cc"

[[package]]
name = "rand"
version = "0.9.0"
checksum = "dd"

[[package]]
name = "clap"
version = "4.0.0"
checksum = "ee"
"#;

    #[test]
    fn the_computing_crates_and_what_they_reach_only() {
        let got = computing(LOCK);
        assert!(got.contains(&"burn-core 0.21.0 bb".to_owned()), "{got:?}");
        assert!(got.contains(&"rand 0.9.0 dd".to_owned()) && got.contains(&"rand 0.8.5 cc".to_owned()), "both rands (rand is computing)");
        assert!(!got.iter().any(|l| l.starts_with("clap")), "{got:?}");
        let manifest = "[workspace.dependencies]\ngemm = { version = \"0.19\", features = [\"x86-v4\"] }\nclap = \"4\"\n";
        let one = |text: &str| asked(&[("Cargo.toml".to_owned(), text.to_owned())]);
        assert_eq!(one(manifest), ["Cargo.toml [workspace.dependencies] gemm = { version = \"0.19\", features = [\"x86-v4\"] }"]);
    }

    /// Issue 86: what the old reading of single lines of the root manifest missed: a multi-line entry, a
    /// dependency's own table, a member's features; a crate that computes nothing still does not count.
    #[test]
    fn every_manifest_and_every_form_of_an_entry_counts() {
        let one = |text: &str| asked(&[("models/Cargo.toml".to_owned(), text.to_owned())]);
        let multi = "[dependencies]\ngemm = { version = \"0.19\", features = [\n  \"x86-v4\",\n  \"nightly\",\n] }\nclap = \"4\"\n";
        assert_eq!(one(multi).len(), 4, "{:?}", one(multi));
        assert!(one(multi).iter().any(|l| l.ends_with("\"nightly\",")));
        let table = "[dependencies.burn]\nversion = \"0.21\"\nfeatures = [\"std\"]\n\n[dependencies.clap]\nversion = \"4\"\n";
        assert_eq!(
            one(table),
            ["models/Cargo.toml [dependencies.burn] version = \"0.21\"", "models/Cargo.toml [dependencies.burn] features = [\"std\"]"]
        );
        let features = "[features]\ncuda = [\"burn/cuda\"]\n[dev-dependencies]\nclap = \"4\"\n";
        assert_eq!(one(features), ["models/Cargo.toml [features] cuda = [\"burn/cuda\"]"]);
        assert!(one("[dependencies]\nclap = { version = \"4\", features = [\n\"derive\"] }\n").is_empty());
    }
}
