//! Finding tasks on the queue page in a real headless Chromium, at a desktop's width and at a phone's
//! (400 px): sort by a header and reverse it, filter by status, search, jump to a page — each by
//! clicking and typing as a person does, each step's page saved to `target/screenshots/find-*.png`.

mod browser_support;
mod common;
mod web_support;

use std::time::{Duration, Instant};

use browser_support::{Browser, Site, chromedriver, click};
use executor::config::Config;
use executor::domain::{Actor, QueueStatus, TaskGid};
use executor::store::NewTask;
use fantoccini::Locator;

const TOKEN: &str = "feedfacefeedfacefeedfacefeedface";

/// Waits until the page's address and text satisfy `check` (a click starts a page load), or fails
/// naming `what` with what the page says.
async fn until(b: &Browser, what: &str, check: impl Fn(&str, &str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let url = b.client.current_url().await.unwrap().to_string();
        let text = match b.client.find(Locator::Css("body")).await {
            Ok(body) => body.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if check(&url, &text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{what}: at {url}\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The gid in the first row of the table.
async fn first_row(b: &Browser) -> String {
    b.client.find(Locator::Css("table.queue tbody tr td:nth-child(2) a")).await.unwrap().text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn sort_filter_search_and_jump_at_desktop_and_phone_widths() {
    let site = Site::start(Config::default(), TOKEN).await;
    let store = &site.store;
    // 120 tasks, every third awaiting go; T-006 (awaiting go) holds the needle.
    let tasks: Vec<(TaskGid, NewTask)> = (0..120)
        .map(|i| {
            let text =
                if i == 6 { "Fix the NEEDLE in login.rs".to_string() } else { format!("Task number {i}") };
            let t = NewTask { description: Some(text), source: Some("inbox".into()), ..Default::default() };
            (TaskGid::parse(&format!("T-{i:03}")).unwrap(), t)
        })
        .collect();
    store.upsert_tasks(&tasks, Actor::Cli).await.unwrap();
    for (g, _) in tasks.iter().step_by(3) {
        store.set_task_status(g, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
    }
    let base = &site.base;
    let b = Browser::start(&chromedriver()).await;
    b.client.goto(&format!("{base}/?token={TOKEN}")).await.unwrap();

    for (width, name) in [(1280, "desktop"), (400, "phone")] {
        b.client.set_window_size(width, 900).await.unwrap();
        b.client.goto(&format!("{base}/queue")).await.unwrap();
        until(&b, "the queue", |_, text| text.contains("120 tasks")).await;

        // Sort by GID with its header, then reverse it with the same header; on a phone, where the
        // header row is out of sight (the rows stack), with the same links above the table.
        let (links, current) = if width > 640 {
            ("th a.sort", "th[aria-sort] a.sort")
        } else {
            (".sort-links a.sort", ".sort-links a[aria-current]")
        };
        click(&b, &format!("{links}[href*='sort=gid']")).await;
        until(&b, "sorted by gid", |url, _| url.ends_with("/queue?sort=gid")).await;
        assert_eq!(first_row(&b).await, "T-000");
        let th = b.client.find(Locator::Css("th[aria-sort]")).await.unwrap();
        assert_eq!(th.attr("aria-sort").await.unwrap().as_deref(), Some("ascending"));
        let sorted = b.client.find(Locator::Css(current)).await.unwrap();
        assert!(sorted.text().await.unwrap().starts_with("GID"));
        b.screenshot(&format!("find-sorted-{name}")).await;
        click(&b, current).await;
        until(&b, "reversed", |url, _| url.ends_with("sort=gid&dir=desc")).await;
        assert_eq!(first_row(&b).await, "T-119");

        // Filter by status: the sort stays.
        let select = b.client.find(Locator::Css("select[name=status]")).await.unwrap();
        select.select_by_value("awaiting_go").await.unwrap();
        click(&b, "form.filters button[type=submit]").await;
        let text = until(&b, "filtered", |url, _| url.contains("status=awaiting_go")).await;
        assert!(text.contains("40 tasks"), "{text}");
        assert_eq!(first_row(&b).await, "T-117", "awaiting go, still newest gid first");
        b.screenshot(&format!("find-filtered-{name}")).await;

        // Search within the filter.
        let search = b.client.find(Locator::Css("input[name=q]")).await.unwrap();
        search.send_keys("needle login").await.unwrap();
        click(&b, "form.filters button[type=submit]").await;
        let text = until(&b, "searched", |url, _| url.contains("q=needle")).await;
        assert!(text.contains("1 task") && text.contains("Fix the NEEDLE in login.rs"), "{text}");
        assert_eq!(first_row(&b).await, "T-006");
        b.screenshot(&format!("find-searched-{name}")).await;

        // Jump to page 3 of every task, sorted by gid.
        b.client.goto(&format!("{base}/queue?sort=gid")).await.unwrap();
        let page = b.client.find(Locator::Css("form.jump input[name=page]")).await.unwrap();
        page.clear().await.unwrap();
        page.send_keys("3").await.unwrap();
        click(&b, "form.jump button").await;
        let text = until(&b, "page 3", |url, _| url.contains("page=3")).await;
        assert!(text.contains("page 3 of 3"), "{text}");
        assert_eq!(first_row(&b).await, "T-100");
        b.screenshot(&format!("find-page3-{name}")).await;
    }
    b.close().await;
}
