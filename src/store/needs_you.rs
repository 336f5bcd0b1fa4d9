//! What waits on a human, for the dashboard's "Needs you": tasks awaiting go or for review, analyses
//! given up on, runs stopped on budget, runs whose checks never reported, abandoned runs whose notice is
//! unread, sources whose last fetch failed, plans that wait for approval, questions that wait for an
//! answer, and tracker edits to approved or done tasks that wait to be accepted. A fixed number of
//! statements whatever the queue's size, each list bounded and counted whole (a count, never the
//! length of the part returned).
//!
//! "Unread" is a human's act, recorded (see `seen`): a notice stays unread until someone marks it read on
//! the dashboard (`mark_notice_read`), whether or not it was delivered to the pull request or a webhook —
//! delivery says where it went, not that anyone saw it. An abandoned run also leaves the list once its
//! task is retried (the task no longer points at it). A source's failed fetch is unread until dismissed
//! (`dismiss_source_error`); a later failure is unread again.

use chrono::{DateTime, Utc};

use super::columns::{run_columns, task_columns};
use super::row::Cols;
use super::runs::run_from_row;
use super::tasks::task_from_row;
use super::{Pool, Result, Store, StoreError, on_pool};
use crate::domain::{
    ABANDONED_NOTICE_KIND, BudgetCap, CHECKS_TIMEOUT_KEY, PlanStatus, QueueStatus, Run, Task, WorkerKind,
};

/// How many of each list's items come back (the totals count them all).
#[derive(Debug, Clone, Copy)]
pub struct NeedsYouLimits {
    pub per_list: i64,
    /// `analyzer.max_attempts`: a pending task with this many failed analyses is given up on.
    pub max_analysis_attempts: u32,
}

/// Some of a list's items, and how many there are in all.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Listed<T> {
    pub total: i64,
    pub items: Vec<T>,
}

/// A run that waits on a human, with its task's text (for a title) and the notice that says why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunNeed {
    pub run: Run,
    /// The beginning of the task's description (its first line is the title).
    pub task_text: Option<String>,
    pub notice: Option<NeedNotice>,
    /// What the runner last decided for it (for a budget stop: which cap, and by how much).
    pub last_decision: Option<String>,
    /// The cap that stopped it, if one did: what can help depends on which.
    pub budget_cap: Option<BudgetCap>,
}

/// The unread notice behind a run's place on the list.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NeedNotice {
    pub id: i64,
    pub message: String,
    pub created_at: DateTime<Utc>,
}

/// A source whose last fetch failed and that nobody has dismissed since.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FailedSource {
    pub source: String,
    pub error: String,
    pub failed_at: Option<DateTime<Utc>>,
    pub fetched_at: Option<DateTime<Utc>>,
}

/// A queued run whose newest plan waits for a person's approval before any code is written.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PlanNeed {
    pub run: Run,
    /// The beginning of the task's description (its first line is the title).
    pub task_text: Option<String>,
    pub plan_id: i64,
    pub revision: i64,
    /// The plan's first 2,000 characters (Markdown, redacted; the run's page has it all).
    pub plan_text: String,
    pub written_at: DateTime<Utc>,
}

/// A run whose worker asked a question nobody has answered: it waits until someone does.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QuestionNeed {
    pub run: Run,
    /// The beginning of the task's description (its first line is the title).
    pub task_text: Option<String>,
    pub question_id: i64,
    pub worker_kind: WorkerKind,
    /// The question's first 2,000 characters (redacted; the run's page has it all).
    pub question: String,
    pub asked_at: DateTime<Utc>,
}

/// Everything that waits on a human, list by list.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NeedsYou {
    pub awaiting_go: Listed<Task>,
    pub for_review: Listed<Task>,
    /// Pending tasks whose analysis failed `analyzer.max_attempts` times.
    pub analysis_given_up: Listed<Task>,
    pub budget_stopped: Listed<RunNeed>,
    /// Of those, how many the day's cap stopped (all of them, not only the part listed).
    pub budget_day_stopped: i64,
    /// Runs in `pr` told that checks at their current head have not reported, not yet read.
    pub checks_overdue: Listed<RunNeed>,
    /// Abandoned runs, still their task's run, whose abandonment notice is unread.
    pub abandoned_unread: Listed<RunNeed>,
    pub failed_sources: Listed<FailedSource>,
    /// Queued runs whose newest plan awaits approval (the runner starts no code for them until then).
    pub plans_awaiting: Listed<PlanNeed>,
    /// Runs, not abandoned, with a question nobody has answered (the runner starts no worker for them).
    pub open_questions: Listed<QuestionNeed>,
    /// Approved or done tasks whose tracker sent new text that waits for a person (agents are told only
    /// the approved text until it is accepted), oldest revision first.
    pub revisions_pending: Listed<Task>,
}

