//! Facts about a run that are not its state: where it works, its pull request, its review, and what the
//! runner last decided. Each setter names the one fact it records.

use chrono::{DateTime, Utc};

use super::row::Cols;
use super::{Result, Store, StoreError, now, on_pool};

/// The runner's memory of a run between ticks (kept apart from `Run`, which mirrors the seed's columns).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RunMemory {
    pub last_decision: Option<String>,
    pub last_decision_at: Option<DateTime<Utc>>,
    /// The head sha CI was last triggered for, so it is triggered once per head.
    pub ci_triggered_sha: Option<String>,
    /// What that trigger did; `None` for one recorded before schema v17.
    pub ci_trigger: Option<crate::domain::CiTrigger>,
    /// A budget cap stopped this run; no worker starts until the cap is raised.
    pub budget_stopped: bool,
    /// Which cap (`Some` exactly when `budget_stopped`): what a human can do about it depends on it.
    pub budget_cap: Option<crate::domain::BudgetCap>,
    /// What the run had spent when a human last resumed it; `budget.per_run_usd` caps spending since.
    pub budget_base_usd: f64,
    /// The pull request as last observed, as JSON (see `forge::PrSnapshot`).
    pub last_snapshot: Option<String>,
    /// When the runner last pushed the run's branch to the forge.
    pub pushed_at: Option<DateTime<Utc>>,
    /// The ids of the comments on the pull request in the observation that completed the run (while it
    /// is complete); `None` for a run completed before schema v8, or by an import.
    pub completion_comment_ids: Option<Vec<String>>,
}

/// Runs one `UPDATE executor_runs SET <set> WHERE id = … AND <fence>`, where `<set>` uses `$1…$k` for
/// the binds and the run id and the holder follow them. A runner (`Some(owner)`) writes only while it
/// holds the run's live lease, checked in the same statement; `None` (a human, an import) always
/// writes. Fails when nothing was written: an unknown run, or a lease lost.
macro_rules! update_run {
    ($store:expr, $run_id:expr, $holder:expr, $set:literal $(, $bind:expr)*) => {{
        let binds = <[&str]>::len(&[$(stringify!($bind)),*]) as u8;
        let sql = format!(
            "UPDATE executor_runs SET {} WHERE id = ${} AND {}",
            $set,
            binds + 1,
            $store.pool.fence_sql(binds + 2)
        );
        let holder: Option<&str> = $holder;
        let n = on_pool!($store, |p| {
            sqlx::query(&sql)
                $(.bind($bind))*
                .bind($run_id)
                .bind(holder)
                .execute(p)
                .await?
                .rows_affected()
        });
        if n == 0 { Err($store.nothing_written($run_id, holder).await) } else { Ok(()) }
    }};
}
pub(super) use update_run;

impl Store {
    /// Why a write on a run changed nothing: the run is unknown, or `holder` lost its lease (logged:
    /// a fenced write is a sign of a paused or cut-off runner).
    pub(super) async fn nothing_written(&self, run_id: i64, holder: Option<&str>) -> StoreError {
        match (self.find_run(run_id).await, holder) {
            (Ok(Some(_)), Some(owner)) => {
                tracing::warn!(
                    run = run_id,
                    owner,
                    "a write was refused: the runner no longer holds the run's lease"
                );
                StoreError::LeaseLost(run_id)
            }
            (Err(e), _) => e,
            _ => StoreError::UnknownRun(run_id),
        }
    }
}

impl Store {
    pub async fn set_run_workspace(
        &self,
        run_id: i64,
        holder: Option<&str>,
        worktree_path: &str,
        branch: &str,
    ) -> Result<()> {
        update_run!(
            self,
            run_id,
            holder,
            "worktree_path = $1, branch_name = $2, updated_at = $3",
            worktree_path,
            branch,
            now()
        )
    }

    pub async fn set_run_pr(&self, run_id: i64, holder: Option<&str>, url: &str, number: i64) -> Result<()> {
        update_run!(self, run_id, holder, "pr_url = $1, pr_number = $2, updated_at = $3", url, number, now())
    }

    /// Records the pull request's head. When it changed (or its first sighting was never stamped, as for
    /// runs from before schema v3), `head_seen_at` restarts, in the same statement, so the check timeout
    /// always measures from the head it belongs to.
    pub async fn set_run_head(&self, run_id: i64, holder: Option<&str>, sha: &str) -> Result<()> {
        update_run!(
            self,
            run_id,
            holder,
            "head_seen_at = CASE WHEN head_sha IS NULL OR head_sha <> $1 OR head_seen_at IS NULL \
               THEN $2 ELSE head_seen_at END, head_sha = $1",
            sha,
            now()
        )
    }

    /// A review verdict holds only for the head it reviewed.
    pub async fn set_run_review(
        &self,
        run_id: i64,
        holder: Option<&str>,
        verdict: &str,
        sha: &str,
    ) -> Result<()> {
        update_run!(
            self,
            run_id,
            holder,
            "review_verdict = $1, review_sha = $2, updated_at = $3",
            verdict,
            sha,
            now()
        )
    }

