//! A fake Jira for the Jira source's and write-back's tests: an in-process HTTP server on 127.0.0.1
//! answering the REST endpoints executor uses, in the shapes of Atlassian's published Jira Cloud REST
//! API (v3; the same under `/rest/api/2` for Data Center, where rich text is a string):
//!
//! - `POST /rest/api/3/search/jql` — `{jql, fields, maxResults, nextPageToken}` → `{issues,
//!   nextPageToken?, isLast}`; the token is opaque and absent on the last page. `POST /rest/api/2/search`
//!   pages by `startAt` with `total`. The JQL understood: `project = KEY`, `updated >= "-Nm"`, an
//!   `ORDER BY` (issues come by `updated`, then id); a field it does not know is Jira's 400
//!   (`errorMessages`).
//! - `GET|POST /issue/{id}/comment` (`orderBy=-created`, `startAt`, `maxResults` → `{startAt,
//!   maxResults, total, comments}`; a post → 201 with the comment), `GET /issue/{id}?fields=status`,
//!   `GET|POST /issue/{id}/transitions` ([`workflow`]), `POST /issue/{id}/remotelink` (one link per
//!   `globalId`: 201 made, 200 updated), `GET /myself`.
//!
//! Credentials: Cloud's `Basic base64(email:token)` or a Data Center `Bearer` token; anything else is
//! 401. Faults: [`Fault`] serves the next request (a status with `Retry-After`, a dropped connection);
//! [`WriteFault`] the next comment posted (applied, then answered with a status, late, or dropped).
//! Every request is recorded.
//!
//! Use it with `#[path = "fake_jira/mod.rs"] mod fake_jira;`.
#![allow(dead_code)]

mod search;
pub mod workflow;

// A test with both this fake and another that serves the same faults holds two copies: harmless.
#[allow(clippy::duplicate_mod)]
#[path = "../fake_faults.rs"]
mod faults;
pub use faults::Fault;
use faults::reset;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, State as AxumState};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// A failure served on the next comment posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFault {
    /// The comment is added, and the answer is this status (a 502 from a proxy, say).
    AppliedThenStatus(u16),
    /// The comment is added, and the answer comes only after this long.
    AppliedThenLate(Duration),
    /// The comment is added, and the connection drops before the answer.
    AppliedThenReset,
    /// Nothing is added: this status with Jira's error body.
    Refused(u16),
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Value,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct State {
    /// The `Authorization` header accepted.
    authorization: String,
    issues: Vec<Value>,
    /// `{id, issueId, body, created}`, in order.
    comments: Vec<Value>,
    /// `{issueId, globalId, object}`.
    links: Vec<Value>,
    faults: VecDeque<Fault>,
    write_faults: VecDeque<WriteFault>,
    requests: Vec<Request>,
    next_id: u64,
}

/// The running fake.
#[derive(Clone)]
pub struct FakeJira {
    /// The site to configure (`base_url`).
    pub url: String,
    state: Arc<Mutex<State>>,
}

/// Cloud's basic credentials as the header carries them.
pub fn basic(email: &str, token: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{email}:{token}")))
}

/// Jira's time format: `2026-11-01T10:00:00.000+0000`.
pub fn jira_time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.3f+0000").to_string()
}

/// An issue as Jira returns it: id `10000 + n`, key `{project}-{n}`, in status `status`.
pub fn issue(n: u64, project: &str, summary: &str, status: &str, updated: DateTime<Utc>) -> Value {
    json!({
        "id": (10_000 + n).to_string(),
        "key": format!("{project}-{n}"),
        "self": format!("https://acme.atlassian.net/rest/api/3/issue/{}", 10_000 + n),
        "fields": {
            "summary": summary,
            "description": {"type": "doc", "version": 1, "content": [
                {"type": "paragraph", "content": [{"type": "text", "text": format!("Description of {summary}")}]},
            ]},
            "labels": ["executor"],
            "priority": {"id": "2", "name": "High"},
            "assignee": {"accountId": "5b10a", "displayName": "Alex Doe", "emailAddress": "alex@example.com"},
            "components": [{"id": "10", "name": "Web"}],
            "status": workflow::status(status),
            "issuetype": {"name": "Task"},
            "project": {"key": project, "name": format!("Project {project}")},
            "created": "2026-10-01T09:00:00.000+0000",
            "updated": jira_time(updated),
        },
    })
}

