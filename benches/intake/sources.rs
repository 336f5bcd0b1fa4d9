//! The source passes of the intake bench: `executor intake` (the library's `intake::run::intake`) of
//! N tasks from an Asana and from a JSON Lines file, with this process's peak RSS (VmHWM).
//!
//! The Asana here makes its pages up from the offset rather than holding N tasks (as the tests' fake
//! does), so the peak measured is the intake's, not the server's.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::Query;
use executor::config::Config;
use executor::intake::run::intake;
use executor::store::Store;
use serde_json::{Value, json};

const TOKEN: &str = "bench-token";

/// Task `i` in Asana's shape: text of 20 to ~800 characters, notes on a quarter of them.
fn asana_task(i: usize) -> Value {
    let words = ["fix", "the", "login", "flow", "when", "a", "user", "has", "two", "accounts", "ünïcode"];
    let len = 20 + (i * 7919) % 780;
    let mut name = format!("Task {i}: ");
    let mut w = i;
    while name.len() < len {
        name.push_str(words[w % words.len()]);
        name.push(' ');
        w = w.wrapping_mul(31).wrapping_add(7);
    }
    json!({
        "gid": (1_000_000 + i).to_string(),
        "name": name,
        "notes": if i.is_multiple_of(4) { "notes ".repeat(1 + i % 60) } else { String::new() },
        "completed": false,
        "assignee": {"name": "Alex Doe", "email": "alex@example.com"},
        "memberships": [{"section": {"name": "Backlog"}}],
        "custom_fields": [{"name": "Platform", "display_value": "macOS"}],
        "permalink_url": format!("https://app.asana.com/0/1/{i}"),
        "modified_at": format!("2026-{:02}-{:02}T00:00:00.000Z", 1 + i % 12, 1 + i % 28),
    })
}

/// An Asana of `n` tasks in project 1, 100 a page; its API base.
async fn start_asana(n: usize) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let app = axum::Router::new().fallback(move |Query(q): Query<HashMap<String, String>>| async move {
        let start: usize = q.get("offset").and_then(|o| o.parse().ok()).unwrap_or(0);
        let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(100);
        let end = n.min(start + limit);
        let data: Vec<Value> = (start..end).map(asana_task).collect();
        let next = (end < n).then(|| json!({"offset": end.to_string()}));
        axum::Json(json!({"data": data, "next_page": next}))
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://127.0.0.1:{port}/api/1.0")
}

fn write_jsonl(path: &Path, n: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("jsonl file"));
    for i in 0..n {
        serde_json::to_writer(&mut out, &asana_task(i)).expect("write");
        out.write_all(b"\n").expect("write");
    }
    out.flush().expect("flush");
}

/// One intake of `source` into the store at `url`: (seconds, peak RSS in KiB, RSS before in KiB).
async fn pass(url: &str, config: &Config) -> (f64, u64, u64) {
    let store = Store::open(url).await.expect("open");
    store.migrate().await.expect("migrate");
    let before = super::vm_rss_kib();
    super::reset_hwm();
    let start = Instant::now();
    let env: executor::intake::source::EnvLookup = Arc::new(|_| Some(TOKEN.to_string()));
    let report = intake(config, &store, None, true, env, None).await.expect("intake");
    let secs = start.elapsed().as_secs_f64();
    let hwm = super::vm_hwm_kib();
    for source in &report.sources {
        assert_eq!(source.error, None, "{}", source.name);
    }
    store.close().await;
    (secs, hwm, before)
}

/// The Asana and the file pass on one backend (`url`s, one per source so each adds N tasks).
pub async fn backend(name: &str, urls: [&str; 2], dir: &Path, n: usize) {
    let api_url = start_asana(n).await;
    let jsonl = dir.join("source.jsonl");
    if !jsonl.exists() {
        write_jsonl(&jsonl, n);
    }
    let asana = format!(
        "[[sources]]\nname = \"backlog\"\nkind = \"asana\"\napi_url = \"{api_url}\"\nprojects = [\"1\"]\n\
         token_env = \"ASANA_TOKEN\"\n"
    );
    let file = format!("[[sources]]\nname = \"inbox\"\nkind = \"file\"\npath = {:?}\n", jsonl.display());
    for ((what, toml), url) in [("asana", asana), ("file", file)].into_iter().zip(urls) {
        let config = Config::parse(&toml).expect("config");
        let (secs, hwm, before) = pass(url, &config).await;
        println!(
            "{name:<8} intake {what:<6} {n:>7} tasks: {secs:>7.2} s, peak RSS {:>6.1} MB ({:+.1} MB over the {:.1} MB before)",
            hwm as f64 / 1024.0,
            (hwm as f64 - before as f64) / 1024.0,
            before as f64 / 1024.0
        );
    }
}
