//! What the runner is made of: its state (the configuration, the store, its identity and lease, the
//! pool of live workers, the forges) and its error. Every part of the runner (`engine`, `launch`,
//! `step`, `cluster`, `reconcile`, `notify`, `budget`) is an `impl Runner` block over this state, and
//! this file imports none of them, so their dependencies run one way: each part → `state`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::forge::Forge;
use crate::store::Store;
use crate::worker::Prompts;

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Forge(#[from] crate::forge::ForgeError),
    #[error(transparent)]
    Workspace(#[from] crate::workspace::WorkspaceError),
    #[error(transparent)]
    Prompt(#[from] crate::worker::PromptError),
    #[error(transparent)]
    Worker(#[from] crate::worker::WorkerError),
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Repo(#[from] crate::config::RepoNotFound),
    /// A background task (git in a blocking thread) panicked or was cancelled.
    #[error("a background task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("cannot record the pull request snapshot: {0}")]
    Snapshot(#[from] serde_json::Error),
    /// A worker could not be started; its session records it as `failed_to_start`.
    #[error("the {kind} worker could not start: {error}")]
    NotStarted { kind: crate::domain::WorkerKind, error: String },
    /// This runner was declared lost (its heartbeat lapsed), by another runner or by its own tick after a
    /// pause, and its runs were freed for others.
    #[error("{0}")]
    Lost(String),
    /// A notice stays in the outbox: this attempt to deliver it failed.
    #[error("notice {id} not delivered: {why}")]
    NoticeNotDelivered { id: i64, why: String, rate_limited: bool },
    /// An agent's reply stays in the outbox: this attempt to post it failed, or met GitHub's rate limit.
    #[error("an agent's reply was not posted: {why}")]
    ReplyNotPosted { why: String, rate_limited: bool },
}

impl RunnerError {
    /// See [`crate::forge::ForgeError::is_rate_limit`].
    pub(super) fn is_rate_limit(&self) -> bool {
        match self {
            RunnerError::Forge(e) => e.is_rate_limit(),
            RunnerError::NoticeNotDelivered { rate_limited, .. }
            | RunnerError::ReplyNotPosted { rate_limited, .. } => *rate_limited,
            _ => false,
        }
    }

    /// What a run's last decision says when its step failed with this error: the one wording, so that
    /// a step can tell the same failure again from the run's memory.
    pub(super) fn as_decision(&self) -> String {
        format!("error: {self}")
    }
}

/// Something a step met where no report was at hand, for the tick's report.
#[derive(Debug)]
pub(super) enum Met {
    /// A failure: one of the tick's errors.
    Failed(String),
    /// A wait on GitHub's rate limit: see [`TickReport::throttled`].
    Waited(String),
}

/// A worker this runner supervises (started here, or adopted from a runner that died), in the pool
/// under its worker session's id: a run's next worker is another entry, so the end of the one before
/// can never remove it.
pub(super) struct LiveWorker {
    pub run_id: i64,
    pub stop: watch::Sender<bool>,
    pub task: JoinHandle<()>,
}

/// What one tick did, for the loop's exit decision and for `--once` output.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TickReport {
    pub runs_created: usize,
    pub runs_seen: usize,
    /// Steps other than waiting: workers started, transitions, PRs opened, CI triggered, notices.
    pub actions: usize,
    pub errors: usize,
    /// What went wrong, one line each, naming the run ("run 3: …").
    pub failures: Vec<String>,
    /// What waited on GitHub's rate limit, one line each: not a failure (nothing went wrong, and the
    /// next start after the limit resets goes on), so it leaves the exit status alone.
    pub throttled: Vec<String>,
    pub workers_alive: usize,
}

impl TickReport {
    pub(super) fn failed(&mut self, what: String) {
        self.errors += 1;
        self.failures.push(what);
    }

    /// A step that waits on GitHub's rate limit; see [`TickReport::throttled`].
    pub(super) fn throttled(&mut self, what: String) {
        if !self.throttled.contains(&what) && self.throttled.len() < MAX_REPORTED_FAILURES {
            self.throttled.push(what);
        }
    }

    /// Adds a tick's report to a whole pass's.
    pub(super) fn absorb(&mut self, report: TickReport) {
        self.runs_created += report.runs_created;
        self.actions += report.actions;
        self.errors += report.errors;
        self.runs_seen = report.runs_seen;
        for f in report.failures {
            if !self.failures.contains(&f) && self.failures.len() < MAX_REPORTED_FAILURES {
                self.failures.push(f);
            }
        }
        for t in report.throttled {
            self.throttled(t);
        }
    }
}

/// At most this many distinct failures are kept for the runner's final report.
const MAX_REPORTED_FAILURES: usize = 20;

pub struct Runner {
    pub(super) config: Arc<Config>,
    pub(super) store: Store,
    pub(super) prompts: Arc<Prompts>,
    /// This host's name (`runner.host_name`): worker sessions record it, so a runner adopts only its own
    /// host's workers.
    pub(super) host: String,
    /// `host/pid-instant`: this runner's id in `executor_runners`, and the lease owner of its runs.
    pub(super) owner: String,
    /// This machine (`cluster::machine_id`), and the runners of other machines already told to be using
    /// this host's name.
    pub(super) machine: String,
    pub(super) host_name_clashes: std::collections::HashSet<String>,
    /// Turns true when another runner declared this one lost (see `cluster`).
    pub(super) lost: watch::Receiver<bool>,
    pub(super) heartbeat: Option<JoinHandle<()>>,
    /// Freezes this runner's agents while its lease may have lapsed (see `worker::LeaseFence`).
    pub(super) fence: Option<crate::worker::LeaseFence>,
    /// Worker slots free on this host and in the cluster, counted at the start of the tick and taken
    /// down as this tick starts workers (`begin_runner_worker` has the last word).
    pub(super) free_slots: u32,
    /// Live workers by worker session id.
    pub(super) pool: HashMap<i64, LiveWorker>,
    /// Supervisors report the session id of each worker that ended, to wake the loop at once.
    pub(super) ended_tx: mpsc::UnboundedSender<i64>,
    pub(super) ended_rx: mpsc::UnboundedReceiver<i64>,
    /// How this process is invoked, so workers can call `executor comment`.
    pub(super) self_exe: Option<std::path::PathBuf>,
    /// The config's secrets, replaced in every notice and review the runner sends.
    pub(super) redactor: crate::redact::Redactor,
    /// What was met where no report is at hand (a notice not delivered), for this tick's report.
    pub(super) met: std::sync::Mutex<Vec<Met>>,
    /// Each configured repository's forge, made once: the GitHub forge keeps its HTTP client, ETags,
    /// rate-limit state and last answers across ticks.
    pub(super) forges: BTreeMap<String, Arc<Forge>>,
    /// Messages owed to the sources' trackers (write-back).
    pub(super) outbox: crate::writeback::Outbox,
    /// The webhook wake count this runner had seen when its last tick began (see `wake.rs`).
    pub(super) wake_seen: i64,
    /// When this runner last looked for worktrees of runs that ended or went on (see `sweep.rs`), and
    /// the ones it found it must keep, said once each.
    pub(super) swept_at: Option<tokio::time::Instant>,
    /// When this runner last looked for reverted merges, and the run id its next look starts after
    /// (see `reverts.rs`).
    pub(super) reverts_looked: Option<(tokio::time::Instant, i64)>,
    pub(super) kept_worktrees: std::collections::HashSet<std::path::PathBuf>,
}
