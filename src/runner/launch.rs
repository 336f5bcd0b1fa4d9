//! Starting a worker for a run: its worktree, its prompt, its process, and the task that writes what the
//! worker reports into the database as it happens.

use std::path::{Path, PathBuf};

use super::agent_choice::NextAgent;
use super::recording::Recording;
use super::state::{Runner, RunnerError};
use crate::config::Trust;
use crate::config::{Config, Repo};
use crate::domain::{Actor, ReviewVerdict, Run, Task, WorkerKind};
use crate::forge::{Forge, PrSnapshot};
use crate::store::{SessionStart, WorkerBegin, WorkerEnd, WorkerSession};
use crate::worker::prompt::{FailedCheck, PrContext, ReviewComment, RunContext, TaskContext, tail};
use crate::worker::result::ReviewResult;
use crate::worker::{
    self, AgentConfig, EndReason, EnvSpec, PromptContext, PromptError, PromptKind, Prompts, WorkerSpec,
    agent_named, worker_env, worker_timeouts,
};
use crate::workspace;

/// What opening a worker's session came to.
enum Begun {
    Started(Box<WorkerSession>),
    /// The run has a live worker already.
    Busy,
    /// No free slot: the run was let go.
    NoSlot,
}

/// Where a new worker will work, once its worktree exists.
struct Place {
    task: Task,
    branch: String,
    cwd: PathBuf,
    /// The head the worker starts from: the pull request's, else the branch's.
    start_sha: Option<String>,
    /// The worktree was made now, not reused: removed again when no worker starts in it.
    made_now: bool,
    /// Why this host works from another host's work, recorded once a worker really starts here.
    moved_note: Option<String>,
}

