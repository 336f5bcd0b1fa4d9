use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};

use super::output::{ago, json, money, opt, short, table};
use super::{Context, UsageError};
use crate::config::Config;
use crate::domain::{Actor, QueueStatus, TaskGid};
use crate::store::{EventFilter, NewTask, RunFilter, StoreError, TaskFilter, Upserted, now};

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// Add a task, or update the description/notes/source of one already queued (its status and history
    /// are kept). Without --gid, reads JSON (one object or an array) from --from-json or standard input.
    Add(AddArgs),
    /// List tasks, most urgent first.
    List {
        #[arg(long, value_parser = parse_status)]
        status: Option<QueueStatus>,
        #[arg(long)]
        source: Option<String>,
        /// Show at most this many.
        #[arg(long)]
        limit: Option<i64>,
    },
    /// Every field of a task, its analysis, its run and its full history.
    Show {
        #[arg(value_name = "GID")]
        gid: String,
    },
    /// Give an approved task whose run was abandoned a new run (the runner creates it, on a new branch).
    Retry {
        #[arg(value_name = "GID")]
        gid: String,
        /// Why, for the history.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Send a skipped task back to pending, for the analyzer to look at again.
    Requeue {
        #[arg(value_name = "GID")]
        gid: String,
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The tracker's id: letters, digits, '.', '_', '-'; no leading '.'; at most 128 characters.
    #[arg(long)]
    gid: Option<String>,
    /// Where the task came from (e.g. my_tasks_inbox, user_reports).
    #[arg(long)]
    source: Option<String>,
    #[arg(long)]
    description: Option<String>,
    #[arg(long)]
    notes: Option<String>,
    /// The repository (a name under [repos] in the config).
    #[arg(long)]
    repo: Option<String>,
    /// 1 is the most urgent.
    #[arg(long)]
    priority: Option<i32>,
    /// A JSON file with one task object or an array of them ("-" for standard input). Keys: task_gid (or
    /// gid), source, description, notes, repo, priority.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["gid", "source", "description", "notes", "repo", "priority"])]
    from_json: Option<PathBuf>,
}

fn parse_status(s: &str) -> Result<QueueStatus, String> {
    s.parse().map_err(|e: crate::domain::UnknownName| e.to_string())
}

pub fn parse_gid(s: &str) -> anyhow::Result<TaskGid> {
    TaskGid::parse(s).map_err(|e| UsageError(e.to_string()).into())
}

pub async fn run(ctx: &Context, command: QueueCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        QueueCommand::Add(args) => add(ctx, args, as_json).await,
        QueueCommand::List { status, source, limit } => {
            list(ctx, TaskFilter { status, source, limit }, as_json).await
        }
        QueueCommand::Show { gid } => show(ctx, &parse_gid(&gid)?, as_json).await,
        QueueCommand::Retry { gid, reason } => {
            let gid = parse_gid(&gid)?;
            let reason = reason.unwrap_or_else(|| "retried by a human after its run was abandoned".into());
            let task = ctx.store.retry_task(&gid, Actor::Cli, &reason).await?;
            if as_json {
                return json(&task);
            }
            println!("{gid}: the runner will start a new run on its next tick");
            Ok(())
        }
        QueueCommand::Requeue { gid, reason } => {
            let gid = parse_gid(&gid)?;
            let reason = reason.unwrap_or_else(|| "requeued for re-analysis".into());
            let task =
                ctx.store.set_task_status(&gid, QueueStatus::Pending, Actor::Cli, Some(&reason)).await?;
            if as_json {
                return json(&task);
            }
            println!("{gid}: skip → pending");
            Ok(())
        }
    }
}

/// Refuses, before anything is written, a task that can never run: a gid that makes no valid branch
/// name, or a repository the config does not have. `which` names the task in the message.
fn check_runnable(config: &Config, which: &str, gid: &TaskGid, t: &NewTask) -> anyhow::Result<()> {
    let prefix = &config.workspace.branch_prefix;
    if let Err(e) = crate::workspace::check_gid_branch(prefix, gid) {
        bail!(UsageError(format!(
            "{which}: gid {gid} can never become a branch (workspace.branch_prefix {prefix:?}): {e}"
        )));
    }
    if let Some(repo) = &t.repo
        && !config.repos.contains_key(repo)
    {
        let known: Vec<&str> = config.repos.keys().map(String::as_str).collect();
        let known = if known.is_empty() {
            "none is configured yet: add a [repos.NAME] table to the config".to_string()
        } else {
            format!("the configured ones are {}", known.join(", "))
        };
        bail!(UsageError(format!("{which}: repo {repo:?} is not configured under [repos]; {known}")));
    }
    Ok(())
}

