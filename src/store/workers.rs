//! Worker sessions: one row per agent process over a run's life, so that a restarted runner can tell a
//! live worker from a dead one, and cost adds up per run and per day.

use chrono::{DateTime, Utc};

use super::row::{Cols, narrow};
use super::{BeginWrite, Result, Store, StoreError, now, on_pool};
use crate::domain::WorkerKind;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WorkerSession {
    pub id: i64,
    pub run_id: i64,
    pub kind: WorkerKind,
    pub agent: String,
    pub host: String,
    pub pid: Option<i32>,
    pub pid_start_time: Option<i64>,
    pub output_path: Option<String>,
    /// How far the supervisor had read the output file (where an adopter resumes).
    pub output_offset: i64,
    pub log_path: Option<String>,
    pub session_id: Option<String>,
    pub started_at: DateTime<Utc>,
    pub last_output_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    pub end_reason: Option<String>,
    pub exit_code: Option<i32>,
    pub num_turns: Option<i64>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub result_json: Option<String>,
    pub result_error: Option<String>,
}

/// How a worker ended, as recorded on its session and summed onto its run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerEnd {
    pub reason: String,
    pub exit_code: Option<i32>,
    pub num_turns: Option<i64>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub result_json: Option<String>,
    pub result_error: Option<String>,
    /// The attempt counts against `runner.max_stuck` (idle timeout, crash, failure without a result).
    pub stuck: bool,
    /// The worker ended well: the run's stuck count starts again from zero.
    pub reset_stuck: bool,
}

/// Updates a worker session and mirrors a fact of it onto its run, in one transaction. Each statement
/// takes the session id as its last parameter.
macro_rules! session_and_run {
    ($store:expr, $session:expr, $session_sql:literal, [$($sb:expr),*], $run_sql:literal, [$($rb:expr),*]) => {{
        on_pool!($store, |p| {
            let mut tx = p.begin_write().await?;
            sqlx::query($session_sql)$(.bind($sb))*.bind($session).execute(&mut *tx).await?;
            sqlx::query($run_sql)$(.bind($rb))*.bind($session).execute(&mut *tx).await?;
            tx.commit().await?;
        });
        Ok(())
    }};
}

fn session_from_row(r: &impl Cols) -> Result<WorkerSession> {
    Ok(WorkerSession {
        id: r.req_int("id")?,
        run_id: r.req_int("run_id")?,
        kind: r.parsed("kind")?,
        agent: r.req_text("agent")?,
        host: r.req_text("host")?,
        pid: r.int("pid")?.map(|v| narrow("pid", v)).transpose()?,
        pid_start_time: r.int("pid_start_time")?,
        output_path: r.text("output_path")?,
        output_offset: r.int("output_offset")?.unwrap_or(0),
        log_path: r.text("log_path")?,
        session_id: r.text("session_id")?,
        started_at: r.req_time("started_at")?,
        last_output_at: r.time("last_output_at")?,
        ended_at: r.time("ended_at")?,
        end_reason: r.text("end_reason")?,
        exit_code: r.int("exit_code")?.map(|v| narrow("exit_code", v)).transpose()?,
        num_turns: r.int("num_turns")?,
        cost_usd: r.real("cost_usd")?.unwrap_or(0.0),
        input_tokens: r.int("input_tokens")?.unwrap_or(0),
        output_tokens: r.int("output_tokens")?.unwrap_or(0),
        result_json: r.text("result_json")?,
        result_error: r.text("result_error")?,
    })
}

impl Store {
    /// Opens a worker session for a run, before its process starts. Returns `None` when the run already
    /// has a live session: a unique index makes a second concurrent worker impossible.
    pub async fn begin_worker_session(
        &self,
        run_id: i64,
        kind: WorkerKind,
        agent: &str,
        host: &str,
    ) -> Result<Option<WorkerSession>> {
        let id: Option<i64> = on_pool!(self, |p| {
            sqlx::query_scalar(
                "INSERT INTO executor_worker_sessions (run_id, kind, agent, host, started_at) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (run_id) WHERE ended_at IS NULL DO NOTHING RETURNING id",
            )
            .bind(run_id)
            .bind(kind.as_str())
            .bind(agent)
            .bind(host)
            .bind(now())
            .fetch_optional(p)
            .await?
        });
        match id {
            Some(id) => Ok(Some(self.worker_session(id).await?)),
            None => Ok(None),
        }
    }

    pub async fn worker_session(&self, id: i64) -> Result<WorkerSession> {
        on_pool!(self, |p| {
            let row = sqlx::query("SELECT * FROM executor_worker_sessions WHERE id = $1")
                .bind(id)
                .fetch_optional(p)
                .await?
                .ok_or_else(|| StoreError::Corrupt(format!("worker session {id} vanished")))?;
            session_from_row(&row)
        })
    }

