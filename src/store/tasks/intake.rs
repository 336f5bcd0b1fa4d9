//! Intake at scale: many tasks upserted with multi-row statements, chunk by chunk, inside ONE transaction.
//!
//! Why one transaction rather than validating everything first and committing chunk by chunk: the CLI
//! streams its input (it never holds 100,000 parsed tasks at once), so a refusal can come after
//! thousands of tasks were written; rolling the one transaction back is what keeps "a NUL or a bad gid
//! anywhere writes nothing". The price: on SQLite the write lock is held for the whole intake (other
//! writers wait through the busy timeout; 100,000 tasks hold it about two seconds, measured).
//!
//! Per chunk (at most [`CHUNK`] tasks, no gid twice — a repeated gid starts a new chunk, so it is
//! merged into what the earlier one wrote): one SELECT of the rows as they are (`FOR UPDATE` on
//! PostgreSQL, so nobody changes them before the writes; SQLite's `BEGIN IMMEDIATE` already excludes
//! other writers), the merge in memory ([`plan`]), one multi-row UPDATE, one multi-row INSERT and one
//! multi-row INSERT of the events. A task another intake inserted meanwhile (PostgreSQL only: the
//! INSERT's `ON CONFLICT DO NOTHING` skips it) is read again, locked, and merged as an update.
//!
//! SQL text is built from literals and placeholders only (`$N`, or `?` on SQLite: see [`Marks`]); every
//! value is a bound parameter.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

use super::plan::{Planned, plan};
use super::{NewTask, Upserted, task_from_row};
use crate::domain::{Actor, QueueStatus, Task, TaskGid};
use crate::store::columns::task_columns;
use crate::store::events::kind;
use crate::store::{BeginWrite, Pool, Result, Store, StoreError, now};

/// Tasks per multi-row statement: 16 values a row for the UPDATE keeps it far below SQLite's 32,766
/// variables (and PostgreSQL's 65,535), while 100,000 tasks take only 100 round trips per statement.
pub(crate) const CHUNK: usize = 1000;

/// How often a chunk is read again when another intake inserted one of its tasks meanwhile.
const INSERT_RACES: usize = 5;

/// What an intake did to one task: small, so 100,000 of them fit in a few megabytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IntakeResult {
    pub task_gid: TaskGid,
    pub result: Upserted,
    /// The task's status, which an intake never changes (`pending` for a task it added).
    pub status: QueueStatus,
    /// An approved task's new text waits for a human (`executor approve`).
    pub revision_pending: bool,
}

enum Tx {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

/// Expands `$body` once per backend with `$tx` the open transaction, as `on_pool!` does for pools.
macro_rules! on_tx {
    ($tx:expr, |$t:ident| $body:expr) => {
        match $tx {
            Tx::Sqlite($t) => $body,
            Tx::Postgres($t) => $body,
        }
    };
}

/// An open intake: [`add`](Intake::add) tasks in as many calls as suits the reader, then
/// [`commit`](Intake::commit). Dropped without committing (or after any error), it writes nothing.
pub struct Intake {
    tx: Tx,
    marks: Marks,
    actor: Actor,
    /// Tasks given so far, to name a refused one by its position in the whole input (from 1).
    given: usize,
    /// Set by an error: the transaction may be unusable, and nothing of it will be committed.
    failed: bool,
}

impl Store {
    /// Opens an intake: one write transaction into which any number of tasks are upserted.
    pub async fn begin_intake(&self, actor: Actor) -> Result<Intake> {
        let tx = match &self.pool {
            Pool::Sqlite(p) => Tx::Sqlite(p.begin_write().await?),
            Pool::Postgres(p) => Tx::Postgres(p.begin_write().await?),
        };
        Ok(Intake { tx, marks: Marks::of(&self.pool), actor, given: 0, failed: false })
    }
}

impl Intake {
    /// Upserts `tasks` as [`Store::upsert_task`] would, in order, and says what it did to each. A task
    /// with text the database cannot store is refused naming its position in the whole intake; after
    /// any error the intake is spoiled: drop it, nothing it wrote is kept.
    pub async fn add(&mut self, tasks: &[(TaskGid, NewTask)]) -> Result<Vec<IntakeResult>> {
        if self.failed {
            return Err(StoreError::Refused(
                "an earlier error spoiled this intake; nothing was written".into(),
            ));
        }
        let result = self.add_checked(tasks).await;
        if result.is_err() {
            self.failed = true;
        }
        result.map_err(conflict_on_deadlock)
    }

