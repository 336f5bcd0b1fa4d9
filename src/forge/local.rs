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

/// The author of the review findings executor posts for its `pr_review` workers.
pub const REVIEW_AUTHOR: &str = "executor-review";

/// The name of the one check the local forge runs.
pub const CHECK_NAME: &str = "ci";
/// How much of a CI run's output is kept (its tail: the end is where failures are).
const OUTPUT_TAIL: usize = 8_000;

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
    #[error("comment {0:?} is not on this pull request")]
    UnknownComment(String),
    #[error("GitHub: {0}")]
    GitHub(#[from] crate::github::GitHubError),
    #[error("{0}")]
    Config(String),
    #[error("CI program {program:?} {why}")]
    CiProgram { program: String, why: &'static str },
    #[error("a blocking task of the local forge did not finish: {0}")]
    Blocking(#[from] tokio::task::JoinError),
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
        let (head, merged) = blocking(move || {
            let head = workspace::branch_head(&repo, &branch)?;
            // A branch deleted after its last known head reached the base branch was merged with git.
            let merged = match (&head, &last_head) {
                (None, Some(sha)) => is_merged(&repo, sha, &base)?,
                _ => false,
            };
            Ok((head, merged))
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
                (_, None) if merged => PrState::Merged,
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
    ) -> Result<(), ForgeError> {
        let _ = pr;
        let summary = review_summary(review);
        let post =
            CommentPost { body: &summary, author: REVIEW_AUTHOR, by_agent: true, ..Default::default() };
        self.comment(run, &post).await?;
        for f in &review.findings {
            let post = CommentPost {
                body: &f.body,
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
        let id = self
            .store
            .start_local_check(pr.id, sha, CHECK_NAME, &check_dir.display().to_string(), &self.host)
            .await?;
        // A crash from here until the pid is recorded leaves a pending check: `poll_ci` finds the CI's
        // own pid file, or else records that CI never started.
        let (repo, sha, command) = (self.repo_path(), sha.to_string(), self.repo.ci_command.clone());
        match blocking(move || start_ci(&repo, &check_dir, &sha, &command)).await {
            Ok(pid) => self.store.set_local_check_pid(id, i64::from(pid)).await?,
            Err(e) => {
                self.store.finish_local_check(id, "error", &format!("CI could not start: {e}")).await?;
            }
        }
        Ok(id)
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
            let looked_at = check.clone();
            if let Some((status, tail)) = blocking(move || Ok(ci_result(&looked_at))).await? {
                if self.store.finish_local_check(check.id, status, &tail).await? {
                    finished += 1;
                }
                let (repo, dir) = (self.repo_path(), PathBuf::from(check.work_dir.unwrap_or_default()));
                let _ = blocking(move || Ok(workspace::remove_scratch(&repo, &dir.join("work"))?)).await;
            }
        }
        Ok(finished)
    }
}

/// Prepares the check's directory and scratch checkout, then starts the CI command there. Blocking.
fn start_ci(repo: &Path, check_dir: &Path, sha: &str, command: &[String]) -> Result<u32, ForgeError> {
    let Some((program, args)) = command.split_first() else {
        return Err(ForgeError::CiProgram { program: String::new(), why: "is empty" });
    };
    let work = check_dir.join("work");
    std::fs::create_dir_all(check_dir)
        .map_err(|source| ForgeError::Io { what: format!("creating {}", check_dir.display()), source })?;
    for leftover in ["exit", "pid"] {
        let _ = std::fs::remove_file(check_dir.join(leftover));
    }
    workspace::add_detached(repo, &work, sha)?;
    find_program(program, &work)?;
    spawn_ci(check_dir, &work, program, args)
}

/// Looks `program` up as the shell that runs it will: a name with a `/` relative to the checkout, any
/// other name on `PATH`. A program that is not there (or cannot be executed) is an infrastructure error,
/// known before anything runs — not the exit status 127 of a failed build.
fn find_program(program: &str, work: &Path) -> Result<(), ForgeError> {
    use std::os::unix::fs::PermissionsExt;
    let runnable =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    let found = if program.contains('/') {
        runnable(&work.join(program))
    } else if program.is_empty() {
        false
    } else {
        // Without PATH the shell falls back to its own default; let it decide.
        let Some(path) = std::env::var_os("PATH") else {
            return Ok(());
        };
        std::env::split_paths(&path).any(|dir| runnable(&dir.join(program)))
    };
    if found {
        Ok(())
    } else {
        Err(ForgeError::CiProgram { program: program.to_string(), why: "was not found or is not executable" })
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

/// Runs `program args…` in `work` through a tiny fixed shell script that records the exit status in a
/// file, so the result outlives the runner. The CI command comes from the config, never from task text,
/// and reaches the script as positional parameters (no interpolation).
fn spawn_ci(check_dir: &Path, work: &Path, program: &str, args: &[String]) -> Result<u32, ForgeError> {
    use std::os::unix::process::CommandExt;
    let out = check_dir.join("output.log");
    let exit = check_dir.join("exit");
    let child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(r#"echo $$ >"$EXECUTOR_CI_PID"; "$@" >"$EXECUTOR_CI_OUT" 2>&1; echo $? >"$EXECUTOR_CI_EXIT.tmp" && mv "$EXECUTOR_CI_EXIT.tmp" "$EXECUTOR_CI_EXIT""#)
        .arg("executor-ci")
        .arg(program)
        .args(args)
        .env("EXECUTOR_CI_OUT", &out)
        .env("EXECUTOR_CI_EXIT", &exit)
        .env("EXECUTOR_CI_PID", check_dir.join("pid"))
        .current_dir(work)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|source| ForgeError::Io { what: format!("starting CI {program:?}"), source })?;
    let pid = child.id();
    // Reap it in the background so it leaves no zombie while this runner lives; its result is the file.
    std::thread::spawn(move || {
        let mut child = child;
        let _ = child.wait();
    });
    Ok(pid)
}

/// The check's result if its process has ended: status and output tail. Blocking (file reads).
fn ci_result(check: &LocalCheck) -> Option<(&'static str, String)> {
    let dir = PathBuf::from(check.work_dir.as_deref()?);
    let tail = read_tail(&dir.join("output.log"));
    if let Ok(code) = std::fs::read_to_string(dir.join("exit")) {
        let ok = code.trim() == "0";
        return Some((
            if ok { "success" } else { "failure" },
            format!("exit status {}\n{tail}", code.trim()),
        ));
    }
    // The recorded pid, or the one the CI wrote itself when a crash came before it was recorded.
    let pid = check.pid.or_else(|| std::fs::read_to_string(dir.join("pid")).ok()?.trim().parse().ok());
    match pid.and_then(|p| i32::try_from(p).ok()) {
        Some(pid) if crate::worker::process::is_alive(pid) => None,
        Some(_) => Some(("failure", format!("CI ended without an exit status (killed?)\n{tail}"))),
        // Recorded as started, but it never ran: the runner stopped in between. Not the code's fault.
        None => Some(("error", "CI never started (the runner stopped while starting it)".into())),
    }
}

fn read_tail(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let start = bytes.len().saturating_sub(OUTPUT_TAIL);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
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
        author_association: None,
    }
}

#[cfg(test)]
mod tests;
