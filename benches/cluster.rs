//! Several runners sharing one database: what claiming runs and heartbeating cost. Run with
//! `cargo bench --bench cluster [-- RUNS ROUNDS]` (default 10000 runs to claim, 20 heartbeat rounds).
//! Prints figures and asserts nothing about time; exits non-zero only when a run was claimed twice,
//! which is a correctness failure, not a slow result.
//!
//! PostgreSQL is named by `EXECUTOR_BENCH_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`); each part works in a schema of its own, dropped at the
//! end. When the server cannot be reached the bench says so, runs the SQLite part only, and exits 0.
//!
//! 1. Claims (PostgreSQL only: SQLite is one host): RUNS queued runs; 3 runners, each with a Store
//!    (connection pool) of its own as separate processes would have, claim 50 at a time with
//!    `claim_runs` and abandon each run they claimed, fenced by their lease, until none is left. A side
//!    connection samples how many of the bench's backends wait on a lock.
//! 2. Heartbeats (PostgreSQL and SQLite): 100 runners of 100 hosts in one process (one Store: 100 pools
//!    would exceed the server's connections), 20 leased runs each; ROUNDS rounds of one heartbeat per
//!    runner, then the per-tick queries that read all runners; then again `declare_lost_runners`
//!    once 3,000 more runners ended (a third of them lost), as cron's restarts leave them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use executor::domain::{Actor, QueueStatus, RunState, TaskGid};
use executor::store::{Heartbeat, NewTask, RunnerRegistration, Store, StoreError, WorkerSlot};
use sqlx::PgPool;

const PG_ENV: &str = "EXECUTOR_BENCH_DATABASE_URL";
const PG_DEFAULT: &str = "postgres://postgres@127.0.0.1:5432/test";
/// Set on the bench's PostgreSQL connections, so that lock waits are counted for them alone: other
/// clients (tests running meanwhile) may share the database.
const APP_NAME: &str = "executor_cluster_bench";
const CLAIMERS: usize = 3;
const WORK_LIMIT: u32 = 50;
const HOSTS: usize = 100;
const LEASES_PER_HOST: u32 = 20;
/// Long enough that no lease or heartbeat lapses during the bench.
const TTL: Duration = Duration::from_secs(600);
const SAMPLE_EVERY: Duration = Duration::from_millis(5);
/// Calls of the queries that read every runner, averaged.
const READ_REPEAT: u32 = 5;
/// Runners ended before the per-tick queries are timed again: cron starts one a minute on every host.
const ENDED: usize = 3000;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `p` quantile (0..=1) of sorted durations.
fn quantile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn mean(times: &[Duration]) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    times.iter().sum::<Duration>() / times.len() as u32
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn gid(prefix: &str, i: usize) -> TaskGid {
    TaskGid::parse(&format!("{prefix}-{i}")).expect("a valid gid")
}

/// Adds `n` pending tasks `{prefix}-0..n` in one intake.
async fn add_tasks(store: &Store, prefix: &str, n: usize) {
    let mut intake = store.begin_intake(Actor::Cli).await.expect("intake");
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let batch: Vec<(TaskGid, NewTask)> = chunk
            .iter()
            .map(|&i| {
                (gid(prefix, i), NewTask { description: Some(format!("task {i}")), ..Default::default() })
            })
            .collect();
        intake.add(&batch).await.expect("add tasks");
    }
    intake.commit().await.expect("commit tasks");
}

/// A schema of the bench's own on the PostgreSQL server, and the URL that works in it.
struct PgSchema {
    base: String,
    name: String,
    url: String,
}

impl PgSchema {
    async fn create(base: &str, part: &str) -> Result<PgSchema, String> {
        let name = format!("bench_cluster_{part}_{}", std::process::id());
        let admin = PgPool::connect(base).await.map_err(|e| e.to_string())?;
        sqlx::raw_sql(&format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"))
            .execute(&admin)
            .await
            .map_err(|e| e.to_string())?;
        admin.close().await;
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options[search_path]={name}&application_name={APP_NAME}");
        Ok(PgSchema { base: base.to_string(), name, url })
    }

    async fn drop(self) {
        if let Ok(admin) = PgPool::connect(&self.base).await {
            let _ =
                sqlx::raw_sql(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name)).execute(&admin).await;
            admin.close().await;
        }
    }
}

