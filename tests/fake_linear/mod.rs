//! A fake Linear for the Linear source's and write-back's tests: an in-process HTTP server on
//! 127.0.0.1 answering `POST /graphql` the way Linear's API does, for the root fields executor's
//! documents use — `issues`, `issue`, `comment`, `viewer`, `teams`, `commentCreate`, `issueUpdate`.
//!
//! It parses each document (graphql-parser), takes the root fields' arguments (literals and
//! variables), evaluates `IssueFilter`s generically (`and`/`or`, `some`/`every` on connections, the
//! comparators `eq`, `neq`, `in`, `nin`, `gt`, `gte`, `lt`, `lte`, `eqIgnoreCase`, any field path),
//! orders by `updatedAt` newest first, pages with `first`/`after` and an opaque cursor, and answers
//! with only the fields the document selected (aliases honoured; arguments below the root are not
//! evaluated). Errors come in Linear's shape, `{"errors": [{"message", "extensions": {"code",
//! "userPresentableMessage"}}], "data": null}`: a wrong key `AUTHENTICATION_ERROR` (HTTP 400), a
//! read-only key's write `FORBIDDEN` (400), an unknown or deleted issue or comment `Entity not found`
//! (200), a rate limit `RATELIMITED` (400) with `X-RateLimit-Requests-Remaining`/`-Reset`.
//!
//! Faults: [`Fault`] serves the next request; [`WriteFault`] the next `commentCreate` (applied, then
//! answered late or with a status, or refused). Every request is recorded.
//!
//! Use it with `#[path = "fake_linear/mod.rs"] mod fake_linear;`.
#![allow(dead_code)]

mod filter;
mod resolve;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use graphql_parser::query::{Definition, OperationDefinition, Selection, SelectionSet};
use serde_json::{Map, Value, json};

use resolve::{comment_create, find_issue, issue_update, issues, project, teams, with_team_states};

/// A failure served instead of the next answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `RATELIMITED`, the window resetting after this long.
    RateLimited(Duration),
    /// That HTTP status with a non-JSON body (a proxy's).
    Status(u16),
}

/// A failure served on the next `commentCreate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFault {
    /// The comment is created, and the answer comes only after this long.
    AppliedThenLate(Duration),
    /// The comment is created, and the answer is this status (a 502 from a proxy, say).
    AppliedThenStatus(u16),
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The root fields asked for, in order (`issues`, `commentCreate`, …).
    pub fields: Vec<String>,
    pub variables: Value,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct State {
    key: String,
    read_only_keys: Vec<String>,
    /// Issues as Linear holds them (every field the documents may select).
    issues: Vec<Value>,
    deleted: Vec<String>,
    /// Comments: `{id, issueId, body}`, in order.
    comments: Vec<Value>,
    faults: VecDeque<Fault>,
    write_faults: VecDeque<WriteFault>,
    requests: Vec<Request>,
}

/// The running fake.
#[derive(Clone)]
pub struct FakeLinear {
    /// The endpoint to configure (`api_url`).
    pub url: String,
    state: Arc<Mutex<State>>,
}

/// The workflow states every team of the fake has: (name, type).
pub const STATES: &[(&str, &str)] = &[
    ("Backlog", "backlog"),
    ("Todo", "unstarted"),
    ("In Progress", "started"),
    ("In Review", "started"),
    ("Done", "completed"),
    ("Canceled", "canceled"),
];

/// A UUID-shaped id for test object `n`.
pub fn uuid(n: u64) -> String {
    format!("0b5e55ed-0000-4000-8000-{n:012x}")
}

/// A workflow state of `team` as Linear returns it.
pub fn state(team: &str, name: &str) -> Value {
    let (index, (_, kind)) = STATES.iter().enumerate().find(|(_, (n, _))| *n == name).expect("a known state");
    json!({"id": format!("5a7e0000-0000-4000-8000-{:04x}{index:08x}", team_number(team)), "name": name, "type": kind})
}

fn team_number(team: &str) -> u16 {
    team.bytes().fold(0u16, |a, b| a.wrapping_mul(31).wrapping_add(u16::from(b)))
}

