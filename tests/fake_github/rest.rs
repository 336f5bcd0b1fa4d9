//! The REST side of the fake GitHub: pull request lists (with ETags), issue lists (pull requests
//! included, as on GitHub, each with a `pull_request` key), opening PRs, labels,
//! conversation comments, workflow dispatch and re-runs, and job logs behind a redirect to another
//! host. Handlers run under the state lock and return an [`Answer`]; `finish` adds the rate-limit
//! headers, the ETag and the 304.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use axum::http::{HeaderMap, Method};
use chrono::Utc;
use serde_json::{Value, json};

use super::state::{FakeContext, FakeIssue, FakePr, HOURLY_LIMIT, State, iso};
use super::{Answer, AnswerBody, PostedComment, PostedKind};

/// A REST call the fake knows, with its parameters. `RateLimit` (`GET /rate_limit`) is free, as on GitHub:
/// it counts against no limit.
pub enum Route {
    PullsList { repo: String, state: String, per_page: usize },
    PullsByHead { repo: String, branch: String, state: String },
    PullsCreate { repo: String },
    IssuesList(IssuesQuery),
    LabelsAdd { repo: String, number: i64 },
    IssueCommentCreate { repo: String, number: i64 },
    IssueCommentsList { repo: String, number: i64, page: usize, per_page: usize },
    RepoGet { repo: String },
    WorkflowDispatch { repo: String, workflow: String },
    ActionsRuns { repo: String, head_sha: Option<String> },
    RerunFailedJobs { repo: String, run_id: i64 },
    JobLogs { repo: String, job_id: i64 },
    RateLimit,
    NotFound,
}

impl Route {
    pub fn name(&self) -> String {
        match self {
            Route::PullsList { .. } => "pulls_list",
            Route::PullsByHead { .. } => "pulls_by_head",
            Route::PullsCreate { .. } => "pulls_create",
            Route::IssuesList(_) => "issues_list",
            Route::LabelsAdd { .. } => "labels_add",
            Route::IssueCommentCreate { .. } => "issue_comment_create",
            Route::IssueCommentsList { .. } => "issue_comments_list",
            Route::RepoGet { .. } => "repo_get",
            Route::WorkflowDispatch { .. } => "workflow_dispatch",
            Route::ActionsRuns { .. } => "actions_runs",
            Route::RerunFailedJobs { .. } => "rerun_failed_jobs",
            Route::JobLogs { .. } => "job_logs",
            Route::RateLimit => "rate_limit",
            Route::NotFound => "not_found",
        }
        .to_string()
    }
}

pub fn route(method: &Method, path: &str, query: &str) -> Route {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if method == Method::GET && segments == ["rate_limit"] {
        return Route::RateLimit;
    }
    let params = parse_query(query);
    let param = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let ["repos", owner, name, rest @ ..] = segments.as_slice() else { return Route::NotFound };
    let repo = format!("{owner}/{name}");
    let number = |s: &str| s.parse::<i64>().ok();
    match (method.as_str(), rest) {
        ("GET", ["pulls"]) => {
            let state = param("state").unwrap_or_else(|| "open".into());
            match param("head") {
                // `head` is "owner:branch"; GitHub ignores a head without the owner.
                Some(head) => {
                    let branch = head.split_once(':').map(|(_, b)| b.to_string()).unwrap_or_default();
                    Route::PullsByHead { repo, branch, state }
                }
                None => {
                    let per_page = param("per_page").and_then(|n| n.parse().ok()).unwrap_or(30usize);
                    Route::PullsList { repo, state, per_page: per_page.clamp(1, 100) }
                }
            }
        }
        ("POST", ["pulls"]) => Route::PullsCreate { repo },
        ("GET", ["issues"]) => Route::IssuesList(IssuesQuery {
            repo,
            state: param("state").unwrap_or_else(|| "open".into()),
            // Split before decoding: an encoded ',' inside a name is not a separator.
            labels: raw_param(query, "labels")
                .map(|raw| raw.split(',').map(decode).filter(|label| !label.is_empty()).collect())
                .unwrap_or_default(),
            since: param("since"),
            sort: param("sort").unwrap_or_else(|| "created".into()),
            direction: param("direction").unwrap_or_else(|| "desc".into()),
            page: param("page").and_then(|n| n.parse().ok()).unwrap_or(1usize).max(1),
            per_page: param("per_page").and_then(|n| n.parse().ok()).unwrap_or(30usize).clamp(1, 100),
        }),
        ("POST", ["issues", n, "labels"]) => match number(n) {
            Some(number) => Route::LabelsAdd { repo, number },
            None => Route::NotFound,
        },
        ("POST", ["issues", n, "comments"]) => match number(n) {
            Some(number) => Route::IssueCommentCreate { repo, number },
            None => Route::NotFound,
        },
        ("GET", []) => Route::RepoGet { repo },
        ("GET", ["issues", n, "comments"]) => match number(n) {
            Some(number) => Route::IssueCommentsList {
                repo,
                number,
                page: param("page").and_then(|n| n.parse().ok()).unwrap_or(1usize).max(1),
                per_page: param("per_page").and_then(|n| n.parse().ok()).unwrap_or(30usize).clamp(1, 100),
            },
            None => Route::NotFound,
        },
        ("POST", ["actions", "workflows", workflow, "dispatches"]) => {
            Route::WorkflowDispatch { repo, workflow: workflow.to_string() }
        }
        ("GET", ["actions", "runs"]) => Route::ActionsRuns { repo, head_sha: param("head_sha") },
        ("POST", ["actions", "runs", id, "rerun-failed-jobs"]) => match number(id) {
            Some(run_id) => Route::RerunFailedJobs { repo, run_id },
            None => Route::NotFound,
        },
        ("GET", ["actions", "jobs", id, "logs"]) => match number(id) {
            Some(job_id) => Route::JobLogs { repo, job_id },
            None => Route::NotFound,
        },
        _ => Route::NotFound,
    }
}