impl Runner {
    /// Starts a worker of `kind` for the run. Returns whether its process started, so the caller moves
    /// the run's state only then. A worker that cannot start (no repository, a branch git refuses, a
    /// worktree that cannot be made, a prompt that does not render, a program that cannot run) is a
    /// failed attempt: its session is recorded as `failed_to_start` with the error, which backs off and,
    /// after `runner.max_stuck`, abandons the run with the human told. The error is also returned.
    pub(super) async fn launch(
        &mut self,
        run: &Run,
        kind: WorkerKind,
        next: &NextAgent,
        forge: &Forge,
        pr: Option<&PrSnapshot>,
    ) -> Result<bool, RunnerError> {
        let sessions = self.store.worker_sessions(run.id).await?;
        let asked = asked_for(&self.store, run.id, kind).await?;
        let agent = agent_named(&self.config, &next.name);
        let resume = if kind == WorkerKind::InProgress {
            self.resumable_here(run, &sessions, agent.name()).await?
        } else {
            None
        };
        let place = match self.place(run, forge, pr).await {
            Ok(place) => place,
            Err(e @ RunnerError::Store(_)) => return Err(e),
            Err(e) => {
                let start = SessionStart { start_sha: None, resumed_session: resume };
                if let Begun::Started(s) = self.begin_session(run, kind, agent.name(), &start).await? {
                    let end = WorkerEnd::failed(EndReason::FailedToStart, e.to_string());
                    self.store.end_worker_session(s.id, Some(&self.owner), &end).await?;
                }
                return Err(RunnerError::NotStarted { kind, error: e.to_string() });
            }
        };
        let start = SessionStart { start_sha: place.start_sha.clone(), resumed_session: resume.clone() };
        let session = match self.begin_session(run, kind, agent.name(), &start).await? {
            Begun::Started(session) => session,
            // Another process of this host may have started its worker in this very worktree.
            Begun::Busy => return Ok(false),
            Begun::NoSlot => {
                // No worker here after all: the worktree made for it is not left behind, and the run
                // still names the last host that worked on it.
                if place.made_now {
                    self.remove_unused_worktree(run, &place.cwd, &place.branch).await;
                }
                return Ok(false);
            }
        };
        let wt_path = place.cwd.display().to_string();
        if run.worktree_path.as_deref() != Some(wt_path.as_str())
            || run.branch_name.as_deref() != Some(place.branch.as_str())
        {
            self.store.set_run_workspace(run.id, Some(&self.owner), &wt_path, &place.branch).await?;
        }
        let (repo_name, repo) = self.repo_of(run)?;
        let inputs = WorkerInputs {
            task: &place.task,
            run: Some(run),
            kind,
            repo: Some((repo_name, repo)),
            branch: place.branch,
            cwd: place.cwd.clone(),
            forge: Some(forge),
            pr,
            resume_session: resume,
            ci_logs: match (kind, pr) {
                (WorkerKind::FixCi, Some(pr)) => forge.failed_check_logs(pr).await.unwrap_or_else(|e| {
                    // The prompt then points at the checks' pages instead; not a reason to hold the fix.
                    tracing::warn!(run = run.id, "fetching the failed checks' logs: {e}");
                    Default::default()
                }),
                _ => Default::default(),
            },
            review_findings: match kind {
                WorkerKind::FixComments => {
                    review_findings(&sessions, pr.map(|p| p.head_sha.as_str()).filter(|s| !s.is_empty()))
                }
                _ => Vec::new(),
            },
            asked,
        };
        let budget = self.budget_left(run).await?;
        let mut spec =
            match build_spec(&self.config, &self.prompts, &inputs, agent, budget, self.self_exe.as_deref()) {
                Ok(spec) => spec,
                Err(e) => {
                    let end = WorkerEnd::failed(EndReason::PromptError, e.to_string());
                    self.store.end_worker_session(session.id, Some(&self.owner), &end).await?;
                    return Err(e.into());
                }
            };
        spec.usage_baseline = thread_baseline(&sessions, spec.resume_session.as_deref(), session.id);
        // Before the agent runs: only the comments its prompt lists may be answered.
        if let Err(e) = self.store.offer_comments(run.id, session.id, &offered_comments(&inputs)).await {
            let end = WorkerEnd::failed(EndReason::FailedToStart, format!("cannot record its comments: {e}"));
            let _ = self.store.end_worker_session(session.id, Some(&self.owner), &end).await;
            return Err(e.into());
        }
        let recording = Recording {
            store: self.store.clone(),
            session: session.id,
            run_id: run.id,
            kind,
            holder: Some(self.owner.clone()),
            redactor: self.redactor.clone(),
        };
        // The agent may do nothing before its pid and start time are durable: it waits behind its gate
        // until the session records them. A runner killed before the release leaves a process that exits
        // without running the agent (`NeverStarted` once collected).
        let pending = match worker::start(spec) {
            Ok(pending) => pending,
            Err(e) => {
                let end = WorkerEnd::failed(EndReason::FailedToStart, e.to_string());
                self.store.end_worker_session(session.id, Some(&self.owner), &end).await?;
                return Err(RunnerError::NotStarted { kind, error: e.to_string() });
            }
        };
        let (out, log) =
            (pending.output_path().display().to_string(), pending.log_path().display().to_string());
        let start_time = i64::try_from(pending.pid_start_time()).ok();
        if let Err(e) = self
            .store
            .set_worker_process(session.id, Some(&self.owner), pending.pid(), start_time, &out, &log)
            .await
        {
            pending.abandon(&format!("the agent was not started: cannot record its process: {e}"));
            let end = WorkerEnd::failed(
                EndReason::FailedToStart,
                format!("cannot record the agent's process: {e}"),
            );
            let _ = self.store.end_worker_session(session.id, Some(&self.owner), &end).await;
            return Err(e.into());
        }
        // Said only of a worker that really runs here: a host that made a worktree and then had no slot
        // (or could not start the agent) continued nothing.
        for why in place.moved_note.iter().chain(&next.turned) {
            self.store.record_note(Actor::Runner, Some(&run.task_gid), Some(run.id), why).await?;
        }
        // Behind the lease fence before its gate opens: it never runs while the lease may have lapsed.
        if let Some(fence) = &self.fence {
            fence.guard(pending.pid());
        }
        self.spawn_supervised(recording, move |tx, stop| async move { Ok(pending.release(tx, stop).await) });
        self.free_slots = self.free_slots.saturating_sub(1);
        tracing::info!(run = run.id, task = %run.task_gid, "started a {kind} worker in {wt_path}");
        Ok(true)
    }

