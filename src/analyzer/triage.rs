//! The triage of one task by an agent: read-only, in a detached scratch checkout of the task's
//! repository at its base branch, with the analyzer's prompt, timeouts and turn limit, under the day's
//! budget, recorded as analysis sessions.
//!
//! An answer that is not the schema (prose, truncated JSON, an unknown status, a priority out of range)
//! gets one more run whose prompt shows what was wrong; a second unusable answer fails the triage with
//! both sessions recorded. Nothing an agent prints or does makes this code panic or leave a process,
//! a checkout or an open session behind.
//!
//! Work logs land where the workers' do, named by the prompt kind: `logs/{gid}/analyzer_{time}.md`.

mod answer;
mod orphans;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;
use tokio::sync::{mpsc, watch};

use crate::budget::{budget_left, too_little};
use crate::config::{Config, Repo};
use crate::domain::Task;
use crate::store::{AnalysisEnd, Store, StoreError, Triage, start_of_day};
use crate::worker::prompt::{RunContext, TaskContext};
use crate::worker::result::ParsedResult;
use crate::worker::{
    self, AgentConfig, AgentError, EndReason, PromptContext, PromptKind, Prompts, Timeouts, WorkerError,
    WorkerOutcome, WorkerSpec, WorkerUpdate,
};
use crate::worker::{agent_config, worker_env};
use crate::workspace;

pub use answer::{EXPECTED, MAX_CRITERIA, MAX_CRITERION_CHARS, MAX_SUMMARY_CHARS, PRIORITY_RANGE, to_triage};

/// Runs in a triage: the first, and one more when the first answer could not be used.
const MAX_RUNS: usize = 2;
/// The most of a task's description (and, apart, of its notes) put in the prompt, in bytes; the rest is
/// left out with a note saying how much. A triage needs the gist, not a 1 MB paste.
const MAX_PROMPT_TEXT_BYTES: usize = 64 * 1024;
/// How much of an unusable final message is quoted back to the agent.
const QUOTED_ANSWER_CHARS: usize = 400;

/// Triages tasks. Cheap to clone: one per concurrent analysis is fine.
#[derive(Clone)]
pub struct Triager {
    config: Arc<Config>,
    prompts: Arc<Prompts>,
    store: Store,
    host: String,
    self_exe: Option<PathBuf>,
}

/// What became of one triage.
#[derive(Debug, Clone, PartialEq)]
pub enum TriageOutcome {
    /// A usable answer, as the store takes it.
    Decided(Triage),
    /// No usable answer (both runs failed, the checkout failed, timeout):
    /// the error to record on the task, naming what was expected when the result is missing.
    Failed(String),
    /// Nothing was tried and nothing should be recorded on the task; the loop must stop and tell the
    /// human: the daily budget is spent (`budget.per_day_usd`), or the stop signal came. Also when the
    /// budget ran out or the stop came during a run (that run's session records it), when the
    /// database failed (nothing about the task could be recorded anyway), and when the agent could not
    /// start (a missing program is the setup's fault, not the task's: it costs no attempt).
    Blocked(Blocked),
}

/// Why the analyzer stopped before the queue was empty: what stopped it, and the words for the human.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Blocked {
    pub by: BlockedBy,
    pub why: String,
}

/// What stopped the analyzer. The day's budget is no error for cron: it is spent until tomorrow or a
/// human raises it. A broken database, an agent that cannot start and a stop are (`analyzer` exits 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockedBy {
    Budget,
    Stop,
    Database,
    /// The agent could not be started (its program is missing, the sandbox refused): every task would
    /// fail the same way until the setup is fixed.
    Agent,
}

impl Blocked {
    fn by(by: BlockedBy, why: impl Into<String>) -> Blocked {
        Blocked { by, why: why.into() }
    }
}

/// What one agent run came to.
enum RunResult {
    Answer(Triage),
    /// The agent ran to its end without a usable answer: worth one more run, shown this error.
    Unusable(String),
    Failed(String),
    Blocked(Blocked),
}

impl Triager {
    pub fn new(
        config: Arc<Config>,
        prompts: Arc<Prompts>,
        store: Store,
        host: String,
        self_exe: Option<PathBuf>,
    ) -> Triager {
        Triager { config, prompts, store, host, self_exe }
    }