    /// Records when the run's pull request was first seen merged (`at`); a later call keeps the first.
    pub async fn set_merged_at(&self, run_id: i64, holder: Option<&str>, at: DateTime<Utc>) -> Result<()> {
        update_run!(self, run_id, holder, "merged_at = COALESCE(merged_at, $1)", at)
    }

    /// Records that CI was triggered at `sha`, and what that did.
    pub async fn set_ci_triggered(
        &self,
        run_id: i64,
        holder: Option<&str>,
        sha: &str,
        outcome: crate::domain::CiTrigger,
    ) -> Result<()> {
        update_run!(
            self,
            run_id,
            holder,
            "ci_triggered_sha = $1, ci_trigger_outcome = $2",
            sha,
            outcome.as_str()
        )
    }

    pub async fn set_run_thread(&self, run_id: i64, holder: Option<&str>, thread_id: &str) -> Result<()> {
        update_run!(self, run_id, holder, "thread_id = $1", thread_id)
    }

    /// Records which cap stops the run, or (`None`) that none does.
    pub async fn set_budget_stop(
        &self,
        run_id: i64,
        holder: Option<&str>,
        cap: Option<crate::domain::BudgetCap>,
    ) -> Result<()> {
        update_run!(self, run_id, holder, "budget_stopped = $1", cap.map_or(0, |c| c.stored()))
    }

    /// Records what the runner decided for a run and why, for `runs show`.
    pub async fn record_decision(&self, run_id: i64, holder: Option<&str>, why: &str) -> Result<()> {
        update_run!(self, run_id, holder, "last_decision = $1, last_decision_at = $2", why, now())
    }

    pub async fn set_last_snapshot(&self, run_id: i64, holder: Option<&str>, json: &str) -> Result<()> {
        update_run!(self, run_id, holder, "last_snapshot = $1", json)
    }

    pub async fn run_memory(&self, run_id: i64) -> Result<RunMemory> {
        on_pool!(self, |p| {
            let row = sqlx::query(
                "SELECT last_decision, last_decision_at, ci_triggered_sha, ci_trigger_outcome, budget_stopped, budget_base_usd, last_snapshot, pushed_at, completion_comment_ids FROM executor_runs WHERE id = $1",
            )
            .bind(run_id)
            .fetch_optional(p)
            .await?
            .ok_or(StoreError::UnknownRun(run_id))?;
            Ok(RunMemory {
                last_decision: row.text("last_decision")?,
                last_decision_at: row.time("last_decision_at")?,
                ci_triggered_sha: row.text("ci_triggered_sha")?,
                ci_trigger: row
                    .text("ci_trigger_outcome")?
                    .map(|v| v.parse())
                    .transpose()
                    .map_err(|e| StoreError::Corrupt(format!("column ci_trigger_outcome: {e}")))?,
                budget_stopped: row.int("budget_stopped")?.unwrap_or(0) != 0,
                budget_cap: crate::domain::BudgetCap::from_stored(row.int("budget_stopped")?.unwrap_or(0)),
                budget_base_usd: row.real("budget_base_usd")?.unwrap_or(0.0),
                last_snapshot: row.text("last_snapshot")?,
                pushed_at: row.time("pushed_at")?,
                completion_comment_ids: row
                    .text("completion_comment_ids")?
                    .map(|json| serde_json::from_str(&json))
                    .transpose()
                    .map_err(|e| {
                        StoreError::Corrupt(format!(
                            "executor_runs.completion_comment_ids is not a JSON list: {e}"
                        ))
                    })?,
            })
        })
    }
}

impl Store {
    /// Sets (not increments) the CI attempt count, so replaying a step after a crash counts once.
    pub async fn set_ci_attempts(&self, run_id: i64, holder: Option<&str>, attempts: i32) -> Result<()> {
        update_run!(self, run_id, holder, "ci_attempts = $1", i64::from(attempts))
    }
}

impl Store {
    /// A human lets a run stopped by its cap go on: the cap applies afresh from what it has spent so far.
    /// Refused for a run the day's cap stopped: a fresh allowance of its own changes nothing there (the
    /// next runner would stop it again), and saying it worked would be false.
    pub async fn resume_run_budget(
        &self,
        run_id: i64,
        by: impl Into<crate::domain::By<'_>>,
    ) -> Result<RunMemory> {
        if self.run_memory(run_id).await?.budget_cap == Some(crate::domain::BudgetCap::Day) {
            return Err(StoreError::Refused(format!(
                "run {run_id} was stopped by the daily cap (budget.per_day_usd), not its own: resuming it would change nothing; raise budget.per_day_usd or wait until the day turns (00:00 UTC)"
            )));
        }
        update_run!(
            self,
            run_id,
            None,
            "budget_base_usd = cost_usd, budget_stopped = 0, updated_at = $1",
            now()
        )?;
        let run = self.run(run_id).await?;
        let why = format!("budget resumed by a human at ${:.2} spent", run.cost_usd);
        self.record_note(by, Some(&run.task_gid), Some(run_id), &why).await?;
        self.run_memory(run_id).await
    }
}
