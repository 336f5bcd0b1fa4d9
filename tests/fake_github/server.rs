//! The fake GitHub's HTTP side: one handler for every request, which waits the configured latency,
//! checks the credentials, counts the request, serves an injected fault, follows pushes to the bare
//! repositories, and only then hands the request to `rest.rs` or `graphql.rs` under the state lock.
//! The lock is never held across an await (the handler future must stay `Send`, and the latency of
//! one request must not hold up the others).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::{Body, Bytes};
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;

use super::state::State;
use super::{Fault, graphql, rest};

/// The server's state, shared by the test (setup, assertions) and the request handlers.
pub(super) struct Shared {
    pub(super) state: Mutex<State>,
}

pub(super) fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    // A test that panicked while holding the lock must not hide the real failure behind poisoning.
    shared.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An answer worked out under the lock, turned into an HTTP response afterwards.
pub(crate) struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: AnswerBody,
    /// Mixed into a GET's ETag besides the body (the PRs' versions, which a second-resolution
    /// `updated_at` can miss).
    pub etag_salt: String,
}

pub(crate) enum AnswerBody {
    Json(Value),
    Text(String),
    Empty,
}

impl Answer {
    pub fn json(status: u16, body: Value) -> Answer {
        Answer { status, headers: Vec::new(), body: AnswerBody::Json(body), etag_salt: String::new() }
    }

    pub fn message(status: u16, message: &str) -> Answer {
        Answer::json(
            status,
            serde_json::json!({"message": message, "documentation_url": "https://docs.github.com/rest"}),
        )
    }

    pub fn empty(status: u16) -> Answer {
        Answer { status, headers: Vec::new(), body: AnswerBody::Empty, etag_salt: String::new() }
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> Answer {
        self.headers.push((name.to_string(), value.into()));
        self
    }
}

/// Every request: latency, the log-storage host, authentication, counting, faults, then the route.
pub(super) async fn dispatch(
    AxumState(shared): AxumState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let latency = lock(&shared).latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let path = uri.path().to_string();
    if let Some(job) = path.strip_prefix("/_logs/") {
        return respond(rest::log_download(&mut lock(&shared), job, &headers));
    }
    let is_graphql = method == Method::POST && path == "/graphql";
    let graphql_request = if is_graphql { Some(graphql::parse(&body)) } else { None };
    let route = match &graphql_request {
        Some(Ok(request)) => format!("graphql:{}", request.operation),
        Some(Err(_)) => "graphql:invalid".to_string(),
        None => rest::route(&method, &path, uri.query().unwrap_or("")).name(),
    };

    let fault = {
        let mut state = lock(&shared);
        if is_graphql {
            state.counts.graphql += 1;
        } else {
            state.counts.rest += 1;
        }
        if let Some(refusal) = refuse(&state, &headers) {
            *state.counts.by_route.entry(route).or_insert(0) += 1;
            return respond(refusal);
        }
        let fault = take_route_fault(&mut state, &route).or_else(|| take_fault(&mut state, is_graphql));
        *state.counts.by_route.entry(route).or_insert(0) += 1;
        if let Some(fault) = fault {
            *state.counts.faults.entry(format!("{fault:?}")).or_insert(0) += 1;
        }
        fault
    };
    let request = Request { method, uri, headers, body, graphql_request };
    match fault {
        Some(Fault::Hang) => std::future::pending::<()>().await,
        Some(Fault::Reset) => return cut_off(),
        Some(Fault::AppliedLate(millis)) => {
            // Carried out later, whether or not the client still waits: a task of its own, which the
            // client's hanging up (dropping this handler) does not cancel.
            let late = tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
                apply(&shared, request, None).await
            });
            return late.await.unwrap_or_else(|_| cut_off());
        }
        Some(Fault::AppliedUnanswered) => {
            let _ = apply(&shared, request, None).await;
            return std::future::pending::<Response>().await;
        }
        Some(Fault::PartialErrors | Fault::AppliedThen(_)) | None => {}
        Some(other) => return respond(fault_answer(&lock(&shared), other)),
    }
    apply(&shared, request, fault).await
}

/// A request as the route handlers take it.
struct Request {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    graphql_request: Option<Result<graphql::Request, Answer>>,
}

/// Carries out the request (a write is applied) and answers it, spoiled by `fault` where it says so.
async fn apply(shared: &Shared, request: Request, fault: Option<Fault>) -> Response {
    let Request { method, uri, headers, body, graphql_request } = request;
    let path = uri.path();
    let is_graphql = graphql_request.is_some();
    refresh_heads(shared).await;
    let mut state = lock(shared);
    let mut free = false;
    let answer = match graphql_request {
        Some(Ok(request)) => {
            let mut answer = graphql::handle(&mut state, &request);
            if fault == Some(Fault::PartialErrors) {
                graphql::add_partial_error(&mut answer);
            }
            answer
        }
        Some(Err(answer)) => answer,
        None => {
            let route = rest::route(&method, path, uri.query().unwrap_or(""));
            free = matches!(route, rest::Route::RateLimit);
            rest::handle(&mut state, route, &body, &headers)
        }
    };
    if let Some(Fault::AppliedThen(status)) = fault {
        // Done, and then the answer is lost on the way back.
        return respond(Answer::message(status, "Server Error"));
    }
    respond(if is_graphql { answer } else { rest::finish(&mut state, &method, &headers, answer, free) })
}

