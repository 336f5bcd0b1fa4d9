//! The Linear task source: the issues of teams, projects, workflow states, labels and an assignee,
//! read through Linear's GraphQL API (`crate::linear`) with a personal API key from an environment
//! variable the config names.
//!
//! One `issues(filter:, first:, after:, orderBy: updatedAt)` query per page, paged by the
//! `pageInfo.endCursor` Linear returns; incremental by `updatedAt: { gte: }` (inclusive: an issue
//! seen again is stored unchanged). A rate limit (`RATELIMITED`) waits for the window's reset and is
//! retried up to [`MAX_RETRIES`] times. An issue that cannot be read goes to the refused list; a
//! failure of the query fails the fetch with an error that names the fix, never the key.
//!
//! Each issue becomes a task with gid `lin_{id}` (Linear's UUID, which a move to another team keeps,
//! unlike the `ENG-123` identifier), its title and Markdown description, its workflow state as the
//! section, and the whole node as `raw` (`raw.identifier`, `raw.team.key`, `raw.labels.nodes`, …)
//! for the filters. Comments are never read, so what write-back posts never becomes task text.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::{EnvLookup, Fetched, Page, PageSender, advance};
use crate::linear::{LinearClient, LinearError, documents, issue_gid};

/// Retries after a rate limit before giving up.
pub const MAX_RETRIES: u32 = 3;

/// Issues per page (Linear's default page size; its maximum is 250).
pub const PAGE_SIZE: u32 = 50;

/// A guard against a server that keeps returning a next page.
const MAX_PAGES: usize = 100_000;

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// One `[[sources]]` entry of kind Linear.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinearConfig {
    /// The source's name (stored in each task's `source`).
    pub name: String,
    /// The GraphQL endpoint, `https://api.linear.app/graphql` unless a test points it at a fake.
    pub api_url: String,
    /// The environment variable holding the API key, e.g. `LINEAR_API_KEY`.
    pub token_env: String,
    /// Team keys (`ENG`); none: every team.
    pub teams: Vec<String>,
    /// Project names; none: any project or none.
    pub projects: Vec<String>,
    /// Workflow state names; none: every state not of type completed or canceled.
    pub states: Vec<String>,
    /// Labels an issue must all have.
    pub labels: Vec<String>,
    /// An email, or `me` for the key's own user.
    pub assignee: Option<String>,
}

impl LinearConfig {
    /// The `IssueFilter` for issues updated at or after `since`: every configured condition, all of
    /// them at once.
    pub fn filter(&self, since: Option<DateTime<Utc>>) -> Value {
        let mut all = Vec::new();
        if !self.teams.is_empty() {
            all.push(json!({"team": {"key": {"in": self.teams}}}));
        }
        if !self.projects.is_empty() {
            all.push(json!({"project": {"name": {"in": self.projects}}}));
        }
        all.push(match self.states.is_empty() {
            true => json!({"state": {"type": {"nin": ["completed", "canceled"]}}}),
            false => json!({"state": {"name": {"in": self.states}}}),
        });
        for label in &self.labels {
            all.push(json!({"labels": {"some": {"name": {"eq": label}}}}));
        }
        match self.assignee.as_deref() {
            Some("me") => all.push(json!({"assignee": {"isMe": {"eq": true}}})),
            Some(email) => all.push(json!({"assignee": {"email": {"eqIgnoreCase": email}}})),
            None => {}
        }
        if let Some(since) = since {
            all.push(json!({"updatedAt": {"gte": since.to_rfc3339_opts(SecondsFormat::Millis, true)}}));
        }
        json!({"and": all})
    }
}

/// Fetches the issues a [`LinearConfig`] names.
pub struct LinearSource {
    config: LinearConfig,
    env: EnvLookup,
}

impl fmt::Debug for LinearSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinearSource").field("config", &self.config).finish_non_exhaustive()
    }
}

impl LinearSource {
    /// A source reading its key through `env` at each fetch (a rotated key needs no restart).
    pub fn new(config: LinearConfig, env: EnvLookup) -> Result<LinearSource, LinearError> {
        if reqwest::Url::parse(&config.api_url).is_err() {
            return Err(LinearError::BadApiUrl { url: config.api_url });
        }
        Ok(LinearSource { config, env })
    }

    /// Every issue the config selects updated since `since` (all of them when `None`), each once.
    pub async fn fetch(&self, since: Option<DateTime<Utc>>) -> Result<Fetched, LinearError> {
        super::collect(|pages| self.fetch_pages(since, pages)).await
    }

