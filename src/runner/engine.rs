//! The runner process: one tick after another until nothing is left to do (seed: "runs until no
//! unprocessed tasks remain, then exits; cron restarts it").

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::recording::{Recording, supervise_recorded};
use super::state::{LiveWorker, Met, Runner, RunnerError, TickReport};
use crate::config::{Config, Repo};
use crate::domain::{Actor, Run};
use crate::forge::{Forge, PrSnapshot};
use crate::github::GitHubClient;
use crate::store::{RunMemory, Store};
use crate::worker::{Prompts, WorkerError, WorkerOutcome, WorkerUpdate};

/// After this many busy ticks in a row with no worker alive the runner exits anyway, so that a step
/// that keeps "succeeding" without effect can never spin; cron starts it again.
const MAX_BUSY_TICKS: usize = 50;

impl Runner {
    pub fn new(config: Config, store: Store) -> Result<Runner, RunnerError> {
        // One redactor for what this runner sends itself (notices, reviews); prompts have their own.
        let redactor = crate::redact::Redactor::from_config(&config);
        let prompts = load_prompts(&config)?;
        let mut github = None;
        let forges = forges_for(&config, &store, &mut github)?;
        if github.is_none() && config.sources.iter().any(|s| s.kind == "github_issues" && s.writes_back()) {
            // The GitHub Issues sources write through the same kind of client as the forge, with the
            // rate-limit blocks every process on the token honours.
            github = shared_client(&config, &store, &mut github).ok();
        }
        let host = config.host_name();
        // Unique across restarts of the same pid: the start instant in microseconds.
        let instant = chrono::Utc::now().timestamp_micros() & 0xff_ffff_ffff;
        let owner = format!("{host}/{}-{instant:x}", std::process::id());
        let (ended_tx, ended_rx) = mpsc::unbounded_channel();
        let config = Arc::new(config);
        let outbox = crate::writeback::Outbox::new(config.clone(), store.clone(), github);
        Ok(Runner {
            config,
            store,
            prompts: Arc::new(prompts),
            host,
            owner,
            machine: super::cluster::machine_id(),
            host_name_clashes: Default::default(),
            lost: watch::channel(false).1,
            heartbeat: None,
            fence: None,
            free_slots: 0,
            pool: HashMap::new(),
            ended_tx,
            ended_rx,
            self_exe: std::env::current_exe().ok(),
            redactor,
            met: std::sync::Mutex::new(Vec::new()),
            forges,
            outbox,
            wake_seen: 0,
            swept_at: None,
            reverts_looked: None,
            kept_worktrees: Default::default(),
        })
    }

    /// Runs ticks until idle (no worker alive and nothing left to start or change), or until `shutdown`
    /// fires; then stops its workers (recorded as interrupted, to be resumed) and releases its leases.
    pub async fn run_until_idle(
        &mut self,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<TickReport, RunnerError> {
        self.prepare().await?;
        let mut total = TickReport::default();
        let mut busy = 0;
        let mut lost = self.lost.clone();
        loop {
            if *shutdown.borrow() || self.is_lost() {
                break;
            }
            let tick_began = tokio::time::Instant::now();
            let report = match self.tick().await {
                Ok(report) => report,
                Err(e) => return self.tick_failed(e).await,
            };
            let acted = report.actions > 0;
            total.absorb(report);
            let next_woken_tick = tick_began + super::wake::WAKE_MIN_GAP;
            if self.pool.is_empty() {
                // A delivery that came during the tick asked for a look this tick may have missed:
                // look again rather than exit (`executor serve` counts on a live runner to see it).
                let woken = super::wake::pending_since(&self.store, self.wake_seen).await;
                if (!acted && !woken) || busy >= MAX_BUSY_TICKS {
                    if !acted && self.waited_for_local_ci(&mut shutdown).await {
                        continue;
                    }
                    break;
                }
                if woken && !acted {
                    tokio::select! {
                        _ = tokio::time::sleep_until(next_woken_tick) => {}
                        _ = shutdown.changed() => {}
                        _ = lost.changed() => {}
                    }
                }
                busy += 1;
                continue;
            }
            busy = 0;
            let interval = self.config.runner.loop_interval.std();
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                Some(session) = self.ended_rx.recv() => { self.reap(session); }
                _ = super::wake::requested_since(&self.store, self.wake_seen, next_woken_tick) => {
                    tracing::info!("woken by a webhook delivery: ticking now");
                }
                _ = shutdown.changed() => {}
                _ = lost.changed() => {}
            }
        }
        self.stop_all().await;
        if self.is_lost() {
            return Err(self.lost_error());
        }
        total.workers_alive = self.pool.len();
        Ok(total)
    }