    /// The task, branch and worktree a worker of this run works in (made if needed), and the head it
    /// starts from.
    async fn place(&self, run: &Run, forge: &Forge, pr: Option<&PrSnapshot>) -> Result<Place, RunnerError> {
        let (_, repo) = self.repo_of(run)?;
        let repo_path = crate::config::expand_home(&repo.path);
        let task = self.store.task(&run.task_gid).await?;
        let branch = match &run.branch_name {
            Some(b) => b.clone(),
            None => {
                let mut name = workspace::branch_name(
                    &self.config.workspace.branch_prefix,
                    &run.task_gid,
                    task.description.as_deref().unwrap_or(""),
                )?;
                // A task's later run must not inherit an abandoned run's branch (and its closed PR).
                let runs = self
                    .store
                    .list_runs(&crate::store::RunFilter {
                        task_gid: Some(run.task_gid.clone()),
                        ..Default::default()
                    })
                    .await?;
                if runs.len() > 1 {
                    name = format!("{name}-run{}", run.id);
                }
                workspace::check_branch_name(&name)?;
                name
            }
        };
        let root = self.config.worktrees_root();
        // The run's last worker worked on another host (which died, or had no slot): this host starts
        // from the branch as that host pushed it, in a fresh worktree of its own.
        let moved = run
            .worktree_path
            .as_deref()
            .is_some_and(|p| std::path::absolute(&root).is_ok_and(|root| !Path::new(p).starts_with(root)));
        let remote =
            (moved && forge.pushes_branches() && run.pr_number.is_some()).then(|| repo.remote.clone());
        let moved_note = moved.then(|| {
            let from = match (&remote, forge.pushes_branches()) {
                (Some(_), _) => "the pushed branch",
                // Nothing was pushed before a pull request: this host's own copy of the branch, or the base.
                (None, true) => "this host's copy of the branch (nothing was pushed yet)",
                (None, false) => "the shared repository's branch",
            };
            format!(
                "the run's last worktree ({}) is on another host: host {} continues in a fresh worktree from {from}",
                run.worktree_path.as_deref().unwrap_or_default(),
                self.host,
            )
        });
        let (gid, base, b) = (run.task_gid.clone(), repo.base.clone(), branch.clone());
        let (rp, run_id) = (repo_path.clone(), run.id);
        let wt = tokio::task::spawn_blocking(move || {
            if moved {
                workspace::take_over_branch(&rp, &root, &b, remote.as_deref())?;
            }
            let wt = workspace::ensure_worktree(&rp, &root, &gid, run_id, &b, &base)?;
            let head = workspace::branch_head(&rp, &b)?;
            Ok::<_, workspace::WorkspaceError>((wt, head))
        })
        .await??;
        let (wt, branch_head) = wt;
        let start_sha = pr.map(|p| p.head_sha.clone()).filter(|s| !s.is_empty()).or(branch_head);
        Ok(Place { task, branch, cwd: wt.path, start_sha, made_now: !wt.reused, moved_note })
    }

