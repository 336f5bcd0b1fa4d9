//! `executor demo`: the whole pipeline on the embedded default (SQLite, local forge, no accounts) in a
//! scratch directory, with the fake agent the tests use standing in for a model.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;

use super::Context;
use crate::domain::{Actor, By, QueueStatus, RunState, TaskGid};
use crate::runner::Runner;
use crate::store::{NewComment, NewTask};

mod narrate;

/// The fake agent: acts by `$EXECUTOR_WORKER_KIND` (commit, fix CI, answer comments, review).
const AGENT: &str = include_str!("../../tests/fake_agents/pipeline.sh");

/// The human who comments on the demo's pull request: the config lists them in `trusted_authors`, as a
/// real setup lists its reviewers, since only trusted authors' comments make a worker act.
const REVIEWER: &str = "you";

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to build the demo (default: a new directory under the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("git")
        .args(["-c", "user.name=executor demo", "-c", "user.email=demo@executor.invalid"])
        .args(args)
        .current_dir(dir)
        .output()
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        bail!("git {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// One analyzer pass, in process, printing each task's outcome as `executor analyzer` does.
async fn triage(ctx: &Context) -> anyhow::Result<()> {
    let config = std::sync::Arc::new(ctx.config.clone());
    let prompts = std::sync::Arc::new(crate::runner::load_prompts(&config)?);
    let owner = crate::analyzer::owner(&config);
    let triager = crate::analyzer::triage::Triager::new(
        config.clone(),
        prompts,
        ctx.store.clone(),
        owner.clone(),
        std::env::current_exe().ok(),
    );
    let analyzer = crate::analyzer::Analyzer::new(config, ctx.store.clone(), triager, owner)?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let (_stop_tx, stop) = tokio::sync::watch::channel(false);
    let pass = tokio::spawn(async move { analyzer.run_until_idle(tx, stop).await });
    while let Some(event) = rx.recv().await {
        use crate::analyzer::Progress;
        match event {
            Progress::Filtered { task_gid, rule, why } => {
                say!("  {task_gid}: skipped by filter {rule} ({why})")
            }
            Progress::Triaged { task_gid, status, priority, summary } => {
                say!("  {task_gid}: triaged {status}, priority {priority}: {summary}")
            }
            Progress::Failed { task_gid, error, .. } => say!("  {task_gid}: analysis failed: {error}"),
            Progress::Started { .. } | Progress::Overtaken { .. } => {}
        }
    }
    pass.await??;
    Ok(())
}

/// What you say when the run waits for you: you approve the plan its agent wrote, and answer the question
/// it asked (`executor plan approve`, `executor answer`). Returns whether the run waited for you.
async fn answer_for_the_agent(store: &crate::store::Store, run_id: i64) -> anyhow::Result<bool> {
    use crate::domain::{AnswerVia, PlanStatus};
    if let Some(plan) = store.latest_plan(run_id).await?.filter(|p| p.status == PlanStatus::AwaitingApproval)
    {
        say!("  (you read plan revision {} and approve it: `executor plan approve {run_id}`)", plan.revision);
        for line in plan.body.lines() {
            say!("    | {line}");
        }
        store
            .decide_plan(run_id, &crate::store::PlanVerdict::Approve, By::person(Actor::Cli, REVIEWER))
            .await?;
        return Ok(true);
    }
    let open = store.questions(run_id).await?.into_iter().find(|q| q.answered_at.is_none());
    if let Some(q) = open {
        let answer = "Say hello: GREETING=hello";
        say!("  (the agent asks: \"{}\"; you answer: `executor answer {run_id} \"{answer}\"`)", q.question);
        store.answer_question(run_id, answer, AnswerVia::Cli, By::person(Actor::Cli, REVIEWER)).await?;
        return Ok(true);
    }
    Ok(false)
}

fn step(text: &str) {
    say!("\n==> {text}");
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let keep = args.dir.is_some();
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("executor-demo-{}", std::process::id())),
    };
    if dir.join("executor.toml").exists() {
        bail!("{} already holds a demo; pass another --dir", dir.display());
    }
    let dir = std::path::absolute(&dir)?;
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).with_context(|| format!("creating {}", repo.display()))?;

    step(&format!("A git repository with one commit, in {}", repo.display()));
    git(&repo, &["init", "-q", "-b", "main"])?;
    std::fs::write(repo.join("README.md"), "# demo app\n")?;
    git(&repo, &["add", "README.md"])?;
    git(&repo, &["commit", "-qm", "Initial commit"])?;

    let agent = dir.join("agent.sh");
    std::fs::write(&agent, AGENT)?;
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let config_path = dir.join("executor.toml");
    let toml_str = |p: &Path| toml::Value::String(p.display().to_string()).to_string();
    std::fs::write(
        &config_path,
        format!(
            "# The demo's config: SQLite in ./data, the local forge, and a fake agent instead of a model.\n\
             [paths]\ndata_dir = {data}\n\n[runner]\nloop_interval = \"1s\"\nretry_backoff = \"1s\"\n\n\
             [worker]\nagent = \"command\"\nidle_timeout = \"1m\"\n\n[worker.command]\nargv = [{agent}]\n\n\
             [notify]\nmention = \"@you\"\n\n[repos.demo]\npath = {repo}\n\
             # A plan is written (reading only) and approved by you before any code.\n\
             plan = \"required\"\n\
             # Only comments by these authors make a worker act; the demo's reviewer is \"you\".\n\
             trusted_authors = [{reviewer}]\n\
             # CI fails until the agent's fix_ci worker adds the file it checks for.\n\
             ci_command = [\"sh\", \"-c\", \"sleep 2; test -f ci-fixed || {{ echo 'ci-fixed is missing'; exit 1; }}\"]\n\n\
             # A skip filter, as the seed has: design work never reaches the agent.\n\
             [[filters]]\nname = \"figma_link\"\nwhy = \"links a Figma design\"\n\
             [filters.when]\nfield = \"text\"\nmatches = 'figma\\.com/(file|design|proto)/'\n",
            data = toml_str(&dir.join("data")),
            agent = toml_str(&agent),
            repo = toml_str(&repo),
            reviewer = toml::Value::String(REVIEWER.into()),
        ),
    )?;
    say!("config: {}", config_path.display());

    let ctx = Context::open(Some(&config_path)).await?;
    let store = &ctx.store;
    let gid = TaskGid::parse("DEMO-1").map_err(anyhow::Error::msg)?;
    step("Queue two tasks; the analyzer skips one by a filter and has the agent triage the other");
    let design = TaskGid::parse("DEMO-2").map_err(anyhow::Error::msg)?;
    for (g, text) in [
        (&gid, "Add a feature file describing the feature"),
        (&design, "Redesign the settings page\n\nMockups: https://www.figma.com/design/demo/settings"),
    ] {
        // FAKE_ASK: the fake agent asks you a question before it writes code, as a real one may.
        let notes = (*g == gid).then(|| "It greets whoever opens it. FAKE_ASK".to_string());
        let task = NewTask {
            source: Some("demo".into()),
            description: Some(text.into()),
            notes,
            ..Default::default()
        };
        store.upsert_task(g, &task, Actor::Cli).await?;
    }
    triage(&ctx).await?;
    let triaged = store.task(&gid).await?;
    if triaged.status != QueueStatus::AwaitingGo {
        bail!("the demo's triage left {gid} {} ({:?})", triaged.status, triaged.analysis_error);
    }
    for c in &triaged.acceptance_criteria {
        say!("  acceptance criterion for the review: {c}");
    }
    step("You approve DEMO-1 (the human's go: `executor approve DEMO-1`)");
    store.set_task_status(&gid, QueueStatus::Approved, Actor::Cli, Some("demo: approved")).await?;

    step(
        "Run the runner a pass at a time (`runner --once`), until the run is complete; you approve its plan and answer its question",
    );
    let mut narrator = narrate::Narrator::default();
    let mut commented = false;
    let mut finished = None;
    for _ in 0..30 {
        // One runner pass — up to the first wait on the world (CI running), so that you can comment
        // while the pull request is open — told as it happens.
        let mut runner = Runner::new(ctx.config.clone(), store.clone())?;
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let mut pass = tokio::spawn(async move { runner.run_once(shutdown).await });
        let report = loop {
            tokio::select! {
                done = &mut pass => break done??,
                _ = tokio::time::sleep(Duration::from_millis(250)) => narrator.catch_up(store, &gid).await?,
            }
        };
        narrator.catch_up(store, &gid).await?;
        if report.errors > 0 {
            say!("  the runner met errors: {}", report.failures.join("; "));
        }
        let run_id = store.task(&gid).await?.executor_run_id.context("the runner created no run")?;
        let run = store.run(run_id).await?;
        if matches!(run.state, RunState::Complete | RunState::Abandoned) {
            finished = Some(run);
            break;
        }
        if answer_for_the_agent(store, run.id).await? {
            continue;
        }
        if run.state == RunState::Pr && !commented {
            let pr = store.local_pr_for_run(run.id).await?.context("a run in pr has a pull request")?;
            let body = "Please note in the repository what you changed.";
            say!("  (you review {} and comment)", crate::forge::local::pr_url("demo", pr.id));
            store
                .add_local_comment(pr.id, &NewComment { author: REVIEWER, body, ..Default::default() })
                .await?;
            commented = true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let run = finished.context("the demo's run did not finish in 30 runner passes")?;

    step("Summary");
    let sessions = store.worker_sessions(run.id).await?;
    let pr = store.local_pr_for_run(run.id).await?;
    say!("  {:<8} {:<10} WHAT BECAME OF IT", "TASK", "STATUS");
    say!("  {:<8} {:<10} skipped by the filter figma_link, no model call", design.as_str(), "skip");
    say!(
        "  {:<8} {:<10} run #{} {} — {} workers ({}), pull request {}",
        gid.as_str(),
        store.task(&gid).await?.status.as_str(),
        run.id,
        run.state,
        sessions.len(),
        sessions.iter().map(|w| w.kind.as_str()).collect::<Vec<_>>().join(", "),
        pr.map(|p| crate::forge::local::pr_url("demo", p.id)).unwrap_or_default()
    );
    let config_arg = config_path.display().to_string();
    ctx.store.close().await;
    if keep {
        say!(
            "
Look further (the demo's directory is kept):"
        );
        say!("  executor --config {config_arg} runs show {}     # the PR, CI, comments, notices", run.id);
        say!("  executor --config {config_arg} events DEMO-1   # the audit trail");
        say!("  executor --config {config_arg} logs DEMO-1     # the newest work log");
    } else {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
        say!(
            "
The demo's directory was removed. To keep it and look further (`runs show`, `events`,"
        );
        say!("`logs`), run `executor demo --dir ./executor-demo`.");
    }
    Ok(())
}