/// The tasks an `add` call describes, validated before anything is written.
fn tasks_to_add(config: &Config, args: AddArgs) -> anyhow::Result<Vec<(TaskGid, NewTask)>> {
    let from_json = |text: &str, origin: &str| -> anyhow::Result<Vec<NewTask>> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| UsageError(format!("{origin} is not valid JSON: {e}")))?;
        let items = match value {
            serde_json::Value::Array(items) => items,
            one => vec![one],
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                serde_json::from_value(v)
                    .map_err(|e| UsageError(format!("{origin}, task #{}: {e}", i + 1)).into())
            })
            .collect()
    };
    let tasks = match (args.gid, args.from_json) {
        (Some(gid), _) => vec![NewTask {
            task_gid: Some(parse_gid(&gid)?),
            source: args.source,
            description: args.description,
            notes: args.notes,
            repo: args.repo,
            priority: args.priority,
        }],
        (None, Some(path)) if path.as_os_str() != "-" => {
            let text =
                std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            from_json(&text, &path.display().to_string())?
        }
        (None, _) => {
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                bail!(UsageError(
                    "give --gid (and --description …), --from-json FILE, or JSON on standard input".into()
                ));
            }
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("reading standard input")?;
            from_json(&text, "standard input")?
        }
    };
    let several = tasks.len() > 1;
    let mut out = Vec::with_capacity(tasks.len());
    for (i, t) in tasks.into_iter().enumerate() {
        let Some(gid) = t.task_gid.clone() else {
            bail!(UsageError(format!("task #{} has no task_gid", i + 1)));
        };
        let which = if several { format!("task #{} (gid {gid})", i + 1) } else { format!("task {gid}") };
        check_runnable(config, &which, &gid, &t)?;
        out.push((gid, t));
    }
    Ok(out)
}

async fn add(ctx: &Context, args: AddArgs, as_json: bool) -> anyhow::Result<()> {
    let tasks = tasks_to_add(&ctx.config, args)?;
    // All or nothing: one refused or failed task leaves the queue as it was.
    let done = ctx.store.upsert_tasks(&tasks, Actor::Cli).await.map_err(|e| match e {
        StoreError::Refused(why) => UsageError(why).into(),
        other => anyhow::Error::from(other),
    })?;
    let mut results = Vec::new();
    for (task, what) in done {
        let gid = &task.task_gid;
        if !as_json {
            match what {
                Upserted::Added => println!("added {gid} (pending)"),
                Upserted::Updated => println!("updated {gid} (status {} kept)", task.status),
                Upserted::Unchanged => {
                    println!("unchanged {gid} (already queued with the same fields)")
                }
                Upserted::Revised if task.revision_at.is_some() => println!(
                    "revision received for {gid}: it is {}, so the approved text is kept and agents are told \
                     only that; compare with `executor queue show {gid}`, accept it with `executor approve {gid}`",
                    task.status
                ),
                Upserted::Revised => {
                    println!("revision withdrawn for {gid}: the text sent is the approved one again")
                }
            }
        }
        results.push(serde_json::json!({ "result": what, "task": task }));
    }
    if as_json { json(&results) } else { Ok(()) }
}

async fn list(ctx: &Context, filter: TaskFilter, as_json: bool) -> anyhow::Result<()> {
    let tasks = ctx.store.list_tasks(&filter).await?;
    if as_json {
        return json(&tasks);
    }
    if tasks.is_empty() {
        println!(
            "no tasks{}",
            if filter.status.is_some() || filter.source.is_some() {
                " match"
            } else {
                " yet: add one with `executor queue add`"
            }
        );
        return Ok(());
    }
    let now = now();
    let rows: Vec<Vec<String>> = tasks
        .iter()
        .map(|t| {
            vec![
                t.task_gid.to_string(),
                // A pending revision needs a human's eye: say so where tasks are scanned.
                if t.revision_at.is_some() {
                    format!("{} (revised)", t.status)
                } else {
                    t.status.to_string()
                },
                opt(&t.priority),
                opt(&t.source),
                opt(&t.executor_run_id),
                ago(t.updated_at, now),
                short(t.description.as_deref().unwrap_or(""), 60),
            ]
        })
        .collect();
    table(&["GID", "STATUS", "PRIO", "SOURCE", "RUN", "UPDATED", "DESCRIPTION"], &rows);
    Ok(())
}