pub fn handle(state: &mut State, route: Route, body: &[u8], _headers: &HeaderMap) -> Answer {
    if state.rest_remaining == 0 && !matches!(route, Route::RateLimit) {
        return Answer::message(403, "API rate limit exceeded for user ID 1.");
    }
    let known = |repo: &str| state.repo(repo).is_some();
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match route {
        Route::NotFound => not_found(),
        Route::RateLimit => rate_limit(state),
        Route::PullsList { ref repo, .. }
        | Route::PullsByHead { ref repo, .. }
        | Route::PullsCreate { ref repo }
            if !known(repo) =>
        {
            not_found()
        }
        Route::PullsList { repo, state: wanted, per_page } => {
            let mut prs: Vec<&FakePr> =
                state.repos[&repo].prs.iter().filter(|pr| state_matches(pr, &wanted)).collect();
            prs.sort_by_key(|pr| std::cmp::Reverse(pr.version));
            prs.truncate(per_page);
            let salt = prs.iter().map(|pr| format!("{}:{} ", pr.number, pr.version)).collect();
            let list = prs.iter().map(|pr| pr_json(state, pr)).collect();
            Answer { etag_salt: salt, ..Answer::json(200, Value::Array(list)) }
        }
        Route::PullsByHead { repo, branch, state: wanted } => {
            let list = state.repos[&repo]
                .prs
                .iter()
                .filter(|pr| pr.branch == branch && state_matches(pr, &wanted))
                .map(|pr| pr_json(state, pr))
                .collect();
            Answer::json(200, Value::Array(list))
        }
        Route::PullsCreate { repo } => create_pr(state, &repo, &body),
        Route::IssuesList(query) => match state.repo(&query.repo) {
            Some(_) => list_issues(state, &query),
            None => not_found(),
        },
        Route::LabelsAdd { repo, number } => add_labels(state, &repo, number, &body),
        Route::IssueCommentCreate { repo, number } => add_comment(state, &repo, number, &body),
        Route::RepoGet { repo } => match state.repo(&repo) {
            Some(_) => {
                let (owner, name) = repo.split_once('/').unwrap_or((repo.as_str(), ""));
                Answer::json(
                    200,
                    json!({
                        "id": 1,
                        "name": name,
                        "full_name": repo,
                        "owner": {"login": owner},
                        "private": true,
                        "has_issues": true,
                        "default_branch": "main",
                        "permissions": {"admin": false, "maintain": false, "push": true, "triage": true, "pull": true},
                    }),
                )
            }
            None => not_found(),
        },
        Route::IssueCommentsList { repo, number, page, per_page } => {
            let is_issue = state.repo(&repo).is_some_and(|r| r.issues.iter().any(|i| i.number == number));
            if !is_issue {
                return not_found();
            }
            let all = state.issue_comments.get(&(repo, number)).cloned().unwrap_or_default();
            let list = all.into_iter().skip((page - 1) * per_page).take(per_page).collect();
            Answer::json(200, Value::Array(list))
        }
        Route::WorkflowDispatch { repo, workflow } => {
            let Some(reference) = body.get("ref").and_then(Value::as_str) else {
                return Answer::message(422, "Invalid request.\n\n\"ref\" wasn't supplied.");
            };
            if !known(&repo) {
                return not_found();
            }
            state.dispatches.push((workflow, reference.to_string()));
            Answer::empty(204)
        }
        Route::ActionsRuns { repo, head_sha } => match state.repo(&repo) {
            Some(r) => {
                let runs: Vec<Value> = r
                    .runs
                    .iter()
                    .filter(|(sha, _)| head_sha.as_deref().is_none_or(|wanted| wanted == sha.as_str()))
                    .map(|(sha, id)| workflow_run_json(state, &repo, sha, *id))
                    .collect();
                Answer::json(200, json!({"total_count": runs.len(), "workflow_runs": runs}))
            }
            None => not_found(),
        },
        Route::RerunFailedJobs { repo, run_id } => {
            match state.repo(&repo).is_some_and(|r| r.runs.values().any(|id| *id == run_id)) {
                true => {
                    state.reruns.push(run_id);
                    Answer::empty(201)
                }
                false => not_found(),
            }
        }
        Route::JobLogs { repo, job_id } => {
            let exists = state.repo(&repo).is_some_and(|r| {
                r.contexts.iter().any(|c| matches!(c, FakeContext::CheckRun(run) if run.job_id == job_id))
            });
            match exists {
                // GitHub redirects to a pre-signed URL on a storage host; "localhost" is another host
                // than the API's 127.0.0.1, so a client that keeps the token across hosts is caught.
                true => Answer::empty(302)
                    .header("location", format!("http://localhost:{}/_logs/{job_id}", state.port)),
                false => not_found(),
            }
        }
    }
}

