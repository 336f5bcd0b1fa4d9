//! The two acts of reading only the dashboard has, which take an item off "Needs you": marking a
//! notice read, and dismissing a source's failed fetch (until it fails again). Each is recorded once,
//! with an event in the name of whoever did it.

use super::events::{NewEvent, insert_event, kind};
use super::{BeginWrite, Result, Store, StoreError, now, on_pool};
use crate::domain::By;

/// A notice's run, task, kind and when it was read (as text: only whether it was matters here).
type NoticeReadRow = (Option<i64>, Option<String>, String, Option<String>);

impl Store {
    /// A human read notice `id`: it leaves "Needs you". Recorded once (a second reading changes nothing
    /// and says so), with an event on the notice's run.
    pub async fn mark_notice_read(&self, id: i64, by: impl Into<By<'_>>) -> Result<()> {
        let by = by.into();
        let found: Option<NoticeReadRow> = on_pool!(self, |p| {
            sqlx::query_as(
                "SELECT run_id, task_gid, kind, CAST(read_at AS TEXT) FROM executor_notifications WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(p)
            .await?
        });
        let Some((run_id, task_gid, notice_kind, read)) = found else {
            return Err(StoreError::UnknownNotice(id));
        };
        if read.is_some() {
            return Err(StoreError::Refused(format!("notice {id} was marked read already")));
        }
        let reason = format!("notice {id} ({notice_kind}) marked read");
        let ev = NewEvent {
            actor: by.actor,
            actor_id: by.name,
            task_gid: task_gid.as_deref(),
            run_id,
            kind: kind::NOTE,
            from_state: None,
            to_state: None,
            reason: Some(&reason),
        };
        let marked = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let n = sqlx::query(
                "UPDATE executor_notifications SET read_at = $1, read_by = $2 WHERE id = $3 AND read_at IS NULL",
            )
            .bind(now())
            .bind(by.shown())
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if n == 1 {
                insert_event!(self, &mut *tx, ev)?;
                tx.commit().await?;
            }
            n == 1
        });
        if !marked {
            return Err(StoreError::Refused(format!("notice {id} was marked read already")));
        }
        Ok(())
    }

    /// A human saw source `source`'s failed fetch: it leaves "Needs you" until the source fails again.
    /// Recorded as an event. Refused when the source's last fetch did not fail.
    pub async fn dismiss_source_error(&self, source: &str, by: impl Into<By<'_>>) -> Result<()> {
        let by = by.into();
        let reason = format!("source {source}: its failed fetch was dismissed");
        let ev = NewEvent {
            actor: by.actor,
            actor_id: by.name,
            task_gid: None,
            run_id: None,
            kind: kind::NOTE,
            from_state: None,
            to_state: None,
            reason: Some(&reason),
        };
        let dismissed = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let n = sqlx::query(
                "UPDATE executor_source_cursors SET error_read_at = $1 \
                 WHERE source = $2 AND last_error IS NOT NULL \
                   AND (error_read_at IS NULL OR error_read_at < last_error_at)",
            )
            .bind(now())
            .bind(source)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if n == 1 {
                insert_event!(self, &mut *tx, ev)?;
                tx.commit().await?;
            }
            n == 1
        });
        if !dismissed {
            return Err(StoreError::Refused(format!(
                "source {source} has no failed fetch waiting to be read"
            )));
        }
        Ok(())
    }
}
