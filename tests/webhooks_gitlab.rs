//! The GitLab webhook receiver over real HTTP, on SQLite and PostgreSQL: deliveries sent as GitLab sends
//! them (`X-Gitlab-Token` with the secret token, `X-Gitlab-Event`, `X-Gitlab-Event-UUID`, and on GitLab
//! 17.4+ an `Idempotency-Key` repeated on every retry) with payloads in GitLab's documented shapes
//! (`tests/data/webhooks/gitlab/`). Every event executor watches marks the run's merge request and wakes
//! the runner; a wrong or missing token changes nothing and is logged; a retry is done once; events,
//! projects and merge requests executor does not own are acknowledged and ignored.

mod common;
mod web_support;

use std::sync::Arc;

use common::TestDb;
use executor::config::Config;
use executor::domain::{Actor, TaskGid, WakeScope, WebhookSender};
use executor::store::{NewTask, Store};
use executor::web::AppState;
use reqwest::StatusCode;
use serde_json::Value;

on_both_databases!(
    every_watched_gitlab_event_marks_the_runs_merge_request_and_wakes_the_runner,
    a_delivery_without_the_secret_token_changes_nothing_and_a_retry_is_done_once,
    gitlab_deliveries_for_what_executor_does_not_own_are_acknowledged_and_ignored,
);

const SECRET: &str = "glwh-test-0123456789abcdef";
const HEAD: &str = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c";
const BRANCH: &str = "executor/1207-add-the-feature-file";

/// The project on GitLab, and a GitHub repository of the same name (a GitLab delivery never marks it).
const CONFIG: &str = r#"
[repos.app]
path = "/nonexistent/app"
forge = "gitlab"
gitlab = "group/app"

[repos.mirror]
path = "/nonexistent/mirror"
forge = "github"
github = "group/app"
"#;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/data/webhooks/gitlab/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The receiver served with `config` over `store`, with (or without) GitLab's secret token set.
async fn serve(store: &Store, secret: bool) -> (String, tokio::sync::watch::Sender<bool>) {
    let config = Config::parse(CONFIG).unwrap();
    let mut state = AppState::new(store.clone(), Arc::new(config), "t".repeat(32), None);
    state.gitlab_webhook_secret = secret.then(|| Arc::new(SECRET.to_string()));
    web_support::serve(state).await
}

/// A run of task `gid` in `repo` with merge request `iid` at head `HEAD` on branch `BRANCH`.
async fn run_with_mr(store: &Store, gid: &str, iid: i64) -> i64 {
    let g = TaskGid::parse(gid).unwrap();
    let t =
        NewTask { description: Some(format!("task {gid}")), repo: Some("app".into()), ..Default::default() };
    store.upsert_task(&g, &t, Actor::Cli).await.unwrap();
    store.approve_task(&g, true, Actor::Cli).await.unwrap();
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap().id;
    store.set_run_workspace(run, None, "/tmp/wt", BRANCH).await.unwrap();
    let url = format!("https://gitlab.example.com/group/app/-/merge_requests/{iid}");
    store.set_run_pr(run, None, &url, iid).await.unwrap();
    store.set_run_head(run, None, HEAD).await.unwrap();
    run
}

