//! The Jira task source: the issues a JQL query selects, read over Jira's REST API (`crate::jira`)
//! with Jira Cloud's email and API token, or a Data Center personal access token.
//!
//! Jira Cloud: `POST /rest/api/3/search/jql` (the enhanced search that replaced `/rest/api/3/search`),
//! paged by the `nextPageToken` each answer gives until `isLast` or none. Data Center: `POST
//! /rest/api/2/search`, paged by `startAt` up to `total`. Both ask only for [`FIELDS`], ordered by
//! `updated` (an `ORDER BY` of the configured JQL is replaced: the order is executor's to choose).
//!
//! Incremental by `updated`: the query gains `AND updated >= "-Nm"`, N the minutes since the cursor
//! plus [`OVERLAP_MINUTES`]. A relative date, because an absolute one in JQL is read in the token
//! user's time zone, which executor does not know; the overlap covers the two clocks' drift and
//! JQL's minute precision, and an issue seen again is stored unchanged (the upsert is idempotent).
//! A 429 or a 5xx waits for `Retry-After` (or a back-off) and is retried up to [`MAX_RETRIES`] times,
//! as is a dropped connection. An issue that cannot be read goes to the refused list.
//!
//! Each issue becomes a task with gid `jira_{id}` (the numeric id, which a move to another project
//! keeps, unlike the `APP-12` key); its summary, its description as plain text ([`crate::jira::adf`]),
//! its status as the section (done when the status's category is `done`), the assignee's display
//! name, the browse URL, and the whole issue as `raw` — with `labels`, `priority` and `components` as
//! plain names beside Jira's `fields`, for the filters. Comments are never read, so what write-back
//! posts never becomes task text.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use super::{EnvLookup, Fetched, Page, PageSender, SourceTask, advance};
use crate::jira::{JiraClient, JiraError, JiraSite, adf, issue_gid};

/// Retries after a 429, a 5xx or a dropped connection before giving up.
pub const MAX_RETRIES: u32 = 3;

/// Issues per page (Jira Cloud returns at most 100 with these fields).
pub const PAGE_SIZE: u32 = 100;

/// Minutes added to every incremental query's window.
pub const OVERLAP_MINUTES: i64 = 5;

/// The fields asked of every issue.
pub const FIELDS: &[&str] = &[
    "summary",
    "description",
    "labels",
    "priority",
    "assignee",
    "components",
    "status",
    "issuetype",
    "project",
    "reporter",
    "created",
    "updated",
];

/// A guard against a server that keeps returning a next page.
const MAX_PAGES: usize = 100_000;

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// One `[[sources]]` entry of kind Jira.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JiraConfig {
    /// The source's name (stored in each task's `source`).
    pub name: String,
    pub site: JiraSite,
    /// The query selecting the issues, e.g. `project = APP AND status = "To Do"`.
    pub jql: String,
}

/// Fetches the issues a [`JiraConfig`] selects.
pub struct JiraSource {
    config: JiraConfig,
    env: EnvLookup,
}

impl fmt::Debug for JiraSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JiraSource").field("config", &self.config).finish_non_exhaustive()
    }
}

impl JiraSource {
    /// A source reading its token through `env` at each fetch (a rotated token needs no restart).
    pub fn new(config: JiraConfig, env: EnvLookup) -> Result<JiraSource, JiraError> {
        // Made once here so that a bad base URL is told before any fetch.
        JiraClient::new(config.site.clone(), None, REQUEST_TIMEOUT)?;
        Ok(JiraSource { config, env })
    }

    /// Every issue the query selects updated since `since` (all of them when `None`), each once.
    pub async fn fetch(&self, since: Option<DateTime<Utc>>) -> Result<Fetched, JiraError> {
        super::collect(|pages| self.fetch_pages(since, pages)).await
    }

