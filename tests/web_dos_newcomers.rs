//! Strangers reconnecting cannot push out a fresh connection before it has said anything: to make room,
//! the server closes a connection that has sent part of a request head (a slow header) before one that
//! has only just connected, so a client with the token that connects amid a stream of strangers'
//! reconnects is still served on that connection.

mod common;
mod web_support;

use std::sync::Arc;
use std::time::Duration;

use executor::config::Config;
use executor::web::AppState;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const SLOTS: usize = 16;

/// Opens a connection and sends the start of a request head that never ends.
async fn slow_header(addr: &str) -> TcpStream {
    let mut socket = TcpStream::connect(addr).await.expect("connect");
    socket.write_all(format!("GET / HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes()).await.expect("head");
    // Lets the server read it before the next one comes, as a stranger's reconnects a moment apart are.
    tokio::time::sleep(Duration::from_millis(100)).await;
    socket
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_connection_is_not_closed_for_strangers_reconnecting() {
    let db = common::sqlite();
    let mut config = Config::default();
    config.web.max_connections = SLOTS;
    config.web.header_read_timeout = executor::config::Duration::secs(120);
    config.web.idle_timeout = executor::config::Duration::secs(120);
    let state = AppState::new(db.open().await, Arc::new(config), TOKEN.to_string(), None);
    let (base, _stop) = web_support::serve(state).await;
    let addr = base.trim_start_matches("http://").to_string();

    let mut strangers = Vec::new();
    for _ in 0..SLOTS {
        strangers.push(slow_header(&addr).await);
    }
    // Connected, not yet asking: what a browser's connection is for the moment before its request.
    let mut fresh = TcpStream::connect(&addr).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(100)).await;
    // More strangers than there are slots, each pushing one connection out.
    for _ in 0..SLOTS + 4 {
        strangers.push(slow_header(&addr).await);
    }

    let request = format!(
        "GET /api/v1/tasks HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    );
    let sent = fresh.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), fresh.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        sent.is_ok() && matches!(read, Ok(Ok(_))) && answer.starts_with("HTTP/1.1 200"),
        "the fresh connection was served: sent {sent:?}, read {read:?}, answer {:?}",
        answer.chars().take(200).collect::<String>()
    );
}