/// `GET /repos/{o}/{r}/issues`'s parameters, GitHub's defaults filled in.
pub struct IssuesQuery {
    repo: String,
    /// open, closed or all.
    state: String,
    /// Every one must be on an item (case-insensitive, as on GitHub).
    labels: Vec<String>,
    since: Option<String>,
    /// created or updated (GitHub also has `comments`, not served here).
    sort: String,
    /// asc or desc.
    direction: String,
    page: usize,
    per_page: usize,
}

/// The issues and pull requests of a repository in the issues API's shape, filtered, sorted and cut
/// to one page; then any edit a test scheduled for after this listing.
fn list_issues(state: &mut State, query: &IssuesQuery) -> Answer {
    let since = match query.since.as_deref().map(chrono::DateTime::parse_from_rfc3339) {
        None => None,
        Some(Ok(at)) => Some(at.with_timezone(&Utc)),
        Some(Err(_)) => {
            return validation_failed(json!({"resource": "Issue", "field": "since", "code": "invalid"}));
        }
    };
    let repo = &state.repos[&query.repo];
    let wanted = |word: &str, labels: &[String], updated_at: chrono::DateTime<Utc>| {
        let state_ok = query.state == "all" || query.state == word;
        let labels_ok = query.labels.iter().all(|l| labels.iter().any(|have| have.eq_ignore_ascii_case(l)));
        state_ok && labels_ok && since.is_none_or(|since| updated_at >= since)
    };
    let by_update = query.sort == "updated";
    // (sort key, number, the item); only the page's items are made JSON.
    let mut items: Vec<(chrono::DateTime<Utc>, i64, Result<&FakeIssue, &FakePr>)> = Vec::new();
    for issue in repo.issues.iter().filter(|i| wanted(&i.state, &i.labels, i.updated_at)) {
        let key = if by_update { issue.updated_at } else { issue.created_at };
        items.push((key, issue.number, Ok(issue)));
    }
    for pr in &repo.prs {
        let word = if pr.state == "OPEN" { "open" } else { "closed" };
        if wanted(word, &pr.labels, pr.updated_at) {
            let key = if by_update { pr.updated_at } else { pr.created_at };
            items.push((key, pr.number, Err(pr)));
        }
    }
    items.sort_by_key(|(key, number, _)| (*key, *number));
    if query.direction != "asc" {
        items.reverse();
    }
    let page: Vec<Value> = items
        .into_iter()
        .skip((query.page - 1) * query.per_page)
        .take(query.per_page)
        .map(|(_, _, item)| match item {
            Ok(issue) => issue_json(state, issue),
            Err(pr) => pr_as_issue_json(state, pr),
        })
        .collect();
    let listing = state.counts.route("issues_list");
    let due: Vec<(String, i64)> = state
        .issue_edits_after_listing
        .iter()
        .filter(|(after, _, _)| *after == listing)
        .map(|(_, repo, number)| (repo.clone(), *number))
        .collect();
    for (repo, number) in due {
        let issue = state.repo_mut(&repo).and_then(|r| r.issues.iter_mut().find(|i| i.number == number));
        if let Some(issue) = issue {
            issue.updated_at = Utc::now();
        }
    }
    Answer::json(200, Value::Array(page))
}