    /// As [`fetch`](Self::fetch), sending each page as soon as it is read; the cursor for the next
    /// fetch (the latest `updated` seen, or `since`) once every page was sent. Stops early, without
    /// error, when the receiver is gone.
    pub async fn fetch_pages(
        &self,
        since: Option<DateTime<Utc>>,
        pages: PageSender,
    ) -> Result<Option<DateTime<Utc>>, JiraError> {
        let token = (self.env)(&self.config.site.token_env);
        let client = JiraClient::new(self.config.site.clone(), token, REQUEST_TIMEOUT)?;
        let cloud = self.config.site.auth.is_cloud();
        let path = client.api(if cloud { "search/jql" } else { "search" });
        let jql = query(&self.config.jql, since, Utc::now());
        let mut cursor = since;
        let mut seen = HashSet::new();
        let mut next: Option<String> = None;
        let mut start_at = 0usize;
        for page in 1..=MAX_PAGES {
            let mut body = json!({"jql": jql, "fields": FIELDS, "maxResults": PAGE_SIZE});
            match &next {
                Some(token) => body["nextPageToken"] = json!(token),
                None if !cloud => body["startAt"] = json!(start_at),
                None => {}
            }
            let answer = client.send(Method::POST, &path, &[], Some(&body), MAX_RETRIES).await?;
            let Some(issues) = answer.get("issues").and_then(Value::as_array) else {
                return Err(malformed(&path, "the answer has no `issues` list"));
            };
            let count = issues.len();
            let mut read = Page::default();
            for (index, issue) in issues.iter().enumerate() {
                match task_from_issue(issue.clone(), &client) {
                    Ok(task) if seen.insert(task.gid.clone()) => {
                        advance(&mut cursor, task.modified_at);
                        read.tasks.push(task);
                    }
                    Ok(_) => {} // listed twice (an update moved it to a later page)
                    Err(why) => read
                        .refused
                        .push((format!("{} page {page} issue {}", self.config.name, index + 1), why)),
                }
            }
            if pages.send(read).await.is_err() {
                return Ok(cursor);
            }
            if cloud {
                let last = answer.get("isLast").and_then(Value::as_bool) == Some(true);
                let token = answer.get("nextPageToken").and_then(Value::as_str).filter(|t| !t.is_empty());
                match token {
                    Some(token) if !last && next.as_deref() != Some(token) => next = Some(token.to_string()),
                    Some(_) if !last => {
                        return Err(malformed(&path, "nextPageToken repeats the one just read"));
                    }
                    _ => return Ok(cursor),
                }
            } else {
                start_at += count;
                let total = answer.get("total").and_then(Value::as_u64).unwrap_or(0);
                if count == 0 || start_at as u64 >= total {
                    return Ok(cursor);
                }
            }
        }
        Err(malformed(&path, &format!("more than {MAX_PAGES} pages")))
    }
}

/// The JQL asked: the configured query without its `ORDER BY`, narrowed to issues updated since
/// `since` (minus [`OVERLAP_MINUTES`]) when there is a cursor, ordered by `updated`.
pub fn query(jql: &str, since: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    let condition = without_order_by(jql).trim().to_string();
    let condition = match since {
        Some(since) => {
            let seconds = (now - since).num_seconds().max(0);
            let minutes = (seconds + 59) / 60 + OVERLAP_MINUTES;
            format!("({condition}) AND updated >= \"-{minutes}m\"")
        }
        None => condition,
    };
    format!("{condition} ORDER BY updated ASC")
}

/// `jql` up to a top-level `ORDER BY` (outside quotes), or whole.
fn without_order_by(jql: &str) -> &str {
    let lower = jql.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if lower[i..].starts_with("order") && (i == 0 || !is_word(bytes[i - 1])) => {
                let rest = lower[i + 5..].trim_start();
                if rest.starts_with("by") && !rest[2..].starts_with(|c: char| is_word_char(c)) {
                    return &jql[..i];
                }
            }
            None => {}
        }
        i += 1;
    }
    jql
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A task from one issue of a search answer. Refused, with the reason: no usable id, no readable
/// `updated`, a summary that is not text.
pub fn task_from_issue(mut raw: Value, client: &JiraClient) -> Result<SourceTask, String> {
    let id = match raw.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(Value::Number(id)) => id.to_string(),
        _ => return Err("it has no id".into()),
    };
    let gid = issue_gid(&id).ok_or_else(|| {
        format!("its id {:?} is not a Jira issue id", id.chars().take(60).collect::<String>())
    })?;
    let fields = raw.get("fields").cloned().unwrap_or(Value::Null);
    let text = |field: &str| -> Result<Option<String>, String> {
        match fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("its {field} is not text")),
        }
    };
    let updated = text("updated")?.ok_or("it has no updated")?;
    let modified_at = parse_time(&updated).ok_or_else(|| format!("its updated {updated:?} is not a time"))?;
    let name = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_string);
    let names = |field: &str| -> Vec<String> {
        let list = fields.get(field).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        list.iter().filter_map(|v| v.as_str().map(str::to_string).or_else(|| name(v))).collect()
    };
    let assignee = ["/assignee/displayName", "/assignee/emailAddress", "/assignee/name"]
        .iter()
        .filter_map(|p| fields.pointer(p).and_then(Value::as_str))
        .find(|s| !s.is_empty())
        .map(str::to_string);
    let category = fields.pointer("/status/statusCategory/key").and_then(Value::as_str);
    let key = raw.get("key").and_then(Value::as_str).filter(|k| is_key(k)).map(str::to_string);
    let (labels, components) = (names("labels"), names("components"));
    let priority = fields.get("priority").and_then(name);
    if let Some(object) = raw.as_object_mut() {
        object.insert("labels".into(), json!(labels));
        object.insert("components".into(), json!(components));
        object.insert("priority".into(), json!(priority));
    }
    Ok(SourceTask {
        gid,
        name: text("summary")?.unwrap_or_default(),
        notes: fields.get("description").map(adf::to_text).unwrap_or_default(),
        completed: category.map(|c| c == "done"),
        assignee,
        section: fields.pointer("/status/name").and_then(Value::as_str).map(str::to_string),
        url: key.map(|key| client.browse_url(&key)),
        modified_at: Some(modified_at),
        raw,
    })
}

