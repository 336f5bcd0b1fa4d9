//! How fast the dashboard's pages answer on a big database: run with `cargo bench --bench web [-- N]`
//! (default 100000 tasks). Prints figures; asserts nothing.
//!
//! Seeds N tasks (through the store's streaming intake, as `benches/intake.rs` does; a third from the
//! source `inbox`, descriptions of 20 to 800 characters) and 1,000 runs with pull request snapshots,
//! into SQLite in a temporary directory (and with `--postgres`, into a schema of its own under
//! `EXECUTOR_TEST_DATABASE_URL`), then serves the dashboard on 127.0.0.1:0 and times over real HTTP:
//! "Needs you", the queue's first page, filters, deep pages, full-text searches, every kind of sort,
//! the age and priority filters, the API's search, the runs board (all states and one), a run's page
//! (each run with two ended worker sessions, one a review with findings; every tenth with a live one),
//! the status page and its API (`/api/v1/status`: counts by status, the pending tasks' detail).
//! For the insights, on both databases, 90 days of history (`web/insights_seed.rs`): every event
//! spread back over the quarter, 600 runs through `pr` (500 complete), six worker sessions a run,
//! triage for a fifth of the tasks, GitHub's points for every hour; then `/insights` over 7, 30 and
//! 90 days and its JSON (`/api/v1/insights?days=90`).

#[path = "web/insights_seed.rs"]
mod insights_seed;

use std::sync::Arc;
use std::time::{Duration, Instant};

use executor::config::Config;
use executor::domain::{Actor, EndReason, QueueStatus, ReviewVerdict, TaskGid, WorkerKind};
use executor::store::{NewTask, SessionStart, Store, WorkerEnd};
use executor::web::{self, AppState};

/// Tasks handed to the intake at a time.
const FEED: usize = 1000;
/// Runs on the board.
const RUNS: usize = 1000;
/// Requests per figure (after one warm-up request).
const REPEAT: usize = 20;
/// Tasks left awaiting go for "Needs you" (it shows 20 and counts them all).
const AWAITING: usize = 2000;
/// Runs stopped on budget, and as many abandoned with an unread notice.
const WAITING_RUNS: usize = 50;

fn task(i: usize) -> NewTask {
    let words = ["fix", "the", "login", "flow", "when", "a", "user", "has", "two", "accounts"];
    let len = 20 + (i * 7919) % 780;
    let mut description = format!("Task {i}: ");
    let mut w = i;
    while description.len() < len {
        description.push_str(words[w % words.len()]);
        description.push(' ');
        w = w.wrapping_mul(31).wrapping_add(7);
    }
    if i.is_multiple_of(997) {
        description.push_str("needle");
    }
    NewTask {
        task_gid: Some(gid(i)),
        source: Some(if i.is_multiple_of(3) { "inbox" } else { "reports" }.to_string()),
        description: Some(description),
        notes: i.is_multiple_of(4).then(|| "notes ".repeat(1 + i % 60)),
        priority: i.is_multiple_of(5).then_some((i % 4) as i32 + 1),
        ..Default::default()
    }
}

fn gid(i: usize) -> TaskGid {
    TaskGid::parse(&format!("T-{i}")).expect("a valid gid")
}

async fn seed(store: &Store, n: usize) {
    let started = Instant::now();
    let mut intake = store.begin_intake(Actor::Cli).await.expect("intake");
    for chunk in (0..n).collect::<Vec<_>>().chunks(FEED) {
        let batch: Vec<(TaskGid, NewTask)> = chunk.iter().map(|&i| (gid(i), task(i))).collect();
        intake.add(&batch).await.expect("add");
    }
    intake.commit().await.expect("commit");
    println!("seeded {n} tasks in {:.1}s", started.elapsed().as_secs_f64());
    let started = Instant::now();
    let snapshot = snapshot_json();
    // A snapshot the board could not read would be skipped, and the board timed without its work.
    serde_json::from_str::<executor::forge::PrSnapshot>(&snapshot).expect("a snapshot the board reads");
    for i in 0..RUNS.min(n) {
        let g = gid(i);
        store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Cli, None).await.expect("triage");
        store.set_task_status(&g, QueueStatus::Approved, Actor::Cli, None).await.expect("approve");
        let run = store.create_run_for_task(&g, Actor::Runner).await.expect("run").expect("a new run");
        store.set_last_snapshot(run.id, None, &snapshot).await.expect("snapshot");
        store.record_decision(run.id, None, "waiting for CI at the head").await.expect("decision");
        seed_workers(store, run.id, i).await;
    }
    println!("seeded {} runs and their workers in {:.1}s", RUNS.min(n), started.elapsed().as_secs_f64());
    seed_waits(store, n).await;
}