    /// Removes a worktree made for a worker that did not start, when nothing would be lost (the
    /// workspace's rules); otherwise it stays and the run's history says why.
    async fn remove_unused_worktree(&self, run: &Run, path: &Path, branch: &str) {
        let Ok((_, repo)) = self.repo_of(run) else { return };
        let repo_path = crate::config::expand_home(&repo.path);
        let wt = workspace::Worktree { path: path.to_path_buf(), branch: branch.to_string(), reused: false };
        let outcome = tokio::task::spawn_blocking(move || workspace::remove_if_safe(&repo_path, &wt)).await;
        let kept = match outcome {
            Ok(Ok(workspace::Removal::Kept { reason })) => reason,
            Ok(Err(e)) => e.to_string(),
            Ok(Ok(_)) => return,
            Err(e) => e.to_string(),
        };
        let note =
            format!("worktree {} made for a worker that did not start is kept: {kept}", path.display());
        let _ = self.store.record_note(Actor::Runner, Some(&run.task_gid), Some(run.id), &note).await;
    }

    /// Opens the worker's session within the worker limits. It must not start now when the run has a live
    /// worker already (another process started one a moment ago), or when every slot is taken — then
    /// the run is let go for a runner with a free slot, on any host, to take.
    async fn begin_session(
        &mut self,
        run: &Run,
        kind: WorkerKind,
        agent: &str,
        start: &SessionStart,
    ) -> Result<Begun, RunnerError> {
        match self.store.begin_runner_worker(run.id, kind, agent, &self.slot(), start).await? {
            WorkerBegin::Started(session) => Ok(Begun::Started(session)),
            WorkerBegin::RunBusy => Ok(Begun::Busy),
            WorkerBegin::NoSlot(why) => {
                self.free_slots = 0;
                let why = format!("No free worker slot: {why}; the run waits for a runner with one.");
                self.store.record_decision(run.id, Some(&self.owner), &why).await?;
                self.store.release_run_for_slot(run.id, &self.owner).await?;
                Ok(Begun::NoSlot)
            }
            WorkerBegin::LeaseLost => Err(crate::store::StoreError::LeaseLost(run.id).into()),
        }
    }

    /// The agent session an `in_progress` worker continues ([`session_to_resume`]), unless it ran on
    /// another host: a session lives in that host's agent files and cannot be resumed here, so the
    /// worker starts a fresh one and the run's history says why.
    async fn resumable_here(
        &self,
        run: &Run,
        sessions: &[WorkerSession],
        agent: &str,
    ) -> Result<Option<String>, RunnerError> {
        let Some(id) = session_to_resume(sessions, agent) else { return Ok(None) };
        let ran_on =
            sessions.iter().rev().find(|s| s.session_id.as_deref() == Some(id.as_str())).map(|s| &s.host);
        match ran_on {
            Some(host) if *host != self.host => {
                let why = format!(
                    "agent session {id} ran on host {host} and cannot be resumed on host {}: a fresh session starts",
                    self.host
                );
                self.store.record_note(Actor::Runner, Some(&run.task_gid), Some(run.id), &why).await?;
                Ok(None)
            }
            _ => Ok(Some(id)),
        }
    }

    /// The agent's environment for one of this runner's runs.
    pub(super) fn worker_env(&self, run: &Run, kind: WorkerKind) -> EnvSpec {
        worker_env(&self.config, self.self_exe.as_deref(), &run.task_gid, Some(run.id), kind.into())
    }
}

/// What a worker is built from, whoever starts it: the runner, or `executor worker run` by hand.
pub(crate) struct WorkerInputs<'a> {
    pub task: &'a Task,
    /// The run it works on; `None` for a worker run by hand on a task that has no run.
    pub run: Option<&'a Run>,
    pub kind: WorkerKind,
    pub repo: Option<(&'a str, &'a Repo)>,
    pub branch: String,
    /// The worktree (or, by hand, any directory).
    pub cwd: PathBuf,
    pub forge: Option<&'a Forge>,
    pub pr: Option<&'a PrSnapshot>,
    /// The agent session an `in_progress` worker continues ([`session_to_resume`]); `None` starts a
    /// fresh one, and the prompt says the earlier session could not be resumed.
    pub resume_session: Option<String>,
    /// `fix_comments` after a failed review: what the review found ([`review_findings`]).
    pub review_findings: Vec<ReviewComment>,
    /// `fix_ci`: the end of each failed check's log, by check name, where the forge could fetch it.
    pub ci_logs: std::collections::HashMap<String, String>,
    /// The plan and the answers a person gave (see `launch/asked.rs`).
    pub asked: Asked,
}

