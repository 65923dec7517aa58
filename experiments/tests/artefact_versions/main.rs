//! Every kind of cached artefact carries the version of the code that makes it (`cache::Artefact`), part
//! of its folder's key: artefacts made by older code are never read back. This test holds those versions
//! to the code. A kind's code is every file its roots (`Artefact::sources`: the unit cutter among them for
//! every kind) reach (reach.rs: every path the code names, followed through the workspace's crates), and
//! its digest is those files' paths, their imports as a set (rustfmt sorts them; aliases kept), their code
//! in order (lex.rs: comments, formatting and `#[cfg(test)]` items left out; nothing else sorted, so a
//! moved statement or a swapped branch counts) and the computing dependencies Cargo.lock pins with the features the manifest asks of them (lock.rs).
//! It compares them with `experiments/artefact-versions.txt`, which keeps every (version, digest) ever
//! recorded:
//!
//! - the code changed under a recorded version: fails, asking for the version to be bumped;
//! - the version went down: fails (a version number, once used, is never used again for other code);
//! - the version was bumped: fails until the new line is recorded, which
//!   `ARBOR_BLESS=1 cargo test --release -p arbor-experiments --test artefact_versions` does (it never records
//!   a changed digest under a recorded version, nor a lower version);
//! - the lock was written by another digest (its first line is not [`DIGEST`]) or is damaged: its digests
//!   cannot say whether the code changed, so ARBOR_BLESS records only versions above every recorded one.
//!
//! Artefacts made by a version not yet recorded (between a bump and its bless) are keyed by the exact
//! sources too (`cache::versioned`), so two codes never share them.

mod lex;
mod lock;
mod reach;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arbor_experiments::cache::{Artefact, key};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

const LOCK: &str = "experiments/artefact-versions.txt";

/// The lock's first line names the digest it holds (4: aliases kept among the imports, a test-only field,
/// variant or arm cut alone, the computing dependencies of Cargo.lock; 3: imports as a set; 2: imports in
/// order; 1: sorted statements of hand-listed files).
const DIGEST: &str = "# digest 5: every file the roots reach, its imports (aliases kept) as a set, its code in order, the computing dependencies and every manifest's asks and features";

/// The digest of the code `kind` reaches in the workspace at `root`.
fn digest(kind: Artefact, root: &Path) -> String {
    let files = reach::reach(&kind.sources(), root);
    let code: Vec<(String, Vec<String>, String)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let (uses, rest) = lex::split_uses(lex::without_tests(lex::tokens(&text)));
            let mut imports: Vec<String> = uses.iter().flat_map(|u| reach::imported(u)).collect();
            imports.sort();
            imports.dedup();
            (f.to_string_lossy().replace('\\', "/"), imports, lex::text(&rest))
        })
        .collect();
    let read = |f: &str| std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let manifests: Vec<(String, String)> = manifests().into_iter().filter(|m| root.join(m).exists()).map(|m| (m.clone(), read(&m))).collect();
    key(&(code, lock::computing(&read("Cargo.lock")), lock::asked(&manifests)))
}

/// The workspace's manifest and every member's, as paths from the root.
fn manifests() -> Vec<String> {
    std::iter::once("Cargo.toml".to_owned()).chain(reach::CRATES.iter().map(|(_, folder)| format!("{folder}/Cargo.toml"))).collect()
}

/// The lock's (version, digest) lines by kind, in the order written; `None` for a line that does not parse.
fn recorded(text: &str) -> Option<BTreeMap<String, Vec<(u32, String)>>> {
    let mut out: BTreeMap<String, Vec<(u32, String)>> = BTreeMap::new();
    for l in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let [name, version, digest] = f[..] else { return None };
        out.entry(name.to_owned()).or_default().push((version.parse().ok()?, digest.to_owned()));
    }
    Some(out)
}

