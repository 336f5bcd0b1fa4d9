//! What the tests read from the shared database: the row types (only the columns the assertions are
//! about) and the [`Cluster`]'s queries that return them. A query that fails here fails the test, except
//! in the functions returning `Result`: the sampler and [`Cluster::diagnose`] use those, so that a read
//! that fails becomes part of their report instead of cutting it short.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::Cluster;

impl Cluster {
    /// The database's clock.
    pub async fn db_now(&self) -> DateTime<Utc> {
        sqlx::query_scalar("SELECT now()").fetch_one(&self.db).await.unwrap()
    }

    pub async fn live_sessions(&self) -> Vec<LiveSession> {
        live_sessions(&self.db).await.unwrap()
    }

    pub async fn session(&self, id: i64) -> SessionRow {
        let rows: Vec<SessionTuple> =
            sqlx::query_as(&select_sessions("s.id = $1")).bind(id).fetch_all(&self.db).await.unwrap();
        rows.into_iter().map(SessionRow::from).next().unwrap_or_else(|| panic!("no session {id}"))
    }

    pub async fn sessions_of_run(&self, run_id: i64) -> Vec<SessionRow> {
        let rows: Vec<SessionTuple> =
            sqlx::query_as(&select_sessions("s.run_id = $1")).bind(run_id).fetch_all(&self.db).await.unwrap();
        rows.into_iter().map(SessionRow::from).collect()
    }

    pub async fn sessions_of_runner(&self, runner_id: &str) -> Vec<SessionRow> {
        let rows: Vec<SessionTuple> = sqlx::query_as(&select_sessions("s.runner_id = $1"))
            .bind(runner_id)
            .fetch_all(&self.db)
            .await
            .unwrap();
        rows.into_iter().map(SessionRow::from).collect()
    }

    pub async fn run(&self, id: i64) -> RunRow {
        let sql = format!("SELECT {} FROM executor_runs WHERE id = $1", RunRow::COLUMNS);
        let row: RunTuple = sqlx::query_as(&sql).bind(id).fetch_one(&self.db).await.unwrap();
        RunRow::from(row)
    }

    pub async fn runs(&self) -> Vec<RunRow> {
        runs(&self.db).await.unwrap()
    }

    pub async fn runner(&self, id: &str) -> RunnerRow {
        let sql = format!("SELECT {} FROM executor_runners WHERE id = $1", RunnerRow::COLUMNS);
        let row: RunnerTuple = sqlx::query_as(&sql).bind(id).fetch_one(&self.db).await.unwrap();
        RunnerRow::from(row)
    }

    /// Tasks by queue status.
    pub async fn queue_statuses(&self) -> BTreeMap<String, String> {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT task_gid, status FROM executor_queue").fetch_all(&self.db).await.unwrap();
        rows.into_iter().collect()
    }

    /// How many times each run's state changed to `complete`, by the audit trail.
    pub async fn completions_per_run(&self) -> BTreeMap<i64, i64> {
        let rows: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT run_id, count(*) FROM executor_events \
             WHERE kind = 'run_state' AND to_state = 'complete' AND run_id IS NOT NULL GROUP BY run_id",
        )
        .fetch_all(&self.db)
        .await
        .unwrap();
        rows.into_iter().collect()
    }
}

/// A worker session not ended, and whether its runner is alive by the database's clock (the sessions
/// of a runner whose heartbeat lapsed no longer count against the limits: that runner is being
/// declared lost, and its agents with it).
#[derive(Debug, Clone)]
pub struct LiveSession {
    pub id: i64,
    pub run_id: i64,
    pub host: String,
    pub runner_id: Option<String>,
    pub counts: bool,
}

pub async fn live_sessions(db: &PgPool) -> Result<Vec<LiveSession>, sqlx::Error> {
    let rows: Vec<(i64, i64, String, Option<String>, bool)> = sqlx::query_as(
        "SELECT s.id, s.run_id, s.host, s.runner_id, \
           (s.runner_id IS NULL OR (r.ended_at IS NULL AND r.alive_until > now())) AS counts \
         FROM executor_worker_sessions s LEFT JOIN executor_runners r ON r.id = s.runner_id \
         WHERE s.ended_at IS NULL ORDER BY s.id",
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, run_id, host, runner_id, counts)| LiveSession { id, run_id, host, runner_id, counts })
        .collect())
}

