//! The GitLab client against the fake GitLab: rate limits waited out (and shared by the processes on
//! one database), reads retried, a write whose answer was lost told as such and never sent twice, and
//! the token in no error.

mod common;
#[path = "fake_gitlab/mod.rs"]
mod fake_gitlab;

use std::time::{Duration, Instant};

use common::TestDb;
use executor::gitlab::{GitLabClient, GitLabError};
use executor::shared_blocks::gitlab_scope;
use fake_gitlab::{FakeGitLab, Fault};
use reqwest::Method;
use serde_json::json;

const LIST: &str = "/projects/group%2Fapp/merge_requests?state=all";

async fn setup() -> (FakeGitLab, GitLabClient) {
    let fake = FakeGitLab::start().await;
    fake.add_project("group/app", None);
    fake.create_mr("group/app", "feature", "Draft: A change", "abc");
    let client = GitLabClient::new(&fake.config(), "GITLAB_TOKEN", Some(fake.token()))
        .unwrap()
        .with_backoff(Duration::from_millis(10));
    (fake, client)
}

#[tokio::test]
async fn reads_are_retried_through_5xx_and_a_reset_connection() {
    let (fake, client) = setup().await;
    fake.fail_next(Fault::Status(502), 2);
    fake.fail_next(Fault::Reset, 1);
    let list = client.rest(Method::GET, LIST, None).await.unwrap();
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    assert_eq!(fake.route("mr_list"), 4, "three faults, then the answer");
    // A fault that does not pass is given up on, saying so.
    fake.fail_next(Fault::Status(503), 10);
    let e = client.rest(Method::GET, LIST, None).await.unwrap_err();
    assert!(matches!(e, GitLabError::GaveUp { status: 503, retries: 3, .. }), "{e}");
}

#[tokio::test]
async fn a_429_is_waited_out_for_its_retry_after_even_for_a_write() {
    let (fake, client) = setup().await;
    fake.set_retry_after(1);
    fake.fail_next(Fault::TooMany, 1);
    let started = Instant::now();
    let path = "/projects/group%2Fapp/merge_requests/1/notes";
    let note = client.rest(Method::POST, path, Some(&json!({ "body": "hello" }))).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After: 1 was honoured");
    assert!(note["id"].as_i64().is_some());
    assert_eq!(fake.route("note_create"), 2, "refused once, then sent again");
    assert_eq!(fake.mr("group/app", 1).notes().len(), 1, "posted once");
}

#[tokio::test]
async fn no_request_goes_out_before_the_reset_once_the_rate_limit_is_used_up() {
    let (fake, client) = setup().await;
    let reset = chrono::Utc::now() + chrono::TimeDelta::seconds(2);
    fake.set_rate_limit(1, reset);
    client.rest(Method::GET, LIST, None).await.unwrap(); // answered with RateLimit-Remaining: 0
    client.rest(Method::GET, LIST, None).await.unwrap();
    assert!(
        chrono::Utc::now().timestamp() >= reset.timestamp(),
        "the second request waited for RateLimit-Reset"
    );
    assert_eq!(fake.route("mr_list"), 2);
    // A reset further away than executor sleeps through fails the call at once, sending nothing.
    fake.set_rate_limit(1, chrono::Utc::now() + chrono::TimeDelta::hours(1));
    client.rest(Method::GET, LIST, None).await.unwrap();
    let e = client.rest(Method::GET, LIST, None).await.unwrap_err();
    assert!(e.is_rate_limit(), "{e}");
    assert_eq!(fake.route("mr_list"), 3, "nothing sent while blocked");
}

on_both_databases!(a_block_one_process_was_given_holds_every_process_on_the_database);

/// A runner told `RateLimit-Remaining: 0` until a reset an hour away, and `executor comment` (or the
/// intake, or another host) starting after it: the second sends nothing until the reset either, though
/// GitLab never told it so; a block of another instance does not hold it.
async fn a_block_one_process_was_given_holds_every_process_on_the_database(db: TestDb) {
    let (fake, runner) = setup().await;
    let store = db.open().await;
    let config = fake.config();
    runner.share_blocks(store.shared_blocks(gitlab_scope(&config.url)));
    let reset = chrono::Utc::now() + chrono::TimeDelta::hours(1);
    fake.set_rate_limit(1, reset);
    runner.rest(Method::GET, LIST, None).await.unwrap(); // answered with RateLimit-Remaining: 0

    let later = GitLabClient::new(&config, "GITLAB_TOKEN", Some(fake.token())).unwrap();
    later.share_blocks(store.shared_blocks(gitlab_scope(&format!("{}/", config.url))));
    let e = later.rest(Method::GET, LIST, None).await.unwrap_err();
    assert!(matches!(e, GitLabError::RateLimited { until } if until.timestamp() == reset.timestamp()), "{e}");
    assert_eq!(fake.route("mr_list"), 1, "the later process sent nothing");

    let other = GitLabClient::new(&config, "GITLAB_TOKEN", Some(fake.token())).unwrap();
    other.share_blocks(store.shared_blocks(gitlab_scope("https://gitlab.example.com")));
    fake.set_rate_limit(100, chrono::Utc::now());
    other.rest(Method::GET, LIST, None).await.unwrap();
    assert_eq!(fake.route("mr_list"), 2, "another instance's block holds nothing here");
}