async fn open(url: &str) -> Store {
    let store = Store::open(url).await.expect("open");
    store.migrate().await.expect("migrate");
    store
}

async fn register(store: &Store, id: &str, host: &str, ttl: Duration) {
    let registration = RunnerRegistration {
        id,
        host,
        pid: i64::from(std::process::id()),
        version: "bench",
        machine: "m",
        ttl,
        max_workers: 2,
    };
    store.register_runner(&registration).await.expect("register runner");
}

fn runner_id(host: &str, n: usize) -> String {
    format!("{host}/{n:08x}")
}

// ---------------------------------------------------------------------------------------------------
// 1. Claims
// ---------------------------------------------------------------------------------------------------

/// What one claiming runner did.
struct Claimer {
    id: String,
    claimed: Vec<i64>,
    /// The duration of each `claim_runs` call, the last (empty) one included.
    calls: Vec<Duration>,
    /// Abandoning a run it had just claimed was refused: its lease was not live.
    refused: usize,
    elapsed: Duration,
}

async fn claim_until_empty(store: Store, id: String, start: Arc<tokio::sync::Barrier>) -> Claimer {
    start.wait().await;
    let started = Instant::now();
    let (mut claimed, mut calls, mut refused) = (Vec::new(), Vec::new(), 0);
    loop {
        let call = Instant::now();
        let ids = store.claim_runs(&id, TTL, WORK_LIMIT).await.expect("claim_runs");
        calls.push(call.elapsed());
        if ids.is_empty() {
            break;
        }
        for &run in &ids {
            // Out of `queued` for good, under the lease just taken: no runner may claim it again.
            let done = store
                .set_run_state_if(
                    run,
                    RunState::Queued,
                    RunState::Abandoned,
                    Some(&id),
                    Actor::Runner,
                    "bench",
                )
                .await;
            match done {
                Ok(_) => {}
                Err(StoreError::LeaseLost(_) | StoreError::Conflict(_)) => refused += 1,
                Err(e) => panic!("abandon run {run}: {e}"),
            }
        }
        claimed.extend(ids);
    }
    store.close().await;
    Claimer { id, claimed, calls, refused, elapsed: started.elapsed() }
}

#[derive(Default)]
struct LockWaits {
    samples: u64,
    ours_max: i64,
    ours_sum: i64,
    all_max: i64,
    all_sum: i64,
}

