//! A mark that moves whenever something a dashboard page shows may have changed, so an open page can ask
//! "anything new?" every few seconds for the price of one small statement, and fetch itself again only
//! when the answer is yes.

use super::{Result, Store, on_pool};

/// Events, notices, worker sessions (all, and live), then the newest run update, run decision, source
/// fetch and source failure, as text.
type MarkParts = (i64, i64, i64, i64, Option<String>, Option<String>, Option<String>, Option<String>);

impl Store {
    /// An opaque text that differs whenever an event was recorded (every status and state change, every
    /// human action), a notice was recorded, a worker started or ended, a run was updated or decided on,
    /// or a source's fetch succeeded or failed. Equal marks mean none of that happened in between.
    /// Each part is an indexed maximum or a small table's, whatever the size of the queue.
    pub async fn change_mark(&self) -> Result<String> {
        let parts: MarkParts = on_pool!(self, |p| {
            sqlx::query_as(
                "SELECT \
                       (SELECT COALESCE(MAX(id), 0) FROM executor_events), \
                       (SELECT COALESCE(MAX(id), 0) FROM executor_notifications), \
                       (SELECT COALESCE(MAX(id), 0) FROM executor_worker_sessions), \
                       (SELECT COUNT(*) FROM executor_worker_sessions WHERE ended_at IS NULL), \
                       (SELECT CAST(MAX(updated_at) AS TEXT) FROM executor_runs), \
                       (SELECT CAST(MAX(last_decision_at) AS TEXT) FROM executor_runs), \
                       (SELECT CAST(MAX(fetched_at) AS TEXT) FROM executor_source_cursors), \
                       (SELECT CAST(MAX(last_error_at) AS TEXT) FROM executor_source_cursors)",
            )
            .fetch_one(p)
            .await?
        });
        let (events, notices, sessions, live, runs, decided, fetched, failed) = parts;
        let text = |t: Option<String>| t.unwrap_or_default();
        Ok(format!(
            "{events}.{notices}.{sessions}.{live}.{}.{}.{}.{}",
            text(runs),
            text(decided),
            text(fetched),
            text(failed)
        ))
    }
}
