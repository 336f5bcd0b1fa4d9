//! Workers: one coding agent (Claude Code, Codex, or any command) working in one git worktree on one
//! run, supervised until it ends.
//!
//! # Running a worker
//!
//! 1. Render the prompt: [`Prompts::render`] with a [`PromptContext`]. Template errors (an unknown
//!    variable) surface here, before any process exists.
//! 2. Call [`start`] with a [`WorkerSpec`]: the agent's process exists, but waits behind a gate and
//!    has done nothing yet. Persist what the returned [`Pending`] says (pid, pid start time, output
//!    path, log path, start time — what [`adopt`] needs), then call [`Pending::release`] with an
//!    unbounded channel for [`WorkerUpdate`]s and a `watch` receiver that stops the worker when it
//!    becomes `true`. So the agent can never act before its identity is durable; if the caller dies
//!    (or drops the `Pending`) before releasing, the gate exits without running the agent, and
//!    [`collect`] later reports `NeverStarted`. [`run`] is start + a `Started` update + release, for
//!    callers that do not need that guarantee.
//! 3. Persist each update as it arrives: `Started` (from [`run`] only), `SessionId`, `Output` (the
//!    run's `worker_last_update` and the read offset), `Usage`, and `Ended` with the [`WorkerOutcome`].
//!
//! # After a crash of the supervisor
//!
//! The agent keeps running: it is in its own process group and writes to a file, not to a pipe. A
//! restarted runner calls [`adopt`] with what was recorded. If the pid is no longer the same
//! process (checked with its start time, so a reused pid is never touched), `adopt` refuses with
//! [`WorkerError::NotOurProcess`] and the caller may call [`collect`] to read the dead worker's output
//! into an outcome.
//!
//! Architecture invariant: this module does no database access. Everything to persist leaves through
//! the update channel and the returned outcome.

pub mod agent;
mod agent_file;
mod agent_state;
mod cgroup;
mod fence;
mod from_config;
mod kind;
mod lines;
mod outcome;
mod output_cap;
pub mod process;
pub mod prompt;
pub mod replies;
pub mod result;
pub mod sandbox;
mod session_file;
mod spawn;
mod supervise;
mod tail;
mod tree;
pub mod worklog;

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc::UnboundedSender, watch};

pub use agent::{
    Accounting, AgentConfig, AgentError, AgentEvent, ClaudeConfig, CodexConfig, CommandConfig, Launch, Tokens,
};
pub use fence::{LeaseFence, boot_clock};
pub use from_config::{agent_config, agent_named, read_only, worker_env, worker_timeouts};
pub use kind::PromptKind;
pub use outcome::{EndReason, WorkerOutcome, WorkerUpdate};
pub use process::{is_same_process, pid_start_time};
pub use prompt::{Exported, PromptContext, PromptError, Prompts, export_defaults};
pub use result::{ParsedResult, ResultError};
pub use sandbox::{Sandbox, SandboxError};
pub use spawn::EnvSpec;
pub use tree::{StoppedProcess, describe as describe_stopped, stop_recorded};

use crate::config::Pricing;
use crate::domain::{TaskGid, WorkerKind};
use spawn::WorkerFiles;
use supervise::{Proc, Watch};
use tail::Tail;
use worklog::{Header, Redactor, WorkLog};

/// Watchdog settings. Defaults are the workers' (30 min idle, 3 h total); see [`Timeouts::analyzer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// No new output for this long: the worker is stuck.
    pub idle: Duration,
    /// Total running time allowed.
    pub hard: Duration,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// How often the output file and the process are checked.
    pub poll: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            idle: Duration::from_secs(30 * 60),
            hard: Duration::from_secs(3 * 3600),
            grace: Duration::from_secs(10),
            poll: Duration::from_millis(150),
        }
    }
}