/// Counts backends waiting on a heavyweight lock, every `SAMPLE_EVERY`, until `stop`.
async fn sample_lock_waits(pool: PgPool, stop: Arc<AtomicBool>) -> LockWaits {
    let mut w = LockWaits::default();
    while !stop.load(Ordering::Relaxed) {
        let counts: Result<(i64, i64), _> = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE application_name = $1), count(*) FROM pg_stat_activity \
             WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
        .bind(APP_NAME)
        .fetch_one(&pool)
        .await;
        if let Ok((ours, all)) = counts {
            w.samples += 1;
            w.ours_max = w.ours_max.max(ours);
            w.ours_sum += ours;
            w.all_max = w.all_max.max(all);
            w.all_sum += all;
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    w
}

/// Runs the claim part; returns how many runs were claimed twice.
async fn claims(base: &str, runs: usize) -> usize {
    let schema = match PgSchema::create(base, "claims").await {
        Ok(s) => s,
        Err(e) => {
            println!("claims (postgres): SKIPPED, cannot create a schema: {e}");
            return 0;
        }
    };
    let store = open(&schema.url).await;
    let raw = PgPool::connect(&schema.url).await.expect("raw connection");
    let setup = Instant::now();
    add_tasks(&store, "C", runs).await;
    // Approving and creating runs one at a time through the store is four transactions per run; the
    // same rows in three statements. ANALYZE as autovacuum would after a bulk insert.
    sqlx::raw_sql(
        "UPDATE executor_queue SET status = 'approved' WHERE status = 'pending'; \
         INSERT INTO executor_runs (task_gid, repo, started_at, updated_at, state) \
           SELECT task_gid, repo, now(), now(), 'queued' FROM executor_queue \
           WHERE status = 'approved' AND executor_run_id IS NULL; \
         UPDATE executor_queue q SET executor_run_id = r.id FROM executor_runs r \
           WHERE r.task_gid = q.task_gid AND q.executor_run_id IS NULL; \
         ANALYZE executor_queue; ANALYZE executor_runs",
    )
    .execute(&raw)
    .await
    .expect("seed runs");
    let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM executor_runs WHERE state = 'queued'")
        .fetch_one(&raw)
        .await
        .expect("count");
    println!(
        "claims (postgres): {queued} queued runs; {CLAIMERS} runners, each with its own Store (connection pool), \
         loop claim_runs(work_limit {WORK_LIMIT}) and abandon each run claimed, fenced by its lease"
    );
    println!("  setup: {queued} tasks and queued runs in {:.1}s", setup.elapsed().as_secs_f64());

    let start = Arc::new(tokio::sync::Barrier::new(CLAIMERS + 1));
    let mut claimers = Vec::new();
    for n in 1..=CLAIMERS {
        let host = format!("claim-host-{n}");
        let id = runner_id(&host, n);
        let own = Store::open(&schema.url).await.expect("open");
        register(&own, &id, &host, TTL).await;
        claimers.push(tokio::spawn(claim_until_empty(own, id, start.clone())));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(sample_lock_waits(raw.clone(), stop.clone()));
    start.wait().await;
    let started = Instant::now();
    let mut done = Vec::new();
    for c in claimers {
        done.push(c.await.expect("claimer"));
    }
    let wall = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let waits = sampler.await.expect("sampler");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM executor_runs WHERE state = 'queued'")
        .fetch_one(&raw)
        .await
        .expect("count");

    let mut times_claimed: HashMap<i64, usize> = HashMap::new();
    for id in done.iter().flat_map(|c| &c.claimed) {
        *times_claimed.entry(*id).or_default() += 1;
    }
    let twice = times_claimed.values().filter(|&&n| n > 1).count();
    let total: usize = done.iter().map(|c| c.claimed.len()).sum();
    let refused: usize = done.iter().map(|c| c.refused).sum();
    let mut calls: Vec<Duration> = done.iter().flat_map(|c| c.calls.iter().copied()).collect();
    calls.sort();
    let in_calls: Duration = calls.iter().sum();
    println!(
        "  claimed: {total} (distinct runs {}); claimed twice: {twice}; left queued: {left}; abandon refused (lease not live): {refused}",
        times_claimed.len()
    );
    println!(
        "  wall time {:.2}s; claims per second overall: {:.0} (claim + abandon per run)",
        wall.as_secs_f64(),
        total as f64 / wall.as_secs_f64()
    );
    for c in &done {
        println!(
            "    runner {}: {} runs in {} calls, {:.0} claims/s over its {:.2}s",
            c.id,
            c.claimed.len(),
            c.calls.len(),
            c.claimed.len() as f64 / c.elapsed.as_secs_f64(),
            c.elapsed.as_secs_f64()
        );
    }
    println!(
        "  one claim_runs call ({} calls): mean {:.2} ms, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        calls.len(),
        ms(mean(&calls)),
        ms(quantile(&calls, 0.5)),
        ms(quantile(&calls, 0.99)),
        ms(quantile(&calls, 1.0))
    );
    println!(
        "  time inside claim_runs: {:.2}s of the runners' {:.2}s together ({:.0} runs claimed per second of it)",
        in_calls.as_secs_f64(),
        done.iter().map(|c| c.elapsed.as_secs_f64()).sum::<f64>(),
        total as f64 / in_calls.as_secs_f64()
    );
    let per = |sum: i64| if waits.samples == 0 { 0.0 } else { sum as f64 / waits.samples as f64 };
    println!(
        "  backends waiting on a lock (pg_stat_activity wait_event_type = 'Lock'), {} samples every {} ms: \
         the bench's max {}, mean {:.3}; whole database (other clients too) max {}, mean {:.3}",
        waits.samples,
        SAMPLE_EVERY.as_millis(),
        waits.ours_max,
        per(waits.ours_sum),
        waits.all_max,
        per(waits.all_sum)
    );
    if twice > 0 {
        println!("  FAILED: {twice} runs were claimed by two runners");
    }
    raw.close().await;
    store.close().await;
    schema.drop().await;
    twice
}

// ---------------------------------------------------------------------------------------------------
// 2. Heartbeats
// ---------------------------------------------------------------------------------------------------

async fn heartbeats(store: &Store, rounds: usize) {
    let backend = store.backend();
    let runs = HOSTS * LEASES_PER_HOST as usize;
    let setup = Instant::now();
    add_tasks(store, "H", runs).await;
    for i in 0..runs {
        let g = gid("H", i);
        store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Cli, None).await.expect("triage");
        store.set_task_status(&g, QueueStatus::Approved, Actor::Cli, None).await.expect("approve");
        store.create_run_for_task(&g, Actor::Runner).await.expect("run").expect("a new run");
    }
    let seeded = setup.elapsed();
    let hosts: Vec<(String, String)> = (0..HOSTS)
        .map(|n| {
            let host = format!("host-{n:03}");
            (runner_id(&host, n), host)
        })
        .collect();
    let setup = Instant::now();
    let mut leases = 0;
    for (id, host) in &hosts {
        register(store, id, host, TTL).await;
        leases += store.claim_runs(id, TTL, LEASES_PER_HOST).await.expect("claim").len();
    }
    println!(
        "heartbeats ({backend}): {HOSTS} runners on {HOSTS} hosts in one process (one Store), \
         {LEASES_PER_HOST} leased runs each, {rounds} rounds"
    );
    println!(
        "  setup: {runs} runs through the store in {:.1}s; {HOSTS} runners registered and {leases} leases claimed in {:.2}s",
        seeded.as_secs_f64(),
        setup.elapsed().as_secs_f64()
    );

    let (mut ticks, mut beats, mut renewed) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let tick = Instant::now();
        let mut leases = 0;
        for (id, _) in &hosts {
            let beat = Instant::now();
            match store.heartbeat(id, TTL).await.expect("heartbeat") {
                Heartbeat::Alive { leases: n } => leases += n,
                Heartbeat::Lost => panic!("runner {id} lost during the bench"),
            }
            beats.push(beat.elapsed());
        }
        ticks.push(tick.elapsed());
        renewed.push(leases);
    }
    ticks.sort();
    beats.sort();
    println!(
        "  one tick = {HOSTS} heartbeats one after another: mean {:.1} ms, p50 {:.1} ms, max {:.1} ms",
        ms(mean(&ticks)),
        ms(quantile(&ticks, 0.5)),
        ms(quantile(&ticks, 1.0))
    );
    println!(
        "  one heartbeat: mean {:.3} ms, p50 {:.3} ms, p99 {:.3} ms",
        ms(mean(&beats)),
        ms(quantile(&beats, 0.5)),
        ms(quantile(&beats, 0.99))
    );
    println!(
        "  statements per tick: {HOSTS} transactions of 2 UPDATEs (runner row, its leases) = {} UPDATEs, \
         {} round trips with BEGIN and COMMIT",
        HOSTS * 2,
        HOSTS * 4
    );
    println!(
        "  leases renewed per tick: min {}, max {}",
        renewed.iter().min().unwrap_or(&0),
        renewed.iter().max().unwrap_or(&0)
    );

    let mut at_once = Vec::new();
    for _ in 0..rounds {
        let tick = Instant::now();
        let mut all = tokio::task::JoinSet::new();
        for (id, _) in &hosts {
            let (store, id) = (store.clone(), id.clone());
            all.spawn(async move { store.heartbeat(&id, TTL).await });
        }
        while let Some(beat) = all.join_next().await {
            assert!(matches!(beat.expect("join").expect("heartbeat"), Heartbeat::Alive { .. }));
        }
        at_once.push(tick.elapsed());
    }
    at_once.sort();
    println!(
        "  one tick = {HOSTS} heartbeats at once (sharing the Store's pool): mean {:.1} ms, p50 {:.1} ms, max {:.1} ms",
        ms(mean(&at_once)),
        ms(quantile(&at_once, 0.5)),
        ms(quantile(&at_once, 1.0))
    );

    let (mut lost_times, mut status_times, mut slot_times) = (Vec::new(), Vec::new(), Vec::new());
    let (mut lost, mut statuses) = (0, 0);
    let (first_id, first_host) = &hosts[0];
    let slot = WorkerSlot { runner: first_id, host: first_host, host_max: 2, cluster_max: Some(200) };
    for _ in 0..READ_REPEAT {
        let t = Instant::now();
        lost += store.declare_lost_runners().await.expect("declare lost").len();
        lost_times.push(t.elapsed());
        let t = Instant::now();
        statuses = store.runner_statuses().await.expect("statuses").len();
        status_times.push(t.elapsed());
        let t = Instant::now();
        store.free_worker_slots(&slot).await.expect("free slots");
        slot_times.push(t.elapsed());
    }
    println!(
        "  declare_lost_runners() with none lost: mean {:.2} ms over {READ_REPEAT} calls ({lost} declared lost)",
        ms(mean(&lost_times))
    );
    println!(
        "  runner_statuses() with {HOSTS} runners: mean {:.2} ms over {READ_REPEAT} calls ({statuses} rows)",
        ms(mean(&status_times))
    );
    println!(
        "  free_worker_slots(one host, cluster limit): mean {:.2} ms over {READ_REPEAT} calls",
        ms(mean(&slot_times))
    );
    ended_runners(store, &hosts).await;
}

