//! `executor queue`: taking tasks in (streamed, for inputs of any size), listing and showing them, and
//! the human's moves on them (approve, skip, retry, requeue).

use std::io::IsTerminal;

use anyhow::bail;
use chrono::{DateTime, Utc};
use clap::Subcommand;

use super::Context;
use super::output::{JsonArray, ago, json, opt, short, table};
use super::parse::parse_gid;
use crate::domain::{QueueStatus, TaskGid};
use crate::store::{TaskFilter, TaskSort, now};

mod add;
mod show;

pub use add::AddArgs;

/// What `queue list` shows on a terminal without `--limit` (a longer table is scrolled past, not read).
const TERMINAL_LIMIT: i64 = 200;

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// Add a task, or update the description/notes/source of one already queued (its status and history
    /// are kept). Without --gid, reads JSON (one object, an array, or JSON Lines) from --from-json or
    /// standard input; all or nothing.
    Add(AddArgs),
    /// List tasks, most urgent first (or as --sort says).
    List {
        /// Only tasks in this status: pending, for_review, awaiting_go, approved, skip or done.
        #[arg(long, value_parser = parse_status)]
        status: Option<QueueStatus>,
        /// Only tasks from this source (its name in [[sources]], or what `queue add --source` gave).
        #[arg(long)]
        source: Option<String>,
        /// Only tasks for this repository (the task's `repo`).
        #[arg(long)]
        repo: Option<String>,
        /// Only tasks whose description or notes hold every word of this, each as a word or the start
        /// of one, ignoring case (the dashboard's search).
        #[arg(long, value_name = "WORDS")]
        search: Option<String>,
        /// Only tasks of priority at least this (1 is the most urgent; a task with none never matches).
        #[arg(long, value_name = "N")]
        priority_min: Option<i64>,
        /// Only tasks of priority at most this.
        #[arg(long, value_name = "N")]
        priority_max: Option<i64>,
        /// Only tasks added within this age: 12h, 7d, 30d (the dashboard's "added within").
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        added_within: Option<DateTime<Utc>>,
        /// Only tasks added longer ago than this age: 12h, 7d, 30d.
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        older_than: Option<DateTime<Utc>>,
        /// Sort by priority (the default), gid, source, status, complexity, feasibility, added or
        /// updated; then by id.
        #[arg(long, value_parser = TaskSort::parse, default_value = "priority")]
        sort: TaskSort,
        /// Reverse the sort.
        #[arg(long)]
        desc: bool,
        /// Show at most this many (default: all, except 200 when writing a table to a terminal).
        #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
        limit: Option<i64>,
        /// Skip this many first (with --limit, to page through a long queue).
        #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
        offset: Option<i64>,
    },
    /// Every field of a task, its analysis, its run and its full history.
    Show {
        /// The task's gid (`executor queue list` shows them).
        #[arg(value_name = "GID")]
        gid: String,
    },
    /// Give an approved task whose run was abandoned a new run (the runner creates it, on a new branch).
    Retry {
        /// The task's gid.
        #[arg(value_name = "GID")]
        gid: String,
        /// Why, for the history.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Send a skipped task back to pending, for the analyzer to look at again (after every new task);
    /// a pending task whose analysis failed is tried afresh. `executor reanalyze` does this in bulk.
    Requeue {
        /// The task's gid.
        #[arg(value_name = "GID")]
        gid: String,
        /// Why, for the history.
        #[arg(long)]
        reason: Option<String>,
    },
}

fn parse_status(s: &str) -> Result<QueueStatus, String> {
    s.parse().map_err(|e: crate::domain::UnknownName| e.to_string())
}

/// An age (`12h`, `7d`) as the moment that long ago, read as the dashboard reads it.
fn parse_age(s: &str) -> Result<DateTime<Utc>, String> {
    crate::store::age_cutoff(s, now())
}