impl Timeouts {
    pub fn analyzer() -> Self {
        Timeouts {
            idle: Duration::from_secs(5 * 60),
            hard: Duration::from_secs(15 * 60),
            ..Timeouts::default()
        }
    }
}

/// Everything needed to start one worker.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    pub task_gid: TaskGid,
    /// 0 for a worker run by hand on a task without a run.
    pub run_id: i64,
    pub kind: PromptKind,
    pub agent: AgentConfig,
    /// The worktree.
    pub cwd: PathBuf,
    /// The rendered prompt. It goes to a private file and the agent's stdin, never the command line.
    pub prompt: String,
    /// Continue this agent session (an `in_progress` worker with a recorded session).
    pub resume_session: Option<String>,
    pub max_turns: Option<u32>,
    /// Passed to agents that can cap their own spending (Claude `--max-budget-usd`): what is left of
    /// the run's and the day's budget.
    pub max_budget_usd: Option<f64>,
    /// Stop the worker when its reported cost passes this.
    pub cost_cap_usd: Option<f64>,
    pub env: EnvSpec,
    /// `logs/` under the data directory: work logs go to `logs/{gid}/{kind}_{time}.md`.
    pub logs_root: PathBuf,
    /// Where each worker's private files (prompt, raw output) go: `{files_root}/{gid}/{kind}_{time}/`.
    /// Keep it outside the worktree.
    pub files_root: PathBuf,
    pub timeouts: Timeouts,
    /// The most raw output kept (`worker.max_output_bytes`); past it the worker is stopped with
    /// `OutputLimit` and the file cut back to this size.
    pub max_output_bytes: u64,
    /// Prices to estimate a cost the agent does not report (Codex; Claude until its final result).
    pub pricing: Pricing,
    /// The agent thread's usage before this worker (a resumed Codex thread reports running totals).
    pub usage_baseline: Tokens,
    /// Directories outside `cwd` the agent must be able to write: the worktree's git directories
    /// ([`crate::workspace::git_dirs`]), for sandboxed agents.
    pub writable_dirs: Vec<PathBuf>,
    /// Kernel containment (`None`: none): where the agent may write. The worker adds a private
    /// temporary directory (its `TMPDIR`) and the agent CLI's own state directories.
    pub sandbox: Option<Sandbox>,
}

/// What a restarted supervisor needs to take over a live worker (all of it from `Started` and the
/// last `Output` update).
#[derive(Debug, Clone)]
pub struct AdoptSpec {
    pub task_gid: TaskGid,
    pub run_id: i64,
    pub kind: PromptKind,
    pub agent: AgentConfig,
    pub pid: i32,
    pub pid_start_time: u64,
    pub output_path: PathBuf,
    /// The last `Output` offset persisted; 0 re-logs everything after the prompt.
    pub offset: u64,
    pub log_path: PathBuf,
    pub started_at: DateTime<Utc>,
    pub cost_cap_usd: Option<f64>,
    /// Values to redact (the caller rebuilds them from the same [`EnvSpec`]).
    pub secrets: Vec<String>,
    pub timeouts: Timeouts,
    pub max_output_bytes: u64,
    pub pricing: Pricing,
    pub usage_baseline: Tokens,
    /// Where the agent writes its session files ([`session_root`] of the worker's environment).
    pub session_root: Option<PathBuf>,
}

/// Where `agent`, run in the environment `env` describes, writes the session files whose usage is
/// followed as it comes (Codex's `CODEX_HOME/sessions`); `None` for the other agents.
pub fn session_root(agent: &AgentConfig, env: &EnvSpec) -> Option<PathBuf> {
    root_in(agent, &env.resolve())
}

