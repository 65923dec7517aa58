//! The code and machine behind a report ([`arbor_eval::scoring::report::Provenance`]): arbor's version, the git
//! commit, dirty flag and source digest captured when the binary was built (build.rs), the Cargo.lock
//! digest, the command line, the backend and the cores; and, where the binary runs beside the checkout it
//! was built from, that checkout as the run finds it ([`checkout`]): its dirty flag then is today's, and a
//! binary older than the checkout's sources says so, on the terminal and in the report.

use std::path::Path;

use arbor_eval::scoring::report::Provenance;

use crate::source_state;

/// A digest of the workspace's sources as this binary was built from them: a finished run whose report
/// names another was made by other code.
pub const SOURCES: &str = env!("ARBOR_SOURCES");

/// A checkout as a run finds it.
pub struct Checkout {
    /// Uncommitted changes now.
    pub dirty: bool,
    /// It holds other sources than the binary was built from.
    pub stale: bool,
    /// What the report keeps.
    pub sentence: String,
}

/// The checkout at `root` against what the binary was built from (`sources`, `commit`): `None` when
/// `root` is not a git checkout of arbor.
pub fn checkout(root: &Path, sources: &str, commit: &str) -> Option<Checkout> {
    if !root.join("experiments").join("build.rs").is_file() {
        return None;
    }
    let head = source_state::git(root, &["rev-parse", "HEAD"])?;
    let dirty = source_state::dirty(root)?;
    let now = source_state::source_digest(root);
    let state = if dirty { "with uncommitted changes" } else { "clean" };
    let stale = now != sources;
    let sentence = if !stale && head == commit {
        format!("{} at commit `{head}`, {state}, holds the sources this binary was built from", root.display())
    } else if !stale {
        format!("{} is now at commit `{head}` ({state}), whose sources are those this binary was built from", root.display())
    } else {
        format!(
            "**{} now holds other sources (`{now}`, commit `{head}`, {state}) than this binary was built from (`{sources}`, \
             commit `{commit}`)**: these figures come from the older code; rebuild to run the checkout's",
            root.display()
        )
    };
    Some(Checkout { dirty, stale, sentence })
}

/// This process's provenance, the checkout looked at when the binary runs beside it.
pub fn current() -> Provenance {
    let (commit, built_dirty) = (env!("ARBOR_COMMIT"), env!("ARBOR_DIRTY") != "false");
    let found = checkout(Path::new(env!("ARBOR_WORKSPACE")), SOURCES, commit);
    if let Some(c) = found.as_ref().filter(|c| c.stale) {
        eprintln!("warning: {}", c.sentence.replace("**", ""));
    }
    Provenance {
        version: env!("CARGO_PKG_VERSION").into(),
        commit: commit.into(),
        dirty: found.as_ref().map_or(built_dirty, |c| c.dirty),
        source_digest: SOURCES.into(),
        cargo_lock: env!("ARBOR_CARGO_LOCK").into(),
        command: std::env::args().collect(),
        backend: arbor_models::backend::NAME.into(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        started: utc_stamp(std::time::SystemTime::now()),
        checkout: found.map(|c| c.sentence),
    }
}

/// `YYYYMMDD-HHMMSS` in UTC.
pub fn utc_stamp(t: std::time::SystemTime) -> String {
    let secs = t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}-{:02}{:02}{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}
