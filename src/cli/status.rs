use chrono::{DateTime, Utc};
use clap::Args;

use super::Context;
use super::output::{ago, json, print_events};
use crate::store::{EventFilter, PendingDetail, RunnerStatus, SourceCursor, now, start_of_day};

pub async fn status(ctx: &Context, as_json: bool) -> anyhow::Result<()> {
    let counts = ctx.store.status_counts().await?;
    let workers = ctx.store.live_worker_sessions().await?.len();
    let spent_today = ctx.store.spent_since(start_of_day(now())).await?;
    let budget = ctx.config.budget.per_day_usd;
    let runners = ctx.store.runner_statuses().await?;
    let undelivered = ctx.store.undelivered_notices().await?;
    let pending = ctx.store.pending_detail(ctx.config.analyzer.max_attempts).await?;
    let sources = ctx.store.source_cursors().await?;
    let writebacks = ctx.store.writeback_counts().await?;
    // Runs a cap stopped wait for a human whether or not a notice reached one: always shown here.
    let budget_stopped: Vec<_> = ctx
        .store
        .runs_board(10_000)
        .await?
        .into_iter()
        .filter(|r| r.budget_stopped && r.run.state.is_active())
        .collect();
    // Runs that wait on a person's word, as "Needs you" lists them.
    let plans_awaiting = ctx.store.plans_awaiting(10_000).await?;
    let open_questions = ctx.store.open_questions(10_000).await?;
    if as_json {
        let queue: serde_json::Map<_, _> =
            counts.queue.iter().map(|(k, v)| (k.clone(), (*v).into())).collect();
        let runs: serde_json::Map<_, _> = counts.runs.iter().map(|(k, v)| (k.clone(), (*v).into())).collect();
        return json(&serde_json::json!({
            "executor_queue": queue,
            "executor_runs": runs,
            "workers_alive": workers,
            "spent_today_usd": spent_today,
            "per_day_usd": budget,
            "runners": runners,
            "undelivered_notices": undelivered,
            "pending": pending,
            "sources": sources,
            "writebacks": writebacks.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(*v))).collect::<serde_json::Map<_, _>>(),
            "budget_stopped_runs": budget_stopped.iter().map(|r| serde_json::json!({
                "run": r.run.id,
                "task_gid": r.run.task_gid,
                "why": r.last_decision,
            })).collect::<Vec<_>>(),
            "plans_awaiting_approval": plans_awaiting.iter().map(|p| serde_json::json!({
                "run": p.run.id,
                "task_gid": p.run.task_gid,
                "revision": p.revision,
            })).collect::<Vec<_>>(),
            "open_questions": open_questions.iter().map(|q| serde_json::json!({
                "run": q.run.id,
                "task_gid": q.run.task_gid,
                "question": q.question_id,
            })).collect::<Vec<_>>(),
        }));
    }
    let line = |pairs: &[(String, i64)]| {
        if pairs.is_empty() {
            "empty".to_string()
        } else {
            pairs.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ")
        }
    };
    say!("executor_queue: {}", line(&counts.queue));
    if let Some(detail) = pending_line(&pending) {
        say!("  pending:      {detail}");
    }
    say!("executor_runs:  {}", line(&counts.runs));
    say!("workers alive:  {workers} (runner.max_workers = {})", ctx.config.runner.max_workers);
    say!(
        "spent today:    {} of {} (UTC day)",
        super::output::money(spent_today, false),
        super::output::money(budget, false)
    );
    let at = now();
    print_hosts(&runners, at);
    for c in &sources {
        say!("{}", source_line(c, at));
    }
    if !writebacks.is_empty() {
        // What the trackers were told: anything but delivered is worth a look (`executor writeback`).
        say!("write-back:     {} (executor writeback)", line(&writebacks));
    }
    if !budget_stopped.is_empty() {
        say!("stopped by a budget cap: {}", budget_stopped.len());
        for r in &budget_stopped {
            say!(
                "  run {} (task {}): {}",
                r.run.id,
                r.run.task_gid,
                r.last_decision.as_deref().unwrap_or("-")
            );
        }
    }
    if !plans_awaiting.is_empty() {
        say!("plans awaiting approval: {} (executor plan show RUN_ID)", plans_awaiting.len());
        for p in &plans_awaiting {
            say!("  run {} (task {}): revision {}", p.run.id, p.run.task_gid, p.revision);
        }
    }
    if !open_questions.is_empty() {
        say!("questions waiting for an answer: {} (executor answer RUN_ID \"…\")", open_questions.len());
        for q in &open_questions {
            say!("  run {} (task {}): {}", q.run.id, q.run.task_gid, super::output::short(&q.question, 100));
        }
    }
    if !undelivered.is_empty() {
        say!("notices not delivered: {}", undelivered.len());
        for n in &undelivered {
            let run = n.run_id.map(|r| format!("run {r} ")).unwrap_or_default();
            say!(
                "  {run}{} ({} attempts): {}",
                n.kind,
                n.attempts,
                n.last_error.as_deref().unwrap_or("not tried yet")
            );
        }
    }
    Ok(())
}

