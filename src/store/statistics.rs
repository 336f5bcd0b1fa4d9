//! The planner's statistics of the queue, refreshed after a bulk write.
//!
//! Why: right after a bulk intake the queue has no statistics (PostgreSQL's autovacuum analyzes a
//! table a minute or more later; SQLite never does by itself), and both planners then guess: PostgreSQL
//! read every pending task of a fresh 100,000 through a bitmap scan and sorted them, for each page of
//! the filter pass (130–320 ms a page; a few ms once analyzed). So whoever has just added or changed
//! many rows refreshes them at once, instead of leaving the next reader to a guess.

use super::{Pool, Result, Store};

/// Rows a bulk write must have added or changed for its writer to refresh the statistics: below this
/// a table's statistics do not move enough to change a plan, and an ANALYZE would cost more than it
/// saves.
pub const STATISTICS_AFTER_ROWS: u64 = 1000;

impl Store {
    /// Refreshes the planner's statistics of the queue (`ANALYZE executor_queue` on both databases;
    /// on SQLite an approximate one, reading at most a thousand rows of each index, so that it stays
    /// fast on any size). Call it after a write that added or changed [`STATISTICS_AFTER_ROWS`] or more.
    pub async fn refresh_statistics(&self) -> Result<()> {
        match &self.pool {
            Pool::Sqlite(p) => {
                // One connection: the limit is a setting of the connection that runs the ANALYZE.
                let mut conn = p.acquire().await?;
                sqlx::query("PRAGMA analysis_limit = 1000").execute(&mut *conn).await?;
                sqlx::query("ANALYZE executor_queue").execute(&mut *conn).await?;
            }
            Pool::Postgres(p) => {
                sqlx::query("ANALYZE executor_queue").execute(p).await?;
            }
        }
        Ok(())
    }
}