/// An issue in the REST shape (the fields of GitHub's issue object the source reads, and a few more).
fn issue_json(state: &State, issue: &FakeIssue) -> Value {
    json!({
        "url": format!("{}/repos/{}/issues/{}", state.base_url(), issue.repo, issue.number),
        "html_url": format!("{}/{}/issues/{}", state.base_url(), issue.repo, issue.number),
        "node_id": format!("I_kwDO{}", issue.number),
        "number": issue.number,
        "title": issue.title,
        "body": issue.body,
        "state": issue.state,
        "user": {"login": state.login},
        "assignee": issue.assignee.as_ref().map(|login| json!({"login": login})),
        "assignees": issue.assignee.iter().map(|login| json!({"login": login})).collect::<Vec<_>>(),
        "labels": issue.labels.iter().map(|name| label_json(name)).collect::<Vec<_>>(),
        "comments": 0,
        "created_at": iso(issue.created_at),
        "updated_at": iso(issue.updated_at),
        "closed_at": if issue.state == "closed" { json!(iso(issue.updated_at)) } else { Value::Null },
    })
}

/// A pull request as the issues API lists it: an issue with a `pull_request` key.
fn pr_as_issue_json(state: &State, pr: &FakePr) -> Value {
    json!({
        "url": format!("{}/repos/{}/issues/{}", state.base_url(), pr.repo, pr.number),
        "html_url": html_url(state, pr),
        "node_id": pr.node_id,
        "number": pr.number,
        "title": pr.title,
        "body": pr.body,
        "state": if pr.state == "OPEN" { "open" } else { "closed" },
        "user": {"login": state.login},
        "assignee": null,
        "assignees": [],
        "labels": pr.labels.iter().map(|name| label_json(name)).collect::<Vec<_>>(),
        "created_at": iso(pr.created_at),
        "updated_at": iso(pr.updated_at),
        "pull_request": {
            "url": format!("{}/repos/{}/pulls/{}", state.base_url(), pr.repo, pr.number),
            "html_url": html_url(state, pr),
            "merged_at": if pr.state == "MERGED" { json!(iso(pr.updated_at)) } else { Value::Null },
        },
    })
}

/// The storage host's answer: the job's log as text, and never to a request carrying a token.
pub fn log_download(state: &mut State, job: &str, headers: &HeaderMap) -> Answer {
    *state.counts.by_route.entry("job_log_download".into()).or_insert(0) += 1;
    if headers.contains_key("authorization") {
        return Answer::message(401, "Authorization header not allowed on a pre-signed URL");
    }
    let log = job.parse::<i64>().ok().and_then(|id| state.check_run_mut(id)).and_then(|run| run.log.clone());
    match log {
        Some(text) => Answer { body: AnswerBody::Text(text), ..Answer::empty(200) },
        None => Answer::message(404, "BlobNotFound"),
    }
}

