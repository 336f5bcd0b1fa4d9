//! The runner among others, on this host and on other hosts sharing the database: its registration and
//! heartbeat, the runs it claims within the worker limits, and what it takes over from runners that
//! died here or whose host stopped heartbeating.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;

use super::state::{Met, Runner, RunnerError};
use crate::store::{Heartbeat, RunnerRegistration, Spent, Store, WorkerSession, WorkerSlot};
use crate::worker::{LeaseFence, boot_clock};

impl Runner {
    /// Registers this runner in the database and starts its heartbeat: a task of its own, so that a
    /// long tick (a slow forge, many runs) never lets the leases lapse while the process lives. When
    /// another runner has declared this one lost, `lost` turns true and the runner stops.
    pub(super) async fn register(&mut self) -> Result<(), RunnerError> {
        let ttl = self.config.runner.lease_ttl.std();
        let registered_at = boot_clock();
        self.store
            .register_runner(&RunnerRegistration {
                id: &self.owner,
                host: &self.host,
                pid: i64::from(std::process::id()),
                version: env!("CARGO_PKG_VERSION"),
                machine: &self.machine,
                ttl,
                max_workers: self.config.runner.max_workers,
            })
            .await?;
        let every = self.heartbeat_every();
        let (lost_tx, lost_rx) = watch::channel(false);
        self.lost = lost_rx;
        // Registration stamped the runner alive: its agents may run from now until the lease could lapse.
        if let Some(old) = self.fence.take() {
            old.end();
        }
        let fence = LeaseFence::start(ttl);
        fence.renewed(registered_at);
        let heart = Heart { store: self.store.clone(), id: self.owner.clone(), ttl, fence: fence.clone() };
        self.fence = Some(fence);
        self.heartbeat = Some(tokio::spawn(beat(heart, every, lost_tx)));
        self.stop_orphans().await
    }

    /// Stops the agents of this host that a runner declared lost left behind: their sessions ended as
    /// `host_lost` (another host took their runs over), but a runner killed before it could stop them
    /// leaves them running with no supervisor, counted by no limit and spending on a run that moved
    /// on (found by the soak: three agents on a host of two). Checked by pid and start time, so a
    /// reused pid is never touched; each runner of the host does it once, as it starts. What such an
    /// agent printed after its session ended is then read for what it spent, which goes on its run.
    async fn stop_orphans(&self) -> Result<(), RunnerError> {
        let grace = self.config.worker.kill_grace.std();
        for s in self.store.host_lost_sessions(&self.host).await? {
            let (Some(pid), Some(start)) = (s.pid, s.pid_start_time) else { continue };
            let Ok(start) = u64::try_from(start) else { continue };
            let output = s.output_path.as_deref().map(std::path::Path::new);
            let stopped = crate::worker::stop_recorded(pid, start, output, grace).await;
            if !stopped.is_empty() {
                tracing::warn!(
                    run = s.run_id,
                    pid,
                    "stopped {} left running by a runner declared lost",
                    crate::worker::describe_stopped(&stopped)
                );
            }
            self.settle_lost_spend(&s, pid).await?;
        }
        Ok(())
    }

    /// Puts on the run what a `host_lost` session's agent reported after its session ended: only when
    /// its output grew past what its supervisor had read (once settled, the offset is at the end).
    async fn settle_lost_spend(&self, s: &WorkerSession, pid: i32) -> Result<(), RunnerError> {
        let (Some(output), Some(log)) = (s.output_path.as_deref(), s.log_path.as_deref()) else {
            return Ok(());
        };
        let grown =
            std::fs::metadata(output).is_ok_and(|m| m.len() > u64::try_from(s.output_offset).unwrap_or(0));
        if !grown {
            return Ok(());
        }
        let run = self.store.run(s.run_id).await?;
        let spec = self.adopt_spec(s, &run, pid, PathBuf::from(output), PathBuf::from(log)).await?;
        let read = match crate::worker::output_spend(&spec).await {
            Ok(read) => read,
            Err(e) => {
                tracing::warn!(run = s.run_id, error = %e, "cannot read a lost agent's output for its cost");
                return Ok(());
            }
        };
        let spent = Spent {
            cost_usd: read.cost_usd.unwrap_or(0.0),
            input_tokens: i64::try_from(read.tokens.input).unwrap_or(i64::MAX),
            output_tokens: i64::try_from(read.tokens.output).unwrap_or(i64::MAX),
            estimated: read.estimated,
        };
        let up_to = i64::try_from(read.read_up_to).unwrap_or(i64::MAX);
        if let Some(added) = self.store.settle_lost_spend(s.id, s.output_offset, up_to, &spent).await?
            && added > 0.0
        {
            tracing::info!(
                run = s.run_id,
                added,
                "a lost agent's spending after its session ended is on its run"
            );
        }
        Ok(())
    }

    /// How often the runner heartbeats: every loop interval, and at least three times per lease ttl.
    pub(super) fn heartbeat_every(&self) -> Duration {
        self.config.runner.loop_interval.std().min(self.config.runner.lease_ttl.std() / 3)
    }

    /// Whether this runner was declared lost, as its heartbeat learnt (it lapsed: paused, or cut off).
    pub(super) fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    pub(super) fn lost_error(&self) -> RunnerError {
        RunnerError::Lost(format!(
            "runner {} was declared lost: it did not heartbeat for runner.lease_ttl ({}) — \
             paused, or cut off from the database — and its runs were taken over. Its workers were stopped; \
             nothing it wrote since counts. Start it again (cron does).",
            self.owner, self.config.runner.lease_ttl
        ))
    }