impl FakeJira {
    /// Starts a fake that accepts the `Authorization` header `authorization` ([`basic`], or `Bearer …`).
    pub async fn start(authorization: &str) -> FakeJira {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(Mutex::new(State {
            authorization: authorization.into(),
            next_id: 20_000,
            ..State::default()
        }));
        let app = axum::Router::new().fallback(handle).with_state(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeJira { url: format!("http://127.0.0.1:{port}"), state }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds an issue, or replaces the one with its id (an edit in Jira).
    pub fn put_issue(&self, issue: Value) {
        let mut state = self.lock();
        match state.issues.iter_mut().find(|old| old["id"] == issue["id"]) {
            Some(old) => *old = issue,
            None => state.issues.push(issue),
        }
    }

    pub fn delete_issue(&self, id: &str) {
        self.lock().issues.retain(|i| i["id"] != id);
    }

    pub fn fail_next(&self, fault: Fault) {
        self.lock().faults.push_back(fault);
    }

    pub fn fail_next_write(&self, fault: WriteFault) {
        self.lock().write_faults.push_back(fault);
    }

    /// The comments on issue `id` as plain text (Data Center's string bodies as they are), in order.
    /// A comment on issue `id` by someone else than executor: `author` as Jira Cloud gives it
    /// (`{"accountId", "displayName"}`), `body` in ADF or, for Data Center, a string.
    pub fn comment_by(&self, id: &str, author: Value, body: Value, created: DateTime<Utc>) {
        let mut state = self.state.lock().unwrap();
        state.next_id += 1;
        let comment = json!({"id": state.next_id.to_string(), "issueId": id, "body": body,
            "created": jira_time(created), "author": author});
        state.comments.push(comment);
    }

    pub fn comments(&self, id: &str) -> Vec<String> {
        let state = self.lock();
        let on = state.comments.iter().filter(|c| c["issueId"] == id);
        on.map(|c| executor::jira::adf::to_text(&c["body"])).collect()
    }

    /// The raw bodies of the comments on issue `id`.
    pub fn comment_bodies(&self, id: &str) -> Vec<Value> {
        self.lock().comments.iter().filter(|c| c["issueId"] == id).map(|c| c["body"].clone()).collect()
    }

    /// The remote links on issue `id`: `{globalId, object}`.
    pub fn links(&self, id: &str) -> Vec<Value> {
        self.lock().links.iter().filter(|l| l["issueId"] == id).cloned().collect()
    }

    /// The name of the status issue `id` is in.
    pub fn status_of(&self, id: &str) -> Option<String> {
        let state = self.lock();
        let issue = state.issues.iter().find(|i| i["id"] == id)?;
        issue.pointer("/fields/status/name").and_then(Value::as_str).map(str::to_string)
    }

    /// How many requests so far (without copying them).
    pub fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.lock().requests.clone()
    }

    /// How many requests were `method` on a path ending with `tail`.
    pub fn count(&self, method: &str, tail: &str) -> usize {
        self.lock().requests.iter().filter(|r| r.method == method && r.path.ends_with(tail)).count()
    }
}

/// A Jira error answer.
fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"errorMessages": [message], "errors": {}}))).into_response()
}

async fn handle(
    AxumState(state): AxumState<Arc<Mutex<State>>>,
    method: Method,
    uri: Uri,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    let path = uri.path().to_string();
    let (late, response) = {
        let mut state = state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.requests.push(Request {
            method: method.to_string(),
            path: path.clone(),
            query: query.clone(),
            body: body.clone(),
            authorization: authorization.clone(),
        });
        if authorization.as_deref() != Some(state.authorization.as_str()) {
            return error(StatusCode::UNAUTHORIZED, "Client must be authenticated to access this resource.");
        }
        if let Some(fault) = state.faults.pop_front() {
            return fault.response();
        }
        route(&mut state, &method, &path, &query, &body)
    };
    if let Some(wait) = late {
        tokio::time::sleep(wait).await;
    }
    response
}

