//! Every kind of cached artefact carries the version of the code that makes it (`cache::Artefact`), part
//! of its folder's key: artefacts made by older code are never read back. This test holds those versions
//! to the code. It digests each kind's source files as the multiset of their code's statements: test
//! modules, comment lines, `use` and `mod` declarations, visibility and whitespace left out, paths cut to
//! their last two segments (`arbor_eval::formats::tree_io::load` is `tree_io::load`), the rest cut at `;`,
//! `{` and `}` and sorted. So formatting, documentation, and moving code between files and modules do not
//! count, while any change to a statement does. It compares them with `experiments/artefact-versions.txt`:
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

/// A file's code: up to its test module, without comment lines, `use` and `mod` declarations, visibility
/// or whitespace.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut in_use = false;
    for line in text.lines() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let trimmed = without_visibility(line.trim());
        if trimmed.starts_with("use ") {
            in_use = true;
        }
        if in_use {
            in_use = !trimmed.ends_with(';');
            continue;
        }
        if trimmed.starts_with("//") || (trimmed.starts_with("mod ") && trimmed.ends_with(';')) {
            continue;
        }
        out.extend(trimmed.chars().filter(|c| !c.is_whitespace()));
    }
    out
}

/// A line without `pub`, `pub(crate)`, `pub(super)` or `pub(in ..)` words.
fn without_visibility(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("pub") {
        let (before, after) = rest.split_at(at);
        let word_start = before.chars().last().is_none_or(|c| !c.is_alphanumeric() && c != '_');
        let tail = &after[3..];
        let (skip, next) = match tail.strip_prefix('(').and_then(|t| t.find(')').map(|e| &t[e + 1..])) {
            Some(after_paren) => (true, after_paren),
            None => (tail.starts_with(' '), tail),
        };
        out.push_str(before);
        if word_start && skip {
            rest = next.trim_start();
        } else {
            out.push_str("pub");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// `code` with every path cut to its last two segments.
fn short_paths(code: &str) -> String {
    let mut out = String::new();
    let mut segments: Vec<&str> = Vec::new();
    let mut rest = code;
    // Walk identifiers joined by `::`, keeping only the last two of each chain.
    while !rest.is_empty() {
        let ident_len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if ident_len > 0 {
            let (ident, tail) = rest.split_at(ident_len);
            segments.push(ident);
            if let Some(after) = tail.strip_prefix("::")
                && after.starts_with(|c: char| c.is_alphanumeric() || c == '_')
            {
                rest = after;
                continue;
            }
            out.push_str(&segments[segments.len().saturating_sub(2)..].join("::"));
            segments.clear();
            rest = tail;
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The statements of some code, cut at `;`, `{` and `}`.
fn statements(code: &str) -> impl Iterator<Item = &str> {
    code.split([';', '{', '}']).filter(|s| !s.is_empty())
}

fn digest(kind: Artefact) -> String {
    let mut code_of_all = Vec::new();
    for source in kind.sources() {
        let path = workspace().join(source);
        assert!(path.exists(), "{}: {source} is listed as its code but does not exist", kind.name());
        code_of_all.extend(files(&path).iter().map(|f| short_paths(&code(&std::fs::read_to_string(f).unwrap()))));
    }
    let mut parts: Vec<&str> = code_of_all.iter().flat_map(|c| statements(c)).collect();
    parts.sort_unstable();
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
        "# artefact kind, the version of the code that makes it (experiments/src/artefact.rs), a digest of that code.".to_owned(),
        "# Written by ARBOR_BLESS=1 cargo test --release -p arbor-experiments --test artefact_versions".to_owned(),
    ];
    for kind in Artefact::ALL {
        let (name, version, now) = (kind.name(), kind.version(), digest(kind));
        match before.get(name) {
            Some((v, d)) if *v == version && *d != now => problems.push(format!(
                "the code of `{name}` artefacts changed (digest {d} -> {now}) but its version is still {v}: bump Artefact::{kind:?}'s \
                 version in experiments/src/artefact.rs (so that artefacts of the old code are not read back), then record it"
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
fn the_digest_ignores_comments_formatting_moves_and_tests_but_not_code() {
    let sorted = |texts: &[&str]| {
        let all: Vec<String> = texts.iter().map(|t| code(t)).collect();
        let mut parts: Vec<&str> = all.iter().flat_map(|c| statements(c)).collect();
        parts.sort_unstable();
        parts.join("|")
    };
    let a = "use a::{\n    b,\n    c,\n};\nmod m;\npub fn f() -> u32 {\n    // why\n    g(1,\n      2)\n}\nfn h() {}\n#[cfg(test)]\nmod tests { fn t() {} }\n";
    // Reformatted, its items in two files, one of them made pub(crate), imports changed: the same.
    assert_eq!(sorted(&[a]), sorted(&["use d::e;\nfn h() {}\n", "pub(crate) fn f() -> u32 { g(1, 2) }\n"]));
    // A changed argument, or a different `pub`-named item, is not.
    assert_ne!(sorted(&[a]), sorted(&["fn h() {}\nfn f() -> u32 { g(1, 3) }\n"]));
    assert_eq!(without_visibility("pub(super) fn publish(pubs: u8) { pub_x }"), "fn publish(pubs: u8) { pub_x }");
    assert_eq!(
        short_paths("x=arbor_eval::formats::tree_io::load(p);y=tree_io::load(q);Vec::<u8>::new()"),
        "x=tree_io::load(p);y=tree_io::load(q);Vec::<u8>::new()"
    );
}
