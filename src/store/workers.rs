//! Worker sessions: one row per agent process over a run's life, so that a restarted runner can tell a
//! live worker from a dead one, and cost adds up per run and per day.

use chrono::{DateTime, Utc};

use super::columns::session_columns;
use super::row::{Cols, narrow};
use super::{BeginWrite, Result, Store, StoreError, now, on_pool};
use crate::domain::{EndReason, ReviewVerdict, WorkerKind};

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
    pub end_reason: Option<EndReason>,
    pub exit_code: Option<i32>,
    pub num_turns: Option<i64>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub result_json: Option<String>,
    pub result_error: Option<String>,
    /// The pull request's head when the worker started (else its branch's head): a review's verdict is
    /// for this commit, and a worker that ends with its branch still here made no progress.
    pub start_sha: Option<String>,
    /// The agent session this worker was asked to continue, if any.
    pub resumed_session: Option<String>,
    /// A `pr_review` worker's verdict on `start_sha`.
    pub verdict: Option<ReviewVerdict>,
    /// When a `pr_review` worker's findings were posted on the pull request.
    pub review_posted_at: Option<DateTime<Utc>>,
    /// `cost_usd` is executor's estimate from tokens, not the agent's own figure.
    pub cost_estimated: bool,
}

/// What a worker session starts from, recorded when it opens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionStart {
    /// The pull request's head, or the branch's head before there is a pull request.
    pub start_sha: Option<String>,
    /// The agent session the worker is asked to continue.
    pub resumed_session: Option<String>,
}

/// How a worker ended, as recorded on its session and summed onto its run. Whether the attempt counts
/// against `runner.max_stuck` follows from `reason` alone ([`EndReason::counts_as_stuck`]).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerEnd {
    pub reason: EndReason,
    pub exit_code: Option<i32>,
    pub num_turns: Option<i64>,
    /// The worker's total; if usage recorded while it ran was higher (a killed agent reports nothing at
    /// the end), the higher figure is kept.
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub result_json: Option<String>,
    pub result_error: Option<String>,
    /// A review's verdict: written on the session and, for the session's `start_sha`, on the run, in
    /// the same transaction as the end.
    pub verdict: Option<ReviewVerdict>,
    pub cost_estimated: bool,
}

impl WorkerEnd {
    /// An end with nothing measured: a worker that never ran, or ran without reporting.
    pub fn new(reason: EndReason) -> WorkerEnd {
        WorkerEnd {
            reason,
            exit_code: None,
            num_turns: None,
            cost_usd: 0.0,
            input_tokens: 0,
            output_tokens: 0,
            result_json: None,
            result_error: None,
            verdict: None,
            cost_estimated: false,
        }
    }

    /// An end that never got as far as a process (no worktree, no prompt, no program), with why.
    pub fn failed(reason: EndReason, error: impl Into<String>) -> WorkerEnd {
        WorkerEnd { result_error: Some(error.into()), ..WorkerEnd::new(reason) }
    }
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

/// A session for unit tests of code that reads sessions: `id`, `kind`, on run 1, nothing else known.
#[cfg(test)]
pub(crate) fn test_session(id: i64, kind: WorkerKind) -> WorkerSession {
    WorkerSession {
        id,
        run_id: 1,
        kind,
        agent: "claude".into(),
        host: "h".into(),
        pid: None,
        pid_start_time: None,
        output_path: None,
        output_offset: 0,
        log_path: None,
        session_id: None,
        started_at: Utc::now(),
        last_output_at: None,
        ended_at: None,
        end_reason: None,
        exit_code: None,
        num_turns: None,
        cost_usd: 0.0,
        input_tokens: 0,
        output_tokens: 0,
        result_json: None,
        result_error: None,
        start_sha: None,
        resumed_session: None,
        verdict: None,
        review_posted_at: None,
        cost_estimated: false,
    }
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
        end_reason: r.text("end_reason")?.map(|v| parse_col("end_reason", &v)).transpose()?,
        exit_code: r.int("exit_code")?.map(|v| narrow("exit_code", v)).transpose()?,
        num_turns: r.int("num_turns")?,
        cost_usd: r.real("cost_usd")?.unwrap_or(0.0),
        input_tokens: r.int("input_tokens")?.unwrap_or(0),
        output_tokens: r.int("output_tokens")?.unwrap_or(0),
        result_json: r.text("result_json")?,
        result_error: r.text("result_error")?,
        start_sha: r.text("start_sha")?,
        resumed_session: r.text("resumed_session")?,
        verdict: r.text("verdict")?.map(|v| parse_col("verdict", &v)).transpose()?,
        review_posted_at: r.time("review_posted_at")?,
        cost_estimated: r.int("cost_estimated")?.unwrap_or(0) != 0,
    })
}