/// Adds `ENDED` runners that ended, as cron's restarts leave them on the hosts (a third lost, the rest
/// stopped), then times the per-tick declaration of lost runners again among them.
async fn ended_runners(store: &Store, hosts: &[(String, String)]) {
    let setup = Instant::now();
    for n in 0..ENDED {
        let host = &hosts[n % hosts.len()].1;
        let id = format!("{host}/ended-{n}");
        if n % 3 == 0 {
            register(store, &id, host, Duration::ZERO).await;
        } else {
            register(store, &id, host, TTL).await;
            store.runner_ended(&id).await.expect("end runner");
        }
    }
    let lost = store.declare_lost_runners().await.expect("declare lost").len();
    println!(
        "  setup: {ENDED} runners registered and ended ({lost} of them lost) in {:.1}s",
        setup.elapsed().as_secs_f64()
    );
    let mut times = Vec::new();
    for _ in 0..READ_REPEAT {
        let t = Instant::now();
        let lost = store.declare_lost_runners().await.expect("declare lost").len();
        assert_eq!(lost, 0, "nothing is left to take");
        times.push(t.elapsed());
    }
    println!(
        "  declare_lost_runners() with none lost among {ENDED} ended runners: mean {:.2} ms over {READ_REPEAT} calls",
        ms(mean(&times))
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let runs = args.first().copied().unwrap_or(10_000);
    let rounds = args.get(1).copied().unwrap_or(20).max(1);
    let base = std::env::var(PG_ENV).ok().filter(|u| !u.is_empty()).unwrap_or_else(|| PG_DEFAULT.to_string());
    let shown = executor::store::redact_url(&base);

    let mut claimed_twice = 0;
    match executor::store::unreachable_postgres(&base).await {
        Some(why) => println!(
            "PostgreSQL at {shown} is unreachable ({why}): the claim part and the PostgreSQL heartbeats are \
             SKIPPED (set {PG_ENV} to a server to run them)"
        ),
        None => {
            println!("PostgreSQL at {shown}");
            claimed_twice = claims(&base, runs).await;
            match PgSchema::create(&base, "beats").await {
                Ok(schema) => {
                    let store = open(&schema.url).await;
                    heartbeats(&store, rounds).await;
                    store.close().await;
                    schema.drop().await;
                }
                Err(e) => println!("heartbeats (postgres): SKIPPED, cannot create a schema: {e}"),
            }
        }
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&format!("sqlite://{}", dir.path().join("executor.db").display())).await;
    heartbeats(&store, rounds).await;
    store.close().await;

    println!("peak RSS (VmHWM): {} KiB", peak_rss_kib());
    if claimed_twice > 0 {
        std::process::exit(1);
    }
}
