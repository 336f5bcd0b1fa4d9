//! A fake Asana for the Asana task source's tests: an in-process HTTP server on 127.0.0.1 answering
//! `GET /tasks?project=` / `?section=`, `/projects/{gid}/tasks`, `/sections/{gid}/tasks` and
//! `/user_task_lists/{gid}/tasks` in Asana's documented shape,
//! `{"data": [...], "next_page": {"offset", "path", "uri"} | null}`.
//!
//! It checks the bearer token (401 `{"errors":[{"message":"Not Authorized"}]}`), honours `limit`
//! (1 to 100, else 400) and `offset` (an opaque token it issued), filters by `modified_since`
//! (tasks modified at or after it) on `/tasks` only — as Asana documents it; the other lists ignore
//! it —, serves injected faults (429 with `Retry-After`, any status, a raw body), and records every
//! request for the tests' assertions.
//!
//! Write-back: `GET /users/me` and `GET /projects/{gid}/project_memberships` (an `editor`, or a
//! `viewer` for a read-only token) for `doctor`; `POST /sections/{gid}/addTask` and `PUT /tasks/{gid}`
//! (write-back's actions); `POST /tasks/{gid}/stories` (`{"data": {"text"}}` → `201 {"data": story}`) adds a
//! comment story to a task any container holds (else 404 `task: Unknown object`), and
//! `GET /tasks/{gid}/stories` lists them (`opt_fields`, `limit`, `offset`). A read-only token
//! ([`FakeAsana::add_read_only_token`]) reads but is refused writes (403), and write faults
//! ([`WriteFault`]) serve the next story's write: applied, then answered late or with an error.
//!
//! Use it with `#[path = "fake_asana/mod.rs"] mod fake_asana;`.
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Bytes;
use axum::extract::{Query, State as AxumState};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// A failure served instead of the next answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 429 with `Retry-After: seconds`.
    TooMany { retry_after: u32 },
    /// That status with an Asana error body.
    Status(u16),
    /// 200 `application/json` with exactly these bytes (invalid UTF-8, say).
    Body(&'static [u8]),
}

/// A failure served on the next story written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFault {
    /// The story is added, and the answer comes only after this long: a client that gave up in between
    /// does not know the write went through.
    AppliedThenLate(std::time::Duration),
    /// The story is added, and the answer is this status (a 502 from a proxy, say).
    AppliedThenStatus(u16),
    /// Nothing is added: this status with an Asana error body.
    Refused(u16),
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// The query's parameters, decoded.
    pub query: BTreeMap<String, String>,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct State {
    token: String,
    /// Tokens that read but may not write (403 on a story).
    read_only_tokens: Vec<String>,
    /// Comment stories by task gid, in order.
    stories: BTreeMap<String, Vec<Value>>,
    write_faults: VecDeque<WriteFault>,
    /// Tasks deleted: 404 on their stories.
    deleted: Vec<String>,
    /// Tasks by container path (`/projects/1/tasks`), in order.
    containers: BTreeMap<String, Vec<Value>>,
    faults: VecDeque<Fault>,
    requests: Vec<Request>,
    /// The request (counted from 1) held until `release`, and whether it has arrived.
    hold: Option<(usize, Arc<tokio::sync::Semaphore>)>,
    held: bool,
}

