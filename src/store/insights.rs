//! The dashboard's insights: what came in and went out, what it cost, how long it took and how workers
//! ended, over a window of days. Each figure is one aggregate statement, read-only, bounded by the window
//! through an index (migration 14), whatever the size of the queue. Tasks in and out per day are
//! counted day by day instead (`day_flows.rs`), as grouping the intake by day was the slow part.
//!
//! Days are UTC calendar days. The main dialect difference is how a timestamp becomes its day: SQLite
//! stores RFC 3339 text written by executor in UTC, whose first ten characters are the day; PostgreSQL
//! takes the date of a `timestamptz` at UTC.

use chrono::{DateTime, NaiveDate, Utc};

use super::row::Cols;
use super::{Pool, Result, Store, StoreError, on_pool};

/// Tasks in and out on one day, counted from the events table.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DayFlow {
    pub day: NaiveDate,
    /// Tasks added by intake, the CLI or the API.
    pub intake: i64,
    /// Tasks moved to `skip` (filters, triage, a human).
    pub skipped: i64,
    /// Tasks moved to `approved`.
    pub approved: i64,
    /// Runs that reached `complete` (each run once a day, however often it came back to `pr`).
    pub completed: i64,
    /// Runs that were abandoned.
    pub abandoned: i64,
}

/// Dollars spent on one day, by worker sessions and by triage, counted on the day each session started.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DayCost {
    pub day: NaiveDate,
    pub workers_usd: f64,
    pub triage_usd: f64,
}

/// A run that reached a pull request or completion in the window, with the times its lead time is
/// measured between. Runs without a recorded approval before they were created (imported ones) are left
/// out: there is nothing to measure from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunLead {
    pub run_id: i64,
    /// The task's last approval at or before the run was created.
    pub approved_at: DateTime<Utc>,
    /// The run's first move to `pr`, ever (a run can come back to `pr` later).
    pub pr_at: Option<DateTime<Utc>>,
    /// When the run completed, if it is complete now.
    pub completed_at: Option<DateTime<Utc>>,
}

/// A run that landed (its pull request merged) or was given up in the window: what it cost and took.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunOutcome {
    pub run_id: i64,
    pub repo: Option<String>,
    /// The agent of its last `queued`/`in_progress` worker: the one whose code the pull request holds.
    pub agent: Option<String>,
    /// When its pull request was first seen merged (`None`: abandoned in the window).
    pub merged_at: Option<DateTime<Utc>>,
    /// The task's last approval at or before the run was created (`None` for an imported run).
    pub approved_at: Option<DateTime<Utc>>,
    pub cost_usd: f64,
    /// `fix_ci` attempts.
    pub ci_attempts: i64,
    /// `pr_review` workers.
    pub reviews: i64,
    /// When its merged pull request was found reverted on the base branch (see `store/reverts.rs`).
    pub reverted_at: Option<DateTime<Utc>>,
    /// The task's source (`executor intake`'s name for it), `None` for a task added by hand.
    pub source: Option<String>,
    /// The task's labels as its tracker gave them ([`labels_of`]).
    pub labels: Vec<String>,
    /// The worker kinds the run used, each once, sorted.
    pub kinds: Vec<String>,
}

/// The labels in a task's tracker object: GitHub's `labels` (objects with a `name`, or names), Linear's
/// `labels.nodes`, Asana's `tags`; each once, sorted. Other shapes have none.
pub fn labels_of(raw: &serde_json::Value) -> Vec<String> {
    let lists = [&raw["labels"], &raw["labels"]["nodes"], &raw["tags"]];
    let mut out: Vec<String> = lists
        .into_iter()
        .filter_map(serde_json::Value::as_array)
        .flatten()
        .filter_map(|l| l.as_str().or_else(|| l["name"].as_str()))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// How many worker sessions of one kind, started in the window, ended one way.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct WorkerEnds {
    /// The worker kind as stored (`queued`, `fix_ci`, …).
    pub kind: String,
    /// The stored `EndReason` name.
    pub end_reason: String,
    /// A `pr_review` worker's verdict as stored (`pass`, `fail`), if it gave one.
    pub verdict: Option<String>,
    /// It finished, yet left its branch where it started (and, for `fix_comments`, answered nothing;
    /// a plan or a question handed to a person is its job done): what the runner judges no progress.
    pub no_progress: bool,
    pub count: i64,
}

/// The SQL expression for the UTC day of timestamp column `col`, to group by. `col` is always a literal
/// column name from this file. PostgreSQL groups by a date and writes each day once ([`day_text`]):
/// formatting every row as text cost 20 ms more at 28,000 sessions.
fn day_of(pool: &Pool, col: &'static str) -> String {
    match pool {
        Pool::Sqlite(_) => format!("substr({col}, 1, 10)"),
        Pool::Postgres(_) => format!("CAST({col} AT TIME ZONE 'UTC' AS DATE)"),
    }
}

/// A day of [`day_of`] as `YYYY-MM-DD` text.
fn day_text(pool: &Pool, day: &'static str) -> String {
    match pool {
        Pool::Sqlite(_) => day.to_string(),
        Pool::Postgres(_) => format!("to_char({day}, 'YYYY-MM-DD')"),
    }
}

