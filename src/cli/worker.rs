//! `executor worker run` (one worker by hand, in the foreground) and `executor logs`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use tokio::sync::mpsc;

use super::Context;
use super::output::json;
use super::parse::parse_gid;
use crate::budget::{budget_left, too_little};
use crate::config::Config;
use crate::domain::{Run, RunState, WorkerKind};
use crate::instance_lock::{InstanceLock, LockError};
use crate::runner::{
    Recording, WorkerInputs, build_spec, forge_for, load_prompts, offered_comments, session_to_resume,
    shutdown_on_signals, supervise_recorded,
};
use crate::store::{RunFilter, SessionStart, WorkerEnd};
use crate::worker::worklog::{find_newest, follow};
use crate::worker::{self, EndReason, PromptKind, WorkerOutcome, WorkerUpdate, agent_config};
use crate::workspace;

#[derive(Debug, Subcommand)]
pub enum WorkerCommand {
    /// Run one worker in the foreground, outside the runner, to try an agent or a prompt. With an active
    /// run it is recorded on the run like the runner's workers; the work log is written either way.
    /// Refused while a runner is running.
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task to work on (it must be in the queue).
    #[arg(long, value_name = "GID")]
    task: String,
    /// The prompt to use: queued, in_progress, fix_ci, fix_comments, fix_conflicts or pr_review.
    #[arg(long, value_parser = parse_worker_kind)]
    kind: WorkerKind,
    /// Use this agent instead of worker.agent from the config.
    #[arg(long, value_parser = ["claude", "codex", "command"])]
    agent: Option<String>,
    /// Where the agent works (it may commit there). Default: the run's worktree; for a task without one,
    /// a scratch worktree of the task's repository at its base branch (detached: no branch moves), under
    /// the worktree root — never the directory you stand in.
    #[arg(long, value_name = "PATH")]
    dir: Option<PathBuf>,
}

fn parse_worker_kind(s: &str) -> Result<WorkerKind, String> {
    s.parse().map_err(|e: crate::domain::UnknownName| e.to_string())
}

fn parse_prompt_kind(s: &str) -> Result<PromptKind, String> {
    s.parse().map_err(|e: crate::domain::UnknownName| e.to_string())
}

pub async fn run(ctx: &Context, command: WorkerCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        WorkerCommand::Run(args) => run_worker(ctx, args, as_json).await,
    }
}

/// The config with `--agent` applied.
fn with_agent(config: &Config, agent: Option<&str>) -> anyhow::Result<Config> {
    let mut config = config.clone();
    if let Some(agent) = agent {
        config.worker.agent = agent.to_string();
    }
    if config.worker.agent == "command" && config.worker.command.argv.is_empty() {
        bail!(
            "the command agent needs a program: set worker.command.argv in {} (e.g. argv = [\"./my-agent.sh\"])",
            config.source.as_ref().map_or("executor.toml".into(), |p| p.display().to_string())
        );
    }
    Ok(config)
}

