//! CI through the real binary on the local forge: CI that cannot start is told to the human and never
//! given to an agent; checks that never finish are told once after `runner.check_timeout`; a completed
//! pull request closed without merging abandons its run. Real git, real processes.

use std::time::{Duration, Instant};

use executor::domain::{Run, RunState, TaskGid, WorkerKind};
use executor::store::{LocalCheck, Notice, RunFilter, Store};

mod common;
mod runner_support;
use runner_support::Env;

const DEFAULT_CI: &str = r#"ci_command = ["sh", "-c", "sleep 2; test -f ci-fixed"]"#;

async fn run_of(store: &Store, gid: &str) -> Run {
    let filter = RunFilter { task_gid: Some(TaskGid::parse(gid).unwrap()), ..Default::default() };
    store.list_runs(&filter).await.unwrap().remove(0)
}

async fn checks_of(store: &Store, run: &Run) -> Vec<LocalCheck> {
    match store.local_pr_for_run(run.id).await.unwrap() {
        Some(pr) => store.local_checks(pr.id).await.unwrap(),
        None => vec![],
    }
}

async fn notices_keyed(store: &Store, run: &Run, prefix: &str) -> Vec<Notice> {
    let all = store.notices(Some(run.id)).await.unwrap();
    all.into_iter().filter(|n| n.notice_key.as_deref().is_some_and(|k| k.starts_with(prefix))).collect()
}

