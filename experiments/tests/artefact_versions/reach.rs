//! The files a kind's code reaches, derived from the code itself so that no list can be incomplete: from
//! its root files, every path the code names (in `use` trees and in expressions: `crate::`, `self::`,
//! `super::`, `arbor_<crate>::`, a child module's name) is resolved to the file of the longest module it
//! names, and the module files a reached non-root file declares (`mod train;`) are reached too. A crate's
//! lib.rs, once reached, brings what it re-exports. What this cannot see: a trait impl for a reached type
//! written in a file nothing names (none in arbor: impls sit beside their type or their trait). The
//! versions' own file ([`VERSIONS`]) is left out.

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use super::lex::{Token, tokens, without_tests};

/// The workspace's crates: the name code calls each by, and its folder.
pub const CRATES: [(&str, &str); 9] = [
    ("arbor_files", "files"),
    ("arbor_datasets", "datasets"),
    ("arbor_models", "models"),
    ("arbor_losses", "losses"),
    ("arbor_eval", "eval"),
    ("arbor_trainers", "trainers"),
    ("arbor_store", "store"),
    ("arbor_experiments", "experiments"),
    ("arbor_ablations", "ablations"),
];

/// The folder of the versions themselves and the kinds' root lists: reached by whatever names the cache,
/// never digested (a bump of one kind's version would otherwise change every kind's code).
pub const VERSIONS: &str = "experiments/src/artefact";

/// The file of the versions, in [`VERSIONS`].
pub const VERSIONS_FILE: &str = "experiments/src/artefact/versions.rs";

/// A module: its crate's folder and its path below the crate root.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Module {
    krate: String,
    path: Vec<String>,
}

impl Module {
    /// The module a file (relative to the workspace) is, if it is a library file of a workspace crate.
    fn of(file: &Path) -> Option<Module> {
        let parts: Vec<String> = file.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if parts.len() < 3 || parts[1] != "src" || !CRATES.iter().any(|(_, f)| *f == parts[0]) {
            return None;
        }
        let mut path: Vec<String> = parts[2..].to_vec();
        let last = path.pop()?.strip_suffix(".rs")?.to_owned();
        if !(last == "mod" || (last == "lib" && path.is_empty())) {
            path.push(last);
        }
        Some(Module { krate: parts[0].clone(), path })
    }

    /// The file of this module, if it exists.
    fn file(&self, root: &Path) -> Option<PathBuf> {
        let src = Path::new(&self.krate).join("src");
        let candidates = match self.path.is_empty() {
            true => vec![src.join("lib.rs")],
            false => {
                let joined = self.path.join("/");
                vec![src.join(format!("{joined}.rs")), src.join(&joined).join("mod.rs")]
            }
        };
        candidates.into_iter().find(|c| root.join(c).is_file())
    }

    /// The file of the longest prefix of `self` + `rest` that is a module file.
    fn resolve(&self, rest: &[String], root: &Path) -> Option<PathBuf> {
        (0..=rest.len()).rev().find_map(|k| {
            let mut path = self.path.clone();
            path.extend_from_slice(&rest[..k]);
            Module { krate: self.krate.clone(), path }.file(root)
        })
    }
}

/// The paths one `use` declaration imports, each as `a::b::c` (its tree expanded).
pub fn imported(declaration: &[Token]) -> Vec<String> {
    paths(declaration).into_iter().map(|p| p.join("::")).collect()
}