    /// Records the process of a session (and mirrors the pid on the run, as the seed's `worker_pid`).
    pub async fn set_worker_process(
        &self,
        session: i64,
        pid: i32,
        pid_start_time: Option<i64>,
        output_path: &str,
        log_path: &str,
    ) -> Result<()> {
        let at = now();
        session_and_run!(
            self,
            session,
            "UPDATE executor_worker_sessions SET pid = $1, pid_start_time = $2, output_path = $3, log_path = $4 WHERE id = $5",
            [i64::from(pid), pid_start_time, output_path, log_path],
            "UPDATE executor_runs SET worker_pid = $1, worker_last_update = $2, updated_at = $2 WHERE id = (SELECT run_id FROM executor_worker_sessions WHERE id = $3)",
            [i64::from(pid), at]
        )
    }

    /// Records the agent's own session id (for resume) on the session and the run.
    pub async fn set_worker_agent_session(&self, session: i64, agent_session_id: &str) -> Result<()> {
        session_and_run!(
            self,
            session,
            "UPDATE executor_worker_sessions SET session_id = $1 WHERE id = $2",
            [agent_session_id],
            "UPDATE executor_runs SET worker_session_id = $1 WHERE id = (SELECT run_id FROM executor_worker_sessions WHERE id = $2)",
            [agent_session_id]
        )
    }

    /// Notes that the worker produced output at `at` (the watchdog's evidence of life) and how far its
    /// output has been read.
    pub async fn touch_worker_output(&self, session: i64, at: DateTime<Utc>, offset: i64) -> Result<()> {
        session_and_run!(
            self,
            session,
            "UPDATE executor_worker_sessions SET last_output_at = $1, output_offset = $2 WHERE id = $3",
            [at, offset],
            "UPDATE executor_runs SET worker_last_update = $1 WHERE id = (SELECT run_id FROM executor_worker_sessions WHERE id = $2)",
            [at]
        )
    }

    /// Closes a session: records how it ended, adds its cost and tokens to the run, clears the run's pid,
    /// and counts a stuck attempt when it was one. Closing an already closed session changes nothing.
    pub async fn end_worker_session(&self, session: i64, end: &WorkerEnd) -> Result<bool> {
        let at = now();
        let closed = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let run_id: Option<i64> = sqlx::query_scalar(
                "UPDATE executor_worker_sessions SET ended_at = $1, end_reason = $2, exit_code = $3, num_turns = $4, \
                   cost_usd = $5, input_tokens = $6, output_tokens = $7, result_json = $8, result_error = $9 \
                 WHERE id = $10 AND ended_at IS NULL RETURNING run_id",
            )
            .bind(at)
            .bind(&end.reason)
            .bind(end.exit_code.map(i64::from))
            .bind(end.num_turns)
            .bind(end.cost_usd)
            .bind(end.input_tokens)
            .bind(end.output_tokens)
            .bind(end.result_json.as_deref())
            .bind(end.result_error.as_deref())
            .bind(session)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(run_id) = run_id {
                sqlx::query(
                    "UPDATE executor_runs SET worker_pid = NULL, updated_at = $1, cost_usd = cost_usd + $2, \
                       input_tokens = input_tokens + $3, output_tokens = output_tokens + $4, \
                       worker_stuck_count = CASE WHEN $5 = 1 THEN 0 ELSE worker_stuck_count + $6 END WHERE id = $7",
                )
                .bind(at)
                .bind(end.cost_usd)
                .bind(end.input_tokens)
                .bind(end.output_tokens)
                .bind(i64::from(end.reset_stuck))
                .bind(i64::from(end.stuck))
                .bind(run_id)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
            }
            run_id.is_some()
        });
        Ok(closed)
    }

    /// Sessions not yet closed, on every host.
    pub async fn live_worker_sessions(&self) -> Result<Vec<WorkerSession>> {
        on_pool!(self, |p| {
            sqlx::query("SELECT * FROM executor_worker_sessions WHERE ended_at IS NULL ORDER BY id")
                .fetch_all(p)
                .await?
                .iter()
                .map(session_from_row)
                .collect()
        })
    }

    /// A run's sessions, oldest first.
    pub async fn worker_sessions(&self, run_id: i64) -> Result<Vec<WorkerSession>> {
        on_pool!(self, |p| {
            sqlx::query("SELECT * FROM executor_worker_sessions WHERE run_id = $1 ORDER BY id")
                .bind(run_id)
                .fetch_all(p)
                .await?
                .iter()
                .map(session_from_row)
                .collect()
        })
    }

    /// Dollars spent by workers that started since `since` (the daily budget).
    pub async fn spent_since(&self, since: DateTime<Utc>) -> Result<f64> {
        let v: Option<f64> = on_pool!(self, |p| {
            sqlx::query_scalar("SELECT sum(cost_usd) FROM executor_worker_sessions WHERE started_at >= $1")
                .bind(since)
                .fetch_one(p)
                .await?
        });
        Ok(v.unwrap_or(0.0))
    }
}
