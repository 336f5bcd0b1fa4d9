//! How long taking in many tasks takes, and how much memory it needs: run with
//! `cargo bench --bench intake [-- N] [sources]` (default 100000; `sources`: only the source passes).
//! Prints figures; asserts nothing.
//!
//! Per backend (SQLite in a temporary directory; PostgreSQL too, in a fresh schema, when
//! `EXECUTOR_TEST_DATABASE_URL` is set), four passes over N generated tasks of varied text sizes:
//! - `cli add`: the real binary, `executor queue add --from-json FILE`, into an empty queue: wall time
//!   and the child's peak RSS (from `wait4`);
//! - `cli 1% changed`: the same file again with one task in a hundred changed (the update path; the
//!   rest come back unchanged);
//! - `store add` / `store 1% changed`: the same through the library's streaming intake
//!   (`Store::begin_intake`), fed in chunks as the CLI does, with this process's peak RSS (VmHWM,
//!   reset before each pass through /proc/self/clear_refs).
//!
//! Then `executor intake` of N tasks from an Asana (100 a page) and from a JSON Lines file, with this
//! process's peak RSS (see `intake/sources.rs`).

#[path = "intake/sources.rs"]
mod sources;

#[path = "support/pg.rs"]
mod pg;
use pg::pg_schema;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use executor::domain::{Actor, TaskGid};
use executor::store::{NewTask, Store};

const PG_ENV: &str = "EXECUTOR_TEST_DATABASE_URL";
/// How many tasks the store pass hands to the intake at a time (as the CLI's reader does).
const FEED: usize = 1000;

/// Task `i` of a run; `changed` gives the 1% that differ in the second pass. Descriptions run from 20
/// to about 800 characters, a quarter of the tasks have notes, some a priority or a source.
fn task(i: usize, changed: bool) -> NewTask {
    let words = ["fix", "the", "login", "flow", "when", "a", "user", "has", "two", "accounts", "ünïcode"];
    let len = 20 + (i * 7919) % 780;
    let mut description = format!("Task {i}: ");
    let mut w = i;
    while description.len() < len {
        description.push_str(words[w % words.len()]);
        description.push(' ');
        w = w.wrapping_mul(31).wrapping_add(7);
    }
    if changed {
        description.push_str("(changed)");
    }
    NewTask {
        task_gid: Some(gid(i)),
        source: i.is_multiple_of(3).then(|| "my_tasks_inbox".to_string()),
        description: Some(description),
        notes: i.is_multiple_of(4).then(|| "notes ".repeat(1 + i % 60)),
        repo: None,
        priority: i.is_multiple_of(5).then_some((i % 4) as i32 + 1),
        ..Default::default()
    }
}

fn gid(i: usize) -> TaskGid {
    TaskGid::parse(&format!("T-{i}")).expect("a valid gid")
}

fn changed(pass: usize, i: usize) -> bool {
    pass > 0 && i % 100 == 7
}

/// The JSON array the CLI reads, written element by element.
fn write_json(path: &Path, n: usize, pass: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("json file"));
    out.write_all(b"[").expect("write");
    for i in 0..n {
        if i > 0 {
            out.write_all(b",\n").expect("write");
        }
        let t = task(i, changed(pass, i));
        let value = serde_json::json!({
            "task_gid": t.task_gid.as_ref().map(|g| g.as_str()), "source": t.source,
            "description": t.description, "notes": t.notes, "priority": t.priority,
        });
        serde_json::to_writer(&mut out, &value).expect("write");
    }
    out.write_all(b"]\n").expect("write");
    out.flush().expect("flush");
}

/// Runs the binary and returns (seconds, peak RSS in KiB) of the child.
// The child is reaped by `wait4`, which also reports its peak memory; `Child::wait` would not.
#[allow(clippy::zombie_processes)]
fn run_cli(config: &Path, json: &Path) -> (f64, i64) {
    let start = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_executor"))
        .arg("--config")
        .arg(config)
        .args(["queue", "add", "--from-json"])
        .arg(json)
        .env_remove("EXECUTOR_CONFIG")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn executor");
    let mut status = 0;
    // SAFETY: rusage is plain old data, zeroed is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: waits for the child spawned above; `status` and `usage` outlive the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(waited, pid, "wait4");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "executor failed: {status}");
    (secs, usage.ru_maxrss)
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn vm_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Resets VmHWM to the current RSS (Linux), so each pass reports its own peak.
fn reset_hwm() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

async fn store_pass(url: &str, n: usize, pass: usize) -> (f64, u64) {
    let store = Store::open(url).await.expect("open");
    store.migrate().await.expect("migrate");
    reset_hwm();
    let start = Instant::now();
    let mut intake = store.begin_intake(Actor::Cli).await.expect("begin");
    let mut i = 0;
    while i < n {
        let chunk: Vec<(TaskGid, NewTask)> =
            (i..n.min(i + FEED)).map(|i| (gid(i), task(i, changed(pass, i)))).collect();
        intake.add(&chunk).await.expect("add");
        i += FEED;
    }
    intake.commit().await.expect("commit");
    let secs = start.elapsed().as_secs_f64();
    store.close().await;
    (secs, vm_hwm_kib())
}

async fn backend(name: &str, cli_url: &str, store_url: &str, dir: &Path, n: usize) {
    let config = dir.join(format!("{name}.toml"));
    let toml_url = toml::Value::String(cli_url.to_string());
    std::fs::write(
        &config,
        format!("[paths]\ndata_dir = {:?}\n[database]\nurl = {toml_url}\n", dir.join("data").display()),
    )
    .expect("config");
    for pass in 0..2 {
        let json = dir.join(format!("tasks{pass}.json"));
        if !json.exists() {
            write_json(&json, n, pass);
        }
        let what = if pass == 0 { "add" } else { "1% changed" };
        let (secs, rss) = run_cli(&config, &json);
        println!(
            "{name:<8} cli   {what:<11} {n:>7} tasks: {secs:>7.2} s, peak RSS {:>6.1} MB",
            rss as f64 / 1024.0
        );
    }
    for pass in 0..2 {
        let what = if pass == 0 { "add" } else { "1% changed" };
        let (secs, rss) = store_pass(store_url, n, pass).await;
        println!(
            "{name:<8} store {what:<11} {n:>7} tasks: {secs:>7.2} s, peak RSS {:>6.1} MB",
            rss as f64 / 1024.0
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = |f: &str| format!("sqlite://{}", dir.path().join(f).display());
    let only_sources = std::env::args().any(|a| a == "sources");
    if !only_sources {
        backend("sqlite", &sqlite("cli.db"), &sqlite("store.db"), dir.path(), n).await;
    }
    sources::backend("sqlite", [&sqlite("asana.db"), &sqlite("file.db")], dir.path(), n).await;
    match std::env::var(PG_ENV) {
        Ok(base) if !base.is_empty() => {
            if !only_sources {
                let (cli, store) =
                    (pg_schema(&base, "intake_cli").await, pg_schema(&base, "intake_store").await);
                backend("postgres", &cli, &store, dir.path(), n).await;
            }
            let (asana, file) =
                (pg_schema(&base, "intake_asana").await, pg_schema(&base, "intake_file").await);
            sources::backend("postgres", [&asana, &file], dir.path(), n).await;
        }
        _ => println!("postgres: skipped (set {PG_ENV})"),
    }
}
