//! What a runner tick costs on GitHub, in requests, rate-limit points, time and memory: run with
//! `cargo bench --bench github_tick [-- N...]` (default N = 10 100 500 1000). Prints figures next to
//! the targets of issue 8; asserts nothing.
//!
//! Setup per N, in a process of its own (so that its peak RSS is that N's): the fake GitHub
//! (`tests/fake_github`) in this process, answering every request after 100 ms; one repository with N
//! open draft pull requests, each with a green `ci` check at its head; a fresh SQLite store with N
//! approved tasks whose runs are `complete` with their pull request recorded. `decide` waits for every
//! one of them (a completed run only watches its draft for new trusted comments), so a tick is pure
//! observation: the batched GraphQL snapshots behind the conditional open-PR list.
//!
//! Four ticks: "all changed" (nothing cached yet), "nothing changed" (the list answers 304), "fresh
//! process" (a new runner on the same database, as cron starts one: the forge's memory is read back,
//! nothing changed) and "few changed" (after ~1% of the pull requests were touched, which bumps their
//! `updated_at`).
//! Then the same at 200 pull requests whose CI is pending (`-- --pending N` for other sizes), which are
//! asked again every tick. Points are the fake's, by GitHub's published cost formula.
//! `-- --late N` runs only issue 34's scenario (see `late_required`): N runs waiting on a required
//! check that registers after the others went green.

#[path = "../tests/fake_github/mod.rs"]
mod fake_github;
#[path = "github_tick/late_required.rs"]
mod late_required;
#[path = "bench_support/runs.rs"]
mod runs;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use executor::config::{Config, Repo};
use executor::forge::github::GitHubForge;
use executor::github::GitHubClient;
use executor::runner::Runner;
use executor::store::Store;
use fake_github::{Counts, FakeGitHub};

/// The environment variable the bench's `[github] token_env` names (the fake accepts any token).
const TOKEN_VAR: &str = "EXECUTOR_BENCH_GITHUB_TOKEN";
const LATENCY: Duration = Duration::from_millis(100);
const OWNER: &str = "octo";
const NAME: &str = "app";
const REPO: &str = "octo/app";

/// The targets of issue 8, printed next to the figures.
const PRS_PER_GRAPHQL_REQUEST: usize = 25;
const TICK_TARGET_AT_500: Duration = Duration::from_secs(2);
const RSS_TARGET_AT_1000_KIB: u64 = 50 * 1024;
/// Issue 21: with CI pending at every head (all asked again each tick), points per pull request per tick.
const PENDING_POINTS_PER_PR: f64 = 0.15;

fn main() {
    // `cargo bench` passes `--bench`; only numbers are sizes.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--one") {
        let n = args.get(i + 1).and_then(|a| a.parse().ok()).expect("--one N");
        one(n, args.iter().any(|a| a == "--ci-pending"));
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--late") {
        let n = args.get(i + 1).and_then(|a| a.parse().ok()).expect("--late N");
        late(n);
        return;
    }
    let pending_at: Option<usize> =
        args.iter().position(|a| a == "--pending").and_then(|i| args.get(i + 1)).and_then(|a| a.parse().ok());
    let mut sizes: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i == 0 || args[i - 1] != "--pending")
        .filter_map(|(_, a)| a.parse().ok())
        .collect();
    if sizes.is_empty() && pending_at.is_none() {
        sizes = vec![10, 100, 500, 1000];
    }
    let pending_sizes: Vec<usize> = match pending_at {
        Some(n) => vec![n],
        None if args.iter().any(|a| a.parse::<usize>().is_ok()) => vec![],
        None => vec![200],
    };
    println!(
        "github_tick: N open draft PRs (green CI, runs complete) on the fake GitHub, {} ms per request",
        LATENCY.as_millis()
    );
    println!(
        "targets: <= 1 GraphQL request per {PRS_PER_GRAPHQL_REQUEST} PRs per tick; 0 GraphQL points when \
         nothing changed and no CI is pending; a 500-PR tick <= {:?}; peak RSS < {} MiB at 1000 PRs\n",
        TICK_TARGET_AT_500,
        RSS_TARGET_AT_1000_KIB / 1024
    );
    println!(
        "and with CI pending: <= {PENDING_POINTS_PER_PR} points per PR per tick; a fresh process on unchanged \
         PRs (CI done) spends 0 GraphQL points\n"
    );
    println!(
        "{:>5}  {:<18} {:>5} {:>8} {:>8} {:>7}  {:>10} {:>10}  {:>9}  targets",
        "N", "tick", "REST", "GraphQL", "points", "pts/PR", "snapshots", "304s", "wall"
    );
    // Each N in a process of its own: peak RSS is a process's high-water mark.
    let exe = std::env::current_exe().expect("own path");
    let runs = sizes.iter().map(|n| (*n, false)).chain(pending_sizes.iter().map(|n| (*n, true)));
    for (n, pending) in runs {
        let mut args = vec!["--one".to_string(), n.to_string()];
        if pending {
            println!("CI pending at every head:");
            args.push("--ci-pending".into());
        }
        let status = Command::new(&exe).args(&args).status().expect("run one size");
        assert!(status.success(), "N = {n} failed: {status}");
    }
}

