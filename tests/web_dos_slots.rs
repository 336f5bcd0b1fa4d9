//! Half-sent requests cannot take the dashboard: an unauthenticated request that never finishes its
//! body loses its connection at the deadline, and while strangers hold every slot they may take, a
//! request with the token is still served.

mod common;
mod web_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use executor::config::Config;
use executor::web::AppState;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// A dashboard with `max_connections` slots and `timeout` for headers (and so for an unauthenticated
/// request's body); its address.
async fn dashboard(
    max_connections: usize,
    timeout: u64,
) -> (String, tokio::sync::watch::Sender<bool>, common::TestDb) {
    let db = common::sqlite();
    let mut config = Config::default();
    config.web.max_connections = max_connections;
    config.web.header_read_timeout = executor::config::Duration::secs(timeout);
    config.web.idle_timeout = executor::config::Duration::secs(60);
    let mut state = AppState::new(db.open().await, Arc::new(config), TOKEN.to_string(), None);
    state.webhook_secret = Some(Arc::new("whsec-0123456789".to_string()));
    let (base, stop) = web_support::serve(state).await;
    (base.trim_start_matches("http://").to_string(), stop, db)
}

/// Sends the headers of a request whose 1,000-byte body never comes.
async fn half_sent(addr: &str, path: &str) -> TcpStream {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    let kind = if path == "/login" { "application/x-www-form-urlencoded" } else { "application/json" };
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {kind}\r\n\
         X-GitHub-Event: push\r\nX-GitHub-Delivery: d1\r\nX-Hub-Signature-256: sha256={}\r\n\
         Content-Length: 1000\r\n\r\ntoken=",
        "0".repeat(64)
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    socket
}

/// Reads until the server closes the socket; panics if it is still open after `limit`.
async fn closed_within(mut socket: TcpStream, limit: Duration) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(limit.saturating_sub(started.elapsed()), socket.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("the server kept a half-sent request's connection open for {limit:?}"),
        }
    }
}

#[tokio::test]
async fn a_half_sent_login_or_delivery_loses_its_connection_at_the_deadline() {
    let (addr, _stop, _db) = dashboard(256, 1).await;
    for path in ["/login", "/webhooks/github"] {
        let socket = half_sent(&addr, path).await;
        let took = closed_within(socket, Duration::from_secs(10)).await;
        assert!(took >= Duration::from_millis(500), "{path}: not before the deadline: {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_the_token_is_served_while_strangers_hold_every_slot_they_may() {
    // A deadline far beyond the test: the half-sent requests hold their slots throughout.
    let (addr, _stop, _db) = dashboard(16, 120).await;
    let mut held = Vec::new();
    for _ in 0..16 {
        held.push(half_sent(&addr, "/login").await);
    }
    // Their headers reach the server before the request with the token does.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        reqwest::Client::new().get(format!("http://{addr}/")).bearer_auth(TOKEN).send(),
    )
    .await
    .expect("an answer within 10 s")
    .expect("served, not refused");
    assert_eq!(answer.status(), reqwest::StatusCode::OK);
    // The strangers past their share were told so at once, their bodies unread.
    let mut told = 0;
    for mut socket in held {
        let mut buf = [0u8; 256];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(200), socket.read(&mut buf)).await
            && String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 503")
        {
            told += 1;
        }
    }
    assert!(told >= 4, "the strangers past 12 of 16 slots are answered 503: {told}");
}