/// The running fake. Dropping it leaves the server running until the test's runtime ends.
#[derive(Clone)]
pub struct FakeAsana {
    /// The API base to configure (`api_url`).
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl FakeAsana {
    /// Starts a fake that accepts `token`.
    pub async fn start(token: &str) -> FakeAsana {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(Mutex::new(State { token: token.into(), ..State::default() }));
        let app = axum::Router::new().fallback(handle).with_state(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeAsana { url: format!("http://127.0.0.1:{port}/api/1.0"), state }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds a task (any JSON, well-formed or not) to a project.
    pub fn add_project_task(&self, project: &str, task: Value) {
        self.add(&format!("/projects/{project}/tasks"), task);
    }

    pub fn add_section_task(&self, section: &str, task: Value) {
        self.add(&format!("/sections/{section}/tasks"), task);
    }

    pub fn add_user_task_list_task(&self, list: &str, task: Value) {
        self.add(&format!("/user_task_lists/{list}/tasks"), task);
    }

    /// Replaces the project task with `task`'s gid (as an edit in Asana would), or adds it.
    pub fn set_project_task(&self, project: &str, task: Value) {
        let mut state = self.lock();
        let tasks = state.containers.entry(format!("/projects/{project}/tasks")).or_default();
        match tasks.iter_mut().find(|old| old.get("gid") == task.get("gid")) {
            Some(old) => *old = task,
            None => tasks.push(task),
        }
    }

    fn add(&self, container: &str, task: Value) {
        self.lock().containers.entry(container.into()).or_default().push(task);
    }

    /// Serves `fault` instead of the next answer (faults queue up, first in first served).
    pub fn fail_next(&self, fault: Fault) {
        self.lock().faults.push_back(fault);
    }

    /// Holds the `n`th request (counted from 1) unanswered until [`release`](Self::release): a test
    /// can look at what the client did with the answers before it.
    pub fn hold_request(&self, n: usize) {
        self.lock().hold = Some((n, Arc::new(tokio::sync::Semaphore::new(0))));
    }

    /// Whether the held request has arrived (and waits).
    pub fn holding(&self) -> bool {
        self.lock().held
    }

    /// Answers the held request (faults queued by then apply to it).
    pub fn release(&self) {
        if let Some((_, gate)) = &self.lock().hold {
            gate.add_permits(1);
        }
    }

    /// Accepts `token` for reads; writes with it are refused with 403 (a read-only token).
    pub fn add_read_only_token(&self, token: &str) {
        self.lock().read_only_tokens.push(token.to_string());
    }

    /// Serves `fault` on the next story written (faults queue up).
    pub fn fail_next_write(&self, fault: WriteFault) {
        self.lock().write_faults.push_back(fault);
    }

    /// Deletes the task: its stories answer 404 from now on.
    pub fn delete_task(&self, gid: &str) {
        self.lock().deleted.push(gid.to_string());
    }

    /// A person's comment on a task (not through the API executor writes with), at this moment.
    pub fn add_comment_by(&self, task: &str, user_gid: &str, name: &str, text: &str) {
        let mut state = self.lock();
        let count: usize = state.stories.values().map(Vec::len).sum();
        let story = json!({
            "gid": format!("8{:05}", count + 1),
            "resource_type": "story",
            "resource_subtype": "comment_added",
            "type": "comment",
            "text": text,
            "created_at": Utc::now().to_rfc3339(),
            "created_by": {"gid": user_gid, "resource_type": "user", "name": name},
            "target": {"gid": task, "resource_type": "task"},
        });
        state.stories.entry(task.to_string()).or_default().push(story);
    }

    /// The texts of the comment stories on a task, in order.
    pub fn comments(&self, gid: &str) -> Vec<String> {
        self.lock()
            .stories
            .get(gid)
            .map(|list| {
                list.iter()
                    .filter_map(|s| s.get("text").and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The gids of the tasks a section holds (added by the test or moved there by `addTask`).
    pub fn section_tasks(&self, section: &str) -> Vec<String> {
        let state = self.lock();
        let list = state.containers.get(&format!("/sections/{section}/tasks")).cloned().unwrap_or_default();
        list.iter().filter_map(|t| t.get("gid").and_then(Value::as_str).map(str::to_string)).collect()
    }

    /// The value a custom field (by gid) shows on the task (in the first container that holds it).
    pub fn custom_field(&self, gid: &str, field: &str) -> Option<String> {
        let state = self.lock();
        let task = state
            .containers
            .values()
            .flatten()
            .find(|t| t.get("gid").and_then(Value::as_str) == Some(gid))?;
        let fields = task.get("custom_fields")?.as_array()?;
        let found = fields.iter().find(|f| f.get("gid").and_then(Value::as_str) == Some(field))?;
        found.get("display_value").and_then(Value::as_str).map(str::to_string)
    }

    /// Whether the task is marked complete (in the first container that holds it).
    pub fn completed(&self, gid: &str) -> bool {
        let state = self.lock();
        let task =
            state.containers.values().flatten().find(|t| t.get("gid").and_then(Value::as_str) == Some(gid));
        task.and_then(|t| t.get("completed")).and_then(Value::as_bool).unwrap_or(false)
    }

    /// How many requests so far (without copying them).
    pub fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.lock().requests.clone()
    }
}

/// A well-formed task as Asana returns it with the source's `opt_fields`.
pub fn task(gid: &str, name: &str, modified_at: &str) -> Value {
    json!({
        "gid": gid,
        "resource_type": "task",
        "name": name,
        "notes": format!("Notes of {name}"),
        "completed": false,
        "assignee": {"gid": "77", "resource_type": "user", "name": "Alex Doe", "email": "alex@example.com"},
        "memberships": [{"section": {"gid": "5", "resource_type": "section", "name": "Backlog"}}],
        "custom_fields": [{"gid": "9", "name": "Platform", "display_value": "macOS"}],
        "permalink_url": format!("https://app.asana.com/0/1/{gid}"),
        "modified_at": modified_at,
    })
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"errors": [{"message": message}]}))).into_response()
}

async fn handle(
    AxumState(state): AxumState<Arc<Mutex<State>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
    body: Bytes,
) -> Response {
    let gate = {
        let mut state = state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let number = state.requests.len() + 1;
        let gate = state.hold.as_ref().filter(|(n, _)| *n == number).map(|(_, gate)| gate.clone());
        state.held |= gate.is_some();
        state.requests.push(Request {
            method: method.to_string(),
            path: uri.path().strip_prefix("/api/1.0").unwrap_or(uri.path()).to_string(),
            query: query.clone(),
            authorization: headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string),
        });
        gate
    };
    if let Some(gate) = gate {
        let _ = gate.acquire().await;
    }
    if let Some(task) =
        uri.path().strip_prefix("/api/1.0/tasks/").and_then(|rest| rest.strip_suffix("/stories"))
    {
        let (late, response) = {
            let mut state = state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let authorization = headers.get("authorization").and_then(|value| value.to_str().ok());
            let read_only = state
                .read_only_tokens
                .iter()
                .any(|token| authorization == Some(format!("Bearer {token}").as_str()));
            if authorization != Some(format!("Bearer {}", state.token).as_str()) && !read_only {
                return error(StatusCode::UNAUTHORIZED, "Not Authorized");
            }
            stories(&mut state, &method, task, &query, &body, read_only)
        };
        if let Some(wait) = late {
            tokio::time::sleep(wait).await;
        }
        return response;
    }
    let mut state = state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let authorization =
        headers.get("authorization").and_then(|value| value.to_str().ok()).map(str::to_string);
    let path = uri.path().strip_prefix("/api/1.0").unwrap_or(uri.path()).to_string();

    let read_only = state
        .read_only_tokens
        .iter()
        .any(|token| authorization.as_deref() == Some(format!("Bearer {token}").as_str()));
    if authorization.as_deref() != Some(format!("Bearer {}", state.token).as_str()) && !read_only {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    match state.faults.pop_front() {
        Some(Fault::TooMany { retry_after }) => {
            let mut response =
                error(StatusCode::TOO_MANY_REQUESTS, "You have made too many requests recently.");
            response.headers_mut().insert("retry-after", retry_after.into());
            return response;
        }
        Some(Fault::Status(status)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return error(status, "Server Error");
        }
        Some(Fault::Body(bytes)) => {
            return (StatusCode::OK, [("content-type", "application/json")], bytes).into_response();
        }
        None => {}
    }
    // Write-back's actions: move a task to a section (Asana answers `{"data": {}}`), update a task.
    if let Some(section) = path.strip_prefix("/sections/").and_then(|rest| rest.strip_suffix("/addTask")) {
        if read_only {
            return error(StatusCode::FORBIDDEN, "Forbidden");
        }
        let gid = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.pointer("/data/task").and_then(Value::as_str).map(str::to_string));
        let Some(gid) = gid else { return error(StatusCode::BAD_REQUEST, "task: Missing input") };
        let Some(task) = state
            .containers
            .values()
            .flatten()
            .find(|t| t.get("gid").and_then(Value::as_str) == Some(&gid))
            .cloned()
        else {
            return error(StatusCode::NOT_FOUND, &format!("task: Unknown object: {gid}"));
        };
        let list = state.containers.entry(format!("/sections/{section}/tasks")).or_default();
        if !list.iter().any(|t| t.get("gid") == task.get("gid")) {
            list.push(task);
        }
        return (StatusCode::OK, axum::Json(json!({"data": {}}))).into_response();
    }
    if method == Method::PUT
        && let Some(gid) = path.strip_prefix("/tasks/").filter(|g| !g.contains('/'))
    {
        if read_only {
            return error(StatusCode::FORBIDDEN, "Forbidden");
        }
        let Some(fields) = serde_json::from_slice::<Value>(&body).ok().and_then(|v| v.get("data").cloned())
        else {
            return error(StatusCode::BAD_REQUEST, "data: Missing input");
        };
        let mut found = None;
        for task in state
            .containers
            .values_mut()
            .flatten()
            .filter(|t| t.get("gid").and_then(Value::as_str) == Some(gid))
        {
            if let (Some(task), Some(fields)) = (task.as_object_mut(), fields.as_object()) {
                for (key, value) in fields {
                    match (key.as_str(), value.as_object()) {
                        // `{"custom_fields": {field gid: value}}` sets those fields' values.
                        ("custom_fields", Some(set)) => {
                            let list = task.entry("custom_fields").or_insert_with(|| json!([]));
                            let Some(list) = list.as_array_mut() else { continue };
                            for (gid, value) in set {
                                list.retain(|f| f.get("gid").and_then(Value::as_str) != Some(gid));
                                list.push(json!({"gid": gid, "display_value": value}));
                            }
                        }
                        _ => {
                            task.insert(key.clone(), value.clone());
                        }
                    }
                }
                found = Some(Value::Object(task.clone()));
            }
        }
        return match found {
            Some(task) => (StatusCode::OK, axum::Json(json!({"data": task}))).into_response(),
            None => error(StatusCode::NOT_FOUND, &format!("task: Unknown object: {gid}")),
        };
    }
    // The token's user, and its membership of a project: a read-only token's user may only view.
    if path == "/users/me" {
        let user =
            json!({"gid": "77", "resource_type": "user", "name": "Alex Doe", "email": "alex@example.com"});
        return (StatusCode::OK, axum::Json(json!({"data": user}))).into_response();
    }
    if let Some(project) =
        path.strip_prefix("/projects/").and_then(|rest| rest.strip_suffix("/project_memberships"))
    {
        if !state.containers.contains_key(&format!("/projects/{project}/tasks")) {
            return error(StatusCode::NOT_FOUND, &format!("project: Unknown object: {project}"));
        }
        let (access, write) = if read_only { ("viewer", "read_only") } else { ("editor", "full_write") };
        let membership = json!({
            "gid": format!("5{project}"),
            "resource_type": "project_membership",
            "user": {"gid": "77", "resource_type": "user", "name": "Alex Doe"},
            "access_level": access,
            "write_access": write,
        });
        let wanted = query.get("user").is_none_or(|user| user == "77" || user == "me");
        let data = if wanted { vec![membership] } else { Vec::new() };
        return (StatusCode::OK, axum::Json(json!({"data": data, "next_page": null}))).into_response();
    }
    // `/tasks` names its list by a parameter; it is the one list that takes `modified_since`.
    let container = if path == "/tasks" {
        match (query.get("project"), query.get("section")) {
            (Some(project), None) => format!("/projects/{project}/tasks"),
            (None, Some(section)) => format!("/sections/{section}/tasks"),
            _ => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "You must specify exactly one of project, tag, section, user task list, or assignee + workspace",
                );
            }
        }
    } else {
        path.clone()
    };
    let Some(tasks) = state.containers.get(&container) else {
        return error(StatusCode::NOT_FOUND, "project: Unknown object");
    };
    let limit = match query.get("limit").map(|limit| limit.parse::<usize>()) {
        None => 100,
        Some(Ok(limit)) if (1..=100).contains(&limit) => limit,
        Some(_) => return error(StatusCode::BAD_REQUEST, "limit: Must be between 1 and 100"),
    };
    let since = match query
        .get("modified_since")
        .filter(|_| path == "/tasks")
        .map(|at| DateTime::parse_from_rfc3339(at))
    {
        None => None,
        Some(Ok(at)) => Some(at.with_timezone(&Utc)),
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "modified_since: Not a valid date-time"),
    };
    let start =
        match query.get("offset").map(|offset| offset.strip_prefix("eyJvZmZzZXQi:").map(str::parse::<usize>))
        {
            None => 0,
            Some(Some(Ok(start))) => start,
            Some(_) => return error(StatusCode::BAD_REQUEST, "offset: Your pagination token is invalid."),
        };
    let matching: Vec<&Value> = tasks
        .iter()
        .filter(|task| {
            let modified = task
                .get("modified_at")
                .and_then(Value::as_str)
                .and_then(|at| DateTime::parse_from_rfc3339(at).ok());
            match (since, modified) {
                (Some(since), Some(modified)) => modified >= since,
                _ => true,
            }
        })
        .collect();
    let page: Vec<Value> = matching.iter().skip(start).take(limit).map(|task| (*task).clone()).collect();
    let next_page = if start + limit < matching.len() {
        let offset = format!("eyJvZmZzZXQi:{}", start + limit);
        let mut next_query: Vec<(String, String)> =
            query.iter().filter(|(key, _)| *key != "offset").map(|(k, v)| (k.clone(), v.clone())).collect();
        next_query.push(("offset".into(), offset.clone()));
        let encoded =
            next_query.iter().map(|(k, v)| format!("{k}={}", encode(v))).collect::<Vec<_>>().join("&");
        let next_path = format!("{path}?{encoded}");
        json!({"offset": offset, "path": next_path, "uri": format!("https://app.asana.com/api/1.0{next_path}")})
    } else {
        Value::Null
    };
    (StatusCode::OK, axum::Json(json!({"data": page, "next_page": next_page}))).into_response()
}