fn root_in(agent: &AgentConfig, env: &[(String, String)]) -> Option<PathBuf> {
    let var = |name: &str| env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| PathBuf::from(v));
    agent.session_root(&var)
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Agent(#[from] agent::AgentError),
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("cannot start the agent program {program:?}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The recorded pid is gone or now belongs to another process: it must not be adopted or killed.
    #[error("pid {pid} is not the recorded worker any more (exited, or reused by another process)")]
    NotOurProcess { pid: i32 },
}

impl WorkerError {
    fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> WorkerError {
        let path = path.to_path_buf();
        move |source| WorkerError::Io { what, path, source }
    }
}

/// Starts a worker and supervises it to its end: [`start`], a `Started` update, [`Pending::release`].
/// Returns `Err` only when it could not start; once the process runs, every ending is an
/// [`WorkerOutcome`] (also sent as `WorkerUpdate::Ended`).
///
/// Dropping the returned future once it has run detaches the agent: it keeps running and can be
/// [`adopt`]ed.
pub async fn run(
    spec: WorkerSpec,
    updates: UnboundedSender<WorkerUpdate>,
    cancel: watch::Receiver<bool>,
) -> Result<WorkerOutcome, WorkerError> {
    let pending = start(spec)?;
    let _ = updates.send(pending.started());
    Ok(pending.release(updates, cancel).await)
}

/// Creates the worker's files and work log and spawns its agent behind the start gate: the process
/// exists (its pid and start time can be recorded) but runs nothing until [`Pending::release`].
pub fn start(spec: WorkerSpec) -> Result<Pending, WorkerError> {
    let launch_schema = result::schema(spec.kind);
    let started_at = Utc::now();
    let redactor = Redactor::new(spec.env.secret_values());
    let mut log = WorkLog::create(&spec.logs_root, &spec.task_gid, spec.kind, started_at, redactor.clone())
        .map_err(WorkerError::io("create work log in", &spec.logs_root))?;
    // The log's (unique) name also names the worker's directory of private files.
    let stem = log
        .path()
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| spec.kind.as_str().to_string());
    let files = WorkerFiles::create(spec.files_root.join(spec.task_gid.as_str()).join(stem))?;
    // A worker that answers comments may write its replies to a file of its own, which every sandbox
    // (Codex's, Claude Code's, Landlock) lets it write: no network, database or PATH needed to answer.
    let replies_dir = match spec.kind {
        PromptKind::Worker(WorkerKind::FixComments) => Some(files.replies_dir()?),
        _ => None,
    };
    let launch = Launch {
        cwd: spec.cwd.clone(),
        resume_session: spec.resume_session.clone(),
        max_turns: spec.max_turns,
        result_schema_file: launch_schema.as_ref().map(|_| files.schema.clone()),
        result_schema: launch_schema.clone(),
        max_budget_usd: spec.max_budget_usd,
        writable_dirs: spec.writable_dirs.iter().chain(&replies_dir).cloned().collect(),
        contained: spec.sandbox.is_some(),
    };
    let command = match spec.agent.command_line(&launch) {
        Ok(c) => c,
        Err(e) => {
            log.abandon(&format!("the agent was not started: {e}"));
            files.remove();
            return Err(e.into());
        }
    };
    spawn::write_private(&files.prompt, spec.prompt.as_bytes())?;
    if let Some(schema) = &launch_schema {
        spawn::write_private(&files.schema, schema.to_string().as_bytes())?;
    }
    log.header(&Header {
        task_gid: &spec.task_gid,
        run_id: spec.run_id,
        kind: spec.kind,
        agent: spec.agent.name(),
        command_line: &command.display(),
        cwd: &spec.cwd,
        started_at,
        resumed_session: spec.resume_session.as_deref(),
    });
    log.prompt(&spec.prompt);
    // Created before the spawn so the tail can open it; the agent appends to it.
    spawn::write_private(&files.output, b"")?;
    let output = std::fs::File::open(&files.output).map_err(WorkerError::io("read", &files.output))?;
    let mut env = spec.env.resolve();
    let prepared = private_state(&spec, &files, &mut env).and_then(|(state, model_urls)| {
        let Some(sandbox) = &spec.sandbox else { return Ok(None) };
        let mut sandbox = sandbox.clone();
        if let Some(dir) = &replies_dir {
            sandbox.allow(dir.clone());
        }
        if let Some(state) = state {
            sandbox.allow(state);
        }
        contain(sandbox, &files, &mut env, &model_urls).map(Some)
    });
    if replies_dir.is_some() {
        env.retain(|(k, _)| k != replies::REPLIES_ENV);
        env.push((replies::REPLIES_ENV.into(), replies::file_in(&files.dir()).display().to_string()));
    }
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            log.abandon(&format!("the agent was not started: {e}"));
            files.remove();
            return Err(e);
        }
    };
    let gated =
        match spawn::spawn(&command, &spec.cwd, &env, &files, prepared.as_ref(), spec.max_output_bytes) {
            Ok(gated) => gated,
            Err(e) => {
                log.abandon(&format!("the agent did not start: {e}"));
                files.remove();
                return Err(e);
            }
        };
    let pid = gated.child.id().map(|p| p as i32).unwrap_or(0);
    let accounting = Accounting {
        pricing: spec.pricing.clone(),
        baseline: spec.usage_baseline,
        started_at: Some(started_at),
    };
    let log_path = log.path().to_path_buf();
    let mut tail = Tail::from_file(tokio::fs::File::from_std(output), spec.agent.parser(&accounting), log);
    if let Some(root) = root_in(&spec.agent, &env) {
        tail.follow_session_file(root);
    }
    Ok(Pending {
        gated: Some(gated),
        pid,
        pid_start_time: process::pid_start_time(pid),
        log_path,
        started_at,
        tail: Some(tail),
        watch: Watch {
            kind: spec.kind,
            timeouts: spec.timeouts,
            cost_cap_usd: spec.cost_cap_usd,
            started_at,
            idle_for: Duration::ZERO,
            output_path: files.output,
            max_output_bytes: spec.max_output_bytes,
        },
    })
}