/// GitHub's `GET /rate_limit`: what is left of each budget (the GraphQL one as `graphql`).
fn rate_limit(state: &State) -> Answer {
    let now = Utc::now();
    // A GraphQL budget whose hour is over is whole again at the next query (see graphql::handle).
    let (graphql_remaining, graphql_reset) = match now >= state.graphql_reset {
        true => (HOURLY_LIMIT, now + chrono::Duration::hours(1)),
        false => (state.graphql_remaining, state.graphql_reset),
    };
    let bucket = |remaining: u32, reset: chrono::DateTime<Utc>| {
        json!({"limit": HOURLY_LIMIT, "remaining": remaining, "used": HOURLY_LIMIT.saturating_sub(remaining),
               "reset": reset.timestamp()})
    };
    let core = bucket(state.rest_remaining, state.rest_reset);
    Answer::json(
        200,
        json!({"resources": {"core": core, "graphql": bucket(graphql_remaining, graphql_reset)}, "rate": core}),
    )
}

/// Rate-limit headers on every REST answer; an ETag on GET answers and a 304 when it matches
/// `If-None-Match` (which, as on GitHub, costs no rate limit). A `free` answer (`/rate_limit`) costs none
/// either.
pub fn finish(
    state: &mut State,
    method: &Method,
    headers: &HeaderMap,
    mut answer: Answer,
    free: bool,
) -> Answer {
    if *method == Method::GET
        && answer.status == 200
        && let AnswerBody::Json(body) = &answer.body
    {
        let mut hasher = DefaultHasher::new();
        body.to_string().hash(&mut hasher);
        answer.etag_salt.hash(&mut hasher);
        let etag = format!("W/\"{:016x}\"", hasher.finish());
        let given = headers.get("if-none-match").and_then(|v| v.to_str().ok()).unwrap_or("");
        if strip_weak(given) == strip_weak(&etag) {
            state.counts.not_modified += 1;
            return rate_headers(state, Answer::empty(304).header("etag", etag));
        }
        answer = answer.header("etag", etag);
    }
    if !free {
        state.rest_remaining = state.rest_remaining.saturating_sub(1);
    }
    rate_headers(state, answer)
}

fn rate_headers(state: &State, answer: Answer) -> Answer {
    answer
        .header("x-ratelimit-limit", HOURLY_LIMIT.to_string())
        .header("x-ratelimit-remaining", state.rest_remaining.to_string())
        .header("x-ratelimit-used", (HOURLY_LIMIT.saturating_sub(state.rest_remaining)).to_string())
        .header("x-ratelimit-reset", state.rest_reset.timestamp().to_string())
        .header("x-ratelimit-resource", "core")
}

fn strip_weak(etag: &str) -> &str {
    let etag = etag.trim();
    etag.strip_prefix("W/").unwrap_or(etag)
}

fn not_found() -> Answer {
    Answer::message(404, "Not Found")
}

fn state_matches(pr: &FakePr, wanted: &str) -> bool {
    match wanted {
        "all" => true,
        "closed" => pr.state != "OPEN",
        _ => pr.state == "OPEN",
    }
}

/// A pull request in the REST shape (the fields of GitHub's "pull request simple" the forge reads,
/// and a few more).
fn pr_json(state: &State, pr: &FakePr) -> Value {
    let owner = pr.repo.split('/').next().unwrap_or_default();
    json!({
        "url": format!("{}/repos/{}/pulls/{}", state.base_url(), pr.repo, pr.number),
        "html_url": html_url(state, pr),
        "node_id": pr.node_id,
        "number": pr.number,
        "state": if pr.state == "OPEN" { "open" } else { "closed" },
        "title": pr.title,
        "body": pr.body,
        "draft": pr.draft,
        "user": {"login": state.login},
        "labels": pr.labels.iter().map(|name| label_json(name)).collect::<Vec<_>>(),
        "created_at": iso(pr.created_at),
        "updated_at": iso(pr.updated_at),
        "closed_at": if pr.state == "OPEN" { Value::Null } else { json!(iso(pr.updated_at)) },
        "merged_at": if pr.state == "MERGED" { json!(iso(pr.updated_at)) } else { Value::Null },
        "head": {"label": format!("{owner}:{}", pr.branch), "ref": pr.branch, "sha": pr.head_sha},
        "base": {"label": format!("{owner}:{}", pr.base), "ref": pr.base},
    })
}

pub fn html_url(state: &State, pr: &FakePr) -> String {
    format!("{}/{}/pull/{}", state.base_url(), pr.repo, pr.number)
}

fn label_json(name: &str) -> Value {
    json!({"name": name, "color": "ededed", "default": false, "description": null})
}

