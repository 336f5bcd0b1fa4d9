//! The Asana task source: the tasks of projects, sections and a user task list, read with a personal
//! access token from an environment variable the config names.
//!
//! One GET per page with the `opt_fields` the filters and the analyzer read, `limit`, Asana's offset
//! pagination (`next_page.offset`) and `modified_since` for incremental fetches. Projects and
//! sections are read with `GET /tasks?project=` / `?section=` rather than
//! `/projects/{gid}/tasks` / `/sections/{gid}/tasks`: Asana documents `modified_since` on `/tasks`
//! only. A user task list is read with `/user_task_lists/{gid}/tasks`, which has no
//! `modified_since` (the parameter is sent anyway, and older tasks are dropped here). A task listed by two
//! containers is delivered once. A 429 waits its `Retry-After` (at most [`MAX_RETRY_WAIT`]) and is
//! retried up to [`MAX_RETRIES`] times. A task that cannot be read goes to [`Fetched::refused`]; an
//! HTTP failure fails the whole fetch with an error that names the URL path, never the token. Each
//! page goes to the intake as soon as it is read ([`AsanaSource::fetch_pages`]); only the gids seen
//! are kept for the whole fetch.
//!
//! Notes are plain text (`notes`, not `html_notes`), kept whole; a page whose bytes are not valid
//! UTF-8 is read with the bad bytes replaced (U+FFFD) rather than refused whole.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue, RETRY_AFTER};
use serde_json::Value;

use super::{EnvLookup, Fetched, Page, PageSender, advance, task_from_json};

/// The fields asked of every task.
pub const OPT_FIELDS: &str = "name,notes,completed,assignee.name,assignee.email,\
memberships.section.name,custom_fields.name,custom_fields.display_value,permalink_url,modified_at";

/// Retries after a 429 before giving up.
pub const MAX_RETRIES: u32 = 3;

/// The longest `Retry-After` honoured; a longer one is cut to this.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// A guard against a server that keeps returning a next page: no container has this many.
const MAX_PAGES: usize = 100_000;

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// One `[[sources]]` entry of kind Asana.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsanaConfig {
    /// The source's name (stored in each task's `source`).
    pub name: String,
    /// The API base, `https://app.asana.com/api/1.0` unless a test points it at a fake.
    pub api_url: String,
    /// The environment variable that holds the personal access token, e.g. `ASANA_TOKEN`.
    pub token_env: String,
    /// Project gids whose tasks to fetch.
    pub projects: Vec<String>,
    /// Section gids whose tasks to fetch.
    pub sections: Vec<String>,
    /// A user task list gid ("My Tasks") whose tasks to fetch.
    pub user_task_list: Option<String>,
    /// Tasks per page, 1 to 100 (Asana's bounds; values outside are clamped).
    pub page_size: u32,
}

impl AsanaConfig {
    pub const DEFAULT_API_URL: &'static str = "https://app.asana.com/api/1.0";
    pub const DEFAULT_PAGE_SIZE: u32 = 100;

    /// A source named `name` with the defaults and nothing to fetch yet.
    pub fn new(name: impl Into<String>, token_env: impl Into<String>) -> AsanaConfig {
        AsanaConfig {
            name: name.into(),
            api_url: Self::DEFAULT_API_URL.into(),
            token_env: token_env.into(),
            projects: Vec::new(),
            sections: Vec::new(),
            user_task_list: None,
            page_size: Self::DEFAULT_PAGE_SIZE,
        }
    }

    /// The lists to read, in order: projects, sections, the user task list. Projects and sections
    /// are read through `GET /tasks?project=` / `?section=`, the one task list Asana documents
    /// `modified_since` on; a user task list has only `GET /user_task_lists/{gid}/tasks`, so its
    /// tasks are filtered by `modified_at` here.
    fn lists(&self) -> Vec<TaskList> {
        let projects = self.projects.iter().map(|gid| TaskList::filtered("project", gid));
        let sections = self.sections.iter().map(|gid| TaskList::filtered("section", gid));
        let user = self.user_task_list.iter().map(|gid| TaskList {
            path: format!("/user_task_lists/{gid}/tasks"),
            filter: None,
            name: format!("user task list {gid}"),
        });
        projects.chain(sections).chain(user).collect()
    }
}

/// One list of tasks: the path to GET, and the `project`/`section` parameter it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TaskList {
    path: String,
    filter: Option<(&'static str, String)>,
    /// For refusals: `project 123`.
    name: String,
}