pub async fn run(ctx: &Context, command: QueueCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        QueueCommand::Add(args) => add::add(ctx, args, as_json).await,
        QueueCommand::List {
            status,
            source,
            repo,
            search,
            priority_min,
            priority_max,
            added_within,
            older_than,
            sort,
            desc,
            limit,
            offset,
        } => {
            if let (Some(min), Some(max)) = (priority_min, priority_max)
                && min > max
            {
                bail!(super::UsageError(format!(
                    "--priority-min {min} is above --priority-max {max}: nothing could match"
                )));
            }
            let filter = TaskFilter {
                status,
                source,
                repo,
                priority_min,
                priority_max,
                added_since: added_within,
                added_before: older_than,
                text: search,
                sort,
                descending: desc,
                limit,
                offset,
            };
            list(ctx, filter, as_json).await
        }
        QueueCommand::Show { gid } => show::show(ctx, &parse_gid(&gid)?, as_json).await,
        QueueCommand::Retry { gid, reason } => {
            let gid = parse_gid(&gid)?;
            let reason = reason.unwrap_or_else(|| crate::store::RETRY_REASON.into());
            let task = ctx.store.retry_task(&gid, ctx.by(), &reason).await?;
            if as_json {
                return json(&task);
            }
            say!("{gid}: the runner will start a new run on its next tick");
            Ok(())
        }
        QueueCommand::Requeue { gid, reason } => {
            let gid = parse_gid(&gid)?;
            let reason = reason.unwrap_or_else(|| crate::store::REQUEUE_REASON.into());
            // The same move as `executor reanalyze`: one analysis round up, the skip rule cleared.
            let crate::store::Requeued { task, from } =
                ctx.store.requeue_task(&gid, ctx.by(), &reason).await?;
            if as_json {
                return json(&task);
            }
            if from == QueueStatus::Skip {
                say!("{gid}: skip → pending (analysis round {})", task.analysis_round);
            } else {
                say!("{gid}: its given-up analysis starts afresh (analysis round {})", task.analysis_round);
            }
            Ok(())
        }
    }
}

async fn list(ctx: &Context, mut filter: TaskFilter, as_json: bool) -> anyhow::Result<()> {
    if as_json {
        let mut out = std::io::BufWriter::new(std::io::stdout());
        let mut array = JsonArray::new(&mut out);
        ctx.store.for_each_task(&filter, |t| array.push(&t)).await?;
        return array.finish();
    }
    let terminal = std::io::stdout().is_terminal();
    if terminal && filter.limit.is_none() {
        filter.limit = Some(TERMINAL_LIMIT);
    }
    let now = now();
    let mut rows: Vec<Vec<String>> = Vec::new();
    ctx.store
        .for_each_task(&filter, |t| {
            rows.push(vec![
                t.task_gid.to_string(),
                // A pending revision needs a human's eye: say so where tasks are scanned.
                match (&t.revision_at, &t.skip_rule) {
                    (Some(_), _) => format!("{} (revised)", t.status),
                    // Which filter skipped it, so a wrong rule is seen while scanning.
                    (None, Some(rule)) if t.status == QueueStatus::Skip => {
                        format!("skip ({})", short(rule, 24))
                    }
                    _ => t.status.to_string(),
                },
                opt(&t.priority),
                opt(&t.source),
                opt(&t.executor_run_id),
                ago(t.updated_at, now),
                short(t.description.as_deref().unwrap_or(""), 60),
            ]);
            Ok::<_, anyhow::Error>(())
        })
        .await?;
    if rows.is_empty() && filter.offset.unwrap_or(0) == 0 {
        say!(
            "no tasks{}",
            if filter.narrows() { " match" } else { " yet: add one with `executor queue add`" }
        );
        return Ok(());
    }
    table(&["GID", "STATUS", "PRIO", "SOURCE", "RUN", "UPDATED", "DESCRIPTION"], &rows);
    if terminal {
        let listed = filter.offset.unwrap_or(0) + rows.len() as i64;
        let more = ctx.store.count_tasks(&filter).await? - listed;
        if more > 0 {
            say!("… {more} more; use --limit N and --offset {listed} to see them");
        }
    }
    Ok(())
}

pub async fn approve(ctx: &Context, gids: &[String], skip_triage: bool, as_json: bool) -> anyhow::Result<()> {
    let gids: Vec<TaskGid> = gids.iter().map(|g| parse_gid(g)).collect::<anyhow::Result<_>>()?;
    let mut failed = 0;
    let mut results = Vec::new();
    for gid in &gids {
        match ctx.store.approve_task(gid, skip_triage, ctx.by()).await {
            Ok(done) => {
                if !as_json {
                    if done.revision_approved {
                        say!("approved the revision of {gid}: it is now the text agents are told");
                    } else {
                        say!("approved {gid}");
                    }
                }
                results.push(done.result_json());
            }
            Err(e) => {
                failed += 1;
                say_err!("error: {gid}: {e:#}");
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

pub async fn skip(ctx: &Context, gid: &str, reason: &str, as_json: bool) -> anyhow::Result<()> {
    let gid = parse_gid(gid)?;
    // The tracker's message first (when its source asks): recorded before the skip it tells of.
    let config = std::sync::Arc::new(ctx.config.clone());
    let outbox = crate::writeback::Outbox::new(config, ctx.store.clone(), None);
    outbox.record_human_skip(&ctx.store.task(&gid).await?, reason).await?;
    let task = ctx.store.set_task_status(&gid, QueueStatus::Skip, ctx.by(), Some(reason)).await?;
    if as_json {
        return json(&task);
    }
    say!("skipped {gid}: {reason}");
    Ok(())
}
