//! A real headless Chromium for the dashboard's browser tests, driven over WebDriver (chromedriver +
//! fantoccini). Screenshots go to `target/screenshots/` for a reviewer to look at.
//!
//! Also the site those tests visit (`Site`) and what every one of them asks of a page (a number, the
//! width, a click, a text, a wait). `Site` serves through `web_support` over a `common` database, so a
//! test that includes this module declares `mod common;` and `mod web_support;` as well.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use executor::config::Config;
use executor::store::Store;
use executor::web::AppState;
use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::{Client, ClientBuilder, Locator};

use crate::common::{self, TestDb};
use crate::web_support;

/// A chromedriver process and a browser session on it; both end when this is dropped.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

/// The chromedriver program. The browser tests run only when asked for (`EXECUTOR_BROWSER_TESTS=1`, or
/// CI; see build.rs), so a missing driver is a failure that names the packages.
pub fn chromedriver() -> PathBuf {
    ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("chromedriver is not installed: apt-get install chromium chromium-driver (.ci/run does)")
}

impl Browser {
    pub async fn start(driver_path: &Path) -> Browser {
        Browser::start_with(driver_path, &[]).await
    }

    /// A browser whose system setting is dark: pages see `prefers-color-scheme: dark`.
    pub async fn start_dark(driver_path: &Path) -> Browser {
        Browser::start_with(driver_path, &["--blink-settings=preferredColorScheme=0", "--force-dark-mode"])
            .await
    }

    /// A browser with more Chromium switches than the usual ones.
    pub async fn start_with(driver_path: &Path, extra_args: &[&str]) -> Browser {
        let port = free_port();
        let driver = Command::new(driver_path)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let profile = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,900",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        args.extend(extra_args.iter().map(|a| a.to_string()));
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({ "binary": "/usr/bin/chromium", "args": args }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector).capabilities(caps.clone()).connect(&url).await {
                Ok(c) => break c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("cannot start a Chromium session: {e}"),
            }
        };
        Browser { client, driver, _profile: profile }
    }

    /// Saves a screenshot as `target/screenshots/{name}.png`.
    pub async fn screenshot(&self, name: &str) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let png = self.client.screenshot().await.expect("screenshot");
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }

    /// Presses each key in turn, as a person on the keyboard does (to whatever has the focus).
    pub async fn press(&self, keys: &[char]) {
        let mut actions = KeyActions::new("keyboard".into());
        for &value in keys {
            actions = actions.then(KeyAction::Down { value }).then(KeyAction::Up { value });
        }
        self.client.perform_actions(actions).await.expect("press keys");
    }

    /// Runs axe-core (vendored in tests/a11y) on the page against WCAG 2 A and AA, and returns each
    /// violation of impact "serious" or "critical" as its id, its help and the elements it names.
    /// WebDriver's scripts run outside the page's Content-Security-Policy, so the page needs no change.
    pub async fn serious_axe_violations(&self) -> Vec<String> {
        let present =
            self.client.execute("return typeof window.axe === 'object'", vec![]).await.expect("axe?");
        if present.as_bool() != Some(true) {
            self.client.execute(AXE, vec![]).await.expect("inject axe-core");
        }
        let script = r#"
            const done = arguments[arguments.length - 1];
            axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa"] } })
              .then(r => done(r.violations
                .filter(v => v.impact === "serious" || v.impact === "critical")
                .map(v => `${v.id} (${v.impact}): ${v.help}\n    at ` +
                  v.nodes.map(n => n.target.join(" ") + (n.failureSummary ? " — " + n.failureSummary.replace(/\n/g, " ") : "")).join("\n    at "))))
              .catch(e => done(["axe-core failed: " + e]));
        "#;
        let answer = self.client.execute_async(script, vec![]).await.expect("run axe-core");
        serde_json::from_value(answer).expect("axe-core's violations")
    }

    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
    }
}

/// The dashboard a browser test visits: served on 127.0.0.1 over a fresh SQLite database until dropped,
/// with the store kept for the test to fill, to change under the page's feet and to check what the
/// page did. No client is logged in: a browser logs itself in (`log_in`), as a person does.
pub struct Site {
    pub base: String,
    pub store: Store,
    token: String,
    _stop: tokio::sync::watch::Sender<bool>,
    _db: TestDb,
}

impl Site {
    /// Serves a fresh, empty SQLite database with `config`, `token` being the one `executor serve`
    /// would print. The pages read the store on each request, so a test may fill it afterwards.
    pub async fn start(config: Config, token: &str) -> Site {
        let db = common::sqlite();
        let store = db.open().await;
        let state = AppState::new(store.clone(), Arc::new(config), token.into(), None);
        let (base, stop) = web_support::serve(state).await;
        Site { base, store, token: token.into(), _stop: stop, _db: db }
    }

    /// A Chromium already logged in (`log_in`): what most tests start from.
    pub async fn browser(&self) -> Browser {
        let b = Browser::start(&chromedriver()).await;
        self.log_in(&b).await;
        b
    }

    /// Logs the browser in as a human does: opens the URL `executor serve` printed, and checks that
    /// the server traded the token for a cookie and took it out of the address bar.
    pub async fn log_in(&self, b: &Browser) {
        b.client.goto(&format!("{}/?token={}", self.base, self.token)).await.unwrap();
        assert!(
            !b.client.current_url().await.unwrap().as_str().contains("token="),
            "the token left the address bar"
        );
    }
}

/// A number a script computes on the page (a width, a count); fails naming the script otherwise.
pub async fn number(b: &Browser, script: &str) -> f64 {
    b.client.execute(script, vec![]).await.unwrap().as_f64().unwrap_or_else(|| panic!("{script}"))
}

/// No sideways scroll: the page is no wider than the window (a pixel of rounding allowed).
pub async fn fits(b: &Browser, what: &str) {
    let width = number(b, "return document.documentElement.scrollWidth").await;
    let window = number(b, "return window.innerWidth").await;
    assert!(width <= window + 1.0, "{what}: {width} px wide in a {window} px window");
}

/// Waits until `check` holds, for up to 15 seconds, or fails naming `what`: the pages update on their
/// own (a live refresh, a form's redirect), so a test waits for what it expects rather than sleeping.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(15);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Clicks the element `css` finds; fails naming `css` if there is none.
pub async fn click(b: &Browser, css: &str) {
    b.client.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}")).click().await.unwrap();
}

/// The text of the element `css` finds, or "" while there is none or it went stale: a page that
/// refreshes itself or is being loaded is read again by `eventually` rather than failing the test.
pub async fn text_of(b: &Browser, css: &str) -> String {
    match b.client.find(Locator::Css(css)).await {
        Ok(element) => element.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// axe-core's own build, vendored as a test asset (tests/a11y/README.md says which and its licence).
const AXE: &str = include_str!("../a11y/axe.min.js");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
