//! The GitLab issues task source: the issues of one GitLab project (`group/sub/project`), optionally
//! only those carrying every one of some labels, assigned to someone, or in a milestone, read through
//! `crate::gitlab`'s client (`[gitlab]`: its instance, token, rate limits and retries).
//!
//! One `GET /projects/{path}/issues?state=…&labels=…&assignee_username=…&milestone=…
//! &order_by=updated_at&sort=asc&per_page=100&page=N` per page, with `updated_after` for incremental
//! fetches. Paging is GitHub's (see `github_issues`): by `updated_after` first and `page` second,
//! because reading pages 1, 2, 3 of a listing sorted by `updated_at` skips an issue whenever one
//! already read is edited during the fetch (the edited one moves to the end and every later one up a
//! place). So after a full page the next request starts again at page 1 from the last `updated_at`
//! read less a second, and an issue read twice is delivered once, at its newest. GitLab's timestamps
//! have milliseconds and `updated_after` is "on or after"; the second of margin costs a few issues read
//! twice and holds even if an instance rounds. Only a page whose issues all fall within that second
//! moves on with `page`. At most [`MAX_REQUESTS`] pages are read per fetch; the later issues come at
//! the next fetch from the cursor, and the cut is said in [`Fetched::refused`].
//!
//! The gid of an issue is `gl_{project_id}-{iid}` ([`issue_gid`]): the issue's own `project_id` (a
//! number, unique within the one instance `[gitlab] url` names) and its `iid`, the number shown as
//! `#iid`. The project's path cannot be the gid: '/' is not allowed in a [`TaskGid`], and with '.' for
//! it `a.b/c` and `a/b.c` would be one. Write-back reads both numbers back ([`parse_gid`], in
//! `crate::gitlab` so that write-back need not import the intake) to post on
//! `/projects/{project_id}/issues/{iid}/notes`.
//!
//! Descriptions are kept whole (Markdown), like Asana's notes: the filters read all of them. Notes
//! (comments) are never read, so what write-back posts never becomes task text.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use reqwest::Method;
use serde_json::Value;

use super::{Fetched, SourceTask, after_full_page, deliver_newest, kind};
use crate::domain::TaskGid;
use crate::gitlab::{GitLabClient, GitLabError, segment};
pub use crate::gitlab::{issue_gid, parse_issue_gid as parse_gid};

/// Issues per page (GitLab's most).
pub const PER_PAGE: usize = 100;

/// Pages read per fetch at most (10,000 issues).
pub const MAX_REQUESTS: usize = 100;

/// Why a GitLab issues fetch failed as a whole. None carries the token (the client cuts it out).
#[derive(Debug, thiserror::Error)]
pub enum GitLabIssuesError {
    /// A GitLab call failed; its message says what to do (a 401 names the variable and the scope).
    #[error("reading the issues of {project} on GitLab: {error}")]
    GitLab { project: String, error: GitLabError },
    #[error("GitLab's issue listing of {project} is not what the API documents: {reason}")]
    Malformed { project: String, reason: String },
    #[error(
        "the GitLab issues source's project {project:?} is not a project path such as \"group/sub/project\""
    )]
    BadProject { project: String },
    #[error("the GitLab issues source's {key} {value:?} cannot be asked for: {why}")]
    BadFilter { key: &'static str, value: String, why: String },
}

/// Which issues to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IssueState {
    /// Open issues only (GitLab's `opened`).
    #[default]
    Opened,
    /// Open and closed ones (closed ones are delivered as completed).
    All,
}

impl IssueState {
    /// The config's `state`: `opened` (or `open`, the key's default for every issue source) or `all`.
    pub fn parse(text: &str) -> Option<IssueState> {
        match text {
            "opened" | "open" => Some(IssueState::Opened),
            "all" => Some(IssueState::All),
            _ => None,
        }
    }

    /// GitLab's `state` parameter.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueState::Opened => "opened",
            IssueState::All => "all",
        }
    }
}

