//! The runner under stress: SIGTERM mid-worker, a repository that is broken, a CI command that is
//! missing. Real binary, real git, real processes.

use std::process::Stdio;
use std::time::{Duration, Instant};

use executor::domain::{RunState, TaskGid, WorkerKind};
use executor::store::{RunFilter, Store};

mod runner_support;
use runner_support::{Env, pid_alive};

async fn wait_for_worker_pid(store: &Store) -> (i64, i32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let runs = store.list_runs(&RunFilter::default()).await.unwrap();
        if let Some(run) = runs.first()
            && let Some(pid) = run.worker_pid
        {
            return (run.id, pid);
        }
        assert!(Instant::now() < deadline, "the worker never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn run_of(store: &Store, gid: &str) -> executor::domain::Run {
    let filter = RunFilter {
        task_gid: Some(TaskGid::parse(gid).unwrap()),
        ..Default::default()
    };
    store.list_runs(&filter).await.unwrap().remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_workers_and_the_next_runner_resumes_at_once() {
    let env = Env::new(&["FAKE_SLOW"]);
    env.queue_approved("9");
    let store = env.store().await;
    let mut runner = env
        .command(&["runner"])
        .env("FAKE_SLOW", "60")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (run_id, pid) = wait_for_worker_pid(&store).await;

    let sent = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(runner.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = runner.wait().unwrap();
    assert!(
        status.success(),
        "the runner exits cleanly on SIGTERM: {status}"
    );
    assert!(
        sent.elapsed() < Duration::from_secs(15),
        "it stopped within the kill grace"
    );
    assert!(!pid_alive(pid), "the worker's process group was stopped");
    let sessions = store.worker_sessions(run_id).await.unwrap();
    assert_eq!(sessions[0].end_reason.as_deref(), Some("interrupted"));
    assert_eq!(
        store.run(run_id).await.unwrap().worker_stuck_count,
        0,
        "an interruption is not a stuck worker"
    );

    // The lock was released and the next runner resumes the run without waiting out a back-off.
    let out = env
        .command(&["runner"])
        .env("FAKE_SLOW", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sessions = store.worker_sessions(run_id).await.unwrap();
    assert_eq!(sessions[1].kind, WorkerKind::InProgress, "{sessions:?}");
    assert_eq!(sessions[1].end_reason.as_deref(), Some("finished"));
    assert!(matches!(
        store.run(run_id).await.unwrap().state,
        RunState::Pr | RunState::Complete
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_repository_fails_its_own_runs_and_the_others_go_on() {
    let env = Env::new(&[]);
    env.append_config("\n[repos.broken]\npath = \"/nonexistent/executor-test-repo\"\n");
    env.run(&[
        "queue",
        "add",
        "--gid",
        "good",
        "--repo",
        "app",
        "--description",
        "Works",
    ]);
    env.run(&[
        "queue",
        "add",
        "--gid",
        "bad",
        "--repo",
        "broken",
        "--description",
        "Cannot work",
    ]);
    env.run(&["approve", "--skip-triage", "good", "bad"]);
    let out = env.run(&["runner"]);
    assert!(out.status.success());
    let store = env.store().await;

    let good = run_of(&store, "good").await;
    assert!(
        matches!(good.state, RunState::Pr | RunState::Complete),
        "good run went on: {}",
        good.state
    );
    let bad = run_of(&store, "bad").await;
    let why = store
        .run_memory(bad.id)
        .await
        .unwrap()
        .last_decision
        .unwrap_or_default();
    assert!(
        why.starts_with("error: ") && why.contains("/nonexistent/executor-test-repo"),
        "{why}"
    );
    assert!(
        store.worker_sessions(bad.id).await.unwrap().is_empty(),
        "no worker without a worktree"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_ci_command_is_a_failed_check_with_its_reason() {
    let env = Env::new(&[]);
    env.append_config(&format!(
        "\n[repos.nocmd]\npath = \"{}\"\nci_command = [\"executor-no-such-ci-program\"]\n",
        env.repo().display()
    ));
    env.run(&[
        "queue",
        "add",
        "--gid",
        "c1",
        "--repo",
        "nocmd",
        "--description",
        "Needs CI",
    ]);
    env.run(&["approve", "--skip-triage", "c1"]);
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let check = loop {
        env.run(&["runner"]);
        let run = run_of(&store, "c1").await;
        if let Some(pr) = store.local_pr_for_run(run.id).await.unwrap()
            && let Some(check) = store
                .local_checks(pr.id)
                .await
                .unwrap()
                .into_iter()
                .find(|c| c.status != "pending")
        {
            break check;
        }
        assert!(Instant::now() < deadline, "CI never finished");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(check.status, "failure");
    let output = check.output_tail.unwrap_or_default();
    assert!(
        output.contains("exit status 127") && output.contains("not found"),
        "{output}"
    );
}
