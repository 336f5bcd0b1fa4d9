//! What the runner writes on GitHub: the branch, the draft pull request, labels, CI triggers, comments
//! (notices and agents' replies, recorded by id as executor's), reviews, and the ready-for-review mark.

use std::collections::HashMap;

use reqwest::Method;
use serde_json::{Value, json};

use super::wire::{WireAddReview, WireMarkReady, WireReplyToThread};
use super::{GitHubError, GitHubForge, segment};
use crate::domain::{ChangeWords, CiTrigger, Run, Task};
use crate::forge::job_logs::{LOG_BYTES, failed_job_logs};
use crate::forge::{CommentPost, ForgeError, PrRef, PrSnapshot, review_summary};
use crate::worker::result::ReviewResult;

const REPLY_TO_THREAD: &str = include_str!("graphql/reply_to_thread.graphql");
const ADD_REVIEW: &str = include_str!("graphql/add_review.graphql");
const MARK_READY: &str = include_str!("graphql/mark_ready.graphql");

/// How much of a failed job's log a `fix_ci` worker is shown: its last lines, within a byte bound.
/// A pull request's title: the task's first line, cut.
const TITLE_CHARS: usize = 120;

impl GitHubForge {
    /// The worktree root (`workspace.root`) under which a run's recorded worktree may be merged into.
    pub fn with_worktrees_root(mut self, root: std::path::PathBuf) -> Self {
        self.worktrees_root = Box::new(Some(root));
        self
    }

    /// Pushes the run's branch to `repos.NAME.remote` (never forced). When someone else pushed to it
    /// meanwhile (a human's fix on the pull request), their commits are merged into the run's worktree
    /// first and the push is tried once more; a merge that conflicts stays the push's error.
    pub async fn push(&self, run: &Run) -> Result<(), ForgeError> {
        push_merging(&self.repo, self.worktrees_root.as_deref(), run, Vec::new()).await
    }

    /// Pushes the branch and opens a draft pull request for it, or finds the one already open (a runner
    /// that died after opening it, or a human who opened it).
    pub async fn open_pr(&self, run: &Run, task: &Task, closes: Option<&str>) -> Result<PrRef, ForgeError> {
        let branch = run.branch_name.clone().ok_or(ForgeError::NoBranch(run.id))?;
        self.push(run).await?;
        let head = format!("{}:{branch}", self.owner);
        let existing = self
            .client
            .rest(
                Method::GET,
                &format!("/repos/{}/{}/pulls?state=open&head={}", self.owner, self.name, segment(&head)),
                None,
            )
            .await?;
        if let Some(pr) = existing.as_array().and_then(|list| list.first()) {
            return pr_ref(pr);
        }
        let body = json!({
            "title": title(task),
            "head": branch,
            "base": self.repo.base,
            "body": pr_body(run, task, self.closing_keyword(closes).as_deref(), ChangeWords::PULL_REQUEST.noun),
            "draft": true,
        });
        let created = self
            .client
            .rest(Method::POST, &format!("/repos/{}/{}/pulls", self.owner, self.name), Some(&body))
            .await?;
        pr_ref(&created)
    }

    /// GitHub's closing keyword for issue `closes` (`owner/name#N`): `Closes #N` in this repository,
    /// `Closes owner/name#N` in another.
    fn closing_keyword(&self, closes: Option<&str>) -> Option<String> {
        let (repo, number) = closes?.split_once('#')?;
        let here = format!("{}/{}", self.owner, self.name);
        Some(if repo.eq_ignore_ascii_case(&here) {
            format!("Closes #{number}")
        } else {
            format!("Closes {repo}#{number}")
        })
    }

    pub async fn add_labels(&self, run: &Run, labels: &[String]) -> Result<(), ForgeError> {
        let number = run.pr_number.ok_or(ForgeError::NoPr(run.id))?;
        let path = format!("/repos/{}/{}/issues/{number}/labels", self.owner, self.name);
        self.client.rest(Method::POST, &path, Some(&json!({ "labels": labels }))).await?;
        Ok(())
    }

