//! `executor runner` without `--once` works until nothing is left to do — and CI it started is still
//! something to do: it waits while a check its host started runs (at most `runner.check_timeout` from
//! the check's start), so a pull request goes on to its review in the same invocation, not the next.

use std::time::Duration;

use tokio::sync::watch;

use super::state::Runner;

/// How often a check's process is looked at while waiting.
const LOOK_EVERY: Duration = Duration::from_secs(1);

impl Runner {
    /// Whether CI this host started still runs; if so, waits until a check ends (then a tick acts on
    /// it) or `runner.loop_interval` passes, and says true. False at once when none runs.
    pub(super) async fn waited_for_local_ci(&self, shutdown: &mut watch::Receiver<bool>) -> bool {
        let Ok(pending) = self.store.pending_local_checks(&self.host).await else { return false };
        let timeout = chrono::Duration::from_std(self.config.runner.check_timeout.std())
            .unwrap_or(chrono::Duration::MAX);
        let now = chrono::Utc::now();
        if !pending.iter().any(|c| now - c.started_at < timeout) {
            return false;
        }
        let until = tokio::time::Instant::now() + self.config.runner.loop_interval.std();
        let mut lost = self.lost.clone();
        while tokio::time::Instant::now() < until {
            for forge in self.forges.values() {
                if forge.poll_ci().await.is_ok_and(|ended| ended > 0) {
                    return true;
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(LOOK_EVERY) => {}
                _ = shutdown.changed() => return true,
                _ = lost.changed() => return true,
            }
        }
        true
    }
}
