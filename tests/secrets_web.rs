//! Issue 32, item 4: a dashboard started from a shell without the token's variable (its redactor knows
//! no values) still never serves a token of a well-known shape, in a page or a JSON answer.

mod common;
mod web_support;

use std::sync::Arc;

use executor::config::Config;
use executor::domain::{Actor, TaskGid};
use executor::store::NewTask;
use executor::web::AppState;

const DASHBOARD: &str = "0123456789abcdef0123456789abcdef";
const FOREIGN: &str = "ghp_ServedWithoutItsVariable0123456789ab";

#[tokio::test]
async fn a_serve_without_the_tokens_variable_still_hides_its_shape() {
    let db = common::sqlite();
    let store = db.open().await;
    let gid = TaskGid::parse("W-1").unwrap();
    let notes =
        format!("CI printed GH_TOKEN={FOREIGN}; also Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload");
    let task = NewTask { description: Some("rotate".into()), notes: Some(notes), ..Default::default() };
    store.upsert_task(&gid, &task, Actor::Cli).await.unwrap();
    let state = AppState::new(store, Arc::new(Config::default()), DASHBOARD.to_string(), None);
    let (base, stop) = web_support::serve(state).await;
    let http = reqwest::Client::new();
    for path in ["/api/v1/tasks/W-1", "/tasks/W-1"] {
        let answer = http.get(format!("{base}{path}")).bearer_auth(DASHBOARD).send().await.unwrap();
        assert!(answer.status().is_success(), "{path}: {}", answer.status());
        let body = answer.text().await.unwrap();
        assert!(
            !body.contains("ServedWithoutItsVariable") && !body.contains("eyJhbGciOiJIUzI1NiJ9"),
            "{path}"
        );
        assert!(body.contains("[REDACTED]"), "{path}");
    }
    let _ = stop.send(true);
}
