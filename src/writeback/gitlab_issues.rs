//! GitLab issues: each message is a note on the issue (`POST /projects/{id}/issues/{iid}/notes`,
//! answered `201 {"id": …}`), through `crate::gitlab`'s client with `[gitlab]`'s token. The project
//! id and iid come from the task's gid (`gl_{project_id}-{iid}`, the intake's). Linking the merge
//! request to the issue (`Closes group/project#IID`) is the forge's, in the merge request's description
//! ([`super::Outbox::closing_reference`]).
//!
//! Exactly once: the note ends with a hidden `<!-- executor wb-… -->`; an attempt that is not the
//! first (the last one's answer was lost — a 5xx, a timeout, a dropped connection, GitLab's
//! [`GitLabError::AnswerLost`] — or the process died before recording it) reads the issue's notes,
//! newest first, for it before posting.
//!
//! Answers: a note by one of the source's `answerers` (GitLab usernames) added since a run's question
//! was asked answers it ([`GitLabIssuesTracker::answer_since`]); system notes ("changed the
//! description") and executor's own messages never do.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use super::asana::TrackerAnswer;
use super::message::{hidden_marker, is_executors};
use super::{Posted, TrackerError};
use crate::config::SourceConfig;
use crate::gitlab::{GitLabClient, GitLabError, parse_issue_gid as parse_gid, segment};
use crate::store::Writeback;

/// Pages of 100 notes read at most when looking for an earlier attempt's note or an answer.
const MAX_NOTE_PAGES: usize = 20;

/// Writes notes on the issues of one GitLab issues source.
pub struct GitLabIssuesTracker {
    client: Arc<GitLabClient>,
    /// `group/sub/project`, as configured.
    project: String,
    /// The source's name, for the fixes.
    source: String,
}

impl GitLabIssuesTracker {
    pub fn new(
        client: Arc<GitLabClient>,
        source: &SourceConfig,
    ) -> Result<GitLabIssuesTracker, TrackerError> {
        if !crate::config::valid_project_path(&source.gitlab) {
            return Err(TrackerError::Refused {
                why: format!("source {:?} names no GitLab project as group/project", source.name),
                fix: "set gitlab = \"group/sub/project\" on the source".into(),
            });
        }
        Ok(GitLabIssuesTracker { client, project: source.gitlab.clone(), source: source.name.clone() })
    }

    /// `/projects/{id}/issues/{iid}/notes` of task `gid`, refused when the gid is not a GitLab issue's.
    fn notes_path(&self, gid: &str) -> Result<String, TrackerError> {
        match parse_gid(gid) {
            Some((project, iid)) => Ok(format!("/projects/{project}/issues/{iid}/notes")),
            None => Err(TrackerError::Refused {
                why: format!("task {gid} is not an issue of {}", self.project),
                fix: "only tasks the GitLab issues intake brought in can be written back".into(),
            }),
        }
    }

    /// Notes `w` on its issue, unless an earlier attempt did.
    pub async fn post(&self, w: &Writeback) -> Result<Posted, TrackerError> {
        let path = self.notes_path(&w.task_gid)?;
        if w.attempts > 1
            && let Some(id) = self.find(&path, &w.marker).await?
        {
            return Ok(Posted::Earlier(id));
        }
        let body = json!({"body": format!("{}\n\n{}", w.message, hidden_marker(&w.marker))});
        let answer =
            self.client.rest(Method::POST, &path, Some(&body)).await.map_err(|e| self.classify(e))?;
        match answer.get("id").and_then(Value::as_u64) {
            Some(id) => Ok(Posted::Now(id.to_string())),
            // GitLab took it but its answer lacks the id: the next attempt finds it by its marker.
            None => Err(TrackerError::Passing(format!("GitLab's answer on {path} has no note id"))),
        }
    }

    /// The id of the note that carries `marker`, newest first.
    async fn find(&self, path: &str, marker: &str) -> Result<Option<String>, TrackerError> {
        let needle = hidden_marker(marker);
        let found = self
            .notes(path, "desc", |note| {
                let ours = note.get("body").and_then(Value::as_str).is_some_and(|b| b.contains(&needle));
                ours.then(|| note.get("id").and_then(Value::as_u64)).flatten().map(|id| id.to_string())
            })
            .await?;
        Ok(found)
    }

    /// The first note on the issue of task `gid` added at or after `since` by one of `answerers`
    /// (usernames), not a system note nor executor's own, oldest first: the answer to a run's open
    /// question. `None` when there is none yet.
    pub async fn answer_since(
        &self,
        gid: &str,
        since: DateTime<Utc>,
        answerers: &[String],
    ) -> Result<Option<TrackerAnswer>, TrackerError> {
        if answerers.is_empty() {
            return Ok(None);
        }
        let path = self.notes_path(gid)?;
        self.notes(&path, "asc", |note| answer_in(note, since, answerers)).await
    }