    /// The limits a new worker of this runner is taken under.
    pub(super) fn slot(&self) -> WorkerSlot<'_> {
        WorkerSlot {
            runner: &self.owner,
            host: &self.host,
            host_max: self.config.runner.max_workers,
            cluster_max: self.config.cluster.as_ref().map(|c| c.max_workers),
        }
    }

    /// Claims this tick's runs: every free run that only needs watching, and as many that need a worker
    /// as this host and the cluster have free slots. Returns the free slots.
    pub(super) async fn claim(&mut self) -> Result<u32, RunnerError> {
        let free = self.store.free_worker_slots(&self.slot()).await?;
        let ttl = self.config.runner.lease_ttl.std();
        let claimed = self.store.claim_runs(&self.owner, ttl, free).await?;
        if !claimed.is_empty() {
            tracing::debug!(runs = ?claimed, "claimed runs");
        }
        Ok(free)
    }

    /// Before anything else in a tick: runners whose heartbeat lapsed are declared lost (their workers
    /// end as `host_lost` and their runs are free for whoever claims them), runners of this host whose
    /// process is gone hand their runs to this one, and the workers those left running here are adopted.
    pub(super) async fn reconcile(&mut self) -> Result<(), RunnerError> {
        let mut this_one_lost = false;
        for lost in self.store.declare_lost_runners().await? {
            tracing::warn!(
                runner = lost.id,
                host = lost.host,
                "a runner stopped heartbeating: {} worker(s) ended as host_lost, {} run(s) free to be taken over",
                lost.sessions.len(),
                lost.runs_freed
            );
            this_one_lost |= lost.id == self.owner;
        }
        if this_one_lost {
            // Thawed past its lease, its own tick can be the first to see the lapse, before its heartbeat
            // does: it stops here, its workers' sessions already ended and its runs already freed.
            return Err(self.lost_error());
        }
        let ttl = self.config.runner.lease_ttl.std();
        let mut alive_here = HashSet::new();
        for r in self.store.live_runners_of(&self.host).await? {
            if r.machine != self.machine {
                // Its pid means nothing here: never judged by it, and the mistake is said once.
                if self.host_name_clashes.insert(r.id.clone()) {
                    let why = format!(
                        "runner {} on another machine uses this host's name {:?}: give each machine its own \
                         runner.host_name, or their workers may be taken for each other's",
                        r.id, self.host
                    );
                    tracing::error!("{why}");
                    if let Ok(mut met) = self.met.lock() {
                        met.push(Met::Failed(why));
                    }
                }
                alive_here.insert(r.id);
                continue;
            }
            let gone = r.id != self.owner
                && i32::try_from(r.pid).is_ok_and(|p| !crate::worker::process::is_alive(p));
            if gone && self.store.declare_runner_died(&r.id, &self.owner, ttl).await? {
                tracing::info!(runner = r.id, "a runner of this host died; its runs pass to this runner");
            } else {
                alive_here.insert(r.id);
            }
        }
        for s in self.store.live_worker_sessions().await? {
            if s.host != self.host || self.pool.contains_key(&s.id) {
                continue;
            }
            // Supervised by a live runner of this host (this one included): not ours to touch.
            if s.runner_id.as_ref().is_some_and(|r| alive_here.contains(r)) {
                continue;
            }
            // Its supervisor is gone (or it was started by hand): take the run, then the worker.
            if !self.store.claim_run(s.run_id, &self.owner, ttl).await? {
                continue;
            }
            self.store.adopt_worker_session(s.id, &self.owner).await?;
            self.take_over(s).await?;
        }
        Ok(())
    }
}

/// What the heartbeat needs: the runner's id and lease, and the fence its agents run behind.
struct Heart {
    store: Store,
    id: String,
    ttl: Duration,
    fence: LeaseFence,
}

/// The heartbeat loop: stamps the runner alive and renews its leases every `every`, until it learns that
/// it was declared lost. A failed beat is logged and tried again: if the database stays out of reach
/// for the ttl, other hosts take the runs over, and the next beat that gets through says so. Each beat
/// that renews the lease lets the agents run on (the fence freezes them when none did for a while).
async fn beat(heart: Heart, every: Duration, lost: watch::Sender<bool>) {
    let Heart { store, id, ttl, fence } = heart;
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let sent_at = boot_clock();
        // Each beat runs to its end in a task of its own, even when this loop is aborted (the runner
        // stopping): a transaction cut off between BEGIN and COMMIT would keep SQLite's write lock on a
        // pooled connection, and every other write would wait out the busy timeout.
        let one = tokio::spawn({
            let (store, id) = (store.clone(), id.clone());
            async move { store.heartbeat(&id, ttl).await }
        });
        match one.await {
            Ok(Ok(Heartbeat::Alive { .. })) => fence.renewed(sent_at),
            Ok(Ok(Heartbeat::Lost)) => {
                tracing::error!(runner = id, "this runner was declared lost; stopping");
                let _ = lost.send(true);
                return;
            }
            Ok(Err(e)) => tracing::warn!(runner = id, "heartbeat failed: {e}"),
            Err(e) => tracing::warn!(runner = id, "heartbeat failed: {e}"),
        }
    }
}

/// This machine's identity: systemd's machine id where there is one, else the kernel's host name (not
/// `runner.host_name`, which a person chose and may have given to two machines).
pub(super) fn machine_id() -> String {
    ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|id| id.trim().to_string())
        .find(|id| !id.is_empty())
        .or_else(|| nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