async fn run_worker(ctx: &Context, args: RunArgs, as_json: bool) -> anyhow::Result<()> {
    let gid = parse_gid(&args.task)?;
    let config = with_agent(&ctx.config, args.agent.as_deref())?;
    let data_dir = config.data_dir();
    // Held until the worker ends: the runner and a worker run by hand never supervise the same agent.
    let _lock = match InstanceLock::acquire(&data_dir, "runner") {
        Ok(lock) => lock,
        Err(LockError::Held { pid, .. }) => bail!(
            "a runner is running on {} (pid {pid}): it may start or supervise a worker for this task; run a worker by hand once the runner is idle or stopped",
            data_dir.display()
        ),
        Err(e) => return Err(e.into()),
    };
    let store = &ctx.store;
    let Some(task) = store.find_task(&gid).await? else {
        bail!("no task {gid} in the queue (add it with `executor queue add --gid {gid} --description TEXT`)");
    };
    let run: Option<Run> = store
        .list_runs(&RunFilter { task_gid: Some(gid.clone()), ..Default::default() })
        .await?
        .into_iter()
        .find(|r| r.state.is_active());
    if let Some(r) = run.as_ref().filter(|r| r.state == RunState::Complete) {
        // A complete run is reviewed, green and told; a worker by hand would change it behind that.
        bail!(
            "run {} of task {gid} is complete: a worker by hand would change a finished run. To work on it \
             again, comment on its pull request (`executor comment {} \"…\"`) so the runner takes it back to pr",
            r.id,
            r.id
        );
    }
    // The repository, forge and pull request fill the prompt; a worker by hand runs without them.
    let who = match &run {
        Some(r) => format!("run {}", r.id),
        None => format!("task {gid}"),
    };
    let repo_name = run.as_ref().and_then(|r| r.repo.clone()).or(task.repo.clone());
    let repo = match config.repo_for(repo_name.as_deref(), &who) {
        Ok(repo) => Some(repo),
        Err(e) => {
            say_err!("note: {e}; the prompt has no repository");
            None
        }
    };
    let dir = match (&args.dir, run.as_ref().and_then(|r| r.worktree_path.as_ref())) {
        (Some(d), _) => d.clone(),
        // Read back from the database, which is writable by more than executor: only under the root.
        (None, Some(wt)) => crate::workspace::path_under(&config.worktrees_root(), std::path::Path::new(wt))
            .with_context(|| {
                format!(
                    "run {} records worktree {wt}, which is refused; pass --dir",
                    run.as_ref().map_or(0, |r| r.id)
                )
            })?,
        (None, None) => scratch_worktree(&config, &gid, repo.map(|(_, r)| r))?,
    };
    let cwd = std::path::absolute(&dir)
        .ok()
        .filter(|p| p.is_dir())
        .with_context(|| format!("{} is not a directory", dir.display()))?;

    let forge = repo.and_then(|(name, r)| forge_for(&config, store, name, r).ok());
    let pr = match (&forge, &run) {
        (Some(f), Some(r)) => f.snapshot(r).await?,
        _ => None,
    };
    let branch = match run.as_ref().and_then(|r| r.branch_name.clone()) {
        Some(b) => b,
        None => workspace::current_branch(&cwd).ok().flatten().unwrap_or_default(),
    };
    let sessions = match &run {
        Some(r) => store.worker_sessions(r.id).await?,
        None => Vec::new(),
    };
    let agent = agent_config(&config);
    let resume =
        if args.kind == WorkerKind::InProgress { session_to_resume(&sessions, agent.name()) } else { None };
    let inputs = WorkerInputs {
        resume_session: resume.clone(),
        task: &task,
        run: run.as_ref(),
        kind: args.kind,
        repo,
        branch,
        cwd: cwd.clone(),
        forge: forge.as_ref(),
        pr: pr.as_ref(),
        review_findings: Vec::new(),
        ci_logs: Default::default(),
        asked: match &run {
            Some(r) => crate::runner::asked_for(store, r.id, args.kind).await?,
            None => Default::default(),
        },
    };
    let budget = budget_left(&config, store, run.as_ref()).await?;
    let b = &config.budget;
    if too_little(b, b.per_run_usd.min(b.per_day_usd), budget) {
        bail!(
            "no budget left ({}): raise budget.per_run_usd or budget.per_day_usd to run a worker",
            run.as_ref().map_or("today".into(), |r| format!(
                "run {} has spent {}",
                r.id,
                super::output::money(r.cost_usd, r.cost_estimated)
            ))
        );
    }
    let agent_name = agent.name();
    let self_exe = std::env::current_exe().ok();
    let prompts = load_prompts(&config)?;
    let spec = build_spec(&config, &prompts, &inputs, agent, budget, self_exe.as_deref())?;

    let say = |line: String| {
        if as_json {
            say_err!("{line}");
        } else {
            say!("{line}");
        }
    };
    say(format!("task {gid}: {} worker, agent {agent_name}, in {}", args.kind, cwd.display()));
    let recording = match &run {
        Some(r) => {
            // What the worker starts from: the pull request's head, else the branch's.
            let branch_head = match (&r.branch_name, &repo) {
                (Some(b), Some((_, rp))) => {
                    let (path, b) = (crate::config::expand_home(&rp.path), b.clone());
                    tokio::task::spawn_blocking(move || workspace::branch_head(&path, &b))
                        .await?
                        .ok()
                        .flatten()
                }
                _ => None,
            };
            let start = SessionStart {
                start_sha: pr.as_ref().map(|p| p.head_sha.clone()).filter(|s| !s.is_empty()).or(branch_head),
                resumed_session: resume,
            };
            let Some(session) =
                store.begin_worker_session(r.id, args.kind, agent_name, &config.host_name(), &start).await?
            else {
                bail!(
                    "run {} already has a live worker session (see `executor runs show {}`); wait for it to end",
                    r.id,
                    r.id
                );
            };
            say(format!("recording on run {} as worker session {}", r.id, session.id));
            // Its replies are posted by the runner, like its workers' (the runner is not running now).
            if let Err(e) = store.offer_comments(r.id, session.id, &offered_comments(&inputs)).await {
                let why = format!("cannot record its comments: {e}");
                let _ = store
                    .end_worker_session(session.id, None, &WorkerEnd::failed(EndReason::FailedToStart, why))
                    .await;
                return Err(e.into());
            }
            Some(Recording {
                store: store.clone(),
                session: session.id,
                run_id: r.id,
                kind: args.kind,
                holder: None,
                redactor: crate::redact::Redactor::from_config(&config),
            })
        }
        None => {
            say(format!(
                "task {gid} has no active run: nothing is recorded on a run (the work log is still written)"
            ));
            None
        }
    };
    let session_id = recording.as_ref().map(|r| r.session);

    // Ctrl-C (or SIGTERM) stops the agent's process group.
    let cancel = shutdown_on_signals();
    let (tx, rx) = mpsc::unbounded_channel();
    let mut printer = None;
    let outcome = match recording {
        Some(rec) => {
            supervise_recorded(rec, |sink| {
                printer = Some(tokio::spawn(show_progress(rx, Some(sink), as_json)));
                worker::run(spec, tx, cancel)
            })
            .await
        }
        None => {
            printer = Some(tokio::spawn(show_progress(rx, None, as_json)));
            worker::run(spec, tx, cancel).await
        }
    };
    if let Some(p) = printer {
        let _ = p.await;
    }
    let outcome = outcome?;
    if as_json {
        let mut value = serde_json::to_value(&outcome)?;
        if let Some(obj) = value.as_object_mut() {
            obj.insert("run_id".into(), run.as_ref().map(|r| r.id).into());
            obj.insert("worker_session".into(), session_id.into());
        }
        json(&value)?;
    } else {
        print_outcome(&outcome);
        match (&run, session_id) {
            (Some(r), Some(s)) => say!("recorded on run {} (worker session {s})", r.id),
            _ => say!("nothing was recorded on a run"),
        }
    }
    if outcome.reason != EndReason::Finished {
        bail!("the worker did not finish: {}", outcome.reason.describe());
    }
    Ok(())
}

