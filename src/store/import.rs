//! What only `executor import` writes: a v1 run created in the state v1 left it, with v1's own fields and
//! times, and a task it has just added dated as v1 dated it. Every other writer stamps the database's
//! present; an import that did so would start history and every "older than" filter over.

use chrono::{DateTime, SubsecRound, Utc};

use super::events::{NewEvent, insert_event, kind};
use super::{BeginWrite, Result, Store, StoreError, now, on_pool};
use crate::domain::{Actor, QueueStatus, Run, RunState, TaskGid};

/// A v1 run as the import creates it: its state, the facts v1 recorded, and v1's times (`None`: v1 has
/// none, and the import's time stands in).
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedRun {
    pub state: RunState,
    pub worktree_path: Option<String>,
    pub branch_name: Option<String>,
    pub pr_url: Option<String>,
    pub pr_number: Option<i64>,
    pub thread_id: Option<String>,
    pub ci_attempts: i32,
    pub worker_session_id: Option<String>,
    pub worker_pid: Option<i32>,
    pub worker_last_update: Option<DateTime<Utc>>,
    pub worker_stuck_count: i32,
    pub started_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
}

/// The legal moves from `queued` to `to`, each recorded as an event like the runner's own.
fn path_to(to: RunState) -> &'static [RunState] {
    use RunState::*;
    match to {
        Queued => &[],
        InProgress => &[InProgress],
        Pr => &[InProgress, Pr],
        Complete => &[InProgress, Pr, Complete],
        Abandoned => &[Abandoned],
    }
}

/// Both databases keep microseconds; a v1 time with more would not read back as written.
fn micros(t: DateTime<Utc>) -> DateTime<Utc> {
    t.trunc_subsecs(6)
}

impl ImportedRun {
    fn started(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.started_at.map(micros).unwrap_or(now)
    }

    fn updated(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.updated_at.map(micros).unwrap_or(self.started(now))
    }

    /// Only a finished run has a completion time (the runner clears it when a run goes back to pr);
    /// `ended`: it is imported as ended whatever its v1 state (an earlier run, superseded).
    fn completed(&self, now: DateTime<Utc>, ended: bool) -> Option<DateTime<Utc>> {
        (ended || matches!(self.state, RunState::Complete | RunState::Abandoned))
            .then(|| self.completed_at.map(micros).unwrap_or(self.updated(now)))
    }
}

/// A v1 run into `executor_runs`, only for an approved task with no run (`$1` its gid, then the run's
/// columns in order), followed by `conflict`.
/// Binds an imported run's values to [`insert_sql`]'s placeholders, in their order: as `state`, and
/// `ended` when the run is kept as one that ended (an earlier run, abandoned).
macro_rules! bind_run {
    ($query:expr, $gid:expr, $run:expr, $at:expr, $state:expr, $ended:expr) => {
        $query
            .bind($gid.as_str())
            .bind($run.started($at))
            .bind($run.updated($at))
            .bind($run.completed($at, $ended))
            .bind($state.as_str())
            .bind(&$run.worktree_path)
            .bind(&$run.branch_name)
            .bind(&$run.pr_url)
            .bind($run.pr_number)
            .bind(&$run.thread_id)
            .bind($run.ci_attempts)
            .bind(&$run.worker_session_id)
            .bind($run.worker_pid)
            .bind($run.worker_last_update.map(micros))
            .bind($run.worker_stuck_count)
    };
}

fn insert_sql(conflict: &str) -> String {
    format!(
        "INSERT INTO executor_runs (task_gid, repo, started_at, updated_at, completed_at, state, \
           worktree_path, branch_name, pr_url, pr_number, thread_id, ci_attempts, worker_session_id, \
           worker_pid, worker_last_update, worker_stuck_count) \
         SELECT task_gid, repo, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15 \
         FROM executor_queue \
         WHERE task_gid = $1 AND status = 'approved' AND executor_run_id IS NULL{conflict} \
         RETURNING id"
    )
}

impl Store {
    /// Creates the run of an approved task directly in `run.state`, with v1's fields and times, in one
    /// transaction: the run, the task's `executor_run_id`, an event per legal step from `queued` (the
    /// runner's own path, checked), and for a `complete` run the task's move to done. Returns `None`
    /// when the task is not approved or already has a run (someone created one meanwhile: theirs
    /// stands), like [`Store::create_run_for_task`].
    pub async fn create_imported_run(
        &self,
        gid: &TaskGid,
        run: &ImportedRun,
        actor: Actor,
        reason: &str,
    ) -> Result<Option<Run>> {
        self.create_imported_runs(gid, &[], run, actor, reason).await
    }

