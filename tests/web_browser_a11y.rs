//! The dashboard on a phone and from the keyboard, in a real headless Chromium: every page passes
//! axe-core's WCAG 2 A/AA check with no serious or critical violation, in light and dark mode, at 1280 and
//! 400 px wide, and has no sideways scroll at 400; the queue is worked with j/k/x/a/s alone and the store
//! sees the approvals and skips; `?` opens the help, which keeps the focus and gives it back on Esc; a live
//! refresh keeps the selected row. Screenshots of each page in each scheme and width go to
//! `target/screenshots/a11y-*.png`.

mod browser_support;
mod common;
mod web_support;

use browser_support::{Browser, Site, chromedriver, eventually};
use executor::config::Config;
use executor::domain::{Actor, By, EndReason, QueueStatus, RunState, TaskGid, WorkerKind};
use executor::store::{NewTask, SessionStart, Store, WorkerEnd};
use fantoccini::Locator;
use fantoccini::actions::InputSource;
use fantoccini::key::Key;

const TOKEN: &str = "a11ya11ya11ya11ya11ya11ya11ya11y";

async fn task(store: &Store, gid: &str, text: &str, path: &[QueueStatus]) -> TaskGid {
    let g = TaskGid::parse(gid).unwrap();
    let t = NewTask { source: Some("inbox".into()), description: Some(text.into()), ..Default::default() };
    store.upsert_task(&g, &t, Actor::Cli).await.unwrap();
    for &to in path {
        store.set_task_status(&g, to, Actor::Cli, None).await.unwrap();
    }
    g
}

const AWAITING: &[QueueStatus] = &[QueueStatus::AwaitingGo];

/// A value a script computes on the page.
async fn value(b: &Browser, script: &str) -> serde_json::Value {
    b.client.execute(script, vec![]).await.unwrap_or_else(|e| panic!("{script}: {e}"))
}

/// The gid in the link of the row j/k selected, or "" when none is.
async fn selected(b: &Browser) -> String {
    let script = "const r = document.querySelector('.kb-selected a[href]'); return r ? r.textContent : ''";
    value(b, script).await.as_str().unwrap_or_default().to_string()
}

/// What has the keyboard: its tag, name and text, e.g. `A  Q-2` or `INPUT reason `.
async fn focused(b: &Browser) -> String {
    let script = "const e = document.activeElement; return e.tagName + ' ' + (e.name || '') + ' ' + (e.textContent || '')";
    value(b, script).await.as_str().unwrap_or_default().to_string()
}

/// A task with a run, a worker session that ended and the log it wrote (in the returned directory, kept
/// by the test): every page has something to show.
async fn a_day_of_work(site: &Site) -> (tempfile::TempDir, TaskGid, i64, i64) {
    task(&site.store, "P-1", "Triage me", &[]).await;
    task(&site.store, "A-1", "Ship the export button", AWAITING).await;
    task(&site.store, "R-1", "Unsure about this one", &[QueueStatus::ForReview]).await;
    let gid = task(
        &site.store,
        "W-1",
        "Fix the crash when saving\n\nSteps: open, save.",
        &[QueueStatus::AwaitingGo, QueueStatus::Approved],
    )
    .await;
    let run = site.store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap();
    site.store
        .set_run_state_if(run.id, RunState::Queued, RunState::InProgress, None, Actor::Runner, "test")
        .await
        .unwrap();
    let session = site
        .store
        .begin_worker_session(run.id, WorkerKind::Queued, "command", "h", &SessionStart::default())
        .await
        .unwrap()
        .unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("queued.md");
    std::fs::write(&log, "# queued worker\n\nread the code\nwrote the fix\n").unwrap();
    let out = logs.path().join("out.jsonl").display().to_string();
    let pid = std::process::id() as i32;
    site.store
        .set_worker_process(session.id, None, pid, None, &out, &log.display().to_string())
        .await
        .unwrap();
    site.store.end_worker_session(session.id, None, &WorkerEnd::new(EndReason::Finished)).await.unwrap();
    (logs, gid, run.id, session.id)
}