/// The findings of the run's failed review at `head`, for the `fix_comments` worker that answers it:
/// from the newest `pr_review` session that failed at this head. Empty when the review passed or was of
/// another head.
pub(crate) fn review_findings(sessions: &[WorkerSession], head: Option<&str>) -> Vec<ReviewComment> {
    let Some(review) = sessions.iter().rev().find(|s| {
        s.kind == WorkerKind::PrReview
            && s.verdict == Some(ReviewVerdict::Fail)
            && head.is_some()
            && s.start_sha.as_deref() == head
    }) else {
        return Vec::new();
    };
    let parsed = review.result_json.as_deref().and_then(|j| serde_json::from_str::<ReviewResult>(j).ok());
    let Some(result) = parsed else { return Vec::new() };
    let summary = ReviewComment {
        id: format!("review-{}", review.id),
        author: "executor review".into(),
        path: None,
        line: None,
        body: result.summary,
    };
    let findings = result.findings.into_iter().enumerate().map(|(i, f)| ReviewComment {
        id: format!("review-{}-{}", review.id, i + 1),
        author: "executor review".into(),
        path: f.path,
        line: f.line,
        body: f.body,
    });
    std::iter::once(summary).chain(findings).collect()
}

/// What an agent thread had used before the session `before` (Codex reports a resumed thread's running
/// total, so a worker's own use is the total less this). Sessions record input and output tokens only.
pub(crate) fn thread_baseline(
    sessions: &[WorkerSession],
    thread: Option<&str>,
    before: i64,
) -> worker::Tokens {
    let Some(thread) = thread else { return worker::Tokens::default() };
    let earlier = sessions.iter().filter(|s| s.id < before && s.session_id.as_deref() == Some(thread));
    let sum = |f: fn(&WorkerSession) -> i64| earlier.clone().map(|s| u64::try_from(f(s)).unwrap_or(0)).sum();
    worker::Tokens { input: sum(|s| s.input_tokens), output: sum(|s| s.output_tokens), ..Default::default() }
}

/// The agent session a new `in_progress` worker of `agent` should continue: the newest one of the
/// task's own work (`queued`, `in_progress`) by that agent, never a review's or a fix's thread, nor
/// another agent's. After a worker failed to resume, the next starts afresh: a session id that could not
/// be resumed is never passed again.
pub(crate) fn session_to_resume(sessions: &[WorkerSession], agent: &str) -> Option<String> {
    let unresumable: Vec<&str> = sessions
        .iter()
        .filter(|s| s.end_reason == Some(EndReason::ResumeFailed))
        .filter_map(|s| s.resumed_session.as_deref())
        .collect();
    let own_work = |s: &&WorkerSession| matches!(s.kind, WorkerKind::Queued | WorkerKind::InProgress);
    for s in sessions.iter().rev().filter(own_work).filter(|s| s.agent == agent) {
        if s.end_reason == Some(EndReason::ResumeFailed) {
            return None;
        }
        if let Some(id) = s.session_id.as_deref().filter(|id| !unresumable.contains(id)) {
            return Some(id.to_string());
        }
    }
    None
}

