//! Idle connections cannot take the dashboard down: the real `executor serve` under `ulimit -n 1024`
//! still answers `GET /` with 1,100 idle sockets open against it; a socket that sends nothing, or sends
//! its headers too slowly, is closed.

mod common;
mod web_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use executor::config::Config;
use executor::web::AppState;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const IDLE_SOCKETS: usize = 1100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_answers_with_1100_idle_sockets_open_under_ulimit_1024() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("executor.toml");
    let data = dir.path().join("data").display().to_string();
    std::fs::write(&config, format!("[paths]\ndata_dir = {data:?}\n\n[web]\nport = 0\n")).unwrap();
    // The limit is the child's own: sh lowers it, then becomes `executor serve`.
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", "ulimit -n 1024 && exec \"$0\" --config \"$1\" serve"])
        .arg(env!("CARGO_BIN_EXE_executor"))
        .arg(&config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the URL within 30 s")
        .unwrap()
        .unwrap();
    let url = line.strip_prefix("dashboard: ").unwrap_or_else(|| panic!("{line}"));
    let (base, token) = url.split_once("/?token=").unwrap();
    let addr = base.strip_prefix("http://").unwrap().to_string();
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id().unwrap())).unwrap();
    let open_files = limits.lines().find(|l| l.starts_with("Max open files")).unwrap().to_string();
    assert!(open_files.split_whitespace().nth(3) == Some("1024"), "the child's limit: {open_files}");

    // 1,100 sockets that connect and never send a byte.
    let mut idle = Vec::with_capacity(IDLE_SOCKETS);
    for _ in 0..IDLE_SOCKETS {
        match tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&addr)).await {
            Ok(Ok(s)) => idle.push(s),
            other => panic!("connecting idle socket {}: {other:?}", idle.len()),
        }
    }

    let http = reqwest::Client::new();
    let started = Instant::now();
    let response =
        tokio::time::timeout(Duration::from_secs(20), http.get(format!("{base}/")).bearer_auth(token).send())
            .await
            .expect("GET / is answered with 1,100 idle sockets open")
            .unwrap();
    let took = started.elapsed();
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    assert!(response.text().await.unwrap().contains("Queue"));
    eprintln!("GET / with {IDLE_SOCKETS} idle sockets open: {took:?}");
    drop(idle);
}

/// A dashboard with one-second timeouts.
async fn quick_dashboard() -> (String, tokio::sync::watch::Sender<bool>, common::TestDb) {
    let db = common::sqlite();
    let mut config = Config::default();
    config.web.idle_timeout = executor::config::Duration::secs(1);
    config.web.header_read_timeout = executor::config::Duration::secs(1);
    let state = AppState::new(db.open().await, Arc::new(config), "q".repeat(32), None);
    let (base, stop) = web_support::serve(state).await;
    (base.trim_start_matches("http://").to_string(), stop, db)
}

/// Reads until the server closes the socket (or 10 s pass); returns how long that took.
async fn closed_after(mut socket: TcpStream) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), socket.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("the server kept the socket open for 10 s"),
        }
    }
}

#[tokio::test]
async fn a_socket_that_sends_nothing_or_too_slowly_is_closed() {
    let (addr, _stop, _db) = quick_dashboard().await;
    let silent = TcpStream::connect(&addr).await.unwrap();
    let took = closed_after(silent).await;
    assert!(took >= Duration::from_millis(500), "not before the timeout: {took:?}");

    // Headers a byte at a time, never finished.
    let mut slow = TcpStream::connect(&addr).await.unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    let writer = tokio::spawn(async move {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if slow.write_all(b"X").await.is_err() {
                break;
            }
        }
        slow
    });
    let slow = writer.await.unwrap();
    closed_after(slow).await;
}