    /// Starts CI at the head as `repos.NAME.ci_trigger` says: nothing (CI starts on push), a
    /// `workflow_dispatch` of a workflow file at the branch, or a re-run of the failed jobs of the
    /// head's last workflow run. A head with no workflow run to re-run (CI never started on it) is not an
    /// error that fails every tick: `rerun:FILE` dispatches FILE instead, and plain `rerun` waits. What
    /// was (not) done is returned for the runner to record with the head: the wait says so, and the
    /// notice at `runner.check_timeout` names it as the likely cause when nothing was triggered.
    pub async fn trigger_ci(&self, run: &Run, sha: &str) -> Result<CiTrigger, ForgeError> {
        let trigger = self.repo.ci_trigger.as_str();
        if trigger.is_empty() {
            tracing::info!(
                run = run.id,
                "no check at {sha} yet; repos.{}.ci_trigger is empty (CI starts on push), so executor waits",
                self.repo_name
            );
            return Ok(CiTrigger::NotConfigured);
        }
        if let Some(workflow) = trigger.strip_prefix("workflow:") {
            self.dispatch(run, workflow).await?;
            return Ok(CiTrigger::Dispatched);
        }
        let path =
            format!("/repos/{}/{}/actions/runs?head_sha={}&per_page=1", self.owner, self.name, segment(sha));
        let runs = self.client.rest(Method::GET, &path, None).await?;
        let Some(id) = runs.pointer("/workflow_runs/0/id").and_then(Value::as_i64) else {
            if let Some(workflow) = trigger.strip_prefix("rerun:") {
                tracing::info!(run = run.id, "no workflow run at {sha} to re-run: dispatching {workflow}");
                self.dispatch(run, workflow).await?;
                return Ok(CiTrigger::Dispatched);
            }
            tracing::warn!(
                run = run.id,
                "repos.{}.ci_trigger = \"rerun\" but no workflow run exists at {sha} to re-run; waiting for \
                 checks (the human is told after runner.check_timeout; \"rerun:FILE\" would dispatch FILE)",
                self.repo_name
            );
            return Ok(CiTrigger::NothingToRerun);
        };
        let path = format!("/repos/{}/{}/actions/runs/{id}/rerun-failed-jobs", self.owner, self.name);
        self.client.rest(Method::POST, &path, None).await?;
        Ok(CiTrigger::Rerun)
    }

    /// `workflow_dispatch` of `workflow` (a file under `.github/workflows`) at the run's branch.
    async fn dispatch(&self, run: &Run, workflow: &str) -> Result<(), ForgeError> {
        let branch = run.branch_name.clone().ok_or(ForgeError::NoBranch(run.id))?;
        let path =
            format!("/repos/{}/{}/actions/workflows/{}/dispatches", self.owner, self.name, segment(workflow));
        self.client.rest(Method::POST, &path, Some(&json!({ "ref": branch }))).await?;
        Ok(())
    }

    /// Posts a comment: in the review thread of `reply_to` when it is a review comment, else on the
    /// conversation. An agent's (or executor's) comment is recorded by id, with what it answers.
    pub async fn comment(&self, run: &Run, c: &CommentPost<'_>) -> Result<String, ForgeError> {
        let number = run.pr_number.ok_or(ForgeError::NoPr(run.id))?;
        let thread = match c.reply_to {
            Some(parent) => self.thread_of(run, number, parent).await?,
            None => None,
        };
        let posted = match &thread {
            Some(thread) => self
                .client
                .graphql(REPLY_TO_THREAD, json!({ "thread": thread, "body": c.body }))
                .await
                .map_err(ForgeError::from)
                .and_then(|data| Ok(answer::<WireReplyToThread>(data, "the thread reply")?.comment_id())),
            None => {
                let path = format!("/repos/{}/{}/issues/{number}/comments", self.owner, self.name);
                let posted = self.client.rest(Method::POST, &path, Some(&json!({ "body": c.body }))).await;
                posted
                    .map(|p| p.get("node_id").and_then(Value::as_str).map(str::to_string))
                    .map_err(Into::into)
            }
        };
        let id = match posted {
            Ok(id) => id.ok_or_else(|| malformed("GitHub did not say the new comment's id"))?,
            Err(ForgeError::GitHub(e)) if answer_lost(&e) => {
                self.landed_after_all(run, c, thread.as_deref()).await?.ok_or(ForgeError::GitHub(e))?
            }
            Err(e) => return Err(e),
        };
        if c.by_agent {
            self.store.record_agent_comment(run.id, &id, c.reply_to).await?;
        }
        Ok(id)
    }

