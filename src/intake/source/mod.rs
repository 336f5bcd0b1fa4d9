//! Task sources: where tasks come from before the filters and the store see them. Each source
//! delivers [`SourceTask`]s in one shape, plus the items it could not read (`refused`, with where and
//! why) so one bad task never stops the rest.
//!
//! - [`asana`]: the tasks of Asana projects, sections or a user task list, over its REST API.
//! - [`github_issues`]: the issues of one GitHub repository, through the GitHub forge's client.
//! - [`gitlab_issues`]: the issues of one GitLab project, through `crate::gitlab`'s client.
//! - [`linear`]: the issues of Linear teams and projects, over its GraphQL API (`crate::linear`).
//! - [`jira`]: the issues a JQL query selects, over Jira's REST API (`crate::jira`).
//! - [`file`]: a JSON Lines or CSV file, for anything else and for tests.
//!
//! Asana and files hand each page on as soon as it is read ([`Page`], over a bounded channel), so the
//! intake stores it before the next arrives; [`collect`] gathers the pages for a caller that wants
//! the whole fetch. Each source has its own error type for a fetch that fails as a whole;
//! [`SourceError`] holds any of them, for a caller that runs them all. Asana and files both accept
//! Asana's task shape and a flat one (see [`task_from_json`]), so an Asana export can be fed back
//! through a file.

pub mod asana;
pub mod file;
pub mod github_issues;
pub mod gitlab_issues;
pub mod jira;
pub mod linear;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;

/// Why a source's fetch failed as a whole (one bad task is refused instead, see [`Fetched::refused`]).
/// None of these carries a token.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Asana(#[from] asana::AsanaError),
    #[error(transparent)]
    File(#[from] file::FileError),
    /// A Linear request failed; its message says what to do.
    #[error("reading issues from Linear: {0}")]
    Linear(#[from] crate::linear::LinearError),
    /// A Jira request failed; its message says what to do.
    #[error("reading issues from Jira: {0}")]
    Jira(#[from] crate::jira::JiraError),
    /// A GitHub call failed; its message says what to do (a 401 names where the token came from and
    /// `gh auth login`).
    #[error("reading the issues of {repo} on GitHub: {error}")]
    GitHub { repo: String, error: crate::github::GitHubError },
    #[error("GitHub's issue listing of {repo} is not what the API documents: {reason}")]
    GitHubMalformed { repo: String, reason: String },
    #[error("the GitHub Issues source's repo {repo:?} cannot be read: {why}")]
    BadRepo { repo: String, why: String },
    #[error("the GitHub Issues source's label {label:?} cannot be asked for: {why}")]
    BadLabel { label: String, why: String },
    #[error(transparent)]
    GitLabIssues(#[from] gitlab_issues::GitLabIssuesError),
}

/// One task as a source delivers it, before filters and storage.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceTask {
    /// The source's id (Asana `gid`, the file's `gid`/`task_gid` column, or
    /// [`github_issues::issue_gid`]).
    pub gid: String,
    /// The title (Asana `name`, GitHub `title`).
    pub name: String,
    /// The body as plain text (Asana `notes`, `html_notes` not used; GitHub `body`, Markdown), whole.
    pub notes: String,
    pub completed: Option<bool>,
    /// The assignee's name, or email if it has no name (GitHub: the first assignee's login).
    pub assignee: Option<String>,
    /// Asana `memberships[0].section.name`; GitHub issues have none.
    pub section: Option<String>,
    /// Asana `permalink_url`, GitHub `html_url`.
    pub url: Option<String>,
    /// Asana `modified_at`, GitHub `updated_at`.
    pub modified_at: Option<DateTime<Utc>>,
    /// The source's whole object, for the filters' `raw.*` paths.
    pub raw: Value,
}

/// One page of a fetch, sent to the intake as soon as it is read so that it is stored before the next
/// ones arrive (a whole fetch of 100,000 tasks held at once took 0.8 GB).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    pub tasks: Vec<SourceTask>,
    /// Items of this page that could not be read: (where, why).
    pub refused: Vec<(String, String)>,
}

/// Where a source sends its pages: a small bounded channel, so a source reading faster than the
/// database writes waits (backpressure) instead of piling pages up in memory. A closed channel means
/// the intake stopped storing (a write failed): the source stops fetching.
pub type PageSender = tokio::sync::mpsc::Sender<Page>;

/// Pages in flight between a source and the store: few, to bound memory.
pub const PAGES_IN_FLIGHT: usize = 2;

/// Tasks per page of a file (a file has no pages of its own); the store's chunk size.
pub const FILE_PAGE: usize = 1000;

/// Runs `fetch` with a channel and collects every page it sends into one [`Fetched`] with its
/// cursor: for callers (and tests) that want the whole fetch at once.
pub async fn collect<E, F>(fetch: impl FnOnce(PageSender) -> F) -> Result<Fetched, E>
where
    F: std::future::Future<Output = Result<Option<DateTime<Utc>>, E>>,
{
    let (sender, mut pages) = tokio::sync::mpsc::channel::<Page>(PAGES_IN_FLIGHT);
    let mut fetched = Fetched::default();
    let gather = async {
        while let Some(page) = pages.recv().await {
            fetched.tasks.extend(page.tasks);
            fetched.refused.extend(page.refused);
        }
    };
    // `fetch` owns the sender, so the channel closes (and `gather` ends) when it returns.
    let (cursor, ()) = tokio::join!(fetch(sender), gather);
    fetched.cursor = cursor?;
    Ok(fetched)
}

/// What one fetch delivered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fetched {
    pub tasks: Vec<SourceTask>,
    /// Items that could not be read: (where, why). The rest were still delivered.
    pub refused: Vec<(String, String)>,
    /// The `modified_since` for the next fetch: the latest `modified_at` seen, or the one this fetch
    /// was given when it saw none.
    pub cursor: Option<DateTime<Utc>>,
}

