//! `executor runner` and `executor comment`.

use anyhow::bail;
use clap::Args;

use super::Context;
use super::output::json;
use crate::forge::ACK_PREFIX;
use crate::forge::{CommentPost, Forge};
use crate::instance_lock::{InstanceLock, LockError};
use crate::runner::forge_for;
use crate::runner::{Runner, shutdown_on_signals};

#[derive(Debug, Args)]
pub struct RunnerArgs {
    /// Carry every run as far as it goes without waiting on the world, then exit: tick, wait for the
    /// workers that tick started, tick again while ticks act; stop at the first tick that would only wait
    /// (CI running, a back-off, a human). Without it the runner also waits, until nothing is left to do.
    #[arg(long)]
    once: bool,
}

/// Runs until idle. A second runner on the same data directory exits 0 at once.
pub async fn runner(ctx: Context, args: RunnerArgs, as_json: bool) -> anyhow::Result<()> {
    let _lock = match InstanceLock::acquire(&ctx.config.data_dir(), "runner") {
        Ok(lock) => lock,
        Err(e @ LockError::Held { .. }) => {
            println!("{e}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    if ctx.config.repos.is_empty() {
        eprintln!("note: no [repos.NAME] in the config: runs cannot get a worktree until one is added");
    }
    let shutdown = shutdown_on_signals();
    let mut runner = Runner::new(ctx.config.clone(), ctx.store.clone())?;
    let report =
        if args.once { runner.run_once(shutdown).await? } else { runner.run_until_idle(shutdown).await? };
    if as_json {
        json(&report)?;
    } else {
        println!(
            "runner idle: {} runs created, {} steps taken, {} errors over {} active runs",
            report.runs_created, report.actions, report.errors, report.runs_seen
        );
    }
    if report.errors > 0 {
        // Cron reads the exit status: a runner that met errors says so, and what they were.
        bail!("the runner met {} error(s):\n  {}", report.errors, report.failures.join("\n  "));
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct CommentArgs {
    /// The run whose pull request gets the comment.
    run_id: i64,
    /// The comment text.
    text: String,
    /// Local forge: who is commenting (default: $USER). Only comments by `repos.NAME.trusted_authors`
    /// make a worker act. On GitHub the comment is posted as the token's owner.
    #[arg(long)]
    author: Option<String>,
    /// Posted by an agent: recorded as such, so it never makes a worker act (on GitHub the agent and
    /// the human may share an account: executor goes by the ids it recorded). Workers answer this way.
    #[arg(long)]
    as_agent: bool,
    /// The id of the comment this one answers; a reply starting with `[ACKNOWLEDGED: …]` resolves it.
    /// On GitHub a reply to a review comment goes into its thread.
    #[arg(long, value_name = "COMMENT_ID")]
    reply_to: Option<String>,
    /// Local forge: the file the comment is about.
    #[arg(long)]
    path: Option<String>,
    /// Local forge: the line of --path the comment is about.
    #[arg(long, requires = "path")]
    line: Option<i64>,
}

/// Adds a comment to a run's pull request, on the run's forge.
pub async fn comment(ctx: &Context, args: CommentArgs, as_json: bool) -> anyhow::Result<()> {
    let run = ctx.store.run(args.run_id).await?;
    if args.text.trim().is_empty() {
        bail!(super::UsageError("the comment text is empty".into()));
    }
    // `github.reserve_points` keeps GraphQL points for the agents' own use; a reply an agent posts
    // through executor is that use, so it may draw on the reserve.
    let mut config = ctx.config.clone();
    config.github.reserve_points = 0;
    let (name, repo) = config.repo_for(run.repo.as_deref(), &format!("run {}", run.id))?;
    let forge = forge_for(&config, &ctx.store, name, repo)?;
    if run.pr_number.is_none() && !matches!(forge, Forge::Local(_)) {
        bail!("run {} has no pull request yet; nothing to comment on", run.id);
    }
    let author = match (&args.author, args.as_agent) {
        (Some(a), _) => a.clone(),
        (None, true) => "agent".into(),
        (None, false) => {
            std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "human".into())
        }
    };
    // An agent's reply may echo what it saw (a token in a log): the config's secrets never go out.
    let body = crate::redact::Redactor::from_config(&ctx.config).redact(&args.text);
    let post = CommentPost {
        body: &body,
        reply_to: args.reply_to.as_deref(),
        author: &author,
        by_agent: args.as_agent,
        path: args.path.as_deref(),
        line: args.line,
    };
    let id = forge.comment(&run, &post).await?;
    if as_json {
        return json(&serde_json::json!({
            "id": id, "run_id": run.id, "forge": forge.name(), "author": author, "reply_to": args.reply_to,
        }));
    }
    let ack = if args.text.starts_with(ACK_PREFIX) { " (acknowledges it)" } else { "" };
    match &args.reply_to {
        Some(p) => println!("comment {id} on run {}'s pull request, replying to {p}{ack}", run.id),
        None => println!("comment {id} on run {}'s pull request", run.id),
    }
    Ok(())
}
