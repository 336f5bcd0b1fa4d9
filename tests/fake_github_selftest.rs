//! Tests of the fake GitHub itself, with reqwest as the client: the forge's tests are only as good as
//! the fake's answers, so the shapes and behaviours they rely on are pinned here.

#[path = "fake_github/mod.rs"]
mod fake_github;

use std::path::Path;
use std::process::Command;

use fake_github::{FakeGitHub, Fault, PostedKind};
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, ETAG, IF_NONE_MATCH, LOCATION};
use serde_json::{Value, json};

const REPO: &str = "octo/app";

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .user_agent("fake-github-selftest")
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn fake() -> FakeGitHub {
    let github = FakeGitHub::start().await;
    github.add_repo("octo", "app", None);
    github
}

/// The forge's batch document with `count` aliases, each with its review threads.
fn batch_query(count: usize) -> String {
    executor::forge::github::batch_document(count)
}

async fn graphql(github: &FakeGitHub, query: &str, variables: Value) -> Value {
    let answer = client()
        .post(github.graphql_url())
        .bearer_auth("t0ken")
        .json(&json!({"query": query, "variables": variables}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    answer.json().await.unwrap()
}

async fn batch(github: &FakeGitHub, numbers: &[i64]) -> Value {
    let mut variables = json!({"owner": "octo", "name": "app"});
    for (k, number) in numbers.iter().enumerate() {
        variables[format!("n{k}")] = json!(number);
    }
    graphql(github, &batch_query(numbers.len()), variables).await
}

#[tokio::test]
async fn batch_answers_each_pull_request_and_a_null_with_not_found_for_an_unknown_number() {
    let github = fake().await;
    let first = github.create_pr(REPO, "executor/one", "One", true, "aaa111");
    let second = github.create_pr(REPO, "executor/two", "Two", false, "bbb222");
    let job =
        github.add_check_run(REPO, first, "aaa111", "build", "COMPLETED", Some("FAILURE"), Some("boom"));
    github.add_status(REPO, first, "aaa111", "lint", "PENDING");
    github.add_check_run(REPO, first, "old000", "build", "COMPLETED", Some("SUCCESS"), None);
    let (thread, comment) =
        github.add_thread_comment(REPO, first, "alex", "MEMBER", "Rename this", "src/a.rs", 7);
    github.add_thread_reply(&thread, "mallory", "NONE", "[ACKNOWLEDGED: no]");
    let (moved, _) = github.add_thread_comment(REPO, first, "alex", "OWNER", "Old code", "src/b.rs", 4);
    github.set_thread_outdated(&moved);
    github.add_issue_comment(REPO, first, "alex", "OWNER", "Looks good");
    github.set_mergeable(REPO, second, "CONFLICTING", "DIRTY");

    let answer = batch(&github, &[first, second, 99]).await;

    let one = &answer["data"]["repository"]["pr0"];
    assert_eq!(one["number"], json!(first));
    assert_eq!(one["isDraft"], json!(true));
    assert_eq!(one["state"], json!("OPEN"));
    assert_eq!(one["headRefName"], json!("executor/one"));
    assert_eq!(one["headRefOid"], json!("aaa111"));
    let rollup = &one["statusCheckRollup"];
    assert_eq!(rollup["state"], json!("FAILURE"), "a failure beats a pending status");
    let contexts = rollup["contexts"]["nodes"].as_array().unwrap();
    assert_eq!(contexts.len(), 2, "only the head commit's contexts: {contexts:?}");
    assert_eq!(contexts[0]["__typename"], json!("CheckRun"));
    assert_eq!(contexts[0]["conclusion"], json!("FAILURE"));
    assert_eq!(contexts[0]["databaseId"], json!(job));
    assert_eq!(contexts[0]["checkSuite"]["app"]["slug"], json!("github-actions"));
    assert_eq!(contexts[1]["__typename"], json!("StatusContext"));
    assert_eq!(contexts[1]["context"], json!("lint"));
    let threads = one["reviewThreads"]["nodes"].as_array().unwrap();
    assert_eq!(threads[0]["id"], json!(thread));
    assert_eq!(threads[0]["isResolved"], json!(false));
    let replies = threads[0]["comments"]["nodes"].as_array().unwrap();
    assert_eq!(replies[0]["id"], json!(comment));
    assert_eq!(replies[0]["authorAssociation"], json!("MEMBER"));
    assert_eq!(replies[0]["replyTo"], Value::Null);
    assert_eq!(replies[1]["author"]["login"], json!("mallory"));
    assert_eq!(replies[1]["replyTo"]["id"], json!(comment));
    assert_eq!((threads[1]["isOutdated"].clone(), threads[1]["line"].clone()), (json!(true), Value::Null));
    assert_eq!(one["comments"]["nodes"][0]["body"], json!("Looks good"));

    let two = &answer["data"]["repository"]["pr1"];
    assert_eq!(two["statusCheckRollup"], Value::Null, "no checks at the head: a null rollup");
    assert_eq!(two["mergeable"], json!("CONFLICTING"));
    assert_eq!(two["mergeStateStatus"], json!("DIRTY"));

    assert_eq!(answer["data"]["repository"]["pr2"], Value::Null);
    let errors = answer["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["type"], json!("NOT_FOUND"));
    assert_eq!(errors[0]["path"], json!(["repository", "pr2"]));

    // GitHub's formula: 3 × (4 connections + reviewThreads + 10 thread comments) = 45 requests, 1 point.
    assert_eq!(answer["data"]["rateLimit"]["cost"], json!(1));
    assert_eq!(answer["data"]["rateLimit"]["remaining"], json!(4999));
    let counts = github.counts();
    assert_eq!((counts.graphql, counts.graphql_points, counts.route("graphql:Batch")), (1, 1, 1));
}

#[tokio::test]
async fn checks_and_threads_paginate_with_honest_page_info() {
    let github = fake().await;
    let number = github.create_pr(REPO, "executor/many", "Many", true, "ccc333");
    for k in 0..150 {
        github.add_check_run(REPO, number, "ccc333", &format!("job {k}"), "COMPLETED", Some("SUCCESS"), None);
    }
    for k in 0..60 {
        github.add_thread_comment(REPO, number, "alex", "OWNER", &format!("note {k}"), "src/a.rs", k);
    }

    let first = batch(&github, &[number]).await;
    let pr = &first["data"]["repository"]["pr0"];
    let contexts = &pr["statusCheckRollup"]["contexts"];
    assert_eq!(contexts["nodes"].as_array().unwrap().len(), 100);
    assert_eq!(contexts["pageInfo"], json!({"hasNextPage": true, "endCursor": "99"}));
    let threads = &pr["reviewThreads"];
    // The batch asks 10 threads a page (pr_threads.graphql), the pages that follow 50.
    assert_eq!(threads["nodes"].as_array().unwrap().len(), 10);
    assert_eq!(threads["pageInfo"], json!({"hasNextPage": true, "endCursor": "9"}));

    let page_variables =
        |after: &str| json!({"owner": "octo", "name": "app", "number": number, "after": after});
    let fields = include_str!("../src/forge/github/graphql/pr_fields.graphql");
    let contexts_doc =
        format!("{}\n{fields}", include_str!("../src/forge/github/graphql/check_contexts_page.graphql"));
    let next = graphql(&github, &contexts_doc, page_variables("99")).await;
    let contexts = &next["data"]["repository"]["pullRequest"]["statusCheckRollup"]["contexts"];
    let nodes = contexts["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 50);
    assert_eq!(nodes[0]["name"], json!("job 100"));
    assert_eq!(contexts["pageInfo"], json!({"hasNextPage": false, "endCursor": "149"}));

    let threads_doc =
        format!("{}\n{fields}", include_str!("../src/forge/github/graphql/review_threads_page.graphql"));
    let next = graphql(&github, &threads_doc, page_variables("49")).await;
    let threads = &next["data"]["repository"]["pullRequest"]["reviewThreads"];
    assert_eq!(threads["nodes"].as_array().unwrap().len(), 10);
    assert_eq!(threads["nodes"][0]["comments"]["nodes"][0]["body"], json!("note 50"));
    assert_eq!(threads["pageInfo"]["hasNextPage"], json!(false));
}

async fn list_open(github: &FakeGitHub, etag: Option<&str>) -> reqwest::Response {
    let url = format!(
        "{}/repos/{REPO}/pulls?state=open&sort=updated&direction=desc&per_page=100",
        github.api_url()
    );
    let mut request = client().get(url).header(AUTHORIZATION, "token t0ken");
    if let Some(etag) = etag {
        request = request.header(IF_NONE_MATCH, etag);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn open_pull_request_list_is_not_modified_until_something_but_a_check_changes() {
    let github = fake().await;
    let number = github.create_pr(REPO, "executor/one", "One", true, "aaa111");
    let job = github.add_check_run(REPO, number, "aaa111", "build", "IN_PROGRESS", None, None);

    let answer = list_open(&github, None).await;
    assert_eq!(answer.status(), StatusCode::OK);
    let remaining = answer.headers()["x-ratelimit-remaining"].to_str().unwrap().to_string();
    let etag = answer.headers()[ETAG].to_str().unwrap().to_string();
    assert!(etag.starts_with("W/\""), "a weak ETag: {etag}");
    let list: Value = answer.json().await.unwrap();
    assert_eq!(list[0]["number"], json!(number));
    assert_eq!(
        list[0]["head"],
        json!({"label": "octo:executor/one", "ref": "executor/one", "sha": "aaa111"})
    );

    let same = list_open(&github, Some(&etag)).await;
    assert_eq!(same.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(same.headers()["x-ratelimit-remaining"].to_str().unwrap(), remaining, "a 304 is free");

    github.update_check_run(job, "COMPLETED", Some("SUCCESS"));
    assert_eq!(list_open(&github, Some(&etag)).await.status(), StatusCode::NOT_MODIFIED);

    github.add_issue_comment(REPO, number, "alex", "OWNER", "Please rename");
    let changed = list_open(&github, Some(&etag)).await;
    assert_eq!(changed.status(), StatusCode::OK);
    assert_ne!(changed.headers()[ETAG].to_str().unwrap(), etag);

    let counts = github.counts();
    assert_eq!((counts.rest, counts.not_modified, counts.route("pulls_list")), (4, 2, 4));
}

#[tokio::test]
async fn a_hanging_answer_times_the_client_out_and_the_next_request_is_answered() {
    let github = fake().await;
    github.fail_next(Fault::Hang, 1);
    github.fail_next(Fault::Malformed, 1);
    github.fail_next(Fault::TooMany, 1);
    github.set_retry_after(1);
    let impatient = reqwest::Client::builder()
        .user_agent("fake-github-selftest")
        .timeout(std::time::Duration::from_millis(300))
        .build()
        .unwrap();
    let url = format!("{}/repos/{REPO}/pulls?state=open", github.api_url());
    let hung = impatient.get(&url).bearer_auth("t0ken").send().await.unwrap_err();
    assert!(hung.is_timeout(), "{hung}");
    let malformed = impatient.get(&url).bearer_auth("t0ken").send().await.unwrap();
    assert_eq!(malformed.status(), StatusCode::OK);
    assert!(malformed.json::<Value>().await.is_err());
    let too_many = impatient.get(&url).bearer_auth("t0ken").send().await.unwrap();
    assert_eq!(
        (too_many.status(), too_many.headers()["retry-after"].to_str().unwrap()),
        (StatusCode::TOO_MANY_REQUESTS, "1")
    );
    let normal = impatient.get(&url).bearer_auth("t0ken").send().await.unwrap();
    assert_eq!(normal.json::<Value>().await.unwrap(), json!([]));
}

#[tokio::test]
async fn a_fault_is_served_the_given_number_of_times_then_normal_answers_resume() {
    let github = fake().await;
    github.fail_next(Fault::Status(502), 2);
    github.fail_next(Fault::SecondaryLimit, 1);
    github.fail_next(Fault::PartialErrors, 1);
    let statuses = [StatusCode::BAD_GATEWAY, StatusCode::BAD_GATEWAY, StatusCode::FORBIDDEN];
    for expected in statuses {
        let answer = list_open(&github, None).await;
        assert_eq!(answer.status(), expected);
        if expected == StatusCode::FORBIDDEN {
            assert_eq!(answer.headers()["retry-after"], "60");
            let body: Value = answer.json().await.unwrap();
            assert!(body["message"].as_str().unwrap().contains("secondary rate limit"));
        }
    }
    // A partial-errors fault waits for a GraphQL request; REST answers normally meanwhile.
    assert_eq!(list_open(&github, None).await.status(), StatusCode::OK);
    let number = github.create_pr(REPO, "executor/one", "One", true, "aaa111");
    let partial = batch(&github, &[number]).await;
    assert_eq!(partial["data"]["repository"]["pr0"], Value::Null);
    assert!(partial["errors"].as_array().is_some_and(|e| !e.is_empty()));
    let whole = batch(&github, &[number]).await;
    assert_eq!(whole["data"]["repository"]["pr0"]["number"], json!(number));
    assert!(whole.get("errors").is_none());
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test]
async fn opening_a_pull_request_takes_the_pushed_head_and_refuses_a_second_for_the_branch() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, work) = (dir.path().join("remote.git"), dir.path().join("work"));
    git(dir.path(), &["init", "--bare", "-b", "main", bare.to_str().unwrap()]);
    git(dir.path(), &["init", "-b", "main", work.to_str().unwrap()]);
    git(&work, &["commit", "--allow-empty", "-m", "first"]);
    git(&work, &["push", bare.to_str().unwrap(), "main:refs/heads/executor/t1"]);
    let pushed = git(&work, &["rev-parse", "HEAD"]);
    let github = FakeGitHub::start().await;
    github.add_repo("octo", "app", Some(bare.clone()));
    github.set_login("alex");

    let open = |github: &FakeGitHub| {
        client()
            .post(format!("{}/repos/{REPO}/pulls", github.api_url()))
            .bearer_auth("t0ken")
            .json(&json!({"title": "Task 1", "body": "From the tracker", "head": "executor/t1", "base": "main", "draft": true}))
            .send()
    };
    let created = open(&github).await.unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.unwrap();
    let number = created["number"].as_i64().unwrap();
    assert_eq!((created["draft"].clone(), created["state"].clone()), (json!(true), json!("open")));
    assert!(created["node_id"].as_str().is_some_and(|id| !id.is_empty()));
    assert_eq!(created["head"]["sha"], json!(pushed));
    assert_eq!(github.pr(REPO, number).head_sha, pushed);
    let posted = github.posted_comments();
    assert_eq!(posted[0].kind, PostedKind::PullRequest);
    assert_eq!(posted[0].title.as_deref(), Some("Task 1"));

    let again = open(&github).await.unwrap();
    assert_eq!(again.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["message"], json!("Validation Failed"));
    assert_eq!(again["errors"][0]["message"], json!("A pull request already exists for octo:executor/t1."));

    // A later push moves the head GitHub reports.
    git(&work, &["commit", "--allow-empty", "-m", "second"]);
    git(&work, &["push", bare.to_str().unwrap(), "main:refs/heads/executor/t1"]);
    let by_head = client()
        .get(format!("{}/repos/{REPO}/pulls?head=octo:executor/t1&state=all", github.api_url()))
        .bearer_auth("t0ken")
        .send()
        .await
        .unwrap();
    let list: Value = by_head.json().await.unwrap();
    assert_eq!(list[0]["head"]["sha"], json!(git(&work, &["rev-parse", "HEAD"])));
}

#[tokio::test]
async fn job_logs_redirect_to_another_host_that_refuses_the_token() {
    let github = fake().await;
    let number = github.create_pr(REPO, "executor/one", "One", false, "aaa111");
    let job = github.add_check_run(
        REPO,
        number,
        "aaa111",
        "test",
        "COMPLETED",
        Some("FAILURE"),
        Some("line 1\nFAILED"),
    );
    let logs_url = format!("{}/repos/{REPO}/actions/jobs/{job}/logs", github.api_url());

    let unauthenticated = client().get(&logs_url).send().await.unwrap();
    assert_eq!(unauthenticated.status(), StatusCode::UNAUTHORIZED);

    let redirect = client().get(&logs_url).bearer_auth("t0ken").send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
    let location = redirect.headers()[LOCATION].to_str().unwrap().to_string();
    assert!(location.starts_with("http://localhost:"), "{location}");

    let leaked = client().get(&location).bearer_auth("t0ken").send().await.unwrap();
    assert_eq!(leaked.status(), StatusCode::UNAUTHORIZED);
    let download = client().get(&location).send().await.unwrap();
    assert_eq!(download.status(), StatusCode::OK);
    assert_eq!(download.text().await.unwrap(), "line 1\nFAILED");
}

#[tokio::test]
async fn a_client_following_the_redirect_drops_the_token_at_the_other_host() {
    let github = fake().await;
    let number = github.create_pr(REPO, "executor/one", "One", false, "aaa111");
    let job =
        github.add_check_run(REPO, number, "aaa111", "test", "COMPLETED", Some("FAILURE"), Some("FAILED"));
    let following = reqwest::Client::builder().user_agent("fake-github-selftest").build().unwrap();
    let answer = following
        .get(format!("{}/repos/{REPO}/actions/jobs/{job}/logs", github.api_url()))
        .bearer_auth("t0ken")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK, "reqwest strips Authorization on a cross-host redirect");
    assert_eq!(answer.text().await.unwrap(), "FAILED");
}

#[tokio::test]
async fn writes_are_recorded_and_seen_by_the_next_batch() {
    let github = fake().await;
    github.set_login("alex");
    let number = github.create_pr(REPO, "executor/one", "One", true, "aaa111");
    let node_id = github.pr(REPO, number).node_id;
    let (thread, _) = github.add_thread_comment(REPO, number, "alex", "OWNER", "Rename", "src/a.rs", 3);
    let documents =
        |name: &str| std::fs::read_to_string(format!("src/forge/github/graphql/{name}.graphql")).unwrap();

    let reply = graphql(
        &github,
        &documents("reply_to_thread"),
        json!({"thread": thread, "body": "[ACKNOWLEDGED: done]"}),
    )
    .await;
    let reply_id =
        reply["data"]["addPullRequestReviewThreadReply"]["comment"]["id"].as_str().unwrap().to_string();
    let threads = [json!({"path": "src/b.rs", "line": 9, "body": "Missing test"})];
    let variables = json!({"pr": node_id, "commit": "aaa111", "body": "Two findings", "threads": threads});
    let review = graphql(&github, &documents("add_review"), variables).await;
    let review = &review["data"]["addPullRequestReview"]["pullRequestReview"];
    assert_eq!(review["comments"]["nodes"].as_array().unwrap().len(), 1);
    let ready = graphql(&github, &documents("mark_ready"), json!({"pr": node_id})).await;
    assert_eq!(ready["data"]["markPullRequestReadyForReview"]["pullRequest"]["isDraft"], json!(false));
    let unknown = graphql(&github, &documents("mark_ready"), json!({"pr": "PR_nope"})).await;
    assert_eq!(unknown["errors"][0]["type"], json!("NOT_FOUND"));
    let labels = client()
        .post(format!("{}/repos/{REPO}/issues/{number}/labels", github.api_url()))
        .bearer_auth("t0ken")
        .json(&json!({"labels": ["executor"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(labels.json::<Value>().await.unwrap()[0]["name"], json!("executor"));
    let comment = client()
        .post(format!("{}/repos/{REPO}/issues/{number}/comments", github.api_url()))
        .bearer_auth("t0ken")
        .json(&json!({"body": "Done @alex"}))
        .send()
        .await
        .unwrap();
    assert_eq!(comment.status(), StatusCode::CREATED);
    let comment: Value = comment.json().await.unwrap();
    assert_eq!(comment["user"]["login"], json!("alex"));

    let kinds: Vec<PostedKind> = github.posted_comments().into_iter().map(|p| p.kind).collect();
    use PostedKind::*;
    assert_eq!(kinds, [ThreadReply, Review, ReviewComment, ReadyForReview, Label, IssueComment]);

    let seen = batch(&github, &[number]).await;
    let pr = &seen["data"]["repository"]["pr0"];
    assert_eq!(pr["isDraft"], json!(false));
    assert_eq!(pr["labels"]["nodes"], json!([{"name": "executor"}]));
    assert_eq!(pr["reviewThreads"]["nodes"][0]["comments"]["nodes"][1]["id"], json!(reply_id));
    assert_eq!(pr["reviewThreads"]["nodes"][1]["path"], json!("src/b.rs"));
    assert_eq!(pr["reviews"]["nodes"][0]["body"], json!("Two findings"));
    assert_eq!(pr["comments"]["nodes"][0]["id"], comment["node_id"]);
    assert_eq!(pr["comments"]["nodes"][0]["authorAssociation"], json!("OWNER"));
}

#[tokio::test]
async fn graphql_answers_rate_limited_without_data_once_points_run_out_until_the_reset() {
    let github = fake().await;
    let number = github.create_pr(REPO, "executor/one", "One", true, "aaa111");
    github.set_rate_remaining(1);
    let last = batch(&github, &[number]).await;
    assert_eq!(last["data"]["rateLimit"]["remaining"], json!(0));
    let refused = batch(&github, &[number]).await;
    assert!(refused.get("data").is_none());
    assert_eq!(refused["errors"][0]["type"], json!("RATE_LIMITED"));
    assert_eq!(github.counts().graphql_points, 1);

    github.set_rate_reset(chrono::Utc::now() - chrono::Duration::seconds(1));
    let renewed = batch(&github, &[number]).await;
    assert_eq!(renewed["data"]["rateLimit"]["remaining"], json!(4999));
}

async fn list_issues(github: &FakeGitHub, query: &str) -> reqwest::Response {
    let url = format!("{}/repos/{REPO}/issues?{query}", github.api_url());
    client().get(url).bearer_auth("t0ken").send().await.unwrap()
}

#[tokio::test]
async fn issues_list_pull_requests_too_and_filter_by_state_labels_and_since() {
    let github = fake().await;
    let first = github.add_issue(REPO, "First", None, &["bug", "a,b"]);
    let pr = github.create_pr(REPO, "executor/x", "A PR", false, "abc123");
    let closed = github.add_issue(REPO, "Closed", Some("text"), &["bug"]);
    github.edit_issue(REPO, closed, |issue| issue.state = "closed".into());
    assert_eq!((first, pr, closed), (1, 2, 3), "issues and pull requests share one sequence of numbers");
    let old =
        chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().with_timezone(&chrono::Utc);
    github.edit_issue(REPO, first, |issue| issue.updated_at = old);

    // GitHub's defaults: open ones, newest created first, 30 a page.
    let answer: Value = list_issues(&github, "").await.json().await.unwrap();
    let numbers: Vec<&Value> = answer.as_array().unwrap().iter().map(|item| &item["number"]).collect();
    assert_eq!(numbers, [&json!(pr), &json!(first)]);
    assert!(answer[0]["pull_request"]["url"].is_string());
    assert_eq!(answer[1].get("pull_request"), None);
    assert_eq!(answer[1]["body"], Value::Null);
    assert_eq!(answer[1]["updated_at"], json!("2026-01-01T00:00:00Z"));

    let all: Value = list_issues(&github, "state=all&sort=updated&direction=asc").await.json().await.unwrap();
    let numbers: Vec<i64> = all.as_array().unwrap().iter().map(|i| i["number"].as_i64().unwrap()).collect();
    assert_eq!(numbers[0], first, "the oldest change first");
    assert_eq!(numbers.len(), 3);
    let closed_json = all.as_array().unwrap().iter().find(|i| i["number"] == json!(closed)).unwrap();
    assert_eq!(closed_json["state"], json!("closed"));

    // Labels: every one, case-insensitive, split on the commas sent (an encoded one is part of a name).
    let labelled: Value = list_issues(&github, "state=all&labels=BUG,a%2Cb").await.json().await.unwrap();
    assert_eq!(labelled.as_array().unwrap().len(), 1);
    assert_eq!(labelled[0]["number"], json!(first));

    let since: Value =
        list_issues(&github, "state=all&since=2026-06-01T00:00:00Z").await.json().await.unwrap();
    assert_eq!(since.as_array().unwrap().len(), 2, "all but the one updated in January");
    let paged: Value = list_issues(&github, "state=all&per_page=2&page=2").await.json().await.unwrap();
    assert_eq!(paged.as_array().unwrap().len(), 1);
    assert_eq!(list_issues(&github, "since=yesterday").await.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(github.counts().route("issues_list"), 6);
}

/// GitHub's published cost formula: each connection needs as many requests as the product of the
/// `first`/`last` of the connections around it; their sum / 100, rounded, at least 1.
#[tokio::test]
async fn graphql_costs_points_by_githubs_published_formula() {
    let github = fake().await;
    let cost = |answer: &Value| answer["data"]["rateLimit"]["cost"].clone();
    // GitHub's own example: 1 + 100 + 100 × 50 = 5,101 requests → 51 points.
    let example = "query Batch { rateLimit { cost remaining resetAt } viewer { login \
                   repositories(first: 100) { nodes { issues(first: 50) { nodes { labels(first: 60) { nodes { name } } } } } } } }";
    assert_eq!(cost(&graphql(&github, example, json!({})).await), json!(51));
    // The batch of 25 pull requests with the old threads (50 threads × their comments): 25 × 55 = 1,375
    // requests → 14 points; 10 threads a page: 25 × 15 = 375 → 4; without threads: 25 × 4 = 100 → 1.
    let numbers: Vec<i64> =
        (0..25).map(|i| github.create_pr(REPO, &format!("b{i}"), "t", true, "aaa")).collect();
    let mut variables = json!({"owner": "octo", "name": "app"});
    for (k, number) in numbers.iter().enumerate() {
        variables[format!("n{k}")] = json!(number);
    }
    let old = executor::forge::github::batch_document(25)
        .replace("reviewThreads(first: 10)", "reviewThreads(first: 50)");
    assert_eq!(cost(&graphql(&github, &old, variables.clone()).await), json!(14));
    let with = executor::forge::github::batch_document(25);
    assert_eq!(cost(&graphql(&github, &with, variables.clone()).await), json!(4));
    let without = executor::forge::github::batch_document_for(&[false; 25]);
    let answer = graphql(&github, &without, variables).await;
    assert_eq!(cost(&answer), json!(1));
    assert!(
        answer["data"]["repository"]["pr0"].get("reviewThreads").is_none(),
        "threads not asked, not answered"
    );
}