impl NeedsYou {
    /// Items waiting, over every list: each list's count of all it holds, not of the items returned, so
    /// a page showing 20 of each and an API returning 100 say the same.
    pub fn total(&self) -> i64 {
        self.awaiting_go.total
            + self.for_review.total
            + self.analysis_given_up.total
            + self.budget_stopped.total
            + self.checks_overdue.total
            + self.abandoned_unread.total
            + self.failed_sources.total
            + self.plans_awaiting.total
            + self.open_questions.total
            + self.revisions_pending.total
    }
}

/// A run's columns, then its task's text and its notice's columns (`need_*`, named so as not to clash
/// with the run's), from `executor_runs` joined as `$join`, oldest run first, at most `$limit` from
/// `$offset`; and how many such runs there are (the same join and condition, counted).
macro_rules! run_need_sql {
    ($notice:literal, $join:expr, $where:literal, $limit:literal, $offset:literal) => {
        (
            concat!("SELECT count(*) FROM executor_runs ", $join, " WHERE ", $where),
            concat!(
                "SELECT ",
                run_columns!(),
                ", (SELECT substr(description, 1, 400) FROM executor_queue q WHERE q.task_gid = executor_runs.task_gid) \
                   AS need_task_text, ",
                $notice,
                " FROM executor_runs ",
                $join,
                " WHERE ",
                $where,
                " ORDER BY executor_runs.id LIMIT ",
                $limit,
                " OFFSET ",
                $offset
            ),
        )
    };
}

/// Counts a list (`$count`, binding `$binds`) and reads its page (the same binds, then limit and
/// offset), rows made by `$make`.
macro_rules! listed {
    ($store:expr, $sql:expr, [$($bind:expr),*], $per:expr, $offset:expr, $make:expr) => {{
        let (count_sql, list_sql) = $sql;
        let (total, items) = on_pool!($store, |p| {
            let total: i64 = sqlx::query_scalar(count_sql)$(.bind($bind))*.fetch_one(p).await?;
            let items = sqlx::query(list_sql)
                $(.bind($bind))*
                .bind($per)
                .bind($offset)
                .fetch_all(p)
                .await?
                .iter()
                .map($make)
                .collect::<Result<Vec<_>>>()?;
            (total, items)
        });
        Listed { total, items }
    }};
}

/// The unread notices of the runs, as the join's columns.
macro_rules! unread_notices {
    () => {
        "(SELECT id AS need_id, run_id AS need_run, kind AS need_kind, notice_key AS need_key, \
           message AS need_message, created_at AS need_created_at FROM executor_notifications \
           WHERE read_at IS NULL) AS n"
    };
}

fn run_need(r: &impl Cols) -> Result<RunNeed> {
    let notice = match r.int("need_id")? {
        Some(id) => Some(NeedNotice {
            id,
            message: r.req_text("need_message")?,
            created_at: r.req_time("need_created_at")?,
        }),
        None => None,
    };
    Ok(RunNeed {
        run: run_from_row(r)?,
        task_text: r.text("need_task_text")?,
        notice,
        last_decision: r.text("last_decision")?,
        budget_cap: BudgetCap::from_stored(r.int("budget_stopped")?.unwrap_or(0)),
    })
}

fn plan_need(r: &impl Cols) -> Result<PlanNeed> {
    Ok(PlanNeed {
        run: run_from_row(r)?,
        task_text: r.text("need_task_text")?,
        plan_id: r.req_int("need_id")?,
        revision: r.req_int("need_revision")?,
        plan_text: r.req_text("need_text")?,
        written_at: r.req_time("need_created_at")?,
    })
}

fn question_need(r: &impl Cols) -> Result<QuestionNeed> {
    let kind = r.req_text("need_kind")?;
    Ok(QuestionNeed {
        run: run_from_row(r)?,
        task_text: r.text("need_task_text")?,
        question_id: r.req_int("need_id")?,
        worker_kind: kind
            .parse()
            .map_err(|e: crate::domain::UnknownName| StoreError::Corrupt(e.to_string()))?,
        question: r.req_text("need_text")?,
        asked_at: r.req_time("need_created_at")?,
    })
}

impl Store {
    /// What waits on a human now. Each list holds at most `limits.per_list` items, oldest first for
    /// runs and sources, in work order for tasks, and counts all it has.
    pub async fn needs_you(&self, limits: NeedsYouLimits) -> Result<NeedsYou> {
        self.needs_you_from(limits, 0).await
    }