/// The lock `text` against the code (each kind's name, version and digest now): the problems, and the lock
/// as ARBOR_BLESS writes it (every line kept, the versions recorded now added).
fn check(text: &str, now: &[(&str, u32, String)], bless: bool) -> (Vec<String>, String) {
    let Some(history) = recorded(text) else {
        return (vec![format!("{LOCK} is damaged (a line is not `kind version digest`): restore it from git")], text.to_owned());
    };
    let current = text.starts_with(DIGEST);
    let mut problems = Vec::new();
    let mut lines = vec![
        DIGEST.to_owned(),
        "# artefact kind, the version of the code that makes it (experiments/src/artefact/versions.rs), a digest of that code; every version recorded."
            .to_owned(),
        "# Written by ARBOR_BLESS=1 cargo test --release -p arbor-experiments --test artefact_versions".to_owned(),
    ];
    for (name, version, digest) in now {
        let known = history.get(*name).map_or(&[][..], Vec::as_slice);
        let latest = known.iter().map(|(v, _)| *v).max();
        let at = known.iter().find(|(v, _)| v == version).map(|(_, d)| d);
        let problem = match at {
            _ if !current && latest.is_some_and(|l| *version <= l) => Some(format!(
                "`{name}`: the lock holds another digest's lines (or is damaged), which cannot say whether the code changed: bump \
                 Artefact's version of `{name}` above {} and record it with ARBOR_BLESS=1",
                latest.unwrap_or(0)
            )),
            Some(d) if d != digest => Some(format!(
                "the code of `{name}` artefacts changed (digest {d} -> {digest}) but its version is still {version}: bump its version in \
                 experiments/src/artefact/versions.rs (so that artefacts of the old code are not read back), then record it"
            )),
            Some(_) => None,
            None if latest.is_some_and(|l| *version < l) => Some(format!(
                "`{name}`: version {version} is below the recorded {}: versions only go up (artefacts of version {version}'s code may \
                 still be in caches)",
                latest.unwrap_or(0)
            )),
            None if bless => None,
            None => Some(format!("`{name}`: version {version} is not recorded: run with ARBOR_BLESS=1")),
        };
        lines.extend(known.iter().map(|(v, d)| format!("{name} {v} {d}")));
        if problem.is_none() && at.is_none() {
            lines.push(format!("{name} {version} {digest}"));
        }
        problems.extend(problem);
    }
    (problems, lines.join("\n") + "\n")
}