impl TaskList {
    fn filtered(parameter: &'static str, gid: &str) -> TaskList {
        TaskList {
            path: "/tasks".into(),
            filter: Some((parameter, gid.to_string())),
            name: format!("{parameter} {gid}"),
        }
    }
}

/// One list being read, with what every request of it carries.
#[derive(Clone, Copy)]
struct List<'a> {
    list: &'a TaskList,
    token: &'a HeaderValue,
    modified_since: Option<DateTime<Utc>>,
}

/// Why a fetch failed. None of these carries the token.
#[derive(Debug, thiserror::Error)]
pub enum AsanaError {
    #[error(
        "the Asana token variable {variable} is not set: create a personal access token in Asana \
         (Settings → Apps → Developer apps → Create new token, or https://app.asana.com/0/my-apps) \
         and export it as {variable}"
    )]
    MissingToken { variable: String },
    #[error(
        "Asana refused the token in {variable} (401 Not Authorized on {path}): it is wrong, expired \
         or revoked; create a new personal access token in Asana (Settings → Apps → Developer apps → \
         Create new token, or https://app.asana.com/0/my-apps) and export it as {variable}"
    )]
    Unauthorized { variable: String, path: String },
    #[error("Asana answered {status} on {path}: {message}")]
    Status { status: u16, path: String, message: String },
    #[error("Asana kept answering 429 Too Many Requests on {path} after {retries} retries")]
    RateLimited { path: String, retries: u32 },
    #[error("could not reach Asana for {path}: {reason}")]
    Transport { path: String, reason: String },
    #[error("Asana's answer on {path} is not the expected JSON: {reason}")]
    Malformed { path: String, reason: String },
    #[error("the Asana API URL {url:?} is not a valid URL")]
    BadApiUrl { url: String },
    #[error("the Asana gid {gid:?} in source {source_name} is not a gid (digits only)")]
    BadGid { source_name: String, gid: String },
    #[error("the Asana token in {variable} has characters an HTTP header cannot carry")]
    BadToken { variable: String },
}

/// Fetches the tasks an [`AsanaConfig`] names.
pub struct AsanaSource {
    config: AsanaConfig,
    env: EnvLookup,
    http: reqwest::Client,
}

impl fmt::Debug for AsanaSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsanaSource").field("config", &self.config).finish_non_exhaustive()
    }
}

