//! Merged pull requests reverted on their base branch (schema v20's `reverted_at`, `revert_sha`), and
//! runs given up after spending much: the facts behind the insights' revert rate and expensive failures.

use chrono::{DateTime, Utc};

use super::row::Cols;
use super::{Result, Store, now, on_pool};
use crate::domain::TaskGid;

/// A merged run whose pull request has not been found reverted: what the runner needs to look for a
/// revert on the base branch.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedRun {
    pub run_id: i64,
    pub task_gid: TaskGid,
    pub repo: Option<String>,
    pub branch_name: Option<String>,
    pub head_sha: Option<String>,
    pub pr_number: Option<i64>,
    pub started_at: DateTime<Utc>,
    pub merged_at: DateTime<Utc>,
}

/// A run abandoned in the window after spending more than the threshold.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ExpensiveFailure {
    pub run_id: i64,
    pub task_gid: String,
    /// The task's description as stored (other people's text: escaped wherever it is shown).
    pub task: Option<String>,
    pub cost_usd: f64,
    pub abandoned_at: Option<DateTime<Utc>>,
    /// Why it was given up: the abandonment's reason as recorded.
    pub reason: Option<String>,
    /// The run's last decision as recorded.
    pub last_decision: Option<String>,
}

impl Store {
    /// Up to `limit` runs merged at or after `since` and not found reverted, with an id above
    /// `after_id`, by id: a caller pages through them a bounded number at a time.
    pub async fn merged_runs_not_reverted(
        &self,
        since: DateTime<Utc>,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<MergedRun>> {
        let sql = "SELECT id, task_gid, repo, branch_name, head_sha, pr_number, started_at, merged_at \
                   FROM executor_runs WHERE merged_at >= $1 AND reverted_at IS NULL AND id > $2 \
                   ORDER BY id LIMIT $3";
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).bind(since).bind(after_id).bind(limit).fetch_all(p).await?;
            rows.iter()
                .map(|r| {
                    Ok(MergedRun {
                        run_id: r.req_int("id")?,
                        task_gid: r.parsed("task_gid")?,
                        repo: r.text("repo")?,
                        branch_name: r.text("branch_name")?,
                        head_sha: r.text("head_sha")?,
                        pr_number: r.int("pr_number")?,
                        started_at: r.req_time("started_at")?,
                        merged_at: r.req_time("merged_at")?,
                    })
                })
                .collect()
        })
    }

    /// Records that run `run_id`'s merged pull request was reverted by commit `sha`, found now. Only
    /// the first finding is kept: `false` when the run was already recorded reverted, or is not merged.
    pub async fn set_reverted(&self, run_id: i64, sha: &str) -> Result<bool> {
        let sql = "UPDATE executor_runs SET reverted_at = $1, revert_sha = $2 \
                   WHERE id = $3 AND merged_at IS NOT NULL AND reverted_at IS NULL";
        let n = on_pool!(self, |p| {
            sqlx::query(sql).bind(now()).bind(sha).bind(run_id).execute(p).await?.rows_affected()
        });
        Ok(n == 1)
    }

    /// The runs abandoned since `since` that had spent more than `min_usd`, costliest first, at most
    /// `limit`.
    pub async fn expensive_failures(
        &self,
        since: DateTime<Utc>,
        min_usd: f64,
        limit: i64,
    ) -> Result<Vec<ExpensiveFailure>> {
        let sql = "SELECT r.id AS run_id, r.task_gid AS task_gid, q.description AS task, \
               r.cost_usd AS cost_usd, r.last_decision AS last_decision, a.at AS abandoned_at, \
               a.reason AS reason \
             FROM executor_runs r \
             LEFT JOIN executor_queue q ON q.task_gid = r.task_gid \
             LEFT JOIN executor_events a ON a.id = (SELECT max(e.id) FROM executor_events e \
               WHERE e.run_id = r.id AND e.kind = 'run_state' AND e.to_state = 'abandoned') \
             WHERE r.state = 'abandoned' AND r.cost_usd > $2 AND a.at >= $1 \
             ORDER BY r.cost_usd DESC, r.id LIMIT $3";
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).bind(since).bind(min_usd).bind(limit).fetch_all(p).await?;
            rows.iter()
                .map(|r| {
                    Ok(ExpensiveFailure {
                        run_id: r.req_int("run_id")?,
                        task_gid: r.req_text("task_gid")?,
                        task: r.text("task")?,
                        cost_usd: r.real("cost_usd")?.unwrap_or(0.0),
                        abandoned_at: r.time("abandoned_at")?,
                        reason: r.text("reason")?,
                        last_decision: r.text("last_decision")?,
                    })
                })
                .collect()
        })
    }
}
