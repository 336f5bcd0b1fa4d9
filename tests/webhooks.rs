//! The webhook receiver over real HTTP, on SQLite and PostgreSQL: deliveries signed as GitHub signs
//! them (`X-Hub-Signature-256` over the raw body, `X-GitHub-Event`, `X-GitHub-Delivery`,
//! `User-Agent: GitHub-Hookshot/…`) with payloads in GitHub's documented shapes
//! (`tests/data/webhooks/`). Every event executor watches marks the run's pull request and wakes the
//! runner; forged, unsigned, replayed and oversized deliveries change nothing and are logged; unknown
//! events, repositories and pull requests are acknowledged and ignored; the dashboard's security is
//! untouched.

mod common;
mod web_support;

use std::io::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use common::TestDb;
use executor::config::Config;
use executor::domain::{Actor, TaskGid, WakeScope, WebhookSender};
use executor::store::{NewTask, Store};
use executor::web::AppState;
use executor::web::webhooks::signature::sign_github;
use reqwest::StatusCode;
use serde_json::Value;

on_both_databases!(
    every_watched_event_marks_the_runs_pull_request_and_wakes_the_runner,
    forged_unsigned_and_replayed_deliveries_change_nothing_and_are_logged,
    deliveries_for_what_executor_does_not_own_are_acknowledged_and_ignored,
    a_mark_made_while_an_observation_runs_stays_for_the_next,
);

const SECRET: &str = "whsec-test-0123456789abcdef";
const HEAD: &str = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c";
const BRANCH: &str = "executor/1207-add-the-feature-file";

const CONFIG: &str = r#"
[repos.app]
path = "/nonexistent/app"
forge = "github"
github = "octo/app"
"#;