impl AsanaSource {
    /// A source reading its token through `env` (`super::process_env()` outside tests). The token is
    /// looked up at each fetch, so a rotated token is picked up without a restart.
    pub fn new(config: AsanaConfig, env: EnvLookup) -> Result<AsanaSource, AsanaError> {
        if reqwest::Url::parse(&config.api_url).is_err() {
            return Err(AsanaError::BadApiUrl { url: config.api_url });
        }
        // Gids go into URL paths: digits only, as Asana issues them.
        let gids = config.projects.iter().chain(&config.sections).chain(&config.user_task_list);
        if let Some(gid) =
            gids.into_iter().find(|gid| gid.is_empty() || !gid.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(AsanaError::BadGid { source_name: config.name.clone(), gid: gid.clone() });
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("executor/", env!("CARGO_PKG_VERSION")))
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| AsanaError::Transport { path: String::new(), reason: e.to_string() })?;
        Ok(AsanaSource { config, env, http })
    }

    pub fn config(&self) -> &AsanaConfig {
        &self.config
    }

    /// Every task of the configured containers modified since `modified_since` (all of them when
    /// `None`), each once.
    pub async fn fetch(&self, modified_since: Option<DateTime<Utc>>) -> Result<Fetched, AsanaError> {
        super::collect(|pages| self.fetch_pages(modified_since, pages)).await
    }

    /// As [`fetch`](Self::fetch), sending each page to `pages` as soon as it is read; the cursor for
    /// the next fetch (the latest `modified_at` seen, or `modified_since`) once every page was sent.
    /// Stops early, without error, when the receiver is gone (the intake stopped storing).
    pub async fn fetch_pages(
        &self,
        modified_since: Option<DateTime<Utc>>,
        pages: PageSender,
    ) -> Result<Option<DateTime<Utc>>, AsanaError> {
        let variable = &self.config.token_env;
        let token = (self.env)(variable)
            .map(|token| token.trim().to_string())
            .filter(|token| !token.is_empty())
            .ok_or_else(|| AsanaError::MissingToken { variable: variable.clone() })?;
        // Marked sensitive, so neither reqwest nor a Debug print shows it.
        let mut token = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| AsanaError::BadToken { variable: variable.clone() })?;
        token.set_sensitive(true);
        let mut cursor = modified_since;
        // Gids only (a few MB at 100,000 tasks), so a task listed by two containers comes once.
        let mut seen = HashSet::new();
        for list in self.config.lists() {
            let read = List { list: &list, token: &token, modified_since };
            if !self.fetch_list(read, &mut seen, &mut cursor, &pages).await? {
                break;
            }
        }
        Ok(cursor)
    }

    /// Sends the pages of one list; false when the receiver is gone.
    async fn fetch_list(
        &self,
        read: List<'_>,
        seen: &mut HashSet<String>,
        cursor: &mut Option<DateTime<Utc>>,
        pages: &PageSender,
    ) -> Result<bool, AsanaError> {
        let List { list, token, modified_since } = read;
        let limit = self.config.page_size.clamp(1, 100).to_string();
        let since = modified_since.map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true));
        // Errors name the list as a path: `/tasks?project=123`.
        let shown = match &list.filter {
            Some((parameter, gid)) => format!("{}?{parameter}={gid}", list.path),
            None => list.path.clone(),
        };
        let path = shown.as_str();
        let mut offset: Option<String> = None;
        for page in 1..=MAX_PAGES {
            let mut query = vec![("opt_fields", OPT_FIELDS), ("limit", limit.as_str())];
            if let Some((parameter, gid)) = &list.filter {
                query.push((parameter, gid));
            }
            if let Some(since) = &since {
                query.push(("modified_since", since));
            }
            if let Some(offset) = &offset {
                query.push(("offset", offset));
            }
            let mut body = self.get(&list.path, path, &query, token).await?;
            let Some(Value::Array(items)) = body.get_mut("data").map(Value::take) else {
                return Err(malformed(path, "it has no `data` array"));
            };
            let mut read = Page::default();
            for (index, item) in items.into_iter().enumerate() {
                let place = format!("{} {} page {page} item {}", self.config.name, list.name, index + 1);
                match task_from_json(item) {
                    Ok(task) => {
                        // Asana may send an older task (a user task list ignores modified_since).
                        let old = matches!((modified_since, task.modified_at), (Some(since), Some(at)) if at < since);
                        if !old && seen.insert(task.gid.clone()) {
                            advance(cursor, task.modified_at);
                            read.tasks.push(task);
                        }
                    }
                    Err(why) => read.refused.push((place, why)),
                }
            }
            if pages.send(read).await.is_err() {
                return Ok(false);
            }
            let next = body.pointer("/next_page/offset").and_then(Value::as_str).map(str::to_string);
            match next {
                Some(next) if offset.as_deref() != Some(next.as_str()) => offset = Some(next),
                Some(_) => return Err(malformed(path, "next_page repeats the offset just read")),
                None => return Ok(true),
            }
        }
        Err(malformed(path, &format!("more than {MAX_PAGES} pages")))
    }

    /// One GET of `url_path`, retried after 429s; the body as JSON. Errors name `path`.
    async fn get(
        &self,
        url_path: &str,
        path: &str,
        query: &[(&str, &str)],
        token: &HeaderValue,
    ) -> Result<Value, AsanaError> {
        let url = format!("{}{url_path}", self.config.api_url.trim_end_matches('/'));
        let mut retries = 0;
        loop {
            tracing::debug!(source = %self.config.name, path, "GET Asana tasks");
            let response = self
                .http
                .get(&url)
                .query(query)
                .header(AUTHORIZATION, token.clone())
                .header(ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| transport(path, e))?;
            let status = response.status();
            if status == StatusCode::TOO_MANY_REQUESTS {
                if retries == MAX_RETRIES {
                    return Err(AsanaError::RateLimited { path: path.into(), retries });
                }
                retries += 1;
                let wait = retry_after(response.headers().get(RETRY_AFTER));
                tracing::info!(source = %self.config.name, path, ?wait, "Asana rate limit; waiting");
                tokio::time::sleep(wait).await;
                continue;
            }
            let bytes = response.bytes().await.map_err(|e| transport(path, e))?;
            // Invalid UTF-8 in one task's text must not lose the page: replace the bad bytes.
            let text = String::from_utf8_lossy(&bytes);
            if status == StatusCode::UNAUTHORIZED {
                return Err(AsanaError::Unauthorized {
                    variable: self.config.token_env.clone(),
                    path: path.into(),
                });
            }
            if !status.is_success() {
                let message = asana_message(&text)
                    .unwrap_or_else(|| status.canonical_reason().unwrap_or("no message").to_string());
                return Err(AsanaError::Status {
                    status: status.as_u16(),
                    path: path.into(),
                    message: redact(&message, token),
                });
            }
            return serde_json::from_str(&text).map_err(|e| malformed(path, &e.to_string()));
        }
    }
}