pub(super) fn parse_col<T>(col: &str, v: &str) -> Result<T>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    v.parse().map_err(|e: T::Err| StoreError::Corrupt(format!("column {col}: {e}")))
}

impl Store {
    /// Opens a worker session for a run, before its process starts, with what it starts from. Returns
    /// `None` when the run already has a live session: a unique index makes a second concurrent worker
    /// impossible.
    pub async fn begin_worker_session(
        &self,
        run_id: i64,
        kind: WorkerKind,
        agent: &str,
        host: &str,
        start: &SessionStart,
    ) -> Result<Option<WorkerSession>> {
        let id: Option<i64> = on_pool!(self, |p| {
            sqlx::query_scalar(
                "INSERT INTO executor_worker_sessions (run_id, kind, agent, host, started_at, start_sha, resumed_session) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (run_id) WHERE ended_at IS NULL DO NOTHING RETURNING id",
            )
            .bind(run_id)
            .bind(kind.as_str())
            .bind(agent)
            .bind(host)
            .bind(now())
            .bind(start.start_sha.as_deref())
            .bind(start.resumed_session.as_deref())
            .fetch_optional(p)
            .await?
        });
        match id {
            Some(id) => Ok(Some(self.worker_session(id).await?)),
            None => Ok(None),
        }
    }

