//! The local forge: pull requests without GitHub. A pull request is the run's branch plus a row; CI is a
//! configured command run at the PR's head in a scratch worktree, in the background, its exit status
//! written to a file so that it survives a restart of the runner; comments come from `executor comment`.

use std::path::{Path, PathBuf};

use chrono::Utc;

use super::{Check, CheckStatus, Comment, PrRef, PrSnapshot, PrState};
use crate::config::Repo;
use crate::domain::Run;
use crate::store::{LocalCheck, LocalPr, NewComment, Store, StoreError};
use crate::workspace::{self, WorkspaceError};

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
    #[error("run {0} has no pull request")]
    NoPr(i64),
    #[error("run {0} has no branch yet")]
    NoBranch(i64),
}

/// One repository on the local forge.
pub struct LocalForge {
    pub store: Store,
    pub repo_name: String,
    pub repo: Repo,
    /// `<data_dir>/ci`: scratch worktrees and CI output.
    pub ci_root: PathBuf,
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
        let head = workspace::branch_head(&self.repo_path(), &pr.branch)?;
        let checks = self.store.local_checks(pr.id).await?;
        let comments = self.store.local_comments(pr.id).await?;
        Ok(Some(PrSnapshot {
            number: pr.id,
            url: pr_url(&self.repo_name, pr.id),
            // A branch deleted by hand closes the pull request.
            state: match (pr.state.as_str(), &head) {
                ("merged", _) => PrState::Merged,
                ("closed", _) | (_, None) => PrState::Closed,
                _ => PrState::Open,
            },
            draft: pr.draft,
            head_sha: head.unwrap_or_default(),
            labels: pr.labels.clone(),
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

    pub async fn comment(&self, run: &Run, c: &NewComment<'_>) -> Result<i64, ForgeError> {
        let pr = self.pr(run).await?;
        Ok(self.store.add_local_comment(pr.id, c).await?)
    }

    /// Starts CI at `sha` in the background. With no `ci_command` configured, records a passing check
    /// that says so, since a run cannot complete without a green check.
    pub async fn trigger_ci(&self, run: &Run, sha: &str) -> Result<i64, ForgeError> {
        let pr = self.pr(run).await?;
        let Some((program, args)) = self.repo.ci_command.split_first() else {
            let id = self.store.start_local_check(pr.id, sha, CHECK_NAME, "").await?;
            self.store
                .finish_local_check(
                    id,
                    "success",
                    &format!("no CI configured: repos.{}.ci_command is empty", self.repo_name),
                )
                .await?;
            return Ok(id);
        };
        let check_dir = self.ci_root.join(format!("pr{}-{}", pr.id, &sha[..sha.len().min(12)]));
        let work = check_dir.join("work");
        let id =
            self.store.start_local_check(pr.id, sha, CHECK_NAME, &check_dir.display().to_string()).await?;
        let started = async {
            std::fs::create_dir_all(&check_dir).map_err(|source| ForgeError::Io {
                what: format!("creating {}", check_dir.display()),
                source,
            })?;
            let _ = std::fs::remove_file(check_dir.join("exit"));
            workspace::add_detached(&self.repo_path(), &work, sha)?;
            spawn_ci(&check_dir, &work, program, args)
        };
        match started.await {
            Ok(pid) => self.store.set_local_check_pid(id, i64::from(pid)).await?,
            Err(e) => {
                self.store.finish_local_check(id, "failure", &format!("CI could not start: {e}")).await?;
            }
        }
        Ok(id)
    }

    /// Finishes every pending check of this repo whose process has ended; returns how many finished.
    pub async fn poll_ci(&self) -> Result<usize, ForgeError> {
        let mut finished = 0;
        for check in self.store.pending_local_checks().await? {
            if check.work_dir.as_deref().is_none_or(str::is_empty) {
                continue;
            }
            let Some(pr) = self.store.local_pr_by_id(check.pr_id).await? else {
                continue;
            };
            if pr.repo.as_deref() != Some(self.repo_name.as_str()) {
                continue;
            }
            if let Some((status, tail)) = ci_result(&check) {
                if self.store.finish_local_check(check.id, status, &tail).await? {
                    finished += 1;
                }
                let dir = PathBuf::from(check.work_dir.unwrap_or_default());
                let _ = workspace::remove_scratch(&self.repo_path(), &dir.join("work"));
            }
        }
        Ok(finished)
    }
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
        .arg(r#""$@" >"$EXECUTOR_CI_OUT" 2>&1; echo $? >"$EXECUTOR_CI_EXIT.tmp" && mv "$EXECUTOR_CI_EXIT.tmp" "$EXECUTOR_CI_EXIT""#)
        .arg("executor-ci")
        .arg(program)
        .args(args)
        .env("EXECUTOR_CI_OUT", &out)
        .env("EXECUTOR_CI_EXIT", &exit)
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

/// The check's result if its process has ended: status and output tail.
fn ci_result(check: &LocalCheck) -> Option<(&'static str, String)> {
    let dir = PathBuf::from(check.work_dir.as_deref()?);
    let tail = read_tail(&dir.join("output.log"));
    match std::fs::read_to_string(dir.join("exit")) {
        Ok(code) => {
            let ok = code.trim() == "0";
            Some((if ok { "success" } else { "failure" }, format!("exit status {}\n{tail}", code.trim())))
        }
        Err(_) => {
            let alive = check.pid.and_then(|p| i32::try_from(p).ok()).is_some_and(pid_alive);
            (!alive).then(|| ("failure", format!("CI ended without an exit status (killed?)\n{tail}")))
        }
    }
}

fn pid_alive(pid: i32) -> bool {
    pid > 0 && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
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
            _ => CheckStatus::Pending,
        },
        sha: c.sha.clone(),
        url: None,
        summary: c.output_tail.clone(),
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
    }
}
