//! How soon a failed check reaches a `fix_ci` worker, with webhooks and with polling alone, and what
//! 1,000 deliveries a minute cost the dashboard: `cargo bench --bench webhooks [-- --rate N]`. Prints
//! figures next to the targets of issue 23; asserts nothing.
//!
//! Everything is real but GitHub: the fake GitHub of the tests (`tests/fake_github`), the real
//! `executor runner` and `executor serve` processes, the `pipeline.sh` fake agent, SQLite. Each
//! latency is measured from the moment the failed check is visible on the fake GitHub (and, with
//! webhooks, its `check_run` delivery is sent) until the `fix_ci` worker's process is recorded.
//!
//! - runner running: a second task's slow worker keeps the runner alive, sleeping `loop_interval`
//!   (60 s, the default) between ticks; a delivery wakes it, polling waits for the next tick;
//! - cron mode: no runner alive; a delivery makes `serve` start one; polling waits for cron's next
//!   start (every 5 minutes: on average 150 s, which is not waited here) and then the same cold start,
//!   which is measured by starting `executor runner` at once.
//!
//! Then the load: deliveries at `--rate` a minute (default 1,000) for a minute — 60% new, 20%
//! redeliveries, 20% forged — while the dashboard's `GET /api/v1/runs` is timed, against the same
//! request with no deliveries.

#[path = "../tests/fake_github/mod.rs"]
mod fake_github;
#[path = "../tests/github_support/mod.rs"]
mod github_support;
#[path = "../tests/webhook_support/mod.rs"]
mod webhook_support;

use std::time::{Duration, Instant};

use executor::domain::Run;
use executor::store::Store;
use github_support::GhEnv;
use webhook_support::{
    SECRET, Serve, check_run_failed, ci_fails, deliver, fix_ci_started, pr_waiting_for_ci,
};

const RUNNING_TARGET: Duration = Duration::from_secs(5);
const CRON_TARGET: Duration = Duration::from_secs(10);
const LIMIT: Duration = Duration::from_secs(120);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rate: usize = args
        .iter()
        .position(|a| a == "--rate")
        .and_then(|i| args.get(i + 1))
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async move {
        println!(
            "webhooks: a check_run completed with failure → the fix_ci worker started (fake GitHub, SQLite)"
        );
        println!(
            "targets: <= {RUNNING_TARGET:?} with a runner running, <= {CRON_TARGET:?} with none (cron mode)\n"
        );
        let hook_running = runner_running(true).await;
        let poll_running = runner_running(false).await;
        let hook_cron = cron_mode(true).await;
        let poll_cron = cron_mode(false).await;
        println!("{:<16} {:>12} {:>26}  target", "", "webhook", "polling alone");
        println!(
            "{:<16} {:>12} {:>26}  {}",
            "runner running",
            shown(hook_running),
            format!("{} (loop_interval 60s)", shown(poll_running)),
            verdict(hook_running, RUNNING_TARGET)
        );
        println!(
            "{:<16} {:>12} {:>26}  {}",
            "cron mode",
            shown(hook_cron),
            format!("cron wait (0–300 s) + {}", shown(poll_cron)),
            verdict(hook_cron, CRON_TARGET)
        );
        println!();
        burst(50).await;
        println!();
        load(rate).await;
    });
}

fn shown(d: Option<Duration>) -> String {
    d.map_or("none in 120 s".to_string(), |d| format!("{:.2} s", d.as_secs_f64()))
}

fn verdict(d: Option<Duration>, target: Duration) -> &'static str {
    if d.is_some_and(|d| d <= target) { "met" } else { "NOT met" }
}

/// A runner alive (a slow worker of another task) sleeping between ticks; the check fails; with
/// `webhook` a delivery announces it.
async fn runner_running(webhook: bool) -> Option<Duration> {
    let env = GhEnv::new(&[("FAKE_SLOW", "0")], &webhook_support::github_keys()).await;
    let store = env.store().await;
    let (run, mut runner) = sleeping_runner(&env, &store).await;
    let serve = if webhook { Some(Serve::start(&env, &["--no-runner"]).await) } else { None };
    let took = fail_and_wait(&env, &store, &run, serve.as_ref()).await;
    stop(&mut runner).await;
    took
}

