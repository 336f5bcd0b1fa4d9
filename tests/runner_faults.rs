//! The runner under stress: SIGTERM mid-worker, a repository that is broken (a missing CI command is in
//! `runner_ci.rs`). Real binary, real git, real processes.

use std::process::Stdio;
use std::time::{Duration, Instant};

use executor::domain::{Actor, EndReason, RunState, TaskGid, WorkerKind};
use executor::store::{EventFilter, RunFilter, Store};

mod runner_support;
use runner_support::{Env, FakeWebhook, pid_alive};

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
async fn a_launch_that_can_never_succeed_is_a_failed_attempt_told_to_the_human_and_abandoned() {
    let env = Env::new(&[]);
    env.append_config("\n[repos.broken]\npath = \"/nonexistent/executor-test-repo\"\n");
    env.run(&["queue", "add", "--gid", "good", "--repo", "app", "--description", "Works"]);
    env.run(&["queue", "add", "--gid", "bad", "--repo", "broken", "--description", "Cannot work"]);
    env.run(&["approve", "--skip-triage", "good", "bad"]);
    // One pass (`runner` alone would wait for the good run's CI, and the bad run's back-off with it).
    let out = env.command(&["runner", "--once"]).output().unwrap();
    let store = env.store().await;
    let bad = run_of(&store, "bad").await;

    // The runner says it met errors: in its exit status, naming the run and the error.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("run {}:", bad.id)) && stderr.contains("/nonexistent/executor-test-repo"),
        "{stderr}"
    );
    // And in `executor status`, for whoever did not see that exit (cron).
    let status = String::from_utf8_lossy(&env.run(&["status"]).stdout).into_owned();
    assert!(
        status.contains("no live runner; last one stopped at ") && status.contains("errors, last"),
        "{status}"
    );
    assert!(status.contains("/nonexistent/executor-test-repo"), "{status}");
    let json: serde_json::Value = serde_json::from_slice(&env.run(&["status", "--json"]).stdout).unwrap();
    assert!(json["runners"][0]["errors"].as_i64().unwrap() > 0, "{json}");

    let good = run_of(&store, "good").await;
    assert!(matches!(good.state, RunState::Pr | RunState::Complete), "good run went on: {}", good.state);
    // A failed launch is a failed attempt, recorded with its error; the run did not move on.
    let sessions = store.worker_sessions(bad.id).await.unwrap();
    assert!(!sessions.is_empty());
    assert!(sessions.iter().all(|s| s.end_reason == Some(EndReason::FailedToStart)), "{sessions:?}");
    let error = sessions[0].result_error.clone().unwrap_or_default();
    assert!(error.contains("/nonexistent/executor-test-repo"), "{error}");
    assert_eq!(bad.state, RunState::Queued, "no worker started, so the run is not in progress");

    // Back-off, then abandoned after runner.max_stuck (3) attempts, with the human told.
    let deadline = Instant::now() + Duration::from_secs(60);
    let bad = loop {
        let _ = env.command(&["runner"]).output().unwrap();
        let run = run_of(&store, "bad").await;
        if run.state == RunState::Abandoned {
            break run;
        }
        assert!(Instant::now() < deadline, "never abandoned: {:?}", store.run_memory(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(store.worker_sessions(bad.id).await.unwrap().len(), 3);
    let notices = store.notices(Some(bad.id)).await.unwrap();
    assert!(notices.iter().any(|n| n.kind == "abandoned"), "{notices:?}");
    let states: Vec<_> = store
        .events(&EventFilter { run_id: Some(bad.id), ..Default::default() })
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| e.to_state)
        .collect();
    assert_eq!(states, ["queued", "abandoned"], "never in_progress without a worker");
    assert_eq!(bad.lease_owner, None, "an abandoned run holds no lease");
    // The dashboard's "Needs you" lists it as abandoned and unread, with the runner's notice.
    let limits = executor::store::NeedsYouLimits { per_list: 20, max_analysis_attempts: 3 };
    let needs = store.needs_you(limits).await.unwrap();
    let told = notices.iter().find(|n| n.kind == "abandoned").map(|n| n.id);
    let listed: Vec<_> =
        needs.abandoned_unread.items.iter().map(|n| (n.run.id, n.notice.as_ref().map(|x| x.id))).collect();
    assert_eq!(listed, [(bad.id, told)]);
    // The last runner had nothing left to fail on.
    let out = env.command(&["runner"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
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

    // The dashboard's "Needs you" lists it as stopped on budget, with the runner's why; the CLI's
    // resume takes it off (the same operation as the page's Resume).
    let limits = executor::store::NeedsYouLimits { per_list: 20, max_analysis_attempts: 3 };
    let needs = store.needs_you(limits).await.unwrap();
    assert_eq!(needs.budget_stopped.items.iter().map(|n| n.run.id).collect::<Vec<_>>(), [run.id]);
    assert!(
        needs.budget_stopped.items[0]
            .last_decision
            .as_deref()
            .is_some_and(|d| d.contains("executor runs resume"))
    );
    env.run(&["runs", "resume", &run.id.to_string()]);
    assert!(store.needs_you(limits).await.unwrap().budget_stopped.items.is_empty());
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

/// The seed's loop: a failing review's findings go to `fix_comments`, for `runner.max_review_rounds` (2)
/// rounds; a review that still fails after that is told to the human once, and the run waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_review_is_fixed_for_max_review_rounds_then_told_once() {
    let env = Env::new(&["FAKE_REVIEW"]);
    env.queue_approved("r1");
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(120);
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
    let sessions = store.worker_sessions(run.id).await.unwrap();
    let kinds: Vec<&str> = sessions
        .iter()
        .filter(|s| matches!(s.kind.as_str(), "pr_review" | "fix_comments"))
        .map(|s| s.kind.as_str())
        .collect();
    assert_eq!(
        kinds,
        ["pr_review", "fix_comments", "pr_review", "fix_comments", "pr_review"],
        "two rounds of fixes on the findings, then the human: {sessions:?}"
    );
    // Each review's findings are on the pull request, as executor's comments (each ending with its
    // review's hidden marker).
    let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
    let comments = store.local_comments(pr.id).await.unwrap();
    let findings = comments
        .iter()
        .filter(|c| c.by_agent && c.body.starts_with("say more\n\n<!-- executor review "))
        .count();
    assert_eq!(findings, 3, "{comments:?}");
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
async fn once_carries_each_run_as_far_as_it_goes_without_waiting() {
    let env = Env::new(&[]);
    env.queue_approved("o1");
    let out = env.run(&["runner", "--once", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["runs_created"].as_u64(), Some(1), "{report}");
    assert!(report["actions"].as_u64().unwrap() >= 3, "worker, pull request, state: {report}");
    let store = env.store().await;
    let run = run_of(&store, "o1").await;
    assert_eq!(
        run.state,
        RunState::Pr,
        "the worker ran and the pull request is open: CI is what it waits for"
    );
    assert!(store.local_pr_for_run(run.id).await.unwrap().is_some());
    let sessions = store.worker_sessions(run.id).await.unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].end_reason.map(|r| r.as_str()), Some("finished"), "it waited for the worker");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_that_could_not_be_sent_is_retried_next_tick_and_delivered_once() {
    let (url, addr) = FakeWebhook::down();
    let env = Env::with_webhook(&[], &url);
    // A cap too small for any worker: the first tick tells the human, and the webhook is down.
    env.append_config("\n[budget]\nper_run_usd = 0.00005\n");
    env.queue_approved("n1");
    let store = env.store().await;
    let out = env.command(&["runner"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a notice not delivered is an error the runner reports");
    let run = run_of(&store, "n1").await;
    let notices = store.notices(Some(run.id)).await.unwrap();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].delivered_at, None, "recorded, not delivered");
    assert!(notices[0].attempts >= 1 && notices[0].last_error.as_deref().unwrap_or("").contains("webhook"));
    assert!(!notices[0].last_error.as_deref().unwrap_or("").contains("secret"), "the URL is never recorded");
    let status = String::from_utf8_lossy(&env.run(&["status"]).stdout).into_owned();
    assert!(status.contains("notices not delivered: 1"), "{status}");

    // The webhook is back: the next runner delivers it, once.
    let hook = FakeWebhook::start_on(&addr);
    env.run(&["runner"]);
    env.run(&["runner"]);
    assert_eq!(hook.bodies().len(), 1, "{:?}", hook.bodies());
    let notices = store.notices(Some(run.id)).await.unwrap();
    assert_eq!(notices.len(), 1);
    assert!(notices[0].delivered_at.is_some(), "{notices:?}");
    assert!(notices[0].delivery.as_deref().unwrap_or("").contains("webhook: sent"), "{notices:?}");
    assert!(store.worker_sessions(run.id).await.unwrap().is_empty(), "no worker without budget");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_with_nowhere_to_go_yet_waits_for_the_pull_request_however_many_ticks_it_takes() {
    // Found by the soak: every tick without a pull request (and no webhook) counted as a failed
    // delivery, so a notice recorded early (a stuck first worker, say) was given up after five ticks
    // and never reached the human, although the pull request came later.
    let env = Env::new(&["FAKE_SLOW"]);
    env.queue_approved("e1");
    let store = env.store().await;
    let run =
        store.create_run_for_task(&TaskGid::parse("e1").unwrap(), Actor::Runner).await.unwrap().unwrap();
    store
        .add_notice(Some(run.id), Some("e1"), "needs_human", Some("test:early"), "@alex an early word")
        .await
        .unwrap();
    // The worker takes 8 s, ticks of 1 s go by meanwhile: more than the five attempts a failing
    // delivery gets.
    let out = env.command(&["runner"]).env("FAKE_SLOW", "8").output().unwrap();
    let pr = store
        .local_pr_for_run(run.id)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("no pull request: {}", String::from_utf8_lossy(&out.stderr)));
    let posted = store
        .local_comments(pr.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|c| c.body.starts_with("@alex an early word"))
        .count();
    assert_eq!(posted, 1, "the early notice is on the pull request once");
    let notices = store.notices(Some(run.id)).await.unwrap();
    let early = notices.iter().find(|n| n.notice_key.as_deref() == Some("test:early")).unwrap();
    assert!(early.delivered_at.is_some(), "{early:?}");
    assert_eq!(early.attempts, 1, "waiting for the pull request was no failed attempt: {early:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_recorded_by_a_runner_that_died_before_sending_it_is_sent_by_the_next() {
    let hook = FakeWebhook::start();
    let env = Env::with_webhook(&[], &hook.url());
    env.queue_approved("d1");
    let store = env.store().await;
    env.run(&["runner"]);
    let run = run_of(&store, "d1").await;
    let before = hook.bodies().len();
    // What a runner killed between recording a notice and sending it leaves behind.
    store
        .add_notice(Some(run.id), Some("d1"), "needs_human", Some("test:crash"), "@alex look")
        .await
        .unwrap();
    env.run(&["runner"]);
    let bodies = hook.bodies();
    assert_eq!(bodies.len(), before + 1, "{bodies:?}");
    assert!(bodies.last().unwrap().contains("@alex look"));
    let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
    let on_pr = store
        .local_comments(pr.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|c| c.body.starts_with("@alex look"))
        .count();
    assert_eq!(on_pr, 1, "posted on the pull request once");
    env.run(&["runner"]);
    assert_eq!(hook.bodies().len(), before + 1, "delivered once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_remainder_too_small_for_an_agent_is_a_budget_stop_not_a_launch() {
    let env = Env::new(&[]);
    env.append_config("\n[budget]\nper_run_usd = 0.00005\n");
    env.queue_approved("z1");
    env.run(&["runner"]);
    let store = env.store().await;
    let run = run_of(&store, "z1").await;
    assert!(store.worker_sessions(run.id).await.unwrap().is_empty(), "no worker started with $0");
    let memory = store.run_memory(run.id).await.unwrap();
    assert!(memory.budget_stopped, "{memory:?}");
    let notices = store.notices(Some(run.id)).await.unwrap();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, "needs_human");
    assert_eq!(run.state, RunState::Queued);
    // No pull request and no webhook: the notice reached nobody, so it is not taken for delivered,
    // and `executor status` shows the stop.
    assert_eq!(notices[0].delivered_at, None, "{notices:?}");
    let status = String::from_utf8_lossy(&env.run(&["status"]).stdout).into_owned();
    assert!(
        status.contains("stopped by a budget cap: 1") && status.contains("notices not delivered: 1"),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remainder_below_min_launch_usd_is_a_budget_stop() {
    let env = Env::new(&["FAKE_COST"]);
    let claude = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/claude.sh");
    env.edit_config("agent = \"command\"", "agent = \"claude\"");
    // The fake commits nothing, so the run wants another worker at once.
    env.edit_config("retry_backoff = \"1s\"", "retry_backoff = \"0s\"");
    // Each worker spends $0.095 of $0.10: the $0.005 left is under budget.min_launch_usd ($0.05).
    env.append_config(&format!(
        "\n[worker.claude]\nprogram = \"{}\"\n[budget]\nper_run_usd = 0.1\n",
        claude.display()
    ));
    env.queue_approved("m1");
    let store = env.store().await;
    let out = env.command(&["runner"]).env("FAKE_COST", "0.095").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = run_of(&store, "m1").await;
    let sessions = store.worker_sessions(run.id).await.unwrap();
    assert_eq!(sessions.len(), 1, "no worker for the $0.005 left: {sessions:?}");
    let memory = store.run_memory(run.id).await.unwrap();
    assert!(memory.budget_stopped, "{run:?} {memory:?} {sessions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_notices_with_the_same_text_are_two_comments_on_the_pull_request() {
    let env = Env::new(&[]);
    env.queue_approved("t1");
    let store = env.store().await;
    env.run(&["runner"]);
    let run = run_of(&store, "t1").await;
    let pr = store.local_pr_for_run(run.id).await.unwrap().expect("a pull request");
    // Two budget stops of one run, with the same text (the same cap, the same spend).
    for key in ["test:first", "test:second"] {
        store.add_notice(Some(run.id), Some("t1"), "needs_human", Some(key), "@alex stopped").await.unwrap();
    }
    env.run(&["runner"]);
    env.run(&["runner"]);
    let comments = store.local_comments(pr.id).await.unwrap();
    let stops = comments.iter().filter(|c| c.body.starts_with("@alex stopped")).count();
    assert_eq!(stops, 2, "each stop its own comment: {comments:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_by_hand_is_refused_on_a_complete_run() {
    let env = Env::new(&[]);
    env.queue_approved("c9");
    let store = env.store().await;
    let run =
        store.create_run_for_task(&TaskGid::parse("c9").unwrap(), Actor::Runner).await.unwrap().unwrap();
    for (from, to) in [
        (RunState::Queued, RunState::InProgress),
        (RunState::InProgress, RunState::Pr),
        (RunState::Pr, RunState::Complete),
    ] {
        store.set_run_state_if(run.id, from, to, None, Actor::Cli, "test").await.unwrap();
    }
    let out = env.command(&["worker", "run", "--task", "c9", "--kind", "pr_review"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("run {} of task c9 is complete", run.id)), "{stderr}");
    assert!(store.worker_sessions(run.id).await.unwrap().is_empty(), "nothing recorded");
    assert_eq!(store.run(run.id).await.unwrap().state, RunState::Complete);
}

/// Two machines given one `runner.host_name` (a mistake): a runner never judges the other machine's
/// runner by a pid that means nothing here, and says what is wrong where `executor status` shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_name_shared_by_two_machines_is_told_not_obeyed() {
    let env = Env::new(&[]);
    env.edit_config("[runner]\n", "[runner]\nhost_name = \"shared\"\n");
    env.run(&["migrate"]);
    let store = env.store().await;
    // The other machine's runner: alive by its heartbeat, with a pid that is nobody's here.
    let other = executor::store::RunnerRegistration {
        id: "shared/other",
        host: "shared",
        pid: 999_999,
        version: "test",
        machine: "another-machine",
        ttl: Duration::from_secs(600),
        max_workers: 2,
    };
    store.register_runner(&other).await.unwrap();

    let out = env.command(&["runner", "--once"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("on another machine uses this host's name"), "{stderr}");
    let statuses = store.runner_statuses().await.unwrap();
    let theirs = statuses.iter().find(|s| s.id == "shared/other").unwrap();
    assert!(theirs.alive && theirs.ended_at.is_none(), "not declared dead by its pid: {theirs:?}");
    let status = String::from_utf8_lossy(&env.run(&["status"]).stdout).into_owned();
    assert!(status.contains("give each machine its own runner.host_name"), "{status}");
}
