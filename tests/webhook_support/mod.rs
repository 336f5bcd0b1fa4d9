//! Shared by the webhook tests and the webhook benchmark: a run whose pull request waits for CI on the
//! fake GitHub, `executor serve` started as a process beside it, and deliveries signed as GitHub signs
//! them. Uses `github_support` (the fake GitHub, the config, the real binary).
#![allow(dead_code)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use executor::domain::{Run, WakeScope, WorkerKind};
use executor::store::Store;
use executor::web::webhooks::signature::sign_github;
use tokio::io::AsyncBufReadExt;

use crate::github_support::{GhEnv, REPO, run_of, text};

/// The variable the config's `github.webhook_secret_env` names, and its value.
pub const SECRET_ENV: &str = "EXECUTOR_TEST_WEBHOOK_SECRET";
pub const SECRET: &str = "whsec-e2e-0123456789abcdef";

/// The `[github]` keys that turn webhooks on for [`GhEnv::new`].
pub fn github_keys() -> String {
    format!("webhook_secret_env = \"{SECRET_ENV}\"")
}

/// Runs `executor runner` as cron would until task `gid`'s pull request is open and CI was dispatched
/// for its branch, with no check reported yet: the run waits for CI. Returns the run.
pub async fn pr_waiting_for_ci(env: &GhEnv, store: &Store, gid: &str) -> Run {
    env.queue_approved(gid).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = env.runner().await;
        assert!(out.status.success(), "the runner failed:\n{}", text(&out));
        let run = run_of(store, gid).await;
        if let (Some(_), Some(branch)) = (run.pr_number, run.branch_name.as_deref())
            && env.fake.dispatches().iter().any(|(_, r)| r == branch)
        {
            return run;
        }
        assert!(Instant::now() < deadline, "no pull request with CI dispatched: {run:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// GitHub's CI reports a failure at the run's head (the check a `check_run` delivery announces).
pub fn ci_fails(env: &GhEnv, run: &Run) {
    let head = env.remote_head(run.branch_name.as_deref().unwrap()).unwrap();
    let log = "test login ... FAILED\nerror: test_login failed\n";
    env.fake.add_check_run(
        REPO,
        run.pr_number.unwrap(),
        &head,
        "ci",
        "COMPLETED",
        Some("FAILURE"),
        Some(log),
    );
}

/// `executor serve` on a free loopback port, with the webhook secret set; killed when dropped.
pub struct Serve {
    pub base: String,
    /// The dashboard token, from the URL it printed.
    pub token: String,
    pub child: tokio::process::Child,
    pub stderr: std::path::PathBuf,
}

impl Serve {
    pub async fn start(env: &GhEnv, extra: &[&str]) -> Serve {
        let stderr = env.path().join(format!("serve-{}.log", std::process::id()));
        let mut args = vec!["serve", "--port", "0", "--json"];
        args.extend_from_slice(extra);
        let mut cmd = env.command(&args);
        cmd.env(SECRET_ENV, SECRET);
        Serve::spawn(cmd, stderr).await
    }

    /// Runs `cmd` (`executor serve --port 0 --json …`, its secrets set by the caller) with its log in
    /// `stderr`, once it printed where it listens.
    pub async fn spawn(mut cmd: tokio::process::Command, stderr: std::path::PathBuf) -> Serve {
        cmd.env("EXECUTOR_LOG", "executor=info")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        // `--json` prints one object, over several lines.
        let mut printed = String::new();
        let printed: serde_json::Value = loop {
            let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
                .await
                .expect("serve printed its address")
                .unwrap()
                .unwrap_or_else(|| {
                    panic!("serve ended: {}", std::fs::read_to_string(&stderr).unwrap_or_default())
                });
            printed.push_str(&line);
            if let Ok(value) = serde_json::from_str(&printed) {
                break value;
            }
        };
        // Whatever it prints later must not block it on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let base = format!("http://{}", printed["address"].as_str().unwrap());
        let url = printed["url"].as_str().unwrap();
        let token = url.split("token=").nth(1).unwrap().to_string();
        Serve { base, token, child, stderr }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

/// A `check_run` completed with failure for the run's pull request, in GitHub's documented shape.
pub fn check_run_failed(run: &Run, head: &str) -> Vec<u8> {
    let mut payload: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/tests/data/webhooks/check_run.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    let number = run.pr_number.unwrap();
    let branch = run.branch_name.clone().unwrap();
    payload["check_run"]["head_sha"] = head.into();
    payload["check_run"]["check_suite"]["head_branch"] = branch.clone().into();
    payload["check_run"]["check_suite"]["head_sha"] = head.into();
    payload["check_run"]["pull_requests"][0]["number"] = number.into();
    payload["check_run"]["pull_requests"][0]["head"]["ref"] = branch.into();
    payload["check_run"]["pull_requests"][0]["head"]["sha"] = head.into();
    serde_json::to_vec(&payload).unwrap()
}

/// Posts a delivery as GitHub does; `secret` `None` sends it unsigned. Returns the status code.
pub async fn deliver(
    client: &reqwest::Client,
    base: &str,
    event: &str,
    id: &str,
    body: &[u8],
    secret: Option<&str>,
) -> u16 {
    let mut request = client
        .post(format!("{base}/webhooks/github"))
        .header("User-Agent", "GitHub-Hookshot/7d9b5a1")
        .header("Content-Type", "application/json")
        .header("X-GitHub-Event", event)
        .header("X-GitHub-Delivery", id)
        .body(body.to_vec());
    if let Some(secret) = secret {
        request = request.header("X-Hub-Signature-256", sign_github(secret.as_bytes(), body));
    }
    request.send().await.map(|r| r.status().as_u16()).unwrap_or(0)
}

/// Waits until the run has a `fix_ci` worker session that started (its process recorded), up to
/// `limit`; returns how long that took.
pub async fn fix_ci_started(store: &Store, run_id: i64, from: Instant, limit: Duration) -> Option<Duration> {
    while from.elapsed() < limit {
        let sessions = store.worker_sessions(run_id).await.unwrap();
        if sessions.iter().any(|s| s.kind == WorkerKind::FixCi && s.pid.is_some()) {
            return Some(from.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Waits until every wake was seen by a runner and no runner is alive: the woken runner came and went.
pub async fn woken_runner_gone(store: &Store, limit: Duration) -> bool {
    let from = Instant::now();
    while from.elapsed() < limit {
        let wake = store.wake_state(WakeScope::Runner).await.unwrap();
        if !wake.pending() && wake.requested > 0 && store.live_runner_count().await.unwrap() == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}