/// "3 claimable now, 1 analyzing, 2 backing off, 1 given up (…)": the parts that are not zero; `None`
/// when nothing is pending.
fn pending_line(p: &PendingDetail) -> Option<String> {
    let parts: Vec<String> = [
        (p.claimable, "claimable now"),
        (p.analyzing, "analyzing"),
        (p.backing_off, "backing off after a failed analysis"),
        (p.given_up, "given up (`executor reanalyze --failed` tries them again)"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// "source NAME: fetched 5m ago, changes since …; last error (2m ago): …".
fn source_line(c: &SourceCursor, now: DateTime<Utc>) -> String {
    let fetched = match c.fetched_at {
        Some(t) => format!("fetched {}", ago(t, now)),
        None => "never fetched".to_string(),
    };
    let cursor = c.cursor.map(|t| format!(", next fetch asks for changes since {}", t.to_rfc3339()));
    let error = match (&c.last_error, c.last_error_at) {
        (Some(e), Some(t)) => format!("; last fetch failed ({}): {e}", ago(t, now)),
        (Some(e), None) => format!("; last fetch failed: {e}"),
        _ => String::new(),
    };
    format!("source {}: {fetched}{}{error}", c.source, cursor.unwrap_or_default())
}

/// The "hosts:" section: for each host, whether a runner lives there, then each of its runners (every
/// live one and the last that ended), so a host whose runner died or keeps failing under cron is seen.
fn print_hosts(runners: &[RunnerStatus], now: DateTime<Utc>) {
    if runners.is_empty() {
        say!("hosts:          no runner has started yet");
        return;
    }
    say!("hosts:");
    // The store lists runners ordered by host.
    for group in runners.chunk_by(|a, b| a.host == b.host) {
        say!("  {}", host_line(group, now));
        for r in group {
            say!("    {}", runner_line(r, now));
        }
    }
}

/// "HOST: 2 live runners, 3 leases, 1 worker", or "HOST: no live runner; last one stopped at … (5m ago)".
fn host_line(group: &[RunnerStatus], now: DateTime<Utc>) -> String {
    let host = group.first().map_or("", |r| r.host.as_str());
    let alive: Vec<&RunnerStatus> = group.iter().filter(|r| r.alive).collect();
    if alive.is_empty() {
        let last = group.iter().max_by_key(|r| gone_at(r));
        return match last {
            Some(r) => format!(
                "{host}: no live runner; last one {} at {} ({})",
                r.state(),
                gone_at(r).format("%Y-%m-%d %H:%M:%S UTC"),
                ago(gone_at(r), now)
            ),
            None => format!("{host}: no live runner"),
        };
    }
    let leases: i64 = alive.iter().map(|r| r.leases).sum();
    let workers: i64 = alive.iter().map(|r| r.workers).sum();
    format!(
        "{host}: {}, {}, {}",
        count(alive.len() as i64, "live runner", "live runners"),
        count(leases, "lease", "leases"),
        count(workers, "worker", "workers")
    )
}

/// "ID (pid P, executor V): alive, heartbeat 12s ago, 1 lease, 0 of 2 workers, started 5m ago; 3 ticks,
/// 2 errors, last (1m ago): …": its errors as well, so a runner that fails on every start is seen.
fn runner_line(r: &RunnerStatus, now: DateTime<Utc>) -> String {
    let state = match r.ended_at {
        Some(t) => format!("{} {}", r.state(), ago(t, now)),
        None => r.state().to_string(),
    };
    let errors = match (&r.last_error, r.last_error_at) {
        (Some(e), Some(t)) if r.errors > 0 => format!("{} errors, last ({}): {e}", r.errors, ago(t, now)),
        // What it waited on without an error (GitHub's rate limit).
        (Some(e), Some(t)) => format!("no errors, waited ({}): {e}", ago(t, now)),
        _ => "no errors".to_string(),
    };
    format!(
        "{} (pid {}, executor {}): {state}, heartbeat {}, {}, {} of {} workers, started {}; {} ticks, {errors}",
        r.id,
        r.pid,
        r.version,
        ago(r.heartbeat_at, now),
        count(r.leases, "lease", "leases"),
        r.workers,
        r.max_workers,
        ago(r.started_at, now),
        r.ticks
    )
}

/// When a runner stopped being alive: when it ended, or when its last heartbeat lapsed.
fn gone_at(r: &RunnerStatus) -> DateTime<Utc> {
    r.ended_at.unwrap_or(r.alive_until)
}

fn count(n: i64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Only this task's events.
    #[arg(value_name = "GID")]
    gid: Option<String>,
    /// Only this run's events.
    #[arg(long, value_name = "RUN_ID")]
    run: Option<i64>,
    /// Only events newer than this: a time like 2026-11-29T08:00:00Z, or an age like 2h or 3d.
    #[arg(long, value_parser = parse_since)]
    since: Option<DateTime<Utc>>,
    /// Only the newest N.
    #[arg(long)]
    limit: Option<i64>,
}

fn parse_since(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    let age = humantime::parse_duration(s)
        .map_err(|_| format!("{s:?} is neither a time (2026-11-29T08:00:00Z) nor an age (90m, 2h, 3d)"))?;
    let age = chrono::Duration::from_std(age).map_err(|e| e.to_string())?;
    Ok(Utc::now() - age)
}

pub async fn events(ctx: &Context, args: EventsArgs, as_json: bool) -> anyhow::Result<()> {
    let task_gid = args.gid.as_deref().map(super::parse::parse_gid).transpose()?;
    let filter = EventFilter { task_gid, run_id: args.run, since: args.since, limit: args.limit };
    let events = ctx.store.events(&filter).await?;
    if as_json {
        return json(&events);
    }
    print_events(&events, now());
    Ok(())
}

pub fn migrate(ctx: &Context, as_json: bool) -> anyhow::Result<()> {
    let report = &ctx.migrated;
    if as_json {
        return json(report);
    }
    if report.applied.is_empty() {
        say!("database is up to date (schema version {})", report.to);
    } else {
        say!("migrated the database from schema version {} to {}", report.from, report.to);
    }
    Ok(())
}