/// A run's workers as the board and the run page read them: a finished `queued` worker, a failed review
/// at the head with five findings, and for every tenth run a live `fix_comments` worker.
async fn seed_workers(store: &Store, run: i64, i: usize) {
    let start = SessionStart { start_sha: Some("0123456789abcdef".into()), resumed_session: None };
    let begin = |kind| store.begin_worker_session(run, kind, "claude", "bench", &start);
    let work = begin(WorkerKind::Queued).await.expect("session").expect("a new session");
    let end = WorkerEnd {
        cost_usd: 0.8,
        input_tokens: 90_000,
        output_tokens: 4_000,
        ..WorkerEnd::new(EndReason::Finished)
    };
    store.end_worker_session(work.id, None, &end).await.expect("end");
    let review = begin(WorkerKind::PrReview).await.expect("session").expect("a new session");
    let findings: Vec<_> = (1..=5)
        .map(|f| serde_json::json!({"path": format!("src/module_{f}.rs"), "line": f * 10, "body": "this unwrap panics on bad input"}))
        .collect();
    let result = serde_json::json!({"verdict": "fail", "summary": "Five problems.", "findings": findings});
    let end = WorkerEnd {
        cost_usd: 0.3,
        result_json: Some(result.to_string()),
        verdict: Some(ReviewVerdict::Fail),
        ..WorkerEnd::new(EndReason::Finished)
    };
    store.end_worker_session(review.id, None, &end).await.expect("end");
    if i.is_multiple_of(10) {
        let live = begin(WorkerKind::FixComments).await.expect("session").expect("a new session");
        store.set_worker_usage(live.id, None, Some(0.1), 20_000, 500, false).await.expect("usage");
    }
}

/// What "Needs you" lists: tasks awaiting go, runs stopped on budget, abandoned runs with an unread
/// notice, a failing source (the rest of the queue stays pending, as the analyzer has not seen it).
async fn seed_waits(store: &Store, n: usize) {
    let started = Instant::now();
    let runs = RUNS.min(n);
    for i in runs..(runs + AWAITING).min(n) {
        store.set_task_status(&gid(i), QueueStatus::AwaitingGo, Actor::Cli, None).await.expect("triage");
    }
    for id in 1..=(WAITING_RUNS as i64).min(runs as i64) {
        store.set_budget_stop(id, None, Some(executor::domain::BudgetCap::Run)).await.expect("budget stop");
    }
    for id in (WAITING_RUNS as i64 + 1)..=(2 * WAITING_RUNS as i64).min(runs as i64) {
        let from = executor::domain::RunState::Queued;
        let to = executor::domain::RunState::Abandoned;
        store.set_run_state_if(id, from, to, None, Actor::Runner, "attempts used up").await.expect("abandon");
        store
            .add_notice(Some(id), None, "abandoned", Some("abandoned"), "CI failed 3 times")
            .await
            .expect("notice");
    }
    store.set_source_failed("inbox", "Asana answered 503").await.expect("source");
    println!("seeded the waits of Needs you in {:.1}s", started.elapsed().as_secs_f64());
}

/// A pull request as the runner records it: two checks at the head and a few comments.
fn snapshot_json() -> String {
    let comment = |id: u32| {
        serde_json::json!({
            "id": format!("c{id}"), "author": "alice", "body": "please rename this function",
            "created_at": "2026-11-30T10:00:00Z", "path": null, "line": null, "thread_id": null,
            "thread_resolved": false, "in_reply_to": null, "by_agent": false
        })
    };
    serde_json::json!({
        "number": 5, "url": "https://github.com/o/r/pull/5", "state": "open", "draft": true,
        "head_sha": "0123456789abcdef", "labels": ["executor"], "mergeable": "mergeable",
        "checks": [
            {"name": "test", "status": "success", "sha": "0123456789abcdef", "url": null, "summary": null},
            {"name": "lint", "status": "failure", "sha": "0123456789abcdef", "url": null, "summary": null}
        ],
        "comments": [comment(1), comment(2), comment(3)],
        "observed_at": "2026-11-30T10:02:00Z",
        "diff": {"files": 4, "additions": 210, "deletions": 37}
    })
    .to_string()
}

/// Times `REPEAT` GETs of `path` after a warm-up; prints the median and the slowest in ms.
async fn time(client: &reqwest::Client, base: &str, what: &str, path: &str) {
    let url = format!("{base}{path}");
    let warm = client.get(&url).send().await.expect("GET");
    assert!(warm.status().is_success(), "{path}: {}", warm.status());
    let bytes = warm.bytes().await.expect("body").len();
    let mut times: Vec<Duration> = Vec::with_capacity(REPEAT);
    for _ in 0..REPEAT {
        let started = Instant::now();
        let response = client.get(&url).send().await.expect("GET");
        response.bytes().await.expect("body");
        times.push(started.elapsed());
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what:<40} {:>8.1} ms median {:>8.1} ms max   ({} KiB)  GET {path}",
        ms(times[REPEAT / 2]),
        ms(times[REPEAT - 1]),
        bytes / 1024
    );
}

const TOKEN: &str = "bench-token-0123456789abcdef0123456789";