/// Every path of `tokens`: `use` trees expanded (`use a::{b, c::d}` is `a::b` and `a::c::d`), and every
/// chain `x::y::z` elsewhere.
fn paths(tokens: &[Token]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i].is("use") {
            i = use_tree(tokens, i + 1, &[], &mut out);
            continue;
        }
        if let Some(w) = tokens[i].word() {
            let mut chain = vec![w.to_owned()];
            let mut j = i + 1;
            while j + 1 < tokens.len() && tokens[j].is("::") {
                match tokens[j + 1].word() {
                    Some(next) => chain.push(next.to_owned()),
                    None => break,
                }
                j += 2;
            }
            if chain.len() > 1 {
                out.push(chain);
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// Parses one use tree from `i` under `prefix` into `out`; returns where it ends.
fn use_tree(tokens: &[Token], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    if i < tokens.len() && tokens[i].is("::") {
        i += 1;
    }
    while i < tokens.len() {
        let t = &tokens[i];
        if t.is("{") {
            i += 1;
            loop {
                i = use_tree(tokens, i, &path, out);
                match tokens.get(i) {
                    Some(t) if t.is(",") => i += 1,
                    Some(t) if t.is("}") => return i + 1,
                    _ => return i,
                }
                if tokens.get(i).is_some_and(|t| t.is("}")) {
                    return i + 1;
                }
            }
        } else if t.is("as") {
            aliased(&path, tokens.get(i + 1), out);
            return i + 2;
        } else if let Some(w) = t.word() {
            path.push(w.to_owned());
            i += 1;
            if tokens.get(i).is_some_and(|t| t.is("as")) {
                aliased(&path, tokens.get(i + 1), out);
                return i + 2;
            }
            if !tokens.get(i).is_some_and(|t| t.is("::")) {
                out.push(path);
                return i;
            }
            i += 1;
        } else if t.is("*") {
            out.push(path);
            return i + 1;
        } else {
            if path.len() > prefix.len() {
                out.push(path);
            }
            return if t.is(";") { i + 1 } else { i };
        }
    }
    i
}

/// An import under another name: the path (what it reaches) and the path with its alias (`a::b::as::P`,
/// so that the imports' digest tells `A as P, B as Q` from `A as Q, B as P`).
fn aliased(path: &[String], alias: Option<&Token>, out: &mut Vec<Vec<String>>) {
    out.push(path.to_vec());
    if let Some(alias) = alias.and_then(Token::word) {
        out.push([path, &["as".to_owned(), alias.to_owned()]].concat());
    }
}

/// The names of the modules a file declares (`mod x;`, `pub mod x;`).
fn declared_modules(tokens: &[Token]) -> Vec<String> {
    tokens.windows(3).filter(|w| w[0].is("mod") && w[2].is(";")).filter_map(|w| w[1].word().map(str::to_owned)).collect()
}

/// The file a path names from within `module`, if it names a file of the workspace.
fn resolve(module: &Module, path: &[String], root: &Path) -> Option<PathBuf> {
    let first = path[0].as_str();
    if let Some((_, folder)) = CRATES.iter().find(|(name, _)| *name == first) {
        return Module { krate: folder.to_string(), path: vec![] }.resolve(&path[1..], root);
    }
    match first {
        "crate" => Module { krate: module.krate.clone(), path: vec![] }.resolve(&path[1..], root),
        "self" => module.resolve(&path[1..], root),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = Module { krate: module.krate.clone(), path: module.path[..module.path.len().checked_sub(ups)?].to_vec() };
            base.resolve(&path[ups..], root)
        }
        // A child module's name (`train::run`): only where that child exists.
        _ => {
            let child = Module { krate: module.krate.clone(), path: [module.path.clone(), vec![first.to_owned()]].concat() };
            child.file(root).and_then(|_| module.resolve(path, root))
        }
    }
}

/// Every file `roots` reach (files and folders relative to `root`; a folder stands for every file under
/// it), sorted.
pub fn reach(roots: &[&str], root: &Path) -> Vec<PathBuf> {
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut queue: VecDeque<PathBuf> = roots.iter().flat_map(|r| files(root, Path::new(r))).collect();
    while let Some(file) = queue.pop_front() {
        if file.starts_with(VERSIONS) || !seen.insert(file.clone()) {
            continue;
        }
        let Some(module) = Module::of(&file) else { continue };
        let text = std::fs::read_to_string(root.join(&file)).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let toks = without_tests(tokens(&text));
        let mut next: Vec<PathBuf> = paths(&toks).iter().filter_map(|p| resolve(&module, p, root)).collect();
        if !module.path.is_empty() {
            next.extend(declared_modules(&toks).into_iter().filter_map(|m| module.resolve(&[m], root)));
        }
        queue.extend(next.into_iter().filter(|f| !seen.contains(f)));
    }
    seen.into_iter().collect()
}

/// The workspace files the code of `file` (relative to `root`) names, itself left out: its imports, not
/// the modules it declares.
pub fn imports(file: &Path, root: &Path) -> Vec<PathBuf> {
    let Some(module) = Module::of(file) else { return Vec::new() };
    let text = std::fs::read_to_string(root.join(file)).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut out: Vec<PathBuf> = paths(&without_tests(tokens(&text))).iter().filter_map(|p| resolve(&module, p, root)).filter(|f| f != file).collect();
    out.sort();
    out.dedup();
    out
}

/// The Rust files at `path` (itself, or every one under a folder), relative to `root`.
pub fn files(root: &Path, path: &Path) -> Vec<PathBuf> {
    let full = root.join(path);
    assert!(full.exists(), "{} does not exist", full.display());
    if full.is_file() {
        return vec![path.to_owned()];
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display())) {
        let name = entry.unwrap().file_name();
        let sub = path.join(&name);
        if root.join(&sub).is_dir() || sub.extension().is_some_and(|e| e == "rs") {
            out.extend(files(root, &sub));
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        paths(&tokens(text)).iter().map(|p| p.join("::")).collect()
    }

    #[test]
    fn use_trees_and_chains_are_paths() {
        assert_eq!(
            names("use a::{b, c::{d, e as f}, g::*};\nfn x() { crate::h::i(super::j, k) }"),
            ["a::b", "a::c::d", "a::c::e", "a::c::e::as::f", "a::g", "crate::h::i", "super::j"]
        );
        assert_eq!(names("pub use self::m::N;"), ["self::m::N"]);
        // Swapped aliases are other imports.
        assert_ne!(names("use a::{A as P, B as Q};"), names("use a::{A as Q, B as P};"));
    }

    #[test]
    fn modules_and_files_correspond() {
        let m = Module::of(Path::new("eval/src/scoring/metrics.rs")).unwrap();
        assert_eq!((m.krate.as_str(), m.path.join("::")), ("eval", "scoring::metrics".to_owned()));
        assert_eq!(Module::of(Path::new("trainers/src/lib.rs")).unwrap().path, Vec::<String>::new());
        assert_eq!(Module::of(Path::new("experiments/src/methods/mod.rs")).unwrap().path, ["methods"]);
        assert!(Module::of(Path::new("experiments/tests/integration/pipeline.rs")).is_none());
    }
}
