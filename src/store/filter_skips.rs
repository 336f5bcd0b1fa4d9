//! The free filters in bulk: pending tasks read a page at a time, and the page's skips written at once.
//!
//! Why not claim first, as the model's path does: filters cost nothing and decide alone, so a claim
//! (and a count, and a transaction) per task only made 100,000 tasks take over an hour. Instead each
//! skip is written only if the task is, at that moment, still pending and under no live claim (another
//! analyzer, on another host, may be triaging it): the same condition a claim would have checked, in the
//! same statement as the write. A task that passes is not touched, so it waits for the model in the
//! order it had.
//!
//! Per page: one multi-row UPDATE (`… FROM (VALUES …)`, `RETURNING` the tasks it moved) and one
//! multi-row INSERT of their events, in one transaction, as `tasks/intake.rs` writes an intake.

use std::collections::HashSet;

use super::analysis::{claimable, skip_reason};
use super::columns::task_columns;
use super::events::kind;
use super::tasks::{CHUNK, Marks, task_from_row};
use super::{BeginWrite, Pool, Result, Store, now, on_pool};
use crate::domain::{Actor, QueueStatus, Task, TaskGid};

/// One task a filter skips: the rule's name (recorded on the task) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterSkip {
    pub task_gid: TaskGid,
    pub rule: String,
    pub why: String,
}

/// Where the next page of claimable tasks starts: after this `(analysis_round, id)`, the analysis order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PendingPage {
    pub after_round: i64,
    pub after_id: i64,
}

impl Store {
    /// Up to `limit` tasks an analyzer could claim now (pending, under no live claim, not backing off,
    /// not given up on), in the analysis order, after `from`; and where the next page starts.
    pub async fn claimable_page(
        &self,
        from: PendingPage,
        limit: usize,
        max_attempts: u32,
    ) -> Result<(Vec<Task>, PendingPage)> {
        let sql = page_sql(&self.pool);
        let rows: Vec<Task> = on_pool!(self, |p| {
            sqlx::query(&sql)
                .bind(i64::from(max_attempts))
                .bind(from.after_round)
                .bind(from.after_id)
                .bind(limit as i64)
                .fetch_all(p)
                .await?
                .iter()
                .map(task_from_row)
                .collect::<Result<Vec<_>>>()?
        });
        let next =
            rows.last().map_or(from, |t| PendingPage { after_round: t.analysis_round, after_id: t.id });
        Ok((rows, next))
    }

    /// Moves each task of `skips` to `skip` with its rule recorded and an event, only if it is still
    /// pending and under no live claim; returns the gids it moved (the others were decided or claimed
    /// meanwhile, and are left as they are).
    pub async fn record_filter_skips(&self, skips: &[FilterSkip]) -> Result<Vec<TaskGid>> {
        let mut moved = Vec::with_capacity(skips.len());
        for chunk in skips.chunks(CHUNK) {
            moved.extend(self.skip_chunk(chunk).await?);
        }
        Ok(moved)
    }

    async fn skip_chunk(&self, chunk: &[FilterSkip]) -> Result<Vec<TaskGid>> {
        let marks = Marks::of(&self.pool);
        let now_sql = self.pool.now_sql();
        let update = format!(
            "WITH v (task_gid, skip_rule, skip_why, at) AS (VALUES {}) \
             UPDATE executor_queue SET status = 'skip', skip_rule = v.skip_rule, skip_why = v.skip_why, skipped_by = 'filter', \
               analyzed_at = v.at, analysis_error = NULL, claim_owner = NULL, claim_expires_at = NULL, \
               updated_at = v.at \
             FROM v WHERE executor_queue.task_gid = v.task_gid AND executor_queue.status = 'pending' \
               AND (executor_queue.claim_expires_at IS NULL OR executor_queue.claim_expires_at < {now_sql}) \
             RETURNING executor_queue.task_gid",
            marks.rows(chunk.len(), 4, "")
        );
        let at = now();
        Ok(on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let mut q = sqlx::query_scalar::<_, String>(&update);
            for s in chunk {
                q = q.bind(s.task_gid.as_str()).bind(&s.rule).bind(&s.why).bind(at);
            }
            let written = q.fetch_all(&mut *tx).await?;
            // In the order given, as one skip after another would have recorded them.
            let written: HashSet<String> = written.into_iter().collect();
            let moved: Vec<&FilterSkip> =
                chunk.iter().filter(|s| written.contains(s.task_gid.as_str())).collect();
            if !moved.is_empty() {
                let insert = format!(
                    "INSERT INTO executor_events (at, actor, task_gid, kind, from_state, to_state, reason) VALUES {}",
                    marks.rows(moved.len(), 7, "")
                );
                let mut q = sqlx::query(&insert);
                for s in &moved {
                    q = q
                        .bind(at)
                        .bind(Actor::Analyzer.as_str())
                        .bind(s.task_gid.as_str())
                        .bind(kind::QUEUE_STATUS)
                        .bind(QueueStatus::Pending.as_str())
                        .bind(QueueStatus::Skip.as_str())
                        .bind(self.scrub.apply(&skip_reason(&s.rule, &s.why)));
                }
                q.execute(&mut *tx).await?;
            }
            tx.commit().await?;
            moved.into_iter().map(|s| s.task_gid.clone()).collect::<Vec<_>>()
        }))
    }
}

/// A page of claimable tasks in the analysis order. Parameters: `analyzer.max_attempts`, the round and
/// id the page starts after, its length.
pub(super) fn page_sql(pool: &Pool) -> String {
    // The partial index on pending tasks serves this order; SQLite's planner prefers the status index
    // without statistics and then sorts every pending task, so it is named. The page starts after a row
    // value, which both databases take as where to start reading that index: written as `round > $2 OR
    // (round = $2 AND id > $3)`, PostgreSQL read it from the start and filtered, each page reading all
    // the pages before it again (250 ms a page in the middle of 100,000; 4 ms as a row value).
    let index = if matches!(pool, Pool::Sqlite(_)) { " INDEXED BY executor_queue_pending" } else { "" };
    format!(
        concat!(
            "SELECT ",
            task_columns!(),
            " FROM executor_queue{} WHERE {} AND (analysis_round, id) > ($2, $3) \
             ORDER BY analysis_round, id LIMIT $4"
        ),
        index,
        claimable(pool, 1)
    )
}

#[cfg(test)]
mod tests;
