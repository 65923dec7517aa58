//! What the integration tests share.

use std::path::Path;
use std::process::{Command, Output};

/// The workspace's root (experiment files and fixtures are named from it).
pub fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Runs the `arbor` binary in the workspace.
pub fn arbor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbor")).args(args).current_dir(workspace()).output().unwrap()
}

/// Runs `arbor` and returns its standard output; a failure shows its standard error.
pub fn ok(args: &[&str]) -> String {
    let out = arbor(args);
    assert!(out.status.success(), "arbor {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// One ranked item: document, byte spans, score.
pub type Ranked = (String, Vec<[usize; 2]>, f32);

/// Whether `got` is the ranking `want`: the same score at every rank (within 1e-4), and the same item,
/// or one `want` holds at another rank with a score within 1e-4 (a near-tie two encodings of one text,
/// batched differently, may order either way).
pub fn same_ranking(got: &[Ranked], want: &[Ranked]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} items, not {}: {got:?} vs {want:?}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if (g.2 - w.2).abs() > 1e-4 {
            return Err(format!("rank {}: score {} vs {}: {got:?} vs {want:?}", i + 1, g.2, w.2));
        }
        let tied = want.iter().any(|o| (o.2 - w.2).abs() <= 1e-4 && (o.0.as_str(), &o.1) == (g.0.as_str(), &g.1));
        if (g.0.as_str(), &g.1) != (w.0.as_str(), &w.1) && !tied {
            return Err(format!("rank {}: {g:?} vs {w:?}: {got:?} vs {want:?}", i + 1));
        }
    }
    Ok(())
}
