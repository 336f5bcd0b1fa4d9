//! Issue 35, item 11: a tracker's edit to an approved or done task waits for a person, and "Needs you"
//! lists it, counted whole, over real HTTP on SQLite and PostgreSQL: an approved task's revision is
//! accepted from the list (the CLI's `approve`, recorded as `web`), a done task's is not offered an
//! accept that would be refused, and the API counts the list in its total.

mod common;
mod web_support;

use common::TestDb;
use executor::config::Config;
use executor::domain::{Actor, QueueStatus, TaskGid};
use executor::store::{NeedsYouLimits, NewTask, Store};
use reqwest::StatusCode;
use web_support::{Dashboard, csrf_of, form};

on_both_databases!(revisions_of_approved_and_done_tasks_wait_on_needs_you_counted_whole);

const TOKEN: &str = "revisions-token-0123456789abcdef012345";

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).expect("gid")
}

/// A task approved (and then `then`, if any) whose tracker then sent `revised` as its text.
async fn revised(store: &Store, id: &str, then: Option<QueueStatus>, revised: &str) {
    let text = |d: &str| NewTask { description: Some(d.into()), ..Default::default() };
    store.upsert_task(&gid(id), &text("the approved text"), Actor::Cli).await.unwrap();
    store.approve_task(&gid(id), true, Actor::Cli).await.unwrap();
    if let Some(status) = then {
        store.set_task_status(&gid(id), status, Actor::Cli, None).await.unwrap();
    }
    store.upsert_task(&gid(id), &text(revised), Actor::Cli).await.unwrap();
}

async fn revisions_of_approved_and_done_tasks_wait_on_needs_you_counted_whole(db: TestDb) {
    let store = db.open().await;
    revised(&store, "REV-1", None, "Now also in French").await;
    revised(&store, "REV-2", None, "Now also in German").await;
    revised(&store, "DONE-1", Some(QueueStatus::Done), "And one more thing").await;
    // An approved task the tracker did not change waits for nobody.
    store.upsert_task(&gid("SAME"), &NewTask::default(), Actor::Cli).await.unwrap();
    store.approve_task(&gid("SAME"), true, Actor::Cli).await.unwrap();

    // Counted whole, whatever part is returned.
    let limits = NeedsYouLimits { per_list: 1, max_analysis_attempts: 3 };
    let needs = store.needs_you(limits).await.unwrap();
    assert_eq!((needs.revisions_pending.total, needs.revisions_pending.items.len()), (3, 1));
    assert_eq!(needs.total(), 3);

    let dash = Dashboard::start(store.clone(), Config::default(), TOKEN).await;
    let (status, page) = dash.get("/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Needs you <small>3 waiting</small>"), "{page}");
    assert!(page.contains("Tracker edits to accept <small>3</small>"), "{page}");
    assert!(page.contains(r#"action="/tasks/REV-1/approve""#), "{page}");
    // A done task's revision: said why nothing accepts it, and no button that would be refused.
    assert!(!page.contains(r#"action="/tasks/DONE-1/approve""#), "{page}");
    assert!(page.contains("Done: its work is finished"), "{page}");

    // Accepting one from the list is the CLI's approve: the new text is the task's, and it leaves.
    let csrf = csrf_of(&page).expect("csrf");
    let r = dash.post_form("/tasks/REV-1/approve", form(&[("csrf", &csrf), ("back", "needs")])).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let task = store.task(&gid("REV-1")).await.unwrap();
    assert_eq!((task.description.as_deref(), task.revision_at), (Some("Now also in French"), None));
    let (_, page) = dash.get("/").await;
    assert!(page.contains("Tracker edits to accept <small>2</small>"), "{page}");

    // The API's total counts the list too.
    let api: serde_json::Value = dash
        .client
        .get(format!("{}/api/v1/needs-you", dash.base))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(api["needs"]["revisions_pending"]["total"], 2, "{api}");
    assert_eq!(api["total"], 2, "{api}");
}
