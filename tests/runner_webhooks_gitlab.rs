//! GitLab's webhooks end to end, in cron mode: no runner is alive, the merge request's pipeline fails,
//! and GitLab's Pipeline Hook delivery to the real `executor serve` starts a runner that starts a
//! `fix_ci` worker — with no cron start and no poll in between. The delivery is in GitLab's documented
//! shape (`tests/data/webhooks/gitlab/pipeline.json`), with the secret token it sends.

#[path = "fake_github/mod.rs"]
mod fake_github;
#[path = "fake_gitlab/mod.rs"]
mod fake_gitlab;

mod github_support;
mod gitlab_support;
mod webhook_support;

use std::time::{Duration, Instant};

use gitlab_support::{GlEnv, PROJECT, run_of, text};
use webhook_support::{Serve, fix_ci_started, woken_runner_gone};

const SECRET: &str = "glwh-e2e-0123456789abcdef";
/// Far beyond what a wake takes, far below a poll: a pass proves the delivery did it.
const WAKE_LIMIT: Duration = Duration::from_secs(60);
const GID: &str = "3701";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_runner_running_a_gitlab_delivery_starts_one_that_starts_fix_ci() {
    let env = GlEnv::new().await;
    // The first push's pipeline runs until the test ends it.
    env.fake.plan_pipelines(PROJECT, &[&[("test", "RUNNING")], &[("test", "SUCCESS")]]);
    env.ok(&["queue", "add", "--gid", GID, "--description", "Add the feature file"]).await;
    env.ok(&["approve", "--skip-triage", GID]).await;
    let store = env.store().await;

    // Cron's runner, until the merge request waits for its running pipeline.
    let deadline = Instant::now() + Duration::from_secs(120);
    let (run, head) = loop {
        let out = env.exec(&["runner"]).await;
        assert!(out.status.success(), "{}", text(&out));
        let run = run_of(&store, GID).await;
        if let Some(iid) = run.pr_number {
            let head = env.fake.mr(PROJECT, iid).head_sha;
            if env.fake.pipelines(PROJECT).iter().any(|p| p.sha == head) {
                break (run, head);
            }
        }
        assert!(Instant::now() < deadline, "no merge request with a pipeline: {run:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let iid = run.pr_number.unwrap();
    assert!(store.worker_sessions(run.id).await.unwrap().iter().all(|s| s.ended_at.is_some()));

    let mut cmd = env.command(&["serve", "--port", "0", "--json"]);
    cmd.env("EXECUTOR_GITLAB_WEBHOOK_SECRET", SECRET);
    let serve = Serve::spawn(cmd, env.dir.path().join("serve.log")).await;

    // The pipeline fails, and GitLab delivers its Pipeline Hook.
    env.fake.finish_pipelines_at(PROJECT, &head, "FAILED");
    let mut payload: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/tests/data/webhooks/gitlab/pipeline.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    payload["project"]["path_with_namespace"] = PROJECT.into();
    payload["merge_request"]["iid"] = iid.into();
    payload["object_attributes"]["sha"] = head.clone().into();
    payload["object_attributes"]["ref"] = run.branch_name.clone().unwrap().into();
    let at = Instant::now();
    let answer = reqwest::Client::new()
        .post(format!("{}/webhooks/gitlab", serve.base))
        .header("Content-Type", "application/json")
        .header("X-Gitlab-Event", "Pipeline Hook")
        .header("X-Gitlab-Event-UUID", "4d6b3e1c-5f7a-4f0e-9a61-2b1c0d9e8f77")
        .header("X-Gitlab-Token", SECRET)
        .body(serde_json::to_vec(&payload).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202, "{}", serve.log());

    let took = fix_ci_started(&store, run.id, at, WAKE_LIMIT).await;
    assert!(took.is_some(), "no fix_ci worker within {WAKE_LIMIT:?}; serve said:\n{}", serve.log());
    assert!(serve.log().contains("started `executor runner`"), "{}", serve.log());
    assert!(woken_runner_gone(&store, Duration::from_secs(90)).await, "{}", serve.log());
    assert!(store.pr_marks("app").await.unwrap().is_empty(), "the mark was honoured and removed");
    assert!(!serve.log().contains(SECRET), "the secret token is never logged");
}
