//! The queue: tasks taken in from trackers, and their triage status.

mod find;
mod intake;
mod listing;
mod plan;

pub use find::{MAX_SEARCH_WORDS, TaskSort, search_words};

pub(super) use intake::{CHUNK, Marks};
pub use intake::{Intake, IntakeResult};

use super::columns::task_columns;
use super::events::{NewEvent, insert_event, kind, update_one_with_event};
use super::row::{Cols, narrow};
use super::{BeginWrite, Result, Store, StoreError, now, on_pool};
use crate::domain::{Actor, By, QueueStatus, SkippedBy, Task, TaskGid};

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
    /// The task's page at its tracker.
    pub url: Option<String>,
    /// Whether the tracker says it is done; absent when it does not say.
    pub completed: Option<bool>,
    pub assignee: Option<String>,
    pub modified_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The tracker's whole object, kept for the filters' `raw.*` fields.
    pub raw: Option<serde_json::Value>,
}

impl NewTask {
    /// The first text field either backend would refuse, and why: PostgreSQL cannot store NUL in text
    /// (Rust strings are always valid UTF-8, the other thing it refuses).
    pub fn unstorable_field(&self) -> Option<&'static str> {
        [
            ("source", &self.source),
            ("description", &self.description),
            ("notes", &self.notes),
            ("repo", &self.repo),
            ("url", &self.url),
            ("assignee", &self.assignee),
        ]
        .into_iter()
        .find(|(_, v)| v.as_deref().is_some_and(|v| v.contains('\0')))
        .map(|(name, _)| name)
    }
}

/// What `upsert_task` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Upserted {
    Added,
    Updated,
    Unchanged,
    /// The task was approved (or done) and its description or notes changed: the approved text is kept
    /// and the new one recorded as a revision for a human to accept (`executor approve`) or not.
    Revised,
}

/// Which tasks a listing shows, in which order, and which page of them. Every field narrows (all of
/// them together); none set lists every task, most urgent first.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    pub status: Option<QueueStatus>,
    pub source: Option<String>,
    pub repo: Option<String>,
    /// Priority at least this (inclusive; a task with none never matches a priority bound).
    pub priority_min: Option<i64>,
    /// Priority at most this (inclusive).
    pub priority_max: Option<i64>,
    /// Added at or after this time.
    pub added_since: Option<chrono::DateTime<chrono::Utc>>,
    /// Added before this time.
    pub added_before: Option<chrono::DateTime<chrono::Utc>>,
    /// A search: the tasks whose description or notes hold every word of it (the runs of letters and
    /// digits, [`search_words`]), each as a word or the start of one, ignoring case. Text with no
    /// words (only punctuation) narrows nothing.
    pub text: Option<String>,
    pub sort: TaskSort,
    pub descending: bool,
    pub limit: Option<i64>,
    /// Skip this many (of the tasks in listing order) before the first one listed.
    pub offset: Option<i64>,
}

/// The longest age a filter takes (a hundred years): anything longer is a typing mistake.
const MAX_AGE_DAYS: i64 = 36_500;

/// `raw` (`7d`, `12h`, `2w`, `1day`) as the moment that long before `now`: the one reading of an age for
/// [`TaskFilter::added_since`] and `added_before`, the dashboard's and `queue list`'s alike.
pub fn age_cutoff(
    raw: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<chrono::DateTime<chrono::Utc>, String> {
    let why = || format!("{raw:?} is not an age: give one such as 12h, 7d or 30d");
    let span = humantime::parse_duration(raw).map_err(|_| why())?;
    let span =
        chrono::Duration::from_std(span).ok().filter(|d| d.num_days() <= MAX_AGE_DAYS).ok_or_else(why)?;
    Ok(now - span)
}

impl TaskFilter {
    /// Whether any field narrows the tasks listed (the order and the page do not).
    pub fn narrows(&self) -> bool {
        self.status.is_some()
            || self.source.is_some()
            || self.repo.is_some()
            || self.priority_min.is_some()
            || self.priority_max.is_some()
            || self.added_since.is_some()
            || self.added_before.is_some()
            || self.text.is_some()
    }
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
        revision_description: r.text("revision_description")?,
        revision_notes: r.text("revision_notes")?,
        revision_at: r.time("revision_at")?,
        url: r.text("url")?,
        completed: r.int("completed")?.map(|v| v != 0),
        assignee: r.text("assignee")?,
        source_modified_at: r.time("source_modified_at")?,
        raw_json: r.text("raw_json")?,
        skip_rule: r.text("skip_rule")?,
        skip_why: r.text("skip_why")?,
        skipped_by: r
            .text("skipped_by")?
            .map(|s| s.parse().map_err(|e| StoreError::Corrupt(format!("executor_queue.skipped_by: {e}"))))
            .transpose()?,
        acceptance_criteria: match r.text("acceptance_criteria")? {
            Some(json) => serde_json::from_str(&json).map_err(|e| {
                StoreError::Corrupt(format!("executor_queue.acceptance_criteria is not a JSON list: {e}"))
            })?,
            None => Vec::new(),
        },
        analyzed_at: r.time("analyzed_at")?,
        analysis_error: r.text("analysis_error")?,
        analysis_attempts: r.req_int("analysis_attempts")?,
        analysis_retry_at: r.time("analysis_retry_at")?,
        analysis_round: r.req_int("analysis_round")?,
        claim_owner: r.text("claim_owner")?,
        claim_expires_at: r.time("claim_expires_at")?,
    })
}

