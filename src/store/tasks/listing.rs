//! Reading tasks back: listings in the order work is taken, and tasks by gid, in pages, so 100,000
//! tasks are never all in memory at once.

use std::collections::HashMap;

use super::find::{Conditions, Value};
use super::intake::Marks;
use super::{TaskFilter, task_from_row};
use crate::domain::{Task, TaskGid};
use crate::store::columns::task_columns;
use crate::store::{Pool, Result, Store, StoreError, on_pool};

/// Rows read by one statement when paging by key.
const PAGE: usize = 500;

impl Store {
    /// The tasks the filter lists, in its order (by default most urgent first: priority ascending, 1
    /// the most urgent and none last, then oldest).
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

    /// How many tasks the filter matches, ignoring its sort, limit and offset.
    pub async fn count_tasks(&self, f: &TaskFilter) -> Result<i64> {
        let postgres = matches!(self.pool, Pool::Postgres(_));
        let c = Conditions::of(f, postgres);
        // A search alone is counted in its own index on SQLite: a common word matches most tasks, and
        // the index counts them without testing each task against the matches.
        let sql = match c.search_only(postgres) {
            Some(sql) => sql.to_string(),
            None => format!("SELECT COUNT(*) FROM executor_queue {}", c.sql),
        };
        Ok(on_pool!(self, |p| {
            let mut q = sqlx::query_scalar::<_, i64>(&sql);
            for v in &c.values {
                q = match v {
                    Value::Text(s) => q.bind(s),
                    Value::Int(n) => q.bind(n),
                    Value::Time(t) => q.bind(t),
                };
            }
            q.fetch_one(p).await?
        }))
    }

    /// The ids of the listed tasks, in order: the statement is the filter's fixed conditions and its
    /// sort's fixed `ORDER BY` (see `find.rs`), every value bound.
    async fn listed_ids(&self, f: &TaskFilter) -> Result<Vec<i64>> {
        let postgres = matches!(self.pool, Pool::Postgres(_));
        let c = Conditions::of(f, postgres);
        let from = if postgres && c.searches() {
            // PostgreSQL cannot estimate how many tasks a prefix search matches: guessing few, it would
            // walk the sort's index testing every task's words (seconds for a rare word). Behind the
            // fence (`OFFSET 0`) it finds the matches in the search's index first, then sorts them.
            format!(
                "(SELECT id, task_gid, source, status, priority, complexity, feasibility, added_at, updated_at \
                 FROM executor_queue {} OFFSET 0) found",
                c.sql
            )
        } else {
            format!("executor_queue {}", c.sql)
        };
        let sql = format!(
            "SELECT id FROM {from} {} LIMIT ${} OFFSET ${}",
            f.sort.order_by(postgres, f.descending),
            c.next(),
            c.next() + 1
        );
        Ok(on_pool!(self, |p| {
            let mut q = sqlx::query_scalar::<_, i64>(&sql);
            for v in &c.values {
                q = match v {
                    Value::Text(s) => q.bind(s),
                    Value::Int(n) => q.bind(n),
                    Value::Time(t) => q.bind(t),
                };
            }
            q.bind(f.limit.unwrap_or(i64::MAX).max(0)).bind(f.offset.unwrap_or(0).max(0)).fetch_all(p).await?
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
