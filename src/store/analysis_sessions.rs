//! Analysis sessions: one row per agent process that triaged (or tried to triage) a task — its process,
//! so that a restarted analyzer can stop an orphan; its work log; and its cost, which counts in the daily
//! budget like a worker's.

use chrono::{DateTime, Utc};

use super::row::{Cols, narrow};
use super::workers::parse_col;
use super::{Result, Store, now, on_pool};
use crate::domain::{EndReason, TaskGid};

macro_rules! analysis_session_columns {
    () => {
        "id, task_gid, agent, host, pid, pid_start_time, log_path, session_id, started_at, ended_at, end_reason, cost_usd, input_tokens, output_tokens, result_error"
    };
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AnalysisSession {
    pub id: i64,
    pub task_gid: TaskGid,
    pub agent: String,
    pub host: String,
    pub pid: Option<i32>,
    pub pid_start_time: Option<i64>,
    pub log_path: Option<String>,
    pub session_id: Option<String>,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub end_reason: Option<EndReason>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Why its answer could not be used, if it could not.
    pub result_error: Option<String>,
}

/// How an analysis session ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnalysisEnd {
    pub reason: Option<EndReason>,
    pub session_id: Option<String>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub result_error: Option<String>,
}

fn from_row(r: &impl Cols) -> Result<AnalysisSession> {
    Ok(AnalysisSession {
        id: r.req_int("id")?,
        task_gid: r.parsed("task_gid")?,
        agent: r.req_text("agent")?,
        host: r.req_text("host")?,
        pid: r.int("pid")?.map(|v| narrow("pid", v)).transpose()?,
        pid_start_time: r.int("pid_start_time")?,
        log_path: r.text("log_path")?,
        session_id: r.text("session_id")?,
        started_at: r.req_time("started_at")?,
        ended_at: r.time("ended_at")?,
        end_reason: r.text("end_reason")?.map(|v| parse_col("end_reason", &v)).transpose()?,
        cost_usd: r.real("cost_usd")?.unwrap_or(0.0),
        input_tokens: r.req_int("input_tokens")?,
        output_tokens: r.req_int("output_tokens")?,
        result_error: r.text("result_error")?,
    })
}

impl Store {
    /// Opens a session for an analysis about to start; returns its id.
    pub async fn begin_analysis_session(&self, gid: &TaskGid, agent: &str, host: &str) -> Result<i64> {
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar(
                "INSERT INTO executor_analysis_sessions (task_gid, agent, host, started_at) \
                 VALUES ($1, $2, $3, $4) RETURNING id",
            )
            .bind(gid.as_str())
            .bind(agent)
            .bind(host)
            .bind(now())
            .fetch_one(p)
            .await?
        }))
    }

    /// Records the agent's process (before it is let run) and its work log.
    pub async fn set_analysis_process(
        &self,
        session: i64,
        pid: i32,
        pid_start_time: Option<i64>,
        log_path: &str,
    ) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_analysis_sessions SET pid = $1, pid_start_time = $2, log_path = $3 WHERE id = $4",
            )
            .bind(i64::from(pid))
            .bind(pid_start_time)
            .bind(log_path)
            .bind(session)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// What a running analysis has spent so far (it counts in the day's budget at once). Never lowers
    /// what was recorded.
    pub async fn record_analysis_usage(
        &self,
        session: i64,
        cost_usd: Option<f64>,
        input_tokens: i64,
        output_tokens: i64,
    ) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_analysis_sessions SET \
                   cost_usd = CASE WHEN $1 > cost_usd THEN $1 ELSE cost_usd END, \
                   input_tokens = CASE WHEN $2 > input_tokens THEN $2 ELSE input_tokens END, \
                   output_tokens = CASE WHEN $3 > output_tokens THEN $3 ELSE output_tokens END \
                 WHERE id = $4 AND ended_at IS NULL",
            )
            .bind(cost_usd.unwrap_or(0.0))
            .bind(input_tokens)
            .bind(output_tokens)
            .bind(session)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// Closes a session (once: a second end of the same session changes nothing). The figures kept are
    /// the larger of the end's and those recorded while it ran (a killed agent reports nothing at the
    /// end).
    pub async fn end_analysis_session(&self, session: i64, end: &AnalysisEnd) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_analysis_sessions SET ended_at = $1, end_reason = $2, session_id = $3, \
                 cost_usd = CASE WHEN $4 > cost_usd THEN $4 ELSE cost_usd END, \
                 input_tokens = CASE WHEN $5 > input_tokens THEN $5 ELSE input_tokens END, \
                 output_tokens = CASE WHEN $6 > output_tokens THEN $6 ELSE output_tokens END, \
                 result_error = $7 WHERE id = $8 AND ended_at IS NULL",
            )
            .bind(now())
            .bind(end.reason.map(|r| r.as_str()))
            .bind(end.session_id.as_deref())
            .bind(end.cost_usd)
            .bind(end.input_tokens)
            .bind(end.output_tokens)
            .bind(end.result_error.as_deref())
            .bind(session)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// The sessions of this machine that have not ended, by their analyzer's `host` (`HOST:PID`, or a
    /// bare `HOST`): the caller tells a live analyzer's from a dead one's.
    pub async fn open_analysis_sessions(&self, host: &str) -> Result<Vec<AnalysisSession>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                analysis_session_columns!(),
                " FROM executor_analysis_sessions WHERE ended_at IS NULL \
                   AND (host = $1 OR substr(host, 1, length($1) + 1) = $1 || ':') ORDER BY id"
            ))
            .bind(host)
            .fetch_all(p)
            .await?
            .iter()
            .map(from_row)
            .collect()
        })
    }

    /// A task's analysis sessions, oldest first (`queue show`).
    pub async fn analysis_sessions(&self, gid: &TaskGid) -> Result<Vec<AnalysisSession>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                analysis_session_columns!(),
                " FROM executor_analysis_sessions WHERE task_gid = $1 ORDER BY id"
            ))
            .bind(gid.as_str())
            .fetch_all(p)
            .await?
            .iter()
            .map(from_row)
            .collect()
        })
    }
}
