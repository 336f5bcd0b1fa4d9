//! The runs board (`executor serve`'s `/runs`): every run with what the board shows of it, in one
//! statement, so a board of 1,000 runs costs one query and not one per run.

use chrono::{DateTime, Utc};

use super::columns::run_columns;
use super::row::Cols;
use super::runs::run_from_row;
use super::{Result, Store, on_pool};
use crate::domain::{Run, WorkerKind};

/// One run on the board: its row, what the runner last decided and saw, and its live worker.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BoardRow {
    pub run: Run,
    pub last_decision: Option<String>,
    pub last_decision_at: Option<DateTime<Utc>>,
    /// The pull request as last observed, as JSON (see `forge::PrSnapshot`).
    pub last_snapshot: Option<String>,
    pub budget_stopped: bool,
    /// The worker session not yet ended, if any (at most one per run: a unique index).
    pub live_worker: Option<LiveWorker>,
}

/// The live worker of a run, as the board shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LiveWorker {
    /// The worker session's id (`/sessions/{id}/log`).
    pub session: i64,
    pub kind: WorkerKind,
    pub started_at: DateTime<Utc>,
    pub log_path: Option<String>,
}

fn board_row(r: &impl Cols) -> Result<BoardRow> {
    let live_worker = match r.int("live_id")? {
        Some(session) => Some(LiveWorker {
            session,
            kind: r.parsed("live_kind")?,
            started_at: r.req_time("live_started_at")?,
            log_path: r.text("live_log_path")?,
        }),
        None => None,
    };
    Ok(BoardRow {
        run: run_from_row(r)?,
        last_decision: r.text("last_decision")?,
        last_decision_at: r.time("last_decision_at")?,
        last_snapshot: r.text("last_snapshot")?,
        budget_stopped: r.int("budget_stopped")?.unwrap_or(0) != 0,
        live_worker,
    })
}

impl Store {
    /// The newest `limit` runs, newest first, each with its memory and its live worker session. One
    /// statement: the live session is a LEFT JOIN on the sessions not yet ended, whose columns are
    /// renamed so that the run's own columns stay unambiguous.
    pub async fn runs_board(&self, limit: i64) -> Result<Vec<BoardRow>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                run_columns!(),
                ", live_id, live_kind, live_started_at, live_log_path FROM executor_runs \
                 LEFT JOIN (SELECT run_id AS live_run, id AS live_id, kind AS live_kind, \
                   started_at AS live_started_at, log_path AS live_log_path \
                   FROM executor_worker_sessions WHERE ended_at IS NULL) AS live ON live.live_run = executor_runs.id \
                 ORDER BY id DESC LIMIT $1"
            ))
            .bind(limit)
            .fetch_all(p)
            .await?
            .iter()
            .map(board_row)
            .collect()
        })
    }
}
