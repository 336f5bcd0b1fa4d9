//! A secret the config knows (here the notice webhook's URL, which carries its credential) never leaves
//! executor in an answer or an event, wherever stored text carried it: task notes, a review comment in a
//! pull request's snapshot, a note in the history, a human's skip reason.

mod cli_support;
mod common;
mod web_support;

use std::sync::Arc;

use executor::config::Config;
use executor::domain::{Actor, QueueStatus, TaskGid};
use executor::forge::{Comment, Mergeable, PrSnapshot, PrState};
use executor::store::{EventFilter, NewTask};
use executor::web::AppState;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const SECRET: &str = "https://hooks.example.test/services/T0/B0/planted-webhook-secret";

fn snapshot_quoting(secret: &str) -> String {
    let at = chrono::Utc::now();
    let pr = PrSnapshot {
        number: 5,
        url: "https://example.test/pr/5".into(),
        state: PrState::Open,
        draft: true,
        head_sha: "abc1234".into(),
        labels: Vec::new(),
        mergeable: Mergeable::Mergeable,
        checks: Vec::new(),
        comments: vec![Comment {
            id: "c1".into(),
            author: "alice".into(),
            body: format!("the CI log printed {secret}, please rotate it"),
            created_at: at,
            path: None,
            line: None,
            thread_id: None,
            thread_resolved: false,
            in_reply_to: None,
            by_agent: false,
            from_dashboard: false,
            author_association: None,
        }],
        observed_at: at,
        diff: None,
    };
    serde_json::to_string(&pr).expect("json")
}

#[tokio::test]
async fn no_page_or_api_answer_carries_a_configured_secret() {
    let db = common::sqlite();
    // The store as a test opens it does not scrub: the secret is stored as it came.
    let store = db.open().await;
    let gid = TaskGid::parse("S-1").unwrap();
    let task = NewTask {
        source: Some("inbox".into()),
        description: Some("rotate the webhook".into()),
        notes: Some(format!("the webhook is {SECRET}")),
        ..Default::default()
    };
    store.upsert_task(&gid, &task, Actor::Cli).await.unwrap();
    store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
    store.approve_task(&gid, false, Actor::Cli).await.unwrap();
    let run = store.create_run_for_task(&gid, Actor::Runner).await.unwrap().expect("a run");
    store.set_last_snapshot(run.id, None, &snapshot_quoting(SECRET)).await.unwrap();
    store
        .record_note(Actor::Runner, Some(&gid), Some(run.id), &format!("saw {SECRET} in a log"))
        .await
        .unwrap();
    let stored =
        store.events(&EventFilter { task_gid: Some(gid.clone()), ..Default::default() }).await.unwrap();
    assert!(stored.iter().any(|e| e.reason.as_deref().is_some_and(|r| r.contains(SECRET))), "planted");

    let mut config = Config::default();
    config.notify.webhook_url = SECRET.into();
    let state = AppState::new(store.clone(), Arc::new(config), TOKEN.to_string(), None);
    let (base, stop) = web_support::serve(state).await;
    let http = reqwest::Client::new();
    let mut redacted = 0;
    for path in [
        "/api/v1/tasks/S-1".to_string(),
        format!("/api/v1/runs/{}", run.id),
        "/api/v1/events?gid=S-1".to_string(),
        "/tasks/S-1".to_string(),
        format!("/runs/{}", run.id),
        "/runs".to_string(),
    ] {
        let answer = http.get(format!("{base}{path}")).bearer_auth(TOKEN).send().await.unwrap();
        assert!(answer.status().is_success(), "{path}: {}", answer.status());
        let body = answer.text().await.unwrap();
        assert!(!body.contains(SECRET) && !body.contains("planted-webhook-secret"), "{path} carries it");
        redacted += usize::from(body.contains("[REDACTED]"));
    }
    assert!(redacted >= 4, "the notes, the comment and the note show where the secret was: {redacted}");
    let _ = stop.send(true);
}

/// Events written through the CLI (a human's skip reason quoting the secret) are scrubbed before they
/// are stored: the database itself never holds it.
#[test]
fn an_event_reason_is_stored_without_the_secret() {
    let sb = cli_support::Sandbox::with_config("");
    let config = std::fs::read_to_string(sb.path().join("executor.toml")).unwrap();
    let config = config.replacen("webhook_url = \"\"", &format!("webhook_url = {SECRET:?}"), 1);
    assert!(config.contains(SECRET), "the template has [notify] webhook_url");
    std::fs::write(sb.path().join("executor.toml"), config).unwrap();
    sb.ok(&["queue", "add", "--gid", "7", "--description", "a task"]);
    sb.ok(&["skip", "7", "--reason", &format!("duplicate; its notes leak {SECRET}")]);
    let events = sb.json(&["events", "7"]).to_string();
    assert!(events.contains("duplicate; its notes leak [REDACTED]"), "{events}");
    let db = sb.path().join("data/executor.db");
    let raw = std::fs::read(&db).unwrap_or_default();
    let wal = std::fs::read(sb.path().join("data/executor.db-wal")).unwrap_or_default();
    let needle = b"planted-webhook-secret";
    let found = |bytes: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(!raw.is_empty(), "the database is at {}", db.display());
    assert!(!found(&raw) && !found(&wal), "the database holds no copy of the secret");
}
