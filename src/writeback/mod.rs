//! Write-back: the trackers hear what became of their tasks. A message (the pull request opened, the
//! run completed or abandoned, optionally a skip or an approval) is recorded in the store's outbox
//! (`Store::record_writeback`) by whoever saw the event, before anything is sent; [`Outbox::deliver_due`]
//! then sends what is due, one attempt at a time:
//!
//! 1. the attempt is begun in the database (counted, and held from other processes for
//!    [`ATTEMPT_HOLD`]) before the tracker is called, so a crash mid-send is known afterwards;
//! 2. a message whose attempt is not the first is looked for in the tracker by its marker before it
//!    is posted, so a write that went through before a timeout or a crash is recorded, never doubled;
//! 3. the tracker's answer settles it: delivered (with the comment's id), refused for good (401, 403,
//!    404: the human is told once, with the fix, and nothing else waits on it), or tried again after a
//!    doubling back-off, up to [`MAX_ATTEMPTS`].
//!
//! A task's messages reach its tracker in the order they were recorded: a later one waits while an
//! earlier one is pending. Nothing here reaches a prompt, and the intake reads no comments (Asana's
//! stories, GitHub's issue comments, GitLab's notes, Linear's and Jira's comments), so what executor posts
//! never comes back as task text.

mod asana;
mod github_issues;
mod gitlab_issues;
mod jira;
mod linear;
pub mod message;
mod tracker;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

pub use asana::{AsanaTracker, TrackerAnswer};
pub use github_issues::GitHubIssuesTracker;
pub use gitlab_issues::GitLabIssuesTracker;
pub use jira::JiraTracker;
pub use linear::{LinearTracker, comment_id as linear_comment_id};
pub use message::{marker_text, new_marker};
pub use tracker::{Posted, Tracker, TrackerError, probe};

use crate::config::{Config, SourceConfig};
use crate::domain::{QueueStatus, Run, RunState, Task, WritebackEvent, WritebackStatus};
use crate::github::GitHubClient;
use crate::redact::Redactor;
use crate::store::{NewWriteback, Store, StoreError, Writeback};

/// An attempt that neither settled nor failed within this time (its process died) is taken up again.
pub const ATTEMPT_HOLD: Duration = Duration::from_secs(120);

/// The first retry waits this long; each later one twice as long, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_secs(30);
pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// After this many attempts that failed for passing reasons the message is given up and the human told.
pub const MAX_ATTEMPTS: i64 = 10;

/// Messages looked at per delivery pass.
const BATCH: i64 = 500;

/// What one delivery pass did.
#[derive(Debug, Default)]
pub struct DeliveryReport {
    pub delivered: usize,
    /// Messages that will not be delivered, each with what the human should be told (once).
    pub refused: Vec<Refusal>,
    /// Attempts that failed for a passing reason (tried again later), with why.
    pub failed: Vec<String>,
}

/// A message settled undelivered: the human is told `text`, keyed so that it is told once per run.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub writeback: Writeback,
    /// Identifies the notice: one per source and run, so a read-only token is told once, not per event.
    pub notice_key: String,
    pub text: String,
}

/// The sources' trackers and the store: records events and delivers them.
pub struct Outbox {
    config: Arc<Config>,
    store: Store,
    github: Option<Arc<GitHubClient>>,
    /// Reads a token variable (the process environment; a test's own map).
    env: Env,
    /// The config's secrets, kept out of every message.
    redactor: Redactor,
}

/// Looks up an environment variable.
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

impl Outbox {
    /// `github` is the client the GitHub Issues sources write through (the forge's, so one token has
    /// one rate limit); without one those sources' messages wait, with the reason recorded.
    pub fn new(config: Arc<Config>, store: Store, github: Option<Arc<GitHubClient>>) -> Outbox {
        let redactor = Redactor::from_config(&config);
        Outbox { config, store, github, env: Arc::new(|name| std::env::var(name).ok()), redactor }
    }

    /// The same, reading token variables through `env` instead of the process environment.
    pub fn with_env(mut self, env: Env) -> Outbox {
        self.env = env;
        self
    }

    /// The source a task came from when it writes `event` back, else `None` (a file source, a source
    /// no longer configured, an event its `writeback` leaves out).
    pub fn source_for(&self, source: Option<&str>, event: WritebackEvent) -> Option<&SourceConfig> {
        let s = self.config.sources.iter().find(|s| Some(s.name.as_str()) == source)?;
        (s.writes_back() && s.writeback_events().contains(&event)).then_some(s)
    }

