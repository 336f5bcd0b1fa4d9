//! What the soak reads from executor's database, on either backend. It only reads: every change goes
//! through executor's own CLI, as a human's would. The SQL is the same text on both (no parameters; the
//! only numbers formatted in are the soak's own).

use chrono::{DateTime, Utc};
use sqlx::{PgPool, SqlitePool};

pub enum Db {
    Pg(PgPool),
    Sqlite(SqlitePool),
}

/// One body per backend, with `$pool` bound to that backend's pool.
macro_rules! on_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            Db::Pg($pool) => $body,
            Db::Sqlite($pool) => $body,
        }
    };
}

macro_rules! rows {
    ($db:expr, $ty:ty, $sql:expr) => {
        on_db!($db, pool => sqlx::query_as::<_, $ty>(&*$sql).fetch_all(pool).await)
    };
}

pub type Result<T> = std::result::Result<T, sqlx::Error>;

#[derive(Debug, Clone)]
pub struct RunRow {
    pub id: i64,
    pub task_gid: String,
    pub state: String,
    pub pr_number: Option<i64>,
    pub branch: Option<String>,
    pub cost_usd: f64,
    /// Its last decision was to wait for a free worker slot.
    pub waits_for_a_slot: bool,
}

#[derive(Debug, Clone)]
pub struct SessionRow {
    pub id: i64,
    pub run_id: i64,
    pub kind: String,
    pub host: String,
    /// The agent's own session id (its ledger's name).
    pub session_id: Option<String>,
    pub cost_usd: f64,
    pub ended: bool,
    pub end_reason: Option<String>,
}

#[derive(Debug, Clone)]
pub struct NoticeRow {
    pub run_id: Option<i64>,
    pub kind: String,
    /// What the notice is about (`stuck:SESSION`, …): one notice per run and key.
    pub key: String,
    pub delivered: bool,
}

#[derive(Debug, Clone)]
pub struct EventRow {
    pub id: i64,
    pub at: DateTime<Utc>,
    pub task_gid: Option<String>,
    pub run_id: Option<i64>,
    pub kind: String,
    pub to_state: Option<String>,
}

impl Db {
    pub async fn connect(url: &str) -> Result<Db> {
        if url.starts_with("postgres") {
            let pool = sqlx::postgres::PgPoolOptions::new().max_connections(2).connect(url).await?;
            Ok(Db::Pg(pool))
        } else {
            let pool = sqlx::sqlite::SqlitePoolOptions::new().max_connections(2).connect(url).await?;
            Ok(Db::Sqlite(pool))
        }
    }

    pub async fn close(&self) {
        on_db!(self, pool => pool.close().await)
    }

    /// (run id, host) of every worker session not ended.
    pub async fn live_sessions(&self) -> Result<Vec<(i64, String)>> {
        rows!(self, (i64, String), "SELECT run_id, host FROM executor_worker_sessions WHERE ended_at IS NULL")
    }

    /// Every write a runner made after it was declared lost: a worker session it started, or an event
    /// it recorded, after its `ended_at` (set by the host that declared it lost).
    pub async fn writes_after_loss(&self) -> Result<Vec<String>> {
        let sessions = rows!(
            self,
            (i64, String),
            "SELECT s.id, r.id FROM executor_worker_sessions s JOIN executor_runners r ON r.id = s.runner_id \
             WHERE r.end_reason = 'lost' AND s.started_at > r.ended_at"
        )?;
        let events = rows!(
            self,
            (i64, String),
            "SELECT e.id, r.id FROM executor_events e JOIN executor_runners r ON r.id = e.actor_id \
             WHERE r.end_reason = 'lost' AND e.at > r.ended_at"
        )?;
        Ok(sessions
            .into_iter()
            .map(|(s, r)| format!("session {s} started by runner {r} after it was declared lost"))
            .chain(
                events
                    .into_iter()
                    .map(|(e, r)| format!("event {e} written by runner {r} after it was declared lost")),
            )
            .collect())
    }

    /// (id, state, recorded worktree) of every run.
    pub async fn run_worktrees(&self) -> Result<Vec<(i64, String, Option<String>)>> {
        rows!(self, (i64, String, Option<String>), "SELECT id, state, worktree_path FROM executor_runs")
    }