#[test]
fn every_artefact_version_follows_its_code() {
    let text = std::fs::read_to_string(workspace().join(LOCK)).unwrap_or_default();
    let bless = std::env::var_os("ARBOR_BLESS").is_some();
    let now: Vec<(&str, u32, String)> = Artefact::ALL.iter().map(|&k| (k.name(), k.version(), digest(k, &workspace()))).collect();
    let (problems, written) = check(&text, &now, bless);
    if problems.is_empty() && bless {
        std::fs::write(workspace().join(LOCK), written).unwrap();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The lock's rules, each on a hand-written lock: a changed digest under a recorded version fails and is
/// never blessed, even when a later line recorded the version again; a lock of another digest (or a
/// damaged one) is blessed only above every recorded version; a bless keeps every earlier line.
#[test]
fn the_lock_keeps_every_version_and_blesses_only_what_it_can_vouch_for() {
    let lock = |lines: &[&str]| format!("{DIGEST}\n{}\n", lines.join("\n"));
    let now = |v: u32, d: &str| vec![("units", v, d.to_owned())];
    // Recorded and the same: nothing to do.
    assert!(check(&lock(&["units 9 aa"]), &now(9, "aa"), false).0.is_empty());
    // Changed under a recorded version, blessed or not: refused.
    for bless in [false, true] {
        assert_eq!(check(&lock(&["units 9 aa"]), &now(9, "bb"), bless).0.len(), 1);
    }
    // A version recorded once with other code stays refused after later versions were recorded.
    assert_eq!(check(&lock(&["units 9 aa", "units 10 cc"]), &now(9, "bb"), true).0.len(), 1);
    // Bumped: recorded by a bless, which keeps the earlier line.
    let (problems, written) = check(&lock(&["units 9 aa"]), &now(10, "bb"), true);
    assert!(problems.is_empty());
    assert!(written.contains("units 9 aa\nunits 10 bb\n"), "{written}");
    assert_eq!(check(&lock(&["units 9 aa"]), &now(10, "bb"), false).0.len(), 1, "unrecorded without a bless");
    // Lower than recorded: refused.
    assert_eq!(check(&lock(&["units 9 aa"]), &now(8, "aa"), true).0.len(), 1);
    // Another digest's lock, or a damaged one: the same version cannot be re-recorded, a higher one can.
    let old = "# digest 3: ...\nunits 9 aa\n";
    assert_eq!(check(old, &now(9, "zz"), true).0.len(), 1);
    assert!(check(old, &now(10, "zz"), true).0.is_empty());
    let damaged = format!("{DIGEST}\nunits 9\n");
    assert_eq!(check(&damaged, &now(9, "aa"), true).0.len(), 1, "a damaged line vouches for nothing");
}

/// A scratch copy of every crate's `src/` (the code the digests read).
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (_, folder) in reach::CRATES {
        for file in reach::files(&workspace(), &Path::new(folder).join("src")) {
            let to = dir.path().join(&file);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(workspace().join(&file), to).unwrap();
        }
    }
    for file in std::iter::once("Cargo.lock".to_owned()).chain(manifests()) {
        std::fs::copy(workspace().join(&file), dir.path().join(&file)).unwrap();
    }
    dir
}

/// Replaces `from` by `to` in `file` of the scratch copy; the text must be there.
fn edit(root: &Path, file: &str, from: &str, to: &str) {
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file} no longer holds {from:?}: update this test's edit");
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// The edits a reviewer found invisible to the old digest (statements sorted, sources listed by hand)
/// change every trained kind that runs the code: a statement moved out of its `if`, two branches
/// swapped, and an edit in eval's metrics (the validation IE that chooses the epoch).
#[test]
fn reordered_code_and_code_reached_through_other_crates_change_the_digest() {
    let trained = [Artefact::SproutRag, Artefact::Dense];
    let edits: [(&str, &str, &str, &[Artefact]); 8] = [
        (
            "trainers/src/window.rs",
            "            keep[q.positive] = true;\n            used += tokens(q.positive);\n        }",
            "            keep[q.positive] = true;\n        }\n        used += tokens(q.positive);",
            &trained,
        ),
        (
            "trainers/src/schedule.rs",
            "if step < warmup { (step + 1) as f64 / warmup as f64 } else { ((total - step) as f64 / (total - warmup).max(1) as f64).clamp(0.0, 1.0) }",
            "if step >= warmup { ((total - step) as f64 / (total - warmup).max(1) as f64).clamp(0.0, 1.0) } else { (step + 1) as f64 / warmup as f64 }",
            &Artefact::ALL[5..],
        ),
        ("eval/src/scoring/metrics.rs", "m.ie[i] = p * r;", "m.ie[i] = p * r * r;", &trained),
        ("trainers/src/objective.rs", "use crate::data::{StepRows, TrainDoc};", "use crate::data::{StepRows, TrainDoc};\nconst X: u8 = 1;", &trained),
        // The unit cutter reaches every kind (issue 61): documents tokenised in chunks of another size.
        ("experiments/src/leaves.rs", "corpus.documents.chunks(16)", "corpus.documents.chunks(16).rev()", &Artefact::ALL),
        // So does the tokenizer's release that Cargo.lock pins, and the matrix products' features.
        ("Cargo.lock", "name = \"tokenizers\"\nversion = \"", "name = \"tokenizers\"\nversion = \"9", &Artefact::ALL),
        (
            "Cargo.toml",
            "gemm = { version = \"0.19\", default-features = false, features = [",
            "gemm = { version = \"0.19\", default-features = false, features = [\"nightly\", ",
            &Artefact::ALL,
        ),
        // And a member's features (issue 86: the old digest read single lines of the root manifest only).
        ("experiments/Cargo.toml", "flex = [\"arbor-models/flex\"]", "flex = [\"arbor-models/flex\", \"arbor-models/cuda\"]", &Artefact::ALL),
    ];
    let before = scratch();
    for (file, from, to, kinds) in edits {
        let after = scratch();
        edit(after.path(), file, from, to);
        for &kind in kinds {
            assert_ne!(digest(kind, before.path()), digest(kind, after.path()), "{kind:?} does not see the edit of {file}");
        }
    }
    // Comments and formatting do not count; nor does another kind's version (a bump never cascades).
    let after = scratch();
    edit(after.path(), "trainers/src/window.rs", "    let mut used = 0;\n", "    // the tokens kept so far\n    let mut used =\n        0;\n");
    edit(after.path(), reach::VERSIONS_FILE, "Artefact::Raptor => ", "Artefact::Raptor => 1 + ");
    // Imports in another order (rustfmt's sorting) do not count either.
    edit(after.path(), "trainers/src/window.rs", "use crate::data::{TrainDoc, TrainQuery};", "use crate::data::{TrainQuery, TrainDoc};");
    // Nor a dependency that computes nothing (the command line's parser).
    edit(after.path(), "Cargo.lock", "name = \"clap\"\nversion = \"", "name = \"clap\"\nversion = \"9");
    assert_eq!(digest(Artefact::Dense, before.path()), digest(Artefact::Dense, after.path()));
    // Swapped aliases in an import do count.
    let after = scratch();
    edit(
        after.path(),
        "trainers/src/window.rs",
        "use crate::data::{TrainDoc, TrainQuery};",
        "use crate::data::{TrainDoc as TrainQuery, TrainQuery as TrainDoc};",
    );
    assert_ne!(digest(Artefact::Dense, before.path()), digest(Artefact::Dense, after.path()));
}

/// Each kind reaches the files a reviewer listed as missing from the hand-written lists.
#[test]
fn the_reached_files_include_what_the_code_calls() {
    let has = |kind: Artefact, file: &str| reach::reach(&kind.sources(), &workspace()).iter().any(|f| f == Path::new(file));
    for file in ["trainers/src/objective.rs", "eval/src/scoring/metrics.rs", "datasets/src/merge_pairs.rs", "trainers/src/window.rs"] {
        assert!(has(Artefact::Dense, file), "dense does not reach {file}");
    }
    for file in ["eval/src/structures/node_targets.rs", "eval/src/structures/tree.rs", "eval/src/scoring/metrics.rs"] {
        assert!(has(Artefact::SproutRag, file), "sproutrag does not reach {file}");
    }
}

/// Files import downwards (issue 47): in trainers/ and experiments/ no file's import leads, through other files, back to
/// itself. A module's use of its own submodules (`mod.rs` calling `step::`) is not counted: the module and
/// its submodules are one unit, and the submodule importing its parent's items is what is meant. A circle
/// is named file by file.
#[test]
fn no_file_imports_a_file_that_imports_it() {
    let root = workspace();
    for folder in ["trainers", "experiments"] {
        let files = reach::files(&root, &Path::new(folder).join("src"));
        let imports: BTreeMap<PathBuf, Vec<PathBuf>> = files.iter().map(|f| (f.clone(), reach::imports(f, &root))).collect();
        // Depth-first, the path kept: a file met again on the path closes a circle.
        fn visit(f: &PathBuf, imports: &BTreeMap<PathBuf, Vec<PathBuf>>, path: &mut Vec<PathBuf>, done: &mut BTreeSet<PathBuf>) {
            if let Some(at) = path.iter().position(|p| p == f) {
                let circle: Vec<String> = path[at..].iter().chain([f]).map(|p| p.display().to_string()).collect();
                panic!("an import circle: {}", circle.join(" -> "));
            }
            if !done.insert(f.clone()) {
                return;
            }
            path.push(f.clone());
            for next in imports.get(f).into_iter().flatten().filter(|next| !below(f, next)) {
                visit(next, imports, path, done);
            }
            path.pop();
        }
        let mut done = BTreeSet::new();
        for f in &files {
            visit(f, &imports, &mut Vec::new(), &mut done);
        }
    }
}

/// Whether `file` is a submodule of the module `parent` is the file of (under `x/` for `x/mod.rs`, `lib.rs`
/// or `x.rs`).
fn below(parent: &Path, file: &Path) -> bool {
    let folder = match parent.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs" | "lib.rs") => parent.parent().map(Path::to_path_buf),
        _ => Some(parent.with_extension("")),
    };
    folder.is_some_and(|d| file.starts_with(d) && file != parent)
}
