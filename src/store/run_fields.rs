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
    /// A budget cap stopped this run; no worker starts until the cap is raised.
    pub budget_stopped: bool,
    /// What the run had spent when a human last resumed it; `budget.per_run_usd` caps spending since.
    pub budget_base_usd: f64,
    /// The pull request as last observed, as JSON (see `forge::PrSnapshot`).
    pub last_snapshot: Option<String>,
    /// When the runner last pushed the run's branch to the forge.
    pub pushed_at: Option<DateTime<Utc>>,
}

/// Runs one `UPDATE executor_runs SET … WHERE id = $N` and fails if the run does not exist.
macro_rules! update_run {
    ($store:expr, $run_id:expr, $sql:literal $(, $bind:expr)*) => {{
        let n = on_pool!($store, |p| {
            sqlx::query($sql)
                $(.bind($bind))*
                .bind($run_id)
                .execute(p)
                .await?
                .rows_affected()
        });
        if n == 0 { Err(StoreError::UnknownRun($run_id)) } else { Ok(()) }
    }};
}

impl Store {
    pub async fn set_run_workspace(&self, run_id: i64, worktree_path: &str, branch: &str) -> Result<()> {
        update_run!(
            self,
            run_id,
            "UPDATE executor_runs SET worktree_path = $1, branch_name = $2, updated_at = $3 WHERE id = $4",
            worktree_path,
            branch,
            now()
        )
    }

    pub async fn set_run_pr(&self, run_id: i64, url: &str, number: i64) -> Result<()> {
        update_run!(
            self,
            run_id,
            "UPDATE executor_runs SET pr_url = $1, pr_number = $2, updated_at = $3 WHERE id = $4",
            url,
            number,
            now()
        )
    }

    /// Records the pull request's head. When it changed (or its first sighting was never stamped, as for
    /// runs from before schema v3), `head_seen_at` restarts, in the same statement, so the check timeout
    /// always measures from the head it belongs to.
    pub async fn set_run_head(&self, run_id: i64, sha: &str) -> Result<()> {
        update_run!(
            self,
            run_id,
            "UPDATE executor_runs SET head_seen_at = CASE WHEN head_sha IS NULL OR head_sha <> $1 OR head_seen_at IS NULL \
               THEN $2 ELSE head_seen_at END, head_sha = $1 WHERE id = $3",
            sha,
            now()
        )
    }

    /// A review verdict holds only for the head it reviewed.
    pub async fn set_run_review(&self, run_id: i64, verdict: &str, sha: &str) -> Result<()> {
        update_run!(
            self,
            run_id,
            "UPDATE executor_runs SET review_verdict = $1, review_sha = $2, updated_at = $3 WHERE id = $4",
            verdict,
            sha,
            now()
        )
    }

    pub async fn set_ci_triggered(&self, run_id: i64, sha: &str) -> Result<()> {
        update_run!(self, run_id, "UPDATE executor_runs SET ci_triggered_sha = $1 WHERE id = $2", sha)
    }

    pub async fn set_run_thread(&self, run_id: i64, thread_id: &str) -> Result<()> {
        update_run!(self, run_id, "UPDATE executor_runs SET thread_id = $1 WHERE id = $2", thread_id)
    }

    pub async fn set_budget_stopped(&self, run_id: i64, stopped: bool) -> Result<()> {
        update_run!(
            self,
            run_id,
            "UPDATE executor_runs SET budget_stopped = $1 WHERE id = $2",
            i64::from(stopped)
        )
    }

    /// Records what the runner decided for a run and why, for `runs show`.
    pub async fn record_decision(&self, run_id: i64, why: &str) -> Result<()> {
        update_run!(
            self,
            run_id,
            "UPDATE executor_runs SET last_decision = $1, last_decision_at = $2 WHERE id = $3",
            why,
            now()
        )
    }

    pub async fn set_last_snapshot(&self, run_id: i64, json: &str) -> Result<()> {
        update_run!(self, run_id, "UPDATE executor_runs SET last_snapshot = $1 WHERE id = $2", json)
    }

    pub async fn run_memory(&self, run_id: i64) -> Result<RunMemory> {
        on_pool!(self, |p| {
            let row = sqlx::query(
                "SELECT last_decision, last_decision_at, ci_triggered_sha, budget_stopped, budget_base_usd, last_snapshot, pushed_at FROM executor_runs WHERE id = $1",
            )
            .bind(run_id)
            .fetch_optional(p)
            .await?
            .ok_or(StoreError::UnknownRun(run_id))?;
            Ok(RunMemory {
                last_decision: row.text("last_decision")?,
                last_decision_at: row.time("last_decision_at")?,
                ci_triggered_sha: row.text("ci_triggered_sha")?,
                budget_stopped: row.int("budget_stopped")?.unwrap_or(0) != 0,
                budget_base_usd: row.real("budget_base_usd")?.unwrap_or(0.0),
                last_snapshot: row.text("last_snapshot")?,
                pushed_at: row.time("pushed_at")?,
            })
        })
    }
}

impl Store {
    /// Sets (not increments) the CI attempt count, so replaying a step after a crash counts once.
    pub async fn set_ci_attempts(&self, run_id: i64, attempts: i32) -> Result<()> {
        update_run!(
            self,
            run_id,
            "UPDATE executor_runs SET ci_attempts = $1 WHERE id = $2",
            i64::from(attempts)
        )
    }
}

impl Store {
    /// A human lets a run stopped by its cap go on: the cap applies afresh from what it has spent so far.
    pub async fn resume_run_budget(&self, run_id: i64, actor: crate::domain::Actor) -> Result<RunMemory> {
        update_run!(
            self,
            run_id,
            "UPDATE executor_runs SET budget_base_usd = cost_usd, budget_stopped = 0, updated_at = $1 WHERE id = $2",
            now()
        )?;
        let run = self.run(run_id).await?;
        let why = format!("budget resumed by a human at ${:.2} spent", run.cost_usd);
        self.record_note(actor, Some(&run.task_gid), Some(run_id), &why).await?;
        self.run_memory(run_id).await
    }
}
