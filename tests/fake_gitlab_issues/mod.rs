//! A fake GitLab for the GitLab issues source's and write-back's tests: an in-process HTTP server on
//! 127.0.0.1 answering the REST endpoints executor uses, in the shapes of GitLab's REST API v4:
//!
//! - `GET /api/v4/projects/{id or url-encoded path}` → `{id, path_with_namespace, issues_enabled}`.
//! - `GET /api/v4/projects/{id or path}/issues` with `state` (`opened`, `closed`, `all`), `labels`
//!   (comma-separated, all of them), `assignee_username`, `scope=assigned_to_me` (the token's user is
//!   [`BOT`]), `milestone` (a title), `updated_after` (on or after), `order_by=updated_at`,
//!   `sort=asc`, `per_page` (at most 100) and `page`; any other parameter is GitLab's 400.
//! - `GET|POST /api/v4/projects/{id}/issues/{iid}/notes` (`order_by=created_at`, `sort`, `per_page`,
//!   `page`; a post → 201 with the note, by [`BOT`]).
//!
//! The token goes in `PRIVATE-TOKEN`; anything else is 401. Faults: [`Fault`] serves the next request
//! (a status with `Retry-After`, a dropped connection); [`WriteFault`] the next note posted (applied,
//! then answered with a status, late, or dropped; or refused). [`FakeGitLab::touch_after_listing`]
//! edits an issue right after a listing was answered (an edit during a fetch). Every request is
//! recorded. Use it with `#[path = "fake_gitlab_issues/mod.rs"] mod fake_gitlab_issues;`.
#![allow(dead_code)]

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
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

/// The token's user.
pub const BOT: &str = "executor-bot";
/// The project every issue is in.
pub const PROJECT_ID: u64 = 278_964;
pub const PROJECT_PATH: &str = "acme/platform/app";

/// A failure served on the next note posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFault {
    /// The note is added, and the answer is this status (a 502 from a proxy, say).
    AppliedThenStatus(u16),
    /// The note is added, and the answer comes only after this long.
    AppliedThenLate(Duration),
    /// The note is added, and the connection drops before the answer.
    AppliedThenReset,
    /// Nothing is added: this status with GitLab's error body.
    Refused(u16),
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    /// The path as sent (still percent-encoded).
    pub path: String,
    /// The query, decoded.
    pub query: Vec<(String, String)>,
    pub body: Value,
    pub token: Option<String>,
}

#[derive(Default)]
struct State {
    token: String,
    issues_enabled: bool,
    issues: Vec<Value>,
    /// Notes with `noteable_iid`.
    notes: Vec<Value>,
    faults: VecDeque<Fault>,
    write_faults: VecDeque<WriteFault>,
    /// (listing requests answered, iid, new updated_at): edits made after that many listings.
    touches: Vec<(usize, u64, DateTime<Utc>)>,
    listings: usize,
    requests: Vec<Request>,
    next_id: u64,
}

/// The running fake.
#[derive(Clone)]
pub struct FakeGitLab {
    /// The instance to configure (`[gitlab] url`).
    pub url: String,
    state: Arc<Mutex<State>>,
}

/// GitLab's time format: `2026-11-01T10:00:00.123Z`.
pub fn gitlab_time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// An issue as GitLab returns it: iid `iid` of [`PROJECT_ID`], opened, labelled `executor`, assigned to
/// `alex`, in milestone `v1`.
pub fn issue(iid: u64, title: &str, updated: DateTime<Utc>) -> Value {
    json!({
        "id": 90_000 + iid, "iid": iid, "project_id": PROJECT_ID, "title": title,
        "description": format!("Description of {title}"), "state": "opened",
        "labels": ["executor"], "milestone": {"id": 5, "title": "v1"},
        "assignees": [{"id": 7, "username": "alex", "name": "Alex Doe"}],
        "assignee": {"id": 7, "username": "alex", "name": "Alex Doe"},
        "web_url": format!("https://gitlab.example.com/{PROJECT_PATH}/-/issues/{iid}"),
        "created_at": "2026-10-01T09:00:00.000Z", "updated_at": gitlab_time(updated),
    })
}