/// Renders the kind's prompt and assembles the spec: budget, turns, environment, timeouts, log places.
/// A template error surfaces here, before any process exists.
pub(crate) fn build_spec(
    config: &Config,
    prompts: &Prompts,
    w: &WorkerInputs<'_>,
    agent: AgentConfig,
    budget_usd: f64,
    self_exe: Option<&Path>,
) -> Result<WorkerSpec, PromptError> {
    let ctx = prompt_context(w);
    let prompt = prompts.render(PromptKind::Worker(w.kind), &ctx)?;
    let run_id = w.run.map(|r| r.id);
    // The worktree's git directories are derived from the configured repository, never from its `.git`.
    let repo_path = w.repo.map(|(_, r)| crate::config::expand_home(&r.path));
    let (git_dirs, mut write_dirs) = git_dirs_of(repo_path.as_deref(), &w.cwd);
    let agent = if w.kind == WorkerKind::Plan {
        // A plan is written reading only: the agent in its read-only mode, and nothing of the repository's
        // `.git` writable, so no commit can come of it.
        write_dirs.clear();
        worker::read_only(agent, config)
    } else {
        agent
    };
    Ok(WorkerSpec {
        task_gid: w.task.task_gid.clone(),
        run_id: run_id.unwrap_or(0),
        kind: PromptKind::Worker(w.kind),
        agent,
        cwd: w.cwd.clone(),
        prompt,
        resume_session: ctx.run.resumed_session,
        max_turns: Some(config.worker.max_turns.for_kind(w.kind)),
        max_budget_usd: Some(budget_usd),
        cost_cap_usd: Some(budget_usd),
        env: worker_env(config, self_exe, &w.task.task_gid, run_id, w.kind.into()),
        logs_root: config.logs_dir(),
        files_root: config.data_dir().join("workers"),
        timeouts: worker_timeouts(config),
        max_output_bytes: config.worker.max_output_bytes,
        pricing: config.pricing.clone(),
        usage_baseline: worker::Tokens::default(),
        sandbox: worker_sandbox(config, &w.cwd, &write_dirs, &git_dirs),
        writable_dirs: write_dirs,
    })
}

/// Where a worker's agent may write (`worker.sandbox`): its worktree, what a commit needs of the
/// repository's `.git` (`write_dirs`; the rest of `git_dirs` read-only), and `worker.sandbox_writable`.
/// No database: an agent says what it has to say in its result.
fn worker_sandbox(
    config: &Config,
    cwd: &Path,
    write_dirs: &[PathBuf],
    git_dirs: &[PathBuf],
) -> Option<worker::Sandbox> {
    let writable = std::iter::once(cwd.to_path_buf()).chain(write_dirs.iter().cloned());
    let mut sandbox = worker::sandbox::for_config(config, writable)?;
    for dir in git_dirs {
        sandbox.allow_read(dir.clone());
    }
    Some(sandbox)
}

/// The worktree's git directories (its own and the common one), and of them what a commit writes. A
/// directory that is not a worktree of the configured repository (a worker run by hand anywhere), or
/// one whose link was tampered with, has none.
fn git_dirs_of(repo: Option<&Path>, cwd: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let Some(repo) = repo else { return (Vec::new(), Vec::new()) };
    let dirs =
        workspace::git_dirs(repo, cwd).and_then(|all| Ok((all, workspace::git_write_dirs(repo, cwd)?)));
    dirs.unwrap_or_else(|e| {
        tracing::warn!("no git directories for the agent in {}: {e}", cwd.display());
        (Vec::new(), Vec::new())
    })
}

