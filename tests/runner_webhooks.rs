//! Webhooks end to end: the real `executor serve` and `executor runner` against the fake GitHub. A
//! `check_run` delivery for a failed check reaches a `fix_ci` worker — by waking a runner that sleeps
//! between ticks, or, in cron mode with no runner alive, by `serve` starting one — and a delivery that
//! arrives before GitHub's API shows the change leaves polling to catch up.

#[path = "fake_github/mod.rs"]
mod fake_github;

mod common;
mod github_support;
mod webhook_support;

use std::time::{Duration, Instant};

use executor::domain::WorkerKind;
use executor::domain::{Run, TaskGid};
use executor::store::{RunFilter, Store};
use github_support::GhEnv;
use webhook_support::{Serve, check_run_failed, ci_fails, deliver, fix_ci_started, pr_waiting_for_ci};

/// Far beyond what a wake takes, far below a poll: a pass proves the delivery did it.
const WAKE_LIMIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_runner_running_a_delivery_starts_one_that_starts_fix_ci() {
    let env = GhEnv::new(&[], &webhook_support::github_keys()).await;
    cron_mode_delivery(&env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn with_no_runner_running_a_delivery_starts_one_on_postgresql_too() {
    let Some(db) = common::postgres("with_no_runner_running_a_delivery_starts_one_on_postgresql_too").await
    else {
        return;
    };
    let env = GhEnv::new(&[], &webhook_support::github_keys()).await;
    env.use_database(&db.url);
    cron_mode_delivery(&env).await;
}

async fn cron_mode_delivery(env: &GhEnv) {
    let store = env.store().await;
    let run = pr_waiting_for_ci(env, &store, "1207").await;
    // Polling would take a cron start: none comes in this test.
    let serve = Serve::start(env, &[]).await;
    ci_fails(env, &run);
    let head = env.remote_head(run.branch_name.as_deref().unwrap()).unwrap();
    let client = reqwest::Client::new();
    let at = Instant::now();
    let status = deliver(
        &client,
        &serve.base,
        "check_run",
        "e2e-1",
        &check_run_failed(&run, &head),
        Some(webhook_support::SECRET),
    )
    .await;
    assert_eq!(status, 202);
    let took = fix_ci_started(&store, run.id, at, WAKE_LIMIT).await;
    assert!(took.is_some(), "no fix_ci worker within {WAKE_LIMIT:?}; serve said:\n{}", serve.log());
    assert!(serve.log().contains("started `executor runner`"), "{}", serve.log());
    // The runner serve started drives the run on and exits when idle, as a cron-started one does.
    assert!(webhook_support::woken_runner_gone(&store, Duration::from_secs(90)).await, "{}", serve.log());
    assert!(store.pr_marks("app").await.unwrap().is_empty(), "the mark was honoured and removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_wakes_a_runner_sleeping_between_ticks() {
    let env = GhEnv::new(&[("FAKE_SLOW", "0")], &webhook_support::github_keys()).await;
    let store = env.store().await;
    let run = pr_waiting_for_ci(&env, &store, "1207").await;
    // From here the runner sleeps 5 minutes between ticks, and a second task's slow worker keeps it
    // alive: only a wake can make it look at the failed check in time.
    env.edit_config("loop_interval = \"1s\"", "loop_interval = \"300s\"");
    env.set_agent_env("FAKE_SLOW", "300");
    env.queue_approved("1208").await;
    let mut runner = env.command(&["runner"]).stderr(std::process::Stdio::null()).spawn().unwrap();
    let other = wait_for(|| runs_of(&store, "1208"), |runs| !runs.is_empty()).await;
    let slow = worker_started(&store, other[0].id).await;
    assert!(slow, "the second task's worker did not start");
    // Let the runner finish its tick and fall asleep.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let serve = Serve::start(&env, &["--no-runner"]).await;
    ci_fails(&env, &run);
    let head = env.remote_head(run.branch_name.as_deref().unwrap()).unwrap();
    let at = Instant::now();
    let client = reqwest::Client::new();
    let status = deliver(
        &client,
        &serve.base,
        "check_run",
        "e2e-2",
        &check_run_failed(&run, &head),
        Some(webhook_support::SECRET),
    )
    .await;
    assert_eq!(status, 202);
    let took = fix_ci_started(&store, run.id, at, WAKE_LIMIT).await;
    stop(&mut runner).await;
    assert!(took.is_some(), "the sleeping runner did not start fix_ci within {WAKE_LIMIT:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_before_github_shows_the_change_is_caught_up_by_polling() {
    let env = GhEnv::new(&[], &webhook_support::github_keys()).await;
    let store = env.store().await;
    let run = pr_waiting_for_ci(&env, &store, "1207").await;
    let serve = Serve::start(&env, &[]).await;
    let head = env.remote_head(run.branch_name.as_deref().unwrap()).unwrap();
    // GitHub delivers before its API shows the failed check: the runner serve starts looks, sees CI
    // still pending, and goes.
    let client = reqwest::Client::new();
    let status = deliver(
        &client,
        &serve.base,
        "check_run",
        "e2e-3",
        &check_run_failed(&run, &head),
        Some(webhook_support::SECRET),
    )
    .await;
    assert_eq!(status, 202);
    assert!(webhook_support::woken_runner_gone(&store, WAKE_LIMIT).await, "{}", serve.log());
    let kinds: Vec<WorkerKind> =
        store.worker_sessions(run.id).await.unwrap().iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [WorkerKind::Queued], "nothing is decided from the payload");
    assert!(store.pr_marks("app").await.unwrap().is_empty(), "the mark was honoured by that look");
    // The check becomes visible; no delivery comes. The next runner (cron) sees it by polling.
    ci_fails(&env, &run);
    let out = env.runner().await;
    assert!(out.status.success(), "{}", github_support::text(&out));
    let kinds: Vec<WorkerKind> =
        store.worker_sessions(run.id).await.unwrap().iter().map(|s| s.kind).collect();
    assert!(kinds.contains(&WorkerKind::FixCi), "polling caught up: {kinds:?}");
}

/// Polls `read` until `done` holds (30 s at most).
async fn wait_for<T, F, Fut>(read: F, done: impl Fn(&T) -> bool) -> T
where
    F: Fn() -> Fut,
    Fut: Future<Output = T>,
{
    let from = Instant::now();
    loop {
        let value = read().await;
        if done(&value) || from.elapsed() > Duration::from_secs(30) {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn worker_started(store: &Store, run_id: i64) -> bool {
    let from = Instant::now();
    while from.elapsed() < Duration::from_secs(30) {
        if store
            .worker_sessions(run_id)
            .await
            .unwrap()
            .iter()
            .any(|s| s.pid.is_some() && s.ended_at.is_none())
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// SIGTERM, as a human would: the runner stops its workers (recorded as interrupted) and exits.
async fn stop(runner: &mut tokio::process::Child) {
    if let Some(pid) = runner.id() {
        // SAFETY: a plain signal to our own child's pid.
        unsafe {
            libc::kill(pid as i32, libc::SIGTERM);
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(30), runner.wait()).await;
}

async fn runs_of(store: &Store, gid: &str) -> Vec<Run> {
    let filter = RunFilter { task_gid: Some(TaskGid::parse(gid).unwrap()), ..Default::default() };
    store.list_runs(&filter).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_and_webhooks_print_tell_how_webhooks_are_set_up() {
    let env = GhEnv::new(&[], &webhook_support::github_keys()).await;
    let store = env.store().await;
    env.ok(&["migrate"]).await;
    let doctor = |secret: bool| {
        let mut cmd = env.command(&["doctor", "--json"]);
        if secret {
            cmd.env(webhook_support::SECRET_ENV, webhook_support::SECRET);
        }
        async move {
            let out = cmd.output().await.unwrap();
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            report["checks"].as_array().unwrap().clone()
        }
    };
    let check = |checks: &[serde_json::Value], name: &str| {
        checks.iter().find(|c| c["name"] == name).cloned().unwrap_or_else(|| panic!("no {name}: {checks:?}"))
    };
    let without = doctor(false).await;
    let webhooks = check(&without, "webhooks");
    assert_eq!(webhooks["outcome"], "warn");
    assert!(webhooks["detail"].as_str().unwrap().contains(webhook_support::SECRET_ENV), "{webhooks}");

    let with = doctor(true).await;
    assert_eq!(check(&with, "webhook secret")["outcome"], "pass");
    assert_eq!(check(&with, "last delivery")["outcome"], "warn", "none yet");
    let marks: Vec<(String, i64)> = Vec::new();
    let delivery = executor::store::Delivery {
        sender: executor::domain::WebhookSender::GitHub,
        id: "doctor-1",
        event: "check_suite",
        outcome: executor::domain::DeliveryOutcome::NotOurs,
        marks: &marks,
        wake: None,
    };
    assert!(store.record_delivery(&delivery).await.unwrap());
    let with = doctor(true).await;
    let last = check(&with, "last delivery");
    assert_eq!(last["outcome"], "pass");
    assert!(last["detail"].as_str().unwrap().contains("check_suite"), "{last}");
    let shown = serde_json::to_string(&with).unwrap();
    assert!(!shown.contains(webhook_support::SECRET), "doctor never shows the secret");

    let out = env
        .command(&["webhooks", "print"])
        .env(webhook_support::SECRET_ENV, webhook_support::SECRET)
        .output()
        .await
        .unwrap();
    let printed = github_support::text(&out);
    assert!(out.status.success(), "{printed}");
    for expected in [
        "/webhooks/github",
        "application/json",
        "Check runs, Check suites, Workflow runs, Statuses, Pull requests",
        "gh webhook forward --repo=octo/app --events=check_run,check_suite,workflow_run,status,pull_request,",
        &format!("--secret=\"${}\"", webhook_support::SECRET_ENV),
    ] {
        assert!(printed.contains(expected), "{expected:?} not in:\n{printed}");
    }
    assert!(!printed.contains(webhook_support::SECRET), "the secret itself is never printed");
}