/// The agent CLI's private state directory, made fresh for this worker ([`agent_state`]) and set in
/// `env` (`None` for a command agent, which has none), and the model API URLs its configuration names.
fn private_state(
    spec: &WorkerSpec,
    files: &WorkerFiles,
    env: &mut Vec<(String, String)>,
) -> Result<(Option<PathBuf>, Vec<String>), WorkerError> {
    let Some(dir) = agent_state::choose(&spec.agent, env, &files.dir().join("state")) else {
        return Ok((None, Vec::new()));
    };
    let urls = agent_state::prepare(&spec.agent, &dir, &|name| std::env::var_os(name))
        .map_err(WorkerError::io("prepare the agent's state directory", &dir))?;
    Ok((Some(dir), urls))
}

/// The sandbox's final form for one worker: plus a private temporary directory (made the agent's
/// `TMPDIR`), its own files readable (a result schema the CLI reads), and its model API's ports (of its
/// environment and of `model_urls`).
fn contain(
    mut sandbox: Sandbox,
    files: &WorkerFiles,
    env: &mut Vec<(String, String)>,
    model_urls: &[String],
) -> Result<sandbox::Prepared, WorkerError> {
    let tmp = files.temp_dir()?;
    env.retain(|(k, _)| k != "TMPDIR");
    env.push(("TMPDIR".into(), tmp.display().to_string()));
    sandbox.allow(tmp);
    sandbox.allow_read(files.dir());
    if sandbox.connect_ports().is_some() {
        sandbox.connect_only(sandbox::model_ports(env));
        sandbox.connect_only(model_urls.iter().filter_map(|url| sandbox::url_port(url)));
    }
    Ok(sandbox.prepare()?)
}

/// An agent process that exists but has not been allowed to run yet (see [`start`]). Record its
/// identity, then [`Pending::release`] it. Dropping it instead closes the gate: the process exits
/// without running the agent, and is reaped.
pub struct Pending {
    gated: Option<spawn::Gated>,
    pid: i32,
    pid_start_time: u64,
    log_path: PathBuf,
    started_at: DateTime<Utc>,
    tail: Option<Tail>,
    watch: Watch,
}

