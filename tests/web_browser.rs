//! The dashboard in a real headless Chromium.

mod browser_support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(browser_tests), ignore = "needs Chromium: set EXECUTOR_BROWSER_TESTS=1 (see README)")]
async fn chromium_starts() {
    let b = browser_support::Browser::start(&browser_support::chromedriver()).await;
    b.client.goto("data:text/html,<p id=x>hi</p>").await.unwrap();
    b.screenshot("smoke").await;
    b.close().await;
}
