//! The queue: tasks taken in from trackers, and their triage status.

use super::events::{NewEvent, insert_event, kind};
use super::row::{Cols, narrow};
use super::{BeginWrite, Result, Store, StoreError, now, on_pool};
use crate::domain::{Actor, QueueStatus, Task, TaskGid};

/// A task as given by a tracker or by `executor queue add`.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTask {
    #[serde(alias = "gid")]
    pub task_gid: Option<TaskGid>,
    pub source: Option<String>,
    pub description: Option<String>,
    pub notes: Option<String>,
    pub repo: Option<String>,
    pub priority: Option<i32>,
}

/// What `upsert_task` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Upserted {
    Added,
    Updated,
    Unchanged,
}

#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    pub status: Option<QueueStatus>,
    pub source: Option<String>,
    pub limit: Option<i64>,
}

pub(crate) fn task_from_row(r: &impl Cols) -> Result<Task> {
    Ok(Task {
        id: r.req_int("id")?,
        task_gid: r.parsed("task_gid")?,
        added_at: r.req_time("added_at")?,
        updated_at: r.req_time("updated_at")?,
        source: r.text("source")?,
        description: r.text("description")?,
        notes: r.text("notes")?,
        status: r.parsed("status")?,
        priority: r.int("priority")?.map(|v| narrow("priority", v)).transpose()?,
        complexity: r.text("complexity")?,
        feasibility: r.text("feasibility")?,
        analysis_summary: r.text("analysis_summary")?,
        executor_run_id: r.int("executor_run_id")?,
        repo: r.text("repo")?,
    })
}

impl Store {
    /// Adds a task, or updates the tracker-owned fields (description, notes, source, repo, priority) of an
    /// existing one without touching its status, analysis or history.
    pub async fn upsert_task(&self, gid: &TaskGid, t: &NewTask, actor: Actor) -> Result<(Task, Upserted)> {
        let existing = self.find_task(gid).await?;
        let outcome = match &existing {
            None => Upserted::Added,
            Some(old) => {
                let merged = (
                    t.source.as_ref().or(old.source.as_ref()),
                    t.description.as_ref().or(old.description.as_ref()),
                    t.notes.as_ref().or(old.notes.as_ref()),
                    t.repo.as_ref().or(old.repo.as_ref()),
                    t.priority.or(old.priority),
                );
                let before = (
                    old.source.as_ref(),
                    old.description.as_ref(),
                    old.notes.as_ref(),
                    old.repo.as_ref(),
                    old.priority,
                );
                if merged == before { Upserted::Unchanged } else { Upserted::Updated }
            }
        };
        if outcome != Upserted::Unchanged {
            let at = now();
            let ev = NewEvent {
                actor,
                task_gid: Some(gid.as_str()),
                run_id: None,
                kind: if outcome == Upserted::Added { kind::TASK_ADDED } else { kind::TASK_UPDATED },
                from_state: None,
                to_state: (outcome == Upserted::Added).then_some(QueueStatus::Pending.as_str()),
                reason: None,
            };
            on_pool!(self, |p| {
                let mut tx = p.begin_write().await?;
                // COALESCE keeps a field the caller did not give; ON CONFLICT makes a concurrent add of the
                // same gid an update rather than an error.
                sqlx::query(
                    "INSERT INTO executor_queue (task_gid, added_at, updated_at, source, description, notes, repo, priority, status) \
                     VALUES ($1, $2, $2, $3, $4, $5, $6, $7, 'pending') \
                     ON CONFLICT (task_gid) DO UPDATE SET updated_at = $2, \
                       source = COALESCE($3, executor_queue.source), \
                       description = COALESCE($4, executor_queue.description), \
                       notes = COALESCE($5, executor_queue.notes), \
                       repo = COALESCE($6, executor_queue.repo), \
                       priority = COALESCE($7, executor_queue.priority)",
                )
                .bind(gid.as_str())
                .bind(at)
                .bind(t.source.as_deref())
                .bind(t.description.as_deref())
                .bind(t.notes.as_deref())
                .bind(t.repo.as_deref())
                .bind(t.priority.map(i64::from))
                .execute(&mut *tx)
                .await?;
                insert_event!(&mut *tx, ev)?;
                tx.commit().await?;
            });
        }
        Ok((self.task(gid).await?, outcome))
    }

    pub async fn find_task(&self, gid: &TaskGid) -> Result<Option<Task>> {
        on_pool!(self, |p| {
            sqlx::query("SELECT * FROM executor_queue WHERE task_gid = $1")
                .bind(gid.as_str())
                .fetch_optional(p)
                .await?
                .map(|r| task_from_row(&r))
                .transpose()
        })
    }

