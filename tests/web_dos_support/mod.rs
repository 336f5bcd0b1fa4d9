//! The real `executor serve` for the denial-of-service tests.
#![allow(dead_code)]

use std::time::Duration;

use tokio::io::AsyncBufReadExt;

/// `executor --config CONFIG serve [extra]`, its standard error to `stderr`; the child (killed when
/// dropped) and the base URL it printed (`http://127.0.0.1:PORT`).
pub async fn serve(
    config: &std::path::Path,
    extra: &[&str],
    stderr: std::process::Stdio,
) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_executor"))
        .arg("--config")
        .arg(config)
        .arg("serve")
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("executor serve");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the URL within 30 s")
        .expect("stdout")
        .expect("a line");
    let url = line.strip_prefix("dashboard: ").unwrap_or_else(|| panic!("{line}"));
    (child, url.split("/?token=").next().expect("the base").to_string())
}