    /// `executor runner --once`: carries every run as far as it goes without waiting on the world — a
    /// tick, then the workers it started until they end, again while a tick acts — and stops at the first
    /// tick that only waits (CI running, a back-off, a human).
    pub async fn run_once(&mut self, mut shutdown: watch::Receiver<bool>) -> Result<TickReport, RunnerError> {
        self.prepare().await?;
        let mut total = TickReport::default();
        let mut lost = self.lost.clone();
        for _ in 0..MAX_BUSY_TICKS {
            let report = match self.tick().await {
                Ok(report) => report,
                Err(e) => return self.tick_failed(e).await,
            };
            let acted = report.actions > 0;
            total.absorb(report);
            while !self.pool.is_empty() && !*shutdown.borrow() && !self.is_lost() {
                tokio::select! {
                    Some(session) = self.ended_rx.recv() => { self.reap(session); }
                    _ = shutdown.changed() => {}
                    _ = lost.changed() => {}
                }
            }
            if !acted || *shutdown.borrow() || self.is_lost() {
                break;
            }
        }
        self.stop_all().await;
        if self.is_lost() {
            return Err(self.lost_error());
        }
        Ok(total)
    }

    /// A tick failed. When this runner was declared lost (its writes were refused because of it), it
    /// stops its workers, which are no longer its own, and says so. Any other failure (the database out
    /// of reach) leaves the workers running for the next runner to adopt.
    async fn tick_failed(&mut self, e: RunnerError) -> Result<TickReport, RunnerError> {
        let lease_lost = matches!(e, RunnerError::Store(crate::store::StoreError::LeaseLost(_)));
        if lease_lost {
            // The heartbeat says within a beat whether the runner as a whole was lost.
            let _ =
                tokio::time::timeout(self.heartbeat_every(), self.lost.clone().wait_for(|lost| *lost)).await;
        }
        if self.is_lost() || matches!(e, RunnerError::Lost(_)) {
            self.stop_all().await;
            return Err(self.lost_error());
        }
        Err(e)
    }