/// Set to keep the seeded databases after the run, to look at a statement's plan in `sqlite3` or `psql`.
const KEEP: &str = "EXECUTOR_BENCH_KEEP";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("executor.db").display());
    bench("sqlite", &url, n).await;
    if std::env::var_os(KEEP).is_some() {
        println!("kept the SQLite database {} ({KEEP} is set)", dir.keep().join("executor.db").display());
    }
    // PostgreSQL too when asked (`-- N --postgres`), in a schema of its own under the test database.
    if std::env::args().any(|a| a == "--postgres") {
        let base =
            std::env::var("EXECUTOR_TEST_DATABASE_URL").expect("--postgres needs EXECUTOR_TEST_DATABASE_URL");
        let schema = format!("bench_web_{}", std::process::id());
        let admin = sqlx::PgPool::connect(&base).await.expect("connect to PostgreSQL");
        sqlx::raw_sql(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.expect("create schema");
        let sep = if base.contains('?') { '&' } else { '?' };
        bench("postgres", &format!("{base}{sep}options[search_path]={schema}"), n).await;
        println!("(PostgreSQL after VACUUM ANALYZE, as autovacuum leaves a table after a bulk load)");
        if std::env::var_os(KEEP).is_some() {
            println!("kept the PostgreSQL schema {schema} ({KEEP} is set)");
        } else {
            sqlx::raw_sql(&format!("DROP SCHEMA {schema} CASCADE"))
                .execute(&admin)
                .await
                .expect("drop schema");
        }
    }
}

async fn bench(backend: &str, url: &str, n: usize) {
    let store = Store::open(url).await.expect("open");
    store.migrate().await.expect("migrate");
    seed(&store, n).await;
    // The insights' history, written straight into the tables of either database.
    insights_seed::seed(&store, url, backend == "postgres").await;
    if backend == "postgres" {
        // What autovacuum does after a bulk load: statistics for the planner, and the visibility map
        // that lets a count read only an index (the tables the seed wrote in bulk).
        let pool = sqlx::PgPool::connect(url).await.expect("connect");
        let bulk = "executor_queue, executor_events, executor_runs, executor_worker_sessions, \
                    executor_analysis_sessions";
        sqlx::raw_sql(&format!("VACUUM ANALYZE {bulk}")).execute(&pool).await.expect("vacuum");
        pool.close().await;
    }

    // The board's statement alone, to tell the database's share of the board from the page's.
    let mut took: Vec<Duration> = Vec::with_capacity(REPEAT);
    for _ in 0..REPEAT {
        let started = Instant::now();
        store.runs_board(2000).await.expect("board");
        took.push(started.elapsed());
    }
    took.sort();
    println!("the board's statement alone: {:.1} ms median", took[REPEAT / 2].as_secs_f64() * 1000.0);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let state = AppState::new(store, Arc::new(Config::default()), TOKEN.to_string(), None);
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    tokio::spawn(web::serve(listener, state, shutdown));
    // Every read needs the token: the bench reads as a script does.
    let mut auth = reqwest::header::HeaderMap::new();
    auth.insert(reqwest::header::AUTHORIZATION, format!("Bearer {TOKEN}").parse().expect("header"));
    let client = reqwest::Client::builder().default_headers(auth).build().expect("client");

    println!("{backend}, {n} tasks, {} runs, {REPEAT} requests each:", RUNS.min(n));
    let pages = [
        ("needs you (the default view)", "/"),
        ("queue, first page", "/queue"),
        ("queue, status+source filter", "/queue?status=pending&source=inbox"),
        ("queue, page 1000", "/queue?page=1000"),
        ("queue, search, a rare word", "/queue?q=needle"),
        ("queue, search, a common word", "/queue?q=login"),
        ("queue, search, two word prefixes", "/queue?q=acc%20log"),
        ("queue, sorted by priority, descending", "/queue?sort=priority&dir=desc"),
        ("queue, sorted by source, page 1000", "/queue?sort=source&page=1000"),
        ("queue, sorted by updated, status filter", "/queue?status=pending&sort=updated&dir=desc"),
        ("queue, added within 7d, by gid", "/queue?added_within=7d&sort=gid"),
        ("queue, older than 30d (none)", "/queue?older_than=30d"),
        ("queue, priority 2 to 3, by added", "/queue?prio_min=2&prio_max=3&sort=added"),
        ("api, search sorted by added", "/api/v1/tasks?q=login&sort=added&dir=desc"),
        ("runs board (1,000 runs)", "/runs"),
        ("runs board, one state (50)", "/runs?state=abandoned"),
        ("a run's page (3 workers)", "/runs/991"),
        ("status", "/status"),
        ("status API (counts, pending detail)", "/api/v1/status"),
        ("insights, 30 days (the default)", "/insights"),
        ("insights, 7 days", "/insights?days=7"),
        ("insights, 90 days", "/insights?days=90"),
        ("insights JSON, 90 days", "/api/v1/insights?days=90"),
    ];
    for (what, path) in pages {
        time(&client, &base, what, path).await;
    }
}
