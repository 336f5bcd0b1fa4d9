//! Marks the PostgreSQL tests to run or to show as ignored. `cargo test` without
//! `EXECUTOR_TEST_DATABASE_URL` lists them as "ignored" in its own summary (with the reason), instead of
//! counting a skip as a pass; with the variable (or in CI, where a missing database must fail loudly)
//! they run.
//!
//! The same for the dashboard's browser tests (`browser_tests`): they run with
//! `EXECUTOR_BROWSER_TESTS=1` (Chromium and chromedriver installed) or in CI, and show as ignored
//! otherwise.
//!
//! And the tests that drive the real agent CLIs (`agent_cli_tests`: `tests/real_cli_pipeline.rs`), which
//! need them installed at their pinned versions (`.ci/run` does): with `EXECUTOR_AGENT_CLI_TESTS=1` or
//! in CI.
//!
//! And it names the commit the binary is built from (`executor --version`), so that a binary installed
//! with `cargo install` says which code it runs.
fn main() {
    commit();
    println!("cargo::rustc-check-cfg=cfg(pg_tests)");
    println!("cargo::rustc-check-cfg=cfg(browser_tests)");
    println!("cargo::rerun-if-env-changed=EXECUTOR_BROWSER_TESTS");
    if std::env::var("EXECUTOR_BROWSER_TESTS").is_ok_and(|v| !v.is_empty())
        || std::env::var_os("CI").is_some()
    {
        println!("cargo::rustc-cfg=browser_tests");
    }
    println!("cargo::rustc-check-cfg=cfg(agent_cli_tests)");
    println!("cargo::rerun-if-env-changed=EXECUTOR_AGENT_CLI_TESTS");
    if std::env::var("EXECUTOR_AGENT_CLI_TESTS").is_ok_and(|v| !v.is_empty())
        || std::env::var_os("CI").is_some()
    {
        println!("cargo::rustc-cfg=agent_cli_tests");
    }
    println!("cargo::rerun-if-env-changed=EXECUTOR_TEST_DATABASE_URL");
    println!("cargo::rerun-if-env-changed=CI");
    let url = std::env::var("EXECUTOR_TEST_DATABASE_URL").unwrap_or_default();
    if !url.is_empty() || std::env::var_os("CI").is_some() {
        println!("cargo::rustc-cfg=pg_tests");
    }
}

/// `EXECUTOR_COMMIT`: the short commit hash, `unknown` outside a git checkout (a crate package). Rebuilt
/// when HEAD or the branch it names moves.
fn commit() {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo::rustc-env=EXECUTOR_COMMIT={commit}");
    // Only files that exist: cargo reruns a build script on every build for a path that is missing.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name])
            && std::path::Path::new(&path).exists()
        {
            println!("cargo::rerun-if-changed={path}");
        }
    }
}