fn take_route_fault(state: &mut State, route: &str) -> Option<Fault> {
    let index = state.route_faults.iter().position(|(r, _, times)| r == route && *times > 0)?;
    let entry = &mut state.route_faults[index];
    entry.2 -= 1;
    let fault = entry.1;
    if entry.2 == 0 {
        state.route_faults.remove(index);
    }
    Some(fault)
}

/// 401 without a token (or with the wrong one, when one is set); 403 without a User-Agent, as GitHub.
fn refuse(state: &State, headers: &HeaderMap) -> Option<Answer> {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    let token = authorization.strip_prefix("Bearer ").or_else(|| authorization.strip_prefix("token "));
    let accepted = match (token, &state.token) {
        (None, _) => false,
        (Some(given), Some(expected)) => given == expected,
        (Some(given), None) => !given.is_empty(),
    };
    if !accepted {
        return Some(Answer::message(401, "Bad credentials"));
    }
    if !headers.contains_key("user-agent") {
        return Some(Answer::message(
            403,
            "Request forbidden by administrative rules. Please make sure your request has a User-Agent header",
        ));
    }
    None
}

fn take_fault(state: &mut State, is_graphql: bool) -> Option<Fault> {
    while let Some((fault, times)) = state.faults.front_mut() {
        if *times == 0 {
            state.faults.pop_front();
            continue;
        }
        if *fault == Fault::PartialErrors && !is_graphql {
            return None;
        }
        let fault = *fault;
        *times -= 1;
        if *times == 0 {
            state.faults.pop_front();
        }
        return Some(fault);
    }
    None
}

fn fault_answer(state: &State, fault: Fault) -> Answer {
    let retry_after = state.retry_after_secs.to_string();
    match fault {
        Fault::Status(status) => Answer::message(status, "Server Error"),
        Fault::SecondaryLimit => Answer::message(
            403,
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
        )
        .header("retry-after", retry_after),
        Fault::TooMany => Answer::message(429, "Too Many Requests").header("retry-after", retry_after),
        Fault::Malformed => Answer {
            status: 200,
            headers: vec![("content-type".into(), "application/json; charset=utf-8".into())],
            body: AnswerBody::Text("<html><body>502 Bad Gateway</body></html>".into()),
            etag_salt: String::new(),
        },
        Fault::PartialErrors
        | Fault::Hang
        | Fault::AppliedThen(_)
        | Fault::AppliedLate(_)
        | Fault::AppliedUnanswered
        | Fault::Reset => {
            unreachable!("handled by dispatch")
        }
    }
}

/// Reads the branch heads of every repo that has a bare git repository (one `git for-each-ref` per
/// repo) and moves the open PRs' heads, outside the lock.
async fn refresh_heads(shared: &Shared) {
    let bares: Vec<(String, PathBuf)> =
        lock(shared).repos.iter().filter_map(|(key, repo)| Some((key.clone(), repo.bare.clone()?))).collect();
    for (key, bare) in bares {
        let Some(heads) = branch_heads(&bare).await else { continue };
        let mut state = lock(shared);
        if let Some(repo) = state.repo_mut(&key) {
            repo.branches = heads.clone();
        }
        let moved: Vec<i64> = state.repos[&key]
            .prs
            .iter()
            .filter(|pr| pr.state == "OPEN")
            .filter(|pr| heads.get(&pr.branch).is_some_and(|sha| *sha != pr.head_sha))
            .map(|pr| pr.number)
            .collect();
        for number in moved {
            if let Some(pr) = state.pr_mut(&key, number) {
                pr.head_sha = heads[&pr.branch].clone();
            }
            state.touch(&key, number);
        }
    }
}

/// branch name → commit, from a bare repository.
pub(crate) async fn branch_heads(bare: &std::path::Path) -> Option<BTreeMap<String, String>> {
    let output = tokio::process::Command::new("git")
        .arg("--git-dir")
        .arg(bare)
        .args(["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"])
        .output()
        .await
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let heads = text
        .lines()
        .filter_map(|line| {
            let (sha, reference) = line.split_once(' ')?;
            Some((reference.strip_prefix("refs/heads/")?.to_string(), sha.to_string()))
        })
        .collect();
    Some(heads)
}

/// A 200 whose body breaks off after its first bytes: the server closes the connection mid-answer.
fn cut_off() -> Response {
    let parts: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from_static(b"{\"data\": {")),
        Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection reset by the fake")),
    ];
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json; charset=utf-8")
        .body(Body::from_stream(futures_util::stream::iter(parts)))
        .expect("a valid response")
}

fn respond(answer: Answer) -> Response {
    let mut builder =
        Response::builder().status(StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK));
    let has_content_type = answer.headers.iter().any(|(name, _)| name == "content-type");
    for (name, value) in &answer.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let body = match answer.body {
        AnswerBody::Json(value) => {
            if !has_content_type {
                builder = builder.header("content-type", "application/json; charset=utf-8");
            }
            Body::from(value.to_string())
        }
        AnswerBody::Text(text) => {
            if !has_content_type {
                builder = builder.header("content-type", "text/plain; charset=utf-8");
            }
            Body::from(text)
        }
        AnswerBody::Empty => Body::empty(),
    };
    builder.body(body).expect("a valid response")
}