/// One size, in this process: set up, four ticks, figures.
fn one(n: usize, pending: bool) {
    // SAFETY: `set_var` is unsound only while another thread may read the environment. This is the
    // first thing this process does, before the fake GitHub's thread or any tokio runtime exists, so
    // no other thread runs yet; the GitHub client reads the variable later, on the runtime below.
    unsafe { std::env::set_var(TOKEN_VAR, "bench-token") };
    let rss_start = rss_kib("VmRSS:");
    let fake = FakeGitHub::start_in_background();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    runtime.block_on(ticks(fake, n, pending, rss_start));
}

/// Issue 34's scenario at `n` pull requests, in this process.
fn late(n: usize) {
    // SAFETY: as in `one`: before any other thread of this process exists.
    unsafe { std::env::set_var(TOKEN_VAR, "bench-token") };
    let fake = FakeGitHub::start_in_background();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    println!(
        "github_tick --late: N draft PRs, `ci` green, runs in pr reviewed green, a required check registering \
         late; {} ms per request",
        LATENCY.as_millis()
    );
    println!(
        "{:>5}  {:<18} {:>5} {:>8} {:>8} {:>7}  {:>10} {:>10}  {:>9}",
        "N", "tick", "REST", "GraphQL", "points", "pts/PR", "snapshots", "304s", "wall"
    );
    runtime.block_on(late_required::ticks(fake, n));
}

async fn ticks(fake: FakeGitHub, n: usize, pending: bool, rss_start: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo_dir = dir.path().join("repo");
    std::fs::create_dir(&repo_dir).expect("repo dir");

    fake.add_repo(OWNER, NAME, None);
    let mut numbers = Vec::with_capacity(n);
    for i in 0..n {
        let sha = format!("{:040x}", 0xbe_0000 + i);
        let number = fake.create_pr(REPO, &format!("executor/b{i}"), &format!("task {i}"), true, &sha);
        match pending {
            true => fake.add_check_run(REPO, number, &sha, "ci", "IN_PROGRESS", None, None),
            false => fake.add_check_run(REPO, number, &sha, "ci", "COMPLETED", Some("SUCCESS"), None),
        };
        numbers.push(number);
    }

    let mut config = Config::default();
    config.paths.data_dir = dir.path().join("data").display().to_string();
    config.github.api_url = fake.api_url();
    config.github.graphql_url = fake.graphql_url();
    config.github.token_env = vec![TOKEN_VAR.to_string()];
    config.repos.insert(
        "app".into(),
        Repo { forge: "github".into(), github: REPO.into(), ..Repo::at(&repo_dir.display().to_string()) },
    );
    Store::open(&config.database_url()).await.expect("open").migrate().await.expect("migrate");
    // A pool whose connections all start after the migrations: a connection that was open during them
    // may prepare `SELECT * FROM executor_runs` against its stale schema, and sqlx-sqlite then panics
    // reading the re-prepared, wider row (seen here about once in 15 runs: "the len is 33 but the index
    // is 33" in sqlx-sqlite's row.rs, then `UnknownRun`).
    let store = Store::open(&config.database_url()).await.expect("reopen");
    let setup = Instant::now();
    for (i, number) in numbers.iter().enumerate() {
        let url = format!("https://github.com/{REPO}/pull/{number}");
        runs::complete_run(&store, i, *number, &url, &dir.path().join(format!("wt{i}"))).await;
    }
    let setup = setup.elapsed();
    fake.set_latency(LATENCY);

    let mut runner = Runner::new(config.clone(), store.clone()).expect("runner");
    let rss_ready = rss_kib("VmRSS:");
    let touched = (n / 100).max(1);
    // Pull requests are rarely observed in the second they were made: one observed then is asked again
    // (see `after_the_second` in the forge), which would blur the "nothing changed" figures.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for (label, before_tick) in [
        ("1 all changed", None),
        ("2 nothing changed", None),
        ("3 fresh process", None),
        ("4 few changed", Some(touched)),
    ] {
        if label.starts_with('3') {
            // As cron starts one: a new runner, its forge and client new, on the same database.
            tokio::time::sleep(Duration::from_millis(1100)).await;
            runner = Runner::new(config.clone(), store.clone()).expect("runner");
        }
        if let Some(count) = before_tick {
            // GitHub's `updated_at` has a resolution of one second, so a change made in the second of
            // the last listing can look like no change; a runner's ticks are seconds apart, so let the
            // clock reach the next second first, as it would have.
            let into_second = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            tokio::time::sleep(Duration::from_nanos(u64::from(1_000_000_000 - into_second))).await;
            // Evenly spread, so that the touched ones are not all among the newest.
            for number in numbers.iter().step_by(n / count).take(count) {
                fake.touch(REPO, *number);
            }
        }
        let before = fake.counts();
        let start = Instant::now();
        let report = runner.tick().await.expect("tick");
        let wall = start.elapsed();
        let spent = delta(&before, &fake.counts());
        assert_eq!(report.runs_seen, n, "every run seen");
        assert!(report.failures.is_empty(), "tick failed: {:?}", report.failures);
        let nothing_changed = label.starts_with('2') || label.starts_with('3');
        let per_pr = spent.graphql_points as f64 / n as f64;
        println!(
            "{n:>5}  {label:<18} {:>5} {:>8} {:>8} {per_pr:>7.3}  {:>10} {:>10}  {:>9}  {}",
            spent.rest,
            spent.graphql,
            spent.graphql_points,
            spent.route("graphql:Batch"),
            spent.not_modified,
            format!("{} ms", wall.as_millis()),
            // The first tick starts with nothing kept: every pull request is asked with its threads.
            targets(n, &spent, wall, nothing_changed, pending && !label.starts_with('1')),
        );
    }
    // The peak of the three ticks, before the forge-alone calls below add a second forge's cache.
    let peak = rss_kib("VmHWM:");
    let (cold, warm) = observe_only(&config, &store).await;
    println!(
        "{n:>5}  the forge alone (GitHubForge::snapshots, no runner): {} ms as a new forge (its memory read \
         back from the database), {} ms on its next call",
        cold.as_millis(),
        warm.as_millis()
    );
    let rss_verdict = if n >= 1000 {
        if peak < RSS_TARGET_AT_1000_KIB { "  [ok: < 50 MiB]" } else { "  [MISSED: >= 50 MiB]" }
    } else {
        ""
    };
    println!(
        "{n:>5}  memory: peak RSS {:.1} MiB{rss_verdict} (at start {:.1}, after setup {:.1}: fake GitHub, \
         store and runner share the process); setup {setup:.1?}\n",
        peak as f64 / 1024.0,
        rss_start as f64 / 1024.0,
        rss_ready as f64 / 1024.0,
    );
}