/// Every run, oldest first.
pub async fn runs(db: &PgPool) -> Result<Vec<RunRow>, sqlx::Error> {
    let sql = format!("SELECT {} FROM executor_runs ORDER BY id", RunRow::COLUMNS);
    let rows: Vec<RunTuple> = sqlx::query_as(&sql).fetch_all(db).await?;
    Ok(rows.into_iter().map(RunRow::from).collect())
}

/// Every runner, by host and then in the order they started.
pub async fn runners(db: &PgPool) -> Result<Vec<RunnerRow>, sqlx::Error> {
    let sql = format!("SELECT {} FROM executor_runners ORDER BY host, started_at", RunnerRow::COLUMNS);
    let rows: Vec<RunnerTuple> = sqlx::query_as(&sql).fetch_all(db).await?;
    Ok(rows.into_iter().map(RunnerRow::from).collect())
}

/// The worker sessions `filter` (on `s`, with one parameter) selects, oldest first.
fn select_sessions(filter: &str) -> String {
    format!("SELECT {} FROM executor_worker_sessions s WHERE {filter} ORDER BY s.id", SessionRow::COLUMNS)
}

type SessionTuple =
    (i64, i64, String, Option<String>, String, DateTime<Utc>, Option<DateTime<Utc>>, Option<String>);

#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub id: i64,
    pub run_id: i64,
    pub host: String,
    pub runner_id: Option<String>,
    pub kind: String,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub end_reason: Option<String>,
}

impl SessionRow {
    const COLUMNS: &str =
        "s.id, s.run_id, s.host, s.runner_id, s.kind, s.started_at, s.ended_at, s.end_reason";
}

impl From<SessionTuple> for SessionRow {
    fn from((id, run_id, host, runner_id, kind, started_at, ended_at, end_reason): SessionTuple) -> Self {
        SessionRow { id, run_id, host, runner_id, kind, started_at, ended_at, end_reason }
    }
}

type RunTuple = (
    i64,
    String,
    String,
    Option<String>,
    Option<DateTime<Utc>>,
    i64,
    Option<String>,
    Option<i64>,
    DateTime<Utc>,
    Option<String>,
);

/// The fields of a run a rescue is about.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: i64,
    pub task_gid: String,
    pub state: String,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub wants_slot: i64,
    pub worktree_path: Option<String>,
    pub worker_pid: Option<i64>,
    pub updated_at: DateTime<Utc>,
    pub last_decision: Option<String>,
}

impl RunRow {
    const COLUMNS: &str = "id, task_gid, state, lease_owner, lease_expires_at, wants_slot, worktree_path, \
                           worker_pid, updated_at, last_decision";
}

impl From<RunTuple> for RunRow {
    fn from(t: RunTuple) -> Self {
        let (
            id,
            task_gid,
            state,
            lease_owner,
            lease_expires_at,
            wants_slot,
            worktree_path,
            worker_pid,
            updated_at,
            last_decision,
        ) = t;
        RunRow {
            id,
            task_gid,
            state,
            lease_owner,
            lease_expires_at,
            wants_slot,
            worktree_path,
            worker_pid,
            updated_at,
            last_decision,
        }
    }
}

type RunnerTuple = (String, String, i64, DateTime<Utc>, DateTime<Utc>, Option<DateTime<Utc>>, Option<String>);

#[derive(Debug, Clone, PartialEq)]
pub struct RunnerRow {
    pub id: String,
    pub host: String,
    pub pid: i64,
    pub heartbeat_at: DateTime<Utc>,
    pub alive_until: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub end_reason: Option<String>,
}

impl RunnerRow {
    const COLUMNS: &str = "id, host, pid, heartbeat_at, alive_until, ended_at, end_reason";
}

impl From<RunnerTuple> for RunnerRow {
    fn from((id, host, pid, heartbeat_at, alive_until, ended_at, end_reason): RunnerTuple) -> Self {
        RunnerRow { id, host, pid, heartbeat_at, alive_until, ended_at, end_reason }
    }
}
