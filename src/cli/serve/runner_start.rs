//! Cron mode meets webhooks: a runner exits when idle, so a delivery often finds none to wake.
//! `executor serve` then starts one — its own executable, `executor runner` with the same config — the
//! way cron would, only sooner.
//!
//! Why here, and why like this: a delivery raises the wake counter in the database (see
//! `store::webhooks`), and that counter is what this loop watches, so a delivery received by any
//! `serve` over the same database is seen. A runner that begins a tick takes the counter; one still
//! pending means nobody has looked. Then, when no runner is alive in the database (or the pending wake
//! has outlived [`STALE`], a runner busy elsewhere or dead without a word), one is started. The runner's
//! own instance lock and registration keep it to one per data directory, so starting one too many is
//! harmless: it exits at once. A runner that keeps failing before its first tick (a missing agent, a
//! broken config) is not started again in a loop: each attempt that leaves the wake pending doubles
//! the wait before the next, up to [`MAX_BACKOFF`].

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};
use tokio::sync::watch;

use crate::domain::WakeScope;
use crate::store::Store;

/// How often the wake counter is read.
const POLL: Duration = Duration::from_millis(250);
/// A wake pending this long is answered with a runner even though one is registered alive.
const STALE: Duration = Duration::from_secs(30);
const FIRST_BACKOFF: Duration = Duration::from_secs(5);
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// How to start a runner: this executable, the config it was given, where the runner's output goes.
pub struct RunnerCommand {
    pub exe: PathBuf,
    pub config: Option<PathBuf>,
    pub log: PathBuf,
}

impl RunnerCommand {
    fn spawn(&self) -> std::io::Result<Child> {
        if let Some(dir) = self.log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log)?;
        let mut command = Command::new(&self.exe);
        if let Some(config) = &self.config {
            command.arg("--config").arg(config);
        }
        command.arg("runner").stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
        // Its own process group: a Ctrl-C meant for `serve` does not stop a runner mid-worker.
        command.process_group(0);
        command.spawn()
    }
}

/// Watches the wake counter until `shutdown`, starting a runner when a wake finds none.
pub async fn start_runners_when_woken(
    store: Store,
    command: RunnerCommand,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut child: Option<Child> = None;
    // The wake count a started runner was meant to see, and when the next start may be.
    let mut started_for: Option<i64> = None;
    let mut backoff = FIRST_BACKOFF;
    let mut not_before = Instant::now();
    // Since when the current wake has been pending.
    let mut pending_since: Option<(i64, Instant)> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = shutdown.changed() => return,
        }
        if let Some(c) = child.as_mut() {
            match c.try_wait() {
                Ok(None) => continue, // still running: it sees the wake
                Ok(Some(status)) => tracing::info!("the runner started for a webhook ended: {status}"),
                Err(e) => tracing::warn!("waiting for the runner started for a webhook: {e}"),
            }
            child = None;
        }
        let wake = match store.wake_state(WakeScope::Runner).await {
            Ok(w) => w,
            Err(e) => {
                tracing::debug!("reading the wake counter: {e}");
                continue;
            }
        };
        if !wake.pending() {
            pending_since = None;
            backoff = FIRST_BACKOFF;
            started_for = None;
            continue;
        }
        if let Some(count) = started_for.take() {
            // The runner started for this wake ended without taking it: it failed before its tick.
            if wake.seen < count {
                not_before = Instant::now() + backoff;
                tracing::warn!(
                    "the runner started for a webhook ended without a tick; next attempt in {}s (see {})",
                    backoff.as_secs(),
                    command.log.display()
                );
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
        let since = match pending_since {
            Some((count, at)) if count == wake.requested => at,
            _ => {
                pending_since = Some((wake.requested, Instant::now()));
                Instant::now()
            }
        };
        if Instant::now() < not_before {
            continue;
        }
        let live = store.live_runner_count().await.unwrap_or(0);
        if live > 0 && since.elapsed() < STALE {
            continue;
        }
        match command.spawn() {
            Ok(c) => {
                tracing::info!(
                    pid = c.id(),
                    "a webhook asked for a look and no runner is running: started `executor runner`"
                );
                child = Some(c);
                started_for = Some(wake.requested);
                pending_since = None;
            }
            Err(e) => {
                tracing::warn!("starting `executor runner` for a webhook: {e}");
                not_before = Instant::now() + backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}
