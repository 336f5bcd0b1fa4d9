//! How fast the analyzer's free filters clear a large queue: run with
//! `cargo bench --bench filter_pass [-- N]` (default 100000). Prints figures; asserts nothing.
//!
//! Per backend (SQLite in a temporary directory; PostgreSQL too, in a fresh schema, when
//! `EXECUTOR_TEST_DATABASE_URL` is set): N pending tasks are taken in by `executor intake` from a JSON
//! Lines file source (timed apart: a fresh table, with whatever statistics the intake itself leaves, as
//! in use — the benchmark runs no ANALYZE of its own), a third of them naming a Figma design, a few
//! completed, three in five not about macOS; then the analyzer's filter pass
//! (`analyzer::sweep::filter_pending`, the seed's rules without the source gate) runs over all of them:
//! wall time, tasks/s, and this process's peak RSS (VmHWM, reset before the pass). Then 100 claims of
//! the tasks left for the model, timed one by one.

#[path = "support/pg.rs"]
mod pg;
use pg::pg_schema;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use executor::analyzer::sweep::filter_pending;
use executor::config::Config;
use executor::domain::TaskGid;
use executor::filter::{Filters, RulesConfig, SEED_RULES};
use executor::store::{NewTask, Store};

const PG_ENV: &str = "EXECUTOR_TEST_DATABASE_URL";
const TARGET_SECONDS: f64 = 30.0;

fn task(i: usize) -> NewTask {
    let words = ["the", "sidebar", "flickers", "when", "a", "tab", "is", "dragged", "Windows", "🙂"];
    let len = 40 + (i * 7919) % 1500;
    // Two in five name macOS (the seed's `no_macos` rule skips the rest); of those, some link a Figma
    // design or are completed: about a third of the queue is left for the model.
    let mut description = format!("Task {i}: {}", if i % 5 < 2 { "macOS " } else { "" });
    let mut w = i;
    while description.len() < len {
        description.push_str(words[w % words.len()]);
        description.push(' ');
        w = w.wrapping_mul(31).wrapping_add(7);
    }
    if i.is_multiple_of(3) {
        description.push_str("\nDesign: https://www.figma.com/design/AbC123/Sidebar?node-id=1");
    }
    NewTask {
        task_gid: Some(gid(i)),
        source: Some("my_tasks_inbox".into()),
        description: Some(description),
        notes: i.is_multiple_of(4).then(|| "a human note ".repeat(1 + i % 60)),
        completed: Some(i % 10 == 1),
        ..Default::default()
    }
}

fn gid(i: usize) -> TaskGid {
    TaskGid::parse(&format!("T-{i}")).expect("a valid gid")
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn reset_hwm() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The tasks as a JSON Lines file source delivers them (its title and notes become the description).
fn write_jsonl(path: &Path, n: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("jsonl file"));
    for i in 0..n {
        let t = task(i);
        let line = serde_json::json!({
            "gid": gid(i).as_str(), "name": t.description, "notes": t.notes, "completed": t.completed,
        });
        serde_json::to_writer(&mut out, &line).expect("write");
        out.write_all(b"\n").expect("write");
    }
    out.flush().expect("flush");
}

async fn backend(name: &str, url: &str, n: usize, filters: &Filters, jsonl: &Path) {
    let store = Store::open(url).await.expect("open");
    store.migrate().await.expect("migrate");
    let config = Config::parse(&format!(
        "[[sources]]\nname = \"my_tasks_inbox\"\nkind = \"file\"\npath = {:?}\n",
        jsonl.display()
    ))
    .expect("config");
    let env: executor::intake::source::EnvLookup = Arc::new(|_| None);
    let started = Instant::now();
    let report = executor::intake::run::intake(&config, &store, None, true, env, None).await.expect("intake");
    assert_eq!(report.sources[0].error, None);
    println!(
        "{name:<8} intake      {:>7} added:   {:>6.2} s",
        report.sources[0].added,
        started.elapsed().as_secs_f64()
    );

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let counter = tokio::spawn(async move {
        let mut n = 0_u64;
        while rx.recv().await.is_some() {
            n += 1;
        }
        n
    });
    let (_stop_tx, stop) = tokio::sync::watch::channel(false);
    reset_hwm();
    let started = Instant::now();
    let skipped = filter_pending(&store, filters, 3, &tx, &stop).await.expect("filter pass");
    let secs = started.elapsed().as_secs_f64();
    let rss = vm_hwm_kib() as f64 / 1024.0;
    drop(tx);
    let reported = counter.await.expect("counter");
    println!(
        "{name:<8} filter pass {n:>7} pending: {secs:>6.2} s, {:>7.0} tasks/s, {skipped} skipped ({reported} reported), \
         peak RSS {rss:.1} MB; target under {TARGET_SECONDS} s: {}",
        n as f64 / secs,
        if secs < TARGET_SECONDS { "met" } else { "MISSED" }
    );

    let started = Instant::now();
    let mut claims = 0;
    for _ in 0..100 {
        if store.claim_for_analysis("bench", chrono::Duration::hours(1), 3).await.expect("claim").is_some() {
            claims += 1;
        }
    }
    let count = Instant::now();
    let left = store.count_claimable(3).await.expect("count");
    println!(
        "{name:<8} {claims} claims: {:.2} ms a claim; one count of the {left} left: {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3 / f64::from(claims.max(1)),
        count.elapsed().as_secs_f64() * 1e3
    );
    store.close().await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000);
    let config: RulesConfig = toml::from_str(SEED_RULES).expect("SEED_RULES parses");
    let mut ungated = config.intake.clone();
    ungated.qualifying_sources.clear();
    let filters = Filters::compile(&ungated, &config.filters).expect("seed rules compile");
    let dir = tempfile::tempdir().expect("tempdir");
    let jsonl = dir.path().join("tasks.jsonl");
    write_jsonl(&jsonl, n);
    backend("sqlite", &format!("sqlite://{}", dir.path().join("f.db").display()), n, &filters, &jsonl).await;
    match std::env::var(PG_ENV) {
        Ok(base) if !base.is_empty() => {
            backend("postgres", &pg_schema(&base, "filter_pass").await, n, &filters, &jsonl).await
        }
        _ => println!("postgres: skipped (set {PG_ENV})"),
    }
}