/// One source of kind GitLab issues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitLabIssuesConfig {
    /// The project's full path, `group/sub/project`.
    pub project: String,
    /// Only issues that carry every one of these labels (none: all issues).
    pub labels: Vec<String>,
    /// Only issues assigned to this username; `me`: to the token's own user.
    pub assignee: Option<String>,
    /// Only issues in the milestone of this title.
    pub milestone: Option<String>,
    pub state: IssueState,
}

/// Fetches the issues a [`GitLabIssuesConfig`] names.
#[derive(Debug)]
pub struct GitLabIssuesSource {
    client: Arc<GitLabClient>,
    cfg: GitLabIssuesConfig,
}

impl GitLabIssuesSource {
    /// A source reading through `client` (one client may serve the forge and every source: GitLab
    /// counts its rate limits per token).
    pub fn new(client: Arc<GitLabClient>, cfg: GitLabIssuesConfig) -> Self {
        GitLabIssuesSource { client, cfg }
    }

    /// Every issue updated since `modified_since` (all of them when `None`), each once, oldest change
    /// first. A bad project or filter in the config, or a failed request (401, 404, rate limit, 5xx),
    /// fails the fetch; an issue that cannot be read is refused and the rest kept.
    pub async fn fetch(&self, modified_since: Option<DateTime<Utc>>) -> Result<Fetched, GitLabIssuesError> {
        let filters = self.filters()?;
        let project = &self.cfg.project;
        let mut fetched = Fetched { cursor: modified_since, ..Fetched::default() };
        // Gid → its index in `fetched.tasks`: an issue listed twice is delivered once.
        let mut delivered: HashMap<String, usize> = HashMap::new();
        let mut since = modified_since;
        let mut page = 1;
        for request in 1..=MAX_REQUESTS {
            let path = listing_path(project, &filters, since, page);
            let answer = self
                .client
                .rest(Method::GET, &path, None)
                .await
                .map_err(|error| GitLabIssuesError::GitLab { project: project.clone(), error })?;
            let Value::Array(items) = answer else {
                return Err(GitLabIssuesError::Malformed {
                    project: project.clone(),
                    reason: format!("the issue listing is {}, not an array", kind(&answer)),
                });
            };
            let count = items.len();
            let mut last = None;
            for (index, item) in items.into_iter().enumerate() {
                last = updated_at(&item).or(last);
                match issue_task(item) {
                    Ok(task) => deliver_newest(&mut fetched, &mut delivered, task.gid.clone(), task),
                    Err(why) => {
                        let place = format!("{project} issues request {request} item {}", index + 1);
                        fetched.refused.push((place, why));
                    }
                }
            }
            if count < PER_PAGE {
                return Ok(fetched);
            }
            (since, page) = after_full_page(last, since, page);
        }
        fetched.refused.push((
            format!("{project} issues"),
            format!(
                "stopped after {MAX_REQUESTS} pages of {PER_PAGE}; the later issues come at the next fetch"
            ),
        ));
        Ok(fetched)
    }

    /// The listing's filter parameters, each value checked and escaped.
    fn filters(&self) -> Result<String, GitLabIssuesError> {
        let cfg = &self.cfg;
        if !crate::config::valid_project_path(&cfg.project) {
            return Err(GitLabIssuesError::BadProject { project: cfg.project.clone() });
        }
        let bad = |key, value: &str, why: &str| GitLabIssuesError::BadFilter {
            key,
            value: value.to_string(),
            why: why.to_string(),
        };
        let mut query = format!("state={}", cfg.state.as_str());
        if !cfg.labels.is_empty() {
            for label in &cfg.labels {
                if label.trim().is_empty() {
                    return Err(bad("label", label, "it is empty"));
                }
                if label.contains(',') {
                    return Err(bad(
                        "label",
                        label,
                        "it holds a ',', and GitLab's label filter splits on commas",
                    ));
                }
                if ["none", "any"].contains(&label.to_ascii_lowercase().as_str()) {
                    return Err(bad("label", label, "GitLab reads it as \"no label\" or \"any label\""));
                }
            }
            query.push_str("&labels=");
            query.push_str(&segment(&cfg.labels.join(",")));
        }
        match cfg.assignee.as_deref() {
            None => {}
            Some("me") => query.push_str("&scope=assigned_to_me"),
            Some(user) if user.trim().is_empty() => return Err(bad("assignee", user, "it is empty")),
            Some(user) => {
                query.push_str("&assignee_username=");
                query.push_str(&segment(user));
            }
        }
        if let Some(milestone) = &cfg.milestone {
            if milestone.trim().is_empty() {
                return Err(bad("milestone", milestone, "it is empty"));
            }
            query.push_str("&milestone=");
            query.push_str(&segment(milestone));
        }
        Ok(query)
    }
}