    /// As [`Store::create_imported_run`], with the task's `earlier` v1 runs first, in the order given, as
    /// history: each an ended run of the task, as a run superseded by `queue retry` is kept — abandoned,
    /// after the legal path to its v1 state (so a v1 `complete` run records `complete`, then
    /// `abandoned`), with v1's fields and times — and none named by the task. All or nothing: the
    /// earlier runs are written only with the current one, so an import run again finds the task with
    /// its run and adds none of them twice.
    pub async fn create_imported_runs(
        &self,
        gid: &TaskGid,
        earlier: &[ImportedRun],
        run: &ImportedRun,
        actor: Actor,
        reason: &str,
    ) -> Result<Option<Run>> {
        for r in earlier.iter().chain([run]) {
            let mut from = RunState::Queued;
            for &to in path_to(r.state) {
                from.check(to)?;
                from = to;
            }
            if r.ci_attempts < 0 || r.worker_stuck_count < 0 {
                return Err(StoreError::Refused(format!("run of task {gid}: a negative count")));
            }
        }
        let at = now();
        let superseded = format!("{reason}: an earlier run of the task, superseded by its later run");
        let id: Option<i64> = on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            for old in earlier {
                let old_id: Option<i64> =
                    bind_run!(sqlx::query_scalar(&insert_sql("")), gid, old, at, RunState::Abandoned, true)
                        .fetch_optional(&mut *tx)
                        .await?;
                // None: the task is not approved or has a run; nothing of this transaction is kept.
                let Some(old_id) = old_id else { break };
                let created = NewEvent {
                    actor,
                    actor_id: None,
                    task_gid: Some(gid.as_str()),
                    run_id: Some(old_id),
                    kind: kind::RUN_CREATED,
                    from_state: None,
                    to_state: Some(RunState::Queued.as_str()),
                    reason: Some(reason),
                };
                insert_event!(self, &mut *tx, created)?;
                let mut from = RunState::Queued;
                for &to in path_to(old.state) {
                    let ev = NewEvent {
                        kind: kind::RUN_STATE,
                        from_state: Some(from.as_str()),
                        to_state: Some(to.as_str()),
                        ..created
                    };
                    insert_event!(self, &mut *tx, ev)?;
                    from = to;
                }
                if from != RunState::Abandoned {
                    let ev = NewEvent {
                        kind: kind::RUN_STATE,
                        from_state: Some(from.as_str()),
                        to_state: Some(RunState::Abandoned.as_str()),
                        reason: Some(&superseded),
                        ..created
                    };
                    insert_event!(self, &mut *tx, ev)?;
                }
            }
            let current = insert_sql(
                " ON CONFLICT (task_gid) WHERE state IN ('queued','in_progress','pr','complete') DO NOTHING",
            );
            let id: Option<i64> = bind_run!(sqlx::query_scalar(&current), gid, run, at, run.state, false)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(id) = id {
                let created = super::runs::link_new_run!(self, tx, gid, id, at, actor, reason);
                let mut from = RunState::Queued;
                for &to in path_to(run.state) {
                    let ev = NewEvent {
                        kind: kind::RUN_STATE,
                        from_state: Some(from.as_str()),
                        to_state: Some(to.as_str()),
                        ..created
                    };
                    insert_event!(self, &mut *tx, ev)?;
                    from = to;
                }
                if run.state == RunState::Complete {
                    // As when the runner completes a run: the task's work is done.
                    sqlx::query("UPDATE executor_queue SET status = 'done' WHERE task_gid = $1 AND status = 'approved'")
                        .bind(gid.as_str())
                        .execute(&mut *tx)
                        .await?;
                    let ev = NewEvent {
                        kind: kind::QUEUE_STATUS,
                        from_state: Some(QueueStatus::Approved.as_str()),
                        to_state: Some(QueueStatus::Done.as_str()),
                        ..created
                    };
                    insert_event!(self, &mut *tx, ev)?;
                }
                tx.commit().await?;
            }
            id
        });
        match id {
            Some(id) => Ok(Some(self.run(id).await?)),
            None => Ok(None),
        }
    }

    /// Dates a task the running import has just added (its `added_at` is not before `import_began`) as
    /// v1 dated it: `added_at` and `updated_at`, each only where v1 has one. A task added before the
    /// import began is executor's own and keeps its times. Returns whether the task was dated.
    pub async fn date_imported_task(
        &self,
        gid: &TaskGid,
        import_began: DateTime<Utc>,
        added_at: Option<DateTime<Utc>>,
        updated_at: Option<DateTime<Utc>>,
    ) -> Result<bool> {
        if added_at.is_none() && updated_at.is_none() {
            return Ok(false);
        }
        let n = on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_queue SET added_at = COALESCE($1, added_at), updated_at = COALESCE($2, updated_at) \
                 WHERE task_gid = $3 AND added_at >= $4",
            )
            .bind(added_at.map(micros))
            .bind(updated_at.map(micros))
            .bind(gid.as_str())
            .bind(import_began)
            .execute(p)
            .await?
            .rows_affected()
        });
        Ok(n == 1)
    }
}