    /// As [`fetch`](Self::fetch), sending each page as soon as it is read; the cursor for the next
    /// fetch (the latest `updatedAt` seen, or `since`) once every page was sent. Stops early, without
    /// error, when the receiver is gone.
    pub async fn fetch_pages(
        &self,
        since: Option<DateTime<Utc>>,
        pages: PageSender,
    ) -> Result<Option<DateTime<Utc>>, LinearError> {
        let key = (self.env)(&self.config.token_env);
        let client = LinearClient::new(&self.config.api_url, &self.config.token_env, key, REQUEST_TIMEOUT)?;
        let filter = self.config.filter(since);
        let mut cursor = since;
        let mut seen = HashSet::new();
        let mut after: Option<String> = None;
        for page in 1..=MAX_PAGES {
            let variables = json!({"filter": filter, "first": PAGE_SIZE, "after": after});
            let data = client.run(documents::ISSUES, variables, MAX_RETRIES).await?;
            let Some(Value::Array(nodes)) = data.pointer("/issues/nodes").cloned() else {
                return Err(malformed("issues.nodes is not a list"));
            };
            let mut read = Page::default();
            for (index, node) in nodes.into_iter().enumerate() {
                match task_from_node(node) {
                    Ok(task) if seen.insert(task.gid.clone()) => {
                        advance(&mut cursor, task.modified_at);
                        read.tasks.push(task);
                    }
                    Ok(_) => {} // listed twice (an update moved it between pages)
                    Err(why) => read
                        .refused
                        .push((format!("{} page {page} issue {}", self.config.name, index + 1), why)),
                }
            }
            if pages.send(read).await.is_err() {
                return Ok(cursor);
            }
            let more = data.pointer("/issues/pageInfo/hasNextPage").and_then(Value::as_bool).unwrap_or(false);
            let next = data.pointer("/issues/pageInfo/endCursor").and_then(Value::as_str).map(str::to_string);
            match (more, next) {
                (false, _) => return Ok(cursor),
                (true, Some(next)) if after.as_deref() != Some(next.as_str()) => after = Some(next),
                (true, _) => {
                    return Err(malformed("pageInfo says there is a next page but gives no new endCursor"));
                }
            }
        }
        Err(malformed(&format!("more than {MAX_PAGES} pages")))
    }
}

/// A task from one issue node of [`documents::ISSUES`]. Refused, with the reason: no usable id, no
/// readable `updatedAt`, a title or description that is not text.
pub fn task_from_node(raw: Value) -> Result<super::SourceTask, String> {
    let text = |field: &str| -> Result<Option<String>, String> {
        match raw.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("its {field} is not text")),
        }
    };
    let id = text("id")?.ok_or("it has no id")?;
    let gid = issue_gid(&id)
        .ok_or_else(|| format!("its id {:?} is not a Linear id", id.chars().take(60).collect::<String>()))?;
    let updated = text("updatedAt")?.ok_or("it has no updatedAt")?;
    let modified_at = DateTime::parse_from_rfc3339(&updated)
        .map_err(|_| format!("its updatedAt {updated:?} is not an RFC 3339 timestamp"))?
        .with_timezone(&Utc);
    let state_type = raw.pointer("/state/type").and_then(Value::as_str);
    let assignee = ["/assignee/name", "/assignee/email"]
        .iter()
        .filter_map(|p| raw.pointer(p).and_then(Value::as_str))
        .find(|s| !s.is_empty())
        .map(str::to_string);
    Ok(super::SourceTask {
        gid,
        name: text("title")?.unwrap_or_default(),
        notes: text("description")?.unwrap_or_default(),
        completed: state_type.map(|t| matches!(t, "completed" | "canceled")),
        assignee,
        section: raw.pointer("/state/name").and_then(Value::as_str).map(str::to_string),
        url: text("url")?,
        modified_at: Some(modified_at),
        raw,
    })
}

fn malformed(reason: &str) -> LinearError {
    LinearError::Malformed { reason: reason.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_holds_every_condition() {
        let config = LinearConfig {
            teams: vec!["ENG".into()],
            projects: vec!["Mobile".into()],
            labels: vec!["executor".into(), "small".into()],
            assignee: Some("me".into()),
            ..LinearConfig::default()
        };
        let since = DateTime::parse_from_rfc3339("2026-11-01T10:00:00Z").unwrap().with_timezone(&Utc);
        assert_eq!(
            config.filter(Some(since)),
            json!({"and": [
                {"team": {"key": {"in": ["ENG"]}}},
                {"project": {"name": {"in": ["Mobile"]}}},
                {"state": {"type": {"nin": ["completed", "canceled"]}}},
                {"labels": {"some": {"name": {"eq": "executor"}}}},
                {"labels": {"some": {"name": {"eq": "small"}}}},
                {"assignee": {"isMe": {"eq": true}}},
                {"updatedAt": {"gte": "2026-11-01T10:00:00.000Z"}},
            ]})
        );
        let named = LinearConfig { states: vec!["Todo".into()], assignee: Some("a@b.c".into()), ..config };
        let filter = named.filter(None);
        assert_eq!(filter["and"][2], json!({"state": {"name": {"in": ["Todo"]}}}));
        assert_eq!(filter["and"][5], json!({"assignee": {"email": {"eqIgnoreCase": "a@b.c"}}}));
    }

    #[test]
    fn a_node_becomes_a_task_or_a_reason() {
        let node = json!({
            "id": "8f1c2a9e-3b4d-4e5f-9a0b-1c2d3e4f5a6b", "identifier": "ENG-12", "title": "Fix login",
            "description": null, "url": "https://linear.app/acme/issue/ENG-12",
            "updatedAt": "2026-11-01T10:00:00.000Z",
            "state": {"name": "Todo", "type": "unstarted"}, "assignee": {"name": "", "email": "a@b.c"},
        });
        let task = task_from_node(node.clone()).unwrap();
        assert_eq!(task.gid, "lin_8f1c2a9e-3b4d-4e5f-9a0b-1c2d3e4f5a6b");
        assert_eq!((task.name.as_str(), task.notes.as_str()), ("Fix login", ""));
        assert_eq!((task.completed, task.section.as_deref()), (Some(false), Some("Todo")));
        assert_eq!(task.assignee.as_deref(), Some("a@b.c"));
        let mut bad = node.clone();
        bad["id"] = json!("../../etc");
        assert!(task_from_node(bad).unwrap_err().contains("not a Linear id"));
        let mut bad = node;
        bad["updatedAt"] = json!("yesterday");
        assert!(task_from_node(bad).unwrap_err().contains("updatedAt"));
    }
}
