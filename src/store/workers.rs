//! Worker sessions: one row per agent process over a run's life, so that a restarted runner can tell a
//! live worker from a dead one, and cost adds up per run and per day.

use chrono::{DateTime, Utc};

use super::columns::session_columns;
use super::now as now_utc;
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
    /// The runner instance supervising it; `None` for a worker run by hand.
    pub runner_id: Option<String>,
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
/// ends in `WHERE id = $k`, the session id being its last parameter; the holder follows it. A runner
/// (`Some(owner)`) writes only while it holds the run's live lease (checked in the same statements);
/// `None` (a worker run by hand) always writes.
macro_rules! session_and_run {
    ($store:expr, $session:expr, $holder:expr, $session_sql:literal, [$($sb:expr),*], $run_sql:literal, [$($rb:expr),*]) => {{
        let holder: Option<&str> = $holder;
        let sb = <[&str]>::len(&[$(stringify!($sb)),*]) as u8;
        let rb = <[&str]>::len(&[$(stringify!($rb)),*]) as u8;
        let session_sql = format!("{} AND {}", $session_sql, session_fence(&$store.pool, sb + 2));
        let run_sql = format!("{} AND {}", $run_sql, $store.pool.fence_sql(rb + 2));
        let written = on_pool!($store, |p| {
            let mut tx = p.begin_write().await?;
            let n = sqlx::query(&session_sql)$(.bind($sb))*.bind($session).bind(holder).execute(&mut *tx).await?.rows_affected();
            sqlx::query(&run_sql)$(.bind($rb))*.bind($session).bind(holder).execute(&mut *tx).await?;
            tx.commit().await?;
            n > 0
        });
        if written { Ok(()) } else { Err($store.session_write_refused($session, holder).await) }
    }};
}

/// The condition "the session's run is leased to the owner in parameter `$n`, live" on
/// `executor_worker_sessions` (always true for `$n` NULL). A run a human abandoned is nobody's: the
/// runner that supervises its worker still records how the worker ended.
fn session_fence(pool: &super::Pool, n: u8) -> String {
    format!(
        "(${n} IS NULL OR EXISTS (SELECT 1 FROM executor_runs r WHERE r.id = executor_worker_sessions.run_id \
           AND ((r.lease_owner = ${n} AND r.lease_expires_at > {}) OR (r.lease_owner IS NULL AND r.state = 'abandoned'))))",
        pool.now_sql()
    )
}

/// What a runner may take for a new worker: its host's limit and the whole cluster's.
#[derive(Debug, Clone)]
pub struct WorkerSlot<'a> {
    /// The runner instance that will supervise it (and must hold the run's lease).
    pub runner: &'a str,
    pub host: &'a str,
    /// `runner.max_workers`: live workers on this host, whichever runner supervises them.
    pub host_max: u32,
    /// `cluster.max_workers`: live workers on every host.
    pub cluster_max: Option<u32>,
}

/// What [`Store::begin_runner_worker`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerBegin {
    Started(Box<WorkerSession>),
    /// The run already has a live worker.
    RunBusy,
    /// Every slot is taken; the sentence says which limit.
    NoSlot(String),
    /// The runner no longer holds the run's lease.
    LeaseLost,
}

