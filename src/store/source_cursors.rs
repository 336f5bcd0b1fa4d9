//! Where each task source's incremental fetch goes on from (`modified_since`), and how its last fetch
//! went, so `executor status` can say that a source keeps failing.

use chrono::{DateTime, Utc};

use super::row::Cols;
use super::{Result, Store, now, on_pool};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SourceCursor {
    /// The source's configured name.
    pub source: String,
    /// The next fetch asks for what changed since this; `None` before the first.
    pub cursor: Option<DateTime<Utc>>,
    /// When a fetch last succeeded.
    pub fetched_at: Option<DateTime<Utc>>,
    /// The last fetch's error, cleared by a fetch that succeeds.
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
}

fn from_row(r: &impl Cols) -> Result<SourceCursor> {
    Ok(SourceCursor {
        source: r.req_text("source")?,
        cursor: r.time("cursor")?,
        fetched_at: r.time("fetched_at")?,
        last_error: r.text("last_error")?,
        last_error_at: r.time("last_error_at")?,
    })
}

impl Store {
    /// Every source's cursor, by name.
    pub async fn source_cursors(&self) -> Result<Vec<SourceCursor>> {
        on_pool!(self, |p| {
            sqlx::query(
                "SELECT source, cursor, fetched_at, last_error, last_error_at FROM executor_source_cursors \
                 ORDER BY source",
            )
            .fetch_all(p)
            .await?
            .iter()
            .map(from_row)
            .collect()
        })
    }

    /// One source's cursor; `None` before its first fetch.
    pub async fn source_cursor(&self, source: &str) -> Result<Option<DateTime<Utc>>> {
        Ok(self.source_cursors().await?.into_iter().find(|c| c.source == source).and_then(|c| c.cursor))
    }

    /// A fetch succeeded and its tasks are stored: the next one starts from `cursor`.
    pub async fn set_source_fetched(&self, source: &str, cursor: Option<DateTime<Utc>>) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "INSERT INTO executor_source_cursors (source, cursor, fetched_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (source) DO UPDATE SET cursor = COALESCE($2, executor_source_cursors.cursor), \
                   fetched_at = $3, last_error = NULL, last_error_at = NULL",
            )
            .bind(source)
            .bind(cursor)
            .bind(now())
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// A fetch failed: the cursor stays, the error is kept for `status`.
    pub async fn set_source_failed(&self, source: &str, error: &str) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "INSERT INTO executor_source_cursors (source, last_error, last_error_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (source) DO UPDATE SET last_error = $2, last_error_at = $3",
            )
            .bind(source)
            .bind(error)
            .bind(now())
            .execute(p)
            .await?;
        });
        Ok(())
    }
}