    /// Every task's queue status.
    pub async fn task_statuses(&self) -> Result<Vec<(String, String)>> {
        rows!(self, (String, String), "SELECT task_gid, status FROM executor_queue")
    }

    /// Task gids in a queue status.
    pub async fn tasks_in(&self, status: &str) -> Result<Vec<String>> {
        let rows = rows!(
            self,
            (String,),
            format!("SELECT task_gid FROM executor_queue WHERE status = '{status}' ORDER BY id")
        )?;
        Ok(rows.into_iter().map(|(g,)| g).collect())
    }

    pub async fn runs(&self) -> Result<Vec<RunRow>> {
        let rows = rows!(
            self,
            (i64, String, String, Option<i64>, Option<String>, f64, Option<String>),
            "SELECT id, task_gid, state, pr_number, branch_name, cost_usd, last_decision FROM executor_runs ORDER BY id"
        )?;
        Ok(rows
            .into_iter()
            .map(|(id, task_gid, state, pr_number, branch, cost_usd, decision)| RunRow {
                id,
                task_gid,
                state,
                pr_number,
                branch,
                cost_usd,
                // What the runner told the human it waits for (`runs show`): read as a person would.
                waits_for_a_slot: decision.is_some_and(|d| d.contains("No free worker slot")),
            })
            .collect())
    }

    pub async fn sessions(&self) -> Result<Vec<SessionRow>> {
        let rows = rows!(
            self,
            (i64, i64, String, String, Option<String>, f64, Option<DateTime<Utc>>, Option<String>),
            "SELECT id, run_id, kind, host, session_id, cost_usd, ended_at, end_reason \
             FROM executor_worker_sessions ORDER BY id"
        )?;
        Ok(rows
            .into_iter()
            .map(|(id, run_id, kind, host, session_id, cost_usd, ended_at, end_reason)| SessionRow {
                id,
                run_id,
                kind,
                host,
                session_id,
                cost_usd,
                ended: ended_at.is_some(),
                end_reason,
            })
            .collect())
    }

    pub async fn notices(&self) -> Result<Vec<NoticeRow>> {
        let rows = rows!(
            self,
            (Option<i64>, String, String, Option<DateTime<Utc>>),
            "SELECT run_id, kind, notice_key, delivered_at FROM executor_notifications ORDER BY id"
        )?;
        Ok(rows
            .into_iter()
            .map(|(run_id, kind, key, delivered_at)| NoticeRow {
                run_id,
                kind,
                key,
                delivered: delivered_at.is_some(),
            })
            .collect())
    }

    /// Status and state changes (and run creations) with an id above `after`, oldest first.
    pub async fn events_after(&self, after: i64) -> Result<Vec<EventRow>> {
        let rows = rows!(
            self,
            (i64, DateTime<Utc>, Option<String>, Option<i64>, String, Option<String>),
            format!(
                "SELECT id, at, task_gid, run_id, kind, to_state FROM executor_events \
                 WHERE id > {after} AND kind IN ('queue_status', 'run_state', 'run_created') ORDER BY id"
            )
        )?;
        Ok(rows
            .into_iter()
            .map(|(id, at, task_gid, run_id, kind, to_state)| EventRow {
                id,
                at,
                task_gid,
                run_id,
                kind,
                to_state,
            })
            .collect())
    }

    /// When each run last changed in any way the audit trail records (notes included).
    pub async fn last_event_per_run(&self) -> Result<Vec<(i64, DateTime<Utc>)>> {
        rows!(
            self,
            (i64, DateTime<Utc>),
            "SELECT run_id, max(at) FROM executor_events WHERE run_id IS NOT NULL GROUP BY run_id"
        )
    }

    /// Runs by state, for the progress line.
    pub async fn run_states(&self) -> Result<Vec<(String, i64)>> {
        rows!(self, (String, i64), "SELECT state, count(*) FROM executor_runs GROUP BY state ORDER BY state")
    }

    /// The database's clock (SQLite has none of its own: the machine's).
    pub async fn now(&self) -> Result<DateTime<Utc>> {
        match self {
            Db::Pg(pool) => sqlx::query_scalar("SELECT now()").fetch_one(pool).await,
            Db::Sqlite(_) => Ok(Utc::now()),
        }
    }
}