/// Opens a PR (seeded by a test or created through the API). The head is the bare repo's branch
/// when `head_sha` is empty.
#[allow(clippy::too_many_arguments)]
pub fn open_pr(
    state: &mut State,
    repo: &str,
    branch: &str,
    base: &str,
    title: &str,
    body: &str,
    draft: bool,
    head_sha: &str,
) -> Option<i64> {
    let id = state.next_id();
    let known = state.repo_mut(repo)?;
    let number = known.next_number();
    let head_sha = match head_sha {
        "" => known.branches.get(branch).cloned().unwrap_or_default(),
        sha => sha.to_string(),
    };
    let now = Utc::now();
    known.prs.push(FakePr {
        repo: repo.to_string(),
        number,
        node_id: format!("PR_kwDO{id}"),
        title: title.into(),
        body: body.into(),
        branch: branch.into(),
        base: base.into(),
        draft,
        state: "OPEN".into(),
        head_sha,
        additions: 0,
        deletions: 0,
        changed_files: 0,
        labels: Vec::new(),
        mergeable: "MERGEABLE".into(),
        merge_state: "CLEAN".into(),
        comments: Vec::new(),
        threads: Vec::new(),
        reviews: Vec::new(),
        created_at: now,
        updated_at: now,
        version: id,
    });
    Some(number)
}

fn create_pr(state: &mut State, repo: &str, body: &Value) -> Answer {
    let text = |name: &str| body.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
    let (title, head, base) = (text("title"), text("head"), text("base"));
    let branch = head.split_once(':').map(|(_, b)| b.to_string()).unwrap_or(head);
    let known = &state.repos[repo];
    if title.is_empty() || branch.is_empty() || base.is_empty() {
        return validation_failed(json!({"resource": "PullRequest", "code": "missing_field"}));
    }
    if known.prs.iter().any(|pr| pr.branch == branch && pr.state == "OPEN") {
        let message = format!("A pull request already exists for {}:{branch}.", known.owner);
        return validation_failed(json!({"resource": "PullRequest", "code": "custom", "message": message}));
    }
    if known.bare.is_some() && !known.branches.contains_key(&branch) {
        return validation_failed(json!({"resource": "PullRequest", "field": "head", "code": "invalid"}));
    }
    let draft = body.get("draft").and_then(Value::as_bool).unwrap_or(false);
    let pr_body = text("body");
    let Some(number) = open_pr(state, repo, &branch, &base, &title, &pr_body, draft, "") else {
        return not_found();
    };
    let pr = state.repos[repo].pr(number).cloned().expect("just opened");
    state.posted.push(PostedComment {
        kind: PostedKind::PullRequest,
        repo: repo.to_string(),
        number,
        id: pr.node_id.clone(),
        title: Some(title),
        body: pr_body,
        reply_to: None,
        path: None,
        line: None,
    });
    Answer::json(201, pr_json(state, &pr))
}

fn validation_failed(error: Value) -> Answer {
    Answer::json(
        422,
        json!({"message": "Validation Failed", "errors": [error],
               "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"}),
    )
}

fn add_labels(state: &mut State, repo: &str, number: i64, body: &Value) -> Answer {
    // GitHub takes `{"labels": [..]}` or a bare array.
    let names: Vec<String> = body
        .get("labels")
        .unwrap_or(body)
        .as_array()
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let Some(pr) = state.pr_mut(repo, number) else { return not_found() };
    let mut added = false;
    for name in &names {
        if !pr.labels.contains(name) {
            pr.labels.push(name.clone());
            added = true;
        }
    }
    let labels: Vec<Value> = pr.labels.iter().map(|name| label_json(name)).collect();
    for name in names {
        let posted = posted(PostedKind::Label, repo, number, String::new(), name);
        state.posted.push(posted);
    }
    if added {
        state.touch(repo, number);
    }
    Answer::json(200, Value::Array(labels))
}