impl FakeGitLab {
    /// Starts a fake that accepts `token` in `PRIVATE-TOKEN`.
    pub async fn start(token: &str) -> FakeGitLab {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(Mutex::new(State {
            token: token.into(),
            issues_enabled: true,
            next_id: 500,
            ..State::default()
        }));
        let app = axum::Router::new().fallback(handle).with_state(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeGitLab { url: format!("http://127.0.0.1:{port}"), state }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds an issue, or replaces the one with its iid (an edit in GitLab).
    pub fn put_issue(&self, issue: Value) {
        let mut state = self.lock();
        match state.issues.iter_mut().find(|old| old["iid"] == issue["iid"]) {
            Some(old) => *old = issue,
            None => state.issues.push(issue),
        }
    }

    pub fn delete_issue(&self, iid: u64) {
        self.lock().issues.retain(|i| i["iid"] != iid);
    }

    pub fn disable_issues(&self) {
        self.lock().issues_enabled = false;
    }

    /// After `listings` issue listings were answered, issue `iid` is edited: title `edited`, `at`.
    pub fn touch_after_listing(&self, listings: usize, iid: u64, at: DateTime<Utc>) {
        self.lock().touches.push((listings, iid, at));
    }

    pub fn fail_next(&self, fault: Fault) {
        self.lock().faults.push_back(fault);
    }

    pub fn fail_next_write(&self, fault: WriteFault) {
        self.lock().write_faults.push_back(fault);
    }

    /// A note on issue `iid` by someone else than executor.
    pub fn note_by(&self, iid: u64, username: &str, name: &str, body: &str, at: DateTime<Utc>, system: bool) {
        let mut state = self.lock();
        state.next_id += 1;
        let note = json!({"id": state.next_id, "body": body, "system": system, "noteable_iid": iid,
            "created_at": gitlab_time(at), "author": {"username": username, "name": name}});
        state.notes.push(note);
    }

    /// The bodies of the notes on issue `iid`, in order.
    pub fn notes(&self, iid: u64) -> Vec<String> {
        let state = self.lock();
        let on = state.notes.iter().filter(|n| n["noteable_iid"] == iid);
        on.filter_map(|n| n["body"].as_str().map(str::to_string)).collect()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.lock().requests.clone()
    }

    /// How many requests were `method` on a path ending with `tail`.
    pub fn count(&self, method: &str, tail: &str) -> usize {
        self.lock().requests.iter().filter(|r| r.method == method && r.path.ends_with(tail)).count()
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"message": message}))).into_response()
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
    let token = headers.get("private-token").and_then(|v| v.to_str().ok()).map(str::to_string);
    let path = uri.path().to_string();
    let (late, response) = {
        let mut state = state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.requests.push(Request {
            method: method.to_string(),
            path: path.clone(),
            query: query.clone(),
            body: body.clone(),
            token: token.clone(),
        });
        if token.as_deref() != Some(state.token.as_str()) {
            return error(StatusCode::UNAUTHORIZED, "401 Unauthorized");
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
    let Some(rest) = path.strip_prefix("/api/v4/projects/") else {
        return (None, error(StatusCode::NOT_FOUND, "404 Not Found"));
    };
    let parts: Vec<String> = rest
        .split('/')
        .map(|p| percent_encoding::percent_decode_str(p).decode_utf8_lossy().into_owned())
        .collect();
    let ours = parts.first().is_some_and(|p| *p == PROJECT_PATH || *p == PROJECT_ID.to_string());
    if !ours {
        return (None, error(StatusCode::NOT_FOUND, "404 Project Not Found"));
    }
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let response = match (method.as_str(), &parts[1..]) {
        ("GET", []) => axum::Json(json!({"id": PROJECT_ID, "path_with_namespace": PROJECT_PATH,
            "issues_enabled": state.issues_enabled}))
        .into_response(),
        ("GET", ["issues"]) => return (None, listing(state, query)),
        (_, ["issues", iid, "notes"]) if !state.issues.iter().any(|i| same_iid(&i["iid"], iid)) => {
            error(StatusCode::NOT_FOUND, "404 Issue Not Found")
        }
        ("GET", ["issues", iid, "notes"]) => notes(state, iid, query),
        ("POST", ["issues", iid, "notes"]) => return add_note(state, iid, body),
        _ => error(StatusCode::NOT_FOUND, "404 Not Found"),
    };
    (None, response)
}

/// Whether a JSON iid is the one a path names.
fn same_iid(value: &Value, iid: &str) -> bool {
    iid.parse::<u64>().is_ok_and(|iid| value.as_u64() == Some(iid))
}

fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn paged(items: Vec<Value>, query: &[(String, String)]) -> Vec<Value> {
    let per_page: usize = param(query, "per_page").and_then(|s| s.parse().ok()).unwrap_or(20).min(100);
    let page: usize = param(query, "page").and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    items.into_iter().skip((page - 1) * per_page).take(per_page).collect()
}

fn listing(state: &mut State, query: &[(String, String)]) -> Response {
    const KNOWN: &[&str] = &[
        "state",
        "labels",
        "assignee_username",
        "scope",
        "milestone",
        "updated_after",
        "order_by",
        "sort",
        "per_page",
        "page",
    ];
    if let Some((key, _)) = query.iter().find(|(k, _)| !KNOWN.contains(&k.as_str())) {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": format!("{key} is not known")})))
            .into_response();
    }
    if param(query, "order_by") != Some("updated_at") || param(query, "sort") != Some("asc") {
        return error(StatusCode::BAD_REQUEST, "this fake serves order_by=updated_at&sort=asc only");
    }
    let time = |v: &Value| v.as_str().and_then(|t| DateTime::parse_from_rfc3339(t).ok());
    let after = param(query, "updated_after").map(|t| DateTime::parse_from_rfc3339(t).ok());
    if after == Some(None) {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "updated_after is invalid"})))
            .into_response();
    }
    let labels: Vec<&str> = param(query, "labels").map(|l| l.split(',').collect()).unwrap_or_default();
    let state_wanted = param(query, "state").unwrap_or("all");
    let mut issues: Vec<Value> = state
        .issues
        .iter()
        .filter(|i| state_wanted == "all" || i["state"] == state_wanted)
        .filter(|i| labels.iter().all(|l| i["labels"].as_array().is_some_and(|ls| ls.iter().any(|x| x == l))))
        .filter(|i| {
            let assigned =
                |who: &str| i["assignees"].as_array().is_some_and(|a| a.iter().any(|p| p["username"] == who));
            param(query, "assignee_username").is_none_or(assigned)
                && (param(query, "scope") != Some("assigned_to_me") || assigned(BOT))
        })
        .filter(|i| param(query, "milestone").is_none_or(|m| i["milestone"]["title"] == m))
        .filter(|i| after.flatten().is_none_or(|after| time(&i["updated_at"]).is_some_and(|at| at >= after)))
        .cloned()
        .collect();
    issues.sort_by_key(|i| (time(&i["updated_at"]), i["id"].as_u64()));
    let answer = axum::Json(Value::Array(paged(issues, query))).into_response();
    state.listings += 1;
    let listings = state.listings;
    let due: Vec<(u64, DateTime<Utc>)> =
        state.touches.iter().filter(|(n, ..)| *n == listings).map(|(_, iid, at)| (*iid, *at)).collect();
    for (iid, at) in due {
        if let Some(issue) = state.issues.iter_mut().find(|i| i["iid"] == iid) {
            issue["title"] = json!("edited");
            issue["updated_at"] = json!(gitlab_time(at));
        }
    }
    answer
}