/// Says where the work log is as soon as the agent runs, and passes every update on to `sink`.
async fn show_progress(
    mut rx: mpsc::UnboundedReceiver<WorkerUpdate>,
    sink: Option<mpsc::UnboundedSender<WorkerUpdate>>,
    as_json: bool,
) {
    while let Some(update) = rx.recv().await {
        let line = match &update {
            WorkerUpdate::Started { pid, log_path, .. } => {
                Some(format!("agent started (pid {pid}); work log: {}", log_path.display()))
            }
            WorkerUpdate::SessionId(id) => Some(format!("agent session: {id}")),
            _ => None,
        };
        if let Some(line) = line {
            if as_json {
                say_err!("{line}");
            } else {
                say!("{line}");
            }
        }
        if let Some(sink) = &sink {
            let _ = sink.send(update);
        }
    }
}

fn print_outcome(o: &WorkerOutcome) {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    say!("ended:      {} ({})", o.reason, o.reason.describe());
    say!("duration:   {:.1}s", o.duration.as_secs_f64());
    say!("turns:      {}", opt(o.num_turns.map(|n| n.to_string())));
    say!("cost:       {}", opt(o.cost_usd.map(|c| format!("${c:.4}"))));
    say!("tokens:     {} in / {} out", o.input_tokens(), o.output_tokens());
    say!("session:    {}", opt(o.session_id.clone()));
    if let Some(e) = &o.result_error {
        say!("result:     {e}");
    }
    say!("work log:   {}", o.log_path.display());
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The task whose work log to print.
    #[arg(value_name = "GID")]
    gid: String,
    /// Only logs of this kind: queued, in_progress, fix_ci, fix_comments, fix_conflicts, pr_review or
    /// analyzer.
    #[arg(long, value_parser = parse_prompt_kind)]
    kind: Option<PromptKind>,
    /// Keep printing what is appended until the worker's log is closed (or Ctrl-C).
    #[arg(long)]
    follow: bool,
}