    /// The comment `c` as GitHub carried it out after all, for a post whose answer was lost (a timeout,
    /// a connection gone): GitHub may still be carrying it out, so it is looked for only once it could
    /// have landed (`request_timeout` later), and only then may the caller post again (soak finding: a
    /// notice retried at once was posted twice, its first copy landing 2 s after the retry). Found, it is
    /// recorded as the agent's or executor's when `c` is one; not found, the post did not go through.
    async fn landed_after_all(
        &self,
        run: &Run,
        c: &CommentPost<'_>,
        thread: Option<&str>,
    ) -> Result<Option<String>, ForgeError> {
        tracing::info!(
            run = run.id,
            "GitHub's answer to a comment was lost; looking for it in {:?}, before posting it again",
            self.landing_time
        );
        tokio::time::sleep(self.landing_time).await;
        let Some(pr) = self.snapshot_asked_again(run).await? else { return Ok(None) };
        let taken = self.store.agent_comments(&[run.id]).await?;
        let landed = pr.comments.iter().find(|seen| {
            seen.body == c.body && !taken.contains_key(&seen.id) && seen.thread_id.as_deref() == thread
        });
        let Some(landed) = landed else { return Ok(None) };
        if c.by_agent {
            self.store.record_agent_comment(run.id, &landed.id, c.reply_to).await?;
        }
        // Observed before it was recorded: not to be reused.
        if let Some(number) = run.pr_number {
            self.forget_observation(number);
        }
        Ok(Some(landed.id.clone()))
    }

    /// The review thread comment `parent` is in, `None` for a conversation comment; an error when it is
    /// not on this pull request at all. The run's notice thread is executor's own conversation comment
    /// (its first notice's), known without looking: a notice goes into it even when the pull request
    /// cannot be observed, or was last observed before that comment was posted (soak finding: a notice
    /// failed with "comment N is not on this pull request").
    async fn thread_of(&self, run: &Run, number: i64, parent: &str) -> Result<Option<String>, ForgeError> {
        if self.store.run(run.id).await?.thread_id.as_deref() == Some(parent) {
            return Ok(None);
        }
        let snapshot = match self.cached(number) {
            Some(o) => o.snapshot,
            None => self
                .snapshots_unlogged(std::slice::from_ref(run))
                .await?
                .take(run.id)?
                .ok_or(ForgeError::NoPr(run.id))?,
        };
        let found = snapshot.comments.iter().find(|c| c.id == parent);
        match found {
            Some(c) => Ok(c.thread_id.clone()),
            None => Err(ForgeError::UnknownComment(parent.to_string())),
        }
    }

    /// A review's findings as one GitHub review (event COMMENT: executor never approves) with a comment
    /// per finding on its line, each part ending with `marker`. GitHub refuses a comment on a line
    /// outside the diff; then the findings go into the review's body instead — but only once the pull
    /// request shows that the first attempt left nothing: a 502 or GraphQL errors may come back from a
    /// review that was applied. Every id is recorded as executor's.
    pub async fn post_review(
        &self,
        run: &Run,
        pr: &PrSnapshot,
        review: &ReviewResult,
        marker: &str,
    ) -> Result<(), ForgeError> {
        let node = self.node_id(pr.number).ok_or(ForgeError::NoPr(run.id))?;
        let threads: Vec<Value> = review
            .findings
            .iter()
            .filter_map(|f| match (&f.path, f.line) {
                (Some(path), Some(line)) if line > 0 => {
                    Some(json!({ "path": path, "line": line, "body": format!("{}\n\n{marker}", f.body) }))
                }
                _ => None,
            })
            .collect();
        let body = format!("{}\n\n{marker}", review_summary(review));
        let vars = json!({ "pr": node, "commit": pr.head_sha, "body": body, "threads": threads });
        let data = match self.client.graphql(ADD_REVIEW, vars).await {
            Ok(data) => data,
            Err(e) if !e.is_rate_limit() && (!threads.is_empty() || answer_lost(&e)) => {
                if answer_lost(&e) {
                    // GitHub may still be carrying it out: looked for once it could have landed, or
                    // the retry would post it a second time.
                    tokio::time::sleep(self.landing_time).await;
                }
                let applied = self.marked_comments(run, marker).await?;
                if !applied.is_empty() {
                    tracing::info!(run = run.id, "the review was posted despite the error ({e})");
                    for id in &applied {
                        self.store.record_agent_comment(run.id, id, None).await?;
                    }
                    // Observed just now, before the ids were recorded: not to be reused.
                    self.forget_observation(pr.number);
                    return Ok(());
                }
                if threads.is_empty() {
                    return Err(e.into());
                }
                tracing::info!(
                    run = run.id,
                    "posting the review with line comments failed ({e}); posting it whole"
                );
                let everything =
                    format!("{}{}\n\n{marker}", review_summary(review), findings_on_lines(review));
                self.client
                    .graphql(
                        ADD_REVIEW,
                        json!({ "pr": node, "commit": pr.head_sha, "body": everything, "threads": [] }),
                    )
                    .await?
            }
            Err(e) => return Err(e.into()),
        };
        let (review, comments) = answer::<WireAddReview>(data, "the review")?
            .posted_ids()
            .ok_or_else(|| malformed("GitHub did not say the new review's id"))?;
        for id in std::iter::once(review).chain(comments) {
            self.store.record_agent_comment(run.id, &id, None).await?;
        }
        Ok(())
    }

