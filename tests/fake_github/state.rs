//! What the fake GitHub knows: repositories, pull requests, the check runs and statuses of commits,
//! review threads, comments and reviews, plus the bookkeeping a test asserts on (counts, writes,
//! rate-limit points). Plain data behind one `Mutex`; the HTTP side is in `rest.rs` and `graphql.rs`.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};

use super::{Counts, Fault, PostedComment};

/// GitHub's hourly budgets: 5000 REST requests, 5000 GraphQL points.
pub const HOURLY_LIMIT: u32 = 5000;

/// One pull request, as a test sees it (`FakeGitHub::pr` hands out clones).
#[derive(Debug, Clone, PartialEq)]
pub struct FakePr {
    pub repo: String,
    pub number: i64,
    /// GraphQL node id, the `$pr` of the mutations.
    pub node_id: String,
    pub title: String,
    pub body: String,
    pub branch: String,
    pub base: String,
    pub draft: bool,
    /// OPEN, MERGED or CLOSED (GraphQL's PullRequestState words).
    pub state: String,
    pub head_sha: String,
    /// The diff stat GitHub reports (`additions`, `deletions`, `changedFiles`): 0 unless a test sets it.
    pub additions: i64,
    pub deletions: i64,
    pub changed_files: i64,
    pub labels: Vec<String>,
    /// MERGEABLE, CONFLICTING or UNKNOWN.
    pub mergeable: String,
    /// CLEAN, DIRTY, UNKNOWN, BLOCKED, BEHIND, DRAFT, HAS_HOOKS, UNSTABLE.
    pub merge_state: String,
    /// Conversation comments, oldest first.
    pub comments: Vec<FakeComment>,
    pub threads: Vec<FakeThread>,
    pub reviews: Vec<FakeReview>,
    pub created_at: DateTime<Utc>,
    /// Bumped by everything GitHub bumps it for (a push, a comment, a label, draft, state); never by
    /// a check run or status, nor by a mergeability change.
    pub updated_at: DateTime<Utc>,
    /// A change counter next to `updated_at`: two changes in one second still change the ETag.
    pub version: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FakeComment {
    pub id: String,
    /// The REST `id` (integer), for conversation comments.
    pub database_id: i64,
    pub author: String,
    pub association: String,
    pub body: String,
    pub created_at: DateTime<Utc>,
    pub path: Option<String>,
    pub line: Option<i64>,
    /// In a review thread: the thread's first comment, for every later one (GitHub's `replyTo`).
    pub reply_to: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FakeThread {
    pub id: String,
    pub path: String,
    pub line: i64,
    pub resolved: bool,
    pub outdated: bool,
    pub comments: Vec<FakeComment>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FakeReview {
    pub id: String,
    pub author: String,
    pub association: String,
    /// COMMENTED, APPROVED, CHANGES_REQUESTED.
    pub state: String,
    pub body: String,
    pub submitted_at: DateTime<Utc>,
    pub commit: String,
}

/// One issue (not a pull request), as a test sees it (`FakeGitHub::issue` hands out clones). Issues
/// and pull requests share one sequence of numbers, as on GitHub.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeIssue {
    pub repo: String,
    pub number: i64,
    pub title: String,
    /// `None` is GitHub's null body (an issue opened without a description).
    pub body: Option<String>,
    /// "open" or "closed" (REST words).
    pub state: String,
    pub assignee: Option<String>,
    pub labels: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A check run or a commit status, reported for one commit.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeContext {
    CheckRun(FakeCheckRun),
    Status(FakeStatus),
}

impl FakeContext {
    pub fn sha(&self) -> &str {
        match self {
            FakeContext::CheckRun(run) => &run.sha,
            FakeContext::Status(status) => &status.sha,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FakeCheckRun {
    pub sha: String,
    pub name: String,
    /// QUEUED, IN_PROGRESS, COMPLETED.
    pub status: String,
    /// SUCCESS, FAILURE, CANCELLED, TIMED_OUT, ACTION_REQUIRED, SKIPPED, NEUTRAL, STARTUP_FAILURE, STALE.
    pub conclusion: Option<String>,
    /// The GitHub Actions job id, which is also the check run's `databaseId`.
    pub job_id: i64,
    pub log: Option<String>,
    pub summary: Option<String>,
    pub details_url: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FakeStatus {
    pub sha: String,
    pub context: String,
    /// SUCCESS, PENDING, FAILURE, ERROR, EXPECTED.
    pub state: String,
    pub target_url: Option<String>,
    pub description: Option<String>,
}

#[derive(Debug, Default)]
pub struct Repo {
    pub owner: String,
    pub name: String,
    /// The bare git repository the runner pushes to; branch heads are read from it.
    pub bare: Option<PathBuf>,
    pub prs: Vec<FakePr>,
    pub issues: Vec<FakeIssue>,
    pub contexts: Vec<FakeContext>,
    /// One GitHub Actions workflow run per commit that has check runs.
    pub runs: BTreeMap<String, i64>,
    /// The bare repository's branch heads as last read (branch → commit).
    pub branches: BTreeMap<String, String>,
}

pub struct State {
    /// The server's port, for URLs in answers.
    pub port: u16,
    pub repos: BTreeMap<String, Repo>,
    /// Source of every id and version number, so ids are unique across kinds and repos.
    pub next_id: i64,
    pub login: String,
    pub token: Option<String>,
    pub latency: Duration,
    pub retry_after_secs: u64,
    pub faults: VecDeque<(Fault, usize)>,
    /// Faults for one route only: (route name, fault, times left).
    pub route_faults: Vec<(String, Fault, usize)>,
    pub counts: Counts,
    pub graphql_remaining: u32,
    pub graphql_reset: DateTime<Utc>,
    pub rest_remaining: u32,
    pub rest_reset: DateTime<Utc>,
    pub dispatches: Vec<(String, String)>,
    pub reruns: Vec<i64>,
    pub posted: Vec<PostedComment>,
    /// (n, repo, issue number): once the n-th issue listing has been answered, that issue is edited
    /// (its `updated_at` becomes now), as by someone while a client pages through the listing.
    pub issue_edits_after_listing: Vec<(usize, String, i64)>,
    /// Pull requests whose GraphQL answer is always null with an error of its own (path to its alias),
    /// as when GitHub times out on one pull request.
    pub failing_prs: Vec<i64>,
    /// Pull requests that join `failing_prs` the moment the next comment is posted on them.
    pub failing_once_commented: Vec<i64>,
    /// Conversation comments on issues (not pull requests), in the REST shape, by (repo, number).
    pub issue_comments: BTreeMap<(String, i64), Vec<serde_json::Value>>,
}

impl State {
    pub fn new() -> State {
        let reset = Utc::now() + chrono::Duration::hours(1);
        State {
            port: 0,
            repos: BTreeMap::new(),
            next_id: 1000,
            login: "executor-bot".to_string(),
            token: None,
            latency: Duration::ZERO,
            retry_after_secs: 60,
            faults: VecDeque::new(),
            route_faults: Vec::new(),
            counts: Counts::default(),
            graphql_remaining: HOURLY_LIMIT,
            graphql_reset: reset,
            rest_remaining: HOURLY_LIMIT,
            rest_reset: reset,
            dispatches: Vec::new(),
            reruns: Vec::new(),
            posted: Vec::new(),
            issue_edits_after_listing: Vec::new(),
            failing_prs: Vec::new(),
            failing_once_commented: Vec::new(),
            issue_comments: BTreeMap::new(),
        }
    }

    /// Where the server answers, for URLs in answers (`html_url`, `url`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn next_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    pub fn repo(&self, repo: &str) -> Option<&Repo> {
        self.repos.get(repo)
    }

    pub fn repo_mut(&mut self, repo: &str) -> Option<&mut Repo> {
        self.repos.get_mut(repo)
    }

    pub fn pr_mut(&mut self, repo: &str, number: i64) -> Option<&mut FakePr> {
        self.repos.get_mut(repo)?.prs.iter_mut().find(|pr| pr.number == number)
    }

    /// Records a change GitHub would show in the PR's `updated_at` (and so in the list's ETag).
    pub fn touch(&mut self, repo: &str, number: i64) {
        let version = self.next_id();
        if let Some(pr) = self.pr_mut(repo, number) {
            pr.version = version;
            pr.updated_at = Utc::now();
        }
    }

    /// The repo and number of the PR with this GraphQL node id.
    pub fn pr_by_node(&self, node_id: &str) -> Option<(String, i64)> {
        self.repos.iter().find_map(|(key, repo)| {
            repo.prs.iter().find(|pr| pr.node_id == node_id).map(|pr| (key.clone(), pr.number))
        })
    }

    /// The repo, PR number and index of the review thread with this node id.
    pub fn thread_by_id(&self, thread_id: &str) -> Option<(String, i64, usize)> {
        self.repos.iter().find_map(|(key, repo)| {
            repo.prs.iter().find_map(|pr| {
                let index = pr.threads.iter().position(|t| t.id == thread_id)?;
                Some((key.clone(), pr.number, index))
            })
        })
    }

    pub fn check_run_mut(&mut self, job_id: i64) -> Option<&mut FakeCheckRun> {
        self.repos.values_mut().flat_map(|repo| repo.contexts.iter_mut()).find_map(|c| match c {
            FakeContext::CheckRun(run) if run.job_id == job_id => Some(run),
            _ => None,
        })
    }

    /// A new comment; `reply_to` for later comments in a review thread.
    pub fn new_comment(
        &mut self,
        prefix: &str,
        author: &str,
        association: &str,
        body: &str,
        place: Option<(&str, i64)>,
    ) -> FakeComment {
        let database_id = self.next_id();
        FakeComment {
            id: format!("{prefix}_{database_id}"),
            database_id,
            author: author.to_string(),
            association: association.to_string(),
            body: body.to_string(),
            created_at: Utc::now(),
            path: place.map(|(path, _)| path.to_string()),
            line: place.map(|(_, line)| line),
            reply_to: None,
        }
    }
}

impl Repo {
    pub fn pr(&self, number: i64) -> Option<&FakePr> {
        self.prs.iter().find(|pr| pr.number == number)
    }

    /// The number of the next issue or pull request (they share one sequence).
    pub fn next_number(&self) -> i64 {
        let prs = self.prs.iter().map(|pr| pr.number);
        prs.chain(self.issues.iter().map(|issue| issue.number)).max().unwrap_or(0) + 1
    }

    /// The check runs and statuses reported for one commit, in the order they were reported.
    pub fn contexts_at<'a>(&'a self, sha: &'a str) -> impl Iterator<Item = &'a FakeContext> + 'a {
        self.contexts.iter().filter(move |c| c.sha() == sha)
    }
}

/// GitHub's timestamp format: ISO-8601 in UTC, seconds, `Z`.
pub fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}