    /// Makes everything added durable, at once.
    pub async fn commit(self) -> Result<()> {
        if self.failed {
            return Err(StoreError::Refused(
                "an earlier error spoiled this intake; nothing was written".into(),
            ));
        }
        on_tx!(self.tx, |t| t.commit().await.map_err(|e| conflict_on_deadlock(e.into())))
    }

    async fn add_checked(&mut self, tasks: &[(TaskGid, NewTask)]) -> Result<Vec<IntakeResult>> {
        for (i, (gid, t)) in tasks.iter().enumerate() {
            if let Some(field) = t.unstorable_field() {
                return Err(StoreError::Refused(format!(
                    "task #{} (gid {gid}): there is a NUL character (\\0) in its {field}, which the database cannot store; nothing was written",
                    self.given + i + 1
                )));
            }
        }
        self.given += tasks.len();
        let mut out = Vec::with_capacity(tasks.len());
        let mut rest = tasks;
        while !rest.is_empty() {
            let mut seen = HashSet::new();
            let len = rest.iter().take(CHUNK).take_while(|(gid, _)| seen.insert(gid.as_str())).count();
            let (chunk, after) = rest.split_at(len);
            out.extend(self.write_chunk(chunk).await?);
            rest = after;
        }
        Ok(out)
    }

    /// Upserts a chunk whose gids are all different.
    async fn write_chunk(&mut self, chunk: &[(TaskGid, NewTask)]) -> Result<Vec<IntakeResult>> {
        let at = now();
        let mut done: Vec<Option<(Planned, QueueStatus)>> = vec![None; chunk.len()];
        let mut todo: Vec<usize> = (0..chunk.len()).collect();
        for _ in 0..INSERT_RACES {
            if todo.is_empty() {
                break;
            }
            let old = self.current(chunk, &todo).await?;
            let plans: Vec<(usize, Option<&Task>, Planned)> = todo
                .iter()
                .map(|&i| {
                    let old = old.get(chunk[i].0.as_str());
                    (i, old, plan(old, &chunk[i].1, at))
                })
                .collect();
            let updates: Vec<(usize, &Task, &Planned)> = plans
                .iter()
                .filter_map(|(i, old, p)| old.map(|o| (*i, o, p)))
                .filter(|(_, _, p)| p.outcome != Upserted::Unchanged)
                .collect();
            self.update(chunk, &updates, at).await?;
            let inserts: Vec<(usize, &Planned)> =
                plans.iter().filter(|(_, old, _)| old.is_none()).map(|(i, _, p)| (*i, p)).collect();
            let inserted = self.insert(chunk, &inserts, at).await?;
            let mut again = Vec::new();
            for (i, old, p) in plans {
                let status = old.map_or(QueueStatus::Pending, |o| o.status);
                if old.is_none() && !inserted.contains(chunk[i].0.as_str()) {
                    again.push(i);
                } else {
                    done[i] = Some((p, status));
                }
            }
            todo = again;
        }
        if let Some(&i) = todo.first() {
            return Err(StoreError::Conflict(format!("task {}", chunk[i].0)));
        }
        let done: Vec<(Planned, QueueStatus)> = done.into_iter().flatten().collect();
        self.record_events(chunk, &done).await?;
        Ok(chunk
            .iter()
            .zip(done)
            .map(|((gid, _), (p, status))| IntakeResult {
                task_gid: gid.clone(),
                result: p.outcome,
                status,
                revision_pending: p.revision_at.is_some(),
            })
            .collect())
    }