fn notes(state: &State, iid: &str, query: &[(String, String)]) -> Response {
    let mut on: Vec<Value> =
        state.notes.iter().filter(|n| same_iid(&n["noteable_iid"], iid)).cloned().collect();
    if param(query, "sort") != Some("asc") {
        on.reverse(); // GitLab's default: newest first
    }
    axum::Json(Value::Array(paged(on, query))).into_response()
}

fn add_note(state: &mut State, iid: &str, body: &Value) -> (Option<Duration>, Response) {
    let Some(text) = body["body"].as_str().filter(|t| !t.trim().is_empty()) else {
        return (None, error(StatusCode::BAD_REQUEST, "400 (Bad request) \"body\" not given"));
    };
    if let Some(WriteFault::Refused(status)) = state.write_faults.front().copied() {
        state.write_faults.pop_front();
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
        return (None, error(status, "403 Forbidden"));
    }
    state.next_id += 1;
    let note = json!({"id": state.next_id, "body": text, "system": false,
        "noteable_iid": iid.parse::<u64>().unwrap_or_default(), "created_at": gitlab_time(Utc::now()),
        "author": {"username": BOT, "name": "Executor Bot"}});
    state.notes.push(note.clone());
    let answer = (StatusCode::CREATED, axum::Json(note)).into_response();
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
