//! Every kind of cached artefact carries the version of the code that makes it (`cache::Artefact`), part
//! of its folder's key: artefacts made by older code are never read back. This test holds those versions
//! to the code. A kind's code is every file its roots (`Artefact::sources`) reach (reach.rs: every path
//! the code names, followed through the workspace's crates), and its digest is those files' paths, their
//! imports as a set (rustfmt sorts them) and their code in order (lex.rs: comments, formatting and
//! `#[cfg(test)]` items left out; nothing else sorted, so a moved statement or a swapped branch counts).
//! It compares them with
//! `experiments/artefact-versions.txt`:
//!
//! - the code changed under the same version: fails, asking for the version to be bumped;
//! - the version went down: fails (a version number, once used, is never used again for other code);
//! - the version was bumped: fails until the new line is recorded, which
//!   `ARBOR_BLESS=1 cargo test --release -p arbor-experiments --test artefact_versions` does (it never records
//!   a changed digest under an unchanged version, nor a lower version).

mod lex;
mod reach;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use arbor_experiments::cache::{Artefact, key};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

const LOCK: &str = "experiments/artefact-versions.txt";

/// The lock's first line names the digest it holds: a lock written by an older digest (2: imports in
/// order; 1: sorted statements of hand-listed files) is re-recorded once under the same versions by
/// ARBOR_BLESS (never lower ones).
const DIGEST: &str = "# digest 3: every file the roots reach, its imports as a set, its code in order";

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
    key(&code)
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
    let bless = std::env::var_os("ARBOR_BLESS").is_some();
    let current = std::fs::read_to_string(workspace().join(LOCK)).unwrap_or_default().starts_with(DIGEST);
    let mut problems = Vec::new();
    let mut lines = vec![
        DIGEST.to_owned(),
        "# artefact kind, the version of the code that makes it (experiments/src/artefact.rs), a digest of that code.".to_owned(),
        "# Written by ARBOR_BLESS=1 cargo test --release -p arbor-experiments --test artefact_versions".to_owned(),
    ];
    for kind in Artefact::ALL {
        let (name, version, now) = (kind.name(), kind.version(), digest(kind, &workspace()));
        match before.get(name) {
            Some((v, _)) if !current && version >= *v && bless => {}
            Some((v, d)) if *v == version && *d != now && current => problems.push(format!(
                "the code of `{name}` artefacts changed (digest {d} -> {now}) but its version is still {v}: bump Artefact::{kind:?}'s \
                 version in experiments/src/artefact.rs (so that artefacts of the old code are not read back), then record it"
            )),
            Some((v, _)) if version < *v => problems.push(format!(
                "`{name}`: version {version} is below the recorded {v}: versions only go up (artefacts of version {version}'s code \
                 may still be in caches)"
            )),
            Some((v, d)) if *v == version && *d == now => {}
            _ if !current && !bless => problems.push(format!("`{name}`: the lock holds an older digest: run with ARBOR_BLESS=1")),
            _ if bless => {}
            Some((v, _)) => problems.push(format!("`{name}`: version {v} -> {version} is not recorded: run with ARBOR_BLESS=1")),
            None => problems.push(format!("`{name}` is not recorded: run with ARBOR_BLESS=1")),
        }
        lines.push(format!("{name} {version} {now}"));
    }
    if problems.is_empty() && bless {
        std::fs::write(workspace().join(LOCK), lines.join("\n") + "\n").unwrap();
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
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
    let edits: [(&str, &str, &str, &[Artefact]); 4] = [
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
        ("trainers/src/objective.rs", "use crate::data::TrainDoc;", "use crate::data::TrainDoc;\nconst X: u8 = 1;", &trained),
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
    edit(after.path(), reach::VERSIONS, "Artefact::Raptor => ", "Artefact::Raptor => 1 + ");
    // Imports in another order (rustfmt's sorting) do not count either.
    edit(after.path(), "trainers/src/window.rs", "use crate::data::{TrainDoc, TrainQuery};", "use crate::data::{TrainQuery, TrainDoc};");
    assert_eq!(digest(Artefact::Dense, before.path()), digest(Artefact::Dense, after.path()));
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