impl Store {
    /// Adds a task, or updates the tracker-owned fields (description, notes, source, repo, priority) of an
    /// existing one without touching its status, analysis or history. An approved (or done) task keeps
    /// the text a human approved: a different one is recorded as a revision ([`Upserted::Revised`]).
    pub async fn upsert_task(&self, gid: &TaskGid, t: &NewTask, actor: Actor) -> Result<(Task, Upserted)> {
        let mut done = self.upsert_tasks(&[(gid.clone(), t.clone())], actor).await?;
        done.pop().ok_or_else(|| StoreError::Corrupt(format!("task {gid} vanished while written")))
    }

    /// [`upsert_task`](Self::upsert_task) for several tasks, all or nothing: every task is checked before
    /// anything is written (a refusal names the task by its position, from 1, and gid), and all are
    /// written in one transaction, a chunk at a time (see [`Store::begin_intake`], which a reader that
    /// streams its input uses directly).
    pub async fn upsert_tasks(
        &self,
        tasks: &[(TaskGid, NewTask)],
        actor: Actor,
    ) -> Result<Vec<(Task, Upserted)>> {
        // A deadlock with a concurrent intake (PostgreSQL) rolls everything back: start again.
        let mut attempts = 0;
        let outcomes = loop {
            attempts += 1;
            match self.upsert_once(tasks, actor).await {
                Err(StoreError::Conflict(_)) if attempts < 5 => continue,
                other => break other?,
            }
        };
        let gids: Vec<TaskGid> = tasks.iter().map(|(gid, _)| gid.clone()).collect();
        let written = self.tasks_by_gid(&gids).await?;
        Ok(written.into_iter().zip(outcomes).map(|(task, done)| (task, done.result)).collect())
    }

    async fn upsert_once(&self, tasks: &[(TaskGid, NewTask)], actor: Actor) -> Result<Vec<IntakeResult>> {
        let mut intake = self.begin_intake(actor).await?;
        let outcomes = intake.add(tasks).await?;
        intake.commit().await?;
        Ok(outcomes)
    }

    /// Makes an approved task's pending revision its text (a human read it and approves it), records
    /// that, and clears the revision. Refused, naming why, when there is none.
    pub async fn accept_task_revision(&self, gid: &TaskGid, by: impl Into<By<'_>>) -> Result<Task> {
        let by = by.into();
        let task = self.task(gid).await?;
        let ev = NewEvent {
            actor: by.actor,
            actor_id: by.name,
            task_gid: Some(gid.as_str()),
            run_id: task.executor_run_id,
            kind: kind::TASK_UPDATED,
            from_state: None,
            to_state: None,
            reason: Some("revision approved: it is now the task's text"),
        };
        let approved = update_one_with_event!(
            self,
            ev,
            "UPDATE executor_queue SET description = COALESCE(revision_description, description), \
                   notes = COALESCE(revision_notes, notes), revision_description = NULL, revision_notes = NULL, \
                   revision_at = NULL, updated_at = $1 \
                 WHERE task_gid = $2 AND status = 'approved' AND revision_at IS NOT NULL",
            now(),
            gid.as_str()
        );
        if !approved {
            let why = match task.status {
                QueueStatus::Approved => "it has no pending revision".to_string(),
                status => format!("it is {status}, and only an approved task's revision is approved"),
            };
            return Err(StoreError::Refused(format!("task {gid}: no revision to approve: {why}")));
        }
        self.task(gid).await
    }

