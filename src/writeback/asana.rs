//! Asana: each message is a comment (a story) on the task, `POST /tasks/{gid}/stories` with
//! `{"data": {"text": …}}`, answered `201 {"data": {"gid": …}}`. A retry first reads the task's
//! stories (`GET /tasks/{gid}/stories?opt_fields=text`, paged by `offset`) for the message's marker.

use chrono::{DateTime, Utc};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use serde_json::{Value, json};

use super::message::marker_text;
use super::{Posted, TrackerError};
use crate::config::SourceConfig;
use crate::domain::WritebackEvent;
use crate::store::Writeback;

/// Pages of stories read at most when looking for an earlier attempt's (100 each).
const MAX_STORY_PAGES: usize = 50;

/// A person's comment on a task, taken as the answer to its run's question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackerAnswer {
    /// Who wrote it: their name as Asana gives it, else their gid.
    pub by: String,
    pub text: String,
}

/// `story` as an answer: a comment added at or after `since` by one of `answerers`, not executor's own.
fn answer_in(story: &Value, since: DateTime<Utc>, answerers: &[String]) -> Option<TrackerAnswer> {
    let text = story.get("text").and_then(Value::as_str)?;
    let author = story.pointer("/created_by/gid").and_then(Value::as_str)?;
    let at = story.get("created_at").and_then(Value::as_str)?;
    let at = DateTime::parse_from_rfc3339(at).ok()?.with_timezone(&Utc);
    let comment = story.get("resource_subtype").and_then(Value::as_str) == Some("comment_added");
    let ours = super::message::is_executors(text);
    (comment && !ours && at >= since && answerers.iter().any(|a| a == author) && !text.trim().is_empty())
        .then(|| {
            let name = story.pointer("/created_by/name").and_then(Value::as_str).filter(|n| !n.is_empty());
            TrackerAnswer { by: name.unwrap_or(author).to_string(), text: text.to_string() }
        })
}

/// Writes comments on the tasks of one Asana source.
pub struct AsanaTracker {
    api_url: String,
    token_env: String,
    /// The token's value, read when the tracker was made (never logged).
    token: Option<String>,
    http: reqwest::Client,
    /// Where a task moves at each event, and whether a merge completes it.
    sections: std::collections::BTreeMap<WritebackEvent, String>,
    custom_fields: std::collections::BTreeMap<WritebackEvent, std::collections::BTreeMap<String, String>>,
    complete_on_merge: bool,
}

