//! A stranger cannot fill the log or confuse the host check: the real `executor serve` answers 100
//! requests with a 200 KB `Host` and logs a few kilobytes (each value cut, a burst counted rather than
//! logged line by line); a request with two `Host` headers is 400 (RFC 9112), whatever they name.

mod common;
mod web_dos_support;
mod web_support;

use std::io::{Read as _, Write as _};
use std::sync::Arc;
use std::time::Duration;

use executor::config::Config;
use executor::web::AppState;

/// Sends `request` and returns the answer's status code (the body read to the end or 5 s).
fn status_of(addr: &str, request: &[u8]) -> u16 {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    stream.write_all(request).unwrap();
    let mut answer = [0u8; 64];
    let n = stream.read(&mut answer).unwrap_or(0);
    let line = String::from_utf8_lossy(&answer[..n]).to_string();
    line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_requests_with_a_200_kb_host_log_a_few_kilobytes() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("executor.toml");
    let data = dir.path().join("data").display().to_string();
    std::fs::write(&config, format!("[paths]\ndata_dir = {data:?}\n\n[web]\nport = 0\n")).unwrap();
    let log = dir.path().join("serve.log");
    let (mut child, base) =
        web_dos_support::serve(&config, &[], std::fs::File::create(&log).unwrap().into()).await;
    let addr = base.trim_start_matches("http://").to_string();
    let before = std::fs::metadata(&log).unwrap().len();

    let host = "h".repeat(200 * 1024);
    let request = format!("GET /queue HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let statuses = tokio::task::spawn_blocking(move || {
        (0..100).map(|_| status_of(&addr, request.as_bytes())).collect::<Vec<_>>()
    })
    .await
    .unwrap();
    assert!(statuses.iter().all(|s| *s == 403), "every one refused for its host: {statuses:?}");
    // The refusals are logged as they happen; give the writer a moment before reading.
    tokio::time::sleep(Duration::from_millis(300)).await;
    child.kill().await.unwrap();
    let logged = std::fs::read_to_string(&log).unwrap();
    let grown = logged.len() as u64 - before;
    assert!(logged.contains("dashboard refused GET /queue"), "the refusals are logged:\n{logged}");
    assert!(grown < 64 * 1024, "100 refusals logged {grown} bytes");
    assert!(logged.lines().all(|l| l.len() < 1000), "no line carries the whole host");
}

#[tokio::test]
async fn two_host_headers_are_400() {
    let db = common::sqlite();
    let token = "0123456789abcdef0123456789abcdef";
    let state = AppState::new(db.open().await, Arc::new(Config::default()), token.into(), None);
    let (base, _stop) = web_support::serve(state).await;
    let addr = base.trim_start_matches("http://").to_string();
    let twice = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nHost: evil.example\r\nAuthorization: Bearer {token}\r\n\
         Connection: close\r\n\r\n"
    );
    let once = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    let (twice, once) = tokio::task::spawn_blocking(move || {
        (status_of(&addr, twice.as_bytes()), status_of(&addr, once.as_bytes()))
    })
    .await
    .unwrap();
    assert_eq!((twice, once), (400, 200));
}