fn add_comment(state: &mut State, repo: &str, number: i64, body: &Value) -> Answer {
    let Some(text) = body.get("body").and_then(Value::as_str) else {
        return validation_failed(
            json!({"resource": "IssueComment", "field": "body", "code": "missing_field"}),
        );
    };
    if state.pr_mut(repo, number).is_none() {
        let is_issue = state.repo(repo).is_some_and(|r| r.issues.iter().any(|i| i.number == number));
        return if is_issue { add_issue_comment(state, repo, number, text) } else { not_found() };
    }
    let login = state.login.clone();
    let comment = state.new_comment("IC", &login, "OWNER", text, None);
    let html_url = format!("{}/{repo}/pull/{number}#issuecomment-{}", state.base_url(), comment.database_id);
    let answer = json!({
        "id": comment.database_id,
        "node_id": comment.id,
        "url": format!("{}/repos/{repo}/issues/comments/{}", state.base_url(), comment.database_id),
        "html_url": html_url,
        "body": comment.body,
        "user": {"login": login},
        "author_association": "OWNER",
        "created_at": iso(comment.created_at),
        "updated_at": iso(comment.created_at),
    });
    let posted = posted(PostedKind::IssueComment, repo, number, comment.id.clone(), text.to_string());
    state.posted.push(posted);
    if let Some(pr) = state.pr_mut(repo, number) {
        pr.comments.push(comment);
    }
    state.touch(repo, number);
    if let Some(i) = state.failing_once_commented.iter().position(|n| *n == number) {
        state.failing_once_commented.remove(i);
        state.failing_prs.push(number);
    }
    Answer::json(201, answer)
}

/// A conversation comment on an issue (not a pull request), kept in the REST shape.
fn add_issue_comment(state: &mut State, repo: &str, number: i64, text: &str) -> Answer {
    let login = state.login.clone();
    let comment = state.new_comment("IC", &login, "OWNER", text, None);
    let answer = json!({
        "id": comment.database_id,
        "node_id": comment.id,
        "url": format!("{}/repos/{repo}/issues/comments/{}", state.base_url(), comment.database_id),
        "html_url": format!("{}/{repo}/issues/{number}#issuecomment-{}", state.base_url(), comment.database_id),
        "body": comment.body,
        "user": {"login": login},
        "author_association": "OWNER",
        "created_at": iso(comment.created_at),
        "updated_at": iso(comment.created_at),
    });
    state.posted.push(posted(PostedKind::IssueComment, repo, number, comment.id.clone(), text.to_string()));
    state.issue_comments.entry((repo.to_string(), number)).or_default().push(answer.clone());
    Answer::json(201, answer)
}

pub fn posted(kind: PostedKind, repo: &str, number: i64, id: String, body: String) -> PostedComment {
    PostedComment {
        kind,
        repo: repo.to_string(),
        number,
        id,
        title: None,
        body,
        reply_to: None,
        path: None,
        line: None,
    }
}

/// The one workflow run of a commit, its status and conclusion rolled up from its check runs.
fn workflow_run_json(state: &State, repo: &str, sha: &str, id: i64) -> Value {
    let runs: Vec<_> = state.repos[repo]
        .contexts_at(sha)
        .filter_map(|c| match c {
            FakeContext::CheckRun(run) => Some(run),
            FakeContext::Status(_) => None,
        })
        .collect();
    let (status, conclusion) = if runs.iter().all(|r| r.status == "QUEUED") {
        ("queued", Value::Null)
    } else if runs.iter().any(|r| r.status != "COMPLETED") {
        ("in_progress", Value::Null)
    } else if runs.iter().all(|r| matches!(r.conclusion.as_deref(), Some("SUCCESS" | "SKIPPED" | "NEUTRAL")))
    {
        ("completed", json!("success"))
    } else {
        ("completed", json!("failure"))
    };
    let branch = state.repos[repo].prs.iter().find(|pr| pr.head_sha == sha).map(|pr| pr.branch.clone());
    json!({
        "id": id,
        "name": "CI",
        "head_sha": sha,
        "head_branch": branch,
        "event": "push",
        "status": status,
        "conclusion": conclusion,
        "html_url": format!("{}/{repo}/actions/runs/{id}", state.base_url()),
    })
}

/// `a=b&c=d` with percent-decoding (reqwest encodes the `:` of `head=owner:branch`).
fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect()
}

/// A parameter's value as sent, not decoded.
fn raw_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query.split('&').find_map(|pair| match pair.split_once('=') {
        Some((key, value)) if decode(key) == name => Some(value),
        _ => None,
    })
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(high * 16 + low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(digit: u8) -> Option<u8> {
    (digit as char).to_digit(16).map(|d| d as u8)
}
