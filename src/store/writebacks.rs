//! Write-back to the trackers as an outbox (migration 0011): a message is recorded once per task and
//! key before anything is sent; an attempt is begun (claimed, counted) before the tracker is called, so a
//! crash mid-send leaves a row whose attempts say "look in the tracker first"; a settled row is never
//! sent again.

use chrono::{DateTime, Utc};

use super::row::Cols;
use super::{Result, Store, now, on_pool};
use crate::domain::{WritebackEvent, WritebackStatus};

macro_rules! writeback_columns {
    () => {
        "id, task_gid, run_id, source, event, event_key, message, marker, status, created_at, \
         next_attempt_at, attempts, last_error, remote_id, settled_at"
    };
}

/// One message owed to a tracker.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Writeback {
    pub id: i64,
    pub task_gid: String,
    pub run_id: Option<i64>,
    /// The `[[sources]]` name of the task's tracker.
    pub source: String,
    pub event: WritebackEvent,
    pub event_key: String,
    pub message: String,
    /// The token the message carries in the tracker, by which a retry recognises an earlier attempt's.
    pub marker: String,
    pub status: WritebackStatus,
    pub created_at: DateTime<Utc>,
    pub next_attempt_at: DateTime<Utc>,
    /// Attempts begun so far (a crash mid-attempt counts: the message may be in the tracker).
    pub attempts: i64,
    pub last_error: Option<String>,
    /// The tracker's id of the comment, once delivered.
    pub remote_id: Option<String>,
    pub settled_at: Option<DateTime<Utc>>,
}

fn writeback_from_row(r: &impl Cols) -> Result<Writeback> {
    Ok(Writeback {
        id: r.req_int("id")?,
        task_gid: r.req_text("task_gid")?,
        run_id: r.int("run_id")?,
        source: r.req_text("source")?,
        event: r.parsed("event")?,
        event_key: r.req_text("event_key")?,
        message: r.req_text("message")?,
        marker: r.req_text("marker")?,
        status: r.parsed("status")?,
        created_at: r.req_time("created_at")?,
        next_attempt_at: r.req_time("next_attempt_at")?,
        attempts: r.req_int("attempts")?,
        last_error: r.text("last_error")?,
        remote_id: r.text("remote_id")?,
        settled_at: r.time("settled_at")?,
    })
}

/// A message to record (see [`Store::record_writeback`]).
#[derive(Debug, Clone, Copy)]
pub struct NewWriteback<'a> {
    pub task_gid: &'a str,
    pub run_id: Option<i64>,
    pub source: &'a str,
    pub event: WritebackEvent,
    /// Unique within the task: the same key is recorded once, whoever records it again.
    pub event_key: &'a str,
    pub message: &'a str,
    pub marker: &'a str,
}

impl Store {
    /// Records a message for a task's tracker, due at once. A key already recorded for the task returns
    /// `None` (a step replayed after a crash records nothing twice).
    pub async fn record_writeback(&self, w: NewWriteback<'_>) -> Result<Option<i64>> {
        let at = now();
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar(
                "INSERT INTO executor_writebacks (task_gid, run_id, source, event, event_key, message, marker, \
                   status, created_at, next_attempt_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $8) \
                 ON CONFLICT (task_gid, event_key) DO NOTHING RETURNING id",
            )
            .bind(w.task_gid)
            .bind(w.run_id)
            .bind(w.source)
            .bind(w.event.as_str())
            .bind(w.event_key)
            .bind(w.message)
            .bind(w.marker)
            .bind(at)
            .fetch_optional(p)
            .await?
        }))
    }

    /// Every message not settled yet, oldest first (due or not: the caller keeps a task's messages in
    /// order, so a later one waits behind an earlier one's back-off).
    pub async fn pending_writebacks(&self, limit: i64) -> Result<Vec<Writeback>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                writeback_columns!(),
                " FROM executor_writebacks WHERE status = 'pending' ORDER BY id LIMIT $1"
            ))
            .bind(limit)
            .fetch_all(p)
            .await?
            .iter()
            .map(writeback_from_row)
            .collect()
        })
    }

    /// A task's messages (or every one), oldest first.
    pub async fn writebacks(&self, task_gid: Option<&str>) -> Result<Vec<Writeback>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                writeback_columns!(),
                " FROM executor_writebacks WHERE ($1 IS NULL OR task_gid = $1) ORDER BY id"
            ))
            .bind(task_gid)
            .fetch_all(p)
            .await?
            .iter()
            .map(writeback_from_row)
            .collect()
        })
    }

    /// How many messages stand in each state (`pending`, `delivered`, …), for `executor status`.
    pub async fn writeback_counts(&self) -> Result<Vec<(String, i64)>> {
        Ok(on_pool!(self, |p| {
            sqlx::query_as::<_, (String, i64)>(
                "SELECT status, count(*) FROM executor_writebacks GROUP BY status ORDER BY status",
            )
            .fetch_all(p)
            .await?
        }))
    }

    /// Begins an attempt: only if the message is still pending and due, counts the attempt and holds
    /// the message from every other process until `hold_until` (past which a crashed attempt is taken
    /// up again). Returns the message as it now stands — `attempts > 1` means an earlier attempt may
    /// have reached the tracker — or `None` when another process has it or it is settled.
    pub async fn begin_writeback_attempt(
        &self,
        id: i64,
        hold_until: DateTime<Utc>,
    ) -> Result<Option<Writeback>> {
        let at = now();
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "UPDATE executor_writebacks SET attempts = attempts + 1, next_attempt_at = $1 \
                 WHERE id = $2 AND status = 'pending' AND next_attempt_at <= $3 RETURNING ",
                writeback_columns!()
            ))
            .bind(hold_until)
            .bind(id)
            .bind(at)
            .fetch_optional(p)
            .await?
            .as_ref()
            .map(writeback_from_row)
            .transpose()
        })
    }

    /// The tracker has the message, as `remote_id`.
    pub async fn mark_writeback_delivered(&self, id: i64, remote_id: &str) -> Result<()> {
        self.settle_writeback(id, WritebackStatus::Delivered, Some(remote_id), None).await
    }

    /// The message will not be sent: the tracker refused it for good, or it failed too often.
    pub async fn mark_writeback_settled_undelivered(
        &self,
        id: i64,
        status: WritebackStatus,
        error: &str,
    ) -> Result<()> {
        self.settle_writeback(id, status, None, Some(error)).await
    }

    async fn settle_writeback(
        &self,
        id: i64,
        status: WritebackStatus,
        remote_id: Option<&str>,
        error: Option<&str>,
    ) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_writebacks SET status = $1, remote_id = $2, last_error = $3, settled_at = $4 \
                 WHERE id = $5 AND status = 'pending'",
            )
            .bind(status.as_str())
            .bind(remote_id)
            .bind(error)
            .bind(now())
            .bind(id)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// An attempt failed for a passing reason: tried again from `retry_at`.
    pub async fn mark_writeback_failed(&self, id: i64, error: &str, retry_at: DateTime<Utc>) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_writebacks SET last_error = $1, next_attempt_at = $2 \
                 WHERE id = $3 AND status = 'pending'",
            )
            .bind(error)
            .bind(retry_at)
            .bind(id)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// Tests only: every pending message due now, as if its back-off or an attempt's hold had passed.
    #[doc(hidden)]
    pub async fn make_writebacks_due_for_tests(&self) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_writebacks SET next_attempt_at = $1 WHERE status = 'pending'")
                .bind(now() - chrono::TimeDelta::seconds(1))
                .execute(p)
                .await?;
        });
        Ok(())
    }
}