    /// Reads the issue's notes by creation, `sort` `asc` or `desc`, page by page, until `pick` picks one.
    async fn notes<T>(
        &self,
        path: &str,
        sort: &str,
        pick: impl Fn(&Value) -> Option<T>,
    ) -> Result<Option<T>, TrackerError> {
        for page in 1..=MAX_NOTE_PAGES {
            let listing = format!("{path}?order_by=created_at&sort={sort}&per_page=100&page={page}");
            let answer = self.client.rest(Method::GET, &listing, None).await.map_err(|e| self.classify(e))?;
            let notes = answer.as_array().map(Vec::as_slice).unwrap_or_default();
            if let Some(found) = notes.iter().find_map(&pick) {
                return Ok(Some(found));
            }
            if notes.len() < 100 {
                break;
            }
        }
        Ok(None)
    }

    /// Whether the token reaches the project's issues, without writing (`GET /projects/{path}`). What
    /// the token may write shows only when writing: its scope is said, not checked.
    pub async fn probe(&self) -> Result<String, TrackerError> {
        let path = format!("/projects/{}", segment(&self.project));
        let answer = self.client.rest(Method::GET, &path, None).await.map_err(|e| self.classify(e))?;
        if answer.get("issues_enabled").and_then(Value::as_bool) == Some(false) {
            return Err(TrackerError::Refused {
                why: format!("{} has issues turned off", self.project),
                fix: format!(
                    "turn issues on in the project's settings (Settings → General → Visibility), or remove \
                     source {:?}",
                    self.source
                ),
            });
        }
        Ok(format!(
            "the token in {} reaches {}'s issues (writing notes needs the `api` scope; `read_api` only reads)",
            self.client.token_variable(),
            self.project
        ))
    }

    /// A refusal for good (the token, its rights, the issue) or a passing fault.
    fn classify(&self, e: GitLabError) -> TrackerError {
        let why = e.to_string();
        let variable = self.client.token_variable();
        let fix = match &e {
            GitLabError::MissingToken { .. } => {
                return TrackerError::Passing(format!("{why} (in the runner's environment)"));
            }
            GitLabError::Unauthorized { .. } | GitLabError::BadToken { .. } => format!(
                "put a token with the `api` scope in {variable}; messages refused meanwhile are not sent again"
            ),
            GitLabError::Forbidden { .. } => format!(
                "the token in {variable} may not write notes on {}: give it the `api` scope (not only \
                 `read_api`) and at least the Reporter role, or set writeback = [] on source {:?}",
                self.project, self.source
            ),
            GitLabError::NotFound { .. } => {
                "the issue was deleted or moved out of the token's reach; nothing more is sent about it"
                    .into()
            }
            GitLabError::BadUrl { .. } => "correct [gitlab] url".into(),
            GitLabError::Status { status, .. } if (400..500).contains(status) && *status != 408 => format!(
                "GitLab refused the note (a locked discussion?); unlock it, or set writeback = [] on source {:?}",
                self.source
            ),
            _ => return TrackerError::Passing(why),
        };
        TrackerError::Refused { why, fix }
    }
}

/// `note` as an answer: by one of `answerers`, added at or after `since`, with text, not a system note
/// and not one of executor's own messages.
fn answer_in(note: &Value, since: DateTime<Utc>, answerers: &[String]) -> Option<TrackerAnswer> {
    if note.get("system").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let author = note.get("author")?;
    let username = author.get("username").and_then(Value::as_str)?;
    if !answerers.iter().any(|a| a == username) {
        return None;
    }
    let created = note.get("created_at").and_then(Value::as_str)?;
    let at = DateTime::parse_from_rfc3339(created).ok()?.with_timezone(&Utc);
    let text = note.get("body").and_then(Value::as_str)?;
    let by = author.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()).unwrap_or(username);
    (at >= since && !text.trim().is_empty() && !is_executors(text))
        .then(|| TrackerAnswer { by: by.to_string(), text: text.to_string() })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_an_answerers_own_later_note_answers() {
        let since = DateTime::parse_from_rfc3339("2026-11-30T10:00:00Z").unwrap().with_timezone(&Utc);
        let who = vec!["alex".to_string()];
        let note = |username: &str, at: &str, body: &str, system: bool| {
            json!({"id": 1, "body": body, "system": system, "created_at": at,
                "author": {"username": username, "name": "Alex Doe"}})
        };
        let answer = answer_in(&note("alex", "2026-11-30T10:00:01.000Z", "use en-GB", false), since, &who);
        assert_eq!(answer, Some(TrackerAnswer { by: "Alex Doe".into(), text: "use en-GB".into() }));
        for (username, at, body, system) in [
            ("mallory", "2026-11-30T10:00:01.000Z", "use fr-FR", false),
            ("alex", "2026-11-30T09:59:59.999Z", "too early", false),
            ("alex", "2026-11-30T10:00:01.000Z", "changed the description", true),
            ("alex", "2026-11-30T10:00:01.000Z", "a question\n\n<!-- executor wb-00 -->", false),
            ("alex", "2026-11-30T10:00:01.000Z", "  ", false),
        ] {
            assert_eq!(answer_in(&note(username, at, body, system), since, &who), None, "{body}");
        }
    }
}