    /// Analyzes one task the caller has claimed. At most two agent runs: when the first answer is not
    /// the schema (prose, truncated JSON, unknown status, priority out of 1..=5, ...), the second run's
    /// prompt shows that error. Never panics, never returns early on an agent's misbehaviour.
    pub async fn triage(&self, task: &Task, notes: &[String], stop: watch::Receiver<bool>) -> TriageOutcome {
        let who = format!("task {}", task.task_gid);
        let (repo_name, repo) = match self.config.repo_for(task.repo.as_deref(), &who) {
            Ok(found) => found,
            // The error names the config key to set (`[repos.NAME]`) or the task's repo to give.
            Err(e) => return TriageOutcome::Failed(e.to_string()),
        };
        let mut previous_error: Option<String> = None;
        for _ in 0..MAX_RUNS {
            if *stop.borrow() {
                return TriageOutcome::Blocked(Blocked::by(
                    BlockedBy::Stop,
                    "stopped: the analyzer was asked to stop",
                ));
            }
            let budget = match self.budget().await {
                Ok(Ok(usd)) => usd,
                Ok(Err(why)) => return TriageOutcome::Blocked(Blocked::by(BlockedBy::Budget, why)),
                Err(e) => return TriageOutcome::Blocked(database(&e)),
            };
            let place = Place { task, notes, repo_name, repo, budget };
            match self.run_once(&place, previous_error.as_deref(), stop.clone()).await {
                RunResult::Answer(t) => return TriageOutcome::Decided(t),
                RunResult::Unusable(e) => previous_error = Some(e),
                RunResult::Failed(e) => return TriageOutcome::Failed(e),
                RunResult::Blocked(e) => return TriageOutcome::Blocked(e),
            }
        }
        let last = previous_error.unwrap_or_default();
        TriageOutcome::Failed(format!(
            "no usable answer in {MAX_RUNS} runs; the last: {last}. Expected {EXPECTED}"
        ))
    }

    /// Ends this host's analysis sessions that a dead analyzer left open, first stopping (process group,
    /// SIGTERM then SIGKILL) any agent still running — only if its pid AND start time match
    /// (worker::is_same_process). Returns how many sessions it ended.
    ///
    /// Call it at the analyzer's start, under its instance lock, before any triage of this host is under
    /// way: every open session of this host is taken for an orphan. It also removes their scratch
    /// checkouts and raw output.
    pub async fn stop_orphans(&self) -> Result<usize, StoreError> {
        orphans::stop_orphans(self).await
    }

    /// Dollars the next run may spend, or why none may start.
    async fn budget(&self) -> Result<Result<f64, String>, StoreError> {
        let left = budget_left(&self.config, &self.store, None).await?;
        let b = &self.config.budget;
        let cap = b.per_run_usd.min(b.per_day_usd);
        if !too_little(b, cap, left) {
            return Ok(Ok(left));
        }
        if too_little(b, b.per_run_usd, b.per_run_usd) {
            return Ok(Err(format!(
                "budget.per_run_usd is ${}: no analysis starts until it is raised",
                b.per_run_usd
            )));
        }
        let spent = self.store.spent_since(start_of_day(Utc::now())).await?;
        Ok(Err(format!(
            "Agents have spent ${spent:.4} today of the ${} daily budget; no analysis starts until \
             tomorrow (UTC) or until budget.per_day_usd is raised.",
            b.per_day_usd
        )))
    }

    /// One agent run in its own session and scratch checkout; the checkout goes whatever happens.
    async fn run_once(
        &self,
        place: &Place<'_>,
        previous_error: Option<&str>,
        stop: watch::Receiver<bool>,
    ) -> RunResult {
        let gid = &place.task.task_gid;
        let agent = self.agent();
        let session = match self.store.begin_analysis_session(gid, agent.name(), &self.host).await {
            Ok(id) => id,
            Err(e) => return RunResult::Blocked(database(&e)),
        };
        let scratch = scratch_path(&self.config, gid, session);
        let repo_path = crate::config::expand_home(&place.repo.path);
        let checkout = {
            let (repo_path, scratch, base) = (repo_path.clone(), scratch.clone(), place.repo.base.clone());
            tokio::task::spawn_blocking(move || check_out(&repo_path, &scratch, &base)).await
        };
        let checkout = checkout.unwrap_or_else(|e| Err(format!("the checkout task failed: {e}")));
        let result = match checkout {
            Err(e) => {
                let e = format!("cannot check out repo {} for the analysis: {e}", place.repo_name);
                self.end(session, EndReason::FailedToStart, &e).await;
                RunResult::Failed(e)
            }
            Ok(()) => self.run_agent(place, session, agent, &scratch, previous_error, stop).await,
        };
        let removed =
            tokio::task::spawn_blocking(move || workspace::remove_scratch(&repo_path, &scratch)).await;
        match removed {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(session, "removing the analysis checkout: {e}"),
            Err(e) => tracing::warn!(session, "removing the analysis checkout: {e}"),
        }
        result
    }

