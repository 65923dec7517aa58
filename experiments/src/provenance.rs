//! The code and machine behind a report ([`arbor_eval::scoring::report::Provenance`]): arbor's version, the git
//! commit, dirty flag and source digest captured when the binary was built (build.rs), the Cargo.lock
//! digest, the command line, the backend and the cores.

use arbor_eval::scoring::report::Provenance;

/// A digest of the workspace's sources as this binary was built from them: a finished run whose report
/// names another was made by other code.
pub const SOURCES: &str = env!("ARBOR_SOURCES");

/// This process's provenance.
pub fn current() -> Provenance {
    Provenance {
        version: env!("CARGO_PKG_VERSION").into(),
        commit: env!("ARBOR_COMMIT").into(),
        dirty: env!("ARBOR_DIRTY") != "false",
        source_digest: SOURCES.into(),
        cargo_lock: env!("ARBOR_CARGO_LOCK").into(),
        command: std::env::args().collect(),
        backend: arbor_models::backend::NAME.into(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        started: crate::run::utc_stamp(std::time::SystemTime::now()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_build_recorded_a_commit_or_said_it_could_not() {
        let p = super::current();
        assert!(p.commit == "unknown" || (p.commit.len() == 40 && p.commit.chars().all(|c| c.is_ascii_hexdigit())), "{}", p.commit);
        assert_eq!(p.source_digest.len(), 16);
        assert!(p.cores >= 1 && !p.command.is_empty());
    }
}