    /// The session with this id, or `None`.
    pub async fn find_worker_session(&self, id: i64) -> Result<Option<WorkerSession>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                session_columns!(),
                " FROM executor_worker_sessions WHERE id = $1"
            ))
            .bind(id)
            .fetch_optional(p)
            .await?
            .map(|r| session_from_row(&r))
            .transpose()
        })
    }

    pub async fn worker_session(&self, id: i64) -> Result<WorkerSession> {
        on_pool!(self, |p| {
            let row = sqlx::query(concat!(
                "SELECT ",
                session_columns!(),
                " FROM executor_worker_sessions WHERE id = $1"
            ))
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

    /// Records the agent's own session id (for resume) on the session. The run's `worker_session_id`
    /// mirrors only the task's own work (`queued`, `in_progress`): a review's or a fix's thread is never
    /// what a later `in_progress` worker continues.
    pub async fn set_worker_agent_session(&self, session: i64, agent_session_id: &str) -> Result<()> {
        session_and_run!(
            self,
            session,
            "UPDATE executor_worker_sessions SET session_id = $1 WHERE id = $2",
            [agent_session_id],
            "UPDATE executor_runs SET worker_session_id = $1 WHERE id = \
               (SELECT run_id FROM executor_worker_sessions WHERE id = $2 AND kind IN ('queued','in_progress'))",
            [agent_session_id]
        )
    }

    /// Records a live worker's usage so far (cumulative), so that a runner that dies, and the daily
    /// budget, see what it has spent before it ends. `cost_usd` of `None` keeps the figure recorded.
    pub async fn set_worker_usage(
        &self,
        session: i64,
        cost_usd: Option<f64>,
        input_tokens: i64,
        output_tokens: i64,
        cost_estimated: bool,
    ) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_worker_sessions SET cost_usd = COALESCE($1, cost_usd), input_tokens = $2, \
                   output_tokens = $3, cost_estimated = CASE WHEN $1 IS NULL THEN cost_estimated ELSE $4 END \
                 WHERE id = $5 AND ended_at IS NULL",
            )
            .bind(cost_usd)
            .bind(input_tokens)
            .bind(output_tokens)
            .bind(i64::from(cost_estimated))
            .bind(session)
            .execute(p)
            .await?;
        });
        Ok(())
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

    /// Closes a session: records how it ended (and a review's verdict), adds its cost and tokens to the
    /// run, clears the run's pid, and counts a stuck attempt when it was one, all in one transaction. A
    /// verdict becomes the run's for the head the session started at, never the run's current head.
    /// Closing an already closed session changes nothing.
    pub async fn end_worker_session(&self, session: i64, end: &WorkerEnd) -> Result<bool> {
        let at = now();
        let verdict = end.verdict.map(|v| v.as_str());
        let closed = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            // The agent's own final figure ($8 = 0 with a cost) is the truth. Otherwise the usage recorded
            // while the worker ran may exceed what its end reports (killed before its final report): the
            // larger figure is the truer one.
            let row: Option<(i64, f64, i64, i64, i64, Option<String>)> = sqlx::query_as(
                "UPDATE executor_worker_sessions SET ended_at = $1, end_reason = $2, exit_code = $3, num_turns = $4, \
                   cost_usd = CASE WHEN ($8 = 0 AND $5 > 0) OR $5 > cost_usd THEN $5 ELSE cost_usd END, \
                   input_tokens = CASE WHEN ($8 = 0 AND $5 > 0) OR $6 > input_tokens THEN $6 ELSE input_tokens END, \
                   output_tokens = CASE WHEN ($8 = 0 AND $5 > 0) OR $7 > output_tokens THEN $7 ELSE output_tokens END, \
                   cost_estimated = CASE WHEN ($8 = 0 AND $5 > 0) OR $5 >= cost_usd THEN $8 ELSE cost_estimated END, \
                   result_json = $9, result_error = $10, verdict = $11 \
                 WHERE id = $12 AND ended_at IS NULL \
                 RETURNING run_id, cost_usd, input_tokens, output_tokens, cost_estimated, start_sha",
            )
            .bind(at)
            .bind(end.reason.as_str())
            .bind(end.exit_code.map(i64::from))
            .bind(end.num_turns)
            .bind(end.cost_usd)
            .bind(end.input_tokens)
            .bind(end.output_tokens)
            .bind(i64::from(end.cost_estimated))
            .bind(end.result_json.as_deref())
            .bind(end.result_error.as_deref())
            .bind(verdict)
            .bind(session)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some((run_id, cost, input, output, estimated, start_sha)) = &row {
                let stuck = end.reason.counts_as_stuck();
                let reset = end.reason == EndReason::Finished;
                sqlx::query(
                    "UPDATE executor_runs SET worker_pid = NULL, updated_at = $1, cost_usd = cost_usd + $2, \
                       input_tokens = input_tokens + $3, output_tokens = output_tokens + $4, \
                       cost_estimated = CASE WHEN $5 = 1 THEN 1 ELSE cost_estimated END, \
                       worker_stuck_count = CASE WHEN $6 = 1 THEN 0 ELSE worker_stuck_count + $7 END WHERE id = $8",
                )
                .bind(at)
                .bind(*cost)
                .bind(*input)
                .bind(*output)
                .bind(*estimated)
                .bind(i64::from(reset))
                .bind(i64::from(stuck))
                .bind(*run_id)
                .execute(&mut *tx)
                .await?;
                if let (Some(verdict), Some(sha)) = (verdict, start_sha) {
                    sqlx::query(
                        "UPDATE executor_runs SET review_verdict = $1, review_sha = $2, updated_at = $3 WHERE id = $4",
                    )
                    .bind(verdict)
                    .bind(sha)
                    .bind(at)
                    .bind(*run_id)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
            }
            row.is_some()
        });
        Ok(closed)
    }

    /// Sessions not yet closed, on every host.
    pub async fn live_worker_sessions(&self) -> Result<Vec<WorkerSession>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                session_columns!(),
                " FROM executor_worker_sessions WHERE ended_at IS NULL ORDER BY id"
            ))
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
            sqlx::query(concat!(
                "SELECT ",
                session_columns!(),
                " FROM executor_worker_sessions WHERE run_id = $1 ORDER BY id"
            ))
            .bind(run_id)
            .fetch_all(p)
            .await?
            .iter()
            .map(session_from_row)
            .collect()
        })
    }

    /// Dollars spent by workers and analyses that started since `since` (the daily budget).
    pub async fn spent_since(&self, since: DateTime<Utc>) -> Result<f64> {
        let v: Option<f64> = on_pool!(self, |p| {
            sqlx::query_scalar(
                "SELECT sum(cost_usd) FROM (SELECT cost_usd FROM executor_worker_sessions WHERE started_at >= $1 \
                 UNION ALL SELECT cost_usd FROM executor_analysis_sessions WHERE started_at >= $1) AS spent",
            )
                .bind(since)
                .fetch_one(p)
                .await?
        });
        Ok(v.unwrap_or(0.0))
    }
}
