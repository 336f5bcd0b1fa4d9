//! Marks the PostgreSQL tests to run or to show as ignored. `cargo test` without
//! `EXECUTOR_TEST_DATABASE_URL` lists them as "ignored" in its own summary (with the reason), instead of
//! counting a skip as a pass; with the variable (or in CI, where a missing database must fail loudly)
//! they run.
//!
//! The same for the dashboard's browser tests (`browser_tests`): they run with
//! `EXECUTOR_BROWSER_TESTS=1` (Chromium and chromedriver installed) or in CI, and show as ignored
//! otherwise.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(pg_tests)");
    println!("cargo::rustc-check-cfg=cfg(browser_tests)");
    println!("cargo::rerun-if-env-changed=EXECUTOR_BROWSER_TESTS");
    if std::env::var("EXECUTOR_BROWSER_TESTS").is_ok_and(|v| !v.is_empty())
        || std::env::var_os("CI").is_some()
    {
        println!("cargo::rustc-cfg=browser_tests");
    }
    println!("cargo::rerun-if-env-changed=EXECUTOR_TEST_DATABASE_URL");
    println!("cargo::rerun-if-env-changed=CI");
    let url = std::env::var("EXECUTOR_TEST_DATABASE_URL").unwrap_or_default();
    if !url.is_empty() || std::env::var_os("CI").is_some() {
        println!("cargo::rustc-cfg=pg_tests");
    }
}
