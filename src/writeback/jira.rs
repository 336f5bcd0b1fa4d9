//! Jira: each message is a comment on the issue (its body in Atlassian Document Format on Cloud, wiki
//! text on Data Center); the run's pull request is a remote link on the issue; and, when the source
//! names one for the event (`writeback_transitions`), the issue takes that transition.
//!
//! Exactly once, as on Asana: the comment's text ends with the message's marker, and an attempt that
//! is not the first looks for a comment carrying it (newest first) before it posts, so a write Jira
//! applied but answered with a 502, a timeout or a dropped connection is found, never doubled. The
//! remote link is idempotent by its `globalId` (Jira updates the link that has it), and a transition
//! is skipped when the issue is already in the status it names, so both are simply done again on a
//! retry. A transition is looked up by name — the transition's own (`Start Progress`) or the status it
//! leads to (`In Progress`) — among those the issue's workflow offers now; a name it does not offer is
//! refused for good, with the names it does.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use super::asana::TrackerAnswer;
use super::message::marker_text;
use super::{Posted, TrackerError};
use crate::config::SourceConfig;
use crate::domain::WritebackEvent;
use crate::jira::{JiraAuth, JiraClient, JiraError, JiraSite, adf, issue_id};
use crate::store::Writeback;

/// Pages of 100 comments read, newest first, when looking for an earlier attempt's comment.
const MAX_COMMENT_PAGES: usize = 10;

/// `comment` as an answer: added at or after `since` by one of `answerers` (Cloud's `accountId`, Data
/// Center's `name` or `key`), with text, and not one of executor's own messages.
fn answer_in(comment: &Value, since: DateTime<Utc>, answerers: &[String]) -> Option<TrackerAnswer> {
    let author = comment.get("author")?;
    let ids = ["accountId", "name", "key"].map(|k| author.get(k).and_then(Value::as_str));
    if !ids.iter().flatten().any(|id| answerers.iter().any(|a| a == id)) {
        return None;
    }
    // Jira's times: `2026-11-01T10:00:00.000+0000`.
    let created = comment.get("created").and_then(Value::as_str)?;
    let at = DateTime::parse_from_str(created, "%Y-%m-%dT%H:%M:%S%.f%z").ok()?.with_timezone(&Utc);
    let text = match comment.get("body")? {
        Value::String(wiki) => wiki.clone(),
        doc => adf::to_text(doc),
    };
    let by = author.get("displayName").and_then(Value::as_str).filter(|n| !n.is_empty());
    let by = by.or(ids.into_iter().flatten().next())?.to_string();
    (at >= since && !text.trim().is_empty() && !super::message::is_executors(&text))
        .then_some(TrackerAnswer { by, text })
}

/// Writes comments, links and transitions on the issues of one Jira source.
pub struct JiraTracker {
    client: JiraClient,
    source: String,
    transitions: BTreeMap<WritebackEvent, String>,
}

impl JiraTracker {
    /// The tracker of `source`, with the value of its `token_env` (if set).
    pub fn new(source: &SourceConfig, token: Option<String>) -> Result<JiraTracker, TrackerError> {
        let site = JiraSite {
            base_url: source.base_url.clone(),
            auth: JiraAuth::parse(&source.auth).unwrap_or_default(),
            email: source.email.clone(),
            token_env: source.token_env.clone(),
        };
        let client = JiraClient::new(site, token, source.writeback_timeout.std())
            .map_err(|e| refused_or_passing(e, &source.name))?;
        Ok(JiraTracker {
            client,
            source: source.name.clone(),
            transitions: source.writeback_transitions.clone(),
        })
    }

    /// Posts `w` as a comment on its issue unless an earlier attempt did, links `pull_request` (the
    /// run's, when it has one) and takes the event's transition if the source names one.
    pub async fn post(&self, w: &Writeback, pull_request: Option<&str>) -> Result<Posted, TrackerError> {
        let Some(issue) = issue_id(&w.task_gid) else {
            return Err(TrackerError::Refused {
                why: format!("task {} is not a Jira issue", w.task_gid),
                fix: "only tasks the Jira intake brought in can be written back".into(),
            });
        };
        let earlier = match w.attempts > 1 {
            true => self.find(issue, &w.marker).await?,
            false => None,
        };
        let posted = match earlier {
            Some(found) => Posted::Earlier(found),
            None => self.comment(issue, w).await?,
        };
        let linked =
            matches!(w.event, WritebackEvent::PrOpened | WritebackEvent::Complete | WritebackEvent::Merged);
        if let Some(url) = pull_request.filter(|_| linked) {
            self.link(issue, url, w.event == WritebackEvent::Merged).await?;
        }
        if let Some(name) = self.transitions.get(&w.event) {
            self.transition(issue, name).await?;
        }
        Ok(posted)
    }