/// Starts the runner (it works until idle and exits, as cron would) until `done` holds for the run.
async fn run_until(env: &Env, store: &Store, gid: &str, what: &str, done: impl AsyncFn(&Run) -> bool) -> Run {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        env.run(&["runner"]);
        let run = run_of(store, gid).await;
        if done(&run).await {
            return run;
        }
        let memory = store.run_memory(run.id).await.unwrap();
        assert!(
            Instant::now() < deadline,
            "{what} never happened: {} / {:?}",
            run.state,
            memory.last_decision
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ci_program_that_is_missing_is_told_once_and_no_fix_ci_starts() {
    let env = Env::new(&[]);
    env.edit_config(DEFAULT_CI, r#"ci_command = ["executor-no-such-ci-program", "--all"]"#);
    env.queue_approved("c1");
    let store = env.store().await;
    let run = run_until(&env, &store, "c1", "the CI error notice", async |run| {
        !notices_keyed(&store, run, "ci_error:").await.is_empty()
    })
    .await;

    let checks = checks_of(&store, &run).await;
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert_eq!(checks[0].status, "error", "not a code failure: {checks:?}");
    let why = checks[0].output_tail.clone().unwrap_or_default();
    assert!(why.contains(r#""executor-no-such-ci-program" was not found"#), "{why}");
    let notice = &notices_keyed(&store, &run, "ci_error:").await[0];
    assert_eq!(notice.kind, "needs_human");
    assert!(
        notice.message.starts_with("@alex ") && notice.message.contains("was not found"),
        "the human learns why: {}",
        notice.message
    );

    // More ticks change nothing: no agent for an infrastructure error, no second notice, still in pr.
    env.run(&["runner"]);
    env.run(&["runner"]);
    let run = run_of(&store, "c1").await;
    assert_eq!(run.state, RunState::Pr);
    assert_eq!(run.ci_attempts, 0);
    let sessions = store.worker_sessions(run.id).await.unwrap();
    assert!(sessions.iter().all(|s| s.kind != WorkerKind::FixCi), "{sessions:?}");
    assert_eq!(notices_keyed(&store, &run, "ci_error:").await.len(), 1, "told once");
    assert_eq!(checks_of(&store, &run).await.len(), 1, "CI is not started again for the same head");
    let why = store.run_memory(run.id).await.unwrap().last_decision.unwrap_or_default();
    assert!(why.contains("CI could not run") && why.contains("the human was told"), "{why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_that_never_finish_are_told_once_after_check_timeout() {
    let env = Env::new(&[]);
    checks_that_never_finish(&env).await;
}

/// The same on PostgreSQL, where the head and when it was first seen are written in one statement too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn checks_that_never_finish_are_told_once_on_postgresql() {
    let Some(db) = common::postgres("checks_that_never_finish_are_told_once_on_postgresql").await else {
        return;
    };
    let env = Env::new(&[]);
    env.use_database(&db.url);
    checks_that_never_finish(&env).await;
}

async fn checks_that_never_finish(env: &Env) {
    env.edit_config(DEFAULT_CI, r#"ci_command = ["sleep", "600"]"#);
    env.edit_config("retry_backoff = \"1s\"", "retry_backoff = \"1s\"\ncheck_timeout = \"2s\"");
    env.queue_approved("t1");
    let store = env.store().await;
    let run = run_until(env, &store, "t1", "the overdue checks notice", async |run| {
        !notices_keyed(&store, run, "checks_timeout:").await.is_empty()
    })
    .await;
    let checks = checks_of(&store, &run).await;
    // The CI process is not the test's subject: stop it whatever happens below.
    let ci = checks.first().and_then(|c| c.pid).expect("CI started");
    let _stop = KillOnDrop(ci);

    let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
    let head = branch_head(env, &pr.branch);
    assert_eq!(run.head_sha.as_deref(), Some(head.as_str()));
    let seen = run.head_seen_at.expect("when the head was first seen is recorded");
    let notice = &notices_keyed(&store, &run, "checks_timeout:").await[0];
    assert_eq!(notice.notice_key.as_deref(), Some(format!("checks_timeout:{head}").as_str()), "key per head");
    assert!(
        notice.message.contains("ci (pending)") && notice.message.contains("check_timeout"),
        "{}",
        notice.message
    );
    assert!(notice.created_at - seen >= chrono::TimeDelta::seconds(2), "told only after the timeout");

    env.run(&["runner"]);
    let run = run_of(&store, "t1").await;
    assert_eq!(run.state, RunState::Pr, "it keeps waiting");
    assert_eq!(run.head_seen_at, Some(seen), "the same head keeps its first sighting");
    assert_eq!(notices_keyed(&store, &run, "checks_timeout:").await.len(), 1, "told once");
    assert_eq!(checks_of(&store, &run).await[0].status, "pending");
    let why = store.run_memory(run.id).await.unwrap().last_decision.unwrap_or_default();
    assert!(why.contains("The human was told the checks are overdue"), "{why}");
    // The dashboard's "Needs you" lists the run with the runner's own notice, until a human reads it.
    let limits = executor::store::NeedsYouLimits { per_list: 20, max_analysis_attempts: 3 };
    let needs = store.needs_you(limits).await.unwrap();
    let listed: Vec<_> =
        needs.checks_overdue.items.iter().map(|n| (n.run.id, n.notice.as_ref().map(|x| x.id))).collect();
    let told = notices_keyed(&store, &run, "checks_timeout:").await[0].id;
    assert_eq!(listed, [(run.id, Some(told))]);
    store.mark_notice_read(told, executor::domain::Actor::Web).await.unwrap();
    assert!(store.needs_you(limits).await.unwrap().checks_overdue.items.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_pull_request_closed_without_merging_abandons_the_run() {
    let env = Env::new(&[]);
    env.edit_config(DEFAULT_CI, r#"ci_command = ["true"]"#);
    env.queue_approved("k1");
    let store = env.store().await;
    let run = run_until(&env, &store, "k1", "completion", async |run| run.state == RunState::Complete).await;
    let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
    store.set_local_pr_state(pr.id, "closed", pr.draft).await.unwrap();

    env.run(&["runner"]);
    let run = run_of(&store, "k1").await;
    assert_eq!(run.state, RunState::Abandoned, "a closed PR is not waited on forever");
    let notices = store.notices(Some(run.id)).await.unwrap();
    let abandoned: Vec<_> = notices.iter().filter(|n| n.kind == "abandoned").collect();
    assert_eq!(abandoned.len(), 1, "{notices:?}");
    assert!(
        abandoned[0].message.contains("closed without merging after the run completed"),
        "{}",
        abandoned[0].message
    );

    // The task can be worked again: the human retries it and the runner makes a new run.
    let refused = env.command(&["approve", "k1"]).output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("queue retry"), "{said}");
    env.run(&["queue", "retry", "k1"]);
    let task = store.task(&executor::domain::TaskGid::parse("k1").unwrap()).await.unwrap();
    assert_eq!(task.status, executor::domain::QueueStatus::Approved);
    env.run(&["runner", "--once"]);
    let again = run_of(&store, "k1").await;
    assert_ne!(again.id, run.id, "a new run for the retried task");
}

fn branch_head(env: &Env, branch: &str) -> String {
    let out = std::process::Command::new("git")
        .args(["rev-parse", &format!("refs/heads/{branch}")])
        .current_dir(env.repo())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Kills a process group when the test ends, passing or not.
struct KillOnDrop(i64);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0) {
            let _ =
                nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}
