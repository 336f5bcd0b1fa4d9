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
    let filter = RunFilter { task_gid: Some(TaskGid::parse(gid).unwrap()), ..Default::default() };
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
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(runner.id() as i32), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    let status = runner.wait().unwrap();
    assert!(status.success(), "the runner exits cleanly on SIGTERM: {status}");
    assert!(sent.elapsed() < Duration::from_secs(15), "it stopped within the kill grace");
    assert!(!pid_alive(pid), "the worker's process group was stopped");
    let sessions = store.worker_sessions(run_id).await.unwrap();
    assert_eq!(sessions[0].end_reason.map(|r| r.as_str()), Some("interrupted"));
    assert_eq!(
        store.run(run_id).await.unwrap().worker_stuck_count,
        0,
        "an interruption is not a stuck worker"
    );

    // The lock was released and the next runner resumes the run without waiting out a back-off.
    let out = env.command(&["runner"]).env("FAKE_SLOW", "0").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sessions = store.worker_sessions(run_id).await.unwrap();
    assert_eq!(sessions[1].kind, WorkerKind::InProgress, "{sessions:?}");
    assert_eq!(sessions[1].end_reason.map(|r| r.as_str()), Some("finished"));
    assert!(matches!(store.run(run_id).await.unwrap().state, RunState::Pr | RunState::Complete));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_repository_fails_its_own_runs_and_the_others_go_on() {
    let env = Env::new(&[]);
    env.append_config("\n[repos.broken]\npath = \"/nonexistent/executor-test-repo\"\n");
    env.run(&["queue", "add", "--gid", "good", "--repo", "app", "--description", "Works"]);
    env.run(&["queue", "add", "--gid", "bad", "--repo", "broken", "--description", "Cannot work"]);
    env.run(&["approve", "--skip-triage", "good", "bad"]);
    let out = env.run(&["runner"]);
    assert!(out.status.success());
    let store = env.store().await;

    let good = run_of(&store, "good").await;
    assert!(matches!(good.state, RunState::Pr | RunState::Complete), "good run went on: {}", good.state);
    let bad = run_of(&store, "bad").await;
    let why = store.run_memory(bad.id).await.unwrap().last_decision.unwrap_or_default();
    assert!(why.starts_with("error: ") && why.contains("/nonexistent/executor-test-repo"), "{why}");
    assert!(store.worker_sessions(bad.id).await.unwrap().is_empty(), "no worker without a worktree");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_ci_command_is_a_failed_check_with_its_reason() {
    let env = Env::new(&[]);
    env.append_config(&format!(
        "\n[repos.nocmd]\npath = \"{}\"\nci_command = [\"executor-no-such-ci-program\"]\n",
        env.repo().display()
    ));
    env.run(&["queue", "add", "--gid", "c1", "--repo", "nocmd", "--description", "Needs CI"]);
    env.run(&["approve", "--skip-triage", "c1"]);
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let check = loop {
        env.run(&["runner"]);
        let run = run_of(&store, "c1").await;
        if let Some(pr) = store.local_pr_for_run(run.id).await.unwrap()
            && let Some(check) =
                store.local_checks(pr.id).await.unwrap().into_iter().find(|c| c.status != "pending")
        {
            break check;
        }
        assert!(Instant::now() < deadline, "CI never finished");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(check.status, "failure");
    let output = check.output_tail.unwrap_or_default();
    assert!(output.contains("exit status 127") && output.contains("not found"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_over_its_budget_waits_for_a_human_and_resumes_when_told() {
    let env = Env::new(&[]);
    let claude = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/claude.sh");
    // The fake Claude reports $0.1234 per worker and commits nothing, so the run keeps wanting work.
    env.edit_config("agent = \"command\"", "agent = \"claude\"");
    env.append_config(&format!(
        "\n[worker.claude]\nprogram = \"{}\"\n[budget]\nper_run_usd = 0.1\n",
        claude.display()
    ));
    env.queue_approved("b1");
    env.run(&["runner"]);
    let store = env.store().await;
    let run = run_of(&store, "b1").await;
    let first = store.worker_sessions(run.id).await.unwrap();
    assert_eq!(first.len(), 1, "no worker past the cap");
    assert_eq!(
        first[0].end_reason.map(|r| r.as_str()),
        Some("budget_exceeded"),
        "stopped at its cap: {first:?}"
    );
    assert!((run.cost_usd - 0.1234).abs() < 1e-9, "the agent's reported cost is summed: {}", run.cost_usd);
    let memory = store.run_memory(run.id).await.unwrap();
    assert!(memory.budget_stopped);
    let why = memory.last_decision.unwrap_or_default();
    assert!(why.contains("executor runs resume"), "{why}");
    let notices = store.notices(Some(run.id)).await.unwrap();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, "needs_human");
    assert!(notices[0].message.starts_with("@alex Run "), "{}", notices[0].message);

    env.run(&["runner"]);
    assert_eq!(store.notices(Some(run.id)).await.unwrap().len(), 1, "told once");
    assert_eq!(store.worker_sessions(run.id).await.unwrap().len(), 1);

    env.run(&["runs", "resume", &run.id.to_string()]);
    env.run(&["runner"]);
    let sessions = store.worker_sessions(run.id).await.unwrap();
    assert_eq!(sessions.len(), 2, "a fresh allowance lets one more worker start");
    assert_eq!(sessions[1].kind, WorkerKind::InProgress);
    assert_eq!(sessions[1].session_id.as_deref(), Some("sess-1234-abcd"), "it resumed the agent's session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stuck_workers_are_told_and_the_run_is_abandoned_after_max_stuck() {
    let env = Env::new(&[]);
    let silent = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/silent.sh");
    env.edit_config("idle_timeout = \"20s\"", "idle_timeout = \"1s\"");
    env.edit_config(
        "pipeline.sh\"]",
        &format!("pipeline.sh\"]\n# replaced:\n[worker.claude]\nprogram = \"{}\"", silent.display()),
    );
    env.edit_config("agent = \"command\"", "agent = \"claude\"");
    env.queue_approved("s1");
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(90);
    let run = loop {
        env.run(&["runner"]);
        let run = run_of(&store, "s1").await;
        if run.state == RunState::Abandoned {
            break run;
        }
        assert!(Instant::now() < deadline, "never abandoned: {:?}", store.run_memory(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let sessions = store.worker_sessions(run.id).await.unwrap();
    assert_eq!(sessions.len(), 3, "max_stuck = 3 attempts: {sessions:?}");
    assert!(sessions.iter().all(|s| s.end_reason.map(|r| r.as_str()) == Some("idle_timeout")));
    assert_eq!(run.worker_stuck_count, 3);
    let notices = store.notices(Some(run.id)).await.unwrap();
    let stuck: Vec<_> =
        notices.iter().filter(|n| n.notice_key.as_deref().is_some_and(|k| k.starts_with("stuck:"))).collect();
    assert_eq!(stuck.len(), 3, "each stuck worker told once: {notices:?}");
    assert!(
        stuck[0].message.contains("no output for 1s") && stuck[0].message.contains("Stuck attempts: 1 of 3"),
        "{}",
        stuck[0].message
    );
    assert!(notices.iter().any(|n| n.kind == "abandoned"), "{notices:?}");
    // Back-off: each retry waited longer than the one before.
    let gaps: Vec<_> = sessions.windows(2).map(|w| w[1].started_at - w[0].ended_at.unwrap()).collect();
    assert!(gaps[1] > gaps[0], "{gaps:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoning_a_run_by_hand_stops_its_worker() {
    let env = Env::new(&["FAKE_SLOW"]);
    env.queue_approved("a1");
    let store = env.store().await;
    let mut runner = env
        .command(&["runner"])
        .env("FAKE_SLOW", "60")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (run_id, pid) = wait_for_worker_pid(&store).await;

    let out = env.run(&["runs", "abandon", &run_id.to_string(), "--reason", "wrong approach"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("abandoned"));
    // The runner notices at its next tick (loop_interval 1s), stops the worker and, idle, exits.
    let started = Instant::now();
    assert!(runner.wait().unwrap().success());
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(!pid_alive(pid));
    let run = store.run(run_id).await.unwrap();
    assert_eq!(run.state, RunState::Abandoned);
    let sessions = store.worker_sessions(run_id).await.unwrap();
    assert_eq!(sessions[0].end_reason.map(|r| r.as_str()), Some("interrupted"));

    let again = env.command(&["runs", "abandon", &run_id.to_string(), "--reason", "twice"]).output().unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("cannot go from abandoned"), "final");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_review_is_told_once_and_waits_for_a_human() {
    let env = Env::new(&["FAKE_REVIEW"]);
    env.queue_approved("r1");
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let run = loop {
        let out = env.command(&["runner"]).env("FAKE_REVIEW", "fail").output().unwrap();
        assert!(out.status.success());
        let run = run_of(&store, "r1").await;
        if run.review_verdict.is_some() && !store.notices(Some(run.id)).await.unwrap().is_empty() {
            break run;
        }
        assert!(Instant::now() < deadline, "no review: {:?}", store.run_memory(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(run.state, RunState::Pr);
    assert_eq!(run.review_verdict.map(|v| v.as_str()), Some("fail"));
    let notices = store.notices(Some(run.id)).await.unwrap();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, "needs_human");
    assert!(notices[0].message.contains("review"), "{}", notices[0].message);

    // Nothing more happens by itself: no new worker, no second notice.
    let workers = store.worker_sessions(run.id).await.unwrap().len();
    env.command(&["runner"]).env("FAKE_REVIEW", "fail").output().unwrap();
    assert_eq!(store.worker_sessions(run.id).await.unwrap().len(), workers);
    assert_eq!(store.notices(Some(run.id)).await.unwrap().len(), 1);
    let why = store.run_memory(run.id).await.unwrap().last_decision.unwrap_or_default();
    assert!(why.contains("waiting for a trusted comment"), "{why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_task_can_be_retried_on_a_new_branch() {
    let env = Env::new(&[]);
    env.queue_approved("t1");
    let store = env.store().await;
    env.run(&["runner"]);
    let first = run_of(&store, "t1").await;
    let refused = env.command(&["queue", "retry", "t1"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is not abandoned"));

    env.run(&["runs", "abandon", &first.id.to_string(), "--reason", "start over"]);
    env.run(&["queue", "retry", "t1", "--reason", "try again"]);
    env.run(&["runner"]);
    let runs = store
        .list_runs(&RunFilter { task_gid: Some(TaskGid::parse("t1").unwrap()), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(runs.len(), 2);
    let second = &runs[0];
    assert_ne!(second.id, first.id);
    assert!(
        second.branch_name.as_deref().unwrap().ends_with(&format!("-run{}", second.id)),
        "{:?}",
        second.branch_name
    );
    assert!(matches!(second.state, RunState::Pr | RunState::Complete), "{}", second.state);
    assert_eq!(store.task(&TaskGid::parse("t1").unwrap()).await.unwrap().executor_run_id, Some(second.id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_takes_a_single_tick_and_waits_for_the_workers_it_started() {
    let env = Env::new(&[]);
    env.queue_approved("o1");
    let out = env.run(&["runner", "--once", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report["runs_created"].as_u64(), report["actions"].as_u64()), (Some(1), Some(1)), "{report}");
    let store = env.store().await;
    let run = run_of(&store, "o1").await;
    assert_eq!(run.state, RunState::InProgress, "one tick: the worker ran, the PR is for the next tick");
    let sessions = store.worker_sessions(run.id).await.unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].end_reason.map(|r| r.as_str()), Some("finished"), "it waited for the worker");
    env.run(&["runner", "--once"]);
    assert_eq!(run_of(&store, "o1").await.state, RunState::InProgress, "this tick opened the pull request");
    assert!(store.local_pr_for_run(run.id).await.unwrap().is_some());
}