    /// One request; the outbox's back-off retries a passing fault later, so none is retried here.
    async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> Result<Value, TrackerError> {
        self.client.send(method, path, query, body, 0).await.map_err(|e| refused_or_passing(e, &self.source))
    }

    /// The first comment on the issue of task `gid` added at or after `since` by one of `answerers`
    /// (Cloud account ids; Data Center user names or keys), not executor's own, oldest first: the
    /// answer to a run's open question. `None` when there is none yet.
    pub async fn answer_since(
        &self,
        gid: &str,
        since: DateTime<Utc>,
        answerers: &[String],
    ) -> Result<Option<TrackerAnswer>, TrackerError> {
        let Some(issue) = issue_id(gid).filter(|_| !answerers.is_empty()) else { return Ok(None) };
        let path = self.client.api(&format!("issue/{issue}/comment"));
        let mut start_at = 0usize;
        for _ in 0..MAX_COMMENT_PAGES {
            let query = [
                ("orderBy", "created".to_string()),
                ("maxResults", "100".to_string()),
                ("startAt", start_at.to_string()),
            ];
            let page = self.send(Method::GET, &path, &query, None).await?;
            let comments = page.get("comments").and_then(Value::as_array).cloned().unwrap_or_default();
            if let Some(found) = comments.iter().find_map(|c| answer_in(c, since, answerers)) {
                return Ok(Some(found));
            }
            start_at += comments.len();
            let total = page.get("total").and_then(Value::as_u64).unwrap_or(0);
            if comments.is_empty() || start_at as u64 >= total {
                break;
            }
        }
        Ok(None)
    }

    /// The id of the comment on `issue` that carries `marker`, newest first.
    async fn find(&self, issue: &str, marker: &str) -> Result<Option<String>, TrackerError> {
        let path = self.client.api(&format!("issue/{issue}/comment"));
        let needle = marker_text(marker);
        let mut start_at = 0usize;
        for _ in 0..MAX_COMMENT_PAGES {
            let query = [
                ("orderBy", "-created".to_string()),
                ("maxResults", "100".to_string()),
                ("startAt", start_at.to_string()),
            ];
            let page = self.send(Method::GET, &path, &query, None).await?;
            let comments = page.get("comments").and_then(Value::as_array).cloned().unwrap_or_default();
            let found =
                comments.iter().find(|c| c.get("body").is_some_and(|b| adf::to_text(b).contains(&needle)));
            if let Some(id) = found.and_then(|c| c.get("id")).and_then(Value::as_str) {
                return Ok(Some(id.to_string()));
            }
            start_at += comments.len();
            let total = page.get("total").and_then(Value::as_u64).unwrap_or(0);
            if comments.is_empty() || start_at as u64 >= total {
                break;
            }
        }
        Ok(None)
    }

    async fn comment(&self, issue: &str, w: &Writeback) -> Result<Posted, TrackerError> {
        let path = self.client.api(&format!("issue/{issue}/comment"));
        let text = format!("{}\n\n{}", w.message, marker_text(&w.marker));
        let body = match self.client.site().auth.is_cloud() {
            true => json!({"body": adf::from_text(&text)}),
            false => json!({"body": text}),
        };
        let answer = self.send(Method::POST, &path, &[], Some(&body)).await?;
        match answer.get("id").and_then(Value::as_str) {
            Some(id) => Ok(Posted::Now(id.to_string())),
            // Jira took it but its answer lacks the id: the next attempt finds it by its marker.
            None => Err(TrackerError::Passing(format!("Jira's answer on {path} has no comment id"))),
        }
    }

    /// Links the pull request at `url` on the issue, resolved once it is merged. Jira keeps one link
    /// per `globalId`: a second post updates it.
    async fn link(&self, issue: &str, url: &str, merged: bool) -> Result<(), TrackerError> {
        let path = self.client.api(&format!("issue/{issue}/remotelink"));
        let body = json!({
            "globalId": format!("executor-pull-request={url}"),
            "application": {"type": "executor", "name": "executor"},
            "relationship": "pull request",
            "object": {"url": url, "title": link_title(url), "status": {"resolved": merged}},
        });
        self.send(Method::POST, &path, &[], Some(&body)).await.map(drop)
    }

