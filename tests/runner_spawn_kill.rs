//! Issue 7, item 1: a runner killed right after it spawned an agent. The fake agent's first act is
//! `kill -9 $PPID`; before the fix it could run before its pid was recorded, the next runner ended its
//! session as never started and launched another agent beside the orphan. Now an agent only runs once
//! its pid and start time are durable, so the next runner adopts it: never two agents for a run, never
//! more than `max_workers`, and the killed runner's worker is recorded.

use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use executor::store::RunFilter;

mod common;
mod runner_support;
use runner_support::{Env, kill_when_flagged};

const ROUNDS: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_killed_at_spawn_never_leaves_a_second_agent_on_sqlite() {
    for round in 0..ROUNDS {
        kill_at_spawn(round, None).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn a_runner_killed_at_spawn_never_leaves_a_second_agent_on_postgresql() {
    for round in 0..ROUNDS {
        let Some(db) =
            common::postgres("a_runner_killed_at_spawn_never_leaves_a_second_agent_on_postgresql").await
        else {
            return;
        };
        kill_at_spawn(round, Some(&db.url)).await;
    }
}

async fn kill_at_spawn(round: usize, database: Option<&str>) {
    let env = Env::new(&["FAKE_SLOW", "FAKE_KILLED", "FAKE_TRACE"]);
    let agents = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents");
    env.edit_config(
        &agents.join("pipeline.sh").display().to_string(),
        &agents.join("kill_runner.sh").display().to_string(),
    );
    env.edit_config("[runner]\n", "[runner]\nmax_workers = 1\n");
    if let Some(url) = database {
        env.use_database(url);
    }
    // Where the contained agent may keep its flag and trace (worker.sandbox_writable).
    let out = env.path().join("agent-out");
    std::fs::create_dir_all(&out).unwrap();
    env.edit_config(
        "[worker]\n",
        &format!("[worker]\nsandbox_writable = [{:?}]\n", out.display().to_string()),
    );
    let (killed, trace) = (out.join("killed"), out.join("trace"));
    std::fs::write(&trace, "").unwrap();
    // Two approved tasks and room for one agent: a second agent would break either limit.
    env.queue_approved("11");
    env.queue_approved("12");
    let runner = |args: &[&str]| {
        let mut cmd = env.command(args);
        cmd.env("FAKE_SLOW", "1")
            .env("FAKE_KILLED", &killed)
            .env("FAKE_TRACE", &trace)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    };

    let status = kill_when_flagged(&mut runner(&["runner"]), &killed);
    assert_eq!(status.signal(), Some(9), "round {round}: the runner is killed as its agent starts");
    // The next runner (one tick, then it supervises its workers to their end).
    let out = runner(&["runner", "--once"]).output().unwrap();
    assert!(out.status.success(), "round {round}: {}", String::from_utf8_lossy(&out.stderr));

    // Let every agent that was started finish, whoever started it, before judging.
    let deadline = Instant::now() + Duration::from_secs(30);
    let spans = loop {
        let spans = agent_spans(&std::fs::read_to_string(&trace).unwrap());
        if spans.open.is_empty() && !spans.started.is_empty() {
            break spans;
        }
        assert!(Instant::now() < deadline, "round {round}: agents never ended: {spans:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(spans.max_live <= 1, "round {round}: {} agents at once with max_workers = 1", spans.max_live);
    assert!(spans.max_per_run <= 1, "round {round}: two agents on one run");

    let store = env.store().await;
    let mut sessions = Vec::new();
    for run in store.list_runs(&RunFilter::default()).await.unwrap() {
        sessions.extend(store.worker_sessions(run.id).await.unwrap());
    }
    // The killed runner's worker was adopted and recorded, and it was the only one.
    assert_eq!(sessions.len(), 1, "round {round}: {sessions:?}");
    let s = &sessions[0];
    assert!(s.pid.is_some() && s.pid_start_time.is_some(), "round {round}: {s:?}");
    assert_eq!(s.end_reason, Some(executor::domain::EndReason::Finished), "round {round}: {s:?}");
    assert_eq!(spans.started.len(), 1, "round {round}: {spans:?}");
    let log = std::fs::read_to_string(s.log_path.as_deref().unwrap()).unwrap();
    assert!(log.contains("adopted the running worker"), "round {round}: {log}");
}

/// What the agents' trace says: how many were live at once (in all, and on one run).
#[derive(Debug, Default)]
struct Spans {
    started: BTreeSet<String>,
    open: BTreeSet<(String, String)>,
    max_live: usize,
    max_per_run: usize,
}

fn agent_spans(trace: &str) -> Spans {
    let mut s = Spans::default();
    for line in trace.lines() {
        let mut parts = line.split_whitespace();
        let (Some(what), Some(run), Some(pid)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let key = (run.to_string(), pid.to_string());
        match what {
            "start" => {
                s.started.insert(pid.to_string());
                s.open.insert(key);
            }
            _ => {
                s.open.remove(&key);
            }
        }
        s.max_live = s.max_live.max(s.open.len());
        let per_run = s.open.iter().filter(|(r, _)| r == run).count();
        s.max_per_run = s.max_per_run.max(per_run);
    }
    s
}