    /// Starts the agent behind its gate, records its process, lets it run and records how it ended.
    async fn run_agent(
        &self,
        place: &Place<'_>,
        session: i64,
        agent: AgentConfig,
        scratch: &Path,
        previous_error: Option<&str>,
        stop: watch::Receiver<bool>,
    ) -> RunResult {
        let ctx = prompt_context(place, scratch, previous_error);
        let prompt = match self.prompts.render(PromptKind::Analyzer, &ctx) {
            Ok(p) => p,
            Err(e) => {
                let e = e.to_string();
                self.end(session, EndReason::PromptError, &e).await;
                return RunResult::Failed(e);
            }
        };
        let spec = self.spec(place, agent, scratch, prompt);
        let pending = match worker::start(spec) {
            Ok(p) => p,
            Err(e) => {
                let msg = format!("the analysis agent could not start: {e}");
                self.end(session, EndReason::FailedToStart, &msg).await;
                return match e {
                    WorkerError::Agent(AgentError::NoBudgetLeft(_)) => {
                        RunResult::Blocked(Blocked::by(BlockedBy::Budget, msg))
                    }
                    _ => RunResult::Blocked(Blocked::by(BlockedBy::Agent, msg)),
                };
            }
        };
        // The agent may do nothing before its pid and start time are durable (see `worker::start`).
        let start_time = i64::try_from(pending.pid_start_time()).ok();
        let log = pending.log_path().display().to_string();
        if let Err(e) = self.store.set_analysis_process(session, pending.pid(), start_time, &log).await {
            pending.abandon(&format!("the agent was not started: cannot record its process: {e}"));
            self.end(session, EndReason::FailedToStart, &format!("cannot record the agent's process: {e}"))
                .await;
            return RunResult::Blocked(database(&e));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let (outcome, last) = tokio::join!(pending.release(tx, stop), drain(rx, &self.store, session));
        let result = judge(&outcome, &self.config, place.budget);
        let end = AnalysisEnd {
            reason: Some(outcome.reason),
            session_id: outcome.session_id.clone().or(last.session_id),
            cost_usd: outcome.cost_usd.or(last.cost_usd).unwrap_or(0.0),
            input_tokens: tokens(outcome.tokens.input.max(last.input_tokens)),
            output_tokens: tokens(outcome.tokens.output.max(last.output_tokens)),
            result_error: match &result {
                RunResult::Answer(_) => None,
                RunResult::Unusable(e) | RunResult::Failed(e) => Some(e.clone()),
                RunResult::Blocked(b) => Some(b.why.clone()),
            },
        };
        match self.store.end_analysis_session(session, &end).await {
            // The raw output served only while the agent ran; the redacted work log is the record.
            Ok(()) => remove_private_files(&outcome).await,
            Err(e) => return RunResult::Blocked(database(&e)),
        }
        result
    }

    fn spec(&self, place: &Place<'_>, agent: AgentConfig, scratch: &Path, prompt: String) -> WorkerSpec {
        let config = &self.config;
        let a = &config.analyzer;
        WorkerSpec {
            task_gid: place.task.task_gid.clone(),
            run_id: 0,
            kind: PromptKind::Analyzer,
            agent,
            cwd: scratch.to_path_buf(),
            prompt,
            resume_session: None,
            max_turns: Some(a.max_turns),
            max_budget_usd: Some(place.budget),
            cost_cap_usd: Some(place.budget),
            env: worker_env(
                config,
                self.self_exe.as_deref(),
                &place.task.task_gid,
                None,
                PromptKind::Analyzer,
            ),
            logs_root: config.logs_dir(),
            files_root: config.data_dir().join("workers"),
            timeouts: Timeouts {
                idle: a.idle_timeout.std(),
                hard: a.hard_timeout.std(),
                grace: config.worker.kill_grace.std(),
                ..Timeouts::default()
            },
            max_output_bytes: config.worker.max_output_bytes,
            pricing: config.pricing.clone(),
            usage_baseline: worker::Tokens::default(),
            // Read-only: nothing outside the checkout (nor in it) is to be written.
            writable_dirs: Vec::new(),
            // The kernel holds every agent to that, a command agent too: of the repository, only the
            // scratch checkout is writable (not its `.git`, so no branch or object outlives the triage).
            // The scratch checkout lies in the data directory, hidden from agents: its own `.git` link
            // leads into the repository's, which is read like any worktree's.
            sandbox: worker::sandbox::for_config(config, [scratch.to_path_buf()]).map(|mut s| {
                let repo = crate::config::expand_home(&place.repo.path);
                for dir in workspace::git_dirs(&repo, scratch).unwrap_or_default() {
                    s.allow_read(dir);
                }
                s
            }),
        }
    }

    /// The configured agent, made read-only for triage (see [`worker::read_only`]).
    fn agent(&self) -> AgentConfig {
        worker::read_only(agent_config(&self.config), &self.config)
    }

    /// Ends a session that produced no outcome to record (the agent never ran), as `reason` with `error`.
    async fn end(&self, session: i64, reason: EndReason, error: &str) {
        let end =
            AnalysisEnd { reason: Some(reason), result_error: Some(error.into()), ..Default::default() };
        if let Err(e) = self.store.end_analysis_session(session, &end).await {
            tracing::warn!(session, "recording the end of an analysis session: {e}");
        }
    }
}

/// Where one triage happens.
struct Place<'a> {
    task: &'a Task,
    notes: &'a [String],
    repo_name: &'a str,
    repo: &'a Repo,
    /// Dollars this run may spend.
    budget: f64,
}