    /// The rows of the chunk's tasks `which` as they are, by gid; locked on PostgreSQL.
    async fn current(
        &mut self,
        chunk: &[(TaskGid, NewTask)],
        which: &[usize],
    ) -> Result<HashMap<String, Task>> {
        let lock = if matches!(self.tx, Tx::Postgres(_)) { " FOR UPDATE" } else { "" };
        let sql = format!(
            concat!("SELECT ", task_columns!(), " FROM executor_queue WHERE task_gid IN ({}){}"),
            self.marks.list(which.len(), 1),
            lock
        );
        let mut found = HashMap::with_capacity(which.len());
        on_tx!(&mut self.tx, |t| {
            let mut q = sqlx::query(&sql);
            for &i in which {
                q = q.bind(chunk[i].0.as_str());
            }
            for row in q.fetch_all(&mut **t).await? {
                let task = task_from_row(&row)?;
                found.insert(task.task_gid.as_str().to_string(), task);
            }
        });
        Ok(found)
    }

    /// Writes the merged fields of existing tasks, each only if its row is still as read.
    async fn update(
        &mut self,
        chunk: &[(TaskGid, NewTask)],
        rows: &[(usize, &Task, &Planned)],
        at: DateTime<Utc>,
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "WITH v (task_gid, source, description, notes, repo, priority, revision_description, revision_notes, \
               revision_at, url, completed, assignee, source_modified_at, raw_json, old_updated_at, at) \
               AS (VALUES {}) \
             UPDATE executor_queue SET updated_at = v.at, source = v.source, description = v.description, \
               notes = v.notes, repo = v.repo, priority = v.priority, revision_description = v.revision_description, \
               revision_notes = v.revision_notes, revision_at = v.revision_at, url = v.url, \
               completed = v.completed, assignee = v.assignee, source_modified_at = v.source_modified_at, \
               raw_json = v.raw_json \
             FROM v WHERE executor_queue.task_gid = v.task_gid AND executor_queue.updated_at = v.old_updated_at",
            self.marks.rows(rows.len(), 16, "")
        );
        let written = on_tx!(&mut self.tx, |t| {
            let mut q = sqlx::query(&sql);
            for (i, old, p) in rows {
                q = q
                    .bind(chunk[*i].0.as_str())
                    .bind(p.source.as_deref())
                    .bind(p.description.as_deref())
                    .bind(p.notes.as_deref())
                    .bind(p.repo.as_deref())
                    .bind(p.priority.map(i64::from))
                    .bind(p.revision_description.as_deref())
                    .bind(p.revision_notes.as_deref())
                    .bind(p.revision_at)
                    .bind(p.facts.url.as_deref())
                    .bind(p.facts.completed.map(i64::from))
                    .bind(p.facts.assignee.as_deref())
                    .bind(p.facts.modified_at)
                    .bind(p.facts.raw_json.as_deref())
                    .bind(old.updated_at)
                    .bind(at);
            }
            q.execute(&mut **t).await?.rows_affected()
        });
        if written != rows.len() as u64 {
            return Err(StoreError::Conflict(format!("one of {} tasks being updated", rows.len())));
        }
        Ok(())
    }

    /// Inserts new tasks; returns the gids actually inserted (on PostgreSQL another intake may have
    /// inserted some meanwhile: those are skipped, and merged as updates on the next round).
    async fn insert(
        &mut self,
        chunk: &[(TaskGid, NewTask)],
        rows: &[(usize, &Planned)],
        at: DateTime<Utc>,
    ) -> Result<HashSet<String>> {
        if rows.is_empty() {
            return Ok(HashSet::new());
        }
        let sql = format!(
            "INSERT INTO executor_queue (task_gid, source, description, notes, repo, priority, url, completed, \
               assignee, source_modified_at, raw_json, added_at, updated_at, status) \
             VALUES {} ON CONFLICT (task_gid) DO NOTHING RETURNING task_gid",
            self.marks.rows(rows.len(), 13, ", 'pending'")
        );
        let mut inserted = HashSet::with_capacity(rows.len());
        on_tx!(&mut self.tx, |t| {
            let mut q = sqlx::query_scalar::<_, String>(&sql);
            for (i, p) in rows {
                q = q
                    .bind(chunk[*i].0.as_str())
                    .bind(p.source.as_deref())
                    .bind(p.description.as_deref())
                    .bind(p.notes.as_deref())
                    .bind(p.repo.as_deref())
                    .bind(p.priority.map(i64::from))
                    .bind(p.facts.url.as_deref())
                    .bind(p.facts.completed.map(i64::from))
                    .bind(p.facts.assignee.as_deref())
                    .bind(p.facts.modified_at)
                    .bind(p.facts.raw_json.as_deref())
                    .bind(at)
                    .bind(at);
            }
            inserted.extend(q.fetch_all(&mut **t).await?);
        });
        Ok(inserted)
    }