/// The answer to one request, and how long to hold it.
fn route(
    state: &mut State,
    method: &Method,
    path: &str,
    query: &[(String, String)],
    body: &Value,
) -> (Option<Duration>, Response) {
    let Some(rest) = path.strip_prefix("/rest/api/3/").or_else(|| path.strip_prefix("/rest/api/2/")) else {
        return (None, error(StatusCode::NOT_FOUND, "no such resource"));
    };
    let cloud = path.starts_with("/rest/api/3/");
    let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let parts: Vec<&str> = rest.split('/').collect();
    let response = match (method.as_str(), parts.as_slice()) {
        ("POST", ["search", "jql"]) if cloud => search::search(&state.issues, body, true),
        ("POST", ["search"]) if !cloud => search::search(&state.issues, body, false),
        ("GET", ["myself"]) => axum::Json(
            json!({"accountId": "5b10a", "displayName": "Executor Bot", "emailAddress": "bot@acme.com"}),
        )
        .into_response(),
        (_, ["issue", id, ..]) if !state.issues.iter().any(|i| i["id"] == *id) => {
            error(StatusCode::NOT_FOUND, "Issue does not exist or you do not have permission to see it.")
        }
        ("GET", ["issue", id]) => {
            let issue = state.issues.iter().find(|i| i["id"] == *id).cloned().unwrap_or_default();
            axum::Json(
                json!({"id": id, "key": issue["key"], "fields": {"status": issue["fields"]["status"]}}),
            )
            .into_response()
        }
        ("GET", ["issue", id, "comment"]) => {
            let mut on: Vec<Value> = state.comments.iter().filter(|c| c["issueId"] == *id).cloned().collect();
            if param("orderBy") == Some("-created") {
                on.reverse();
            }
            let start: usize = param("startAt").and_then(|s| s.parse().ok()).unwrap_or(0);
            let max: usize = param("maxResults").and_then(|s| s.parse().ok()).unwrap_or(50).min(100);
            let page: Vec<Value> = on.iter().skip(start).take(max).cloned().collect();
            axum::Json(json!({"startAt": start, "maxResults": max, "total": on.len(), "comments": page}))
                .into_response()
        }
        ("POST", ["issue", id, "comment"]) => return add_comment(state, id, body, cloud),
        ("GET", ["issue", id, "transitions"]) => {
            let current =
                state.issues.iter().find(|i| i["id"] == *id).map(|i| i["fields"]["status"]["name"].clone());
            let current = current.as_ref().and_then(Value::as_str).unwrap_or("");
            axum::Json(json!({"transitions": workflow::offered(current)})).into_response()
        }
        ("POST", ["issue", id, "transitions"]) => {
            let Some(issue) = state.issues.iter_mut().find(|i| i["id"] == *id) else {
                return (None, error(StatusCode::NOT_FOUND, "Issue does not exist"));
            };
            let current = issue["fields"]["status"]["name"].as_str().unwrap_or("").to_string();
            let wanted = body.pointer("/transition/id").and_then(Value::as_str).unwrap_or("");
            match workflow::offered(&current).iter().find(|t| t["id"] == wanted) {
                Some(t) => {
                    issue["fields"]["status"] = t["to"].clone();
                    StatusCode::NO_CONTENT.into_response()
                }
                None => error(
                    StatusCode::BAD_REQUEST,
                    &format!("Transition id '{wanted}' is not valid for this issue."),
                ),
            }
        }
        ("POST", ["issue", id, "remotelink"]) => {
            let global = body.get("globalId").cloned().unwrap_or(Value::Null);
            let link = json!({"issueId": id, "globalId": global, "object": body["object"]});
            let existing = state
                .links
                .iter()
                .position(|l| l["issueId"] == *id && !global.is_null() && l["globalId"] == global);
            match existing {
                Some(at) => {
                    state.links[at] = link;
                    axum::Json(json!({"id": at + 1})).into_response()
                }
                None => {
                    state.links.push(link);
                    (StatusCode::CREATED, axum::Json(json!({"id": state.links.len()}))).into_response()
                }
            }
        }
        _ => error(StatusCode::NOT_FOUND, "no such resource"),
    };
    (None, response)
}

fn add_comment(state: &mut State, id: &str, body: &Value, cloud: bool) -> (Option<Duration>, Response) {
    let text = &body["body"];
    let valid = match cloud {
        true => text["type"] == "doc" && text["version"] == 1 && text["content"].is_array(),
        false => text.is_string(),
    };
    if !valid {
        return (None, error(StatusCode::BAD_REQUEST, "Comment body is not valid."));
    }
    if let Some(WriteFault::Refused(status)) = state.write_faults.front().copied() {
        state.write_faults.pop_front();
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
        return (None, error(status, "You do not have the permission to comment on this issue."));
    }
    state.next_id += 1;
    let comment = json!({"id": state.next_id.to_string(), "issueId": id, "body": text,
        "created": jira_time(Utc::now()), "author": {"displayName": "Executor Bot"}});
    state.comments.push(comment.clone());
    let answer = (StatusCode::CREATED, axum::Json(comment)).into_response();
    match state.write_faults.pop_front() {
        Some(WriteFault::AppliedThenStatus(status)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            (None, (status, "<html>Bad Gateway</html>").into_response())
        }
        Some(WriteFault::AppliedThenLate(wait)) => (Some(wait), answer),
        Some(WriteFault::AppliedThenReset) => (None, reset()),
        Some(WriteFault::Refused(_)) | None => (None, answer),
    }
}