impl Pending {
    pub fn pid(&self) -> i32 {
        self.pid
    }
    /// The process start time to record next to the pid (0 where it cannot be read: such a worker can
    /// never be adopted, only collected).
    pub fn pid_start_time(&self) -> u64 {
        self.pid_start_time
    }
    pub fn output_path(&self) -> &Path {
        &self.watch.output_path
    }
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }
    pub fn started_at(&self) -> DateTime<Utc> {
        self.started_at
    }

    /// The `Started` update with all of the above, for callers that persist through the channel.
    pub fn started(&self) -> WorkerUpdate {
        WorkerUpdate::Started {
            pid: self.pid,
            pid_start_time: self.pid_start_time,
            output_path: self.watch.output_path.clone(),
            log_path: self.log_path.clone(),
            started_at: self.started_at,
        }
    }

    /// Opens the gate (the agent starts now) and supervises the worker to its end.
    pub async fn release(
        mut self,
        updates: UnboundedSender<WorkerUpdate>,
        cancel: watch::Receiver<bool>,
    ) -> WorkerOutcome {
        let (Some(gated), Some(mut tail)) = (self.gated.take(), self.tail.take()) else {
            unreachable!("a Pending is released at most once: release takes it by value");
        };
        let spawn::Gated { child, gate } = gated;
        if let Err(e) = spawn::open_gate(gate) {
            // The gate process is gone (killed from outside): supervision sees it exited.
            tracing::warn!(pid = self.pid, "cannot open the start gate: {e}");
        }
        tail.connect(updates.clone());
        let watch = self.watch.clone();
        supervise::supervise(Proc::Child(child, None), tail, watch, updates, cancel).await
    }
}