/// `GET` and `POST /tasks/{gid}/stories`, as Asana documents them; with how long to hold the answer.
fn stories(
    state: &mut State,
    method: &Method,
    task: &str,
    query: &BTreeMap<String, String>,
    body: &[u8],
    read_only: bool,
) -> (Option<std::time::Duration>, Response) {
    let exists = !state.deleted.iter().any(|gid| gid == task)
        && state.containers.values().flatten().any(|t| t.get("gid").and_then(Value::as_str) == Some(task));
    if !exists {
        return (None, error(StatusCode::NOT_FOUND, &format!("task: Unknown object: {task}")));
    }
    if *method == Method::GET {
        let all = state.stories.get(task).cloned().unwrap_or_default();
        let limit = query.get("limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(100).clamp(1, 100);
        let start =
            query.get("offset").and_then(|o| o.strip_prefix("st:")).and_then(|o| o.parse().ok()).unwrap_or(0);
        let page: Vec<Value> = all.iter().skip(start).take(limit).cloned().collect();
        let next = if start + limit < all.len() {
            let offset = format!("st:{}", start + limit);
            json!({"offset": offset, "path": format!("/tasks/{task}/stories?limit={limit}&offset={offset}"),
                   "uri": format!("https://app.asana.com/api/1.0/tasks/{task}/stories?limit={limit}&offset={offset}")})
        } else {
            Value::Null
        };
        return (
            None,
            (StatusCode::OK, axum::Json(json!({"data": page, "next_page": next}))).into_response(),
        );
    }
    if *method != Method::POST {
        return (None, error(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed"));
    }
    if read_only {
        return (None, error(StatusCode::FORBIDDEN, "Forbidden"));
    }
    let fault = state.write_faults.pop_front();
    if let Some(WriteFault::Refused(status)) = fault {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (None, error(status, "Server Error"));
    }
    let text = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.pointer("/data/text").and_then(Value::as_str).map(str::to_string));
    let Some(text) = text else {
        return (None, error(StatusCode::BAD_REQUEST, "data: Missing input"));
    };
    let count: usize = state.stories.values().map(Vec::len).sum();
    let story = json!({
        "gid": format!("9{:05}", count + 1),
        "resource_type": "story",
        "resource_subtype": "comment_added",
        "type": "comment",
        "text": text,
        "created_at": Utc::now().to_rfc3339(),
        "created_by": {"gid": "77", "resource_type": "user", "name": "Alex Doe"},
        "target": {"gid": task, "resource_type": "task"},
    });
    state.stories.entry(task.to_string()).or_default().push(story.clone());
    let created = (StatusCode::CREATED, axum::Json(json!({"data": story}))).into_response();
    match fault {
        Some(WriteFault::AppliedThenLate(wait)) => (Some(wait), created),
        Some(WriteFault::AppliedThenStatus(status)) => {
            (None, error(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY), "Bad Gateway"))
        }
        _ => (None, created),
    }
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (byte as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}
