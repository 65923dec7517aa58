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

/// The workspace manifest's lines that ask for a computing crate (`gemm = { version = .., features = .. }`).
pub fn asked(manifest: &str) -> Vec<String> {
    let name = |l: &str| l.split('=').next().unwrap_or_default().trim().to_owned();
    manifest.lines().map(str::trim).filter(|l| l.contains('=') && COMPUTING.contains(&name(l).as_str())).map(str::to_owned).collect()
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
        assert_eq!(asked(manifest), ["gemm = { version = \"0.19\", features = [\"x86-v4\"] }"]);
    }
}