/// A constant key for PostgreSQL's advisory lock that serialises taking worker slots across hosts.
pub const SLOT_LOCK: i64 = 0x6578_6563_736c_6f74; // "execslot"

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
        runner_id: None,
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
        runner_id: r.text("runner_id")?,
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

    /// Opens a worker session for a runner's run, within the worker limits, under a lock so that two
    /// hosts cannot both take the last slot: only while `slot.runner` holds the run's live lease, while
    /// the run has no live worker, and while this host and the cluster have a free slot. Live workers
    /// are counted from the database — sessions not ended whose runner is alive (or that were started by
    /// hand) — never from one process's memory.
    pub async fn begin_runner_worker(
        &self,
        run_id: i64,
        kind: WorkerKind,
        agent: &str,
        slot: &WorkerSlot<'_>,
        start: &SessionStart,
    ) -> Result<WorkerBegin> {
        let now = self.pool.now_sql();
        let held = format!(
            "SELECT count(*) FROM executor_runs WHERE id = $1 AND lease_owner = $2 AND lease_expires_at > {now}"
        );
        let counts = live_worker_counts_sql(&self.pool);
        let postgres = matches!(self.pool, super::Pool::Postgres(_));
        let began = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(SLOT_LOCK).execute(&mut *tx).await?;
            }
            let held: i64 =
                sqlx::query_scalar(&held).bind(run_id).bind(slot.runner).fetch_one(&mut *tx).await?;
            if held == 0 {
                return Ok(WorkerBegin::LeaseLost);
            }
            let (all, here): (i64, i64) = sqlx::query_as(&counts).bind(slot.host).fetch_one(&mut *tx).await?;
            if let Some(why) = no_slot(slot, all, here) {
                return Ok(WorkerBegin::NoSlot(why));
            }
            let id: Option<i64> = sqlx::query_scalar(
                "INSERT INTO executor_worker_sessions (run_id, kind, agent, host, runner_id, started_at, start_sha, resumed_session) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (run_id) WHERE ended_at IS NULL DO NOTHING RETURNING id",
            )
            .bind(run_id)
            .bind(kind.as_str())
            .bind(agent)
            .bind(slot.host)
            .bind(slot.runner)
            .bind(now_utc())
            .bind(start.start_sha.as_deref())
            .bind(start.resumed_session.as_deref())
            .fetch_optional(&mut *tx)
            .await?;
            tx.commit().await?;
            id
        });
        match began {
            Some(id) => Ok(WorkerBegin::Started(Box::new(self.worker_session(id).await?))),
            None => Ok(WorkerBegin::RunBusy),
        }
    }

    /// How many more workers `slot`'s host may start now, by both limits (what a runner claims runs
    /// that need a worker for; [`begin_runner_worker`](Self::begin_runner_worker) decides).
    pub async fn free_worker_slots(&self, slot: &WorkerSlot<'_>) -> Result<u32> {
        let counts = live_worker_counts_sql(&self.pool);
        let (all, here): (i64, i64) =
            on_pool!(self, |p| sqlx::query_as(&counts).bind(slot.host).fetch_one(p).await?);
        let free = |max: u32, used: i64| u32::try_from(i64::from(max) - used).unwrap_or(0);
        let host = free(slot.host_max, here);
        Ok(slot.cluster_max.map_or(host, |m| host.min(free(m, all))))
    }

    /// Why a fenced write on a session changed nothing: the session is unknown, or `holder` lost the
    /// run's lease (logged: the sign of a paused or cut-off runner).
    async fn session_write_refused(&self, session: i64, holder: Option<&str>) -> StoreError {
        match (self.find_worker_session(session).await, holder) {
            (Ok(Some(s)), Some(owner)) => {
                tracing::warn!(
                    run = s.run_id,
                    session,
                    owner,
                    "a worker write was refused: the runner no longer holds the run's lease"
                );
                StoreError::LeaseLost(s.run_id)
            }
            (Err(e), _) => e,
            (Ok(Some(s)), None) if s.ended_at.is_some() => {
                StoreError::Refused(format!("worker session {session} has ended; nothing was written"))
            }
            _ => StoreError::Corrupt(format!("worker session {session} vanished")),
        }
    }

    /// `runner` now supervises a live session left by a runner that died (it holds the session's run):
    /// counted as its worker, and ended as `host_lost` with it should its host be lost.
    pub async fn adopt_worker_session(&self, session: i64, runner: &str) -> Result<()> {
        let sql = format!(
            "UPDATE executor_worker_sessions SET runner_id = $1 WHERE id = $2 AND ended_at IS NULL AND {}",
            session_fence(&self.pool, 1)
        );
        on_pool!(self, |p| {
            sqlx::query(&sql).bind(runner).bind(session).execute(p).await?;
        });
        Ok(())
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
        self.find_worker_session(id)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("worker session {id} vanished")))
    }

    /// Records the process of a session (and mirrors the pid on the run, as the seed's `worker_pid`).
    pub async fn set_worker_process(
        &self,
        session: i64,
        holder: Option<&str>,
        pid: i32,
        pid_start_time: Option<i64>,
        output_path: &str,
        log_path: &str,
    ) -> Result<()> {
        let at = now();
        session_and_run!(
            self,
            session,
            holder,
            "UPDATE executor_worker_sessions SET pid = $1, pid_start_time = $2, output_path = $3, log_path = $4 WHERE id = $5",
            [i64::from(pid), pid_start_time, output_path, log_path],
            "UPDATE executor_runs SET worker_pid = $1, worker_last_update = $2, updated_at = $2 WHERE id = (SELECT run_id FROM executor_worker_sessions WHERE id = $3)",
            [i64::from(pid), at]
        )
    }

    /// Records the agent's own session id (for resume) on the session. The run's `worker_session_id`
    /// mirrors only the task's own work (`queued`, `in_progress`): a review's or a fix's thread is never
    /// what a later `in_progress` worker continues.
    pub async fn set_worker_agent_session(
        &self,
        session: i64,
        holder: Option<&str>,
        agent_session_id: &str,
    ) -> Result<()> {
        session_and_run!(
            self,
            session,
            holder,
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
        holder: Option<&str>,
        cost_usd: Option<f64>,
        input_tokens: i64,
        output_tokens: i64,
        cost_estimated: bool,
    ) -> Result<()> {
        let sql = format!(
            "UPDATE executor_worker_sessions SET cost_usd = COALESCE($1, cost_usd), input_tokens = $2, \
               output_tokens = $3, cost_estimated = CASE WHEN $1 IS NULL THEN cost_estimated ELSE $4 END \
             WHERE id = $5 AND ended_at IS NULL AND {}",
            session_fence(&self.pool, 6)
        );
        on_pool!(self, |p| {
            sqlx::query(&sql)
                .bind(cost_usd)
                .bind(input_tokens)
                .bind(output_tokens)
                .bind(i64::from(cost_estimated))
                .bind(session)
                .bind(holder)
                .execute(p)
                .await?;
        });
        Ok(())
    }

    /// Notes that the worker produced output at `at` (the watchdog's evidence of life) and how far its
    /// output has been read. Only while the session is open: an ended session's offset marks what its
    /// usage was read to, which only [`Store::settle_lost_spend`] moves on.
    pub async fn touch_worker_output(
        &self,
        session: i64,
        holder: Option<&str>,
        at: DateTime<Utc>,
        offset: i64,
    ) -> Result<()> {
        session_and_run!(
            self,
            session,
            holder,
            "UPDATE executor_worker_sessions SET last_output_at = $1, output_offset = $2 WHERE id = $3 AND ended_at IS NULL",
            [at, offset],
            "UPDATE executor_runs SET worker_last_update = $1 WHERE id = (SELECT run_id FROM executor_worker_sessions WHERE id = $2)",
            [at]
        )
    }

    /// Closes a session: records how it ended (and a review's verdict), adds its cost and tokens to the
    /// run, clears the run's pid, and counts a stuck attempt when it was one, all in one transaction. A
    /// verdict becomes the run's for the head the session started at, never the run's current head.
    /// Closing an already closed session changes nothing (`false`). A runner (`holder`) that no longer
    /// holds the run's lease closes nothing and gets `LeaseLost`: whoever took the run over decided how
    /// the session ended.
    pub async fn end_worker_session(
        &self,
        session: i64,
        holder: Option<&str>,
        end: &WorkerEnd,
    ) -> Result<bool> {
        let at = now();
        let verdict = end.verdict.map(|v| v.as_str());
        let close = format!(
            "UPDATE executor_worker_sessions SET ended_at = $1, end_reason = $2, exit_code = $3, num_turns = $4, \
               cost_usd = CASE WHEN ($8 = 0 AND $5 > 0) OR $5 > cost_usd THEN $5 ELSE cost_usd END, \
               input_tokens = CASE WHEN ($8 = 0 AND $5 > 0) OR $6 > input_tokens THEN $6 ELSE input_tokens END, \
               output_tokens = CASE WHEN ($8 = 0 AND $5 > 0) OR $7 > output_tokens THEN $7 ELSE output_tokens END, \
               cost_estimated = CASE WHEN ($8 = 0 AND $5 > 0) OR $5 >= cost_usd THEN $8 ELSE cost_estimated END, \
               result_json = $9, result_error = $10, verdict = $11 \
             WHERE id = $12 AND ended_at IS NULL AND {} \
             RETURNING run_id, cost_usd, input_tokens, output_tokens, cost_estimated, start_sha",
            session_fence(&self.pool, 13)
        );
        let closed = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            // The agent's own final figure ($8 = 0 with a cost) is the truth. Otherwise the usage recorded
            // while the worker ran may exceed what its end reports (killed before its final report): the
            // larger figure is the truer one.
            let row: Option<(i64, f64, i64, i64, i64, Option<String>)> = sqlx::query_as(&close)
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
                .bind(holder)
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
        if !closed
            && holder.is_some()
            && self.find_worker_session(session).await?.is_some_and(|s| s.ended_at.is_none())
        {
            return Err(self.session_write_refused(session, holder).await);
        }
        Ok(closed)
    }

    /// The sessions of `host` ended as `host_lost` that had a process: their agents may have outlived
    /// the runner that was declared lost, with no supervisor and no session counting them.
    pub async fn host_lost_sessions(&self, host: &str) -> Result<Vec<WorkerSession>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                session_columns!(),
                " FROM executor_worker_sessions WHERE host = $1 AND end_reason = 'host_lost' AND pid IS NOT NULL \
                 ORDER BY id"
            ))
            .bind(host)
            .fetch_all(p)
            .await?
            .iter()
            .map(session_from_row)
            .collect()
        })
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

/// Live workers (all hosts, and host `$1`): sessions not ended whose runner is alive by the database's
/// clock, or that were started by hand.
fn live_worker_counts_sql(pool: &super::Pool) -> String {
    format!(
        "SELECT count(*), COALESCE(sum(CASE WHEN host = $1 THEN 1 ELSE 0 END), 0) FROM executor_worker_sessions \
         WHERE ended_at IS NULL AND (runner_id IS NULL OR runner_id IN (SELECT id FROM executor_runners \
           WHERE ended_at IS NULL AND alive_until > {}))",
        pool.now_sql()
    )
}

/// Which limit leaves no slot, in a sentence, or `None` when a slot is free.
fn no_slot(slot: &WorkerSlot<'_>, all: i64, here: i64) -> Option<String> {
    if here >= i64::from(slot.host_max) {
        return Some(format!("host {} runs {here} of its runner.max_workers = {}", slot.host, slot.host_max));
    }
    match slot.cluster_max {
        Some(max) if all >= i64::from(max) => {
            Some(format!("all hosts together run {all} of cluster.max_workers = {max}"))
        }
        _ => None,
    }
}