/// A queued run whose plan was sent back once and whose second revision waits, and whose worker asked
/// a question nobody answered: the run page's Plan and Questions with their forms, and two more lists
/// on "Needs you".
async fn a_run_that_asks(store: &Store) -> i64 {
    let gid =
        task(store, "PQ-1", "Plan first, then ask", &[QueueStatus::AwaitingGo, QueueStatus::Approved]).await;
    let run = store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap().id;
    let ended = |kind| async move {
        let s = store.begin_worker_session(run, kind, "command", "h", &SessionStart::default()).await;
        let s = s.unwrap().unwrap();
        store.end_worker_session(s.id, None, &WorkerEnd::new(EndReason::Finished)).await.unwrap();
        s.id
    };
    let plan = "# Plan\n\n1. Read `src/save.rs`\n2. Add a test for the crash\n3. Fix it";
    store.record_plan(run, ended(WorkerKind::Plan).await, plan).await.unwrap();
    let back = executor::store::PlanVerdict::RequestChanges("Name the test file too.".into());
    store.decide_plan(run, &back, By::person(Actor::Cli, "alice")).await.unwrap();
    store
        .record_plan(run, ended(WorkerKind::Plan).await, &format!("{plan}\n4. tests/save.rs"))
        .await
        .unwrap();
    let question = "Should an empty file be saved, or refused with a message?";
    store.ask_question(run, ended(WorkerKind::Plan).await, WorkerKind::Plan, question).await.unwrap();
    run
}

