//! A human's skip (one or a selection) and abandon from the dashboard are told to the task's tracker like
//! `executor skip`'s and `executor runs abandon`'s (issue 24): the JSON API and the page's forms record
//! the message before the change, when the task's source writes that event back, and not otherwise.

mod common;
mod web_support;

use std::sync::Arc;

use executor::config::Config;
use executor::domain::{Actor, TaskGid, WritebackEvent};
use executor::store::NewTask;
use executor::web::AppState;
use serde_json::json;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skip_from_the_api_is_recorded_for_the_tracker_that_asks() {
    let db = common::sqlite();
    let store = db.open().await;
    let config = Config::parse(
        "[[sources]]\nname = \"inbox\"\nkind = \"asana\"\nprojects = [\"1\"]\nwriteback = [\"skipped\"]\n\
         [[sources]]\nname = \"quiet\"\nkind = \"asana\"\nprojects = [\"2\"]\n",
    )
    .unwrap();
    for (gid, source) in [("1207", "inbox"), ("1208", "quiet")] {
        let new =
            NewTask { description: Some("work".into()), source: Some(source.into()), ..Default::default() };
        store.upsert_task(&TaskGid::parse(gid).unwrap(), &new, Actor::Cli).await.unwrap();
    }
    let state = AppState::new(store.clone(), Arc::new(config), TOKEN.to_string(), None);
    let (base, stop) = web_support::serve(state).await;
    let http = reqwest::Client::new();
    for gid in ["1207", "1208"] {
        let answer = http
            .post(format!("{base}/api/v1/tasks/{gid}/skip"))
            .bearer_auth(TOKEN)
            .json(&json!({"reason": "duplicate"}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    }
    let rows = store.writebacks(None).await.unwrap();
    assert_eq!(rows.len(), 1, "only the source that asks: {rows:?}");
    assert_eq!((rows[0].task_gid.as_str(), rows[0].event), ("1207", WritebackEvent::Skipped));
    assert!(rows[0].message.contains("a human decided: duplicate"), "{}", rows[0].message);
    // Skipped already: a second skip is refused (409), and records nothing.
    let again = http
        .post(format!("{base}/api/v1/tasks/1207/skip"))
        .bearer_auth(TOKEN)
        .json(&json!({"reason": "again"}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);
    assert_eq!(store.writebacks(None).await.unwrap().len(), 1);
    let _ = stop.send(true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_skip_and_an_abandon_from_the_dashboard_are_told_as_the_cli_tells_them() {
    let db = common::sqlite();
    let store = db.open().await;
    let config = Config::parse(
        "[[sources]]\nname = \"inbox\"\nkind = \"asana\"\nprojects = [\"1\"]\nwriteback = [\"skipped\", \"abandoned\"]\n",
    )
    .unwrap();
    for gid in ["1301", "1302", "1303"] {
        let new =
            NewTask { description: Some("work".into()), source: Some("inbox".into()), ..Default::default() };
        store.upsert_task(&TaskGid::parse(gid).unwrap(), &new, Actor::Cli).await.unwrap();
    }
    store.approve_task(&TaskGid::parse("1303").unwrap(), true, Actor::Cli).await.unwrap();
    let run =
        store.create_run_for_task(&TaskGid::parse("1303").unwrap(), Actor::Runner).await.unwrap().unwrap();
    let state = AppState::new(store.clone(), Arc::new(config), TOKEN.to_string(), None);
    let (base, stop) = web_support::serve(state).await;
    let http = reqwest::Client::new();
    let bulk = http
        .post(format!("{base}/api/v1/tasks/bulk-skip"))
        .bearer_auth(TOKEN)
        .json(&json!({"gids": ["1301", "1302"], "reason": "not now"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bulk.status(), 200, "{}", bulk.text().await.unwrap());
    let abandon = http
        .post(format!("{base}/api/v1/runs/{}/abandon", run.id))
        .bearer_auth(TOKEN)
        .json(&json!({"reason": "wrong approach"}))
        .send()
        .await
        .unwrap();
    assert_eq!(abandon.status(), 200, "{}", abandon.text().await.unwrap());
    let rows = store.writebacks(None).await.unwrap();
    let told: Vec<(&str, WritebackEvent)> = rows.iter().map(|w| (w.task_gid.as_str(), w.event)).collect();
    assert_eq!(
        told,
        [
            ("1301", WritebackEvent::Skipped),
            ("1302", WritebackEvent::Skipped),
            ("1303", WritebackEvent::Abandoned)
        ],
        "{rows:?}"
    );
    assert!(rows[2].message.contains("abandoned by a human: wrong approach"), "{}", rows[2].message);
    let _ = stop.send(true);
}
