//! Runs: creating them from approved tasks, moving them through their state machine, and leases that
//! let several runner processes (on several hosts) share one database safely.

use chrono::{DateTime, Utc};

use super::clock::secs;
use super::columns::run_columns;
use super::events::{NewEvent, insert_event, kind};
use super::row::{Cols, narrow};
use super::{BeginWrite, Pool, Result, Store, StoreError, now, on_pool};
use crate::domain::{Actor, By, QueueStatus, Run, RunState, TaskGid};

#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub state: Option<RunState>,
    pub task_gid: Option<TaskGid>,
    pub limit: Option<i64>,
}

/// Counts by queue status and by run state, like the seed's "Current State".
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct StatusCounts {
    pub queue: Vec<(String, i64)>,
    pub runs: Vec<(String, i64)>,
}

type Counts = Vec<(String, i64)>;

pub(crate) fn run_from_row(r: &impl Cols) -> Result<Run> {
    Ok(Run {
        id: r.req_int("id")?,
        task_gid: r.parsed("task_gid")?,
        repo: r.text("repo")?,
        worktree_path: r.text("worktree_path")?,
        branch_name: r.text("branch_name")?,
        pr_url: r.text("pr_url")?,
        pr_number: r.int("pr_number")?,
        thread_id: r.text("thread_id")?,
        started_at: r.req_time("started_at")?,
        updated_at: r.req_time("updated_at")?,
        completed_at: r.time("completed_at")?,
        state: r.parsed("state")?,
        ci_attempts: narrow("ci_attempts", r.req_int("ci_attempts")?)?,
        worker_session_id: r.text("worker_session_id")?,
        worker_last_update: r.time("worker_last_update")?,
        worker_pid: r.int("worker_pid")?.map(|v| narrow("worker_pid", v)).transpose()?,
        worker_stuck_count: narrow("worker_stuck_count", r.req_int("worker_stuck_count")?)?,
        head_sha: r.text("head_sha")?,
        head_seen_at: r.time("head_seen_at")?,
        review_verdict: r
            .text("review_verdict")?
            .map(|v| v.parse().map_err(|e| StoreError::Corrupt(format!("column review_verdict: {e}"))))
            .transpose()?,
        review_sha: r.text("review_sha")?,
        lease_owner: r.text("lease_owner")?,
        lease_expires_at: r.time("lease_expires_at")?,
        cost_usd: r.real("cost_usd")?.unwrap_or(0.0),
        cost_estimated: r.int("cost_estimated")?.unwrap_or(0) != 0,
        input_tokens: r.int("input_tokens")?.unwrap_or(0),
        output_tokens: r.int("output_tokens")?.unwrap_or(0),
    })
}

/// Links run `$id`, just inserted, to its task `$gid` and records its creation (as `queued`, the state
/// every run is born in), in the write transaction `$tx`; evaluates to that event. Shared by a new run and
/// an imported one.
macro_rules! link_new_run {
    ($store:expr, $tx:ident, $gid:expr, $id:expr, $at:expr, $actor:expr, $reason:expr) => {{
        sqlx::query("UPDATE executor_queue SET executor_run_id = $1, updated_at = $2 WHERE task_gid = $3")
            .bind($id)
            .bind($at)
            .bind($gid.as_str())
            .execute(&mut *$tx)
            .await?;
        let created = $crate::store::events::NewEvent {
            actor: $actor,
            actor_id: None,
            task_gid: Some($gid.as_str()),
            run_id: Some($id),
            kind: $crate::store::events::kind::RUN_CREATED,
            from_state: None,
            to_state: Some($crate::domain::RunState::Queued.as_str()),
            reason: Some($reason),
        };
        $crate::store::events::insert_event!($store, &mut *$tx, created)?;
        created
    }};
}
pub(crate) use link_new_run;