    /// Like `find_task`, but a missing task is an error naming the gid.
    pub async fn task(&self, gid: &TaskGid) -> Result<Task> {
        self.find_task(gid).await?.ok_or_else(|| StoreError::UnknownTask(gid.to_string()))
    }

    /// Tasks, most urgent first: priority ascending (1 is the most urgent; none last), then oldest.
    pub async fn list_tasks(&self, f: &TaskFilter) -> Result<Vec<Task>> {
        let status = f.status.map(|s| s.as_str());
        on_pool!(self, |p| {
            sqlx::query(
                "SELECT * FROM executor_queue WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR source = $2) \
                 ORDER BY priority IS NULL, priority, added_at, id LIMIT $3",
            )
            .bind(status)
            .bind(f.source.as_deref())
            .bind(f.limit.unwrap_or(i64::MAX))
            .fetch_all(p)
            .await?
            .iter()
            .map(task_from_row)
            .collect()
        })
    }

    /// The one way a task's status changes: checks the move is legal, applies it only if nobody changed
    /// the status meanwhile, and records the event in the same transaction.
    pub async fn set_task_status(
        &self,
        gid: &TaskGid,
        to: QueueStatus,
        actor: Actor,
        reason: Option<&str>,
    ) -> Result<Task> {
        let from = self.task(gid).await?.status;
        from.check(to)?;
        let ev = NewEvent {
            actor,
            task_gid: Some(gid.as_str()),
            run_id: None,
            kind: kind::QUEUE_STATUS,
            from_state: Some(from.as_str()),
            to_state: Some(to.as_str()),
            reason,
        };
        let changed = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let n = sqlx::query(
                "UPDATE executor_queue SET status = $1, updated_at = $2 WHERE task_gid = $3 AND status = $4",
            )
            .bind(to.as_str())
            .bind(now())
            .bind(gid.as_str())
            .bind(from.as_str())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if n == 1 {
                insert_event!(&mut *tx, ev)?;
                tx.commit().await?;
            }
            n == 1
        });
        if !changed {
            return Err(StoreError::Conflict(format!("task {gid}")));
        }
        self.task(gid).await
    }

    /// Stores the analyzer's findings. The status change, if any, goes through `set_task_status`.
    pub async fn set_task_analysis(
        &self,
        gid: &TaskGid,
        priority: Option<i32>,
        complexity: Option<&str>,
        feasibility: Option<&str>,
        summary: Option<&str>,
    ) -> Result<()> {
        let n = on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_queue SET priority = COALESCE($1, priority), complexity = $2, feasibility = $3, \
                 analysis_summary = $4, updated_at = $5 WHERE task_gid = $6",
            )
            .bind(priority.map(i64::from))
            .bind(complexity)
            .bind(feasibility)
            .bind(summary)
            .bind(now())
            .bind(gid.as_str())
            .execute(p)
            .await?
            .rows_affected()
        });
        if n == 0 {
            return Err(StoreError::UnknownTask(gid.to_string()));
        }
        Ok(())
    }
}

impl Store {
    /// Lets an approved task whose run was abandoned get a new run: the runner creates one on its next
    /// tick (on a new branch). Refused, naming why, for any other task.
    pub async fn retry_task(&self, gid: &TaskGid, actor: Actor, reason: &str) -> Result<Task> {
        let task = self.task(gid).await?;
        let ev = NewEvent {
            actor,
            task_gid: Some(gid.as_str()),
            run_id: task.executor_run_id,
            kind: kind::NOTE,
            from_state: None,
            to_state: None,
            reason: Some(reason),
        };
        let n = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let n = sqlx::query(
                "UPDATE executor_queue SET executor_run_id = NULL, updated_at = $1 \
                 WHERE task_gid = $2 AND status = 'approved' \
                   AND executor_run_id IN (SELECT id FROM executor_runs WHERE state = 'abandoned')",
            )
            .bind(now())
            .bind(gid.as_str())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if n == 1 {
                insert_event!(&mut *tx, ev)?;
                tx.commit().await?;
            }
            n
        });
        if n == 0 {
            let why = match (task.status, task.executor_run_id) {
                (QueueStatus::Approved, Some(run)) => format!("its run {run} is not abandoned"),
                (QueueStatus::Approved, None) => "it has no run yet: the runner will create one".into(),
                (status, _) => format!("it is {status}, and only an approved task is retried"),
            };
            return Err(StoreError::Refused(format!("task {gid} cannot be retried: {why}")));
        }
        self.task(gid).await
    }
}