pub(super) fn parse_day(raw: &str) -> Result<NaiveDate> {
    NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .map_err(|e| StoreError::Corrupt(format!("a day '{raw}' from a timestamp: {e}")))
}

impl Store {
    /// Dollars spent per UTC day since `since` by worker sessions and by triage (analysis sessions),
    /// oldest day first; live sessions count what they have spent so far.
    pub async fn day_costs(&self, since: DateTime<Utc>) -> Result<Vec<DayCost>> {
        let sql = format!(
            "SELECT {day} AS day, sum(workers) AS workers, sum(triage) AS triage FROM ( \
               SELECT {wday} AS d, cost_usd AS workers, CAST(0 AS DOUBLE PRECISION) AS triage \
                 FROM executor_worker_sessions WHERE started_at >= $1 \
               UNION ALL \
               SELECT {aday}, CAST(0 AS DOUBLE PRECISION), cost_usd \
                 FROM executor_analysis_sessions WHERE started_at >= $1 \
             ) AS spent GROUP BY spent.d ORDER BY spent.d",
            day = day_text(&self.pool, "spent.d"),
            wday = day_of(&self.pool, "started_at"),
            aday = day_of(&self.pool, "started_at"),
        );
        on_pool!(self, |p| {
            let rows = sqlx::query(&sql).bind(since).fetch_all(p).await?;
            rows.iter()
                .map(|r| {
                    Ok(DayCost {
                        day: parse_day(&r.req_text("day")?)?,
                        workers_usd: r.real("workers")?.unwrap_or(0.0),
                        triage_usd: r.real("triage")?.unwrap_or(0.0),
                    })
                })
                .collect()
        })
    }