/// The listing's path and query: `filters`, then the order, the page and `updated_after`.
fn listing_path(project: &str, filters: &str, since: Option<DateTime<Utc>>, page: usize) -> String {
    let mut path = format!(
        "/projects/{}/issues?{filters}&order_by=updated_at&sort=asc&per_page={PER_PAGE}&page={page}",
        segment(project)
    );
    if let Some(since) = since {
        path.push_str("&updated_after=");
        path.push_str(&segment(&since.to_rfc3339_opts(SecondsFormat::Millis, true)));
    }
    path
}

/// An item's `updated_at`, when readable.
fn updated_at(item: &Value) -> Option<DateTime<Utc>> {
    let text = item.get("updated_at")?.as_str()?;
    DateTime::parse_from_rfc3339(text).ok().map(|at| at.with_timezone(&Utc))
}

/// A positive integer field.
fn number(raw: &Value, field: &str) -> Result<u64, String> {
    match raw.get(field) {
        Some(Value::Number(n)) => {
            n.as_u64().ok_or_else(|| format!("its {field} {n} is not a positive integer"))
        }
        Some(other) => Err(format!("its {field} is {}, not an integer", kind(other))),
        None => Err(format!("it has no {field}")),
    }
}

/// An issue as a task; refused, with the reason: not an object, no `iid` or `project_id`, a field of
/// the wrong type, an `updated_at` that is not RFC 3339.
fn issue_task(raw: Value) -> Result<SourceTask, String> {
    if !raw.is_object() {
        return Err(format!("not a JSON object but {}", kind(&raw)));
    }
    let iid = number(&raw, "iid")?;
    let project_id = number(&raw, "project_id").map_err(|why| format!("issue #{iid}: {why}"))?;
    let text = |field: &str| match raw.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!("issue #{iid}: its {field} is {}, not a string", kind(other))),
    };
    let name = text("title")?.unwrap_or_default();
    let notes = text("description")?.unwrap_or_default();
    let completed = text("state")?.map(|state| state == "closed");
    let url = text("web_url")?;
    let modified_at = match text("updated_at")? {
        Some(at) => Some(
            DateTime::parse_from_rfc3339(&at)
                .map(|at| at.with_timezone(&Utc))
                .map_err(|_| format!("issue #{iid}: its updated_at {at:?} is not an RFC 3339 timestamp"))?,
        ),
        None => None,
    };
    // `assignees` (every tier) before `assignee` (deprecated, the first of them).
    let first = match raw.get("assignees") {
        Some(Value::Array(people)) => people.first(),
        None | Some(Value::Null) => raw.get("assignee").filter(|a| !a.is_null()),
        Some(other) => return Err(format!("issue #{iid}: its assignees are {}, not an array", kind(other))),
    };
    let assignee = match first {
        None => None,
        Some(person) => match person.get("username") {
            Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
            _ => return Err(format!("issue #{iid}: its assignee has no username")),
        },
    };
    let gid = issue_gid(project_id, iid);
    // Two u64s and a prefix always fit; checked rather than trusted.
    TaskGid::parse(&gid).map_err(|e| format!("issue #{iid}: {e}"))?;
    Ok(SourceTask { gid, name, notes, completed, assignee, section: None, url, modified_at, raw })
}

#[cfg(test)]
#[path = "gitlab_issues_tests.rs"]
mod tests;
