//! A runner declared lost and then killed before it could stop its agents leaves them running, their
//! sessions ended as `host_lost`: the next runner of the host stops them as it starts (soak finding).

use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::domain::{EndReason, WorkerKind};
use crate::runner::RunnerError;
use crate::runner::test_hosts::{host_runner, host_runner_with, store_with_runs};
use crate::store::{SessionStart, WorkerEnd};
use crate::worker::process::{is_alive, pid_start_time};

#[tokio::test]
async fn a_new_runner_stops_the_agents_a_lost_runner_of_its_host_left_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, runs) = store_with_runs(tmp.path(), 1).await;
    let run = &runs[0];
    // An agent in a process group of its own, as workers are, whose runner is gone.
    let mut orphan = Command::new("sleep").arg("300").process_group(0).spawn().unwrap();
    let pid = i32::try_from(orphan.id()).unwrap();
    let start = i64::try_from(pid_start_time(pid)).unwrap();
    let s = store
        .begin_worker_session(run.id, WorkerKind::InProgress, "command", "alpha", &SessionStart::default())
        .await
        .unwrap()
        .unwrap();
    store.set_worker_process(s.id, None, pid, Some(start), "out", "log").await.unwrap();
    store.end_worker_session(s.id, None, &WorkerEnd::new(EndReason::HostLost)).await.unwrap();
    // Another host's lost agent, and a session whose pid was reused since, are not this runner's to stop.
    let mut elsewhere = Command::new("sleep").arg("300").process_group(0).spawn().unwrap();
    let other = i32::try_from(elsewhere.id()).unwrap();
    let b = store
        .begin_worker_session(run.id, WorkerKind::FixCi, "command", "beta", &SessionStart::default())
        .await
        .unwrap()
        .unwrap();
    store
        .set_worker_process(b.id, None, other, Some(i64::try_from(pid_start_time(other)).unwrap()), "o", "l")
        .await
        .unwrap();
    store.end_worker_session(b.id, None, &WorkerEnd::new(EndReason::HostLost)).await.unwrap();

    let mut alpha = host_runner(tmp.path(), &store, "alpha", "local", 2);
    alpha.register().await.unwrap();
    let stopped = (0..100).find_map(|_| {
        let status = orphan.try_wait().unwrap();
        if status.is_none() {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        status
    });
    if stopped.is_none() {
        orphan.kill().unwrap();
    }
    assert!(stopped.is_some_and(|s| !s.success()), "the orphan was not stopped: {stopped:?}");
    assert!(is_alive(other), "beta's agent is beta's");
    elsewhere.kill().unwrap();
    let _ = elsewhere.wait();
}

/// The agent's output as a Claude Code worker writes it (stream-json), one line per event.
fn claude_lines(lines: &[&str]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[tokio::test]
async fn what_a_lost_agent_spent_after_its_session_ended_goes_on_its_run_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, runs) = store_with_runs(tmp.path(), 1).await;
    let run = &runs[0];
    // Where the host's runner keeps a worker's files: it reads no recorded path outside them.
    let data = tmp.path().join("data-alpha");
    let (out, log) = (data.join("workers/w1/output.log"), data.join("logs/w1/in_progress.md"));
    for dir in [out.parent().unwrap(), log.parent().unwrap()] {
        std::fs::create_dir_all(dir).unwrap();
    }
    // What its supervisor had read when the runner was declared lost: $0.25 so far.
    let read = claude_lines(&[
        r#"{"type":"system","subtype":"init","session_id":"lost-1","model":"claude-fake-1","tools":[]}"#,
    ]);
    std::fs::write(&out, &read).unwrap();
    std::fs::write(&log, "# in_progress\n").unwrap();
    // A process that is gone by now: the agent ended by itself, or a runner of the host stopped it.
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = i32::try_from(gone.id()).unwrap();
    let start = i64::try_from(pid_start_time(pid)).unwrap();
    gone.wait().unwrap();
    let s = store
        .begin_worker_session(run.id, WorkerKind::InProgress, "claude", "alpha", &SessionStart::default())
        .await
        .unwrap()
        .unwrap();
    let (out_s, log_s) = (out.to_str().unwrap(), log.to_str().unwrap());
    store.set_worker_process(s.id, None, pid, Some(start), out_s, log_s).await.unwrap();
    store.set_worker_usage(s.id, None, Some(0.25), 10, 20, false).await.unwrap();
    store.touch_worker_output(s.id, None, chrono::Utc::now(), read.len() as i64).await.unwrap();
    store.end_worker_session(s.id, None, &WorkerEnd::new(EndReason::HostLost)).await.unwrap();
    assert!((store.run(run.id).await.unwrap().cost_usd - 0.25).abs() < 1e-9);
    // It ran on, unsupervised, to its result: $0.75 in all.
    let more = claude_lines(&[
        r#"{"type":"assistant","session_id":"lost-1","message":{"content":[{"type":"text","text":"more work"}]}}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"ok","session_id":"lost-1","total_cost_usd":0.75,"usage":{"input_tokens":30,"output_tokens":60}}"#,
    ]);
    std::fs::write(&out, format!("{read}{more}")).unwrap();

    let claude = "agent = \"claude\"\nsandbox = \"off\"";
    for _ in 0..2 {
        // Every runner of the host looks as it starts; the second finds it settled.
        let mut alpha = host_runner_with(tmp.path(), &store, "alpha", "local", 2, claude);
        alpha.register().await.unwrap();
    }
    let session = store.worker_session(s.id).await.unwrap();
    assert!((session.cost_usd - 0.75).abs() < 1e-9, "session: {}", session.cost_usd);
    assert_eq!((session.input_tokens, session.output_tokens), (30, 60));
    assert_eq!(session.output_offset, (read.len() + more.len()) as i64);
    let cost = store.run(run.id).await.unwrap().cost_usd;
    assert!((cost - 0.75).abs() < 1e-9, "the run has ${cost}, its agent spent $0.75");
    assert!(std::fs::read_to_string(&log).unwrap().contains("ran on after its runner was declared lost"));
}

#[tokio::test]
async fn a_runner_whose_own_tick_finds_it_lost_stops_and_takes_nothing_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, runs) = store_with_runs(tmp.path(), 1).await;
    let run = runs[0].id;
    let mut alpha = host_runner(tmp.path(), &store, "alpha", "local", 2);
    alpha.register().await.unwrap();
    alpha.claim().await.unwrap();
    assert_eq!(store.run(run).await.unwrap().lease_owner.as_deref(), Some(alpha.owner.as_str()));
    // Frozen, as a laptop sleeps: its heartbeat stops and its lease lapses by the database's clock.
    if let Some(beat) = alpha.heartbeat.take() {
        beat.abort();
    }
    // A beat already under way runs to its end (see `cluster::beat`): this one must come after it.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    store.heartbeat(&alpha.owner, std::time::Duration::from_millis(200)).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    // Thawed: its own tick sees the lapse first (soak finding: it then took its freed runs straight
    // back, and its supervisors' reads passed the lease fence).
    let lost = alpha.reconcile().await;
    assert!(matches!(lost, Err(RunnerError::Lost(_))), "{lost:?}");
    assert_eq!(store.run(run).await.unwrap().lease_owner, None, "its run is free for another runner");
    alpha.claim().await.unwrap();
    assert_eq!(store.run(run).await.unwrap().lease_owner, None, "and not taken back by the lost one");
}