/// Task 1207's pull request waiting for CI, and a runner kept alive by task 1208's slow worker,
/// asleep between ticks.
async fn sleeping_runner(env: &GhEnv, store: &Store) -> (Run, tokio::process::Child) {
    let run = pr_waiting_for_ci(env, store, "1207").await;
    env.edit_config("loop_interval = \"1s\"", "loop_interval = \"60s\"");
    env.set_agent_env("FAKE_SLOW", "600");
    env.queue_approved("1208").await;
    let runner = env
        .command(&["runner"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("a runner");
    while !store.worker_sessions(run.id + 1).await.unwrap_or_default().iter().any(|s| s.pid.is_some()) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The runner's tick is over and it sleeps; the check fails a little later, as CI takes its time.
    tokio::time::sleep(Duration::from_secs(3)).await;
    (run, runner)
}

/// A CI matrix finishing: `n` `check_run` deliveries for one pull request within 5 s, to a sleeping
/// runner. Prints how many times the runner asked GitHub (GraphQL requests) meanwhile.
async fn burst(n: usize) {
    let env = GhEnv::new(&[("FAKE_SLOW", "0")], &webhook_support::github_keys()).await;
    let store = env.store().await;
    let (run, mut runner) = sleeping_runner(&env, &store).await;
    let serve = Serve::start(&env, &["--no-runner"]).await;
    let head = env.remote_head(run.branch_name.as_deref().unwrap()).unwrap();
    let body = check_run_failed(&run, &head);
    let client = reqwest::Client::new();
    let before = env.fake.counts().graphql;
    let start = Instant::now();
    for i in 0..n {
        tokio::time::sleep_until((start + Duration::from_secs(5) * i as u32 / n as u32).into()).await;
        deliver(&client, &serve.base, "check_run", &format!("burst-{i}"), &body, Some(SECRET)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let asked = env.fake.counts().graphql - before;
    stop(&mut runner).await;
    println!(
        "burst: {n} check_run deliveries for one pull request within 5 s → {asked} GraphQL requests by the \
         woken runner in 8 s (woken ticks at least 2 s apart)"
    );
}

/// No runner alive; the check fails; with `webhook` a delivery makes `serve` start one, else the
/// runner cron would start is started at once (the cold start alone).
async fn cron_mode(webhook: bool) -> Option<Duration> {
    let env = GhEnv::new(&[], &webhook_support::github_keys()).await;
    let store = env.store().await;
    let run = pr_waiting_for_ci(&env, &store, "1207").await;
    let serve = if webhook { Some(Serve::start(&env, &[]).await) } else { None };
    if webhook {
        let took = fail_and_wait(&env, &store, &run, serve.as_ref()).await;
        webhook_support::woken_runner_gone(&store, LIMIT).await;
        return took;
    }
    ci_fails(&env, &run);
    let at = Instant::now();
    let mut runner = env
        .command(&["runner"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("a runner");
    let took = fix_ci_started(&store, run.id, at, LIMIT).await;
    let _ = tokio::time::timeout(LIMIT, runner.wait()).await;
    took
}

async fn fail_and_wait(env: &GhEnv, store: &Store, run: &Run, serve: Option<&Serve>) -> Option<Duration> {
    ci_fails(env, run);
    let at = Instant::now();
    if let Some(serve) = serve {
        let head = env.remote_head(run.branch_name.as_deref().unwrap()).unwrap();
        let body = check_run_failed(run, &head);
        deliver(&reqwest::Client::new(), &serve.base, "check_run", "bench-1", &body, Some(SECRET)).await;
    }
    fix_ci_started(store, run.id, at, LIMIT).await
}

async fn stop(runner: &mut tokio::process::Child) {
    if let Some(pid) = runner.id() {
        // SAFETY: a plain signal to our own child's pid.
        unsafe {
            libc::kill(pid as i32, libc::SIGTERM);
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(30), runner.wait()).await;
}

/// `rate` deliveries a minute for a minute — new, redelivered and forged — and the dashboard's
/// latency meanwhile.
async fn load(rate: usize) {
    let env = GhEnv::new(&[], &webhook_support::github_keys()).await;
    let store = env.store().await;
    let run = pr_waiting_for_ci(&env, &store, "1207").await;
    let serve = Serve::start(&env, &["--no-runner"]).await;
    let token = serve.token.clone();
    let client = reqwest::Client::new();
    let quiet = dashboard_latencies(&client, &serve.base, &token, Duration::from_secs(10)).await;

    let head = env.remote_head(run.branch_name.as_deref().unwrap()).unwrap();
    let body = check_run_failed(&run, &head);
    let every = Duration::from_secs(60) / rate as u32;
    let sender = {
        let (client, base) = (client.clone(), serve.base.clone());
        tokio::spawn(async move {
            let mut answers: Vec<(u16, Duration)> = Vec::with_capacity(rate);
            let mut in_flight = tokio::task::JoinSet::new();
            let start = Instant::now();
            for i in 0..rate {
                let due = start + every * i as u32;
                tokio::time::sleep_until(due.into()).await;
                let (client, base, body) = (client.clone(), base.clone(), body.clone());
                in_flight.spawn(async move {
                    // 6 in 10 new, 2 redeliveries of the one just before, 2 forged.
                    let (id, secret) = match i % 10 {
                        0 | 5 if i > 0 => (format!("load-{}", i - 1), Some(SECRET)),
                        3 | 8 => (format!("forged-{i}"), Some("not-the-secret")),
                        _ => (format!("load-{i}"), Some(SECRET)),
                    };
                    let at = Instant::now();
                    let status = deliver(&client, &base, "check_run", &id, &body, secret).await;
                    (status, at.elapsed())
                });
            }
            while let Some(Ok(answer)) = in_flight.join_next().await {
                answers.push(answer);
            }
            answers
        })
    };
    let busy = dashboard_latencies(&client, &serve.base, &token, Duration::from_secs(60)).await;
    let answers = sender.await.expect("the sender");

    let count = |code: u16| answers.iter().filter(|(s, _)| *s == code).count();
    let mut times: Vec<Duration> = answers.iter().map(|(_, t)| *t).collect();
    times.sort();
    println!("load: {rate} deliveries in 60 s (6/10 new, 2/10 redelivered, 2/10 forged), serve --no-runner");
    println!(
        "  answers: {} accepted (202), {} redeliveries (200), {} forged refused (401), {} other",
        count(202),
        count(200),
        count(401),
        answers.len() - count(202) - count(200) - count(401)
    );
    println!(
        "  delivery answer: p50 {} · p99 {} · max {}  (GitHub's limit: 10 s)",
        ms(pct(&times, 50)),
        ms(pct(&times, 99)),
        ms(times.last().copied())
    );
    println!(
        "  dashboard GET /api/v1/runs: quiet p50 {} · p99 {} ({} requests); under load p50 {} · p99 {} ({} requests)",
        ms(pct(&quiet, 50)),
        ms(pct(&quiet, 99)),
        quiet.len(),
        ms(pct(&busy, 50)),
        ms(pct(&busy, 99)),
        busy.len()
    );
    let marks = store.pr_marks("app").await.map(|m| m.len()).unwrap_or(0);
    println!(
        "  marks left for the runner's next look: {marks} (one per new delivery; a tick honours them all)"
    );
}

async fn dashboard_latencies(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    span: Duration,
) -> Vec<Duration> {
    let mut out = Vec::new();
    let start = Instant::now();
    while start.elapsed() < span {
        let at = Instant::now();
        let ok = client
            .get(format!("{base}/api/v1/runs"))
            .bearer_auth(token)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ok {
            out.push(at.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    out.sort();
    out
}

fn pct(sorted: &[Duration], p: usize) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    Some(sorted[(sorted.len() - 1) * p / 100])
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.1} ms", d.as_secs_f64() * 1000.0))
}
