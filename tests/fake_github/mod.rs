//! A fake GitHub for the GitHub forge's tests and the benchmark: an in-process HTTP server on
//! 127.0.0.1 answering the GraphQL operations of `src/forge/github/graphql/` and the REST calls the
//! forge makes, in GitHub's documented shapes. Tests seed it (repos, PRs, checks, threads), inject
//! faults, and assert on what the client did (request counts, points spent, comments written).
//!
//! Use it with `#[path = "fake_github/mod.rs"] mod fake_github;` (or `../tests/fake_github/mod.rs`
//! from `benches/`). It depends on no other test module.
//!
//! Faithful where the forge's logic depends on it: a check run finishing does not change the open-PR
//! list's ETag (GitHub does not bump `updated_at` for it), nor does a mergeability change (call
//! [`FakeGitHub::touch`] to simulate something that does); a 304 costs no rate limit; an unknown PR
//! number in a batch is a null alias plus a NOT_FOUND error; the job-log redirect goes to another host
//! (`localhost`), which refuses a request that carries the token.
#![allow(dead_code)]

mod graphql;
mod rest;
mod state;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use chrono::Utc;
use serde_json::Value;

// Re-exported for the tests that assert on them; a given test binary may use none.
#[allow(unused_imports)]
pub use state::{
    FakeCheckRun, FakeComment, FakeContext, FakePr, FakeReview, FakeStatus, FakeThread, HOURLY_LIMIT,
};
use state::{Repo, State};

/// A failure served instead of the normal answer (see [`FakeGitHub::fail_next`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// That HTTP status with a JSON `message`, e.g. 502.
    Status(u16),
    /// 403 with `retry-after` and GitHub's "You have exceeded a secondary rate limit" message.
    SecondaryLimit,
    /// 429 with `retry-after`.
    TooMany,
    /// A GraphQL 200 with `data` (its first PR alias null) AND `errors`. Only GraphQL requests take
    /// this fault; REST requests pass it by.
    PartialErrors,
    /// 200 `application/json` whose body is not JSON.
    Malformed,
    /// Never answers: the client must time out.
    Hang,
}

/// What the client asked for. `rest` counts every REST API request (a 304 too), `not_modified` the
/// 304s among them; `graphql` every POST /graphql; `graphql_points` the points charged. `by_route`
/// is keyed by route names: `pulls_list`, `pulls_by_head`, `pulls_create`, `labels_add`,
/// `issue_comment_create`, `workflow_dispatch`, `actions_runs`, `rerun_failed_jobs`, `job_logs`,
/// `job_log_download`, `not_found`, and `graphql:OPERATION` (e.g. `graphql:Batch`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub rest: usize,
    pub graphql: usize,
    pub graphql_points: u64,
    pub not_modified: usize,
    pub by_route: BTreeMap<String, usize>,
}

impl Counts {
    pub fn route(&self, name: &str) -> usize {
        self.by_route.get(name).copied().unwrap_or(0)
    }
}

/// Something the client wrote to GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostedKind {
    IssueComment,
    /// A reply in a review thread (`reply_to` = the thread id).
    ThreadReply,
    /// A review's body; its line comments follow as `ReviewComment`s.
    Review,
    /// One line comment of a review, which opened a new thread (`reply_to` = the review id).
    ReviewComment,
    /// One label added (`body` = the label's name).
    Label,
    /// A pull request opened (`title`, `body`).
    PullRequest,
    ReadyForReview,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostedComment {
    pub kind: PostedKind,
    pub repo: String,
    pub number: i64,
    /// The new object's node id (comment, review, PR); empty for labels and ready-for-review.
    pub id: String,
    pub title: Option<String>,
    pub body: String,
    pub reply_to: Option<String>,
    pub path: Option<String>,
    pub line: Option<i64>,
}

/// The server's state, shared by the test (setup, assertions) and the request handlers.
struct Shared {
    state: Mutex<State>,
}

/// A running fake GitHub. Cloning shares the same server.
#[derive(Clone)]
pub struct FakeGitHub {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
}

impl FakeGitHub {
    /// Starts the server on the current tokio runtime (it runs as long as the runtime does).
    pub async fn start() -> FakeGitHub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let mut state = State::new();
        state.port = port;
        let shared = Arc::new(Shared { state: Mutex::new(state) });
        let app = axum::Router::new().fallback(dispatch).with_state(shared.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeGitHub { url: format!("http://127.0.0.1:{port}"), shared }
    }

