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
mod server;
mod state;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::Utc;

pub(crate) use server::{Answer, AnswerBody};
use server::{Shared, dispatch, lock};
// Re-exported for the tests that assert on them; a given test binary may use none.
#[allow(unused_imports)]
pub use state::{
    FakeCheckRun, FakeComment, FakeContext, FakeIssue, FakePr, FakeReview, FakeStatus, FakeThread,
    HOURLY_LIMIT,
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
    /// The request is carried out (a write is applied), then answered with that HTTP status, as when
    /// GitHub's gateway gives up on an answer its backend went on to produce.
    AppliedThen(u16),
    /// The request is carried out this many milliseconds after it arrived, then answered: with more than
    /// the client's `request_timeout`, a write the client gave up on lands later (as when GitHub's
    /// backend is slow), whether or not the client still waits.
    AppliedLate(u64),
    /// The request is carried out at once, and never answered: the client times out on a write that went
    /// through.
    AppliedUnanswered,
    /// The connection is cut in the middle of the answer: the status line and headers arrive, the body
    /// never ends (as a reset connection looks to a client).
    Reset,
}

/// What the client asked for. `rest` counts every REST API request (a 304 too), `not_modified` the
/// 304s among them; `graphql` every POST /graphql; `graphql_points` the points charged. `by_route`
/// is keyed by route names: `pulls_list`, `pulls_by_head`, `issues_list`, `pulls_create`, `labels_add`,
/// `issue_comment_create`, `issue_comments_list`, `repo_get`, `workflow_dispatch`, `actions_runs`, `rerun_failed_jobs`, `job_logs`,
/// `job_log_download`, `not_found`, and `graphql:OPERATION` (e.g. `graphql:Batch`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub rest: usize,
    pub graphql: usize,
    pub graphql_points: u64,
    pub not_modified: usize,
    pub by_route: BTreeMap<String, usize>,
    /// Injected faults served, by kind (`Status(502)`, `Hang`, …: the [`Fault`]'s debug form).
    pub faults: BTreeMap<String, usize>,
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

    /// Sets the diff stat GitHub reports for the PR (`changedFiles`, `additions`, `deletions`).
    pub fn set_diff_stat(&self, repo: &str, number: i64, files: i64, additions: i64, deletions: i64) {
        let mut state = self.state();
        let pr = state.pr_mut(repo, number).expect("known PR");
        (pr.changed_files, pr.additions, pr.deletions) = (files, additions, deletions);
        state.touch(repo, number);
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

    /// The check run's summary (its output's title and summary on GitHub), shown for non-Actions checks.
    pub fn set_check_summary(&self, job_id: i64, summary: &str) {
        self.state().check_run_mut(job_id).expect("known check run").summary = Some(summary.to_string());
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

    /// Opens an issue (open, unassigned, created and updated now) and returns its number.
    pub fn add_issue(&self, repo: &str, title: &str, body: Option<&str>, labels: &[&str]) -> i64 {
        let mut state = self.state();
        let known = state.repo_mut(repo).expect("known repo");
        let number = known.next_number();
        let now = Utc::now();
        known.issues.push(FakeIssue {
            repo: repo.to_string(),
            number,
            title: title.to_string(),
            body: body.map(str::to_string),
            state: "open".into(),
            assignee: None,
            labels: labels.iter().map(|label| label.to_string()).collect(),
            created_at: now,
            updated_at: now,
        });
        number
    }

    /// Changes an issue as `edit` says; `updated_at` moves only if `edit` moves it.
    pub fn edit_issue(&self, repo: &str, number: i64, edit: impl FnOnce(&mut FakeIssue)) {
        let mut state = self.state();
        let known = state.repo_mut(repo).expect("known repo");
        edit(known.issues.iter_mut().find(|issue| issue.number == number).expect("known issue"));
    }

    pub fn issue(&self, repo: &str, number: i64) -> FakeIssue {
        let state = self.state();
        let known = state.repo(repo).expect("known repo");
        known.issues.iter().find(|issue| issue.number == number).cloned().expect("known issue")
    }

    /// Once the `listing`-th issue listing (counting from 1) has been answered, the issue is edited:
    /// its `updated_at` becomes now, which moves it to the end of a listing sorted by update.
    pub fn edit_issue_after_listing(&self, listing: usize, repo: &str, number: i64) {
        self.state().issue_edits_after_listing.push((listing, repo.to_string(), number));
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
        self.add_issue_comment_at(repo, number, author, association, body, Utc::now())
    }

    /// A conversation comment created at `at`, which the API shows as GitHub does, in whole seconds (a
    /// comment posted at 31.9 s reads 31 s); returns its node id.
    pub fn add_issue_comment_at(
        &self,
        repo: &str,
        number: i64,
        author: &str,
        association: &str,
        body: &str,
        at: chrono::DateTime<Utc>,
    ) -> String {
        let mut state = self.state();
        let mut comment = state.new_comment("IC", author, association, body, None);
        comment.created_at = at;
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

    /// A push moved the code under the thread: GitHub marks it outdated and its `line` becomes null.
    pub fn set_thread_outdated(&self, thread_id: &str) {
        let mut state = self.state();
        let (repo, number, index) = state.thread_by_id(thread_id).expect("known thread");
        state.pr_mut(&repo, number).expect("known PR").threads[index].outdated = true;
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

    /// Every pull request of `repo`, open or not, by number.
    pub fn prs(&self, repo: &str) -> Vec<FakePr> {
        self.state().repo(repo).map(|r| r.prs.clone()).unwrap_or_default()
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

    /// The next `times` requests to `route` (a `Counts::by_route` name, e.g. `graphql:AddReview`) get
    /// `fault`, before any queued by [`FakeGitHub::fail_next`]. `PartialErrors` on a mutation applies it.
    pub fn fail_route(&self, route: &str, fault: Fault, times: usize) {
        self.state().route_faults.push((route.to_string(), fault, times));
    }

    /// From now on, pull request `number`'s GraphQL answers are null with an error of their own.
    pub fn fail_pr(&self, number: i64) {
        self.state().failing_prs.push(number);
    }

    /// As [`FakeGitHub::fail_pr`], from the moment the next comment is posted on pull request `number`:
    /// nobody observes it with that comment.
    pub fn fail_pr_once_commented(&self, number: i64) {
        self.state().failing_once_commented.push(number);
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

    /// When the GraphQL points come back whole (`resetAt`); a moment already past resets them at
    /// the next request.
    pub fn set_rate_reset(&self, at: chrono::DateTime<Utc>) {
        self.state().graphql_reset = at;
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

    /// The bodies of the conversation comments on issue `number` (not a pull request), in order.
    pub fn issue_comments(&self, repo: &str, number: i64) -> Vec<String> {
        let state = self.state();
        let list = state.issue_comments.get(&(repo.to_string(), number)).cloned().unwrap_or_default();
        list.iter()
            .filter_map(|c| c.get("body").and_then(serde_json::Value::as_str).map(str::to_string))
            .collect()
    }
}