impl Pending {
    /// Gives the worker up before it ran (its identity could not be recorded): closes the gate, closes
    /// the work log with `why`, and removes the worker's private files. Nothing ran, so nothing is lost.
    pub fn abandon(mut self, why: &str) {
        self.close_gate();
        if let Some(tail) = self.tail.as_mut() {
            tail.log.abandon(why);
            tail.log.flush();
        }
        if let Some(dir) = self.watch.output_path.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// Closing the only write end makes the gate's `read` fail: it prints its marker and exits without
    /// running the agent. It does so at once; wait for it briefly so it leaves no zombie behind, and
    /// for its output writer to put the marker in the file.
    fn close_gate(&mut self) {
        let Some(spawn::Gated { mut child, gate }) = self.gated.take() else {
            return; // released, or closed already
        };
        drop(gate);
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while matches!(child.try_wait(), Ok(None)) || !process::group_members(self.pid).is_empty() {
            if std::time::Instant::now() >= deadline {
                process::signal_group(self.pid, nix::sys::signal::Signal::SIGKILL);
                let _ = child.start_kill(); // tokio reaps a killed child it no longer owns
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Its cgroup, once the gate has left it.
        if let Some(dir) = self.watch.output_path.parent() {
            tree::discard(dir);
        }
    }
}

/// Dropping a `Pending` is what a caller's crash does to it: the gate closes, the agent never runs, the
/// output holds the gate's marker, and the work log stays open for [`collect`] to close.
impl Drop for Pending {
    fn drop(&mut self) {
        self.close_gate();
    }
}

/// Takes over a worker started by a supervisor that has since died, and supervises it to its end.
/// Refuses (without touching it) a pid that is not the same process any more.
pub async fn adopt(
    spec: AdoptSpec,
    updates: UnboundedSender<WorkerUpdate>,
    cancel: watch::Receiver<bool>,
) -> Result<WorkerOutcome, WorkerError> {
    if !process::is_same_process(spec.pid, spec.pid_start_time) {
        return Err(WorkerError::NotOurProcess { pid: spec.pid });
    }
    let proc = Proc::Adopted { pid: spec.pid, start_time: spec.pid_start_time };
    follow_existing(spec, proc, "adopted the running worker", updates, cancel).await
}

/// Reads the output of a recorded worker whose process is gone into an outcome (usually `Crashed`;
/// `Finished` if it completed while nobody watched; `NeverStarted` if its gate was never opened), and
/// closes its work log.
pub async fn collect(
    spec: AdoptSpec,
    updates: UnboundedSender<WorkerUpdate>,
) -> Result<WorkerOutcome, WorkerError> {
    // A pid of 0 is never alive, so the loop sees the process as already exited.
    let proc = Proc::Adopted { pid: 0, start_time: 0 };
    let (_tx, rx) = watch::channel(false);
    follow_existing(spec, proc, "found the worker gone; collecting its output", updates, rx).await
}

/// What an agent's whole output reports it spent, read to the end of the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutputSpend {
    pub tokens: agent::Tokens,
    pub cost_usd: Option<f64>,
    /// The cost is (partly) from the price table.
    pub estimated: bool,
    /// Just after the last complete line read.
    pub read_up_to: u64,
}

/// Reads the output of an agent that ran on after its session ended (its runner was declared lost)
/// for what it reports having spent, with the accounting its supervisor used, and notes in its work log
/// that it was read. The process is already stopped or gone.
pub async fn output_spend(spec: &AdoptSpec) -> Result<OutputSpend, WorkerError> {
    let note = format!(
        "the agent (pid {}) ran on after its runner was declared lost; its output is read for what it spent",
        spec.pid
    );
    let mut tail = open_output(spec, &note).await?;
    tail.replay(u64::MAX).await.map_err(WorkerError::io("read", &spec.output_path))?;
    Ok(OutputSpend {
        tokens: tail.totals.tokens,
        cost_usd: tail.totals.cost_usd,
        estimated: tail.totals.cost_estimated,
        read_up_to: tail.offset(),
    })
}

/// A worker's output opened for reading with its supervisor's accounting, its work log appended to
/// with `note` first.
async fn open_output(spec: &AdoptSpec, note: &str) -> Result<Tail, WorkerError> {
    let mut log = WorkLog::append(&spec.log_path, Redactor::new(spec.secrets.clone()))
        .map_err(WorkerError::io("append to work log", &spec.log_path))?;
    log.note(note);
    let accounting = Accounting {
        pricing: spec.pricing.clone(),
        baseline: spec.usage_baseline,
        started_at: Some(spec.started_at),
    };
    Tail::open(&spec.output_path, spec.agent.parser(&accounting), log)
        .await
        .map_err(WorkerError::io("read", &spec.output_path))
}

async fn follow_existing(
    spec: AdoptSpec,
    proc: Proc,
    note: &str,
    updates: UnboundedSender<WorkerUpdate>,
    cancel: watch::Receiver<bool>,
) -> Result<WorkerOutcome, WorkerError> {
    let note = format!(
        "{note} (pid {}) at {}; reading its output from byte {}",
        spec.pid,
        Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        spec.offset
    );
    let mut tail = open_output(&spec, &note).await?;
    if let Some(root) = spec.session_root.clone() {
        tail.follow_session_file(root);
    }
    tail.connect(updates.clone());
    tail.replay(spec.offset).await.map_err(WorkerError::io("read", &spec.output_path))?;
    let idle_for = std::fs::metadata(&spec.output_path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .unwrap_or_default();
    let watch = Watch {
        kind: spec.kind,
        timeouts: spec.timeouts,
        cost_cap_usd: spec.cost_cap_usd,
        started_at: spec.started_at,
        idle_for,
        output_path: spec.output_path,
        max_output_bytes: spec.max_output_bytes,
    };
    Ok(supervise::supervise(proc, tail, watch, updates, cancel).await)
}
