//! The unit tests of `arbor_experiments::provenance` (src/provenance.rs).

use arbor_experiments::provenance::*;
use arbor_experiments::source_state;

#[test]
fn utc_stamps_match_known_dates() {
    let at = |s: u64| utc_stamp(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
    assert_eq!(at(0), "19700101-000000");
    assert_eq!(at(951_782_400), "20000229-000000");
    assert_eq!(at(1_795_315_414), "20261122-024334");
}

#[test]
fn the_build_recorded_a_commit_or_said_it_could_not() {
    let p = current();
    assert!(p.commit == "unknown" || (p.commit.len() == 40 && p.commit.chars().all(|c| c.is_ascii_hexdigit())), "{}", p.commit);
    assert_eq!(p.source_digest.len(), 16);
    assert!(p.cores >= 1 && !p.command.is_empty());
}

/// A scratch checkout: the run sees an edit to any crate (store/ included), an edited experiment file,
/// and not an untracked output folder.
#[test]
fn the_checkout_is_read_when_the_binary_runs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |p: &str, text: &str| {
        std::fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
        std::fs::write(root.join(p), text).unwrap();
    };
    write("experiments/build.rs", "fn main() {}");
    write("store/src/lib.rs", "pub fn f() {}");
    write("experiments/quickstart.ron", "Experiment()");
    let git = |args: &[&str]| source_state::git(root, args).expect("git runs");
    if source_state::git(root, &["init", "-q"]).is_none() {
        eprintln!("no git here: skipped");
        return;
    }
    git(&["-c", "user.email=a@b", "-c", "user.name=a", "add", "-A"]);
    git(&["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"]);
    let (commit, sources) = (git(&["rev-parse", "HEAD"]), source_state::source_digest(root));
    let c = checkout(root, &sources, &commit).unwrap();
    assert!(!c.dirty && !c.stale && c.sentence.contains("holds the sources"), "{}", c.sentence);
    write("runs/quickstart/report.md", "output");
    assert!(!checkout(root, &sources, &commit).unwrap().dirty, "an output folder is not a change");
    write("experiments/quickstart.ron", "Experiment(name: \"changed\")");
    let c = checkout(root, &sources, &commit).unwrap();
    assert!(c.dirty && !c.stale && c.sentence.contains("holds the sources"), "an edited experiment file is a change, not other code: {}", c.sentence);
    write("store/src/lib.rs", "pub fn g() {}");
    let c = checkout(root, &sources, &commit).unwrap();
    assert!(c.stale && c.sentence.contains("now holds other sources"), "{}", c.sentence);
    assert!(checkout(&root.join("runs"), &sources, &commit).is_none(), "not a checkout");
}
