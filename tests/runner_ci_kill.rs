//! Issue 19, item 9: a runner killed (SIGKILL) the moment the local forge creates a CI directory. Before
//! the fix the check it was starting was read as "CI never started", an `error` for a human, and the run
//! waited for a human forever. Now the next runner sees that nobody holds the directory's lock and that
//! no CI ran, starts that CI again, and the run completes with no human action. Real binary, real git,
//! real processes and signals.

use std::process::Stdio;
use std::time::{Duration, Instant};

use executor::domain::{RunState, TaskGid};
use executor::store::{RunFilter, Store};

mod common;
mod runner_support;
use runner_support::Env;

const ROUNDS: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_killed_as_ci_starts_leaves_runs_that_complete_by_themselves_on_sqlite() {
    for round in 0..ROUNDS {
        kill_at_ci_start(round, None).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn a_runner_killed_as_ci_starts_leaves_runs_that_complete_by_themselves_on_postgresql() {
    for round in 0..ROUNDS {
        let Some(db) =
            common::postgres("a_runner_killed_as_ci_starts_leaves_runs_that_complete_by_themselves").await
        else {
            return;
        };
        kill_at_ci_start(round, Some(&db.url)).await;
    }
}

async fn kill_at_ci_start(round: usize, database: Option<&str>) {
    let env = Env::new(&[]);
    env.edit_config(r#"ci_command = ["sh", "-c", "sleep 2; test -f ci-fixed"]"#, r#"ci_command = ["true"]"#);
    if let Some(url) = database {
        env.use_database(url);
    }
    env.queue_approved("c1");
    let ci_root = env.path().join("data").join("ci");

    let mut command = env.command(&["runner"]);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut runner = command.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let started = std::fs::read_dir(&ci_root).is_ok_and(|mut d| d.next().is_some());
        if started {
            runner.kill().unwrap(); // SIGKILL
            runner.wait().unwrap();
            break;
        }
        if let Some(status) = runner.try_wait().unwrap() {
            panic!("round {round}: the runner ended ({status}) before it started CI");
        }
        assert!(Instant::now() < deadline, "round {round}: CI never started");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    // Runners as cron starts them, and nothing else, until the run completes.
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        env.run(&["runner"]);
        let run = run_of(&store).await;
        let notices = store.notices(Some(run.id)).await.unwrap();
        assert!(
            !notices.iter().any(|n| n.kind == "needs_human"),
            "round {round}: a human was asked: {notices:?}"
        );
        if run.state == RunState::Complete {
            let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
            let checks = store.local_checks(pr.id).await.unwrap();
            assert!(
                !checks.is_empty() && checks.iter().all(|c| c.status == "success"),
                "round {round}: {checks:?}"
            );
            return;
        }
        let why = store.run_memory(run.id).await.unwrap().last_decision;
        assert!(Instant::now() < deadline, "round {round}: the run never completed: {} / {why:?}", run.state);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn run_of(store: &Store) -> executor::domain::Run {
    let filter = RunFilter { task_gid: Some(TaskGid::parse("c1").unwrap()), ..Default::default() };
    store.list_runs(&filter).await.unwrap().remove(0)
}