/// An issue as Linear holds it: `n` makes its id, in team `team` and state `state_name`.
pub fn issue(n: u64, team: &str, number: u32, title: &str, state_name: &str, updated_at: &str) -> Value {
    json!({
        "id": uuid(n),
        "identifier": format!("{team}-{number}"),
        "title": title,
        "description": format!("Description of {title}"),
        "url": format!("https://linear.app/acme/issue/{team}-{number}"),
        "createdAt": "2026-10-01T09:00:00.000Z",
        "updatedAt": updated_at,
        "priority": 2,
        "priorityLabel": "High",
        "state": state(team, state_name),
        "team": {
            "id": format!("7ea70000-0000-4000-8000-{:012x}", team_number(team)),
            "key": team,
            "name": format!("Team {team}"),
        },
        "project": {"name": "Mobile"},
        "assignee": {"name": "Alex Doe", "email": "alex@example.com", "isMe": true},
        "labels": {"nodes": [{"name": "executor"}]},
    })
}

impl FakeLinear {
    /// Starts a fake that accepts the API key `key`.
    pub async fn start(key: &str) -> FakeLinear {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(Mutex::new(State { key: key.into(), ..State::default() }));
        let app = axum::Router::new().fallback(handle).with_state(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeLinear { url: format!("http://127.0.0.1:{port}/graphql"), state }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds an issue, or replaces the one with its id (an edit in Linear).
    pub fn put_issue(&self, issue: Value) {
        let mut state = self.lock();
        match state.issues.iter_mut().find(|old| old.get("id") == issue.get("id")) {
            Some(old) => *old = issue,
            None => state.issues.push(issue),
        }
    }

    pub fn delete_issue(&self, id: &str) {
        self.lock().deleted.push(id.to_string());
    }

    /// Accepts `key` for reads; its writes are `FORBIDDEN`.
    pub fn add_read_only_key(&self, key: &str) {
        self.lock().read_only_keys.push(key.to_string());
    }

    pub fn fail_next(&self, fault: Fault) {
        self.lock().faults.push_back(fault);
    }

    pub fn fail_next_write(&self, fault: WriteFault) {
        self.lock().write_faults.push_back(fault);
    }

    /// The bodies of the comments on an issue, in order.
    pub fn comments(&self, issue_id: &str) -> Vec<String> {
        let state = self.lock();
        let on = state.comments.iter().filter(|c| c["issueId"] == issue_id);
        on.filter_map(|c| c["body"].as_str().map(str::to_string)).collect()
    }

    /// The name of the workflow state an issue is in.
    pub fn state_of(&self, issue_id: &str) -> Option<String> {
        let state = self.lock();
        let issue = state.issues.iter().find(|i| i["id"] == issue_id)?;
        issue.pointer("/state/name").and_then(Value::as_str).map(str::to_string)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.lock().requests.clone()
    }

    /// How many requests asked for root field `field`.
    pub fn count(&self, field: &str) -> usize {
        self.lock().requests.iter().filter(|r| r.fields.iter().any(|f| f == field)).count()
    }
}

/// A Linear error answer.
fn error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = json!({"errors": [{"message": message, "extensions": {"code": code, "type": code.to_lowercase(),
        "userPresentableMessage": message}}], "data": null});
    (status, axum::Json(body)).into_response()
}

fn not_found(what: &str) -> Response {
    error(
        StatusCode::OK,
        "INPUT_ERROR",
        &format!("Entity not found: {what} - Could not find referenced {what}."),
    )
}

async fn handle(AxumState(state): AxumState<Arc<Mutex<State>>>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "BAD_USER_INPUT", "the body is not JSON");
    };
    let variables = request.get("variables").cloned().filter(|v| !v.is_null()).unwrap_or_else(|| json!({}));
    let Some(document) = request.get("query").and_then(Value::as_str) else {
        return error(StatusCode::BAD_REQUEST, "BAD_USER_INPUT", "no query");
    };
    let Ok(parsed) = graphql_parser::parse_query::<String>(document) else {
        return error(StatusCode::BAD_REQUEST, "GRAPHQL_PARSE_FAILED", "the document does not parse");
    };
    let Some((mutation, selection)) = parsed.definitions.iter().find_map(|d| match d {
        Definition::Operation(OperationDefinition::Query(q)) => Some((false, q.selection_set.clone())),
        Definition::Operation(OperationDefinition::Mutation(m)) => Some((true, m.selection_set.clone())),
        Definition::Operation(OperationDefinition::SelectionSet(s)) => Some((false, s.clone())),
        _ => None,
    }) else {
        return error(StatusCode::BAD_REQUEST, "BAD_USER_INPUT", "no operation");
    };
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    let (late, response) = {
        let mut state = state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let fields = root_fields(&selection);
        state.requests.push(Request {
            fields,
            variables: variables.clone(),
            authorization: authorization.clone(),
        });
        let read_only = state.read_only_keys.iter().any(|k| authorization.as_deref() == Some(k.as_str()));
        if authorization.as_deref() != Some(state.key.as_str()) && !read_only {
            return error(
                StatusCode::BAD_REQUEST,
                "AUTHENTICATION_ERROR",
                "Authentication required, not authenticated",
            );
        }
        match state.faults.pop_front() {
            Some(Fault::RateLimited(reset)) => {
                let at =
                    chrono::Utc::now().timestamp_millis() + i64::try_from(reset.as_millis()).unwrap_or(0);
                let mut response = error(StatusCode::BAD_REQUEST, "RATELIMITED", "Rate limit exceeded");
                response.headers_mut().insert("x-ratelimit-requests-remaining", 0.into());
                response.headers_mut().insert("x-ratelimit-requests-reset", at.into());
                return response;
            }
            Some(Fault::Status(status)) => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
                return (status, "<html>upstream error</html>").into_response();
            }
            None => {}
        }
        if mutation && read_only {
            return error(StatusCode::BAD_REQUEST, "FORBIDDEN", "You don't have permission to do this.");
        }
        answer(&mut state, &selection, &variables)
    };
    if let Some(wait) = late {
        tokio::time::sleep(wait).await;
    }
    response
}