impl Store {
    /// Turns an approved task into a run. Atomic and unique: whatever the number of processes trying at
    /// once, a task gets at most one active run (a partial unique index enforces it, and the task's
    /// `executor_run_id` is set in the same transaction). Returns `None` when the task is not approved or
    /// already has a run.
    pub async fn create_run_for_task(&self, gid: &TaskGid, actor: Actor) -> Result<Option<Run>> {
        let at = now();
        let id: Option<i64> = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let id: Option<i64> = sqlx::query_scalar(
                "INSERT INTO executor_runs (task_gid, repo, started_at, updated_at, state) \
                 SELECT task_gid, repo, $2, $2, 'queued' FROM executor_queue \
                 WHERE task_gid = $1 AND status = 'approved' AND executor_run_id IS NULL \
                 ON CONFLICT (task_gid) WHERE state IN ('queued','in_progress','pr','complete') DO NOTHING \
                 RETURNING id",
            )
            .bind(gid.as_str())
            .bind(at)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(id) = id {
                link_new_run!(self, tx, gid, id, at, actor, "task approved");
                tx.commit().await?;
            }
            id
        });
        match id {
            Some(id) => Ok(Some(self.run(id).await?)),
            None => Ok(None),
        }
    }

    /// Approved tasks that have no run yet, in the order the runner should start them.
    pub async fn approved_tasks_without_run(&self, limit: i64) -> Result<Vec<TaskGid>> {
        let gids: Vec<String> = on_pool!(self, |p| {
            sqlx::query_scalar(
                "SELECT task_gid FROM executor_queue WHERE status = 'approved' AND executor_run_id IS NULL \
                 ORDER BY priority IS NULL, priority, added_at, id LIMIT $1",
            )
            .bind(limit)
            .fetch_all(p)
            .await?
        });
        gids.iter().map(|g| TaskGid::parse(g).map_err(|e| StoreError::Corrupt(e.to_string()))).collect()
    }

    pub async fn find_run(&self, id: i64) -> Result<Option<Run>> {
        on_pool!(self, |p| {
            sqlx::query(concat!("SELECT ", run_columns!(), " FROM executor_runs WHERE id = $1"))
                .bind(id)
                .fetch_optional(p)
                .await?
                .map(|r| run_from_row(&r))
                .transpose()
        })
    }

    pub async fn run(&self, id: i64) -> Result<Run> {
        self.find_run(id).await?.ok_or(StoreError::UnknownRun(id))
    }

    /// Runs, newest first.
    pub async fn list_runs(&self, f: &RunFilter) -> Result<Vec<Run>> {
        Ok(self.list_runs_with_decisions(f).await?.into_iter().map(|(run, _)| run).collect())
    }

    /// [`list_runs`](Self::list_runs), each run with its last decision, in the same one query (a listing
    /// never asks per run).
    pub async fn list_runs_with_decisions(&self, f: &RunFilter) -> Result<Vec<(Run, Option<String>)>> {
        let state = f.state.map(|s| s.as_str());
        let gid = f.task_gid.as_ref().map(|g| g.as_str());
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                run_columns!(),
                " FROM executor_runs WHERE ($1 IS NULL OR state = $1) AND ($2 IS NULL OR task_gid = $2) \
                 ORDER BY id DESC LIMIT $3"
            ))
            .bind(state)
            .bind(gid)
            .bind(f.limit.unwrap_or(i64::MAX))
            .fetch_all(p)
            .await?
            .iter()
            .map(|row| Ok((run_from_row(row)?, row.text("last_decision")?)))
            .collect()
        })
    }

    /// Runs the runner still drives (every state but abandoned), oldest first.
    pub async fn active_runs(&self) -> Result<Vec<Run>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                run_columns!(),
                " FROM executor_runs WHERE state IN ('queued','in_progress','pr','complete') ORDER BY id"
            ))
            .fetch_all(p)
            .await?
            .iter()
            .map(run_from_row)
            .collect()
        })
    }

    /// The one way a run's state changes. Legal only from `from` (checked against the state machine and,
    /// atomically, against the database); when `holder` is given, only while that lease owner holds the
    /// run. Writes the event in the same transaction. Entering `complete` stamps `completed_at` and marks
    /// the task done; leaving it clears the stamp. Entering `abandoned` frees the lease: nobody drives a
    /// final run.
    pub async fn set_run_state_if(
        &self,
        run_id: i64,
        from: RunState,
        to: RunState,
        holder: Option<&str>,
        by: impl Into<By<'_>>,
        reason: &str,
    ) -> Result<Run> {
        self.move_run_state(run_id, from, to, holder, by.into(), reason, None).await
    }

    /// `set_run_state_if` to `complete`, recording in the same statement the ids of the comments on the
    /// pull request in the observation that decided it (`RunMemory::completion_comment_ids`): a trusted
    /// comment not among them is new since the completion, whatever the forge stamped on it.
    pub async fn complete_run_if(
        &self,
        run_id: i64,
        from: RunState,
        holder: Option<&str>,
        actor: Actor,
        reason: &str,
        seen_comment_ids: &[String],
    ) -> Result<Run> {
        let seen = serde_json::to_string(seen_comment_ids)
            .map_err(|e| StoreError::Corrupt(format!("completion comment ids: {e}")))?;
        self.move_run_state(run_id, from, RunState::Complete, holder, actor.into(), reason, Some(&seen)).await
    }

    /// The one body of a run's state change. `seen`: the JSON list of comment ids to record with a
    /// completion (`None` records none: the run's comments are then judged by time).
    #[allow(clippy::too_many_arguments)]
    async fn move_run_state(
        &self,
        run_id: i64,
        from: RunState,
        to: RunState,
        holder: Option<&str>,
        by: By<'_>,
        reason: &str,
        seen: Option<&str>,
    ) -> Result<Run> {
        from.check(to)?;
        let at = now();
        let completed_at: Option<DateTime<Utc>> = (to == RunState::Complete).then_some(at);
        let sql = format!(
            "UPDATE executor_runs SET state = $1, updated_at = $2, \
               completed_at = CASE WHEN $1 = 'complete' THEN $3 WHEN $1 = 'pr' THEN NULL ELSE completed_at END, \
               completion_comment_ids = CASE WHEN $1 = 'complete' THEN $7 WHEN $1 = 'pr' THEN NULL \
                 ELSE completion_comment_ids END, \
               lease_owner = CASE WHEN $1 = 'abandoned' THEN NULL ELSE lease_owner END, \
               lease_expires_at = CASE WHEN $1 = 'abandoned' THEN NULL ELSE lease_expires_at END \
             WHERE id = $4 AND state = $5 AND {} RETURNING task_gid",
            self.pool.fence_sql(6)
        );
        let changed = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let gid: Option<String> = sqlx::query_scalar(&sql)
                .bind(to.as_str())
                .bind(at)
                .bind(completed_at)
                .bind(run_id)
                .bind(from.as_str())
                .bind(holder)
                .bind(seen)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(gid) = &gid {
                // The runner that holds the lease, or the person who made the change.
                let ev = NewEvent {
                    actor: by.actor,
                    actor_id: holder.or(by.name),
                    task_gid: Some(gid),
                    run_id: Some(run_id),
                    kind: kind::RUN_STATE,
                    from_state: Some(from.as_str()),
                    to_state: Some(to.as_str()),
                    reason: Some(reason),
                };
                insert_event!(self, &mut *tx, ev)?;
                if to == RunState::Complete {
                    // The task's own state machine moves approved → done once; a run that comes back to
                    // pr and completes again finds the task done already.
                    let n = sqlx::query(
                        "UPDATE executor_queue SET status = 'done', updated_at = $1 WHERE task_gid = $2 AND status = 'approved'",
                    )
                    .bind(at)
                    .bind(gid)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                    if n == 1 {
                        let ev = NewEvent {
                            kind: kind::QUEUE_STATUS,
                            from_state: Some(QueueStatus::Approved.as_str()),
                            to_state: Some(QueueStatus::Done.as_str()),
                            ..ev
                        };
                        insert_event!(self, &mut *tx, ev)?;
                    }
                }
                tx.commit().await?;
            }
            gid.is_some()
        });
        if !changed {
            let current = self.run(run_id).await?;
            if current.state != from {
                return Err(StoreError::Conflict(format!(
                    "run {run_id} (expected {from}, found {})",
                    current.state
                )));
            }
            return Err(StoreError::LeaseLost(run_id));
        }
        self.run(run_id).await
    }

    /// Claims one run for `owner` (or renews its claim) when it may (see [`claimable`]). Returns whether
    /// `owner` now holds it.
    pub async fn claim_run(&self, run_id: i64, owner: &str, ttl: std::time::Duration) -> Result<bool> {
        let sql = format!(
            "UPDATE executor_runs SET lease_owner = $1, lease_expires_at = {later}, wants_slot = 0 \
             WHERE id = $3 AND {claimable}",
            later = self.pool.later_sql(2),
            claimable = claimable(&self.pool, 1)
        );
        let n = on_pool!(self, |p| {
            sqlx::query(&sql).bind(owner).bind(secs(ttl)).bind(run_id).execute(p).await?.rows_affected()
        });
        Ok(n == 1)
    }

    /// Claims for `owner`, until the database's clock passes `ttl`, the active runs it may take (see
    /// [`claimable`]): every one that only needs watching, and at most `work_limit` that need a worker
    /// (queued, or let go by a host without a free slot). On PostgreSQL, `SKIP LOCKED` lets runners on
    /// several hosts claim at once, each taking different runs, without waiting for one another.
    /// Returns the ids claimed now (not those `owner` held already).
    pub async fn claim_runs(
        &self,
        owner: &str,
        ttl: std::time::Duration,
        work_limit: u32,
    ) -> Result<Vec<i64>> {
        let lock = if matches!(self.pool, Pool::Postgres(_)) { " FOR UPDATE SKIP LOCKED" } else { "" };
        let c = claimable(&self.pool, 1);
        // The kinds' conditions are those of the partial indexes `executor_runs_to_watch` and
        // `executor_runs_to_work` (migration 0006), word for word, so each claim walks only its own.
        let claim = |kind: &str| {
            format!(
                "UPDATE executor_runs SET lease_owner = $1, lease_expires_at = {later}, wants_slot = 0 \
                 WHERE id IN (SELECT id FROM executor_runs WHERE ({kind}) \
                   AND (lease_owner IS NULL OR lease_owner <> $1) AND {c} ORDER BY id LIMIT $3{lock}) \
                 AND (lease_owner IS NULL OR lease_owner <> $1) AND {c} RETURNING id",
                later = self.pool.later_sql(2),
            )
        };
        let watch = claim("state IN ('in_progress','pr','complete') AND wants_slot = 0");
        let work = claim("state = 'queued' OR (wants_slot = 1 AND state IN ('in_progress','pr','complete'))");
        let mut ids: Vec<i64> = Vec::new();
        on_pool!(self, |p| {
            ids.extend(
                sqlx::query_scalar::<_, i64>(&watch)
                    .bind(owner)
                    .bind(secs(ttl))
                    .bind(MAX_WATCH_CLAIMS)
                    .fetch_all(p)
                    .await?,
            );
            if work_limit > 0 {
                ids.extend(
                    sqlx::query_scalar::<_, i64>(&work)
                        .bind(owner)
                        .bind(secs(ttl))
                        .bind(i64::from(work_limit))
                        .fetch_all(p)
                        .await?,
                );
            }
        });
        ids.sort_unstable();
        Ok(ids)
    }

    /// The active runs whose live lease `owner` holds, oldest first: what its tick drives.
    pub async fn held_runs(&self, owner: &str) -> Result<Vec<Run>> {
        let sql = format!(
            concat!(
                "SELECT ",
                run_columns!(),
                " FROM executor_runs WHERE state IN ('queued','in_progress','pr','complete') AND lease_owner = $1 \
                 AND lease_expires_at > {} ORDER BY id"
            ),
            self.pool.now_sql()
        );
        on_pool!(self, |p| {
            sqlx::query(&sql).bind(owner).fetch_all(p).await?.iter().map(run_from_row).collect()
        })
    }

    /// Whether `owner` holds the run's lease and it is live, by the database's clock.
    pub async fn holds_lease(&self, run_id: i64, owner: &str) -> Result<bool> {
        let sql = format!(
            "SELECT count(*) FROM executor_runs WHERE id = $1 AND lease_owner = $2 AND lease_expires_at > {}",
            self.pool.now_sql()
        );
        let n: i64 =
            on_pool!(self, |p| sqlx::query_scalar(&sql).bind(run_id).bind(owner).fetch_one(p).await?);
        Ok(n == 1)
    }

    /// Gives up `owner`'s lease on a run (no-op if it holds none).
    pub async fn release_run(&self, run_id: i64, owner: &str) -> Result<()> {
        self.let_go(run_id, owner, false).await
    }

    /// Gives up `owner`'s lease on a run that needs a worker its host has no slot for: a runner with a
    /// free slot, on any host, claims it next.
    pub async fn release_run_for_slot(&self, run_id: i64, owner: &str) -> Result<()> {
        self.let_go(run_id, owner, true).await
    }

    async fn let_go(&self, run_id: i64, owner: &str, wants_slot: bool) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_runs SET lease_owner = NULL, lease_expires_at = NULL, wants_slot = $3 \
                 WHERE id = $1 AND lease_owner = $2",
            )
            .bind(run_id)
            .bind(owner)
            .bind(i64::from(wants_slot))
            .execute(p)
            .await?;
        });
        Ok(())
    }

    pub async fn status_counts(&self) -> Result<StatusCounts> {
        let (queue, runs): (Counts, Counts) = on_pool!(self, |p| {
            let q =
                sqlx::query_as("SELECT status, count(*) FROM executor_queue GROUP BY status ORDER BY status")
                    .fetch_all(p)
                    .await?;
            let r = sqlx::query_as("SELECT state, count(*) FROM executor_runs GROUP BY state ORDER BY state")
                .fetch_all(p)
                .await?;
            (q, r)
        });
        Ok(StatusCounts { queue, runs })
    }
}

/// At most this many runs that only need watching are claimed by one runner in one tick.
const MAX_WATCH_CLAIMS: i64 = 1000;

/// The condition on a run (in `executor_runs`) that the runner in parameter `$n` may claim: nobody holds
/// it, `$n` does, or its holder is no longer alive — ended, or with both its lease and its heartbeat
/// lapsed by the database's clock. A run is never taken from a runner whose heartbeat is live, nor by
/// a runner that has ended: one declared lost claims nothing in the moments before its heartbeat tells
/// it so (soak finding: thawed past its lease, a runner declared itself lost, freed its runs and took
/// them straight back, and its workers' writes then passed the lease fence).
fn claimable(pool: &Pool, n: u8) -> String {
    let now = pool.now_sql();
    format!(
        "(NOT EXISTS (SELECT 1 FROM executor_runners me WHERE me.id = ${n} AND me.ended_at IS NOT NULL) \
         AND (lease_owner IS NULL OR lease_owner = ${n} OR NOT EXISTS (SELECT 1 FROM executor_runners h \
           WHERE h.id = executor_runs.lease_owner AND h.ended_at IS NULL \
           AND (h.alive_until > {now} OR executor_runs.lease_expires_at > {now}))))"
    )
}
