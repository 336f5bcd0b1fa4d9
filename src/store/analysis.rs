//! The analyzer's side of the queue: claiming a pending task, and writing what became of it — a filter's
//! skip, a triage, or a failed analysis — in one statement or transaction that holds only while the task
//! is still pending and still claimed by the writer. So two analyzers (or an analyzer and a human who
//! approved the task meanwhile) never triage one task twice or overwrite each other.
//!
//! Order: the analyzer takes pending tasks by `analysis_round` (0 for a new task, one more each time
//! `executor reanalyze` sends a skipped task back), then by id (arrival). New tasks therefore always go
//! before re-analyzed ones, however many of those are waiting.

use chrono::{DateTime, Utc};

use super::columns::task_columns;
use super::events::{NewEvent, insert_event, kind, update_one_with_event};
use super::tasks::task_from_row;
use super::{BeginWrite, Pool, Result, Store, StoreError, now, on_pool};
use crate::domain::{Actor, By, QueueStatus, Task, TaskGid};

/// What a triage decided for one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triage {
    /// `ForReview`, `AwaitingGo` or `Skip`.
    pub status: QueueStatus,
    pub priority: i32,
    pub complexity: String,
    pub feasibility: String,
    pub summary: String,
    pub acceptance_criteria: Vec<String>,
}

/// The condition on a task an analyzer may claim: pending, not under a live claim, not waiting out a
/// back-off, not given up on. `max` is the number of the parameter holding `analyzer.max_attempts`.
/// Claims expire by the database's clock, like runners' leases: analyzers on several hosts never
/// judge each other's claims by their own clocks.
pub(super) fn claimable(pool: &Pool, max: u8) -> String {
    let now = pool.now_sql();
    format!(
        "status = 'pending' AND (claim_expires_at IS NULL OR claim_expires_at < {now}) \
         AND (analysis_retry_at IS NULL OR analysis_retry_at <= {now}) AND analysis_attempts < ${max}"
    )
}

/// The claim: the first claimable task in the analysis order, taken in one statement. Parameters: the
/// owner, `analyzer.max_attempts`, the claim's seconds.
pub(super) fn claim_sql(pool: &Pool) -> String {
    // PostgreSQL: SKIP LOCKED lets concurrent analyzers each take a different row without waiting;
    // the outer condition is checked again on the locked row. SQLite runs one writer at a time.
    // SQLite: without statistics its planner takes the status index and sorts every pending task
    // (46 ms a claim at 100,000); the partial index on pending tasks is this order already.
    let (index, lock) = match pool {
        Pool::Postgres(_) => ("", " FOR UPDATE SKIP LOCKED"),
        Pool::Sqlite(_) => (" INDEXED BY executor_queue_pending", ""),
    };
    format!(
        "UPDATE executor_queue SET claim_owner = $1, claim_expires_at = {later} \
         WHERE id = (SELECT id FROM executor_queue{index} WHERE {c} ORDER BY analysis_round, id LIMIT 1{lock}) \
           AND {c} RETURNING task_gid",
        later = pool.later_sql(3),
        c = claimable(pool, 2)
    )
}

impl Store {
    /// Claims the next pending task for analysis (see the module's order), for `ttl`. `None` when no
    /// task is claimable: none pending, or all claimed, backing off, or failed `max_attempts` times.
    pub async fn claim_for_analysis(
        &self,
        owner: &str,
        ttl: chrono::Duration,
        max_attempts: u32,
    ) -> Result<Option<Task>> {
        let sql = claim_sql(&self.pool);
        let gid: Option<String> = on_pool!(self, |p| {
            sqlx::query_scalar(&sql)
                .bind(owner)
                .bind(i64::from(max_attempts))
                .bind(ttl.num_milliseconds() as f64 / 1000.0)
                .fetch_optional(p)
                .await?
        });
        match gid {
            Some(gid) => {
                self.find_task(&TaskGid::parse(&gid).map_err(|e| StoreError::Corrupt(e.to_string()))?).await
            }
            None => Ok(None),
        }
    }