/// Every page, at both widths, in the browser's scheme: the axe-core check, no sideways scroll on the
/// phone, a screenshot. Returns what failed, page by page.
async fn check_pages(b: &Browser, site: &Site, scheme: &str, pages: &[(&str, String)]) -> Vec<String> {
    let mut failures = Vec::new();
    for width in [1280, 400] {
        b.client.set_window_size(width, 900).await.unwrap();
        for (name, path) in pages {
            b.client.goto(&format!("{}{path}", site.base)).await.unwrap();
            let what = format!("{name} ({path}), {scheme}, {width} px");
            for violation in b.serious_axe_violations().await {
                failures.push(format!("{what}: {violation}"));
            }
            let wide = value(b, "return document.documentElement.scrollWidth").await.as_f64().unwrap();
            let window = value(b, "return window.innerWidth").await.as_f64().unwrap();
            assert!(window <= width as f64, "{what}: the window is {window} px");
            if wide > window {
                failures.push(format!("{what}: {wide} px wide in a {window} px window (sideways scroll)"));
            }
            b.screenshot(&format!("a11y-{scheme}-{width}-{name}")).await;
        }
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn every_page_passes_axe_and_fits_a_phone_in_light_and_dark() {
    let site = Site::start(Config::default(), TOKEN).await;
    let (_logs, gid, run, session) = a_day_of_work(&site).await;
    let asks = a_run_that_asks(&site.store).await;
    // A viewer who last looked an hour ago: the header names them, a note says what they may do, and
    // Needs you lists what changed since.
    let victor = executor::web::person::new_token().unwrap();
    let hash = executor::web::person::token_sha256(&victor);
    let viewer = site
        .store
        .add_user("victor", executor::domain::Role::Viewer, &hash, Actor::Cli.into())
        .await
        .unwrap();
    site.store.mark_looked(viewer.id, chrono::Utc::now() - chrono::Duration::hours(1)).await.unwrap();
    let viewer_pages = [("needs-you-viewer", "/".to_string()), ("task-viewer", format!("/tasks/{gid}"))];
    let pages = [
        ("needs-you", "/".to_string()),
        ("queue", "/queue".to_string()),
        ("runs", "/runs".to_string()),
        ("run", format!("/runs/{run}")),
        ("run-asks", format!("/runs/{asks}")),
        ("task", format!("/tasks/{gid}")),
        ("status", "/status".to_string()),
        ("insights", "/insights".to_string()),
        ("log", format!("/sessions/{session}/log")),
    ];
    let mut failures = Vec::new();
    for scheme in ["light", "dark"] {
        let b = if scheme == "dark" {
            Browser::start_dark(&chromedriver()).await
        } else {
            Browser::start(&chromedriver()).await
        };
        let dark = value(&b, "return matchMedia('(prefers-color-scheme: dark)').matches").await;
        assert_eq!(dark.as_bool(), Some(scheme == "dark"), "the browser's scheme is {scheme}");
        // Without a session every page is the login page.
        failures.extend(check_pages(&b, &site, scheme, &[("login", "/queue".to_string())]).await);
        site.log_in(&b).await;
        // The colours follow the scheme: the page's background is light or dark.
        let background =
            b.client.find(Locator::Css("body")).await.unwrap().css_value("background-color").await.unwrap();
        let expect = if scheme == "dark" { "rgba(17, 20, 24, 1)" } else { "rgba(247, 248, 250, 1)" };
        assert_eq!(background, expect, "{scheme} page background");
        failures.extend(check_pages(&b, &site, scheme, &pages).await);
        b.client.goto(&format!("{}/?token={victor}", site.base)).await.unwrap();
        failures.extend(check_pages(&b, &site, scheme, &viewer_pages).await);
        b.close().await;
    }
    assert!(failures.is_empty(), "{} accessibility failures:\n{}", failures.len(), failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn the_queue_is_worked_from_the_keyboard_at_desktop_width() {
    work_the_queue_from_the_keyboard(1280).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn the_queue_is_worked_from_the_keyboard_at_phone_width() {
    work_the_queue_from_the_keyboard(400).await;
}

/// j/k/x/a/s/o on the queue, the window `width` px wide: the store sees each approval and skip.
async fn work_the_queue_from_the_keyboard(width: u32) {
    let site = Site::start(Config::default(), TOKEN).await;
    let one = task(&site.store, "Q-1", "First in the queue", AWAITING).await;
    let two = task(&site.store, "Q-2", "Second in the queue", AWAITING).await;
    let three = task(&site.store, "Q-3", "Third in the queue", AWAITING).await;
    let b = Browser::start(&chromedriver()).await;
    b.client.set_window_size(width, 900).await.unwrap();
    site.log_in(&b).await;
    b.client.goto(&format!("{}/queue", site.base)).await.unwrap();

    // With Ctrl (or Alt, or Cmd) held, a key is the browser's, not a shortcut.
    let ctrl = char::from(Key::Control);
    let chord = fantoccini::actions::KeyActions::new("chord".into())
        .then(fantoccini::actions::KeyAction::Down { value: ctrl })
        .then(fantoccini::actions::KeyAction::Down { value: 'j' })
        .then(fantoccini::actions::KeyAction::Up { value: 'j' })
        .then(fantoccini::actions::KeyAction::Up { value: ctrl });
    b.client.perform_actions(chord).await.unwrap();
    assert_eq!(selected(&b).await, "", "Ctrl+j selects nothing");

    // Typing in a field is text, not shortcuts.
    b.client.find(Locator::Css("input[name=q]")).await.unwrap().click().await.unwrap();
    b.press(&['j', 'a']).await;
    let typed = b.client.find(Locator::Css("input[name=q]")).await.unwrap().prop("value").await.unwrap();
    assert_eq!(typed.as_deref(), Some("ja"), "the keys went into the search field");
    assert_eq!(selected(&b).await, "", "no row selected while typing");
    b.press(&[Key::Escape.into()]).await;
    value(&b, "document.activeElement.blur(); return true").await;

    b.press(&['j']).await;
    assert_eq!(selected(&b).await, "Q-1");
    assert!(
        focused(&b).await.starts_with("A  Q-1"),
        "the row's link has the keyboard: {}",
        focused(&b).await
    );
    b.press(&['j', 'j', 'k']).await;
    assert_eq!(selected(&b).await, "Q-2");
    b.press(&['k', 'x']).await;
    let checked = "return document.querySelector(\"input.select[value='Q-1']\").checked";
    assert_eq!(value(&b, checked).await.as_bool(), Some(true), "x selected Q-1 for the bulk actions");
    b.screenshot(&format!("a11y-keys-selected-{width}")).await;

    // a approves the selected row through its own form.
    b.press(&['j', 'a']).await;
    eventually("Q-2 approved by the a key", || async {
        site.store.task(&two).await.unwrap().status == QueueStatus::Approved
    })
    .await;
    // After the page comes back, the row below the one approved is selected.
    eventually("Q-3 selected after the reload", || async { selected(&b).await == "Q-3" }).await;
    let event = site
        .store
        .events(&executor::store::EventFilter { task_gid: Some(two.clone()), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(event.last().unwrap().actor, "web", "recorded as the dashboard's");

    // s goes to the row's reason; Enter sends the skip.
    b.press(&['s']).await;
    assert!(focused(&b).await.starts_with("INPUT reason"), "{}", focused(&b).await);
    b.press(&"not this quarter".chars().chain([char::from(Key::Enter)]).collect::<Vec<_>>()).await;
    eventually("Q-3 skipped by s + Enter", || async {
        site.store.task(&three).await.unwrap().status == QueueStatus::Skip
    })
    .await;
    assert_eq!(site.store.task(&one).await.unwrap().status, QueueStatus::AwaitingGo, "Q-1 untouched");
    b.screenshot(&format!("a11y-keys-after-{width}")).await;
    // o opens the selected row's task.
    b.press(&['j']).await;
    let gid = selected(&b).await;
    assert!(!gid.is_empty(), "a row is selected");
    b.press(&['o']).await;
    eventually("o opened the task", || async {
        b.client.current_url().await.unwrap().path() == format!("/tasks/{gid}")
    })
    .await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn the_help_opens_on_question_mark_keeps_the_focus_and_esc_gives_it_back() {
    let site = Site::start(Config::default(), TOKEN).await;
    task(&site.store, "H-1", "Waiting for a go", AWAITING).await;
    let b = site.browser().await;
    // The first Tab reaches "Skip to content", which takes the keyboard past the navigation.
    b.press(&[Key::Tab.into()]).await;
    assert!(focused(&b).await.contains("Skip to content"), "{}", focused(&b).await);
    b.screenshot("a11y-skip-to-content").await;
    b.press(&[Key::Enter.into()]).await;
    assert_eq!(value(&b, "return document.activeElement.id").await.as_str(), Some("content"));
    b.press(&['j']).await;
    assert_eq!(selected(&b).await, "H-1", "j works on Needs you too");
    b.press(&['?']).await;
    let open = "const d = document.querySelector('dialog#shortcuts'); return !!d && d.open";
    assert_eq!(value(&b, open).await.as_bool(), Some(true), "? opened the help");
    let text = b.client.find(Locator::Css("dialog#shortcuts")).await.unwrap().text().await.unwrap();
    assert!(text.contains("approve the row") && text.contains("go to the queue"), "{text}");
    b.screenshot("a11y-help").await;
    let violations = b.serious_axe_violations().await;
    assert!(violations.is_empty(), "the open help: {violations:#?}");
    let inside = "return document.querySelector('dialog#shortcuts').contains(document.activeElement)";
    for _ in 0..3 {
        assert_eq!(value(&b, inside).await.as_bool(), Some(true), "the focus stays in the help");
        b.press(&[Key::Tab.into()]).await;
    }
    // Shortcuts do not act behind the open help.
    b.press(&['j']).await;
    assert_eq!(selected(&b).await, "H-1");
    b.press(&[Key::Escape.into()]).await;
    assert_eq!(value(&b, open).await.as_bool(), Some(false), "Esc closed the help");
    assert!(focused(&b).await.starts_with("A  H-1"), "the focus is back: {}", focused(&b).await);

    // g then a letter goes to a page.
    b.press(&['g', 'q']).await;
    eventually("g q opened the queue", || async { b.client.current_url().await.unwrap().path() == "/queue" })
        .await;
    b.press(&['g', 'r']).await;
    eventually("g r opened the runs", || async { b.client.current_url().await.unwrap().path() == "/runs" })
        .await;
    b.press(&['g', 'n']).await;
    eventually("g n opened Needs you", || async { b.client.current_url().await.unwrap().path() == "/" })
        .await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn a_live_refresh_keeps_the_selected_row_and_its_focus() {
    let site = Site::start(Config::default(), TOKEN).await;
    task(&site.store, "LR-1", "One", AWAITING).await;
    task(&site.store, "LR-2", "Two", AWAITING).await;
    let b = site.browser().await;
    b.client.goto(&format!("{}/queue", site.base)).await.unwrap();
    b.press(&['j', 'j']).await;
    assert_eq!(selected(&b).await, "LR-2");
    // Something changes elsewhere: the page puts new content in place by itself.
    task(&site.store, "LR-0", "Arrived meanwhile", AWAITING).await;
    eventually("the new task appears without a reload", || async {
        let body = b.client.find(Locator::Css("main")).await.unwrap().text().await.unwrap();
        body.contains("LR-0")
    })
    .await;
    assert_eq!(selected(&b).await, "LR-2", "the same row is selected after the refresh");
    assert!(focused(&b).await.starts_with("A  LR-2"), "and has the keyboard: {}", focused(&b).await);
    // j goes on from there: to the row after LR-2 in the refreshed list.
    let after = "const rows = Array.from(document.querySelectorAll('table.queue tbody tr')); \
                 const at = rows.findIndex(r => r.classList.contains('kb-selected')); \
                 const next = rows[Math.min(at + 1, rows.length - 1)]; return next.querySelector('a').textContent";
    let expect = value(&b, after).await.as_str().unwrap().to_string();
    b.press(&['j']).await;
    assert_eq!(selected(&b).await, expect);
    b.close().await;
}

/// Issue 35, item 7: a live update dropped the keyboard to the page's body and said nothing. The
/// control that had the focus has it again after the swap (found by its id, or a link by where it goes),
/// and a polite live region outside the swapped content says the page changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn a_live_update_keeps_the_focus_where_it_was_and_says_so() {
    let site = Site::start(Config::default(), TOKEN).await;
    let run_of = |gid: &'static str| {
        let store = site.store.clone();
        async move {
            let g = task(&store, gid, "Work", &[QueueStatus::AwaitingGo, QueueStatus::Approved]).await;
            store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap().id
        }
    };
    let first = run_of("LF-1").await;
    let b = site.browser().await;
    b.client.goto(&format!("{}/runs", site.base)).await.unwrap();
    let region = "const r = document.getElementById('live-status'); \
                  return r && !document.querySelector('main').contains(r) ? r.getAttribute('aria-live') + '|' + r.textContent : 'none'";
    assert_eq!(value(&b, region).await.as_str(), Some("polite|"), "a polite live region, outside <main>");

    // A control with an id: the state filter's link.
    value(&b, "document.getElementById('state-queued').focus(); return null").await;
    let active = "return document.activeElement.id || document.activeElement.tagName";
    assert_eq!(value(&b, active).await.as_str(), Some("state-queued"));
    let second = run_of("LF-2").await;
    let card = |id: i64| format!("return document.querySelector('main [data-run=\"{id}\"]') !== null");
    eventually("the new run appears without a reload", || async { value(&b, &card(second)).await == true })
        .await;
    assert_eq!(value(&b, active).await.as_str(), Some("state-queued"), "the focus stayed on the link");
    let said = value(&b, region).await.as_str().unwrap_or_default().to_string();
    assert!(said.starts_with("polite|Updated: Runs"), "the update was announced: {said}");

    // A link without an id: a card's title, found again by where it goes.
    let link = format!("main a[href='/runs/{first}']");
    value(&b, &format!("document.querySelector(\"{link}\").focus(); return null")).await;
    let third = run_of("LF-3").await;
    eventually("the third run appears", || async { value(&b, &card(third)).await == true }).await;
    let on_link = format!("return document.activeElement === document.querySelector(\"{link}\")");
    assert_eq!(value(&b, &on_link).await, true, "the focus is on the same run's link: {}", focused(&b).await);
    b.close().await;
}