    /// The ids of the comments marked `marker` on the pull request, asked again.
    async fn marked_comments(&self, run: &Run, marker: &str) -> Result<Vec<String>, ForgeError> {
        let seen = self.snapshot_asked_again(run).await?;
        Ok(seen
            .map(|pr| crate::forge::marked(&pr, marker).map(|c| c.id.clone()).collect())
            .unwrap_or_default())
    }

    /// The run's pull request asked of GitHub now, whatever this process or the database kept of it:
    /// for deciding whether a write whose answer was lost went through.
    pub async fn snapshot_asked_again(&self, run: &Run) -> Result<Option<PrSnapshot>, ForgeError> {
        // What the database keeps is read first, or the first observation of a process would load it
        // back after it was forgotten here.
        self.load_memory().await?;
        if let Some(number) = run.pr_number {
            self.forget_observation(number);
        }
        self.snapshots_unlogged(std::slice::from_ref(run)).await?.take(run.id)
    }

    /// Drops the last observation of pull request `number`: the next one asks GitHub again.
    /// The database the forge keeps its records in.
    pub(crate) fn store(&self) -> &crate::store::Store {
        &self.store
    }

    /// How long after a write was sent GitHub may still carry it out (its answer lost meanwhile).
    pub fn landing_time(&self) -> std::time::Duration {
        self.landing_time
    }

    pub fn forget_observation(&self, number: i64) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.remove(&number);
        }
    }

    /// The last lines of each failed GitHub Actions job at the head, by check name.
    pub async fn failed_check_logs(&self, pr: &PrSnapshot) -> Result<HashMap<String, String>, ForgeError> {
        failed_job_logs(pr, |job| async move {
            let path = format!("/repos/{}/{}/actions/jobs/{job}/logs", self.owner, self.name);
            Ok(self.client.download_text(&path, LOG_BYTES).await?)
        })
        .await
    }

    pub async fn mark_ready(&self, run: &Run, pr: &PrSnapshot) -> Result<(), ForgeError> {
        let node = self.node_id(pr.number).ok_or(ForgeError::NoPr(run.id))?;
        let data = self.client.graphql(MARK_READY, json!({ "pr": node })).await?;
        if !answer::<WireMarkReady>(data, "marking ready for review")?.is_ready() {
            return Err(malformed("GitHub left the pull request a draft"));
        }
        Ok(())
    }
}