async fn show(ctx: &Context, gid: &TaskGid, as_json: bool) -> anyhow::Result<()> {
    let task = ctx.store.task(gid).await?;
    let runs = ctx.store.list_runs(&RunFilter { task_gid: Some(gid.clone()), ..Default::default() }).await?;
    let events = ctx.store.events(&EventFilter { task_gid: Some(gid.clone()), ..Default::default() }).await?;
    if as_json {
        return json(&serde_json::json!({ "task": task, "runs": runs, "events": events }));
    }
    let now = now();
    let field = |name: &str, value: String| println!("{:<18}{value}", format!("{name}:"));
    field("gid", task.task_gid.to_string());
    field("status", task.status.to_string());
    field("source", opt(&task.source));
    field("repo", opt(&task.repo));
    field("added", format!("{} ({})", task.added_at.to_rfc3339(), ago(task.added_at, now)));
    field("updated", format!("{} ({})", task.updated_at.to_rfc3339(), ago(task.updated_at, now)));
    field("priority", opt(&task.priority));
    field("complexity", opt(&task.complexity));
    field("feasibility", opt(&task.feasibility));
    println!("\ndescription:\n{}", indent(task.description.as_deref().unwrap_or("-")));
    println!("\nnotes:\n{}", indent(task.notes.as_deref().unwrap_or("-")));
    if let Some(at) = task.revision_at {
        println!(
            "\nrevision received {} ({}), NOT approved — agents are told the text above; \
             `executor approve {gid}` makes this the text:",
            at.to_rfc3339(),
            ago(at, now)
        );
        let unchanged = "- (unchanged)";
        println!(
            "  description:\n{}",
            indent(&indent(task.revision_description.as_deref().unwrap_or(unchanged)))
        );
        println!("  notes:\n{}", indent(&indent(task.revision_notes.as_deref().unwrap_or(unchanged))));
    }
    println!("\nanalysis:\n{}", indent(task.analysis_summary.as_deref().unwrap_or("- (not analyzed yet)")));
    println!("\nruns:");
    if runs.is_empty() {
        println!("  none");
    }
    for r in &runs {
        println!(
            "  #{} {} branch {} pr {} cost {} started {}",
            r.id,
            r.state,
            opt(&r.branch_name),
            opt(&r.pr_url),
            money(r.cost_usd, r.cost_estimated),
            ago(r.started_at, now)
        );
    }
    println!("\nhistory:");
    super::status::print_events(&events, now);
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

pub async fn approve(ctx: &Context, gids: &[String], skip_triage: bool, as_json: bool) -> anyhow::Result<()> {
    let gids: Vec<TaskGid> = gids.iter().map(|g| parse_gid(g)).collect::<anyhow::Result<_>>()?;
    let mut failed = 0;
    let mut results = Vec::new();
    for gid in &gids {
        match approve_one(ctx, gid, skip_triage).await {
            Ok((task, revised)) => {
                if !as_json {
                    if revised {
                        println!("approved the revision of {gid}: it is now the text agents are told");
                    } else {
                        println!("approved {gid}");
                    }
                }
                results.push(
                    serde_json::json!({ "gid": gid, "ok": true, "revision_approved": revised, "task": task }),
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!("error: {gid}: {e:#}");
                results.push(serde_json::json!({ "gid": gid, "ok": false, "error": e.to_string() }));
            }
        }
    }
    if as_json {
        json(&results)?;
    }
    if failed > 0 {
        bail!("{failed} of {} tasks were not approved", gids.len());
    }
    Ok(())
}

/// Approves a task, or the pending revision of an approved one (then `true`).
async fn approve_one(
    ctx: &Context,
    gid: &TaskGid,
    skip_triage: bool,
) -> anyhow::Result<(crate::domain::Task, bool)> {
    let task = ctx.store.task(gid).await?;
    if task.status == QueueStatus::Approved && task.revision_at.is_some() {
        return Ok((ctx.store.accept_task_revision(gid, Actor::Cli).await?, true));
    }
    let status = task.status;
    if status == QueueStatus::Done {
        bail!(
            "it is done; if its completed pull request was closed unmerged (the run is then abandoned), `executor queue retry {gid}` works it again"
        );
    }
    if status == QueueStatus::Pending {
        if !skip_triage {
            bail!(
                "it is still pending: the analyzer triages it first, or approve it anyway with --skip-triage"
            );
        }
        ctx.store
            .set_task_status(gid, QueueStatus::AwaitingGo, Actor::Cli, Some("triage skipped by a human"))
            .await?;
    }
    let task = ctx
        .store
        .set_task_status(gid, QueueStatus::Approved, Actor::Cli, Some("approved by a human"))
        .await?;
    Ok((task, false))
}

pub async fn skip(ctx: &Context, gid: &str, reason: &str, as_json: bool) -> anyhow::Result<()> {
    let gid = parse_gid(gid)?;
    let task = ctx.store.set_task_status(&gid, QueueStatus::Skip, Actor::Cli, Some(reason)).await?;
    if as_json {
        return json(&task);
    }
    println!("skipped {gid}: {reason}");
    Ok(())
}