impl AsanaTracker {
    /// The tracker of `source`, with the value of its `token_env` (if set).
    pub fn new(source: &SourceConfig, token: Option<String>) -> Result<AsanaTracker, TrackerError> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("executor/", env!("CARGO_PKG_VERSION")))
            .timeout(source.writeback_timeout.std())
            .build()
            .map_err(|e| TrackerError::Passing(format!("cannot make an HTTP client: {e}")))?;
        Ok(AsanaTracker {
            api_url: source.api_url.trim_end_matches('/').to_string(),
            token_env: source.token_env.clone(),
            token,
            http,
            sections: source.writeback_sections.clone(),
            custom_fields: source.writeback_custom_fields.clone(),
            complete_on_merge: source.writeback_complete_on_merge,
        })
    }

    /// Posts `w` as a story on its task, unless an earlier attempt did.
    pub async fn post(&self, w: &Writeback) -> Result<Posted, TrackerError> {
        // The gid goes into a URL path: digits only, as Asana issues them.
        if w.task_gid.is_empty() || !w.task_gid.bytes().all(|b| b.is_ascii_digit()) {
            return Err(TrackerError::Refused {
                why: format!("task {} is not an Asana task gid", w.task_gid),
                fix: "only tasks the Asana intake brought in can be written back".into(),
            });
        }
        let token = self.token()?;
        let posted = match w.attempts > 1 {
            true => self.find(&w.task_gid, &w.marker, &token).await?.map(Posted::Earlier),
            false => None,
        };
        let posted = match posted {
            Some(earlier) => earlier,
            None => self.comment(w, &token).await?,
        };
        // The actions after the comment are idempotent: a retry (which finds the comment) does them again.
        self.act(w, &token).await?;
        Ok(posted)
    }

    /// The event's actions the source asks for: move the task to a section, set custom fields,
    /// complete it on a merge.
    async fn act(&self, w: &Writeback, token: &HeaderValue) -> Result<(), TrackerError> {
        if let Some(section) = self.sections.get(&w.event) {
            let path = format!("/sections/{section}/addTask");
            let body = json!({"data": {"task": w.task_gid}});
            self.send(token, reqwest::Method::POST, &path, &body).await?;
        }
        if let Some(fields) = self.custom_fields.get(&w.event) {
            let path = format!("/tasks/{}", w.task_gid);
            let body = json!({"data": {"custom_fields": fields}});
            self.send(token, reqwest::Method::PUT, &path, &body).await?;
        }
        if w.event == WritebackEvent::Merged && self.complete_on_merge {
            let path = format!("/tasks/{}", w.task_gid);
            self.send(token, reqwest::Method::PUT, &path, &json!({"data": {"completed": true}})).await?;
        }
        Ok(())
    }

    async fn send(
        &self,
        token: &HeaderValue,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, TrackerError> {
        let answer = self
            .http
            .request(method, format!("{}{path}", self.api_url))
            .header(AUTHORIZATION, token.clone())
            .header(ACCEPT, "application/json")
            .json(body)
            .send()
            .await
            .map_err(|e| transport(path, e))?;
        self.answer(path, answer).await
    }

    /// Posts the comment story.
    async fn comment(&self, w: &Writeback, token: &HeaderValue) -> Result<Posted, TrackerError> {
        let path = format!("/tasks/{}/stories", w.task_gid);
        let text = format!("{}\n\n{}", w.message, marker_text(&w.marker));
        let body = self.send(token, reqwest::Method::POST, &path, &json!({"data": {"text": text}})).await?;
        match body.pointer("/data/gid").and_then(Value::as_str) {
            Some(gid) => Ok(Posted::Now(gid.to_string())),
            // Asana took it (2xx) but its answer lacks the id: the next attempt finds it by its marker.
            None => Err(TrackerError::Passing(format!("Asana's answer on {path} has no data.gid"))),
        }
    }

    /// Whether the token may comment on the tasks of `projects`, without writing: the token's user
    /// (`GET /users/me`), then its membership of each project (`GET /projects/{gid}/project_memberships
    /// ?user=`, `access_level` or the older `write_access`). A viewer cannot comment.
    pub async fn probe(&self, projects: &[String]) -> Result<String, TrackerError> {
        let token = self.token()?;
        let me = self.get(&token, "/users/me", &[("opt_fields", "gid,name")]).await?;
        let Some(user) = me.pointer("/data/gid").and_then(Value::as_str) else {
            return Err(TrackerError::Passing("Asana's /users/me answer has no data.gid".into()));
        };
        let name = me.pointer("/data/name").and_then(Value::as_str).unwrap_or(user).to_string();
        let mut unknown = Vec::new();
        for project in projects.iter().filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) {
            let path = format!("/projects/{project}/project_memberships");
            let query = [("user", user), ("opt_fields", "access_level,write_access")];
            let answer = self.get(&token, &path, &query).await?;
            let memberships = answer.get("data").and_then(Value::as_array).cloned().unwrap_or_default();
            let level = |m: &Value, key: &str| m.get(key).and_then(Value::as_str).map(str::to_string);
            let can_comment = memberships.iter().any(|m| {
                matches!(level(m, "access_level").as_deref(), Some("admin" | "editor" | "commenter"))
                    || matches!(level(m, "write_access").as_deref(), Some("full_write" | "comment_only"))
            });
            if memberships.is_empty() {
                unknown.push(project.clone());
            } else if !can_comment {
                return Err(TrackerError::Refused {
                    why: format!("{name} may only view project {project}"),
                    fix: format!(
                        "give {name} \"Can comment\" or more on the project, use another member's token, or set \
                         writeback = [] on this source"
                    ),
                });
            }
        }
        Ok(match unknown.is_empty() {
            true => format!("{name} may comment on the tasks of every project"),
            false => format!(
                "{name}'s token is valid; no membership of project {} says whether it may comment",
                unknown.join(", ")
            ),
        })
    }

    async fn get(
        &self,
        token: &HeaderValue,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<Value, TrackerError> {
        let answer = self
            .http
            .get(format!("{}{path}", self.api_url))
            .query(query)
            .header(AUTHORIZATION, token.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| transport(path, e))?;
        self.answer(path, answer).await
    }

    /// The gid of the story on `task` that carries `marker`, reading at most [`MAX_STORY_PAGES`].
    async fn find(
        &self,
        task: &str,
        marker: &str,
        token: &HeaderValue,
    ) -> Result<Option<String>, TrackerError> {
        let needle = marker_text(marker);
        self.first_story(task, "text", token, |story| {
            let text = story.get("text").and_then(Value::as_str).unwrap_or_default();
            let gid = story.get("gid").and_then(Value::as_str)?;
            text.contains(&needle).then(|| gid.to_string())
        })
        .await
    }

    /// The first comment on `task` since `since` by one of `answerers` (user gids) that is not one of
    /// executor's own messages: an answer to the run's open question. Reads at most [`MAX_STORY_PAGES`].
    pub async fn answer_since(
        &self,
        task: &str,
        since: DateTime<Utc>,
        answerers: &[String],
    ) -> Result<Option<TrackerAnswer>, TrackerError> {
        if task.is_empty() || !task.bytes().all(|b| b.is_ascii_digit()) || answerers.is_empty() {
            return Ok(None);
        }
        let token = self.token()?;
        let fields = "text,created_at,resource_subtype,created_by.gid,created_by.name";
        self.first_story(task, fields, &token, |story| answer_in(story, since, answerers)).await
    }

    /// The first of `task`'s stories (with `fields`) that `pick` takes, oldest first, reading at most
    /// [`MAX_STORY_PAGES`] pages of 100 (`GET /tasks/{gid}/stories`, paged by `offset`).
    async fn first_story<T>(
        &self,
        task: &str,
        fields: &str,
        token: &HeaderValue,
        mut pick: impl FnMut(&Value) -> Option<T>,
    ) -> Result<Option<T>, TrackerError> {
        let path = format!("/tasks/{task}/stories");
        let mut offset: Option<String> = None;
        for _ in 0..MAX_STORY_PAGES {
            let mut query = vec![("opt_fields", fields.to_string()), ("limit", "100".to_string())];
            if let Some(o) = &offset {
                query.push(("offset", o.clone()));
            }
            let answer = self
                .http
                .get(format!("{}{path}", self.api_url))
                .query(&query)
                .header(AUTHORIZATION, token.clone())
                .header(ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| transport(&path, e))?;
            let body = self.answer(&path, answer).await?;
            let stories = body.get("data").and_then(Value::as_array).cloned().unwrap_or_default();
            if let Some(found) = stories.iter().find_map(&mut pick) {
                return Ok(Some(found));
            }
            offset = body.pointer("/next_page/offset").and_then(Value::as_str).map(str::to_string);
            if offset.is_none() {
                return Ok(None);
            }
        }
        Ok(None)
    }

    fn token(&self) -> Result<HeaderValue, TrackerError> {
        let token = self.token.as_deref().filter(|t| !t.trim().is_empty()).ok_or_else(|| {
            TrackerError::Passing(format!(
                "the Asana token variable {} is not set in the runner's environment",
                self.token_env
            ))
        })?;
        HeaderValue::from_str(&format!("Bearer {}", token.trim())).map_err(|_| TrackerError::Refused {
            why: format!("the Asana token in {} has characters an HTTP header cannot carry", self.token_env),
            fix: format!("export a valid personal access token as {}", self.token_env),
        })
    }

    /// A 2xx answer's JSON; otherwise the error, refused for good or passing.
    async fn answer(&self, path: &str, answer: reqwest::Response) -> Result<Value, TrackerError> {
        let status = answer.status();
        let text = answer.text().await.map_err(|e| transport(path, e))?;
        if status.is_success() {
            return serde_json::from_str(&text)
                .map_err(|e| TrackerError::Passing(format!("Asana's answer on {path} is not JSON: {e}")));
        }
        let message = asana_message(&text).unwrap_or_else(|| status.to_string());
        Err(classify(status, path, &message, &self.token_env))
    }
}

/// A refusal for good (the token, its rights, the task) or a passing fault.
fn classify(status: StatusCode, path: &str, message: &str, token_env: &str) -> TrackerError {
    let why = format!("Asana answered {} on {path}: {message}", status.as_u16());
    let fix = match status.as_u16() {
        401 => format!(
            "the token in {token_env} is wrong, expired or revoked: create a new personal access token \
             (https://app.asana.com/0/my-apps) and export it as {token_env}"
        ),
        403 => format!(
            "the token in {token_env} may read but not comment on this task: use a token of a member of \
             its project with comment rights, or set writeback = [] on this source"
        ),
        404 | 410 => "the task was deleted or moved out of the token's reach; nothing more is sent about it"
            .to_string(),
        400 => "Asana refused the request itself; please report this as a bug in executor".to_string(),
        _ => return TrackerError::Passing(why),
    };
    TrackerError::Refused { why, fix }
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

fn transport(path: &str, error: reqwest::Error) -> TrackerError {
    let kind = if error.is_timeout() { "no answer in time" } else { "failed" };
    // Without the URL: the path is named, and an answer may still have been written.
    TrackerError::Passing(format!("Asana {path}: {kind}: {}", error.without_url()))
}