/// Pushes the run's branch to `repo.remote` (never forced), with `env` set for git (a forge's
/// credentials). When someone else pushed to it meanwhile, their commits are merged into the run's
/// worktree (recorded under `worktrees_root`) first and the push is tried once more; a merge that
/// conflicts stays the push's error.
pub(crate) async fn push_merging(
    repo: &crate::config::Repo,
    worktrees_root: Option<&std::path::Path>,
    run: &Run,
    env: Vec<(String, String)>,
) -> Result<(), ForgeError> {
    use crate::workspace::{WorkspaceError, merge_remote_branch_with, push_branch_with};
    let branch = run.branch_name.clone().ok_or(ForgeError::NoBranch(run.id))?;
    let (path, remote) = (crate::config::expand_home(&repo.path), repo.remote.clone());
    let worktree = recorded_worktree(worktrees_root, run);
    tokio::task::spawn_blocking(move || match push_branch_with(&path, &remote, &branch, &env) {
        Err(rejected @ WorkspaceError::PushRejected { .. }) => {
            let Some(worktree) = worktree else { return Err(rejected) };
            merge_remote_branch_with(&path, &worktree, &remote, &branch, &env)?;
            tracing::info!("merged what others pushed to {branch} into its worktree before pushing it");
            push_branch_with(&path, &remote, &branch, &env)
        }
        other => other,
    })
    .await??;
    Ok(())
}

/// The run's worktree as recorded in the database, only when it lies under the worktree root `root`
/// (the database is writable by more than executor); anything else is refused and reported.
fn recorded_worktree(root: Option<&std::path::Path>, run: &Run) -> Option<std::path::PathBuf> {
    let recorded = std::path::Path::new(run.worktree_path.as_deref()?);
    match crate::workspace::path_under(root?, recorded) {
        Ok(path) => Some(path).filter(|p| p.is_dir()),
        Err(e) => {
            tracing::warn!(run = run.id, "not merging into the run's recorded worktree: {e}");
            None
        }
    }
}

/// Whether a write failed without GitHub's answer (a timeout, a connection gone), so that it may have
/// been carried out, or may still be.
fn answer_lost(e: &GitHubError) -> bool {
    matches!(e, GitHubError::Timeout | GitHubError::Transport(_))
}

/// A mutation's `data` in its wire type; any other shape is a malformed answer.
fn answer<T: serde::de::DeserializeOwned>(data: Value, what: &str) -> Result<T, ForgeError> {
    serde_json::from_value(data).map_err(|e| malformed(&format!("{what}: {e}")))
}

fn pr_ref(pr: &Value) -> Result<PrRef, ForgeError> {
    let number = pr.get("number").and_then(Value::as_i64);
    let url = pr.get("html_url").and_then(Value::as_str);
    match (number, url) {
        (Some(number), Some(url)) => Ok(PrRef { number, url: url.to_string() }),
        _ => Err(malformed("a pull request without number or html_url")),
    }
}

pub(crate) fn title(task: &Task) -> String {
    let first =
        task.description.as_deref().unwrap_or("").lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let title: String = first.trim().chars().take(TITLE_CHARS).collect();
    if title.is_empty() { format!("Task {}", task.task_gid) } else { title }
}

/// The pull request's description: where the work comes from, and the task's text quoted (so that its
/// markdown, @mentions included, reads as a quotation of the tracker, not as executor's own words).
/// `what`: the forge's word for it ([`ChangeWords::noun`]).
pub(crate) fn pr_body(run: &Run, task: &Task, closes: Option<&str>, what: &str) -> String {
    let source = task.source.as_deref().map(|s| format!(" from {s}")).unwrap_or_default();
    let quoted: String = task
        .description
        .as_deref()
        .unwrap_or("")
        .lines()
        .map(|l| format!("> {}\n", l.replace('@', "@\u{200b}")))
        .collect();
    format!(
        "Task {gid}{source}, worked on by executor (run {run}).\n\n{quoted}\nThis {what} is a draft opened by executor: \
         agents commit to its branch, executor pushes, runs the checks and reviews; a human decides whether it merges.",
        gid = task.task_gid,
        run = run.id,
    ) + &closes.map(|c| format!("\n\n{c}")).unwrap_or_default()
}

fn findings_on_lines(review: &ReviewResult) -> String {
    review
        .findings
        .iter()
        .filter_map(|f| match (&f.path, f.line) {
            (Some(path), Some(line)) => Some(format!("\n\n- `{path}` line {line}: {}", f.body)),
            (Some(path), None) => Some(format!("\n\n- `{path}`: {}", f.body)),
            _ => None,
        })
        .collect()
}

fn malformed(what: &str) -> ForgeError {
    ForgeError::GitHub(crate::github::GitHubError::Malformed(what.to_string()))
}