/// Posts `payload` as GitLab does: its event, its event UUID, the idempotency key when given, and
/// the secret token when given.
async fn deliver(
    base: &str,
    event: &str,
    uuid: &str,
    idempotency_key: Option<&str>,
    payload: &Value,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/webhooks/gitlab"))
        .header("User-Agent", "GitLab/17.6.0")
        .header("Content-Type", "application/json")
        .header("X-Gitlab-Event", event)
        .header("X-Gitlab-Event-UUID", uuid)
        .header("X-Gitlab-Webhook-UUID", "6e0a5d2c-2a4e-4ac0-9a1e-0d1f3b1b2c44")
        .header("X-Gitlab-Instance", "https://gitlab.example.com")
        .body(serde_json::to_vec(payload).unwrap());
    if let Some(key) = idempotency_key {
        request = request.header("Idempotency-Key", key);
    }
    if let Some(token) = token {
        request = request.header("X-Gitlab-Token", token);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn uuid(test: &str, n: usize) -> String {
    format!("{test}-{n}-{}", std::process::id())
}

async fn marks(store: &Store, repo: &str) -> Vec<i64> {
    store.pr_marks(repo).await.unwrap().into_iter().map(|(_, n)| n).collect()
}

async fn every_watched_gitlab_event_marks_the_runs_merge_request_and_wakes_the_runner(db: TestDb) {
    let store = db.open().await;
    run_with_mr(&store, "1207", 7).await;
    let (base, _stop) = serve(&store, true).await;
    let mut branch_pipeline = fixture("pipeline");
    branch_pipeline["merge_request"] = Value::Null; // a branch pipeline: matched by its ref
    branch_pipeline["object_attributes"]["sha"] = Value::from("1111111111111111111111111111111111111111");
    let events = [
        ("Merge Request Hook", fixture("merge_request")),
        ("Pipeline Hook", fixture("pipeline")),
        ("Pipeline Hook", branch_pipeline),
        ("Job Hook", fixture("job")),
        ("Note Hook", fixture("note")),
    ];
    for (n, (event, payload)) in events.iter().enumerate() {
        let before = store.wake_state(WakeScope::Runner).await.unwrap();
        let (status, answer) = deliver(&base, event, &uuid("marks", n), None, payload, Some(SECRET)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{event}: {answer}");
        assert_eq!(answer["outcome"], "marked", "{event}");
        assert_eq!(marks(&store, "app").await, [7], "{event}: one mark on merge request !7");
        let after = store.wake_state(WakeScope::Runner).await.unwrap();
        assert_eq!(after.requested, before.requested + 1, "{event} wakes the runner");
        let (up_to, _) = *store.pr_marks("app").await.unwrap().last().unwrap();
        store.clear_pr_marks("app", &[7], up_to).await.unwrap();
    }
    assert!(
        marks(&store, "mirror").await.is_empty(),
        "the GitHub repository of the same name is not GitLab's"
    );
    let last = store.last_delivery(WebhookSender::GitLab).await.unwrap().expect("recorded");
    assert_eq!(last.1, "Note Hook");
    assert_eq!(store.last_delivery(WebhookSender::GitHub).await.unwrap(), None);
}

async fn a_delivery_without_the_secret_token_changes_nothing_and_a_retry_is_done_once(db: TestDb) {
    let store = db.open().await;
    run_with_mr(&store, "1207", 7).await;
    let wake = store.wake_state(WakeScope::Runner).await.unwrap();
    let payload = fixture("pipeline");

    // Not set up: refused, whatever the token.
    let (unset_base, _unset) = serve(&store, false).await;
    let (status, answer) =
        deliver(&unset_base, "Pipeline Hook", &uuid("unset", 0), None, &payload, Some(SECRET)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(answer["error"].as_str().unwrap().contains("gitlab.webhook_secret_env"), "{answer}");

    let (base, _stop) = serve(&store, true).await;
    for (n, token) in
        [None, Some("glwh-test-0123456789abcdeX"), Some(""), Some("glwh")].into_iter().enumerate()
    {
        let (status, _) = deliver(&base, "Pipeline Hook", &uuid("forged", n), None, &payload, token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "token {token:?}");
    }
    // Without an event id there is nothing to know a retry by.
    let response = reqwest::Client::new()
        .post(format!("{base}/webhooks/gitlab"))
        .header("Content-Type", "application/json")
        .header("X-Gitlab-Event", "Pipeline Hook")
        .header("X-Gitlab-Token", SECRET)
        .body(serde_json::to_vec(&payload).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(marks(&store, "app").await.is_empty(), "a refused delivery marks nothing");
    assert_eq!(store.wake_state(WakeScope::Runner).await.unwrap(), wake, "nor wakes anyone");
    assert_eq!(store.last_delivery(WebhookSender::GitLab).await.unwrap(), None, "nor is recorded");

    // GitLab retries with the same Idempotency-Key (and, across its versions, maybe another event UUID).
    let key = uuid("key", 1);
    let (status, answer) =
        deliver(&base, "Pipeline Hook", &uuid("try", 1), Some(&key), &payload, Some(SECRET)).await;
    assert_eq!((status, answer["outcome"].as_str()), (StatusCode::ACCEPTED, Some("marked")));
    let (status, answer) =
        deliver(&base, "Pipeline Hook", &uuid("try", 2), Some(&key), &payload, Some(SECRET)).await;
    assert_eq!((status, answer["outcome"].as_str()), (StatusCode::OK, Some("already_received")));
    // Before 17.4 there is no key: the event UUID is the delivery's id.
    let event = uuid("event", 3);
    assert_eq!(
        deliver(&base, "Pipeline Hook", &event, None, &payload, Some(SECRET)).await.0,
        StatusCode::ACCEPTED
    );
    assert_eq!(deliver(&base, "Pipeline Hook", &event, None, &payload, Some(SECRET)).await.0, StatusCode::OK);
    assert_eq!(marks(&store, "app").await, [7, 7], "two deliveries, two marks; the retries none");
    assert_eq!(store.wake_state(WakeScope::Runner).await.unwrap().requested, wake.requested + 2);
}

async fn gitlab_deliveries_for_what_executor_does_not_own_are_acknowledged_and_ignored(db: TestDb) {
    let store = db.open().await;
    run_with_mr(&store, "1207", 7).await;
    let (base, _stop) = serve(&store, true).await;
    let wake = store.wake_state(WakeScope::Runner).await.unwrap();
    let mut other_project = fixture("merge_request");
    other_project["project"]["path_with_namespace"] = Value::from("group/other");
    let mut other_mr = fixture("note");
    other_mr["merge_request"]["iid"] = Value::from(8);
    let mut approval = fixture("merge_request");
    approval["object_attributes"]["action"] = Value::from("approved");
    let mut on_issue = fixture("note");
    on_issue["object_attributes"]["noteable_type"] = Value::from("Issue");
    for (n, (event, payload, outcome)) in [
        ("Push Hook", fixture("push"), "ignored_event"),
        ("Merge Request Hook", approval, "ignored_event"),
        ("Note Hook", on_issue, "ignored_event"),
        ("Merge Request Hook", other_project, "unknown_repo"),
        ("Note Hook", other_mr, "not_ours"),
    ]
    .into_iter()
    .enumerate()
    {
        let (status, answer) = deliver(&base, event, &uuid("ignored", n), None, &payload, Some(SECRET)).await;
        assert_eq!(
            (status, answer["outcome"].as_str()),
            (StatusCode::ACCEPTED, Some(outcome)),
            "{event} #{n}"
        );
    }
    // A payload without what its event always carries: malformed.
    let (status, _) =
        deliver(&base, "Merge Request Hook", &uuid("bad", 0), None, &serde_json::json!({}), Some(SECRET))
            .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(marks(&store, "app").await.is_empty());
    assert_eq!(store.wake_state(WakeScope::Runner).await.unwrap(), wake, "nothing woken");
}

/// A database from before schema v24 (its deliveries could only be GitHub's or Asana's): the migration
/// keeps what it received, and GitLab's deliveries can then be recorded.
#[tokio::test]
async fn schema_v24_keeps_the_deliveries_received_before_it() {
    use sqlx::Connection;
    let db = common::sqlite();
    let store = db.open().await;
    let github = executor::store::Delivery {
        sender: WebhookSender::GitHub,
        id: "before-v24",
        event: "check_run",
        outcome: executor::domain::DeliveryOutcome::NotOurs,
        marks: &[],
        wake: None,
    };
    assert!(store.record_delivery(&github).await.unwrap());
    store.close().await;

    let mut conn = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql(&include_str!("../migrations/sqlite/0024_gitlab_deliveries.sql").replace(",'gitlab'", ""))
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::raw_sql("DELETE FROM executor_schema WHERE version >= 24").execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();

    let store = db.open().await;
    assert_eq!(
        store.last_delivery(WebhookSender::GitHub).await.unwrap().map(|d| d.1).as_deref(),
        Some("check_run")
    );
    let gitlab = executor::store::Delivery {
        sender: WebhookSender::GitLab,
        id: "after-v24",
        event: "Pipeline Hook",
        ..github
    };
    assert!(store.record_delivery(&gitlab).await.unwrap());
    assert!(!store.record_delivery(&github).await.unwrap(), "the old delivery is still known: a redelivery");
    store.close().await;
}

/// `executor webhooks print` gives GitLab's form its URL, secret token variable and triggers, and never
/// the secret itself.
#[test]
fn webhooks_print_shows_gitlabs_settings() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("executor.toml");
    std::fs::write(&config, format!("[paths]\ndata_dir = {:?}\n{CONFIG}", dir.path().join("data"))).unwrap();
    let print = |json: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_executor"));
        cmd.args(["--config", config.to_str().unwrap(), "webhooks", "print"]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.env("EXECUTOR_GITLAB_WEBHOOK_SECRET", SECRET).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = print(false);
    for expected in [
        "Settings → Webhooks → Add new webhook",
        "https://YOUR-HOST/webhooks/gitlab",
        "$EXECUTOR_GITLAB_WEBHOOK_SECRET",
        "(set in this environment)",
        "Merge request events, Pipeline events, Job events, Comments",
        "# repos.app: https://gitlab.com/group/app/-/hooks",
        "/webhooks/github", // the GitHub repository's settings too
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
    let json: Value = serde_json::from_str(&print(true)).unwrap();
    assert_eq!(json["gitlab"]["path"], "/webhooks/gitlab");
    assert_eq!(json["gitlab"]["secret_set"], true);
    assert_eq!(json["gitlab"]["projects"][0]["gitlab"], "group/app");
    assert!(!text.contains(SECRET) && !json.to_string().contains(SECRET), "the secret is never printed");
}