    /// Supervises a worker in the background as part of the pool: `start` gets the update channel and
    /// the stop signal and returns the worker's future (a new process, or an adopted one). The loop is
    /// woken when it ends. The returned signal says whether the process started (its `Started` update
    /// came) or why it could not.
    pub(super) fn spawn_supervised<F, Fut>(&mut self, recording: Recording, start: F)
    where
        F: FnOnce(mpsc::UnboundedSender<WorkerUpdate>, watch::Receiver<bool>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<WorkerOutcome, WorkerError>> + Send + 'static,
    {
        let (run_id, session) = (recording.run_id, recording.session);
        let (stop_tx, stop_rx) = watch::channel(false);
        let ended = self.ended_tx.clone();
        let task = tokio::spawn(async move {
            let _ = supervise_recorded(recording, |tx| start(tx, stop_rx)).await;
            let _ = ended.send(session);
        });
        self.pool.insert(session, LiveWorker { run_id, stop: stop_tx, task });
    }

    fn reap(&mut self, session: i64) {
        self.pool.remove(&session);
        while let Ok(other) = self.ended_rx.try_recv() {
            self.pool.remove(&other);
        }
    }

    /// Asks every worker of a run this runner supervises to stop.
    pub(super) fn stop_workers_of(&self, run_id: i64) {
        for w in self.pool.values().filter(|w| w.run_id == run_id) {
            let _ = w.stop.send(true);
        }
    }

    /// Stops every supervised worker's process group and waits until each is recorded as interrupted.
    async fn stop_all(&mut self) {
        for w in self.pool.values() {
            let _ = w.stop.send(true);
        }
        for (_, w) in self.pool.drain() {
            let _ = w.task.await;
        }
        if let Some(beat) = self.heartbeat.take() {
            beat.abort();
        }
        if let Some(fence) = self.fence.take() {
            fence.end();
        }
        // Lets go of every run it holds, so another runner takes them at once, not after the ttl.
        if let Err(e) = self.store.runner_ended(&self.owner).await {
            tracing::warn!("recording the runner's end: {e}");
        }
    }

    /// Once per process: register (and start heartbeating), and forget worktrees whose directory
    /// vanished. What dead runners held is taken over by each tick's `reconcile`.
    async fn prepare(&mut self) -> Result<(), RunnerError> {
        self.register().await?;
        // A missing agent program would fail every run's start, one back-off after another: said once,
        // before anything moves, and kept for `executor status`.
        if let Err(why) = crate::worker::agent_config(&self.config).check_program() {
            self.store.runner_ticked(&self.owner, 1, Some(&why)).await?;
            self.stop_all().await;
            return Err(RunnerError::Config(why));
        }
        // `worker.sandbox = "landlock"` where the kernel cannot: refused before any agent starts.
        if let Err(e) = crate::worker::sandbox::check_at_start(self.config.worker.sandbox) {
            let why = e.to_string();
            self.store.runner_ticked(&self.owner, 1, Some(&why)).await?;
            self.stop_all().await;
            return Err(RunnerError::Config(why));
        }
        for (name, repo) in &self.config.repos {
            let path = crate::config::expand_home(&repo.path);
            match tokio::task::spawn_blocking(move || crate::workspace::prune(&path)).await {
                Ok(Err(e)) => tracing::warn!("git worktree prune in repo {name}: {e}"),
                Err(e) => tracing::warn!("git worktree prune in repo {name}: {e}"),
                Ok(Ok(())) => {}
            }
        }
        Ok(())
    }

    /// One pass over the world: adopt orphaned workers, bring CI results in, create runs for approved
    /// tasks, then observe, decide and act for every active run.
    pub async fn tick(&mut self) -> Result<TickReport, RunnerError> {
        // Every wake requested before this tick is answered by it (its observation reads the marks).
        match self.store.take_wake(crate::domain::WakeScope::Runner).await {
            Ok(seen) => self.wake_seen = seen,
            Err(e) => tracing::warn!("reading the webhook wake counter: {e}"),
        }
        let report = self.tick_inner().await;
        let (errors, last) = match &report {
            // A wait on GitHub's rate limit is no error, but `status` says it (and until when).
            Ok(r) => (r.errors, r.failures.last().or(r.throttled.last()).cloned()),
            Err(e) => (1, Some(e.to_string())),
        };
        let errors = i64::try_from(errors).unwrap_or(i64::MAX);
        if let Err(e) = self.store.runner_ticked(&self.owner, errors, last.as_deref()).await {
            tracing::warn!("recording the runner's tick: {e}");
        }
        report
    }

    async fn tick_inner(&mut self) -> Result<TickReport, RunnerError> {
        let mut report = TickReport::default();
        self.reconcile().await?;
        self.sweep_worktrees_when_due().await;
        for (name, forge) in &self.forges {
            if let Err(e) = forge.poll_ci().await {
                tracing::warn!("polling CI of repo {name}: {e}");
                report.failed(format!("repo {name}: polling CI: {e}"));
            }
        }
        self.send_outbox(&mut report).await?;
        for gid in self.store.approved_tasks_without_run(1000).await? {
            // The tracker hears of the approval (when its source asks) before the run exists.
            self.record_approval(&gid).await?;
            if let Some(run) = self.store.create_run_for_task(&gid, Actor::Runner).await? {
                tracing::info!(run = run.id, task = %gid, "created a run for the approved task");
                report.runs_created += 1;
            }
        }
        self.free_slots = self.claim().await?;
        let held = self.store.held_runs(&self.owner).await?;
        // A run a human abandoned (`executor runs abandon`) while its worker ran, or one whose lease this
        // runner lost (another runner took it over): stop the worker.
        for w in self.pool.values() {
            if !held.iter().any(|r| r.id == w.run_id) {
                tracing::info!(
                    run = w.run_id,
                    "the run is no longer active or no longer this runner's: stopping its worker"
                );
                let _ = w.stop.send(true);
            }
        }
        // The runs this runner drives this tick, by repository, so that each forge is observed once per
        // repository (one batched request per `github.batch_size` pull requests), not once per run.
        let mut by_repo: BTreeMap<String, Vec<(Run, RunMemory, Option<PrSnapshot>)>> = BTreeMap::new();
        for run in held {
            report.runs_seen += 1;
            let repo = match self.repo_of(&run) {
                Ok((name, _)) => name.to_string(),
                Err(e) => {
                    self.step_failed(&mut report, &run, &e).await?;
                    continue;
                }
            };
            let memory = self.store.run_memory(run.id).await?;
            // The pull request as last recorded, read once: what settles a run, and what a new
            // observation is compared with.
            let previous: Option<PrSnapshot> =
                memory.last_snapshot.as_deref().and_then(|j| serde_json::from_str(j).ok());
            if is_settled(&run, previous.as_ref()) {
                continue;
            }
            by_repo.entry(repo).or_default().push((run, memory, previous));
        }
        // A repository none of whose runs is watched here any more lets its pull requests go too.
        for (repo, forge) in self.forges.iter().filter(|(name, _)| !by_repo.contains_key(*name)) {
            if let Err(e) = forge.keep_only(&[]).await {
                report.failed(format!("repo {repo}: forgetting finished pull requests: {e}"));
            }
        }
        for (repo, runs) in by_repo {
            let forge = self.forge_named(&repo)?;
            let observed: Vec<Run> = runs.iter().map(|(r, _, _)| r.clone()).collect();
            let mut snapshots = match forge.snapshots(&observed).await {
                Ok(s) => s,
                Err(e) => {
                    // Nothing of the repository could be seen whole (the listing, a rate limit, a batch
                    // that failed as a whole): the whole repository waits a tick.
                    let why = format!(
                        "the {} forge could not be observed, so nothing was done this tick: {e}",
                        forge.name()
                    );
                    tracing::warn!(repo, "{why}");
                    if e.is_rate_limit() {
                        report.throttled(format!("repo {repo}: {why}"));
                    } else {
                        report.failed(format!("repo {repo}: {why}"));
                    }
                    for (run, memory, _) in &runs {
                        if memory.last_decision.as_deref() != Some(why.as_str()) {
                            self.store.record_decision(run.id, Some(&self.owner), &why).await?;
                        }
                    }
                    continue;
                }
            };
            // What the forge holds of pull requests no run here watches any more is let go.
            if let Err(e) = forge.keep_only(&observed).await {
                report.failed(format!("repo {repo}: forgetting finished pull requests: {e}"));
            }
            for (run, memory, previous) in runs {
                if let Some(u) = snapshots.unobserved.remove(&run.id) {
                    // This pull request alone is unknown: this run waits, the others go on.
                    if let Err(e) = self.unobserved(&mut report, &run, &memory, &u).await {
                        self.step_failed(&mut report, &run, &e).await?;
                    }
                    continue;
                }
                let snapshot = snapshots.prs.remove(&run.id).flatten();
                match self.step(&run, &forge, memory, previous, snapshot).await {
                    Ok(acted) => report.actions += usize::from(acted),
                    Err(e) => self.step_failed(&mut report, &run, &e).await?,
                }
            }
        }
        // Last, so what this tick's steps recorded reaches the trackers before the runner goes idle.
        self.send_writebacks().await?;
        self.check_reverts_when_due(&mut report).await;
        if let Ok(mut met) = self.met.lock() {
            for m in met.drain(..) {
                match m {
                    Met::Failed(what) => report.failed(what),
                    Met::Waited(what) => report.throttled(what),
                }
            }
        }
        report.workers_alive = self.pool.len();
        Ok(report)
    }

    /// The repository a run works in: its task's, or the only one configured.
    pub(super) fn repo_of(&self, run: &Run) -> Result<(&str, &Repo), RunnerError> {
        Ok(self.config.repo_for(run.repo.as_deref(), &format!("run {}", run.id))?)
    }

    /// The forge of the configured repository `name`.
    pub(super) fn forge_named(&self, name: &str) -> Result<Arc<Forge>, RunnerError> {
        self.forges
            .get(name)
            .cloned()
            .ok_or_else(|| RunnerError::Config(format!("repo {name:?} is not under [repos] in the config")))
    }

    /// The forge a run's repository uses.
    pub(super) fn forge_of(&self, run: &Run) -> Result<Arc<Forge>, RunnerError> {
        let (name, _) = self.repo_of(run)?;
        self.forge_named(name)
    }

    pub(super) async fn step_failed(
        &self,
        report: &mut TickReport,
        run: &Run,
        e: &RunnerError,
    ) -> Result<(), RunnerError> {
        if e.is_rate_limit() {
            report.throttled(format!("run {}: {e}", run.id));
        } else {
            report.failed(format!("run {}: {e}", run.id));
        }
        let why = e.as_decision();
        tracing::warn!(run = run.id, "{why}");
        match self.store.record_decision(run.id, Some(&self.owner), &why).await {
            // The run is another runner's now (or a human abandoned it): nothing of this runner's is
            // written on it any more, its worker is stopped at the next tick.
            Err(crate::store::StoreError::LeaseLost(_)) => Ok(()),
            other => Ok(other?),
        }
    }
}

/// A completed run whose pull request was merged has nothing left to watch (a closed one may be
/// reopened, and a draft one may get a new trusted comment).
fn is_settled(run: &Run, previous: Option<&PrSnapshot>) -> bool {
    run.state == crate::domain::RunState::Complete
        && previous.is_some_and(|p| p.state == crate::forge::PrState::Merged)
}

/// The forge a configured repository uses (for a one-off command; the runner keeps its forges).
pub(crate) fn forge_for(
    config: &Config,
    store: &Store,
    name: &str,
    repo: &Repo,
) -> Result<Forge, RunnerError> {
    let mut client = None;
    make_forge(config, store, name, repo, &mut client)
}

/// Every configured repository's forge, the GitHub ones sharing one client (one token, one rate limit).
/// Leaves in `client` the GitHub client the forges share (if one was made).
fn forges_for(
    config: &Config,
    store: &Store,
    client: &mut Option<Arc<GitHubClient>>,
) -> Result<BTreeMap<String, Arc<Forge>>, RunnerError> {
    let mut forges = BTreeMap::new();
    for (name, repo) in &config.repos {
        forges.insert(name.clone(), Arc::new(make_forge(config, store, name, repo, client)?));
    }
    Ok(forges)
}

/// The GitHub client of `[github]`, made once (see [`crate::forge::shared_client`]).
fn shared_client(
    config: &Config,
    store: &Store,
    client: &mut Option<Arc<GitHubClient>>,
) -> Result<Arc<GitHubClient>, RunnerError> {
    crate::forge::shared_client(config, store, client).map_err(RunnerError::Config)
}

fn make_forge(
    config: &Config,
    store: &Store,
    name: &str,
    repo: &Repo,
    client: &mut Option<Arc<GitHubClient>>,
) -> Result<Forge, RunnerError> {
    Forge::for_repo(config, store, name, repo, client).map_err(RunnerError::Config)
}

/// The prompt templates the config names: the embedded defaults, overridden from `worker.prompts_dir`,
/// redacting the config's secrets from every prompt they render.
pub fn load_prompts(config: &Config) -> Result<Prompts, crate::worker::PromptError> {
    let prompts = match config.worker.prompts_dir.as_str() {
        "" => Prompts::embedded(),
        dir => Prompts::with_overrides(&crate::config::expand_home(dir))?,
    };
    Ok(prompts.redacting(crate::redact::Redactor::from_config(config)))
}

/// Waits for SIGTERM or SIGINT and flips the returned flag, so the loop stops dispatching and the
/// workers are stopped and recorded for resumption.
pub fn shutdown_on_signals() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
        else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("signal received: stopping workers and exiting");
        let _ = tx.send(true);
    });
    rx
}

#[cfg(test)]
mod tests;
