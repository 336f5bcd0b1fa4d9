//! The log tails `fix_ci` is given: the last lines of each failing check's job at the head, whichever
//! forge ran it. Each forge says how to fetch one job's log (its last [`LOG_BYTES`]); what is kept of it
//! and what a failure to fetch means are the same everywhere.

use std::collections::HashMap;
use std::future::Future;

use super::{ForgeError, PrSnapshot};

/// Lines of a failed job's log a `fix_ci` worker gets.
const LOG_LINES: usize = 200;
/// The end of a job's log that is read (a log can be hundreds of megabytes).
pub(crate) const LOG_BYTES: usize = 256 * 1024;

/// The last lines of the log of each failing check at `pr`'s head that names its job, by check name.
/// `fetch` reads a job's log by its id. A log that cannot be read (expired, missing) is left out: that
/// check's summary and link stand in for it. A rate limit stops every call anyway: it is the error.
pub(crate) async fn failed_job_logs<Fetch, Fetched>(
    pr: &PrSnapshot,
    fetch: Fetch,
) -> Result<HashMap<String, String>, ForgeError>
where
    Fetch: Fn(i64) -> Fetched,
    Fetched: Future<Output = Result<String, ForgeError>>,
{
    let mut logs = HashMap::new();
    for check in pr.checks_at_head().into_iter().filter(|c| c.status.is_failing()) {
        let Some(job) = check.job_id else { continue };
        match fetch(job).await {
            Ok(text) => {
                logs.insert(check.name.clone(), last_lines(&text, LOG_LINES));
            }
            Err(e) if e.is_rate_limit() => return Err(e),
            Err(e) => tracing::info!("the log of job {job} ({}) is not available: {e}", check.name),
        }
    }
    Ok(logs)
}

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_of_a_log() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a", 5), "a");
    }
}
