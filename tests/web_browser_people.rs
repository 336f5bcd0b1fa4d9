//! Two people at the dashboard in a real headless Chromium, each logged in with their own URL: the
//! approver approves a task; the viewer is not offered it, and its form sent anyway is refused with what
//! would allow it. The header names each, and the task page's history names who approved. Screenshots
//! go to `target/screenshots/`.

mod browser_support;
mod common;
mod web_support;

use browser_support::{Browser, Site, chromedriver, click, eventually, text_of};
use executor::config::Config;
use executor::domain::{Actor, QueueStatus, Role, TaskGid};
use executor::store::{NewTask, Store};
use executor::web::person::{new_token, token_sha256};
use fantoccini::Locator;

const TOKEN: &str = "feedfacefeedfacefeedfacefeedface";

async fn person(store: &Store, name: &str, role: Role) -> String {
    let token = new_token().unwrap();
    store.add_user(name, role, &token_sha256(&token), Actor::Cli.into()).await.unwrap();
    token
}

/// A Chromium logged in with `token`, as the person's printed URL does.
async fn logged_in(site: &Site, token: &str) -> Browser {
    let b = Browser::start(&chromedriver()).await;
    b.client.goto(&format!("{}/?token={token}", site.base)).await.unwrap();
    assert!(
        !b.client.current_url().await.unwrap().as_str().contains("token="),
        "the token left the address bar"
    );
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn an_approver_approves_and_a_viewer_is_refused_in_the_browser() {
    let site = Site::start(Config::default(), TOKEN).await;
    let (alice, victor) = (
        person(&site.store, "alice", Role::Approver).await,
        person(&site.store, "victor", Role::Viewer).await,
    );
    let gid = TaskGid::parse("P-1").unwrap();
    let t = NewTask { description: Some("Fix the crash when saving".into()), ..Default::default() };
    site.store.upsert_task(&gid, &t, Actor::Cli).await.unwrap();
    site.store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Analyzer, None).await.unwrap();

    let v = logged_in(&site, &victor).await;
    v.client.goto(&format!("{}/tasks/P-1", site.base)).await.unwrap();
    assert_eq!(text_of(&v, ".me").await, "victor viewer");
    // A viewer is not offered the button; the form sent anyway (by a script) is refused.
    let form = v.client.find(Locator::Css("form[action='/tasks/P-1/approve']")).await.unwrap();
    assert!(!form.is_displayed().await.unwrap(), "a viewer is not offered Approve");
    v.client
        .execute("document.querySelector(\"form[action='/tasks/P-1/approve']\").submit()", vec![])
        .await
        .unwrap();
    eventually("the viewer is told why not", || async {
        text_of(&v, "body").await.contains("victor is a viewer")
    })
    .await;
    v.screenshot("people-viewer-refused").await;
    assert_eq!(site.store.task(&gid).await.unwrap().status, QueueStatus::AwaitingGo);
    v.close().await;

    let a = logged_in(&site, &alice).await;
    a.client.goto(&format!("{}/tasks/P-1", site.base)).await.unwrap();
    assert_eq!(text_of(&a, ".me").await, "alice approver");
    click(&a, "form[action='/tasks/P-1/approve'] button").await;
    eventually("the task is approved", || async {
        site.store.task(&gid).await.unwrap().status == QueueStatus::Approved
    })
    .await;
    a.client.goto(&format!("{}/tasks/P-1", site.base)).await.unwrap();
    eventually("the history names her", || async {
        text_of(&a, "table.events").await.contains("alice (web)")
    })
    .await;
    a.screenshot("people-approver-approved").await;
    a.close().await;
}