/// How long the same observation takes without the runner around it (its store reads and writes per
/// run): a new forge with its own client, which reads back what the runner's forge kept in the database.
async fn observe_only(config: &Config, store: &Store) -> (Duration, Duration) {
    let client = Arc::new(GitHubClient::new(&config.github).expect("client"));
    let forge =
        GitHubForge::new(client, store.clone(), "app", &config.repos["app"], &config.github).expect("forge");
    let runs = store.active_runs().await.expect("runs");
    let mut times = Vec::new();
    for _ in 0..2 {
        let start = Instant::now();
        let snapshots = forge.snapshots(&runs).await.expect("snapshots");
        times.push(start.elapsed());
        assert!(snapshots.prs.values().all(Option::is_some), "every pull request observed");
    }
    (times[0], times[1])
}

/// What one tick asked of the fake.
fn delta(before: &Counts, after: &Counts) -> Counts {
    let by_route = after
        .by_route
        .iter()
        .map(|(route, count)| (route.clone(), count - before.route(route)))
        .filter(|(_, count)| *count > 0)
        .collect();
    Counts {
        rest: after.rest - before.rest,
        graphql: after.graphql - before.graphql,
        graphql_points: after.graphql_points - before.graphql_points,
        not_modified: after.not_modified - before.not_modified,
        by_route,
        ..Counts::default()
    }
}

/// The tick's figures against the targets that apply to it.
fn targets(n: usize, spent: &Counts, wall: Duration, nothing_changed: bool, pending: bool) -> String {
    let mut out = Vec::new();
    let allowed = n.div_ceil(PRS_PER_GRAPHQL_REQUEST);
    let verdict = |ok: bool| if ok { "ok" } else { "MISSED" };
    out.push(format!("GraphQL <= {allowed}: {}", verdict(spent.graphql <= allowed)));
    if pending {
        let per_pr = spent.graphql_points as f64 / n as f64;
        out.push(format!("<= {PENDING_POINTS_PER_PR} pts/PR: {}", verdict(per_pr <= PENDING_POINTS_PER_PR)));
    } else if nothing_changed {
        out.push(format!("0 points: {}", verdict(spent.graphql_points == 0)));
    }
    if n == 500 {
        out.push(format!("<= 2 s: {}", verdict(wall <= TICK_TARGET_AT_500)));
    }
    out.join("; ")
}

/// A line of /proc/self/status in KiB (`VmRSS:` now, `VmHWM:` the peak); on macOS, which has no
/// /proc, the peak from getrusage (`ru_maxrss`, bytes there) for both.
fn rss_kib(field: &str) -> u64 {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        return status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
            .unwrap_or(0);
    }
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always a valid `who`.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return 0;
        }
        usage.assume_init()
    };
    let max = u64::try_from(usage.ru_maxrss).unwrap_or(0);
    if cfg!(target_os = "macos") { max / 1024 } else { max }
}
