//! `executor runner` and `executor comment`.

use anyhow::{Context as _, bail};
use clap::Args;

use super::Context;
use super::output::json;
use crate::forge::ACK_PREFIX;
use crate::instance_lock::{InstanceLock, LockError};
use crate::runner::{Runner, shutdown_on_signals};
use crate::store::NewComment;

#[derive(Debug, Args)]
pub struct RunnerArgs {
    /// A single tick, then supervise the workers it started until they end, then exit.
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
    /// Who is commenting (default: $USER). Only comments by `repos.NAME.trusted_authors` make a worker
    /// act.
    #[arg(long)]
    author: Option<String>,
    /// Posted by an agent: never makes a worker act. Workers answer comments this way.
    #[arg(long)]
    as_agent: bool,
    /// The id of the comment this one answers; `[ACKNOWLEDGED: …]` replies resolve it.
    #[arg(long, value_name = "COMMENT_ID")]
    reply_to: Option<i64>,
    /// The file the comment is about.
    #[arg(long)]
    path: Option<String>,
    #[arg(long)]
    line: Option<i64>,
}

/// Adds a comment to a run's pull request on the local forge.
pub async fn comment(ctx: &Context, args: CommentArgs, as_json: bool) -> anyhow::Result<()> {
    let run = ctx.store.run(args.run_id).await?;
    let pr = ctx
        .store
        .local_pr_for_run(run.id)
        .await?
        .with_context(|| format!("run {} has no pull request on the local forge yet", run.id))?;
    if args.text.trim().is_empty() {
        bail!(super::UsageError("the comment text is empty".into()));
    }
    if let Some(parent) = args.reply_to {
        let comments = ctx.store.local_comments(pr.id).await?;
        if !comments.iter().any(|c| c.id == parent) {
            bail!("comment {parent} is not on run {}'s pull request", run.id);
        }
    }
    let author = match (&args.author, args.as_agent) {
        (Some(a), _) => a.clone(),
        (None, true) => "agent".into(),
        (None, false) => {
            std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "human".into())
        }
    };
    let id = ctx
        .store
        .add_local_comment(
            pr.id,
            &NewComment {
                author: &author,
                body: &args.text,
                path: args.path.as_deref(),
                line: args.line,
                in_reply_to: args.reply_to,
                by_agent: args.as_agent,
            },
        )
        .await?;
    if as_json {
        return json(&serde_json::json!({ "id": id, "run_id": run.id, "pr": pr.id, "author": author }));
    }
    let ack = if args.text.starts_with(ACK_PREFIX) { " (acknowledges it)" } else { "" };
    match args.reply_to {
        Some(p) => println!("comment {id} on run {}'s pull request, replying to {p}{ack}", run.id),
        None => println!("comment {id} on run {}'s pull request", run.id),
    }
    Ok(())
}
