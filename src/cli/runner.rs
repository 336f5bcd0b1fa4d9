//! `executor runner` and `executor comment`.

use anyhow::bail;
use clap::Args;

use super::Context;
use super::output::json;
use crate::forge::ACK_PREFIX;
use crate::forge::{AGENT_AUTHOR, CommentPost, Delivery, Forge, ForgeError, deliver_reply};
use crate::instance_lock::{InstanceLock, LockError};
use crate::runner::forge_for;
use crate::runner::{Runner, shutdown_on_signals};
use crate::store::{AgentReply, Answer};
use crate::worker::replies::{self, Reply};

#[derive(Debug, Args)]
pub struct RunnerArgs {
    /// Carry every run as far as it goes without waiting on the world, then exit: tick, wait for the
    /// workers that tick started, tick again while ticks act; stop at the first tick that would only wait
    /// (CI running, a back-off, a human). Without it the runner also waits, until nothing is left to do:
    /// its workers, and CI its host started (up to runner.check_timeout).
    #[arg(long)]
    once: bool,
}

/// Runs until idle. A second runner on the same data directory exits 0 at once.
pub async fn runner(ctx: Context, args: RunnerArgs, as_json: bool) -> anyhow::Result<()> {
    let _lock = match InstanceLock::acquire(&ctx.config.data_dir(), "runner") {
        Ok(lock) => lock,
        Err(e @ LockError::Held { .. }) => {
            say!("{e}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    if ctx.config.repos.is_empty() {
        say_err!("note: no [repos.NAME] in the config: runs cannot get a worktree until one is added");
    }
    let shutdown = shutdown_on_signals();
    let mut runner = Runner::new(ctx.config.clone(), ctx.store.clone())?;
    let report =
        if args.once { runner.run_once(shutdown).await? } else { runner.run_until_idle(shutdown).await? };
    if as_json {
        json(&report)?;
    } else {
        say!(
            "runner idle: {} runs created, {} steps taken, {} errors over {} active runs",
            report.runs_created,
            report.actions,
            report.errors,
            report.runs_seen
        );
    }
    if !report.throttled.is_empty() {
        // Not an error: cron's next start after the limit resets goes on, and a cron that mails on a
        // failing exit must not mail every time GitHub says "later".
        say_err!("waited on GitHub's rate limit (not an error):\n  {}", report.throttled.join("\n  "));
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
        bail!("run {} has no {} yet; nothing to comment on", run.id, repo.words().noun);
    }
    let author = match (&args.author, args.as_agent) {
        (Some(a), _) => a.clone(),
        (None, true) => AGENT_AUTHOR.into(),
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
    // The run's live worker answering a comment its prompt listed: the same outbox as the replies in
    // its final answer, so each comment gets one reply whichever way it came.
    if let (true, Some(parent)) = (args.as_agent, args.reply_to.as_deref())
        && let Some(offer) = ctx.store.live_offer(run.id, parent).await?
    {
        return reply_through_outbox(ctx, &forge, &run, offer, &body, as_json).await;
    }
    let id = forge.comment(&run, &post).await?;
    if as_json {
        return json(&serde_json::json!({
            "id": id, "run_id": run.id, "forge": forge.name(), "author": author, "reply_to": args.reply_to,
        }));
    }
    let ack = if args.text.starts_with(ACK_PREFIX) { " (acknowledges it)" } else { "" };
    let noun = repo.words().noun;
    match &args.reply_to {
        Some(p) => say!("comment {id} on run {}'s {noun}, replying to {p}{ack}", run.id),
        None => say!("comment {id} on run {}'s {noun}", run.id),
    }
    Ok(())
}

/// Records a live worker's reply to an offered comment, then posts it. A reply already recorded for that
/// comment is not posted again; one that cannot be posted now (no network in the agent's sandbox, say)
/// stays recorded, and the runner posts it after the worker ends.
async fn reply_through_outbox(
    ctx: &Context,
    forge: &Forge,
    run: &crate::domain::Run,
    offer: AgentReply,
    body: &str,
    as_json: bool,
) -> anyhow::Result<()> {
    let parent = offer.comment_id.clone();
    let reply = Reply { to: parent.clone(), body: body.to_string() };
    if let Err(why) = replies::check(&reply, std::slice::from_ref(&parent)) {
        bail!(super::UsageError(why.to_string()));
    }
    let answer = ctx.store.answer_comment(offer.session_id, &parent, body).await?;
    let say = |id: Option<&str>, what: String| {
        if as_json {
            json(&serde_json::json!({
                "id": id, "run_id": run.id, "forge": forge.name(), "author": AGENT_AUTHOR, "reply_to": parent,
            }))
        } else {
            say!("{what}");
            Ok(())
        }
    };
    if answer == Answer::AlreadyAnswered {
        return say(None, format!("comment {parent} already has this worker's reply: not posted again"));
    }
    let Some(offer) = ctx.store.live_offer(run.id, &parent).await? else {
        return say(None, format!("the reply to {parent} is recorded; the runner posts it"));
    };
    let pr = forge.snapshot_for_agent(run).await?;
    let posted = match &pr {
        Some(pr) => deliver_reply(forge, &ctx.store, run, pr, &offer).await,
        None => Err(ForgeError::NoPr(run.id)),
    };
    match posted {
        Ok(Delivery::Posted(id)) => {
            let noun = ctx.config.words_for(run.repo.as_deref()).noun;
            say(Some(&id), format!("comment {id} on run {}'s {noun}, replying to {parent}", run.id))
        }
        Ok(Delivery::MayStillLand) => say(
            None,
            format!(
                "the reply to {parent} may still be landing from an earlier attempt; the runner looks for it"
            ),
        ),
        Err(e) => {
            // GitHub's rate limit is a wait: it uses up none of the attempts the runner makes after.
            let why = e.to_string();
            if e.is_rate_limit() {
                ctx.store.mark_reply_waiting(offer.id, &why).await?;
            } else {
                ctx.store.mark_reply_failed(offer.id, &why).await?;
            }
            say_err!("note: not posted yet ({why})");
            say(None, format!("the reply to {parent} is recorded; the runner posts it"))
        }
    }
}