/// Every log line of this test binary, to find what the receiver logged (tests run in parallel: each
/// looks for its own delivery ids).
fn logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("executor=info"))
            .with_writer(move || LogWriter(sink.clone()))
            .with_ansi(false)
            .try_init();
        buffer
    })
    .clone()
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logged() -> String {
    String::from_utf8_lossy(&logs().lock().unwrap()).to_string()
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/data/webhooks/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The receiver served with `config`, the secret set, over `store`; its base URL and stop signal.
async fn serve(store: &Store, config: &str) -> (String, tokio::sync::watch::Sender<bool>) {
    logs();
    let config = Config::parse(config).unwrap();
    let mut state = AppState::new(store.clone(), Arc::new(config), "t".repeat(32), None);
    state.webhook_secret = Some(Arc::new(SECRET.to_string()));
    web_support::serve(state).await
}

/// A run of task `gid` with pull request `number` at head `HEAD` on branch `BRANCH`.
async fn run_with_pr(store: &Store, gid: &str, number: i64) -> i64 {
    let g = TaskGid::parse(gid).unwrap();
    let t = NewTask { description: Some(format!("task {gid}")), ..Default::default() };
    store.upsert_task(&g, &t, Actor::Cli).await.unwrap();
    store.approve_task(&g, true, Actor::Cli).await.unwrap();
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap().id;
    store.set_run_workspace(run, None, "/tmp/wt", BRANCH).await.unwrap();
    store.set_run_pr(run, None, &format!("https://github.com/octo/app/pull/{number}"), number).await.unwrap();
    store.set_run_head(run, None, HEAD).await.unwrap();
    run
}

/// Posts `body` as GitHub does, signed with `secret` (or unsigned).
async fn deliver(
    base: &str,
    event: &str,
    id: &str,
    body: &[u8],
    secret: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/webhooks/github"))
        .header("User-Agent", "GitHub-Hookshot/7d9b5a1")
        .header("Content-Type", "application/json")
        .header("X-GitHub-Event", event)
        .header("X-GitHub-Delivery", id)
        .header("X-GitHub-Hook-ID", "109948940")
        .body(body.to_vec());
    if let Some(secret) = secret {
        request = request.header("X-Hub-Signature-256", sign_github(secret.as_bytes(), body));
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn id(test: &str, n: usize) -> String {
    format!("{test}-{n}-{}", std::process::id())
}

async fn marks(store: &Store) -> Vec<i64> {
    store.pr_marks("app").await.unwrap().into_iter().map(|(_, n)| n).collect()
}

async fn every_watched_event_marks_the_runs_pull_request_and_wakes_the_runner(db: TestDb) {
    let store = db.open().await;
    run_with_pr(&store, "1207", 7).await;
    let (base, _stop) = serve(&store, CONFIG).await;
    let events = [
        ("check_run", fixture("check_run")),
        ("check_suite", fixture("check_suite")),
        ("workflow_run", fixture("workflow_run")),
        ("status", fixture("status")),
        ("pull_request", fixture("pull_request")),
        ("pull_request_review", fixture("pull_request_review")),
        ("pull_request_review_comment", fixture("pull_request_review_comment")),
        ("pull_request_review_thread", fixture("pull_request_review_thread")),
        ("issue_comment", fixture("issue_comment")),
    ];
    for (n, (event, payload)) in events.iter().enumerate() {
        let before = store.wake_state(WakeScope::Runner).await.unwrap();
        let body = serde_json::to_vec(payload).unwrap();
        let (status, answer) = deliver(&base, event, &id("marks", n), &body, Some(SECRET)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{event}: {answer}");
        assert_eq!(answer["outcome"], "marked", "{event}");
        assert_eq!(marks(&store).await, [7], "{event}: one mark on pull request 7");
        let after = store.wake_state(WakeScope::Runner).await.unwrap();
        assert_eq!(after.requested, before.requested + 1, "{event} wakes the runner");
        assert!(after.pending());
        // The runner's observation honours the mark and removes it.
        let (up_to, _) = *store.pr_marks("app").await.unwrap().last().unwrap();
        store.clear_pr_marks("app", &[7], up_to).await.unwrap();
    }
    // A check from a fork lists no pull request: it is matched by its head commit, and a status by
    // its branch alone.
    let mut fork = fixture("check_run");
    fork["check_run"]["pull_requests"] = Value::Array(vec![]);
    let (status, answer) =
        deliver(&base, "check_run", &id("marks", 20), &serde_json::to_vec(&fork).unwrap(), Some(SECRET))
            .await;
    assert_eq!((status, answer["outcome"].as_str()), (StatusCode::ACCEPTED, Some("marked")));
    let mut by_branch = fixture("status");
    by_branch["sha"] = Value::from("1111111111111111111111111111111111111111");
    let (_, answer) =
        deliver(&base, "status", &id("marks", 21), &serde_json::to_vec(&by_branch).unwrap(), Some(SECRET))
            .await;
    assert_eq!(answer["outcome"], "marked");
    // A runner beginning its tick sees every wake so far: nothing pending until the next delivery.
    let seen = store.take_wake(WakeScope::Runner).await.unwrap();
    let state = store.wake_state(WakeScope::Runner).await.unwrap();
    assert_eq!((state.seen, state.pending()), (seen, false));
    let last = store.last_delivery(WebhookSender::GitHub).await.unwrap().expect("recorded");
    assert_eq!(last.1, "status");
}

async fn forged_unsigned_and_replayed_deliveries_change_nothing_and_are_logged(db: TestDb) {
    let store = db.open().await;
    run_with_pr(&store, "1207", 7).await;
    let (base, _stop) = serve(&store, CONFIG).await;
    let body = serde_json::to_vec(&fixture("check_run")).unwrap();
    let wake = store.wake_state(WakeScope::Runner).await.unwrap();

    let forged = id("forged", 1);
    let (status, _) = deliver(&base, "check_run", &forged, &body, Some("not-the-secret-at-all")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let unsigned = id("unsigned", 2);
    let (status, _) = deliver(&base, "check_run", &unsigned, &body, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Signed, then altered on the way: the signature no longer matches.
    let altered = id("altered", 3);
    let mut tampered = body.clone();
    tampered.extend_from_slice(b" ");
    let response = reqwest::Client::new()
        .post(format!("{base}/webhooks/github"))
        .header("Content-Type", "application/json")
        .header("X-GitHub-Event", "check_run")
        .header("X-GitHub-Delivery", &altered)
        .header("X-Hub-Signature-256", sign_github(SECRET.as_bytes(), &body))
        .body(tampered)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(marks(&store).await.is_empty(), "a refused delivery marks nothing");
    assert_eq!(store.wake_state(WakeScope::Runner).await.unwrap(), wake, "nor wakes anyone");
    assert_eq!(store.last_delivery(WebhookSender::GitHub).await.unwrap(), None, "nor is recorded");

    // Oversized: refused on its declared length, before a byte of the body is read.
    let oversized = id("oversized", 4);
    let status = declare_oversized(&base, &oversized).await;
    assert_eq!(status, 413);
    // Oversized without a declared length (chunked): cut off as it streams in, at the limit.
    let streamed = id("streamed", 6);
    assert_eq!(stream_oversized(&base, &streamed).await, 413);
    assert!(
        marks(&store).await.is_empty() && store.last_delivery(WebhookSender::GitHub).await.unwrap().is_none()
    );

    // The real one, then GitHub redelivering it: acknowledged, done once.
    let real = id("real", 5);
    let (status, answer) = deliver(&base, "check_run", &real, &body, Some(SECRET)).await;
    assert_eq!((status, answer["outcome"].as_str()), (StatusCode::ACCEPTED, Some("marked")));
    let (status, answer) = deliver(&base, "check_run", &real, &body, Some(SECRET)).await;
    assert_eq!((status, answer["outcome"].as_str()), (StatusCode::OK, Some("already_received")));
    assert_eq!(marks(&store).await, [7], "the redelivery marks nothing more");
    assert_eq!(store.wake_state(WakeScope::Runner).await.unwrap().requested, wake.requested + 1);

    let logs = logged();
    for (refused, why) in [
        (&forged, "401 X-Hub-Signature-256: the signature does not match"),
        (&unsigned, "401 X-Hub-Signature-256: no signature header"),
        (&altered, "401 X-Hub-Signature-256: the signature does not match"),
        (&oversized, "413 the body is larger than the forge's 25 MB limit"),
        (&streamed, "413 the body is larger than the forge's 25 MB limit"),
    ] {
        let line = logs
            .lines()
            .find(|l| l.contains(refused.as_str()))
            .unwrap_or_else(|| panic!("{refused} not logged:\n{logs}"));
        assert!(line.contains(why) && line.contains("webhook refused from 127.0.0.1"), "{line}");
    }
    assert!(logs.lines().any(|l| l.contains(&real) && l.contains("a redelivery")), "{logs}");
    assert!(!logs.contains(SECRET), "the secret is never logged");
}

/// Sends headers declaring a 30 MB body and no body at all: the answer must come without the body
/// being read (a receiver that waited for it would hang). Returns the status code.
async fn declare_oversized(base: &str, delivery: &str) -> u16 {
    let addr = base.trim_start_matches("http://").to_string();
    let delivery = delivery.to_string();
    tokio::task::spawn_blocking(move || {
        use std::io::Read as _;
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        let head = format!(
            "POST /webhooks/github HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: GitHub-Hookshot/7d9b5a1\r\n\
             Content-Type: application/json\r\nX-GitHub-Event: check_run\r\nX-GitHub-Delivery: {delivery}\r\n\
             X-Hub-Signature-256: sha256={}\r\nContent-Length: 30000000\r\n\r\n",
            "0".repeat(64)
        );
        stream.write_all(head.as_bytes()).unwrap();
        let mut answer = [0u8; 64];
        let n = stream.read(&mut answer).expect("an answer before the body was sent");
        let line = String::from_utf8_lossy(&answer[..n]).to_string();
        line.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0)
    })
    .await
    .unwrap()
}

/// Sends a chunked body of 26 MiB (no Content-Length): the receiver must stop at 25 MB and refuse.
/// Returns the status code.
async fn stream_oversized(base: &str, delivery: &str) -> u16 {
    let addr = base.trim_start_matches("http://").to_string();
    let delivery = delivery.to_string();
    tokio::task::spawn_blocking(move || {
        use std::io::Read as _;
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
        let head = format!(
            "POST /webhooks/github HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: GitHub-Hookshot/7d9b5a1\r\n\
             Content-Type: application/json\r\nX-GitHub-Event: check_run\r\nX-GitHub-Delivery: {delivery}\r\n\
             X-Hub-Signature-256: sha256={}\r\nTransfer-Encoding: chunked\r\n\r\n",
            "0".repeat(64)
        );
        stream.write_all(head.as_bytes()).unwrap();
        let chunk = vec![b' '; 1024 * 1024];
        for _ in 0..26 {
            // The server may answer and close before all is sent: that is the point.
            if stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).is_err()
                || stream.write_all(&chunk).is_err()
                || stream.write_all(b"\r\n").is_err()
            {
                break;
            }
        }
        let _ = stream.write_all(b"0\r\n\r\n");
        let mut answer = [0u8; 64];
        let n = stream.read(&mut answer).unwrap_or(0);
        let line = String::from_utf8_lossy(&answer[..n]).to_string();
        line.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0)
    })
    .await
    .unwrap()
}

async fn deliveries_for_what_executor_does_not_own_are_acknowledged_and_ignored(db: TestDb) {
    let store = db.open().await;
    run_with_pr(&store, "1207", 7).await;
    let (base, _stop) = serve(&store, CONFIG).await;
    let wake = store.wake_state(WakeScope::Runner).await.unwrap();
    let mut other_repo = fixture("check_run");
    other_repo["repository"]["full_name"] = Value::from("someone/else");
    let mut other_pr = fixture("pull_request_review");
    other_pr["pull_request"]["number"] = Value::from(99);
    let cases: Vec<(&str, Value, &str)> = vec![
        ("check_run", other_repo, "unknown_repo"),
        ("pull_request_review", other_pr, "not_ours"),
        ("issue_comment", fixture("issue_comment_on_issue"), "ignored_event"),
        ("pull_request", fixture("pull_request_edited"), "ignored_event"),
        ("ping", fixture("ping"), "ignored_event"),
        (
            "star",
            serde_json::json!({"action": "created", "repository": {"full_name": "octo/app"}}),
            "ignored_event",
        ),
    ];
    for (n, (event, payload, outcome)) in cases.into_iter().enumerate() {
        let body = serde_json::to_vec(&payload).unwrap();
        let (status, answer) = deliver(&base, event, &id("ignored", n), &body, Some(SECRET)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{event}: {answer}");
        assert_eq!(answer["outcome"], outcome, "{event}");
    }
    assert!(marks(&store).await.is_empty());
    assert_eq!(store.wake_state(WakeScope::Runner).await.unwrap(), wake, "nothing was woken");

    // Outside the dashboard's auth means only this route: the rest still needs the token, and a
    // delivery's route answers nothing but a signed POST.
    let client = reqwest::Client::new();
    assert_eq!(
        client.get(format!("{base}/api/v1/runs")).send().await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        client.post(format!("{base}/webhooks/other")).body("{}").send().await.unwrap().status(),
        StatusCode::UNAUTHORIZED,
        "an unknown path is the dashboard's, behind its auth"
    );
    assert_eq!(
        client.get(format!("{base}/webhooks/github")).send().await.unwrap().status(),
        StatusCode::METHOD_NOT_ALLOWED
    );
}

async fn a_mark_made_while_an_observation_runs_stays_for_the_next(db: TestDb) {
    let store = db.open().await;
    run_with_pr(&store, "1207", 7).await;
    let (base, _stop) = serve(&store, CONFIG).await;
    let body = serde_json::to_vec(&fixture("pull_request_review")).unwrap();
    assert_eq!(
        deliver(&base, "pull_request_review", &id("race", 1), &body, Some(SECRET)).await.0,
        StatusCode::ACCEPTED
    );
    // The observation reads the marks, then a second delivery comes before it is done.
    let read = store.pr_marks("app").await.unwrap();
    assert_eq!(
        deliver(&base, "pull_request_review", &id("race", 2), &body, Some(SECRET)).await.0,
        StatusCode::ACCEPTED
    );
    let up_to = read.iter().map(|(id, _)| *id).max().unwrap();
    store.clear_pr_marks("app", &[7], up_to).await.unwrap();
    assert_eq!(marks(&store).await, [7], "the later mark is the next observation's");
}