/// Everything the prompt templates may use, from the task, its run, and its pull request.
pub(crate) fn prompt_context(w: &WorkerInputs<'_>) -> PromptContext {
    let task = w.task;
    let repo = w.repo.map(|(_, r)| r);
    PromptContext {
        task: TaskContext {
            gid: task.task_gid.to_string(),
            title: first_line(task.description.as_deref().unwrap_or("")),
            // Stored whole (the filters read all of it); a prompt gets a bounded part.
            description: crate::domain::shown(
                task.description.as_deref().unwrap_or(""),
                crate::domain::SHOWN_TEXT_BYTES,
            )
            .into_owned(),
            notes: crate::domain::shown(task.notes.as_deref().unwrap_or(""), crate::domain::SHOWN_TEXT_BYTES)
                .into_owned(),
            url: None,
        },
        run: RunContext {
            id: w.run.map_or(0, |r| r.id),
            repo: w.repo.map(|(name, _)| name.to_string()).unwrap_or_default(),
            branch: w.branch.clone(),
            base_branch: repo.map(|r| r.base.clone()).unwrap_or_default(),
            worktree: w.cwd.display().to_string(),
            resumed_session: w.resume_session.clone().filter(|_| w.kind == WorkerKind::InProgress),
        },
        forge: w.forge.map_or("local", Forge::name).to_string(),
        change: repo.map(Repo::words).unwrap_or_default(),
        pr: w.pr.map(|p| PrContext {
            url: p.url.clone(),
            number: p.number,
            head_sha: Some(p.head_sha.clone()),
            draft: p.draft,
        }),
        failed_checks: w.pr.map(|p| failed_checks(p, &w.ci_logs)).unwrap_or_default(),
        comments: w.pr.map(|p| unresolved(p, &repo.map(Repo::trust).unwrap_or_default())).unwrap_or_default(),
        required_checks: repo.map(|r| r.required_checks.clone()).unwrap_or_default(),
        acceptance_criteria: acceptance_criteria(repo, task),
        analyzer_notes: Vec::new(),
        review_rules: match (w.kind, repo) {
            (WorkerKind::PrReview, Some(r)) => workspace::review_rules(&w.cwd, &r.review_rules),
            _ => Vec::new(),
        },
        review_findings: w.review_findings.clone(),
        plan: w.asked.plan.clone(),
        plan_feedback: w.asked.plan_feedback.clone(),
        answers: w.asked.answers.clone(),
        previous_error: None,
    }
}

/// The comments a worker's prompt lists for it to answer (by forge id): a `fix_comments` worker's.
pub(crate) fn offered_comments(w: &WorkerInputs<'_>) -> Vec<String> {
    match (w.kind, w.pr) {
        (WorkerKind::FixComments, Some(pr)) => {
            unresolved(pr, &w.repo.map(|(_, r)| r.trust()).unwrap_or_default())
                .into_iter()
                .map(|c| c.id)
                .collect()
        }
        _ => Vec::new(),
    }
}

/// What the pull request must meet: the repository's configured criteria, then the task's own from its
/// triage, each once (a triage that repeats a configured criterion does not make the review check it
/// twice).
fn acceptance_criteria(repo: Option<&Repo>, task: &Task) -> Vec<String> {
    let mut all: Vec<String> = repo.map(|r| r.acceptance_criteria.clone()).unwrap_or_default();
    for c in &task.acceptance_criteria {
        let c = c.trim();
        if !c.is_empty() && !all.iter().any(|a| a.trim() == c) {
            all.push(c.to_string());
        }
    }
    all
}

fn first_line(text: &str) -> String {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").chars().take(120).collect()
}

/// The head's failed checks for the `fix_ci` prompt, each with the end of its log (the job log the
/// forge fetched, else the check's own summary).
fn failed_checks(pr: &PrSnapshot, logs: &std::collections::HashMap<String, String>) -> Vec<FailedCheck> {
    pr.checks_at_head()
        .into_iter()
        .filter(|c| c.status.is_failing())
        .map(|c| {
            let log = logs.get(&c.name).map(String::as_str).or(c.summary.as_deref()).unwrap_or("");
            FailedCheck {
                name: c.name.clone(),
                conclusion: c.status.as_str().to_string(),
                url: c.url.clone(),
                log_tail: tail(log, 200, 16_000),
            }
        })
        .collect()
}

/// The comments a worker is asked to answer: only `repos.NAME.trusted_authors`', on every forge.
fn unresolved(pr: &PrSnapshot, trust: &Trust) -> Vec<ReviewComment> {
    pr.unresolved_trusted_comments(trust)
        .into_iter()
        .map(|c| ReviewComment {
            id: c.id.clone(),
            author: c.author.clone(),
            path: c.path.clone(),
            line: c.line,
            body: c.body.clone(),
        })
        .collect()
}

mod asked;
pub(crate) use asked::{Asked, asked_for};

#[cfg(test)]
mod no_slot_tests;
#[cfg(test)]
mod tests;