    /// Starts the server on a runtime of its own thread, for synchronous callers (the benchmark).
    pub fn start_in_background() -> FakeGitHub {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("fake GitHub runtime");
            runtime.block_on(async move {
                let _ = sender.send(FakeGitHub::start().await);
                std::future::pending::<()>().await;
            });
        });
        receiver.recv().expect("fake GitHub started")
    }

    /// The REST base (`github.api_url`).
    pub fn api_url(&self) -> String {
        self.url.clone()
    }

    /// `github.graphql_url`.
    pub fn graphql_url(&self) -> String {
        format!("{}/graphql", self.url)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared)
    }

    /// A repository "owner/name". With `bare_repo`, the head of each open PR is read from that git
    /// directory (`refs/heads/BRANCH`) before every answer, as GitHub follows pushes.
    pub fn add_repo(&self, owner: &str, name: &str, bare_repo: Option<PathBuf>) {
        let repo = Repo { owner: owner.into(), name: name.into(), bare: bare_repo, ..Repo::default() };
        self.state().repos.insert(format!("{owner}/{name}"), repo);
    }

    /// Seeds an open PR on base `main` and returns its number.
    pub fn create_pr(&self, repo: &str, branch: &str, title: &str, draft: bool, head_sha: &str) -> i64 {
        let mut state = self.state();
        rest::open_pr(&mut state, repo, branch, "main", title, "", draft, head_sha).expect("known repo")
    }

    pub fn pr(&self, repo: &str, number: i64) -> FakePr {
        self.state().repo(repo).and_then(|r| r.pr(number)).cloned().expect("known PR")
    }

    /// Moves the PR's head (a push), for repos without a bare git repository.
    pub fn set_head(&self, repo: &str, number: i64, sha: &str) {
        let mut state = self.state();
        state.pr_mut(repo, number).expect("known PR").head_sha = sha.to_string();
        state.touch(repo, number);
    }

    /// Reports a GitHub Actions check run for `sha`; returns its job id (= its `databaseId`).
    #[allow(clippy::too_many_arguments)]
    pub fn add_check_run(
        &self,
        repo: &str,
        number: i64,
        sha: &str,
        name: &str,
        status: &str,
        conclusion: Option<&str>,
        job_log: Option<&str>,
    ) -> i64 {
        let _ = number; // checks belong to the commit, not the PR, as on GitHub
        let mut state = self.state();
        let job_id = state.next_id();
        let run_id = state.next_id();
        let url = format!("{}/{repo}/actions/runs/{run_id}/job/{job_id}", self.url);
        let repo = state.repo_mut(repo).expect("known repo");
        repo.runs.entry(sha.to_string()).or_insert(run_id);
        repo.contexts.push(FakeContext::CheckRun(FakeCheckRun {
            sha: sha.into(),
            name: name.into(),
            status: status.into(),
            conclusion: conclusion.map(str::to_string),
            job_id,
            log: job_log.map(str::to_string),
            summary: None,
            details_url: url,
        }));
        job_id
    }

    /// Changes a check run (e.g. it finishes). Like on GitHub, the PR's `updated_at` stays.
    pub fn update_check_run(&self, job_id: i64, status: &str, conclusion: Option<&str>) {
        let mut state = self.state();
        let run = state.check_run_mut(job_id).expect("known check run");
        run.status = status.to_string();
        run.conclusion = conclusion.map(str::to_string);
    }

    /// A commit status (the older Status API) for `sha`.
    pub fn add_status(&self, repo: &str, number: i64, sha: &str, context: &str, state_word: &str) {
        let _ = number;
        let mut state = self.state();
        state.repo_mut(repo).expect("known repo").contexts.push(FakeContext::Status(FakeStatus {
            sha: sha.into(),
            context: context.into(),
            state: state_word.into(),
            target_url: Some(format!("https://ci.example.com/{context}")),
            description: None,
        }));
    }

    /// Opens a review thread with one comment on `path:line`; returns (thread id, comment id).
    #[allow(clippy::too_many_arguments)]
    pub fn add_thread_comment(
        &self,
        repo: &str,
        number: i64,
        author: &str,
        association: &str,
        body: &str,
        path: &str,
        line: i64,
    ) -> (String, String) {
        let mut state = self.state();
        let comment = state.new_comment("PRRC", author, association, body, Some((path, line)));
        let thread_id = format!("PRRT_{}", state.next_id());
        let comment_id = comment.id.clone();
        let thread = FakeThread {
            id: thread_id.clone(),
            path: path.into(),
            line,
            resolved: false,
            outdated: false,
            comments: vec![comment],
        };
        state.pr_mut(repo, number).expect("known PR").threads.push(thread);
        state.touch(repo, number);
        (thread_id, comment_id)
    }

    /// A reply in an existing review thread; returns the comment id.
    pub fn add_thread_reply(&self, thread_id: &str, author: &str, association: &str, body: &str) -> String {
        let mut state = self.state();
        graphql::reply_in_thread(&mut state, thread_id, author, association, body).expect("known thread")
    }

    /// A conversation comment; returns its node id.
    pub fn add_issue_comment(
        &self,
        repo: &str,
        number: i64,
        author: &str,
        association: &str,
        body: &str,
    ) -> String {
        let mut state = self.state();
        let comment = state.new_comment("IC", author, association, body, None);
        let id = comment.id.clone();
        state.pr_mut(repo, number).expect("known PR").comments.push(comment);
        state.touch(repo, number);
        id
    }

    pub fn resolve_thread(&self, thread_id: &str) {
        let mut state = self.state();
        let (repo, number, index) = state.thread_by_id(thread_id).expect("known thread");
        state.pr_mut(&repo, number).expect("known PR").threads[index].resolved = true;
        state.touch(&repo, number);
    }

    /// GitHub recomputes these in the background; the PR's `updated_at` does not move.
    pub fn set_mergeable(&self, repo: &str, number: i64, mergeable: &str, merge_state: &str) {
        let mut state = self.state();
        let pr = state.pr_mut(repo, number).expect("known PR");
        pr.mergeable = mergeable.to_string();
        pr.merge_state = merge_state.to_string();
    }

    /// Bumps the PR's `updated_at` (and so the open-PR list's ETag) without other change.
    pub fn touch(&self, repo: &str, number: i64) {
        self.state().touch(repo, number);
    }

    pub fn merge(&self, repo: &str, number: i64) {
        self.set_pr_state(repo, number, "MERGED");
    }

    pub fn close(&self, repo: &str, number: i64) {
        self.set_pr_state(repo, number, "CLOSED");
    }

    fn set_pr_state(&self, repo: &str, number: i64, word: &str) {
        let mut state = self.state();
        state.pr_mut(repo, number).expect("known PR").state = word.to_string();
        state.touch(repo, number);
    }

    /// Every answer waits this long before being worked out (benchmark: 100 ms).
    pub fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    /// The next `times` requests (GraphQL ones only, for `PartialErrors`) get `fault`. Faults queue up
    /// in the order given.
    pub fn fail_next(&self, fault: Fault, times: usize) {
        self.state().faults.push_back((fault, times));
    }

    /// The `retry-after` seconds of `SecondaryLimit` and `TooMany` (default 60).
    pub fn set_retry_after(&self, seconds: u64) {
        self.state().retry_after_secs = seconds;
    }

    pub fn counts(&self) -> Counts {
        self.state().counts.clone()
    }

    /// GraphQL points left; they reset an hour from now.
    pub fn set_rate_remaining(&self, points: u32) {
        let mut state = self.state();
        state.graphql_remaining = points;
        state.graphql_reset = Utc::now() + chrono::Duration::hours(1);
    }

    /// REST requests left; at 0 GitHub answers 403 "API rate limit exceeded".
    pub fn set_rest_remaining(&self, requests: u32) {
        let mut state = self.state();
        state.rest_remaining = requests;
        state.rest_reset = Utc::now() + chrono::Duration::hours(1);
    }

    /// Only this token is accepted (default: any).
    pub fn set_token(&self, token: &str) {
        self.state().token = Some(token.to_string());
    }

    /// The login of the token's user: the author of everything the client writes.
    pub fn set_login(&self, login: &str) {
        self.state().login = login.to_string();
    }

    /// `workflow_dispatch` events: (workflow file, ref).
    pub fn dispatches(&self) -> Vec<(String, String)> {
        self.state().dispatches.clone()
    }

    /// Workflow run ids whose failed jobs were re-run.
    pub fn reruns(&self) -> Vec<i64> {
        self.state().reruns.clone()
    }

    pub fn posted_comments(&self) -> Vec<PostedComment> {
        self.state().posted.clone()
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
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
async fn dispatch(
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
        *state.counts.by_route.entry(route).or_insert(0) += 1;
        if let Some(refusal) = refuse(&state, &headers) {
            return respond(refusal);
        }
        take_fault(&mut state, is_graphql)
    };
    match fault {
        Some(Fault::Hang) => std::future::pending::<()>().await,
        Some(Fault::PartialErrors) | None => {}
        Some(other) => return respond(fault_answer(&lock(&shared), other)),
    }

    refresh_heads(&shared).await;
    let mut state = lock(&shared);
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
            let route = rest::route(&method, &path, uri.query().unwrap_or(""));
            rest::handle(&mut state, route, &body, &headers)
        }
    };
    respond(if is_graphql { answer } else { rest::finish(&mut state, &method, &headers, answer) })
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
        Fault::PartialErrors | Fault::Hang => unreachable!("handled by dispatch"),
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
