//! The runs board (`executor serve`'s `/runs`): every run with what the board shows of it — its task's
//! text, its memory, its worker sessions summed, its last worker — in one statement, so a board of
//! 2,000 runs costs one query and not one per run.

use chrono::{DateTime, Utc};

use super::columns::run_columns;
use super::row::Cols;
use super::runs::run_from_row;
use super::{Pool, Result, Store, on_pool};
use crate::domain::{EndReason, Run, RunState, WorkerKind};

/// One run on the board: its row, its task's text, what the runner last decided and saw, and its
/// workers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BoardRow {
    pub run: Run,
    /// The start of its task's description (at most [`TASK_TEXT_CHARS`] characters), for a title.
    pub task_text: Option<String>,
    pub last_decision: Option<String>,
    pub last_decision_at: Option<DateTime<Utc>>,
    /// The pull request as last observed, as JSON (see `forge::PrSnapshot`).
    pub last_snapshot: Option<String>,
    pub budget_stopped: bool,
    /// The worker session not yet ended, if any (at most one per run: a unique index).
    pub live_worker: Option<LiveWorker>,
    /// The run's newest worker session: the live one, or else the last that ended.
    pub last_worker: Option<LastWorker>,
    /// The run's worker sessions, summed (the live one's spend so far included).
    pub workers: WorkerTotals,
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

/// A run's newest worker session, live or ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LastWorker {
    pub session: i64,
    pub kind: WorkerKind,
    pub started_at: DateTime<Utc>,
    /// `None` while it runs.
    pub ended_at: Option<DateTime<Utc>>,
    pub end_reason: Option<EndReason>,
    pub log_path: Option<String>,
}

/// A run's worker sessions added up.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct WorkerTotals {
    pub sessions: i64,
    pub cost_usd: f64,
    /// Some of `cost_usd` is executor's estimate from tokens.
    pub cost_estimated: bool,
    pub input_tokens: i64,
    pub output_tokens: i64,
}

/// How much of a task's description the board reads: enough for its first line as a title. (The
/// statement's `substr(description, 1, 300)` says it again: its SQL is a literal.)
pub const TASK_TEXT_CHARS: usize = 300;

/// Which runs a board shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoardQuery {
    /// Only runs in this state; `None` for every state.
    pub state: Option<RunState>,
    /// The newest this many.
    pub limit: i64,
    /// After skipping this many newer ones (a page).
    pub offset: i64,
    /// Leave out the ended runs (complete, abandoned): a board folds them.
    pub unended: bool,
    /// Only runs whose task gid, task text, branch or pull request URL holds this text (any case).
    pub search: Option<String>,
}

/// The ended states a board folds (`BoardQuery::unended`), as the statement names them.
pub const ENDED_STATES: [RunState; 2] = [RunState::Complete, RunState::Abandoned];

/// The `WHERE` clause for `query` (fixed text chosen here; the state and the search travel as bound
/// values, numbered from `$first`) and the values of those placeholders.
fn board_where(pool: &Pool, query: &BoardQuery, first: usize) -> (String, Vec<String>) {
    let mut conditions: Vec<String> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    if let Some(state) = query.state {
        values.push(state.as_str().to_string());
        conditions.push(format!("state = ${}", first + values.len() - 1));
    }
    if query.unended {
        conditions.push("state NOT IN ('complete', 'abandoned')".to_string());
    }
    if let Some(text) = query.search.as_deref().filter(|t| !t.is_empty()) {
        values.push(text.to_lowercase());
        let n = first + values.len() - 1;
        // Substring, not LIKE: a `%` or `_` the person typed is a character like any other.
        let holds = |col: &str| match pool {
            Pool::Sqlite(_) => format!("instr(lower({col}), ${n}) > 0"),
            Pool::Postgres(_) => format!("strpos(lower({col}), ${n}) > 0"),
        };
        conditions.push(format!(
            "({} OR {} OR {} OR task_gid IN (SELECT task_gid FROM executor_queue WHERE {}))",
            holds("task_gid"),
            holds("branch_name"),
            holds("pr_url"),
            holds("description"),
        ));
    }
    let sql =
        if conditions.is_empty() { String::new() } else { format!("WHERE {}", conditions.join(" AND ")) };
    (sql, values)
}