/// `<data_dir>/analysis/<gid>-<session id>`: one scratch checkout per analysis session, so an orphan's
/// is found from its session alone.
fn scratch_path(config: &Config, gid: &crate::domain::TaskGid, session: i64) -> PathBuf {
    let dir = config.data_dir().join("analysis").join(format!("{gid}-{session}"));
    std::path::absolute(&dir).unwrap_or(dir)
}

/// A detached checkout of the base branch's head at `scratch`.
fn check_out(repo: &Path, scratch: &Path, base: &str) -> Result<(), String> {
    let sha = workspace::base_commit(repo, base)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("its base branch {base:?} names no commit in {}", repo.display()))?;
    if let Some(parent) = scratch.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    workspace::add_detached(repo, scratch, &sha).map_err(|e| e.to_string())
}

/// The analyzer prompt's context. The task's text is bounded (see [`MAX_PROMPT_TEXT_BYTES`]); the
/// template fences it, and `previous_error`, as data.
fn prompt_context(place: &Place<'_>, scratch: &Path, previous_error: Option<&str>) -> PromptContext {
    let task = place.task;
    let description = task.description.as_deref().unwrap_or("");
    PromptContext {
        task: TaskContext {
            gid: task.task_gid.to_string(),
            title: title(description),
            description: answer::for_prompt(description, MAX_PROMPT_TEXT_BYTES),
            notes: answer::for_prompt(task.notes.as_deref().unwrap_or(""), MAX_PROMPT_TEXT_BYTES),
            url: task.url.clone(),
        },
        run: RunContext {
            repo: place.repo_name.to_string(),
            base_branch: place.repo.base.clone(),
            worktree: scratch.display().to_string(),
            ..Default::default()
        },
        forge: place.repo.forge.clone(),
        change: place.repo.words(),
        analyzer_notes: place.notes.to_vec(),
        previous_error: previous_error.map(str::to_string),
        ..Default::default()
    }
}

/// The first non-blank line of the description, at most 120 characters.
fn title(description: &str) -> String {
    description.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().chars().take(120).collect()
}