    pub async fn find_task(&self, gid: &TaskGid) -> Result<Option<Task>> {
        on_pool!(self, |p| {
            sqlx::query(concat!("SELECT ", task_columns!(), " FROM executor_queue WHERE task_gid = $1"))
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

    /// The one way a task's status changes: checks the move is legal, applies it only if nobody changed
    /// the status meanwhile, and records the event in the same transaction. A skip made here is a
    /// human's (`SkippedBy::Human`, whatever decided before): the analyzer records its own skips with
    /// `record_filter_skip` and `record_triage`, an import with [`Store::skip_imported_task`].
    pub async fn set_task_status(
        &self,
        gid: &TaskGid,
        to: QueueStatus,
        by: impl Into<By<'_>>,
        reason: Option<&str>,
    ) -> Result<Task> {
        self.move_task(gid, to, SkippedBy::Human, by.into(), reason).await
    }

    /// Skips a task imported skipped from a v1 export: who made that decision is unknown, so it is
    /// recorded as `SkippedBy::Imported` (which `executor reanalyze` looks at again by default), not as a
    /// human's.
    pub async fn skip_imported_task(
        &self,
        gid: &TaskGid,
        actor: Actor,
        reason: Option<&str>,
    ) -> Result<Task> {
        self.move_task(gid, QueueStatus::Skip, SkippedBy::Imported, actor.into(), reason).await
    }

    /// `set_task_status`, recording `skipped_by` when the move is to `skip` (and clearing it otherwise),
    /// in the statement that moves the task.
    async fn move_task(
        &self,
        gid: &TaskGid,
        to: QueueStatus,
        skipped_by: SkippedBy,
        by: By<'_>,
        reason: Option<&str>,
    ) -> Result<Task> {
        let skipped_by = (to == QueueStatus::Skip).then_some(skipped_by.as_str());
        let from = self.task(gid).await?.status;
        from.check(to)?;
        let ev = NewEvent {
            actor: by.actor,
            actor_id: by.name,
            task_gid: Some(gid.as_str()),
            run_id: None,
            kind: kind::QUEUE_STATUS,
            from_state: Some(from.as_str()),
            to_state: Some(to.as_str()),
            reason,
        };
        let changed = update_one_with_event!(
            self,
            ev,
            "UPDATE executor_queue SET status = $1, updated_at = $2, skipped_by = $5 WHERE task_gid = $3 AND status = $4",
            to.as_str(),
            now(),
            gid.as_str(),
            from.as_str(),
            skipped_by
        );
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
    /// Lets a task whose run was abandoned get a new run: the runner creates one on its next tick (on a
    /// new branch). A done task (its completed pull request was closed unmerged) comes back to approved.
    /// Refused, naming why, for any other task.
    pub async fn retry_task(&self, gid: &TaskGid, by: impl Into<By<'_>>, reason: &str) -> Result<Task> {
        let by = by.into();
        let task = self.task(gid).await?;
        let ev = NewEvent {
            actor: by.actor,
            actor_id: by.name,
            task_gid: Some(gid.as_str()),
            run_id: task.executor_run_id,
            kind: kind::NOTE,
            from_state: None,
            to_state: None,
            reason: Some(reason),
        };
        let n = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            // A done task comes back to approved: its completed pull request was closed unmerged.
            let n = sqlx::query(
                "UPDATE executor_queue SET executor_run_id = NULL, status = 'approved', updated_at = $1 \
                 WHERE task_gid = $2 AND status IN ('approved', 'done') \
                   AND executor_run_id IN (SELECT id FROM executor_runs WHERE state = 'abandoned')",
            )
            .bind(now())
            .bind(gid.as_str())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if n == 1 {
                insert_event!(self, &mut *tx, ev)?;
                if task.status == QueueStatus::Done {
                    let moved = NewEvent {
                        kind: kind::QUEUE_STATUS,
                        from_state: Some(QueueStatus::Done.as_str()),
                        to_state: Some(QueueStatus::Approved.as_str()),
                        ..ev
                    };
                    insert_event!(self, &mut *tx, moved)?;
                }
                tx.commit().await?;
            }
            n
        });
        if n == 0 {
            let why = match (task.status, task.executor_run_id) {
                (QueueStatus::Approved | QueueStatus::Done, Some(run)) => {
                    format!("its run {run} is not abandoned")
                }
                (QueueStatus::Approved, None) => "it has no run yet: the runner will create one".into(),
                (status, _) => format!("it is {status}, and only an approved or done task is retried"),
            };
            return Err(StoreError::Refused(format!("task {gid} cannot be retried: {why}")));
        }
        self.task(gid).await
    }
}