/// The names of the root fields asked for.
fn root_fields(selection: &SelectionSet<'_, String>) -> Vec<String> {
    let fields = selection.items.iter().filter_map(|s| match s {
        Selection::Field(f) => Some(f.name.clone()),
        _ => None,
    });
    fields.collect()
}

/// The answer to a whole operation, and how long to hold it.
fn answer(
    state: &mut State,
    selection: &SelectionSet<'_, String>,
    vars: &Value,
) -> (Option<Duration>, Response) {
    let mut data = Map::new();
    let mut late = None;
    for item in &selection.items {
        let Selection::Field(field) = item else { continue };
        let args: Map<String, Value> =
            field.arguments.iter().map(|(n, v)| (n.clone(), filter::value(v, vars))).collect();
        let resolved = match field.name.as_str() {
            "issues" => Ok(issues(state, &args)),
            "issue" => {
                find_issue(state, &args["id"]).cloned().map(|issue| with_team_states(&issue)).ok_or("Issue")
            }
            "comment" => {
                let id = args.get("id").cloned().unwrap_or(Value::Null);
                state.comments.iter().find(|c| c["id"] == id).cloned().ok_or("Comment")
            }
            "viewer" => Ok(json!({"id": uuid(77), "name": "Alex Doe", "email": "alex@example.com"})),
            "teams" => Ok(teams(state, &args)),
            "commentCreate" => match comment_create(state, &args) {
                Ok((payload, fault)) => {
                    match fault {
                        Some(WriteFault::AppliedThenStatus(status)) => {
                            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
                            return (None, (status, "<html>Bad Gateway</html>").into_response());
                        }
                        Some(WriteFault::AppliedThenLate(wait)) => late = Some(wait),
                        None => {}
                    }
                    Ok(payload)
                }
                Err(response) => return (None, response),
            },
            "issueUpdate" => issue_update(state, &args),
            other => {
                return (
                    None,
                    error(
                        StatusCode::BAD_REQUEST,
                        "GRAPHQL_VALIDATION_FAILED",
                        &format!("the fake knows no field {other}"),
                    ),
                );
            }
        };
        let value = match resolved {
            Ok(value) => value,
            Err(what) => return (None, not_found(what)),
        };
        let key = field.alias.clone().unwrap_or_else(|| field.name.clone());
        data.insert(key, project(&field.selection_set, &value));
    }
    (late, (StatusCode::OK, axum::Json(json!({"data": data}))).into_response())
}