fn board_row(r: &impl Cols) -> Result<BoardRow> {
    let last_worker = match r.int("last_id")? {
        Some(session) => Some(LastWorker {
            session,
            kind: r.parsed("last_kind")?,
            started_at: r.req_time("last_started_at")?,
            ended_at: r.time("last_ended_at")?,
            end_reason: r.text("last_end_reason")?.map(|_| r.parsed("last_end_reason")).transpose()?,
            log_path: r.text("last_log_path")?,
        }),
        None => None,
    };
    // Sessions start only once the one before has ended (one live session per run, a unique index),
    // so a live session is always the newest.
    let live_worker = last_worker.as_ref().filter(|w| w.ended_at.is_none()).map(|w| LiveWorker {
        session: w.session,
        kind: w.kind,
        started_at: w.started_at,
        log_path: w.log_path.clone(),
    });
    Ok(BoardRow {
        run: run_from_row(r)?,
        task_text: r.text("task_text")?,
        last_decision: r.text("last_decision")?,
        last_decision_at: r.time("last_decision_at")?,
        last_snapshot: r.text("last_snapshot")?,
        budget_stopped: r.int("budget_stopped")?.unwrap_or(0) != 0,
        live_worker,
        last_worker,
        workers: WorkerTotals {
            sessions: r.int("w_sessions")?.unwrap_or(0),
            cost_usd: r.real("w_cost")?.unwrap_or(0.0),
            cost_estimated: r.int("w_estimated")?.unwrap_or(0) != 0,
            input_tokens: r.int("w_input")?.unwrap_or(0),
            output_tokens: r.int("w_output")?.unwrap_or(0),
        },
    })
}

/// The board's statement after its `WITH board AS (…)`: the chosen runs, each joined to its task's text,
/// its sessions summed and its newest session. Every joined column is renamed so that the run's own
/// columns stay unambiguous; the sums read only the chosen runs' sessions (by the `(run_id, id)` index).
macro_rules! board_select {
    () => {
        concat!(
            "SELECT ",
            run_columns!(),
            ", task_text, w_sessions, w_cost, w_estimated, w_input, w_output, \
               last_id, last_kind, last_started_at, last_ended_at, last_end_reason, last_log_path \
             FROM board \
             LEFT JOIN (SELECT task_gid AS q_gid, substr(description, 1, 300) AS task_text FROM executor_queue) AS q \
               ON q.q_gid = board.task_gid \
             LEFT JOIN (SELECT run_id AS w_run, count(*) AS w_sessions, sum(cost_usd) AS w_cost, \
                 max(cost_estimated) AS w_estimated, CAST(sum(input_tokens) AS BIGINT) AS w_input, \
                 CAST(sum(output_tokens) AS BIGINT) AS w_output, \
                 max(id) AS w_last \
               FROM executor_worker_sessions WHERE run_id IN (SELECT id FROM board) GROUP BY run_id) AS w \
               ON w.w_run = board.id \
             LEFT JOIN (SELECT id AS last_id, kind AS last_kind, started_at AS last_started_at, \
                 ended_at AS last_ended_at, end_reason AS last_end_reason, log_path AS last_log_path \
               FROM executor_worker_sessions) AS lw ON lw.last_id = w.w_last \
             ORDER BY id DESC"
        )
    };
}

impl Store {
    /// The newest `limit` runs of every state, newest first (see [`Store::runs_board_of`]).
    pub async fn runs_board(&self, limit: i64) -> Result<Vec<BoardRow>> {
        self.runs_board_of(BoardQuery { limit, ..Default::default() }).await
    }

    /// How many runs are in each state (states with none left out), for the board's filter: one
    /// statement over the runs only (`executor_runs_state` index).
    pub async fn run_state_counts(&self) -> Result<Vec<(String, i64)>> {
        Ok(on_pool!(self, |p| {
            sqlx::query_as("SELECT state, count(*) FROM executor_runs GROUP BY state ORDER BY state")
                .fetch_all(p)
                .await?
        }))
    }

    /// The newest `query.limit` runs after `query.offset` (of `query.state`, unended, matching
    /// `query.search`, as asked), newest first, each with its task's text, its memory, its sessions
    /// summed and its newest session. One statement whatever the number of runs.
    pub async fn runs_board_of(&self, query: BoardQuery) -> Result<Vec<BoardRow>> {
        // $1 and $2 are the limit and the offset.
        let (conditions, values) = board_where(&self.pool, &query, 3);
        let sql = format!(
            "WITH board AS (SELECT {} FROM executor_runs {conditions} ORDER BY id DESC LIMIT $1 OFFSET $2) {}",
            run_columns!(),
            board_select!()
        );
        on_pool!(self, |p| {
            let mut q = sqlx::query(&sql).bind(query.limit).bind(query.offset);
            for v in &values {
                q = q.bind(v);
            }
            let rows = q.fetch_all(p).await?;
            rows.iter().map(board_row).collect()
        })
    }

    /// How many runs `query` finds, whatever its limit and offset: the board's pages.
    pub async fn count_board(&self, query: &BoardQuery) -> Result<i64> {
        let (conditions, values) = board_where(&self.pool, query, 1);
        let sql = format!("SELECT count(*) FROM executor_runs {conditions}");
        Ok(on_pool!(self, |p| {
            let mut q = sqlx::query_as::<_, (i64,)>(&sql);
            for v in &values {
                q = q.bind(v);
            }
            q.fetch_one(p).await?.0
        }))
    }
}
