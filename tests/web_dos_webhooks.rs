//! The webhook receiver cannot be made to hold a stranger's bodies: what cannot be GitHub's is refused
//! before its body is read, and large unverified bodies in flight draw on a bounded budget (503 past
//! it) rather than on the server's memory. `GET` is 405 with the security headers.

mod common;
mod web_support;

use std::io::{Read as _, Write as _};
use std::sync::Arc;
use std::time::Duration;

use executor::config::Config;
use executor::web::AppState;

const SECRET: &str = "whsec-test-0123456789abcdef";

async fn receiver() -> (String, tokio::sync::watch::Sender<bool>, common::TestDb) {
    let db = common::sqlite();
    let mut state = AppState::new(db.open().await, Arc::new(Config::default()), "t".repeat(32), None);
    state.webhook_secret = Some(Arc::new(SECRET.to_string()));
    let (base, stop) = web_support::serve(state).await;
    (base.trim_start_matches("http://").to_string(), stop, db)
}

/// A delivery's head declaring `length` bytes, with `extra` header lines.
fn head(addr: &str, length: usize, extra: &str) -> String {
    format!(
        "POST /webhooks/github HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: GitHub-Hookshot/7d9b5a1\r\n\
         X-GitHub-Event: check_run\r\nX-GitHub-Delivery: dos-1\r\n{extra}Content-Length: {length}\r\n\r\n"
    )
}

/// Sends `head` and no body; returns the status line's code and whether the server then closed.
fn answer_without_body(addr: &str, head: &str) -> (u16, bool) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = loop {
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(_) => break false,
        }
    };
    let text = String::from_utf8_lossy(&answer).to_string();
    (text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0), closed)
}

#[tokio::test]
async fn what_cannot_be_githubs_is_refused_before_its_body_is_read() {
    let (addr, _stop, _db) = receiver().await;
    let signature = format!("X-Hub-Signature-256: sha256={}\r\n", "0".repeat(64));
    let json = "Content-Type: application/json\r\n";
    let cases = [
        ("unsigned", head(&addr, 24 * 1024 * 1024, json), 401),
        ("not JSON", head(&addr, 24 * 1024 * 1024, &format!("{signature}Content-Type: text/plain\r\n")), 415),
        ("no content type", head(&addr, 24 * 1024 * 1024, &signature), 415),
        (
            "malformed signature",
            head(&addr, 24 * 1024 * 1024, &format!("X-Hub-Signature-256: sha1=00\r\n{json}")),
            401,
        ),
    ];
    for (case, head, status) in cases {
        let addr = addr.clone();
        let (code, closed) =
            tokio::task::spawn_blocking(move || answer_without_body(&addr, &head)).await.unwrap();
        assert_eq!(code, status, "{case}: answered before a byte of the 24 MB body was sent");
        assert!(closed, "{case}: the connection is closed after the answer, the body unread");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_unverified_bodies_in_flight_are_refused_past_a_shared_budget() {
    let (addr, _stop, _db) = receiver().await;
    // Four deliveries with a made-up signature each send 20 MB of a declared 24 MB and wait: 80 MB
    // unverified in flight, past the 64 MB budget.
    let senders: Vec<_> = (0..4)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut stream = std::net::TcpStream::connect(&addr).unwrap();
                stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let extra = format!(
                    "X-Hub-Signature-256: sha256={}\r\nContent-Type: application/json\r\n",
                    "0".repeat(64)
                );
                stream.write_all(head(&addr, 24 * 1024 * 1024, &extra).as_bytes()).unwrap();
                let piece = vec![b' '; 1024 * 1024];
                for _ in 0..20 {
                    // Refused on the way: the server stops reading and closes.
                    if stream.write_all(&piece).is_err() {
                        break;
                    }
                }
                let mut buf = [0u8; 256];
                let n = stream.read(&mut buf).unwrap_or(0);
                String::from_utf8_lossy(&buf[..n]).split_whitespace().nth(1).and_then(|c| c.parse().ok())
            })
        })
        .collect();
    let codes: Vec<Option<u16>> = senders.into_iter().map(|s| s.join().unwrap()).collect();
    assert!(codes.contains(&Some(503)), "one is refused for want of budget: {codes:?}");
    assert!(codes.contains(&None), "the others are still being read, their body unfinished: {codes:?}");
}

#[tokio::test]
async fn get_is_405_with_the_security_headers() {
    let (addr, _stop, _db) = receiver().await;
    let response = reqwest::get(format!("http://{addr}/webhooks/github")).await.unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::METHOD_NOT_ALLOWED);
    let headers = response.headers();
    assert_eq!(headers["allow"], "POST");
    for name in ["content-security-policy", "x-content-type-options", "referrer-policy", "cache-control"] {
        assert!(headers.contains_key(name), "{name} missing: {headers:?}");
    }
}