/// `Retry-After` in seconds, at most [`MAX_RETRY_WAIT`]; one second when absent or unreadable.
fn retry_after(header: Option<&reqwest::header::HeaderValue>) -> Duration {
    let seconds = header
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|seconds| !seconds.is_nan() && *seconds >= 0.0)
        .unwrap_or(1.0);
    // `try_`: a value past what a Duration holds (`1e30`, `inf`) is the longest wait, not a panic.
    Duration::try_from_secs_f64(seconds).unwrap_or(MAX_RETRY_WAIT).min(MAX_RETRY_WAIT)
}

/// Asana's error text: `{"errors": [{"message": "…"}]}`, the messages joined.
fn asana_message(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let messages: Vec<&str> = value
        .get("errors")?
        .as_array()?
        .iter()
        .filter_map(|error| error.get("message").and_then(Value::as_str))
        .collect();
    (!messages.is_empty()).then(|| messages.join("; "))
}

/// `message` without the token, should a server ever echo it.
fn redact(message: &str, token: &HeaderValue) -> String {
    match token.to_str().ok().and_then(|header| header.strip_prefix("Bearer ")) {
        Some(secret) if !secret.is_empty() => message.replace(secret, "<redacted>"),
        _ => message.to_string(),
    }
}

fn transport(path: &str, error: reqwest::Error) -> AsanaError {
    let kind = if error.is_timeout() { "timed out" } else { "failed" };
    // Without the URL: the path is already named, and the error stays short.
    AsanaError::Transport { path: path.into(), reason: format!("{kind}: {}", error.without_url()) }
}

fn malformed(path: &str, reason: &str) -> AsanaError {
    AsanaError::Malformed { path: path.into(), reason: reason.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_is_bounded_and_defaults_to_a_second() {
        assert_eq!(retry_after(Some(&HeaderValue::from_static("2"))), Duration::from_secs(2));
        assert_eq!(retry_after(Some(&HeaderValue::from_static("3600"))), MAX_RETRY_WAIT);
        assert_eq!(retry_after(Some(&HeaderValue::from_static("soon"))), Duration::from_secs(1));
        // Past what a Duration holds: the longest wait, not a panic.
        assert_eq!(retry_after(Some(&HeaderValue::from_static("1e30"))), MAX_RETRY_WAIT);
        assert_eq!(retry_after(Some(&HeaderValue::from_static("inf"))), MAX_RETRY_WAIT);
        assert_eq!(retry_after(Some(&HeaderValue::from_static("NaN"))), Duration::from_secs(1));
        assert_eq!(retry_after(None), Duration::from_secs(1));
    }

    #[test]
    fn lists_cover_projects_sections_and_the_user_task_list() {
        let mut config = AsanaConfig::new("backlog", "ASANA_TOKEN");
        config.projects = vec!["1".into()];
        config.sections = vec!["2".into(), "3".into()];
        config.user_task_list = Some("4".into());
        let lists: Vec<(String, Option<(&str, String)>)> =
            config.lists().into_iter().map(|list| (list.path, list.filter)).collect();
        assert_eq!(
            lists,
            [
                ("/tasks".into(), Some(("project", "1".into()))),
                ("/tasks".into(), Some(("section", "2".into()))),
                ("/tasks".into(), Some(("section", "3".into()))),
                ("/user_task_lists/4/tasks".into(), None),
            ]
        );
    }

    #[test]
    fn gids_must_be_digits() {
        let mut config = AsanaConfig::new("backlog", "ASANA_TOKEN");
        config.sections = vec!["12/../../workspaces".into()];
        let error = AsanaSource::new(config, crate::intake::source::process_env()).unwrap_err();
        assert!(matches!(error, AsanaError::BadGid { .. }), "{error:?}");
    }

    #[test]
    fn an_echoed_token_is_redacted() {
        let token = HeaderValue::from_static("Bearer s3cret");
        assert_eq!(redact("bad token s3cret", &token), "bad token <redacted>");
    }

    #[test]
    fn asana_messages_are_joined() {
        let body = r#"{"errors":[{"message":"Not Authorized"},{"message":"again"}]}"#;
        assert_eq!(asana_message(body).as_deref(), Some("Not Authorized; again"));
        assert_eq!(asana_message("<html>"), None);
    }
}