    /// One event per task added or changed, in the order given (as one upsert after another would).
    async fn record_events(
        &mut self,
        chunk: &[(TaskGid, NewTask)],
        done: &[(Planned, QueueStatus)],
    ) -> Result<()> {
        let events: Vec<(&str, &Planned)> = chunk
            .iter()
            .zip(done)
            .filter(|(_, (p, _))| p.outcome != Upserted::Unchanged)
            .map(|((gid, _), (p, _))| (gid.as_str(), p))
            .collect();
        if events.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "INSERT INTO executor_events (task_gid, kind, to_state, reason, at, actor) VALUES {}",
            self.marks.rows(events.len(), 6, "")
        );
        let actor = self.actor.as_str();
        on_tx!(&mut self.tx, |t| {
            let (mut q, at) = (sqlx::query(&sql), now());
            for (gid, p) in &events {
                let added = p.outcome == Upserted::Added;
                q = q
                    .bind(*gid)
                    .bind(if added { kind::TASK_ADDED } else { kind::TASK_UPDATED })
                    .bind(added.then_some(QueueStatus::Pending.as_str()))
                    .bind(p.reason)
                    .bind(at)
                    .bind(actor);
            }
            q.execute(&mut **t).await?;
        });
        Ok(())
    }
}

/// How a statement's placeholders are written. SQLite looks a `$N` parameter up by name in a list, so
/// binding thousands of them is quadratic (most of an intake's time, measured): there every value is an
/// anonymous `?`, bound in the order the text names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::store) enum Marks {
    Numbered,
    Anonymous,
}

impl Marks {
    pub(in crate::store) fn of(pool: &Pool) -> Marks {
        match pool {
            Pool::Sqlite(_) => Marks::Anonymous,
            Pool::Postgres(_) => Marks::Numbered,
        }
    }

    /// `$first, $first+1, …` or `?, ?, …` (`n` of them).
    pub(in crate::store) fn list(self, n: usize, first: usize) -> String {
        (first..first + n)
            .map(|k| match self {
                Marks::Numbered => format!("${k}"),
                Marks::Anonymous => "?".to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `(…cols…<tail>), (…)` for `rows` rows: the VALUES of a multi-row statement, its parameters bound
    /// row by row. `tail` is literal SQL shared by every row (a constant).
    pub(in crate::store) fn rows(self, rows: usize, cols: usize, tail: &str) -> String {
        (0..rows).map(|r| format!("({}{tail})", self.list(cols, 1 + r * cols))).collect::<Vec<_>>().join(", ")
    }
}

/// A deadlock or serialization failure between two intakes (PostgreSQL) is a conflict: nothing was
/// written and running the command again is the remedy.
fn conflict_on_deadlock(e: StoreError) -> StoreError {
    match &e {
        StoreError::Db(sqlx::Error::Database(d))
            if matches!(d.code().as_deref(), Some("40P01" | "40001")) =>
        {
            StoreError::Conflict("the queue".into())
        }
        _ => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_placeholders_only() {
        assert_eq!(Marks::Numbered.list(3, 4), "$4, $5, $6");
        assert_eq!(Marks::Numbered.rows(2, 2, ", 'x'"), "($1, $2, 'x'), ($3, $4, 'x')");
        assert_eq!(Marks::Anonymous.rows(2, 2, ""), "(?, ?), (?, ?)");
    }
}