    /// Takes the transition named `name` (or leading to the status named `name`), unless the issue is
    /// in that status already.
    async fn transition(&self, issue: &str, name: &str) -> Result<(), TrackerError> {
        let path = self.client.api(&format!("issue/{issue}"));
        let now = self.send(Method::GET, &path, &[("fields", "status".to_string())], None).await?;
        let key = now.get("key").and_then(Value::as_str).unwrap_or(issue).to_string();
        let status = now.pointer("/fields/status/name").and_then(Value::as_str).unwrap_or("");
        if status.eq_ignore_ascii_case(name) {
            return Ok(());
        }
        let path = self.client.api(&format!("issue/{issue}/transitions"));
        let offered = self.send(Method::GET, &path, &[], None).await?;
        let offered = offered.get("transitions").and_then(Value::as_array).cloned().unwrap_or_default();
        let named = |t: &Value, pointer: &str| {
            t.pointer(pointer).and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case(name))
        };
        let chosen = offered
            .iter()
            .find(|t| named(t, "/name"))
            .or_else(|| offered.iter().find(|t| named(t, "/to/name")));
        let Some(id) = chosen.and_then(|t| t.get("id")).and_then(Value::as_str) else {
            let names: Vec<String> = offered
                .iter()
                .filter_map(|t| {
                    let to = t.pointer("/to/name").and_then(Value::as_str).unwrap_or("?");
                    t.get("name").and_then(Value::as_str).map(|n| format!("{n:?} (to {to})"))
                })
                .collect();
            return Err(TrackerError::Refused {
                why: format!(
                    "issue {key} (in {status:?}) offers no transition named {name:?} and none to a status of that name"
                ),
                fix: format!(
                    "name one it offers in writeback_transitions of source {:?} ({}), or change the workflow",
                    self.source,
                    if names.is_empty() { "it offers none".to_string() } else { names.join(", ") }
                ),
            });
        };
        self.send(Method::POST, &path, &[], Some(&json!({"transition": {"id": id}}))).await.map(drop)
    }

    /// Whether the credentials work, found out without writing (`GET /myself`): whose they are.
    pub async fn probe(&self) -> Result<String, TrackerError> {
        let me = self.send(Method::GET, &self.client.api("myself"), &[], None).await?;
        let who = ["displayName", "emailAddress", "name"]
            .iter()
            .find_map(|k| me.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
            .unwrap_or("the token's user")
            .to_string();
        let moves = match self.transitions.is_empty() {
            true => String::new(),
            false => "; transitions are looked up on each issue when it is told".into(),
        };
        Ok(format!("signed in to {} as {who}{moves}", self.client.site().base_url))
    }
}

/// `owner/name#7` for a GitHub pull request's address, else the address.
fn link_title(url: &str) -> String {
    let parts: Vec<&str> = url.trim_end_matches('/').rsplitn(5, '/').collect();
    match parts.as_slice() {
        [number, "pull", name, owner, _] if number.bytes().all(|b| b.is_ascii_digit()) => {
            format!("Pull request {owner}/{name}#{number}")
        }
        _ => format!("Pull request {url}"),
    }
}

/// A refusal for good (the token, its rights, the issue) or a passing fault.
fn refused_or_passing(e: JiraError, source: &str) -> TrackerError {
    let why = e.to_string();
    let fix = match &e {
        _ if e.is_passing() => return TrackerError::Passing(why),
        JiraError::MissingToken { variable, .. } => {
            return TrackerError::Passing(format!(
                "the Jira token variable {variable} is not set in the runner's environment"
            ));
        }
        JiraError::Unauthorized { .. } | JiraError::MissingEmail { .. } | JiraError::BadToken { .. } => {
            "the error says how; messages refused meanwhile are not sent again".to_string()
        }
        JiraError::Forbidden { .. } => format!(
            "give the token's account Add Comments, Link Issues and Transition Issues on the issue's \
             project, or set writeback = [] on source {source:?}"
        ),
        JiraError::NotFound { .. } => {
            "the issue was deleted or moved out of the token's reach; nothing more is sent about it".into()
        }
        JiraError::BadBaseUrl { .. } => format!("correct base_url of source {source:?}"),
        _ => "Jira refused the request itself; please report this as a bug in executor".into(),
    };
    TrackerError::Refused { why, fix }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_github_pull_request_link_is_titled_by_its_number() {
        assert_eq!(link_title("https://github.com/octo/app/pull/7"), "Pull request octo/app#7");
        assert_eq!(link_title("local://app/pr/3"), "Pull request local://app/pr/3");
    }
}
