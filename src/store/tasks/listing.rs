//! Reading tasks back: listings in the order work is taken, and tasks by gid, in pages, so 100,000
//! tasks are never all in memory at once.

use std::collections::HashMap;

use super::intake::Marks;
use super::{TaskFilter, task_from_row};
use crate::domain::{QueueStatus, Task, TaskGid};
use crate::store::columns::task_columns;
use crate::store::{Result, Store, StoreError, on_pool};

/// Rows read by one statement when paging by key.
const PAGE: usize = 500;

/// The text filter's condition on bound parameter `$3`, a lowercased LIKE pattern from [`like_pattern`]
/// (or NULL for no filter). `lower()` on both sides: SQLite's LIKE ignores ASCII case, PostgreSQL's does
/// not, and the two must list the same tasks.
macro_rules! text_matches {
    () => {
        "($3 IS NULL OR lower(description) LIKE $3 ESCAPE '\\' OR lower(notes) LIKE $3 ESCAPE '\\')"
    };
}

/// `%text%` for LIKE, with the pattern characters `%`, `_` and the escape `\` in the text escaped, so
/// searched text is only ever matched literally.
fn like_pattern(text: &str) -> String {
    let mut p = String::with_capacity(text.len() + 2);
    p.push('%');
    for c in text.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

impl Store {
    /// Tasks, most urgent first: priority ascending (1 is the most urgent; none last), then oldest.
    pub async fn list_tasks(&self, f: &TaskFilter) -> Result<Vec<Task>> {
        let mut tasks = Vec::new();
        self.for_each_task(f, |t| {
            tasks.push(t);
            Ok::<_, StoreError>(())
        })
        .await?;
        Ok(tasks)
    }

    /// [`list_tasks`](Self::list_tasks) one task at a time: `each` sees every task in order while at most
    /// a page of them is in memory (the listing's ids are read first, then the rows a page at a time).
    pub async fn for_each_task<E: From<StoreError>>(
        &self,
        f: &TaskFilter,
        mut each: impl FnMut(Task) -> Result<(), E>,
    ) -> Result<(), E> {
        let ids = self.listed_ids(f).await?;
        for page in ids.chunks(PAGE) {
            let marks = Marks::of(&self.pool).list(page.len(), 1);
            let sql =
                format!(concat!("SELECT ", task_columns!(), " FROM executor_queue WHERE id IN ({})"), marks);
            let mut by_id: HashMap<i64, Task> = on_pool!(self, |p| {
                let mut q = sqlx::query(&sql);
                for id in page {
                    q = q.bind(id);
                }
                let rows = q.fetch_all(p).await.map_err(StoreError::from)?;
                rows.iter().map(|r| task_from_row(r).map(|t| (t.id, t))).collect::<Result<_>>()?
            });
            // A task is never deleted: one missing here is a database changed under us.
            for id in page {
                let task = by_id
                    .remove(id)
                    .ok_or_else(|| StoreError::Corrupt(format!("task id {id} vanished while listed")))?;
                each(task)?;
            }
        }
        Ok(())
    }

    /// How many tasks the filter matches, ignoring its limit and offset.
    pub async fn count_tasks(&self, f: &TaskFilter) -> Result<i64> {
        let status = f.status.map(QueueStatus::as_str);
        let text = f.text.as_deref().map(like_pattern);
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar::<_, i64>(concat!(
                "SELECT COUNT(*) FROM executor_queue ",
                "WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR source = $2) AND ",
                text_matches!()
            ))
            .bind(status)
            .bind(f.source.as_deref())
            .bind(text.as_deref())
            .fetch_one(p)
            .await?
        }))
    }

    async fn listed_ids(&self, f: &TaskFilter) -> Result<Vec<i64>> {
        let status = f.status.map(QueueStatus::as_str);
        let text = f.text.as_deref().map(like_pattern);
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar::<_, i64>(concat!(
                "SELECT id FROM executor_queue ",
                "WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR source = $2) AND ",
                text_matches!(),
                " ORDER BY priority IS NULL, priority, added_at, id LIMIT $4 OFFSET $5"
            ))
            .bind(status)
            .bind(f.source.as_deref())
            .bind(text.as_deref())
            .bind(f.limit.unwrap_or(i64::MAX))
            .bind(f.offset.unwrap_or(0).max(0))
            .fetch_all(p)
            .await?
        }))
    }

    /// The tasks with these gids, in the order given (a gid given twice comes twice); an unknown gid is
    /// an error naming it. Read a page at a time.
    pub async fn tasks_by_gid(&self, gids: &[TaskGid]) -> Result<Vec<Task>> {
        let mut out = Vec::with_capacity(gids.len());
        for page in gids.chunks(PAGE) {
            let marks = Marks::of(&self.pool).list(page.len(), 1);
            let sql = format!(
                concat!("SELECT ", task_columns!(), " FROM executor_queue WHERE task_gid IN ({})"),
                marks
            );
            let found: HashMap<String, Task> = on_pool!(self, |p| {
                let mut q = sqlx::query(&sql);
                for gid in page {
                    q = q.bind(gid.as_str());
                }
                q.fetch_all(p)
                    .await?
                    .iter()
                    .map(|r| task_from_row(r).map(|t| (t.task_gid.as_str().to_string(), t)))
                    .collect::<Result<_>>()?
            });
            for gid in page {
                let task = found.get(gid.as_str()).ok_or_else(|| StoreError::UnknownTask(gid.to_string()))?;
                out.push(task.clone());
            }
        }
        Ok(out)
    }
}
