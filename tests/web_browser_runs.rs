//! The runs board and a run's page in a real headless Chromium, at desktop and phone widths: cards with
//! titles, CI, worker and cost; the filter by state; a card that follows its run without a reload; the
//! run page's checks, comments, findings and workers; nothing scrolls sideways at 400 px; task text and
//! findings never run. Screenshots go to `target/screenshots/`.

mod browser_support;
mod common;
mod runs_support;
mod web_support;

use browser_support::{Browser, Site, chromedriver, eventually, fits};
use executor::domain::EndReason;
use executor::store::WorkerEnd;
use fantoccini::Locator;
use runs_support::{FINDING, PR_TITLE, SILENT_TITLE, Scene};

const TOKEN: &str = "feedfacefeedfacefeedfacefeedface";

/// The dashboard over the runs scene (`runs_support::scene`), and the scene's ids to look for.
async fn site() -> (Site, Scene) {
    let site = Site::start(runs_support::config(), TOKEN).await;
    let scene = runs_support::scene(&site.store).await;
    (site, scene)
}

async fn open(b: &Browser, site: &Site, path: &str) {
    b.client.goto(&format!("{}{path}", site.base)).await.unwrap();
    assert!(b.client.get_alert_text().await.is_err(), "a payload ran on {path}");
}

/// The text of the element `css` finds, found again when it went stale before its text was read (the
/// board replaces its cards as runs change).
async fn text(b: &Browser, css: &str) -> String {
    use fantoccini::error::{CmdError, ErrorStatus};
    for _ in 0..20 {
        let element = b.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"));
        match element.text().await {
            Ok(text) => return text,
            Err(CmdError::Standard(e)) if e.error == ErrorStatus::StaleElementReference => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{css}: {e}"),
        }
    }
    panic!("{css} went stale every time it was read")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn the_board_shows_cards_filters_by_state_and_follows_a_run_at_desktop_and_phone_widths() {
    let (site, s) = site().await;
    let b = Browser::start(&chromedriver()).await;
    open(&b, &site, &format!("/?token={TOKEN}")).await;
    open(&b, &site, "/runs").await;
    let pr_card = format!("article[data-run='{}']", s.pr_run);
    let card = text(&b, &pr_card).await;
    for expected in
        [PR_TITLE, "#7", "failing at abc1234def", "seen 2m ago", "fix_comments running for", "$1.50"]
    {
        assert!(card.contains(expected), "{expected:?} not on the card: {card}");
    }
    let bold = b.client.find_all(Locator::Css(".card-title b")).await.unwrap();
    assert!(bold.is_empty(), "task text made markup");
    let silent = text(&b, &format!("article[data-run='{}']", s.silent_run)).await;
    assert!(silent.contains(SILENT_TITLE) && silent.contains("idle_timeout after"), "{silent}");
    fits(&b, "the board, 1280 px").await;
    b.screenshot("runs-board").await;

    // The filter is a link: its address can be shared.
    b.client
        .find(Locator::Css("nav.state-filter a[href='/runs?state=pr']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    eventually("only the runs in pr", || async {
        b.client.find_all(Locator::Css("article.run-card")).await.unwrap().len() == 1
    })
    .await;
    assert!(b.client.current_url().await.unwrap().as_str().ends_with("/runs?state=pr"));
    b.screenshot("runs-board-pr").await;

    // The live worker ends: the card says how, without a reload.
    let end = WorkerEnd { cost_usd: 0.2, ..WorkerEnd::new(EndReason::Finished) };
    assert!(site.store.end_worker_session(s.live_session, None, &end).await.unwrap());
    eventually("the card says the worker finished", || async {
        let card = text(&b, &pr_card).await;
        card.contains("fix_comments finished after") && card.contains("$1.60")
    })
    .await;

    // At a phone's width the columns stack and nothing scrolls sideways.
    b.client.set_window_size(400, 900).await.unwrap();
    open(&b, &site, "/runs").await;
    fits(&b, "the board, 400 px").await;
    let lefts = b
        .client
        .execute("return Array.from(document.querySelectorAll('.column')).map(c => c.getBoundingClientRect().left)", vec![])
        .await
        .unwrap();
    let lefts: Vec<f64> = lefts.as_array().unwrap().iter().filter_map(|v| v.as_f64()).collect();
    assert_eq!(lefts.len(), 5, "a column per state");
    assert!(lefts.iter().all(|l| (l - lefts[0]).abs() < 1.0), "the columns stack: {lefts:?}");
    b.screenshot("runs-board-phone").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn the_run_page_shows_checks_comments_findings_and_workers_at_desktop_and_phone_widths() {
    let (site, s) = site().await;
    let b = Browser::start(&chromedriver()).await;
    open(&b, &site, &format!("/?token={TOKEN}")).await;
    for (width, name) in [(1280, "run-page"), (400, "run-page-phone")] {
        b.client.set_window_size(width, 900).await.unwrap();
        open(&b, &site, &format!("/runs/{}", s.pr_run)).await;
        let body = text(&b, "main").await;
        for expected in [
            PR_TITLE,
            "Changes: 3 files, +120 −4",
            "alice on src/lib.rs:12",
            "please <i>rename</i> this",
            "Verdict fail at abc1234def",
            &format!("src/export.rs:3: {FINDING}"),
            "No test covers the import.",
        ] {
            assert!(body.contains(expected), "{width} px: {expected:?} not on the page: {body}");
        }
        assert!(!body.contains("spam from mallory"), "an untrusted comment is not listed");
        let checks = text(&b, "table.checks").await;
        assert!(
            checks.contains("build success")
                && checks.contains("2 tests failed")
                && checks.contains("failure"),
            "{checks}"
        );
        let workers = b.client.find_all(Locator::Css("table.workers tbody tr")).await.unwrap();
        assert_eq!(workers.len(), 3, "every worker");
        let logs = b.client.find_all(Locator::Css("table.workers a[href$='/log']")).await.unwrap();
        assert_eq!(logs.len(), 2, "a log link for each worker with a log");
        let injected = b.client.find_all(Locator::Css("main script, main i")).await.unwrap();
        assert!(injected.is_empty(), "text made markup");
        fits(&b, &format!("the run page, {width} px")).await;
        b.screenshot(name).await;
    }
    b.close().await;
}
