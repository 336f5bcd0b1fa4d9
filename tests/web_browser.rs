//! The dashboard in a real headless Chromium: approve a task on the queue page and see it move; the
//! XSS payloads of task text render as text and never run; the live log follows a growing work log.
//! A screenshot of each page goes to `target/screenshots/`.

mod browser_support;
mod common;
mod web_support;

use std::time::Duration;

use browser_support::{Browser, Site, chromedriver, click, eventually, fits, number, text_of};
use executor::config::Config;
use executor::domain::{Actor, QueueStatus, RunState, TaskGid, WorkerKind};
use executor::store::{EventFilter, NewTask, SessionStart, Store};
use fantoccini::Locator;

const TOKEN: &str = "feedfacefeedfacefeedfacefeedface";
const XSS: [&str; 2] = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"];

async fn task(store: &Store, gid: &str, text: &str, status: QueueStatus) -> TaskGid {
    let g = TaskGid::parse(gid).unwrap();
    let t = NewTask { source: Some("inbox".into()), description: Some(text.into()), ..Default::default() };
    store.upsert_task(&g, &t, Actor::Cli).await.unwrap();
    if status != QueueStatus::Pending {
        store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
    }
    if status == QueueStatus::Approved {
        store.set_task_status(&g, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
    }
    g
}

/// Who made the last event `filter` finds (`web` for the dashboard's own acts).
async fn last_actor(site: &Site, filter: EventFilter) -> String {
    site.store.events(&filter).await.unwrap().last().unwrap().actor.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn a_task_approved_on_the_queue_page_moves_to_approved() {
    let site = Site::start(Config::default(), TOKEN).await;
    let gid = task(&site.store, "B-1", "Fix the crash when saving", QueueStatus::AwaitingGo).await;
    // The printed URL carries the token once; the server trades it for a cookie and redirects.
    let b = site.browser().await;
    b.client.goto(&format!("{}/queue", site.base)).await.unwrap();
    b.screenshot("queue").await;
    click(&b, &format!("form[action='/tasks/{gid}/approve'] button")).await;
    eventually("the task is approved", || async {
        site.store.task(&gid).await.unwrap().status == QueueStatus::Approved
    })
    .await;
    let body = b.client.find(Locator::Css("body")).await.unwrap().text().await.unwrap();
    assert!(body.contains("approved"), "{body}");
    b.screenshot("queue-after-approve").await;
    assert_eq!(last_actor(&site, EventFilter { task_gid: Some(gid), ..Default::default() }).await, "web");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn task_text_that_looks_like_html_is_shown_as_text_and_never_runs() {
    let site = Site::start(Config::default(), TOKEN).await;
    let g1 = task(&site.store, "X-1", XSS[0], QueueStatus::AwaitingGo).await;
    task(&site.store, "X-2", XSS[1], QueueStatus::AwaitingGo).await;
    let b = site.browser().await;
    for path in ["/".to_string(), "/queue".to_string(), format!("/tasks/{g1}")] {
        b.client.goto(&format!("{}{path}", site.base)).await.unwrap();
        // An alert would be open if either payload ran.
        assert!(b.client.get_alert_text().await.is_err(), "a payload ran on {path}");
        let text = b.client.find(Locator::Css("body")).await.unwrap().text().await.unwrap();
        assert!(text.contains(XSS[0]), "{path} shows the script tag as text: {text}");
        let injected = b.client.find_all(Locator::Css("img[src='x']")).await.unwrap();
        assert!(injected.is_empty(), "{path} made an <img> from task text");
    }
    b.screenshot("task-xss").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn the_live_log_shows_lines_as_the_work_log_grows() {
    let site = Site::start(Config::default(), TOKEN).await;
    let gid = task(&site.store, "L-1", "Watch me work", QueueStatus::Approved).await;
    let run = site.store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap();
    let start = SessionStart::default();
    let session = site
        .store
        .begin_worker_session(run.id, WorkerKind::Queued, "command", "h", &start)
        .await
        .unwrap()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("queued.md");
    // Longer than the window: the page opens at its end.
    let filler: String = (0..300).map(|i| format!("line {i} of what came before\n")).collect();
    std::fs::write(&log, format!("# queued worker\n\n{filler}first line\n")).unwrap();
    let out = dir.path().join("out.jsonl");
    site.store
        .set_worker_process(
            session.id,
            None,
            std::process::id() as i32,
            None,
            &out.display().to_string(),
            &log.display().to_string(),
        )
        .await
        .unwrap();
    let b = site.browser().await;
    b.client.goto(&format!("{}/sessions/{}/log", site.base, session.id)).await.unwrap();
    let page = |b: &Browser| {
        let c = b.client.clone();
        async move { c.find(Locator::Css("body")).await.unwrap().text().await.unwrap() }
    };
    eventually("the log so far", || async { page(&b).await.contains("first line") }).await;
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        writeln!(f, "second line, written later").unwrap();
    }
    eventually("the appended line arrives without a reload", || async {
        page(&b).await.contains("second line, written later")
    })
    .await;
    let bottom = "window.scrollY + window.innerHeight >= document.body.scrollHeight - 40";
    eventually("the log opens at its end", || async {
        b.client.execute(&format!("return {bottom}"), vec![]).await.unwrap().as_bool() == Some(true)
    })
    .await;
    assert!(number(&b, "return window.scrollY").await > 0.0, "scrolled down");
    b.screenshot("live-log").await;
    // The worker ends: the page says so, not "running".
    site.store
        .end_worker_session(
            session.id,
            None,
            &executor::store::WorkerEnd::new(executor::domain::EndReason::Finished),
        )
        .await
        .unwrap();
    eventually("the page says the worker ended", || async {
        let text = page(&b).await;
        text.contains("ended (finished)") && !text.contains("running")
    })
    .await;
    b.screenshot("live-log-ended").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn every_page_renders_and_is_photographed() {
    let site = Site::start(Config::default(), TOKEN).await;
    task(&site.store, "S-1", "Triage me", QueueStatus::Pending).await;
    let gid =
        task(&site.store, "S-2", "Fix the crash when saving\n\nSteps: open, save.", QueueStatus::Approved)
            .await;
    let run = site.store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap();
    let b = site.browser().await;
    let pages = [
        ("needs-you", "/".to_string(), "Nothing waits on you"),
        ("queue", "/queue".to_string(), "S-1"),
        ("task", format!("/tasks/{gid}"), "Fix the crash when saving"),
        ("runs", "/runs".to_string(), "S-2"),
        ("run", format!("/runs/{}", run.id), "S-2"),
        ("status", "/status".to_string(), "approved"),
    ];
    for (name, path, expect) in pages {
        b.client.goto(&format!("{}{path}", site.base)).await.unwrap();
        let text = b.client.find(Locator::Css("body")).await.unwrap().text().await.unwrap();
        assert!(text.contains(expect), "{path} lacks {expect:?}: {text}");
        b.screenshot(name).await;
    }
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn without_a_session_the_page_says_how_to_log_in_and_its_form_does() {
    let site = Site::start(Config::default(), TOKEN).await;
    task(&site.store, "LG-1", "Behind the login", QueueStatus::AwaitingGo).await;
    let b = Browser::start(&chromedriver()).await;
    b.client.goto(&format!("{}/tasks/LG-1", site.base)).await.unwrap();
    let text = b.client.find(Locator::Css("body")).await.unwrap().text().await.unwrap();
    assert!(text.contains("executor serve") && !text.contains("Behind the login"), "{text}");
    // Styled: the stylesheet applied (the header's dark background).
    let header =
        b.client.find(Locator::Css("header")).await.unwrap().css_value("background-color").await.unwrap();
    assert_eq!(header, "rgba(29, 35, 48, 1)");
    b.screenshot("login").await;
    b.client.find(Locator::Css("input[name=token]")).await.unwrap().send_keys(TOKEN).await.unwrap();
    click(&b, "form.login button").await;
    eventually("logged in, back on the task", || async {
        // While the browser navigates, the body found may go stale before its text is read: ask again.
        match b.client.find(Locator::Css("body")).await {
            Ok(body) => body.text().await.is_ok_and(|text| text.contains("Behind the login")),
            Err(_) => false,
        }
    })
    .await;
    assert!(b.client.current_url().await.unwrap().path().ends_with("/tasks/LG-1"));
    let html = b.client.source().await.unwrap();
    assert!(!html.contains(TOKEN), "no page holds the token");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn long_words_wrap_instead_of_widening_the_page() {
    let site = Site::start(Config::default(), TOKEN).await;
    let long_gid = "G".repeat(128);
    let g = task(&site.store, &long_gid, &"W".repeat(5000), QueueStatus::AwaitingGo).await;
    // A 1.5 MB reason without a space, as the CLI may record it (pages and the API cap theirs).
    let reason = "R".repeat(1_500_000);
    site.store.set_task_status(&g, QueueStatus::Skip, Actor::Cli, Some(&reason)).await.unwrap();
    let b = site.browser().await;
    for path in ["/".to_string(), "/queue".to_string(), format!("/tasks/{g}"), "/status".to_string()] {
        b.client.goto(&format!("{}{path}", site.base)).await.unwrap();
        let width = number(&b, "return document.documentElement.scrollWidth").await;
        let window = number(&b, "return window.innerWidth").await;
        assert!(width <= window + 1.0, "{path}: {width} px wide in a {window} px window");
    }
    b.screenshot("long-words").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn needs_you_is_the_default_view_and_its_buttons_act_at_desktop_and_phone_widths() {
    let site = Site::start(Config::default(), TOKEN).await;
    let go = task(&site.store, "N-1", "Ship the export button", QueueStatus::AwaitingGo).await;
    let gone = task(&site.store, "N-2", "A run the runner gave up", QueueStatus::Approved).await;
    let run = site.store.create_run_for_task(&gone, Actor::Runner).await.unwrap().unwrap();
    site.store
        .set_run_state_if(
            run.id,
            RunState::Queued,
            RunState::Abandoned,
            None,
            Actor::Runner,
            "attempts used up",
        )
        .await
        .unwrap();
    site.store
        .add_notice(
            Some(run.id),
            Some("N-2"),
            "abandoned",
            Some("abandoned"),
            "CI failed 3 times; abandoned.",
        )
        .await
        .unwrap();
    site.store.set_source_failed("asana_inbox", "Asana answered 401: the token was rejected").await.unwrap();
    let b = site.browser().await;
    let text = text_of(&b, "body").await;
    for expected in ["Needs you", "Ship the export button", "CI failed 3 times", "Asana answered 401"] {
        assert!(text.contains(expected), "{expected:?} missing: {text}");
    }
    b.screenshot("needs-you").await;
    fits(&b, "needs you, desktop").await;

    click(&b, &format!("form[action='/tasks/{go}/approve'] button")).await;
    eventually("the task is approved", || async {
        site.store.task(&go).await.unwrap().status == QueueStatus::Approved
    })
    .await;
    eventually("back on Needs you, saying so", || async {
        text_of(&b, "body").await.contains("approved N-1")
    })
    .await;

    // At a phone's width nothing scrolls sideways, and the buttons still work.
    b.client.set_window_size(400, 900).await.unwrap();
    b.client.refresh().await.unwrap();
    fits(&b, "needs you, 400 px").await;
    b.screenshot("needs-you-phone").await;
    let notice = site.store.notices(Some(run.id)).await.unwrap()[0].id;
    click(&b, &format!("form[action='/notices/{notice}/read'] button")).await;
    eventually("the notice is read and leaves the list", || async {
        let text = text_of(&b, "body").await;
        text.contains(&format!("notice {notice} marked read")) && !text.contains("CI failed 3 times")
    })
    .await;
    click(&b, "form[action='/sources/dismiss'] button").await;
    eventually("nothing waits any more", || async {
        text_of(&b, "body").await.contains("Nothing waits on you")
    })
    .await;
    fits(&b, "needs you, empty, 400 px").await;
    b.screenshot("needs-you-phone-empty").await;
    assert_eq!(last_actor(&site, EventFilter { run_id: Some(run.id), ..Default::default() }).await, "web");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn pages_follow_changes_without_a_reload_keeping_the_selection() {
    let site = Site::start(Config::default(), TOKEN).await;
    task(&site.store, "LV-1", "Here from the start", QueueStatus::AwaitingGo).await;
    let b = site.browser().await;
    // A page that reloaded would lose this.
    b.client.execute("window.stayed = true; return true", vec![]).await.unwrap();
    task(&site.store, "LV-2", "Arrived while the page was open", QueueStatus::AwaitingGo).await;
    eventually("Needs you shows the new task on its own", || async {
        text_of(&b, "main").await.contains("Arrived while the page was open")
    })
    .await;
    let stayed = b.client.execute("return window.stayed === true", vec![]).await.unwrap();
    assert_eq!(stayed.as_bool(), Some(true), "the page was not reloaded");
    b.screenshot("needs-you-live").await;

    // On the queue, a selected row stays selected across an update.
    b.client.goto(&format!("{}/queue", site.base)).await.unwrap();
    click(&b, "input.select[value='LV-1']").await;
    b.client.execute("window.stayed = true; return true", vec![]).await.unwrap();
    task(&site.store, "LV-3", "Third, while LV-1 is selected", QueueStatus::AwaitingGo).await;
    eventually("the queue shows the new task on its own", || async {
        text_of(&b, "main").await.contains("Third, while LV-1 is selected")
    })
    .await;
    let checked = b
        .client
        .execute(
            "return document.querySelector(\"input.select[value='LV-1']\").checked && window.stayed === true",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(checked.as_bool(), Some(true), "the selection and the page stayed");
    // While a reason is being typed, the page waits rather than lose it.
    let reason =
        b.client.find(Locator::Css("form[action='/tasks/LV-2/skip'] input[name=reason]")).await.unwrap();
    reason.send_keys("half a sentence").await.unwrap();
    task(&site.store, "LV-4", "Fourth, while typing", QueueStatus::AwaitingGo).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!text_of(&b, "main").await.contains("Fourth, while typing"), "no swap while typing");
    let kept = b
        .client
        .execute(
            "return document.querySelector(\"form[action='/tasks/LV-2/skip'] input[name=reason]\").value",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(kept.as_str(), Some("half a sentence"));
    b.screenshot("queue-live").await;
    b.close().await;
}