/// A 429 whose `Retry-After` is longer than executor sleeps through blocks the other processes too.
#[tokio::test]
async fn a_long_retry_after_is_shared() {
    let (fake, runner) = setup().await;
    let db = common::sqlite();
    let store = db.open().await;
    let config = fake.config();
    runner.share_blocks(store.shared_blocks(gitlab_scope(&config.url)));
    fake.set_retry_after(3600);
    fake.fail_next(Fault::TooMany, 1);
    assert!(runner.rest(Method::GET, LIST, None).await.unwrap_err().is_rate_limit());
    let later = GitLabClient::new(&config, "GITLAB_TOKEN", Some(fake.token())).unwrap();
    later.share_blocks(store.shared_blocks(gitlab_scope(&config.url)));
    assert!(later.rest(Method::GET, LIST, None).await.unwrap_err().is_rate_limit());
    assert_eq!(fake.route("mr_list"), 1, "only the refused request went out");
}

/// A PUT sets a value (labels, a title, resolved): one whose answer was lost is sent again, as a read is,
/// and leaves what one would.
#[tokio::test]
async fn a_put_whose_answer_was_lost_is_sent_again() {
    let (fake, client) = setup().await;
    fake.fail_next(Fault::AppliedThen(502), 1);
    let path = "/projects/group%2Fapp/merge_requests/1";
    client.rest(Method::PUT, path, Some(&json!({ "add_labels": "executor" }))).await.unwrap();
    assert_eq!(fake.mr("group/app", 1).labels, ["executor"], "added once");
    assert_eq!(fake.counts().rest, 2, "carried out, answered 502, sent again");
}

#[tokio::test]
async fn a_write_whose_answer_was_lost_is_not_sent_again() {
    let (fake, client) = setup().await;
    fake.fail_route("note_create", Fault::AppliedThen(502), 1);
    let path = "/projects/group%2Fapp/merge_requests/1/notes";
    let e = client.rest(Method::POST, path, Some(&json!({ "body": "once" }))).await.unwrap_err();
    assert!(e.is_answer_lost(), "{e}");
    assert_eq!(fake.route("note_create"), 1, "not retried blindly");
    assert_eq!(fake.mr("group/app", 1).notes().len(), 1, "GitLab carried it out");
    // Not carried out either: a reset connection on a write is lost too, and not repeated.
    fake.fail_route("note_create", Fault::Reset, 1);
    let e = client.rest(Method::POST, path, Some(&json!({ "body": "twice?" }))).await.unwrap_err();
    assert!(e.is_answer_lost(), "{e}");
    assert_eq!(fake.route("note_create"), 2);
}

#[tokio::test]
async fn the_token_is_in_no_error() {
    let (fake, _) = setup().await;
    let secret = "glpat-wrong-secret-123";
    let client = GitLabClient::new(&fake.config(), "MY_GITLAB_TOKEN", Some(secret.into())).unwrap();
    let e = client.rest(Method::GET, LIST, None).await.unwrap_err();
    assert!(matches!(e, GitLabError::Unauthorized { .. }), "{e}");
    let text = format!("{e} {e:?}");
    assert!(text.contains("MY_GITLAB_TOKEN") && !text.contains(secret), "{text}");
    // GraphQL errors and transport failures neither.
    let e = client.graphql("query { currentUser { id } }", json!({})).await.unwrap_err();
    assert!(!format!("{e} {e:?}").contains(secret));
    let none = GitLabClient::new(&fake.config(), "MY_GITLAB_TOKEN", None).unwrap();
    let e = none.rest(Method::GET, LIST, None).await.unwrap_err();
    assert!(e.to_string().contains("MY_GITLAB_TOKEN") && e.to_string().contains("`api` scope"), "{e}");
    assert_eq!(fake.route("mr_list"), 1, "no request without a token");
    // git receives it only through its environment, as a header for this instance's URLs.
    let good = GitLabClient::new(&fake.config(), "T", Some(secret.into())).unwrap();
    let env = good.git_env();
    assert_eq!(env[1].1, format!("http.{}/.extraHeader", fake.url));
    assert!(env[2].1.starts_with("Authorization: Basic ") && !env[2].1.contains(secret));
}

#[tokio::test]
async fn graphql_answers_its_data_and_errors_are_errors() {
    let (fake, client) = setup().await;
    let data = client
        .graphql(
            "query($p: ID!) { project(fullPath: $p) { mergeRequests(iids: [\"1\"]) { nodes { iid draft } } } }",
            json!({ "p": "group/app" }),
        )
        .await
        .unwrap();
    assert_eq!(data["project"]["mergeRequests"]["nodes"][0], json!({ "iid": "1", "draft": true }));
    let e = client.graphql("query { project(", json!({})).await.unwrap_err();
    assert!(matches!(e, GitLabError::GraphQl(_)), "{e}");
    assert_eq!(fake.counts().graphql, 2);
}

#[tokio::test]
async fn a_long_log_is_read_to_its_tail_only() {
    let (fake, client) = setup().await;
    fake.add_pipeline("group/app", "abc", &[("test", "FAILED")]);
    let job = fake.pipelines("group/app")[0].jobs[0].id;
    let log: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
    fake.set_job_trace(job, &log);
    let tail = client.text(&format!("/projects/group%2Fapp/jobs/{job}/trace"), 1000).await.unwrap();
    assert_eq!(tail.len(), 1000);
    assert!(log.ends_with(&tail));
}
