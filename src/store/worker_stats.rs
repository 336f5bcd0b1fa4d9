//! Aggregates over worker sessions for `/metrics`: one statement each, whatever the number of rows.

use super::{Pool, Result, Store};

/// Ended worker sessions of one kind: how many, and their summed wall-clock time.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WorkerDurations {
    /// The worker kind (`queued`, `fix_ci`, …) as stored.
    pub kind: String,
    pub count: i64,
    pub seconds: f64,
}

impl Store {
    /// Count and summed duration of the ended worker sessions, by kind (sorted by kind).
    pub async fn worker_durations(&self) -> Result<Vec<WorkerDurations>> {
        // Time arithmetic is the one place the two dialects differ: SQLite stores RFC 3339 text, which
        // julianday() reads; PostgreSQL subtracts timestamps into an interval.
        let rows: Vec<(String, i64, Option<f64>)> = match &self.pool {
            Pool::Sqlite(p) => {
                sqlx::query_as(
                    "SELECT kind, count(*), sum((julianday(ended_at) - julianday(started_at)) * 86400.0) \
                     FROM executor_worker_sessions WHERE ended_at IS NOT NULL GROUP BY kind ORDER BY kind",
                )
                .fetch_all(p)
                .await?
            }
            Pool::Postgres(p) => {
                sqlx::query_as(
                    "SELECT kind, count(*), sum(EXTRACT(EPOCH FROM (ended_at - started_at)))::float8 \
                     FROM executor_worker_sessions WHERE ended_at IS NOT NULL GROUP BY kind ORDER BY kind",
                )
                .fetch_all(p)
                .await?
            }
        };
        Ok(rows
            .into_iter()
            .map(|(kind, count, seconds)| WorkerDurations { kind, count, seconds: seconds.unwrap_or(0.0) })
            .collect())
    }

    /// How many worker sessions are not yet closed, on every host.
    pub async fn live_worker_count(&self) -> Result<i64> {
        Ok(super::on_pool!(self, |p| {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM executor_worker_sessions WHERE ended_at IS NULL",
            )
            .fetch_one(p)
            .await?
        }))
    }
}