/// An issue key as Jira makes them (`APP-12`), so that it can go into a URL as is.
fn is_key(key: &str) -> bool {
    key.len() <= 64
        && key.split_once('-').is_some_and(|(project, number)| {
            !project.is_empty()
                && project.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !number.is_empty()
                && number.bytes().all(|b| b.is_ascii_digit())
        })
}

/// Jira's times: `2026-11-01T10:00:00.000+0000` (an offset without a colon), or RFC 3339.
fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .or_else(|_| DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f%z"))
        .ok()
        .map(|at| at.with_timezone(&Utc))
}

fn malformed(path: &str, reason: &str) -> JiraError {
    JiraError::Malformed { path: path.into(), reason: reason.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jira::JiraAuth;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn the_query_is_narrowed_by_a_relative_date_and_ordered_by_updated() {
        let now = at("2026-11-01T12:00:00Z");
        let jql = "project = APP AND status = 'To Do' order by priority DESC";
        assert_eq!(query(jql, None, now), "project = APP AND status = 'To Do' ORDER BY updated ASC");
        assert_eq!(
            query(jql, Some(at("2026-11-01T11:00:30Z")), now),
            "(project = APP AND status = 'To Do') AND updated >= \"-65m\" ORDER BY updated ASC"
        );
        let future = query("project = APP", Some(at("2026-11-01T12:10:00Z")), now);
        assert!(future.contains("\"-5m\""), "a cursor ahead of this clock keeps the overlap: {future}");
        let quoted = "summary ~ \"order by me\" AND reorder = 1";
        assert_eq!(query(quoted, None, now), format!("{quoted} ORDER BY updated ASC"));
    }

    #[test]
    fn an_issue_becomes_a_task_or_a_reason() {
        let site = JiraSite {
            base_url: "https://acme.atlassian.net".into(),
            auth: JiraAuth::Basic,
            email: "a@b.c".into(),
            token_env: "JIRA_API_TOKEN".into(),
        };
        let client = JiraClient::new(site, None, Duration::from_secs(1)).unwrap();
        let issue = json!({"id": "10001", "key": "APP-1", "fields": {
            "summary": "Fix login", "updated": "2026-11-01T10:00:00.000+0100",
            "description": {"type": "doc", "version": 1, "content": [{"type": "paragraph", "content": [{"type": "text", "text": "Steps"}]}]},
            "labels": ["executor"], "components": [{"name": "Web"}], "priority": {"name": "High"},
            "status": {"name": "Done", "statusCategory": {"key": "done"}},
            "assignee": {"displayName": "Alex Doe", "emailAddress": "alex@example.com"},
        }});
        let task = task_from_issue(issue.clone(), &client).unwrap();
        assert_eq!(
            (task.gid.as_str(), task.name.as_str(), task.notes.as_str()),
            ("jira_10001", "Fix login", "Steps")
        );
        assert_eq!((task.completed, task.section.as_deref()), (Some(true), Some("Done")));
        assert_eq!(task.url.as_deref(), Some("https://acme.atlassian.net/browse/APP-1"));
        assert_eq!(task.modified_at, Some(at("2026-11-01T09:00:00Z")));
        assert_eq!(
            (&task.raw["labels"], &task.raw["components"], &task.raw["priority"]),
            (&json!(["executor"]), &json!(["Web"]), &json!("High"))
        );
        let mut bad = issue.clone();
        bad["id"] = json!("../1");
        assert!(task_from_issue(bad, &client).unwrap_err().contains("not a Jira issue id"));
        let mut bad = issue;
        bad["fields"]["updated"] = json!("yesterday");
        assert!(task_from_issue(bad, &client).unwrap_err().contains("updated"));
    }
}