    /// Pending tasks an analyzer would still take now (for a progress bar's length).
    pub async fn count_claimable(&self, max_attempts: u32) -> Result<i64> {
        let sql = format!("SELECT count(*) FROM executor_queue WHERE {}", claimable(&self.pool, 1));
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar::<_, i64>(&sql).bind(i64::from(max_attempts)).fetch_one(p).await?
        }))
    }

    /// Lets go of a claim without a result (an analyzer stopped by a human): the task is claimable again.
    pub async fn release_claim(&self, gid: &TaskGid, owner: &str) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_queue SET claim_owner = NULL, claim_expires_at = NULL \
                 WHERE task_gid = $1 AND claim_owner = $2",
            )
            .bind(gid.as_str())
            .bind(owner)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// A filter skipped the claimed task: records the rule on it and moves it to `skip`. `false` when
    /// the task is no longer pending or no longer `owner`'s (nothing written).
    pub async fn record_filter_skip(
        &self,
        gid: &TaskGid,
        owner: &str,
        rule: &str,
        why: &str,
    ) -> Result<bool> {
        let reason = skip_reason(rule, why);
        let sql = "UPDATE executor_queue SET status = 'skip', skip_rule = $1, skip_why = $2, skipped_by = 'filter', \
                   analyzed_at = $3, analysis_error = NULL, claim_owner = NULL, claim_expires_at = NULL, updated_at = $3 \
                   WHERE task_gid = $4 AND status = 'pending' AND claim_owner = $5";
        let ev = status_event(gid, QueueStatus::Skip, &reason);
        Ok(update_one_with_event!(self, ev, sql, rule, why, now(), gid.as_str(), owner))
    }

    /// Writes a triage of the claimed task — its analysis and its new status — at once. `false` when the
    /// task is no longer pending or no longer `owner`'s (nothing written). Refuses a status a pending
    /// task cannot move to.
    pub async fn record_triage(&self, gid: &TaskGid, owner: &str, t: &Triage) -> Result<bool> {
        QueueStatus::Pending.check(t.status)?;
        let criteria = serde_json::to_string(&t.acceptance_criteria)
            .map_err(|e| StoreError::Corrupt(format!("acceptance criteria: {e}")))?;
        let sql = "UPDATE executor_queue SET status = $1, priority = $2, complexity = $3, feasibility = $4, \
                   analysis_summary = $5, acceptance_criteria = $6, analyzed_at = $7, analysis_error = NULL, \
                   skip_rule = NULL, skip_why = NULL, skipped_by = CASE WHEN $1 = 'skip' THEN 'triage' END, \
                   claim_owner = NULL, claim_expires_at = NULL, updated_at = $7 \
                   WHERE task_gid = $8 AND status = 'pending' AND claim_owner = $9";
        let reason = format!(
            "triage: priority {}, complexity {}, feasibility {}",
            t.priority, t.complexity, t.feasibility
        );
        let ev = status_event(gid, t.status, &reason);
        Ok(update_one_with_event!(
            self,
            ev,
            sql,
            t.status.as_str(),
            i64::from(t.priority),
            &t.complexity,
            &t.feasibility,
            &t.summary,
            &criteria,
            now(),
            gid.as_str(),
            owner
        ))
    }

    /// The analysis of the claimed task failed: it stays pending with the error recorded (and shown by
    /// `queue show`), one more failed attempt counted, and not claimable before `retry_at`. `false` when
    /// the task is no longer `owner`'s.
    pub async fn record_analysis_failure(
        &self,
        gid: &TaskGid,
        owner: &str,
        error: &str,
        retry_at: DateTime<Utc>,
    ) -> Result<bool> {
        let sql = "UPDATE executor_queue SET analysis_error = $1, analysis_attempts = analysis_attempts + 1, \
                   analysis_retry_at = $2, claim_owner = NULL, claim_expires_at = NULL, updated_at = $3 \
                   WHERE task_gid = $4 AND status = 'pending' AND claim_owner = $5";
        let reason = format!("analysis failed: {error}");
        let ev = NewEvent {
            actor: Actor::Analyzer,
            actor_id: None,
            task_gid: Some(gid.as_str()),
            run_id: None,
            kind: kind::NOTE,
            from_state: None,
            to_state: None,
            reason: Some(&reason),
        };
        Ok(update_one_with_event!(self, ev, sql, error, retry_at, now(), gid.as_str(), owner))
    }

    /// Sends skipped tasks back to pending for another analysis (`executor reanalyze`, `queue requeue`),
    /// one round later than before, with their filter and analysis errors cleared and an event each.
    /// Also takes pending tasks whose analysis was given up on, so they are tried afresh. Returns how
    /// many moved; a task that is neither (a human moved it meanwhile) is left as it is.
    pub async fn send_back_for_analysis(
        &self,
        gids: &[TaskGid],
        by: impl Into<By<'_>>,
        reason: &str,
    ) -> Result<u64> {
        let by = by.into();
        let mut moved = 0;
        for chunk in gids.chunks(500) {
            moved += on_pool!(self, |p| {
                let mut tx = p.begin_write().await?;
                let mut n = 0;
                for gid in chunk {
                    let from: Option<String> = sqlx::query_scalar(
                        "SELECT status FROM executor_queue WHERE task_gid = $1 \
                         AND (status = 'skip' OR (status = 'pending' AND analysis_attempts > 0))",
                    )
                    .bind(gid.as_str())
                    .fetch_optional(&mut *tx)
                    .await?;
                    let Some(from) = from else { continue };
                    sqlx::query(
                        "UPDATE executor_queue SET status = 'pending', analysis_round = analysis_round + 1, \
                         skip_rule = NULL, skip_why = NULL, skipped_by = NULL, analysis_error = NULL, analysis_attempts = 0, \
                         analysis_retry_at = NULL, claim_owner = NULL, claim_expires_at = NULL, updated_at = $1 \
                         WHERE task_gid = $2",
                    )
                    .bind(now())
                    .bind(gid.as_str())
                    .execute(&mut *tx)
                    .await?;
                    let ev = NewEvent {
                        actor: by.actor,
                        actor_id: by.name,
                        task_gid: Some(gid.as_str()),
                        run_id: None,
                        kind: if from == "skip" { kind::QUEUE_STATUS } else { kind::NOTE },
                        from_state: (from == "skip").then_some("skip"),
                        to_state: (from == "skip").then_some("pending"),
                        reason: Some(reason),
                    };
                    insert_event!(self, &mut *tx, ev)?;
                    n += 1;
                }
                tx.commit().await?;
                n
            });
        }
        Ok(moved)
    }

    /// Tasks by status (any, when `None`), for `reanalyze`: read in pages of `page` by id, so 100,000
    /// skipped tasks never sit in memory at once. `f` gets each page.
    pub async fn for_each_task_page(
        &self,
        status: QueueStatus,
        page: i64,
        mut f: impl FnMut(Vec<Task>) -> Result<()>,
    ) -> Result<()> {
        let mut after = 0_i64;
        loop {
            let rows: Vec<Task> = on_pool!(self, |p| {
                sqlx::query(concat!(
                    "SELECT ",
                    task_columns!(),
                    " FROM executor_queue WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3"
                ))
                .bind(status.as_str())
                .bind(after)
                .bind(page)
                .fetch_all(p)
                .await?
                .iter()
                .map(task_from_row)
                .collect::<Result<Vec<_>>>()?
            });
            let Some(last) = rows.last() else { return Ok(()) };
            after = last.id;
            let full = rows.len() as i64 == page;
            f(rows)?;
            if !full {
                return Ok(());
            }
        }
    }
}

fn status_event<'a>(gid: &'a TaskGid, to: QueueStatus, reason: &'a str) -> NewEvent<'a> {
    NewEvent {
        actor: Actor::Analyzer,
        actor_id: None,
        task_gid: Some(gid.as_str()),
        run_id: None,
        kind: kind::QUEUE_STATUS,
        from_state: Some(QueueStatus::Pending.as_str()),
        to_state: Some(to.as_str()),
        reason: Some(reason),
    }
}

/// The event's reason for a filter's skip, the same on both paths (one task claimed, or in bulk).
pub(super) fn skip_reason(rule: &str, why: &str) -> String {
    if why.is_empty() { format!("filter {rule}") } else { format!("filter {rule}: {why}") }
}
