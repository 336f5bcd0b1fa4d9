//! The local forge's records: pull requests (a branch plus a row), their comments, and CI check runs.

use chrono::{DateTime, Utc};

use super::columns::{local_ci_columns, local_comment_columns, local_pr_columns};
use super::row::Cols;
use super::{Result, Store, StoreError, now, on_pool};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LocalPr {
    pub id: i64,
    pub run_id: i64,
    pub repo: Option<String>,
    pub branch: String,
    pub base: String,
    /// open, merged or closed.
    pub state: String,
    pub draft: bool,
    pub labels: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LocalComment {
    pub id: i64,
    pub pr_id: i64,
    pub author: String,
    pub body: String,
    pub path: Option<String>,
    pub line: Option<i64>,
    pub in_reply_to: Option<i64>,
    pub by_agent: bool,
    pub resolved: bool,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Default)]
pub struct NewComment<'a> {
    pub author: &'a str,
    pub body: &'a str,
    pub path: Option<&'a str>,
    pub line: Option<i64>,
    pub in_reply_to: Option<i64>,
    pub by_agent: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LocalCheck {
    pub id: i64,
    pub pr_id: i64,
    pub sha: String,
    pub name: String,
    /// pending, success or failure.
    pub status: String,
    pub pid: Option<i64>,
    pub work_dir: Option<String>,
    pub output_tail: Option<String>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

fn pr_from_row(r: &impl Cols) -> Result<LocalPr> {
    let labels = r.req_text("labels")?;
    Ok(LocalPr {
        id: r.req_int("id")?,
        run_id: r.req_int("run_id")?,
        repo: r.text("repo")?,
        branch: r.req_text("branch")?,
        base: r.req_text("base")?,
        state: r.req_text("state")?,
        draft: r.req_int("draft")? != 0,
        labels: serde_json::from_str(&labels).map_err(|e| StoreError::Corrupt(format!("labels: {e}")))?,
        created_at: r.req_time("created_at")?,
        updated_at: r.req_time("updated_at")?,
    })
}

fn comment_from_row(r: &impl Cols) -> Result<LocalComment> {
    Ok(LocalComment {
        id: r.req_int("id")?,
        pr_id: r.req_int("pr_id")?,
        author: r.req_text("author")?,
        body: r.req_text("body")?,
        path: r.text("path")?,
        line: r.int("line")?,
        in_reply_to: r.int("in_reply_to")?,
        by_agent: r.req_int("by_agent")? != 0,
        resolved: r.req_int("resolved")? != 0,
        created_at: r.req_time("created_at")?,
    })
}

fn check_from_row(r: &impl Cols) -> Result<LocalCheck> {
    Ok(LocalCheck {
        id: r.req_int("id")?,
        pr_id: r.req_int("pr_id")?,
        sha: r.req_text("sha")?,
        name: r.req_text("name")?,
        status: r.req_text("status")?,
        pid: r.int("pid")?,
        work_dir: r.text("work_dir")?,
        output_tail: r.text("output_tail")?,
        started_at: r.req_time("started_at")?,
        finished_at: r.time("finished_at")?,
    })
}

impl Store {
    /// Opens the run's local pull request, or returns the one it already has (idempotent).
    pub async fn open_local_pr(
        &self,
        run_id: i64,
        repo: Option<&str>,
        branch: &str,
        base: &str,
    ) -> Result<LocalPr> {
        let at = now();
        on_pool!(self, |p| {
            sqlx::query(
                "INSERT INTO executor_local_prs (run_id, repo, branch, base, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (run_id) DO NOTHING",
            )
            .bind(run_id)
            .bind(repo)
            .bind(branch)
            .bind(base)
            .bind(at)
            .execute(p)
            .await?;
        });
        self.local_pr_for_run(run_id)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("local pull request of run {run_id} vanished")))
    }

    pub async fn local_pr_for_run(&self, run_id: i64) -> Result<Option<LocalPr>> {
        on_pool!(self, |p| {
            sqlx::query(concat!("SELECT ", local_pr_columns!(), " FROM executor_local_prs WHERE run_id = $1"))
                .bind(run_id)
                .fetch_optional(p)
                .await?
                .map(|r| pr_from_row(&r))
                .transpose()
        })
    }

    /// open, merged or closed; and whether it is a draft.
    pub async fn set_local_pr_state(&self, pr_id: i64, state: &str, draft: bool) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_local_prs SET state = $1, draft = $2, updated_at = $3 WHERE id = $4",
            )
            .bind(state)
            .bind(i64::from(draft))
            .bind(now())
            .bind(pr_id)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// Takes a local pull request out of draft (or back into it).
    pub async fn set_local_pr_draft(&self, pr_id: i64, draft: bool) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_local_prs SET draft = $1, updated_at = $2 WHERE id = $3")
                .bind(i64::from(draft))
                .bind(now())
                .bind(pr_id)
                .execute(p)
                .await?;
        });
        Ok(())
    }

    pub async fn set_local_pr_labels(&self, pr_id: i64, labels: &[String]) -> Result<()> {
        let json = serde_json::to_string(labels).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_local_prs SET labels = $1, updated_at = $2 WHERE id = $3")
                .bind(json)
                .bind(now())
                .bind(pr_id)
                .execute(p)
                .await?;
        });
        Ok(())
    }

    pub async fn add_local_comment(&self, pr_id: i64, c: &NewComment<'_>) -> Result<i64> {
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar(
                "INSERT INTO executor_local_comments (pr_id, author, body, path, line, in_reply_to, by_agent, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            )
            .bind(pr_id)
            .bind(c.author)
            .bind(self.scrub.apply(c.body))
            .bind(c.path)
            .bind(c.line)
            .bind(c.in_reply_to)
            .bind(i64::from(c.by_agent))
            .bind(now())
            .fetch_one(p)
            .await?
        }))
    }

    pub async fn local_comments(&self, pr_id: i64) -> Result<Vec<LocalComment>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                local_comment_columns!(),
                " FROM executor_local_comments WHERE pr_id = $1 ORDER BY id"
            ))
            .bind(pr_id)
            .fetch_all(p)
            .await?
            .iter()
            .map(comment_from_row)
            .collect()
        })
    }

    /// Records a check run that has started (pending).
    pub async fn start_local_check(
        &self,
        pr_id: i64,
        sha: &str,
        name: &str,
        work_dir: &str,
        host: &str,
    ) -> Result<i64> {
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar(
                "INSERT INTO executor_local_ci (pr_id, sha, name, status, work_dir, started_at, host) \
                 VALUES ($1, $2, $3, 'pending', $4, $5, $6) RETURNING id",
            )
            .bind(pr_id)
            .bind(sha)
            .bind(name)
            .bind(work_dir)
            .bind(now())
            .bind(host)
            .fetch_one(p)
            .await?
        }))
    }

    pub async fn set_local_check_pid(&self, check_id: i64, pid: i64) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_local_ci SET pid = $1 WHERE id = $2")
                .bind(pid)
                .bind(check_id)
                .execute(p)
                .await?;
        });
        Ok(())
    }

    /// Records a finished check (success or failure) with the tail of its output, scrubbed (CI output
    /// prints whatever the build printed, tokens included). Only a pending check finishes; returns
    /// whether this call finished it.
    pub async fn finish_local_check(&self, check_id: i64, status: &str, output_tail: &str) -> Result<bool> {
        let n = on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_local_ci SET status = $1, output_tail = $2, finished_at = $3 WHERE id = $4 AND status = 'pending'",
            )
            .bind(status)
            .bind(self.scrub.apply(output_tail))
            .bind(now())
            .bind(check_id)
            .execute(p)
            .await?
            .rows_affected()
        });
        Ok(n == 1)
    }

    /// The checks of a pull request, oldest first.
    pub async fn local_checks(&self, pr_id: i64) -> Result<Vec<LocalCheck>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                local_ci_columns!(),
                " FROM executor_local_ci WHERE pr_id = $1 ORDER BY id"
            ))
            .bind(pr_id)
            .fetch_all(p)
            .await?
            .iter()
            .map(check_from_row)
            .collect()
        })
    }

    /// Checks still running that `host` started (only its runner can see their process and files), on
    /// any pull request. Checks from before schema v6 name no host and belong to whoever looks.
    pub async fn pending_local_checks(&self, host: &str) -> Result<Vec<LocalCheck>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                local_ci_columns!(),
                " FROM executor_local_ci WHERE status = 'pending' AND (host = $1 OR host IS NULL) ORDER BY id"
            ))
            .bind(host)
            .fetch_all(p)
            .await?
            .iter()
            .map(check_from_row)
            .collect()
        })
    }
}

impl Store {
    pub async fn local_pr_by_id(&self, pr_id: i64) -> Result<Option<LocalPr>> {
        on_pool!(self, |p| {
            sqlx::query(concat!("SELECT ", local_pr_columns!(), " FROM executor_local_prs WHERE id = $1"))
                .bind(pr_id)
                .fetch_optional(p)
                .await?
                .map(|r| pr_from_row(&r))
                .transpose()
        })
    }
}