    /// The GitHub issue (`owner/name#N`) a task of a GitHub Issues source is, or the GitLab issue
    /// (`group/sub/project#IID`) a task of a GitLab issues source is, when that source writes back: its
    /// pull or merge request says it closes the issue. A GitLab issue only on a repository whose forge
    /// is GitLab: on GitHub the same words would name a GitHub issue.
    pub fn closing_reference(&self, task_source: Option<&str>, task_gid: &str) -> Option<String> {
        let s = self.config.sources.iter().find(|s| Some(s.name.as_str()) == task_source)?;
        if s.writeback_events().is_empty() {
            return None;
        }
        match s.kind.as_str() {
            "github_issues" => {
                let number = github_issues::issue_number(&s.github, task_gid)?;
                Some(format!("{}#{number}", s.github))
            }
            "gitlab_issues" => {
                let repo = (!s.repo.is_empty()).then_some(s.repo.as_str());
                let (_, repo) = self.config.repo_for(repo, "the source").ok()?;
                let (_, iid) = crate::gitlab::parse_issue_gid(task_gid)?;
                (repo.forge == "gitlab").then(|| format!("{}#{iid}", s.gitlab))
            }
            _ => None,
        }
    }

    /// Records `message` for the task's tracker under `key` (once per task and key), when its source
    /// writes `event` back. Returns whether a message was recorded now.
    pub async fn record(
        &self,
        task_gid: &str,
        task_source: Option<&str>,
        run_id: Option<i64>,
        event: WritebackEvent,
        key: &str,
        message: &str,
    ) -> Result<bool, StoreError> {
        let Some(source) = self.source_for(task_source, event) else { return Ok(false) };
        // Redacted before it is recorded: the tracker is outside executor, like a forge comment.
        let message = &self.redactor.redact(message);
        let marker = new_marker();
        let recorded = self
            .store
            .record_writeback(NewWriteback {
                task_gid,
                run_id,
                source: &source.name,
                event,
                event_key: key,
                message,
                marker: &marker,
            })
            .await?;
        Ok(recorded.is_some())
    }

    /// Records, before a human's skip (`executor skip`, the dashboard) is written, the message the
    /// task's tracker is owed when its source writes `skipped` back. A skip that then does not land is
    /// withdrawn when its turn comes; a task that cannot be skipped records nothing.
    pub async fn record_human_skip(&self, task: &Task, reason: &str) -> Result<bool, StoreError> {
        if task.status.check(QueueStatus::Skip).is_err() {
            return Ok(false);
        }
        let key = format!("skipped:{}", new_marker());
        let text = message::skipped(&format!("a human decided: {reason}"));
        self.record(
            task.task_gid.as_str(),
            task.source.as_deref(),
            None,
            WritebackEvent::Skipped,
            &key,
            &text,
        )
        .await
    }

    /// Records, before a human abandons `run` (`executor runs abandon`, the dashboard), the message its
    /// task's tracker is owed; `why` is the reason the run will record. Nothing for a run already
    /// abandoned.
    pub async fn record_human_abandon(&self, run: &Run, why: &str) -> Result<bool, StoreError> {
        if run.state == RunState::Abandoned {
            return Ok(false);
        }
        let task = self.store.task(&run.task_gid).await?;
        let text = message::abandoned(run.task_gid.as_str(), why, run.branch_name.as_deref());
        let key = format!("run:{}:abandoned", run.id);
        self.record(
            run.task_gid.as_str(),
            task.source.as_deref(),
            Some(run.id),
            WritebackEvent::Abandoned,
            &key,
            &text,
        )
        .await
    }

    /// Sends every message that is due, in order per task. Store errors end the pass; a tracker's
    /// errors are recorded on their messages and reported.
    pub async fn deliver_due(&self) -> Result<DeliveryReport, StoreError> {
        let mut report = DeliveryReport::default();
        let now = Utc::now();
        // A task whose earlier message is still pending holds its later ones back.
        let mut held: HashSet<String> = HashSet::new();
        // A source that just failed for a passing reason (down, slow, limiting) is not tried again this
        // pass: one timeout per pass, not one per message, is all a slow tracker costs the runner's tick.
        let mut failing: HashSet<String> = HashSet::new();
        let mut trackers = HashMap::new();
        for w in self.store.pending_writebacks(BATCH).await? {
            if failing.contains(&w.source) {
                continue;
            }
            if held.contains(&w.task_gid) || w.next_attempt_at > now {
                held.insert(w.task_gid.clone());
                continue;
            }
            if w.event == WritebackEvent::Skipped && !self.still_skipped(&w).await? {
                // Recorded before the triage's result was written, and the task was not skipped after
                // all (a crash, a human's decision), or a newer skip's message supersedes it.
                let why = "withdrawn: the task is no longer skipped as this message said";
                self.store.mark_writeback_settled_undelivered(w.id, WritebackStatus::Withdrawn, why).await?;
                continue;
            }
            let Some(w) = self.store.begin_writeback_attempt(w.id, at(now, ATTEMPT_HOLD)).await? else {
                held.insert(w.task_gid.clone());
                continue; // another process is at it, or it settled meanwhile
            };
            // A tracker's error text is stored and told: the config's secrets never are.
            let attempt = self.attempt(&w, &mut trackers).await.map_err(|e| match e {
                TrackerError::Refused { why, fix } => {
                    TrackerError::Refused { why: self.redactor.redact(&why), fix: self.redactor.redact(&fix) }
                }
                TrackerError::Passing(why) => TrackerError::Passing(self.redactor.redact(&why)),
            });
            match attempt {
                Ok(posted) => {
                    self.store.mark_writeback_delivered(w.id, posted.remote_id()).await?;
                    tracing::info!(task = %w.task_gid, source = %w.source, "told the tracker: {}", w.event);
                    report.delivered += 1;
                }
                Err(TrackerError::Refused { why, fix }) => {
                    let error = format!("{why}; {fix}");
                    self.store
                        .mark_writeback_settled_undelivered(w.id, WritebackStatus::Refused, &error)
                        .await?;
                    tracing::warn!(task = %w.task_gid, source = %w.source, "the tracker refused: {error}");
                    report.refused.push(refusal(&w, &error));
                    // Refused for good: later messages may still go (a deleted task refuses them too).
                }
                Err(TrackerError::Passing(why)) if w.attempts >= MAX_ATTEMPTS => {
                    let error = format!("given up after {} attempts; the last: {why}", w.attempts);
                    self.store
                        .mark_writeback_settled_undelivered(w.id, WritebackStatus::GivenUp, &error)
                        .await?;
                    tracing::warn!(task = %w.task_gid, source = %w.source, "{error}");
                    report.refused.push(refusal(&w, &error));
                }
                Err(TrackerError::Passing(why)) => {
                    let retry = at(Utc::now(), backoff(w.attempts));
                    self.store.mark_writeback_failed(w.id, &why, retry).await?;
                    tracing::warn!(task = %w.task_gid, source = %w.source, "not told yet (retried {retry}): {why}");
                    report.failed.push(format!("task {}: telling {}: {why}", w.task_gid, w.source));
                    held.insert(w.task_gid.clone());
                    failing.insert(w.source.clone());
                }
            }
        }
        Ok(report)
    }