impl Fetched {
    /// Moves the cursor forward to `modified_at` if that is later.
    fn advance_cursor(&mut self, modified_at: Option<DateTime<Utc>>) {
        advance(&mut self.cursor, modified_at);
    }
}

/// Adds `task` under `key` (its issue), or replaces the earlier delivery of the same issue when this
/// one is newer: a listing re-read from a later `since` lists some issues twice.
fn deliver_newest<K: std::hash::Hash + Eq>(
    fetched: &mut Fetched,
    delivered: &mut std::collections::HashMap<K, usize>,
    key: K,
    task: SourceTask,
) {
    fetched.advance_cursor(task.modified_at);
    match delivered.get(&key) {
        Some(&index) => {
            if task.modified_at > fetched.tasks[index].modified_at {
                fetched.tasks[index] = task;
            }
        }
        None => {
            delivered.insert(key, fetched.tasks.len());
            fetched.tasks.push(task);
        }
    }
}

/// Where a listing sorted by update time goes on after a full page whose last change was at `last`
/// (GitHub's and GitLab's issues, see `github_issues`): from page 1 again since that change less a
/// second of margin, or, when that does not move `since` forward (a bulk edit of more than a page
/// within the second), to the next page of the same listing.
fn after_full_page(
    last: Option<DateTime<Utc>>,
    since: Option<DateTime<Utc>>,
    page: usize,
) -> (Option<DateTime<Utc>>, usize) {
    match last.map(|at| at - chrono::TimeDelta::seconds(1)) {
        Some(next) if since.is_none_or(|since| next > since) => (Some(next), 1),
        _ => (since, page + 1),
    }
}

/// Moves `cursor` forward to `modified_at` if that is later.
fn advance(cursor: &mut Option<DateTime<Utc>>, modified_at: Option<DateTime<Utc>>) {
    if let Some(at) = modified_at
        && cursor.is_none_or(|cursor| at > cursor)
    {
        *cursor = Some(at);
    }
}

/// Reads an environment variable: `std::env::var` outside tests (tests cannot set variables safely
/// while other tests run).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment.
pub fn process_env() -> EnvLookup {
    Arc::new(|name| std::env::var(name).ok())
}

/// A task from a JSON object in Asana's shape (`assignee.name`, `memberships[0].section.name`,
/// `permalink_url`) or a flat one (`assignee`, `section`, `url` as strings; `task_gid` for `gid`).
/// The id may be a string or an integer; `name` and `notes` may be absent or null (empty). Refused,
/// with the reason: not an object, no usable id, a field of the wrong type, a `modified_at` that is
/// not RFC 3339.
pub fn task_from_json(mut raw: Value) -> Result<SourceTask, String> {
    let Some(object) = raw.as_object_mut() else {
        return Err(format!("not a JSON object but {}", kind(&raw)));
    };
    let gid = match object.get("gid").or_else(|| object.get("task_gid")) {
        Some(Value::String(gid)) if !gid.trim().is_empty() => gid.trim().to_string(),
        Some(Value::Number(gid)) => gid.to_string(),
        Some(other) => return Err(format!("its gid is {}, not a non-empty string", kind(other))),
        None => return Err("it has no gid".into()),
    };
    // Notes are kept whole, however long: the filters must see all of them (a Figma link after a
    // megabyte of pasted logs); only a prompt or a page shows a bounded part (`domain::shown`).
    let name = text_field(&raw, "name")?.unwrap_or_default();
    let notes = text_field(&raw, "notes")?.unwrap_or_default();
    let completed = match raw.get("completed") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(done)) => Some(*done),
        Some(Value::String(text)) => Some(parse_bool(text)?),
        Some(other) => return Err(format!("its completed is {}, not a boolean", kind(other))),
    };
    let assignee = match raw.get("assignee") {
        Some(Value::Object(person)) => [person.get("name"), person.get("email")]
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find(|text| !text.is_empty())
            .map(str::to_string),
        _ => text_field(&raw, "assignee")?,
    };
    let section = match raw.pointer("/memberships/0/section/name") {
        Some(Value::String(name)) => Some(name.clone()),
        _ => text_field(&raw, "section")?,
    };
    let url = match text_field(&raw, "permalink_url")? {
        Some(url) => Some(url),
        None => text_field(&raw, "url")?,
    };
    let modified_at = match text_field(&raw, "modified_at")? {
        Some(at) => Some(parse_time(&at)?),
        None => None,
    };
    Ok(SourceTask { gid, name, notes, completed, assignee, section, url, modified_at, raw })
}

/// A string field; absent, null or empty is `None`.
fn text_field(raw: &Value, field: &str) -> Result<Option<String>, String> {
    match raw.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!("its {field} is {}, not a string", kind(other))),
    }
}

fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => Ok(true),
        "false" | "no" | "0" => Ok(false),
        _ => Err(format!("its completed is {text:?}, not true or false")),
    }
}

fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|at| at.with_timezone(&Utc))
        .map_err(|_| format!("its modified_at {text:?} is not an RFC 3339 timestamp"))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