/// What a run's end means for the triage. `budget` is what the run was allowed to spend.
fn judge(o: &WorkerOutcome, config: &Config, budget: f64) -> RunResult {
    match o.reason {
        EndReason::Finished => match &o.parsed {
            Some(ParsedResult::Analysis(a)) => match to_triage(a.clone()) {
                Ok(t) => RunResult::Answer(t),
                Err(e) => RunResult::Unusable(e),
            },
            _ => RunResult::Unusable(unusable(o)),
        },
        // Ended on its own without an answer (an error exit, a crash): as worth a second run as prose.
        EndReason::Failed | EndReason::Crashed => RunResult::Unusable(format!(
            "the agent {}{} without a usable answer: {}",
            o.reason.describe(),
            o.exit_code.map(|c| format!(" (exit code {c})")).unwrap_or_default(),
            unusable(o)
        )),
        EndReason::IdleTimeout => RunResult::Failed(format!(
            "the analysis agent printed nothing for {} (analyzer.idle_timeout) and was stopped",
            config.analyzer.idle_timeout
        )),
        EndReason::HardTimeout => RunResult::Failed(format!(
            "the analysis agent ran past {} (analyzer.hard_timeout) and was stopped",
            config.analyzer.hard_timeout
        )),
        EndReason::Interrupted => {
            RunResult::Blocked(Blocked::by(BlockedBy::Stop, "stopped: the analysis was interrupted"))
        }
        // Its cap was the day's remainder or, when that was larger, `budget.per_run_usd`: only the
        // first stops the analyzer; the second is this task's failure.
        EndReason::BudgetExceeded if budget < config.budget.per_run_usd => RunResult::Blocked(Blocked::by(
            BlockedBy::Budget,
            format!("the analysis stopped at the ${budget:.4} left of today's budget (budget.per_day_usd)"),
        )),
        EndReason::BudgetExceeded => RunResult::Failed(format!(
            "the analysis stopped at its cap of ${budget:.4} (budget.per_run_usd) without an answer"
        )),
        other => RunResult::Failed(format!("the analysis agent {}", other.describe())),
    }
}

/// Why a finished run's answer is not usable, quoting the end of its final message when there was no
/// JSON at all (prose, truncated JSON), so the agent sees what it said.
fn unusable(o: &WorkerOutcome) -> String {
    let error = o.result_error.as_ref().map_or_else(|| "no analyzer result".to_string(), |e| e.to_string());
    match (&o.result, o.final_text.as_deref().map(str::trim).filter(|t| !t.is_empty())) {
        (None, Some(text)) => {
            let count = text.chars().count();
            let tail: String = text.chars().skip(count.saturating_sub(QUOTED_ANSWER_CHARS)).collect();
            format!("{error}; the answer ended with: {tail}")
        }
        _ => error,
    }
}

/// The last usage and session id a running agent reported, in case its end does not repeat them.
#[derive(Default)]
struct Reported {
    session_id: Option<String>,
    cost_usd: Option<f64>,
    input_tokens: u64,
    output_tokens: u64,
}

/// Reads a running agent's updates until it ends (the channel closes with it). Its spend is written on
/// the session as it is reported, so that analyses running at the same time, and the runner's workers,
/// see it in the day's budget before this one ends.
async fn drain(mut rx: mpsc::UnboundedReceiver<WorkerUpdate>, store: &Store, session: i64) -> Reported {
    let mut r = Reported::default();
    while let Some(update) = rx.recv().await {
        match update {
            WorkerUpdate::SessionId(id) => r.session_id = Some(id),
            WorkerUpdate::Usage { cost_usd, input_tokens, output_tokens, .. } => {
                r.cost_usd = cost_usd.or(r.cost_usd);
                r.input_tokens = input_tokens;
                r.output_tokens = output_tokens;
                let (input, output) = (tokens(input_tokens), tokens(output_tokens));
                if let Err(e) = store.record_analysis_usage(session, r.cost_usd, input, output).await {
                    // The end records the totals again; a lost update only delays what the budget sees.
                    tracing::warn!(session, "recording an analysis's usage: {e}");
                }
            }
            _ => {}
        }
    }
    r
}

async fn remove_private_files(o: &WorkerOutcome) {
    if let Some(dir) = o.output_path.parent() {
        let _ = tokio::fs::remove_dir_all(dir).await;
    }
}

fn tokens(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn database(e: &StoreError) -> Blocked {
    Blocked::by(BlockedBy::Database, format!("the database failed: {e}"))
}
