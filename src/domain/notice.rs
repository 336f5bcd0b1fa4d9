//! Names that notices are recorded under, shared by the runner that records them and the dashboard that
//! lists them, so the two cannot drift apart.

/// The notice told once per head when a pull request's checks have not reported within
/// `runner.check_timeout`: its key is this prefix followed by the head's sha.
pub const CHECKS_TIMEOUT_KEY: &str = "checks_timeout:";

/// The key of the checks-overdue notice for the head `sha`.
pub fn checks_timeout_key(sha: &str) -> String {
    format!("{CHECKS_TIMEOUT_KEY}{sha}")
}

/// The `kind` a notice of the runner abandoning a run is recorded with.
pub const ABANDONED_NOTICE_KIND: &str = "abandoned";
