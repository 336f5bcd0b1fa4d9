//! The trackers executor writes to, one type per kind behind [`Tracker`], and how the outbox makes the
//! one a source writes to (its token read through the outbox's environment); [`probe`] asks one whether
//! it would take a message, writing nothing.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::{
    AsanaTracker, GitHubIssuesTracker, GitLabIssuesTracker, JiraTracker, LinearTracker, Outbox, TrackerAnswer,
};
use crate::config::SourceConfig;
use crate::domain::Task;
use crate::github::GitHubClient;
use crate::gitlab::GitLabClient;
use crate::store::Writeback;

/// How a tracker took a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Posted {
    /// Posted now; the tracker's id of the comment.
    Now(String),
    /// An earlier attempt had posted it (found by its marker); that comment's id.
    Earlier(String),
}

impl Posted {
    pub fn remote_id(&self) -> &str {
        match self {
            Posted::Now(id) | Posted::Earlier(id) => id,
        }
    }
}

/// Why a tracker did not take a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrackerError {
    /// For good: the token, its rights, or the task. Retrying cannot help; a human must act.
    #[error("{why}; {fix}")]
    Refused { why: String, fix: String },
    /// A passing fault (a timeout, a 5xx, a rate limit): tried again later.
    #[error("{0}")]
    Passing(String),
}

/// A tracker executor can write to.
pub enum Tracker {
    Asana(AsanaTracker),
    GitHubIssues(GitHubIssuesTracker),
    GitLabIssues(GitLabIssuesTracker),
    Linear(LinearTracker),
    Jira(JiraTracker),
}

impl Tracker {
    /// Posts `w` on its task unless an earlier attempt did (looked for only when `w` was tried before).
    pub async fn post(&self, w: &Writeback) -> Result<Posted, TrackerError> {
        self.post_linking(w, None).await
    }

    /// As [`post`](Self::post), with the address of `w`'s run's pull request, which a tracker that
    /// links pull requests (Jira) links on the task.
    pub async fn post_linking(
        &self,
        w: &Writeback,
        pull_request: Option<&str>,
    ) -> Result<Posted, TrackerError> {
        match self {
            Tracker::Asana(t) => t.post(w).await,
            Tracker::GitHubIssues(t) => t.post(w).await,
            Tracker::GitLabIssues(t) => t.post(w).await,
            Tracker::Linear(t) => t.post(w).await,
            Tracker::Jira(t) => t.post(w, pull_request).await,
        }
    }
}

impl Outbox {
    /// The answer to a run's open question asked at `since`, from a comment on `task` in its tracker by
    /// one of its source's `answerers` (Asana, Jira, GitLab issues). `None` when the source takes no
    /// answers or none came.
    pub async fn tracker_answer(
        &self,
        task: &Task,
        since: DateTime<Utc>,
    ) -> Result<Option<TrackerAnswer>, TrackerError> {
        let Some(source) =
            self.config.sources.iter().find(|s| task.source.as_deref() == Some(s.name.as_str()))
        else {
            return Ok(None);
        };
        if source.answerers.is_empty() {
            return Ok(None);
        }
        let (gid, token) = (task.task_gid.as_str(), (self.env)(&source.token_env));
        match source.kind.as_str() {
            "asana" => AsanaTracker::new(source, token)?.answer_since(gid, since, &source.answerers).await,
            "jira" => JiraTracker::new(source, token)?.answer_since(gid, since, &source.answerers).await,
            "gitlab_issues" => {
                let tracker = GitLabIssuesTracker::new(self.gitlab_client(source)?, source)?;
                tracker.answer_since(gid, since, &source.answerers).await
            }
            _ => Ok(None),
        }
    }

    /// The tracker a source writes to.
    pub fn tracker(&self, source: &SourceConfig) -> Result<Tracker, TrackerError> {
        match source.kind.as_str() {
            "asana" => Ok(Tracker::Asana(AsanaTracker::new(source, (self.env)(&source.token_env))?)),
            "linear" => Ok(Tracker::Linear(LinearTracker::new(source, (self.env)(&source.token_env))?)),
            "jira" => Ok(Tracker::Jira(JiraTracker::new(source, (self.env)(&source.token_env))?)),
            "github_issues" => match &self.github {
                Some(client) => Ok(Tracker::GitHubIssues(GitHubIssuesTracker::new(client.clone(), source)?)),
                None => Err(TrackerError::Passing("no GitHub client: the [github] settings failed".into())),
            },
            "gitlab_issues" => {
                Ok(Tracker::GitLabIssues(GitLabIssuesTracker::new(self.gitlab_client(source)?, source)?))
            }
            other => Err(TrackerError::Refused {
                why: format!("a {other} source has no tracker to write to"),
                fix: format!("set writeback = [] on source {:?}", source.name),
            }),
        }
    }

    /// A `[gitlab]` client for `source`'s messages: its token read through the outbox's environment,
    /// each request given the source's `writeback_timeout`.
    fn gitlab_client(&self, source: &SourceConfig) -> Result<Arc<GitLabClient>, TrackerError> {
        let config =
            crate::config::GitLab { request_timeout: source.writeback_timeout, ..self.config.gitlab.clone() };
        let client = GitLabClient::from_lookup(&config, self.env.as_ref()).map_err(|e| {
            TrackerError::Refused { why: e.to_string(), fix: "correct [gitlab] in the config".into() }
        })?;
        client.share_blocks(self.store.shared_blocks(crate::shared_blocks::gitlab_scope(&config.url)));
        Ok(Arc::new(client))
    }
}

/// Whether `source`'s tracker would take executor's messages, found out without writing. `token`: the
/// value of an Asana, Linear or Jira source's `token_env`; `github`: the client a GitHub Issues source writes through.
pub async fn probe(
    source: &SourceConfig,
    token: Option<String>,
    github: Option<Arc<GitHubClient>>,
) -> Result<String, TrackerError> {
    match (source.kind.as_str(), github) {
        ("asana", _) => AsanaTracker::new(source, token)?.probe(&source.projects).await,
        ("linear", _) => LinearTracker::new(source, token)?.probe().await,
        ("jira", _) => JiraTracker::new(source, token)?.probe().await,
        ("github_issues", Some(client)) => GitHubIssuesTracker::new(client, source)?.probe().await,
        ("github_issues", None) => {
            Err(TrackerError::Passing("no GitHub client: see the [github] check".into()))
        }
        // Its client is `[gitlab]`'s: `doctor` asks through `GitLabIssuesTracker::probe`.
        ("gitlab_issues", _) => Err(TrackerError::Passing("asked by the source's own check".into())),
        (other, _) => Err(TrackerError::Refused {
            why: format!("a {other} source has no tracker to write to"),
            fix: format!("set writeback = [] on source {:?}", source.name),
        }),
    }
}
