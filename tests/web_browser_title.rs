//! Issue 35, item 3 (part), in a real headless Chromium: the tab's title carries the count of "Needs
//! you" — "(2) Queue · executor" — and the live updates keep it current when an item is added; the
//! header's notifications button is off until the person turns it on, and then one notification says
//! that new items appeared, not one per refresh. The browser's Notification is replaced by a recorder
//! (a headless browser shows none, and would ask the person for permission).

mod browser_support;
mod common;
mod web_support;

use browser_support::{Browser, Site, click, eventually, text_of};
use executor::config::Config;
use executor::domain::{Actor, QueueStatus, TaskGid};
use executor::store::{NewTask, Store};
use fantoccini::Locator;

const TOKEN: &str = "titletitletitletitletitletitle0123";

/// A task in the queue; `awaiting` puts it on "Needs you" (awaiting your go).
async fn task(store: &Store, gid: &str, awaiting: bool) {
    let g = TaskGid::parse(gid).unwrap();
    let t = NewTask { description: Some(format!("Task {gid}")), ..Default::default() };
    store.upsert_task(&g, &t, Actor::Cli).await.unwrap();
    if awaiting {
        store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
    }
}

async fn title(b: &Browser) -> String {
    b.client.title().await.unwrap_or_default()
}

async fn notified(b: &Browser) -> usize {
    let n = b.client.execute("return (window.__notified || []).length", vec![]).await.unwrap();
    n.as_u64().unwrap_or(0) as usize
}

const RECORDER: &str = r#"
window.__notified = [];
class Recorder { constructor(title) { window.__notified.push(title); } }
Recorder.permission = "default";
Recorder.requestPermission = async function () { Recorder.permission = "granted"; return "granted"; };
window.Notification = Recorder;
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn the_title_counts_needs_you_and_one_notification_tells_of_new_items() {
    let site = Site::start(Config::default(), TOKEN).await;
    task(&site.store, "T-1", true).await;
    let b = site.browser().await;

    // Needs you says its count in its title as the server renders it.
    assert_eq!(title(&b).await, "(1) Needs you · executor");
    // Another page carries it too, and the live update keeps it current.
    b.client.goto(&format!("{}/queue", site.base)).await.unwrap();
    eventually("the queue's title counts Needs you", || async { title(&b).await == "(1) Queue · executor" })
        .await;
    task(&site.store, "T-2", true).await;
    eventually("the title counts the new item", || async { title(&b).await == "(2) Queue · executor" }).await;

    // Notifications are off until asked for (remembered in localStorage), then on.
    let toggle = "#notify-toggle";
    assert_eq!(text_of(&b, toggle).await, "Notify me");
    let button = b.client.find(Locator::Css(toggle)).await.unwrap();
    assert_eq!(button.attr("aria-pressed").await.unwrap().as_deref(), Some("false"));
    b.client.execute(RECORDER, vec![]).await.unwrap();
    click(&b, toggle).await;
    eventually("notifications are on", || async { text_of(&b, toggle).await == "Notifications on" }).await;
    let remembered =
        b.client.execute("return localStorage.getItem('executor.notify')", vec![]).await.unwrap();
    assert_eq!(remembered.as_str(), Some("on"));

    // A new item: one notification, and the title moves.
    task(&site.store, "T-3", true).await;
    eventually("the title counts the third item", || async { title(&b).await == "(3) Queue · executor" })
        .await;
    eventually("one notification", || async { notified(&b).await == 1 }).await;
    // A change that adds nothing to Needs you refreshes the page, and notifies no one.
    task(&site.store, "P-1", false).await;
    eventually("the queue shows the pending task", || async { text_of(&b, "main").await.contains("P-1") })
        .await;
    assert_eq!(notified(&b).await, 1, "a refresh with nothing new notified");
    assert_eq!(title(&b).await, "(3) Queue · executor");
    b.close().await;
}
