//! Whether strangers on the machine can take the dashboard down: `cargo bench --bench web_dos`.
//! Prints figures; exits 1 if an authenticated request was not answered within 1 s, or the server's
//! memory passed 150 MB.
//!
//! Starts the real `executor serve` (default limits: 256 connections, 10 s deadlines) and holds open
//! against it, reconnecting a second (`WEB_DOS_RECONNECT_MS`) after the server closes one: 300 sockets that send a `POST /login` head
//! declaring a 1,000-byte body and never send it, 300 that send a request head a byte a second, and 20
//! unsigned-in-truth webhook deliveries (a made-up signature) declaring 24 MB and sending 23 of it.
//! Then times 30 `GET /` with the token, one every 300 ms, and reads the server's RSS from /proc.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SLOW_BODIES: usize = 300;
const SLOW_HEADERS: usize = 300;
const BIG_DELIVERIES: usize = 20;
const PROBES: usize = 30;
const TOKEN: &str = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8";
const MAX_ANSWER: Duration = Duration::from_secs(1);
const MAX_RSS_KB: u64 = 150 * 1024;

/// Raises this process's (and so the server's) open-file limit to the hard limit: 620 attacking
/// sockets need more than the usual soft 1,024 with the server's own.
fn raise_open_files() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
    }
    limit.rlim_cur
}

/// Connects, sends `head` (and `body`, then `trickle` a byte a second), and holds the socket until
/// the server closes it; again, until `stop`.
async fn hold(
    addr: String,
    head: Vec<u8>,
    body: usize,
    trickle: bool,
    stop: Arc<AtomicBool>,
    pause: Duration,
) {
    let piece = vec![b' '; 64 * 1024];
    while !stop.load(Ordering::SeqCst) {
        let Ok(mut socket) = TcpStream::connect(&addr).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let mut sent = socket.write_all(&head).await.is_ok();
        let mut left = body;
        while sent && left > 0 {
            let n = left.min(piece.len());
            sent = socket.write_all(&piece[..n]).await.is_ok();
            left -= n;
        }
        let mut buf = [0u8; 4096];
        while sent && !stop.load(Ordering::SeqCst) {
            match tokio::time::timeout(Duration::from_secs(1), socket.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(_)) => {}
                Err(_) if trickle => {
                    if socket.write_all(b"X").await.is_err() {
                        break;
                    }
                }
                Err(_) => {}
            }
        }
        // A pause before trying again: holding sockets, not a connection flood (which the kernel's
        // accept queue meets before the server does).
        tokio::time::sleep(pause).await;
    }
}

fn rss_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let open_files = raise_open_files();
    let pause = Duration::from_millis(
        std::env::var("WEB_DOS_RECONNECT_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000),
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("executor.toml");
    let data = dir.path().join("data").display().to_string();
    std::fs::write(&config, format!("[paths]\ndata_dir = {data:?}\n\n[web]\nport = 0\ntoken = {TOKEN:?}\n"))
        .expect("the config");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_executor"))
        .arg("--config")
        .arg(&config)
        .args(["serve", "--no-runner"])
        .env("EXECUTOR_GITHUB_WEBHOOK_SECRET", "whsec-bench-0123456789")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("executor serve");
    let pid = child.id().expect("its pid");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = lines.next_line().await.ok().flatten().expect("the URL");
    let url = line.strip_prefix("dashboard: ").expect("the URL line");
    let base = url.split("/?token=").next().expect("the base").to_string();
    let addr = base.trim_start_matches("http://").to_string();
    let idle_rss = rss_kb(pid, "VmRSS:");
    println!(
        "open files allowed: {open_files}; server RSS before: {} MB; attackers reconnect after {} ms",
        idle_rss / 1024,
        pause.as_millis()
    );

    let stop = Arc::new(AtomicBool::new(false));
    let mut attackers = tokio::task::JoinSet::new();
    let login = format!(
        "POST /login HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: 1000\r\n\r\ntoken="
    );
    let slow_head = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ");
    let delivery = format!(
        "POST /webhooks/github HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         X-GitHub-Event: check_run\r\nX-GitHub-Delivery: bench\r\nX-Hub-Signature-256: sha256={}\r\n\
         Content-Length: {}\r\n\r\n",
        "0".repeat(64),
        24 * 1024 * 1024
    );
    for _ in 0..SLOW_BODIES {
        attackers.spawn(hold(addr.clone(), login.clone().into_bytes(), 0, false, stop.clone(), pause));
    }
    for _ in 0..SLOW_HEADERS {
        attackers.spawn(hold(addr.clone(), slow_head.clone().into_bytes(), 0, true, stop.clone(), pause));
    }
    for _ in 0..BIG_DELIVERIES {
        attackers.spawn(hold(
            addr.clone(),
            delivery.clone().into_bytes(),
            23 * 1024 * 1024,
            false,
            stop.clone(),
            pause,
        ));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;

    // A new connection per probe: a kept-alive one may have been closed as the idle one to make room
    // (a browser retries such a request by itself; reqwest reports it).
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("a client");
    let mut took = Vec::new();
    let mut failed = 0;
    let mut peak_rss = 0;
    for _ in 0..PROBES {
        let started = Instant::now();
        let answer = tokio::time::timeout(
            Duration::from_secs(5),
            http.get(format!("{base}/")).bearer_auth(TOKEN).send(),
        )
        .await;
        match answer {
            Ok(Ok(r)) if r.status().is_success() => took.push(started.elapsed()),
            other => {
                failed += 1;
                println!("a probe failed after {:.3}s: {other:?}", started.elapsed().as_secs_f64());
            }
        }
        peak_rss = peak_rss.max(rss_kb(pid, "VmRSS:"));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    stop.store(true, Ordering::SeqCst);
    let high_water = rss_kb(pid, "VmHWM:");
    attackers.abort_all();
    let _ = child.kill().await;

    took.sort();
    let p50 = took.get(took.len() / 2).copied().unwrap_or_default();
    let max = took.last().copied().unwrap_or_default();
    println!(
        "{SLOW_BODIES} slow bodies, {SLOW_HEADERS} slow headers, {BIG_DELIVERIES} 24 MB unsigned deliveries held open"
    );
    println!(
        "authenticated GET /: {} of {PROBES} answered, p50 {:.3}s, max {:.3}s",
        took.len(),
        p50.as_secs_f64(),
        max.as_secs_f64()
    );
    println!("server RSS: peak sampled {} MB, high-water {} MB", peak_rss / 1024, high_water / 1024);
    let mut ok = true;
    if failed > 0 || max > MAX_ANSWER {
        println!("FAIL: an authenticated request was not answered within {MAX_ANSWER:?}");
        ok = false;
    }
    if high_water > MAX_RSS_KB {
        println!("FAIL: the server's RSS passed {} MB", MAX_RSS_KB / 1024);
        ok = false;
    }
    if !ok {
        std::process::exit(1);
    }
}
