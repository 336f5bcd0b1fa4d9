//! The fake GitLab's HTTP side: one handler for every request, which checks the token, counts the
//! request, serves an injected fault, follows pushes to the bare repositories, sends the rate-limit
//! headers, and hands the request to `rest.rs` or `graphql.rs` under the state lock (never held across
//! an await).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::{Body, Bytes};
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

use super::state::{Project, State};
use super::{Fault, graphql, rest};

pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) base: String,
}

pub(super) fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Result<Value, String>,
}

impl Answer {
    pub fn json(status: u16, body: Value) -> Answer {
        Answer { status, headers: Vec::new(), body: Ok(body) }
    }

    pub fn message(status: u16, message: &str) -> Answer {
        Answer::json(status, json!({ "message": message }))
    }

    pub fn text(status: u16, text: String) -> Answer {
        Answer { status, headers: Vec::new(), body: Err(text) }
    }
}

pub(super) async fn dispatch(
    AxumState(shared): AxumState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let query = uri.query().unwrap_or("").to_string();
    let is_graphql = method == Method::POST && path == "/api/graphql";
    let route = if is_graphql { "graphql" } else { rest::route(&method, &path).name };
    let fault = {
        let mut state = lock(&shared);
        if is_graphql {
            state.counts.graphql += 1;
        } else {
            state.counts.rest += 1;
        }
        *state.counts.by_route.entry(route.to_string()).or_insert(0) += 1;
        let token = headers.get("private-token").and_then(|v| v.to_str().ok()).unwrap_or("");
        if token != state.token {
            return respond(Answer::message(401, "401 Unauthorized"), Vec::new());
        }
        let fault = take_fault(&mut state, route);
        if let Some(fault) = fault {
            *state.counts.faults.entry(format!("{fault:?}")).or_insert(0) += 1;
        }
        fault
    };
    match fault {
        Some(Fault::Reset) => return cut_off(),
        Some(Fault::Status(status)) => return respond(Answer::message(status, "Server Error"), Vec::new()),
        Some(Fault::TooMany) => {
            let after = lock(&shared).retry_after_secs.to_string();
            let mut answer = Answer::message(429, "Retry later");
            answer.headers.push(("retry-after".into(), after));
            return respond(answer, Vec::new());
        }
        Some(Fault::Hang) => return std::future::pending().await,
        Some(Fault::AppliedLate(millis)) => {
            // Carried out later, whether or not the client still waits: a task of its own, which the
            // client's hanging up (dropping this handler) does not cancel.
            let request = Request { method, path, query, body, is_graphql };
            let late = tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
                apply(&shared, &request, None).await
            });
            return late.await.unwrap_or_else(|_| cut_off());
        }
        Some(Fault::AppliedUnanswered) => {
            let _ = apply(&shared, &Request { method, path, query, body, is_graphql }, None).await;
            return std::future::pending().await;
        }
        Some(Fault::AppliedThen(_)) | None => {}
    }
    apply(&shared, &Request { method, path, query, body, is_graphql }, fault).await
}

/// What a request asks, kept to carry it out later than it came.
struct Request {
    method: Method,
    path: String,
    query: String,
    body: Bytes,
    is_graphql: bool,
}

/// Carries `request` out and answers it (with `AppliedThen`'s status instead, when that is the fault).
async fn apply(shared: &Shared, request: &Request, fault: Option<Fault>) -> Response {
    refresh_heads(shared).await;
    let mut state = lock(shared);
    let answer = if request.is_graphql {
        let answer = graphql::handle(&state, &shared.base, &request.body);
        move_on_after_graphql(&mut state);
        answer
    } else {
        let route = rest::route(&request.method, &request.path);
        rest::handle(&mut state, &shared.base, &route, &request.query, &request.body)
    };
    let rate = rate_headers(&mut state);
    if let Some(Fault::AppliedThen(status)) = fault {
        // Carried out, and then the answer is lost on the way back.
        return respond(Answer::message(status, "502 Bad Gateway"), rate);
    }
    respond(answer, rate)
}

/// Counts a GraphQL answer down for each change waiting on it, and makes those due.
fn move_on_after_graphql(state: &mut State) {
    let waiting = std::mem::take(&mut state.after_graphql);
    for (left, change) in waiting {
        if left <= 1 {
            change(state);
        } else {
            state.after_graphql.push((left - 1, change));
        }
    }
}

