//! Notices to the human: completion, abandonment, stuck workers, budget stops. An outbox: a notice is
//! recorded first (once per key), then sent, then marked delivered; one not yet delivered is retried
//! until it is, or until it has failed too often (then it stays visible, undelivered, with its error).

use chrono::{DateTime, Utc};

use super::columns::notice_columns;
use super::row::Cols;
use super::{Result, Store, now, on_pool};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Notice {
    pub id: i64,
    pub run_id: Option<i64>,
    pub task_gid: Option<String>,
    pub kind: String,
    pub notice_key: Option<String>,
    pub message: String,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub delivery: Option<String>,
    /// Delivery attempts so far (successful or not).
    pub attempts: i64,
    /// Why the last attempt failed, while it is not delivered.
    pub last_error: Option<String>,
}

fn notice_from_row(r: &impl Cols) -> Result<Notice> {
    Ok(Notice {
        id: r.req_int("id")?,
        run_id: r.int("run_id")?,
        task_gid: r.text("task_gid")?,
        kind: r.req_text("kind")?,
        notice_key: r.text("notice_key")?,
        message: r.req_text("message")?,
        created_at: r.req_time("created_at")?,
        delivered_at: r.time("delivered_at")?,
        delivery: r.text("delivery")?,
        attempts: r.int("attempts")?.unwrap_or(0),
        last_error: r.text("last_error")?,
    })
}

impl Store {
    /// Records a notice. With a key, a notice is recorded once per run: a repeat returns `None`.
    pub async fn add_notice(
        &self,
        run_id: Option<i64>,
        task_gid: Option<&str>,
        kind: &str,
        key: Option<&str>,
        message: &str,
    ) -> Result<Option<i64>> {
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar(
                "INSERT INTO executor_notifications (run_id, task_gid, kind, notice_key, message, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id, notice_key) DO NOTHING RETURNING id",
            )
            .bind(run_id)
            .bind(task_gid)
            .bind(kind)
            .bind(key)
            .bind(self.scrub.apply(message))
            .bind(now())
            .fetch_optional(p)
            .await?
        }))
    }

    /// The keys of the notices recorded for a run.
    pub async fn notice_keys(&self, run_id: i64) -> Result<Vec<String>> {
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar(
                "SELECT notice_key FROM executor_notifications WHERE run_id = $1 AND notice_key IS NOT NULL ORDER BY id",
            )
            .bind(run_id)
            .fetch_all(p)
            .await?
        }))
    }

    /// Records how a notice reached the human (forge comment, webhook): it is delivered.
    pub async fn mark_notice_delivered(&self, id: i64, delivery: &str) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_notifications SET delivered_at = $1, delivery = $2, attempts = attempts + 1, \
                   last_error = NULL WHERE id = $3",
            )
            .bind(now())
            .bind(delivery)
            .bind(id)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// Records a failed delivery attempt; the notice stays in the outbox. `progress` says what did get
    /// through (the forge comment, say), for `runs show`.
    pub async fn mark_notice_failed(&self, id: i64, progress: &str, error: &str) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_notifications SET attempts = attempts + 1, last_error = $1, delivery = $2 \
                 WHERE id = $3 AND delivered_at IS NULL",
            )
            .bind(self.scrub.apply(error))
            .bind(progress)
            .bind(id)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// Records why a notice could not be sent yet without counting it as an attempt: it has nowhere
    /// to go (no pull request yet, no webhook), which no retry limit should end.
    pub async fn mark_notice_waiting(&self, id: i64, progress: &str, why: &str) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_notifications SET last_error = $1, delivery = $2 \
                 WHERE id = $3 AND delivered_at IS NULL",
            )
            .bind(self.scrub.apply(why))
            .bind(progress)
            .bind(id)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// Records that an attempt to post the notice on its pull request begins now: written before the
    /// post, so that the next runner, should this one die while the forge still carries the post out,
    /// looks for it once it could have landed instead of posting it again.
    pub async fn mark_notice_posting(&self, id: i64) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_notifications SET post_started_at = $1 WHERE id = $2")
                .bind(now())
                .bind(id)
                .execute(p)
                .await?;
        });
        Ok(())
    }

    /// When the last attempt to post the notice began (`None`: never).
    pub async fn notice_post_started(&self, id: i64) -> Result<Option<DateTime<Utc>>> {
        let started: Option<Option<DateTime<Utc>>> = on_pool!(self, |p| {
            sqlx::query_scalar("SELECT post_started_at FROM executor_notifications WHERE id = $1")
                .bind(id)
                .fetch_optional(p)
                .await?
        });
        Ok(started.flatten())
    }

    /// Notices recorded but not delivered, that have been tried fewer than `max_attempts` times, oldest
    /// first.
    pub async fn unsent_notices(&self, max_attempts: i64) -> Result<Vec<Notice>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                notice_columns!(),
                " FROM executor_notifications WHERE delivered_at IS NULL AND attempts < $1 ORDER BY id"
            ))
            .bind(max_attempts)
            .fetch_all(p)
            .await?
            .iter()
            .map(notice_from_row)
            .collect()
        })
    }

    /// Notices that were never delivered (still being retried, or given up on), oldest first.
    pub async fn undelivered_notices(&self) -> Result<Vec<Notice>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                notice_columns!(),
                " FROM executor_notifications WHERE delivered_at IS NULL ORDER BY id"
            ))
            .fetch_all(p)
            .await?
            .iter()
            .map(notice_from_row)
            .collect()
        })
    }

    /// Notices, oldest first; only one run's when given.
    pub async fn notices(&self, run_id: Option<i64>) -> Result<Vec<Notice>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                notice_columns!(),
                " FROM executor_notifications WHERE ($1 IS NULL OR run_id = $1) ORDER BY id"
            ))
            .bind(run_id)
            .fetch_all(p)
            .await?
            .iter()
            .map(notice_from_row)
            .collect()
        })
    }
}