    /// Whether a skip's message still tells the truth: the task is skipped, and no later skip's
    /// message was recorded for it.
    async fn still_skipped(&self, w: &Writeback) -> Result<bool, StoreError> {
        let Ok(gid) = crate::domain::TaskGid::parse(&w.task_gid) else { return Ok(false) };
        let skipped = match self.store.task(&gid).await {
            Ok(task) => task.status == QueueStatus::Skip,
            Err(StoreError::UnknownTask(_)) => false,
            Err(e) => return Err(e),
        };
        let newer = self
            .store
            .writebacks(Some(&w.task_gid))
            .await?
            .iter()
            .any(|o| o.event == WritebackEvent::Skipped && o.id > w.id);
        Ok(skipped && !newer)
    }

    /// One attempt at `w`, through its source's tracker (made once per pass and source).
    async fn attempt(
        &self,
        w: &Writeback,
        trackers: &mut HashMap<String, Tracker>,
    ) -> Result<Posted, TrackerError> {
        if !trackers.contains_key(&w.source) {
            let Some(source) = self.config.sources.iter().find(|s| s.name == w.source) else {
                return Err(TrackerError::Refused {
                    why: format!("source {:?} is no longer in the config", w.source),
                    fix: "put the [[sources]] entry back to deliver its messages".into(),
                });
            };
            trackers.insert(w.source.clone(), self.tracker(source)?);
        }
        let tracker = trackers.get(&w.source).ok_or_else(|| TrackerError::Passing("no tracker".into()))?;
        let pull_request = match (tracker, w.run_id) {
            (Tracker::Jira(_), Some(run)) => {
                self.store
                    .run(run)
                    .await
                    .map_err(|e| TrackerError::Passing(format!("reading run {run}'s pull request: {e}")))?
                    .pr_url
            }
            _ => None,
        };
        tracker.post_linking(w, pull_request.as_deref()).await
    }
}

/// The wait before attempt `attempts + 1`: [`FIRST_BACKOFF`] doubled per attempt made, at most
/// [`MAX_BACKOFF`].
pub fn backoff(attempts: i64) -> Duration {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 20)).unwrap_or(20);
    FIRST_BACKOFF.saturating_mul(2u32.saturating_pow(doublings)).min(MAX_BACKOFF)
}

fn at(from: DateTime<Utc>, after: Duration) -> DateTime<Utc> {
    from + chrono::TimeDelta::from_std(after).unwrap_or(chrono::TimeDelta::hours(1))
}

fn refusal(w: &Writeback, error: &str) -> Refusal {
    Refusal {
        writeback: w.clone(),
        notice_key: format!("writeback_refused:{}", w.source),
        text: format!(
            "executor could not tell source {:?} about task {} ({}): {error}. Later messages to this \
             source are tried as usual; `executor writeback list {}` shows each one.",
            w.source, w.task_gid, w.event, w.task_gid
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_thirty_seconds_up_to_an_hour() {
        assert_eq!(backoff(1), Duration::from_secs(30));
        assert_eq!(backoff(2), Duration::from_secs(60));
        assert_eq!(backoff(4), Duration::from_secs(240));
        assert_eq!(backoff(9), Duration::from_secs(3600));
        assert_eq!(backoff(1000), Duration::from_secs(3600));
    }
}
