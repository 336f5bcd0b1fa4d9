//! The local forge: pull requests without GitHub. A pull request is the run's branch plus a row; CI is a
//! configured command run at the PR's head in a scratch worktree, in the background, its exit status
//! written to a file so that it survives a restart of the runner; comments come from `executor comment`.
//!
//! Git and file work runs on the blocking pool (`spawn_blocking`), never on the async threads that serve
//! every run's tick.

use std::path::{Path, PathBuf};

use chrono::Utc;

use super::{Check, CheckStatus, Comment, CommentPost, PrRef, PrSnapshot, PrState, review_summary};
use crate::config::Repo;
use crate::domain::Run;
use crate::store::{LocalCheck, LocalPr, NewComment, Store, StoreError};
use crate::worker::result::ReviewResult;
use crate::workspace::{self, WorkspaceError};

mod ci;
use ci::{CiLock, CiState};

/// The author of the review findings executor posts for its `pr_review` workers.
pub const REVIEW_AUTHOR: &str = "executor-review";

/// The name of the one check the local forge runs.
pub const CHECK_NAME: &str = "ci";

#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Git(#[from] WorkspaceError),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("run {0} has no pull request yet")]
    NoPr(i64),
    #[error("run {0} has no branch yet")]
    NoBranch(i64),
    #[error("pull request #{number} could not be observed: {why}")]
    Unobserved { number: i64, why: String },
    #[error("comment {0:?} is not on this pull request")]
    UnknownComment(String),
    #[error("GitHub: {0}")]
    GitHub(#[from] crate::github::GitHubError),
    #[error("GitLab: {0}")]
    GitLab(#[from] crate::gitlab::GitLabError),
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Ci(#[from] ci::CiError),
    #[error("a blocking task of the local forge did not finish: {0}")]
    Blocking(#[from] tokio::task::JoinError),
}

impl ForgeError {
    /// GitHub's rate limit (primary, secondary or `retry-after`): the forge waits on the world, which is
    /// not a failure of the runner's.
    pub fn is_rate_limit(&self) -> bool {
        match self {
            ForgeError::GitHub(e) => e.is_rate_limit(),
            ForgeError::GitLab(e) => e.is_rate_limit(),
            _ => false,
        }
    }
}

/// Runs git or file work on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ForgeError> + Send + 'static,
) -> Result<T, ForgeError> {
    tokio::task::spawn_blocking(work).await?
}

/// One repository on the local forge.
pub struct LocalForge {
    pub store: Store,
    pub repo_name: String,
    pub repo: Repo,
    /// `<data_dir>/ci`: scratch worktrees and CI output.
    pub ci_root: PathBuf,
    /// This host's name: CI runs here are recorded under it, and only this host's are polled.
    pub host: String,
    /// How CI is contained (`worker.sandbox`, as an agent is); `None`: it runs uncontained.
    pub ci_sandbox: Option<crate::worker::Sandbox>,
}

pub fn pr_url(repo_name: &str, id: i64) -> String {
    format!("local://{repo_name}/pull/{id}")
}

impl LocalForge {
    fn repo_path(&self) -> PathBuf {
        crate::config::expand_home(&self.repo.path)
    }

    /// The run's pull request as the runner sees it, or `None` if it has none.
    pub async fn snapshot(&self, run: &Run) -> Result<Option<PrSnapshot>, ForgeError> {
        let Some(pr) = self.store.local_pr_for_run(run.id).await? else {
            return Ok(None);
        };
        let (repo, branch, base) = (self.repo_path(), pr.branch.clone(), pr.base.clone());
        let last_head = run.head_sha.clone();
        let (head, merged, diff) = blocking(move || {
            let head = workspace::branch_head(&repo, &branch)?;
            // Merged with git: the branch's head (or, once it was deleted, its last known head) is on the
            // base branch. The branch need not be deleted: `git merge` alone leaves it in place.
            let merged = match head.as_ref().or(last_head.as_ref()) {
                Some(sha) => is_merged(&repo, sha, &base)?,
                None => false,
            };
            // Only for a page to show: a base git cannot diff against leaves it unknown.
            let diff = match &head {
                Some(sha) => workspace::diff_stat(&repo, &base, sha).unwrap_or_else(|e| {
                    tracing::warn!("no diff stat for branch {branch}: {e}");
                    None
                }),
                None => None,
            };
            Ok((head, merged, diff))
        })
        .await?;
        let checks = self.store.local_checks(pr.id).await?;
        let comments = self.store.local_comments(pr.id).await?;
        Ok(Some(PrSnapshot {
            number: pr.id,
            url: pr_url(&self.repo_name, pr.id),
            // A branch deleted by hand closes the pull request, unless its work is on the base branch.
            state: match (pr.state.as_str(), &head) {
                ("merged", _) => PrState::Merged,
                _ if merged => PrState::Merged,
                ("closed", _) | (_, None) => PrState::Closed,
                _ => PrState::Open,
            },
            draft: pr.draft,
            head_sha: head.unwrap_or_default(),
            labels: pr.labels.clone(),
            // The local forge does not check: its base branch is the human's to merge.
            mergeable: super::Mergeable::Mergeable,
            checks: checks.iter().map(check_view).collect(),
            comments: comments.iter().map(comment_view).collect(),
            observed_at: Utc::now(),
            diff: diff.map(|d| super::DiffStat {
                files: d.files,
                additions: d.additions,
                deletions: d.deletions,
            }),
        }))
    }

    /// Opens the run's pull request (idempotent).
    pub async fn open_pr(&self, run: &Run) -> Result<PrRef, ForgeError> {
        let branch = run.branch_name.as_deref().ok_or(ForgeError::NoBranch(run.id))?;
        let pr =
            self.store.open_local_pr(run.id, Some(self.repo_name.as_str()), branch, &self.repo.base).await?;
        Ok(PrRef { number: pr.id, url: pr_url(&self.repo_name, pr.id) })
    }

    async fn pr(&self, run: &Run) -> Result<LocalPr, ForgeError> {
        self.store.local_pr_for_run(run.id).await?.ok_or(ForgeError::NoPr(run.id))
    }

    pub async fn add_labels(&self, run: &Run, labels: &[String]) -> Result<(), ForgeError> {
        let pr = self.pr(run).await?;
        let mut all = pr.labels.clone();
        for l in labels {
            if !all.contains(l) {
                all.push(l.clone());
            }
        }
        self.store.set_local_pr_labels(pr.id, &all).await?;
        Ok(())
    }

    pub async fn comment(&self, run: &Run, c: &CommentPost<'_>) -> Result<i64, ForgeError> {
        let pr = self.pr(run).await?;
        let in_reply_to = match c.reply_to {
            None => None,
            Some(id) => {
                let known = self.store.local_comments(pr.id).await?;
                let parent = id.parse::<i64>().ok().filter(|n| known.iter().any(|k| k.id == *n));
                Some(parent.ok_or_else(|| ForgeError::UnknownComment(id.to_string()))?)
            }
        };
        let comment = NewComment {
            author: c.author,
            body: c.body,
            path: c.path,
            line: c.line,
            in_reply_to,
            by_agent: c.by_agent,
        };
        Ok(self.store.add_local_comment(pr.id, &comment).await?)
    }

    /// A review's findings, as executor's comments: its summary, then one per finding on its file and line.
    pub async fn post_review(
        &self,
        run: &Run,
        pr: &PrSnapshot,
        review: &ReviewResult,
        marker: &str,
    ) -> Result<(), ForgeError> {
        let _ = pr;
        let summary = format!("{}\n\n{marker}", review_summary(review));
        let post =
            CommentPost { body: &summary, author: REVIEW_AUTHOR, by_agent: true, ..Default::default() };
        self.comment(run, &post).await?;
        for f in &review.findings {
            let body = format!("{}\n\n{marker}", f.body);
            let post = CommentPost {
                body: &body,
                author: REVIEW_AUTHOR,
                by_agent: true,
                path: f.path.as_deref(),
                line: f.line,
                ..Default::default()
            };
            self.comment(run, &post).await?;
        }
        Ok(())
    }

    pub async fn mark_ready(&self, run: &Run, pr: &PrSnapshot) -> Result<(), ForgeError> {
        let _ = pr;
        let pr = self.pr(run).await?;
        self.store.set_local_pr_draft(pr.id, false).await?;
        Ok(())
    }

    /// Starts CI at `sha` in the background. With no `ci_command` configured, records a passing check
    /// that says so, since a run cannot complete without a green check. When CI cannot start at all (its
    /// directory, its checkout, its program), the check is recorded as `error` with the reason: that is
    /// for a human to fix, not a failure of the code under test.
    pub async fn trigger_ci(&self, run: &Run, sha: &str) -> Result<i64, ForgeError> {
        let pr = self.pr(run).await?;
        if self.repo.ci_command.is_empty() {
            let id = self.store.start_local_check(pr.id, sha, CHECK_NAME, "", &self.host).await?;
            self.store
                .finish_local_check(
                    id,
                    "success",
                    &format!("no CI configured: repos.{}.ci_command is empty", self.repo_name),
                )
                .await?;
            return Ok(id);
        }
        let check_dir = self.ci_root.join(format!("pr{}-{}", pr.id, sha.get(..12).unwrap_or(sha)));
        // The lock is taken before the check is recorded, so a pending check whose lock is free and whose
        // CI left no trace was being started by a runner that died: `poll_ci` starts it again.
        let dir = check_dir.clone();
        let lock = blocking(move || Ok(CiLock::take(&dir))).await?;
        let id = self
            .store
            .start_local_check(pr.id, sha, CHECK_NAME, &check_dir.display().to_string(), &self.host)
            .await?;
        self.launch(id, lock, sha).await?;
        Ok(id)
    }

    /// Starts CI for the recorded check `id` with its directory's lock, and records its pid; CI that
    /// cannot start finishes the check as `error` with the reason.
    async fn launch(&self, id: i64, lock: Result<CiLock, ci::CiError>, sha: &str) -> Result<(), ForgeError> {
        let (repo, sha) = (self.repo_path(), sha.to_string());
        let run = ci::CiRun {
            command: self.repo.ci_command.clone(),
            env: self.repo.ci_env.clone(),
            sandbox: self.ci_sandbox.clone(),
        };
        let started = match lock {
            Ok(lock) => blocking(move || Ok(ci::launch(lock, &repo, &sha, &run))).await?,
            Err(e) => Err(e),
        };
        match started {
            Ok(pid) => self.store.set_local_check_pid(id, i64::from(pid)).await?,
            Err(e) => {
                self.store.finish_local_check(id, "error", &format!("CI could not start: {e}")).await?;
            }
        }
        Ok(())
    }

    /// Finishes every pending check of this repo whose process has ended; returns how many finished.
    pub async fn poll_ci(&self) -> Result<usize, ForgeError> {
        let mut finished = 0;
        for check in self.store.pending_local_checks(&self.host).await? {
            if check.work_dir.as_deref().is_none_or(str::is_empty) {
                continue;
            }
            let Some(pr) = self.store.local_pr_by_id(check.pr_id).await? else {
                continue;
            };
            if pr.repo.as_deref() != Some(self.repo_name.as_str()) {
                continue;
            }
            let dir = match ci::check_dir(&check, &self.ci_root) {
                Ok(dir) => dir,
                Err(e) => {
                    tracing::warn!(check = check.id, "refusing the check's recorded directory: {e}");
                    continue;
                }
            };
            let (looked_at, ci_root) = (check.clone(), self.ci_root.clone());
            let state = match blocking(move || Ok(ci::state(&looked_at, &ci_root)?)).await {
                Ok(state) => state,
                // One unreadable check directory must not keep the others from finishing.
                Err(e) => {
                    tracing::warn!(check = check.id, "cannot tell where CI stands: {e}");
                    continue;
                }
            };
            match state {
                CiState::Running => {}
                CiState::Ended(status, tail) => {
                    if self.store.finish_local_check(check.id, status, &tail).await? {
                        finished += 1;
                    }
                    let repo = self.repo_path();
                    let _ = blocking(move || Ok(workspace::remove_scratch(&repo, &dir.join("work"))?)).await;
                }
                CiState::Abandoned(lock) => {
                    // Not the CI's failure nor the setup's: the runner died before CI ran. Start it again.
                    tracing::info!(check = check.id, sha = %check.sha, "starting CI again: its runner stopped while starting it");
                    self.launch(check.id, Ok(lock), &check.sha).await?;
                }
            }
        }
        Ok(finished)
    }
}

/// Whether `sha` is on `base` (`git merge-base --is-ancestor`). Blocking.
fn is_merged(repo: &Path, sha: &str, base: &str) -> Result<bool, ForgeError> {
    if sha.is_empty() || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(false);
    }
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["merge-base", "--is-ancestor", sha, base])
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|source| ForgeError::Io { what: "running git merge-base".into(), source })?;
    // 0: an ancestor; 1: not one; anything else (an unknown commit, a missing base): not known merged.
    Ok(status.code() == Some(0))
}

fn check_view(c: &LocalCheck) -> Check {
    Check {
        name: c.name.clone(),
        status: match c.status.as_str() {
            "success" => CheckStatus::Success,
            "failure" => CheckStatus::Failure,
            "error" => CheckStatus::Error,
            _ => CheckStatus::Pending,
        },
        sha: c.sha.clone(),
        url: None,
        summary: c.output_tail.clone(),
        job_id: None,
    }
}

fn comment_view(c: &crate::store::LocalComment) -> Comment {
    Comment {
        id: c.id.to_string(),
        author: c.author.clone(),
        body: c.body.clone(),
        created_at: c.created_at,
        path: c.path.clone(),
        line: c.line,
        thread_id: None,
        thread_resolved: c.resolved,
        in_reply_to: c.in_reply_to.map(|i| i.to_string()),
        by_agent: c.by_agent,
        from_dashboard: false,
        author_association: None,
    }
}

#[cfg(test)]
mod tests;