    /// The runs that moved to `pr` or `complete` since `since`, each once, with its approval, first pull
    /// request and completion times (see [`RunLead`]), by run id.
    pub async fn run_leads(&self, since: DateTime<Utc>) -> Result<Vec<RunLead>> {
        // The window's moves come from the events' time index; each run's approval and first PR from the
        // task's and the run's own events (indexed by task and by run).
        let sql = "SELECT r.id AS run_id, r.completed_at AS completed_at, r.state AS state, \
               (SELECT max(a.at) FROM executor_events a WHERE a.task_gid = r.task_gid \
                  AND a.kind = 'queue_status' AND a.to_state = 'approved' AND a.at <= r.started_at) AS approved_at, \
               (SELECT min(p.at) FROM executor_events p WHERE p.run_id = r.id \
                  AND p.kind = 'run_state' AND p.to_state = 'pr') AS pr_at \
             FROM executor_runs r \
             WHERE r.id IN (SELECT run_id FROM executor_events WHERE at >= $1 AND kind = 'run_state' \
                              AND to_state IN ('pr', 'complete')) \
             ORDER BY r.id";
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).bind(since).fetch_all(p).await?;
            let mut leads = Vec::with_capacity(rows.len());
            for r in &rows {
                let Some(approved_at) = r.time("approved_at")? else { continue };
                let complete = r.req_text("state")? == "complete";
                leads.push(RunLead {
                    run_id: r.req_int("run_id")?,
                    approved_at,
                    pr_at: r.time("pr_at")?,
                    completed_at: if complete { r.time("completed_at")? } else { None },
                });
            }
            Ok(leads)
        })
    }

    /// The runs whose pull request was first seen merged, or that were abandoned, since `since`, by id.
    pub async fn run_outcomes(&self, since: DateTime<Utc>) -> Result<Vec<RunOutcome>> {
        const ENDED: &str = "r.merged_at >= $1 \
               OR (r.state = 'abandoned' AND r.id IN (SELECT run_id FROM executor_events \
                     WHERE at >= $1 AND kind = 'run_state' AND to_state = 'abandoned'))";
        let sql = format!(
            "SELECT r.id AS run_id, r.repo AS repo, r.merged_at AS merged_at, r.cost_usd AS cost_usd, \
               r.ci_attempts AS ci_attempts, r.reverted_at AS reverted_at, \
               q.source AS source, q.raw_json AS raw_json, \
               (SELECT max(a.at) FROM executor_events a WHERE a.task_gid = r.task_gid \
                  AND a.kind = 'queue_status' AND a.to_state = 'approved' AND a.at <= r.started_at) AS approved_at, \
               (SELECT s.agent FROM executor_worker_sessions s WHERE s.run_id = r.id \
                  AND s.kind IN ('queued', 'in_progress') ORDER BY s.id DESC LIMIT 1) AS agent, \
               (SELECT count(*) FROM executor_worker_sessions s WHERE s.run_id = r.id \
                  AND s.kind = 'pr_review') AS reviews \
             FROM executor_runs r LEFT JOIN executor_queue q ON q.task_gid = r.task_gid \
             WHERE {ENDED} ORDER BY r.id"
        );
        // Each run's worker kinds, once each: one more statement over the same runs, not one per run.
        let kinds_sql = format!(
            "SELECT DISTINCT s.run_id AS run_id, s.kind AS kind FROM executor_worker_sessions s \
             WHERE s.run_id IN (SELECT r.id FROM executor_runs r WHERE {ENDED}) ORDER BY s.run_id, s.kind"
        );
        let (mut outcomes, kinds): (Vec<RunOutcome>, Vec<(i64, String)>) = on_pool!(self, |p| {
            let rows = sqlx::query(&sql).bind(since).fetch_all(p).await?;
            let outcomes = rows
                .iter()
                .map(|r| {
                    // A raw object that is not JSON has no labels; it is the tracker's, not ours.
                    let raw = r.text("raw_json")?.and_then(|j| serde_json::from_str(&j).ok());
                    Ok(RunOutcome {
                        run_id: r.req_int("run_id")?,
                        repo: r.text("repo")?,
                        agent: r.text("agent")?,
                        merged_at: r.time("merged_at")?,
                        approved_at: r.time("approved_at")?,
                        cost_usd: r.real("cost_usd")?.unwrap_or(0.0),
                        ci_attempts: r.int("ci_attempts")?.unwrap_or(0),
                        reviews: r.req_int("reviews")?,
                        reverted_at: r.time("reverted_at")?,
                        source: r.text("source")?,
                        labels: raw.as_ref().map(labels_of).unwrap_or_default(),
                        kinds: Vec::new(),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let kinds = sqlx::query_as(&kinds_sql).bind(since).fetch_all(p).await?;
            (outcomes, kinds)
        });
        for (run_id, kind) in kinds {
            if let Ok(i) = outcomes.binary_search_by_key(&run_id, |o| o.run_id) {
                outcomes[i].kinds.push(kind);
            }
        }
        Ok(outcomes)
    }

    /// How the worker sessions started since `since` ended, by kind and end reason (live ones are not
    /// counted), sorted by kind then reason.
    pub async fn worker_ends(&self, since: DateTime<Utc>) -> Result<Vec<WorkerEnds>> {
        // The runner's reading of the evidence (`runner::step::progress`), from the same stored facts: the
        // head a worker left is where the run's next worker started, or the run's head after the last.
        // Unknown heads leave the agent's word standing.
        let (sessions, next_join, next_start) = match &self.pool {
            // SQLite looks the next start up per session through the (run, id) index, in ~20 ms at 8,000.
            Pool::Sqlite(_) => (
                "executor_worker_sessions s",
                "",
                "(SELECT n.start_sha FROM executor_worker_sessions n \
                  WHERE n.run_id = s.run_id AND n.id > s.id AND n.start_sha IS NOT NULL ORDER BY n.id LIMIT 1)",
            ),
            // PostgreSQL takes the same from a window over the runs' sessions: the lookups cost it ~35 ms,
            // and their estimate made it compile the statement (JIT, ~30 ms more) on every view.
            Pool::Postgres(_) => (
                "(SELECT w.id, w.run_id, w.kind, w.end_reason, w.verdict, w.start_sha, w.started_at, \
                   w.ended_at, min(CASE WHEN w.start_sha IS NOT NULL THEN w.id END) OVER (PARTITION BY \
                     w.run_id ORDER BY w.id ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS next_id \
                 FROM executor_worker_sessions w \
                 WHERE w.run_id IN (SELECT run_id FROM executor_worker_sessions WHERE started_at >= $1)) s",
                "LEFT JOIN executor_worker_sessions nx ON nx.id = s.next_id",
                "nx.start_sha",
            ),
        };
        let sql = format!(
            "SELECT s.kind, s.end_reason, s.verdict, \
               CAST(CASE WHEN s.end_reason = 'finished' \
                 AND s.kind IN ('queued', 'in_progress', 'fix_ci', 'fix_comments') \
                 AND s.start_sha = coalesce({next_start}, r.head_sha) \
                 AND NOT EXISTS (SELECT 1 FROM executor_agent_replies a \
                     WHERE a.session_id = s.id AND a.posted_comment_id IS NOT NULL) \
                 AND NOT EXISTS (SELECT 1 FROM executor_run_plans pl WHERE pl.session_id = s.id) \
                 AND NOT EXISTS (SELECT 1 FROM executor_run_questions qu WHERE qu.session_id = s.id) \
               THEN 1 ELSE 0 END AS BIGINT) AS no_progress, \
               count(*) \
             FROM {sessions} JOIN executor_runs r ON r.id = s.run_id {next_join} \
             WHERE s.started_at >= $1 AND s.ended_at IS NOT NULL AND s.end_reason IS NOT NULL \
             GROUP BY s.kind, s.end_reason, s.verdict, no_progress \
             ORDER BY s.kind, s.end_reason, s.verdict, no_progress"
        );
        let rows: Vec<(String, String, Option<String>, i64, i64)> =
            on_pool!(self, |p| { sqlx::query_as(&sql).bind(since).fetch_all(p).await? });
        Ok(rows
            .into_iter()
            .map(|(kind, end_reason, verdict, no_progress, count)| WorkerEnds {
                kind,
                end_reason,
                verdict,
                no_progress: no_progress != 0,
                count,
            })
            .collect())
    }
}