/// Prints the newest work log of a task, or follows it.
pub async fn logs(config: &Config, args: LogsArgs, as_json: bool) -> anyhow::Result<()> {
    let gid = parse_gid(&args.gid)?;
    let root = config.logs_dir();
    let Some(path) = find_newest(&root, &gid, args.kind) else {
        let of_kind = args.kind.map(|k| format!(" of kind {k}")).unwrap_or_default();
        bail!("no work log{of_kind} for task {gid} in {}", root.join(gid.as_str()).display());
    };
    if args.follow {
        say_err!("following {} (Ctrl-C to stop)", path.display());
        let mut out = super::output::Shown::new(std::io::stdout());
        follow(&path, &mut out, shutdown_on_signals())
            .await
            .with_context(|| format!("reading {}", path.display()))?;
        return Ok(());
    }
    let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    if as_json {
        return json(&serde_json::json!({
            "path": path,
            "text": String::from_utf8_lossy(&text),
        }));
    }
    say_err!("{}", path.display());
    let mut out = std::io::stdout().lock();
    out.write_all(super::output::shown(&String::from_utf8_lossy(&text)).as_bytes())?;
    out.flush()?;
    Ok(())
}

/// A worktree of its own for a worker by hand on a task without a run: detached at the repository's
/// base, under the worktree root, so that what the agent commits moves no branch of anyone's.
fn scratch_worktree(
    config: &Config,
    gid: &crate::domain::TaskGid,
    repo: Option<&crate::config::Repo>,
) -> anyhow::Result<PathBuf> {
    let Some(repo) = repo else {
        bail!(
            "task {gid} has no run and no repository to make a scratch worktree of: pass --dir DIR to choose where the agent works (it may commit there)"
        );
    };
    let repo_path = crate::config::expand_home(&repo.path);
    // Not ending in `-<number>`: the runner's sweep takes such a name for a run's worktree.
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let path = config.worktrees_root().join(format!("scratch-{gid}-{stamp}"));
    std::fs::create_dir_all(config.worktrees_root()).context("creating the worktree root")?;
    let making = || format!("making a scratch worktree of {} at {}", repo_path.display(), repo.base);
    let sha = workspace::base_commit(&repo_path, &repo.base)
        .with_context(making)?
        .with_context(|| format!("{}: the base branch names no commit", making()))?;
    workspace::add_detached(&repo_path, &path, &sha).with_context(making)?;
    say_err!(
        "note: task {gid} has no run: the agent works in a scratch worktree, {} (detached at {}); \
         remove it with `git -C {} worktree remove --force {}`",
        path.display(),
        repo.base,
        repo_path.display(),
        path.display()
    );
    Ok(path)
}