/// The route's own fault first, then the next general one.
fn take_fault(state: &mut State, route: &str) -> Option<Fault> {
    if let Some(i) = state.route_faults.iter().position(|(r, _, times)| r == route && *times > 0) {
        let entry = &mut state.route_faults[i];
        entry.2 -= 1;
        let fault = entry.1;
        if entry.2 == 0 {
            state.route_faults.remove(i);
        }
        return Some(fault);
    }
    let (fault, times) = state.faults.front_mut()?;
    let fault = *fault;
    *times -= 1;
    if *times == 0 {
        state.faults.pop_front();
    }
    Some(fault)
}

/// `RateLimit-Remaining` counted down per request, and `RateLimit-Reset`; after the reset, the budget
/// is whole again.
fn rate_headers(state: &mut State) -> Vec<(String, String)> {
    let Some((remaining, reset)) = state.rate.as_mut() else { return Vec::new() };
    if chrono::Utc::now().timestamp() >= *reset && *remaining == 0 {
        *remaining = 1000;
    }
    *remaining = (*remaining - 1).max(0);
    vec![("ratelimit-remaining".into(), remaining.to_string()), ("ratelimit-reset".into(), reset.to_string())]
}

/// Moves the open merge requests' heads to their branches' (and starts the planned pipeline for each
/// new head), as GitLab follows pushes.
async fn refresh_heads(shared: &Shared) {
    let bares: Vec<(String, PathBuf)> =
        lock(shared).projects.iter().filter_map(|(key, p)| Some((key.clone(), p.bare.clone()?))).collect();
    for (key, bare) in bares {
        let Some(heads) = branch_heads(&bare).await else { continue };
        let mut state = lock(shared);
        let before = std::mem::replace(&mut state.projects.get_mut(&key).unwrap().branches, heads.clone());
        for (branch, sha) in &heads {
            if before.get(branch) == Some(sha) {
                continue;
            }
            if let Some(jobs) = state.project(&key).and_then(Project::push_pipeline) {
                state.add_pipeline(&key, sha, branch, &jobs);
            }
            let moved: Vec<i64> = state.projects[&key]
                .mrs
                .iter()
                .filter(|m| m.state == "opened" && &m.source_branch == branch && &m.head_sha != sha)
                .map(|m| m.iid)
                .collect();
            for iid in moved {
                state.mr(&key, iid).unwrap().head_sha = sha.clone();
                state.touch(&key, iid);
            }
        }
    }
}

async fn branch_heads(bare: &std::path::Path) -> Option<BTreeMap<String, String>> {
    let output = tokio::process::Command::new("git")
        .arg("--git-dir")
        .arg(bare)
        .args(["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"])
        .output()
        .await
        .ok()?;
    Some(heads_of(&output.stdout))
}

/// [`branch_heads`] for a caller outside the runtime (setting a project up).
pub(super) fn branch_heads_now(bare: &std::path::Path) -> BTreeMap<String, String> {
    let output = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(bare)
        .args(["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"])
        .output();
    output.map(|o| heads_of(&o.stdout)).unwrap_or_default()
}

fn heads_of(stdout: &[u8]) -> BTreeMap<String, String> {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .filter_map(|line| {
            let (sha, reference) = line.split_once(' ')?;
            Some((reference.strip_prefix("refs/heads/")?.to_string(), sha.to_string()))
        })
        .collect()
}

/// A 200 whose body breaks off: the connection is reset mid-answer.
fn cut_off() -> Response {
    let parts: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from_static(b"{\"data\": {")),
        Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection reset by the fake")),
    ];
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Body::from_stream(futures_util::stream::iter(parts)))
        .expect("a valid response")
}

fn respond(answer: Answer, extra: Vec<(String, String)>) -> Response {
    let mut builder =
        Response::builder().status(StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK));
    for (name, value) in answer.headers.iter().chain(&extra) {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let body = match answer.body {
        Ok(value) => {
            builder = builder.header("content-type", "application/json");
            Body::from(value.to_string())
        }
        Err(text) => {
            builder = builder.header("content-type", "text/plain");
            Body::from(text)
        }
    };
    builder.body(body).expect("a valid response")
}