    /// As [`Store::needs_you`], each list's items from its `offset`-th on: a page can show all of a
    /// list, a part at a time.
    pub async fn needs_you_from(&self, limits: NeedsYouLimits, offset: i64) -> Result<NeedsYou> {
        let per = limits.per_list;
        let awaiting_go = self.tasks_in(QueueStatus::AwaitingGo, per, offset).await?;
        let for_review = self.tasks_in(QueueStatus::ForReview, per, offset).await?;
        let analysis_given_up = self.analysis_given_up(limits, offset).await?;
        // A budget stop is the run's own flag, which cap stopped it (the runner clears it when the cap
        // allows again); the run's last decision says by how much.
        let budget_stopped = listed!(
            self,
            run_need_sql!(
                "CAST(NULL AS BIGINT) AS need_id, CAST(NULL AS TEXT) AS need_message, \
                 CAST(NULL AS TEXT) AS need_created_at",
                "",
                "budget_stopped <> 0 AND state IN ('queued','in_progress','pr')",
                "$1",
                "$2"
            ),
            [],
            per,
            offset,
            run_need
        );
        let budget_day_stopped = on_pool!(self, |p| {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM executor_runs WHERE budget_stopped = $1 AND state IN ('queued','in_progress','pr')",
            )
            .bind(BudgetCap::Day.stored())
            .fetch_one(p)
            .await?
        });
        // Told once per head: the notice for an older head is moot once the pull request moved on.
        let checks_overdue = listed!(
            self,
            run_need_sql!(
                "need_id, need_message, need_created_at",
                concat!(
                    "JOIN ",
                    unread_notices!(),
                    " ON n.need_run = executor_runs.id AND n.need_key = $1 || executor_runs.head_sha"
                ),
                "state = 'pr'",
                "$2",
                "$3"
            ),
            [CHECKS_TIMEOUT_KEY],
            per,
            offset,
            run_need
        );
        // Only while the abandoned run is still its task's run: a retried task has moved on.
        let abandoned_unread = listed!(
            self,
            run_need_sql!(
                "need_id, need_message, need_created_at",
                concat!("JOIN ", unread_notices!(), " ON n.need_run = executor_runs.id AND n.need_kind = $1"),
                "state = 'abandoned' AND EXISTS (SELECT 1 FROM executor_queue q \
                   WHERE q.task_gid = executor_runs.task_gid AND q.executor_run_id = executor_runs.id)",
                "$2",
                "$3"
            ),
            [ABANDONED_NOTICE_KIND],
            per,
            offset,
            run_need
        );
        macro_rules! unread_error {
            () => {
                " FROM executor_source_cursors \
                 WHERE last_error IS NOT NULL AND (error_read_at IS NULL OR error_read_at < last_error_at)"
            };
        }
        let failed_sources = listed!(
            self,
            (
                concat!("SELECT count(*)", unread_error!()),
                concat!(
                    "SELECT source, last_error, last_error_at, fetched_at",
                    unread_error!(),
                    " ORDER BY source LIMIT $1 OFFSET $2"
                )
            ),
            [],
            per,
            offset,
            |r: &_| {
                Ok(FailedSource {
                    source: r.req_text("source")?,
                    error: r.req_text("last_error")?,
                    failed_at: r.time("last_error_at")?,
                    fetched_at: r.time("fetched_at")?,
                })
            }
        );
        let plans_awaiting = self.plans_awaiting_from(per, offset).await?;
        let open_questions = self.open_questions_from(per, offset).await?;
        let revisions_pending = self.revisions_pending_from(per, offset).await?;
        Ok(NeedsYou {
            awaiting_go,
            for_review,
            analysis_given_up,
            budget_stopped,
            budget_day_stopped,
            checks_overdue,
            abandoned_unread,
            failed_sources,
            plans_awaiting,
            open_questions,
            revisions_pending,
        })
    }

    /// Approved or done tasks with a pending revision, oldest revision first: both statements read the
    /// partial index of tasks with a revision (schema v22), a few among 100,000.
    async fn revisions_pending_from(&self, per: i64, offset: i64) -> Result<Listed<Task>> {
        Ok(listed!(
            self,
            (
                "SELECT count(*) FROM executor_queue \
                 WHERE revision_at IS NOT NULL AND status IN ('approved', 'done')",
                concat!(
                    "SELECT ",
                    task_columns!(),
                    " FROM executor_queue WHERE revision_at IS NOT NULL AND status IN ('approved', 'done') \
                     ORDER BY revision_at, id LIMIT $1 OFFSET $2"
                )
            ),
            [],
            per,
            offset,
            task_from_row
        ))
    }

    /// Queued runs whose newest plan awaits approval, oldest run first, at most `per`: the runner's plan
    /// gate keeps exactly these waiting (a newer revision, once written, is the one that counts).
    pub async fn plans_awaiting(&self, per: i64) -> Result<Vec<PlanNeed>> {
        Ok(self.plans_awaiting_from(per, 0).await?.items)
    }

    async fn plans_awaiting_from(&self, per: i64, offset: i64) -> Result<Listed<PlanNeed>> {
        Ok(listed!(
            self,
            run_need_sql!(
                "need_id, need_revision, need_text, need_created_at",
                concat!(
                    "JOIN (SELECT id AS need_id, run_id AS need_run, revision AS need_revision, \
                       substr(body, 1, 2000) AS need_text, created_at AS need_created_at, status AS need_status \
                       FROM executor_run_plans) AS pl ON pl.need_run = executor_runs.id AND pl.need_status = $1 \
                     AND NOT EXISTS (SELECT 1 FROM executor_run_plans later \
                       WHERE later.run_id = executor_runs.id AND later.revision > pl.need_revision)"
                ),
                "state = 'queued'",
                "$2",
                "$3"
            ),
            [PlanStatus::AwaitingApproval.as_str()],
            per,
            offset,
            plan_need
        ))
    }

    /// Runs, not abandoned, whose newest open question nobody has answered, oldest run first, at most
    /// `per`: whatever their state, the runner starts no worker for them until someone does.
    pub async fn open_questions(&self, per: i64) -> Result<Vec<QuestionNeed>> {
        Ok(self.open_questions_from(per, 0).await?.items)
    }

    async fn open_questions_from(&self, per: i64, offset: i64) -> Result<Listed<QuestionNeed>> {
        Ok(listed!(
            self,
            run_need_sql!(
                "need_id, need_kind, need_text, need_created_at",
                concat!(
                    "JOIN (SELECT id AS need_id, run_id AS need_run, worker_kind AS need_kind, \
                       substr(question, 1, 2000) AS need_text, asked_at AS need_created_at \
                       FROM executor_run_questions WHERE answered_at IS NULL) AS qu \
                     ON qu.need_run = executor_runs.id \
                     AND NOT EXISTS (SELECT 1 FROM executor_run_questions newer \
                       WHERE newer.run_id = executor_runs.id AND newer.answered_at IS NULL AND newer.id > qu.need_id)"
                ),
                "state <> 'abandoned'",
                "$1",
                "$2"
            ),
            [],
            per,
            offset,
            question_need
        ))
    }

    /// The first `per` tasks in `status`, in work order, and how many there are: `status = $1` itself
    /// (not the listing's optional filter, which SQLite cannot serve from an index), so both statements
    /// read only that status's part of `executor_queue_status`.
    async fn tasks_in(&self, status: QueueStatus, per: i64, offset: i64) -> Result<Listed<Task>> {
        Ok(listed!(
            self,
            (
                "SELECT count(*) FROM executor_queue WHERE status = $1",
                concat!(
                    "SELECT ",
                    task_columns!(),
                    " FROM executor_queue WHERE status = $1 \
                     ORDER BY priority IS NULL, priority, added_at, id LIMIT $2 OFFSET $3"
                )
            ),
            [status.as_str()],
            per,
            offset,
            task_from_row
        ))
    }

    /// Pending tasks the analyzer gave up on (`analyzer.max_attempts` failed analyses), most urgent first.
    /// `analysis_attempts > 0` (implied, as `max_attempts` is at least 1) lets both statements read the
    /// partial index of pending tasks with failed analyses, a few among 100,000.
    async fn analysis_given_up(&self, limits: NeedsYouLimits, offset: i64) -> Result<Listed<Task>> {
        let max = i64::from(limits.max_analysis_attempts);
        // SQLite's planner, with no statistics, would read all pending tasks through another index:
        // it is named (as the analyzer's claim names its own).
        macro_rules! given_up {
            ($indexed:literal) => {
                (
                    concat!(
                        "SELECT count(*) FROM executor_queue",
                        $indexed,
                        " WHERE status = 'pending' AND analysis_attempts > 0 AND analysis_attempts >= $1"
                    ),
                    concat!(
                        "SELECT ",
                        task_columns!(),
                        " FROM executor_queue",
                        $indexed,
                        " WHERE status = 'pending' AND analysis_attempts > 0 AND analysis_attempts >= $1 \
                         ORDER BY priority IS NULL, priority, added_at, id LIMIT $2 OFFSET $3"
                    ),
                )
            };
        }
        let (count_sql, list_sql) = match &self.pool {
            Pool::Sqlite(_) => given_up!(" INDEXED BY executor_queue_failed_analysis"),
            Pool::Postgres(_) => given_up!(""),
        };
        Ok(listed!(self, (count_sql, list_sql), [max], limits.per_list, offset, task_from_row))
    }
}
