//! A supervisor that dies leaves its agent running; a new one adopts it from what was persisted.

#[path = "worker_support/mod.rs"]
mod common;

use std::time::Duration;

use common::*;
use executor::domain::{TaskGid, WorkerKind};
use executor::worker::{self, AdoptSpec, EndReason, WorkerError, WorkerUpdate};
use tokio::sync::{mpsc, watch};

fn adopt_spec(sb: &Sandbox, updates: &[WorkerUpdate]) -> AdoptSpec {
    let (pid, pid_start_time, output_path, log_path, started_at) = updates
        .iter()
        .find_map(|u| match u {
            WorkerUpdate::Started { pid, pid_start_time, output_path, log_path, started_at } => {
                Some((*pid, *pid_start_time, output_path.clone(), log_path.clone(), *started_at))
            }
            _ => None,
        })
        .expect("Started");
    let offset = updates
        .iter()
        .filter_map(|u| match u {
            WorkerUpdate::Output { offset, .. } => Some(*offset),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let _ = sb;
    AdoptSpec {
        task_gid: TaskGid::parse("1207").unwrap(),
        run_id: 42,
        kind: WorkerKind::Queued.into(),
        agent: claude("claude.sh"),
        pid,
        pid_start_time,
        output_path,
        offset,
        log_path,
        started_at,
        cost_cap_usd: None,
        secrets: vec![SECRET.into()],
        timeouts: short_timeouts(),
        max_output_bytes: 256 * 1024 * 1024,
        pricing: Default::default(),
        usage_baseline: Default::default(),
        session_root: None,
    }
}

#[tokio::test]
async fn a_worker_outlives_its_supervisor_and_is_adopted() {
    let sb = Sandbox::new();
    // About 3 s of heartbeats, then the result.
    let spec = sb.spec(
        claude("claude.sh"),
        WorkerKind::Queued,
        &[("FAKE_SLEEP", "1".into()), ("FAKE_ECHO_ENV", "GH_TOKEN".into()), ("GH_TOKEN", SECRET.into())],
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_stop, stop_rx) = watch::channel(false);
    let supervisor = tokio::spawn(worker::run(spec, tx, stop_rx));
    // Let it produce some output, then "crash" the supervisor.
    let mut seen = Vec::new();
    while !seen.iter().any(|u| matches!(u, WorkerUpdate::SessionId(_))) {
        seen.push(rx.recv().await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    supervisor.abort();
    let _ = supervisor.await;
    while let Ok(u) = rx.try_recv() {
        seen.push(u);
    }
    let spec = adopt_spec(&sb, &seen);
    assert!(worker::is_same_process(spec.pid, spec.pid_start_time), "the agent must survive its supervisor");

    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_stop, stop_rx) = watch::channel(false);
    let o = worker::adopt(spec.clone(), tx, stop_rx).await.unwrap();
    assert_eq!(o.reason, EndReason::Finished, "{o:?}");
    assert_eq!(o.exit_code, None, "an adopted process's exit status cannot be collected");
    assert_eq!(o.session_id.as_deref(), Some("sess-1234-abcd"));
    assert_eq!(o.cost_usd, Some(0.1234));
    assert_eq!(o.log_path, spec.log_path);
    let mut adopted_updates = Vec::new();
    while let Ok(u) = rx.try_recv() {
        adopted_updates.push(u);
    }
    assert!(matches!(adopted_updates.last(), Some(WorkerUpdate::Ended(_))));

    let text = read(&o.log_path);
    assert!(text.contains("adopted the running worker"));
    assert_eq!(text.matches("# Work log:").count(), 1);
    assert_eq!(text.matches("## Outcome").count(), 1);
    // Nothing was logged twice: the adopter resumed at the persisted offset.
    assert_eq!(text.matches("### Assistant\n\nDone: the change is committed.").count(), 1, "{text}");
    assert_eq!(text.matches("I will look at the repository first.").count(), 1, "{text}");
    assert_eq!(text.matches("**Session** `sess-1234-abcd`").count(), 1, "{text}");
    assert!(!text.contains(SECRET));
    assert_no_leftovers(spec.pid);
}

#[tokio::test]
async fn a_pid_with_the_wrong_start_time_is_refused() {
    let sb = Sandbox::new();
    let spec = sb.spec(claude("silent.sh"), WorkerKind::Queued, &[]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop, stop_rx) = watch::channel(false);
    let supervisor = tokio::spawn(worker::run(spec, tx, stop_rx));
    let mut seen = vec![rx.recv().await.unwrap()];
    while let Ok(u) = rx.try_recv() {
        seen.push(u);
    }
    let mut spec = adopt_spec(&sb, &seen);
    spec.pid_start_time += 1;
    let (tx2, _rx2) = mpsc::unbounded_channel();
    let (_s, srx) = watch::channel(false);
    let err = worker::adopt(spec.clone(), tx2, srx).await.unwrap_err();
    assert!(matches!(err, WorkerError::NotOurProcess { .. }), "{err}");
    // Refusing did not touch the process: it is still alive.
    assert!(worker::is_same_process(spec.pid, spec.pid_start_time - 1));
    stop.send(true).unwrap();
    let o = supervisor.await.unwrap().unwrap();
    assert_eq!(o.reason, EndReason::Interrupted);
}

#[tokio::test]
async fn a_dead_worker_is_collected_from_its_output() {
    let sb = Sandbox::new();
    let spec = sb.spec(claude("claude.sh"), WorkerKind::Queued, &[("FAKE_SLEEP", "1".into())]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_stop, stop_rx) = watch::channel(false);
    let supervisor = tokio::spawn(worker::run(spec, tx, stop_rx));
    let mut seen = vec![rx.recv().await.unwrap()];
    supervisor.abort();
    let _ = supervisor.await;
    while let Ok(u) = rx.try_recv() {
        seen.push(u);
    }
    let spec = adopt_spec(&sb, &seen);
    // Wait for the orphaned agent to finish on its own.
    for _ in 0..100 {
        if !worker::is_same_process(spec.pid, spec.pid_start_time) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (tx, _rx) = mpsc::unbounded_channel();
    let (_s, srx) = watch::channel(false);
    assert!(matches!(
        worker::adopt(spec.clone(), tx.clone(), srx).await,
        Err(WorkerError::NotOurProcess { .. })
    ));
    let o = worker::collect(spec, tx).await.unwrap();
    assert_eq!(o.reason, EndReason::Finished);
    assert_eq!(o.session_id.as_deref(), Some("sess-1234-abcd"));
    assert!(read(&o.log_path).contains("found the worker gone"));
}

/// The last lines before a pause used to be logged but not covered by the persisted offset (offsets
/// were sent at most once a second, and only when more output came), so whoever adopted the worker
/// during the pause logged them again.
#[tokio::test]
async fn lines_logged_before_a_pause_are_not_logged_again_by_the_adopter() {
    let sb = Sandbox::new();
    // The tool result comes 0.3 s after the first lines, then 1.5 s of silence, then the end.
    let spec = sb.spec(claude("claude.sh"), WorkerKind::Queued, &[("FAKE_QUIET", "1.5".into())]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_stop, stop_rx) = watch::channel(false);
    let supervisor = tokio::spawn(worker::run(spec, tx, stop_rx));
    let mut seen = vec![rx.recv().await.unwrap()];
    let WorkerUpdate::Started { log_path, .. } = &seen[0] else { panic!("{seen:?}") };
    let log_path = log_path.clone();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !read(&log_path).contains("Tool output (toolu_01)") {
        assert!(std::time::Instant::now() < deadline, "the tool output was never logged");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A few polls into the silence, the supervisor dies.
    tokio::time::sleep(Duration::from_millis(400)).await;
    supervisor.abort();
    let _ = supervisor.await;
    while let Ok(u) = rx.try_recv() {
        seen.push(u);
    }
    let spec = adopt_spec(&sb, &seen);
    let (tx, _rx) = mpsc::unbounded_channel();
    let (_s, srx) = watch::channel(false);
    let o = worker::adopt(spec, tx, srx).await.unwrap();
    assert_eq!(o.reason, EndReason::Finished, "{o:?}");
    let text = read(&o.log_path);
    assert!(text.contains("adopted the running worker"), "{text}");
    assert_eq!(text.matches("Tool output (toolu_01)").count(), 1, "{text}");
    assert_eq!(text.matches("#### Tool call: `Bash` (toolu_01)").count(), 1, "{text}");
}

/// Runs a `command` agent (`slow_command.sh`) until it printed its progress, then lets its supervisor
/// die; returns what an adopter knows of it.
async fn orphaned_command(sb: &Sandbox, sleep: &str) -> AdoptSpec {
    let spec = sb.spec(command("slow_command.sh"), WorkerKind::Queued, &[("FAKE_SLEEP", sleep.into())]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_stop, stop_rx) = watch::channel(false);
    let supervisor = tokio::spawn(worker::run(spec, tx, stop_rx));
    let mut seen = vec![rx.recv().await.unwrap()];
    let WorkerUpdate::Started { output_path, .. } = &seen[0] else { panic!("{seen:?}") };
    let output_path = output_path.clone();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&output_path).unwrap_or_default().contains("progress") {
        assert!(std::time::Instant::now() < deadline, "the agent printed nothing");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    supervisor.abort();
    let _ = supervisor.await;
    while let Ok(u) = rx.try_recv() {
        seen.push(u);
    }
    AdoptSpec { kind: WorkerKind::Queued.into(), agent: command("slow_command.sh"), ..adopt_spec(sb, &seen) }
}

async fn gone(spec: &AdoptSpec) {
    for _ in 0..100 {
        if !worker::is_same_process(spec.pid, spec.pid_start_time) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the agent is still running");
}

/// Issue 21, item 3: a `command` agent killed with SIGKILL while no runner watched it was collected as
/// `finished`: its exit status cannot be known (not our child), and a command's output always "had a
/// result". Its output ends before its result line, so it crashed.
#[tokio::test]
async fn a_command_agent_killed_while_unwatched_is_collected_as_crashed() {
    let sb = Sandbox::new();
    let spec = orphaned_command(&sb, "30").await;
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(spec.pid), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    gone(&spec).await;
    let (tx, _rx) = mpsc::unbounded_channel();
    let o = worker::collect(spec, tx).await.unwrap();
    assert_eq!(o.exit_code, None);
    assert_eq!(o.reason, EndReason::Crashed, "{o:?}");
}

/// The same agent killed while adopted: still not finished.
#[tokio::test]
async fn a_command_agent_killed_while_adopted_is_not_finished() {
    let sb = Sandbox::new();
    let spec = orphaned_command(&sb, "30").await;
    let (tx, _rx) = mpsc::unbounded_channel();
    let (_s, srx) = watch::channel(false);
    let adopted = tokio::spawn(worker::adopt(spec.clone(), tx, srx));
    tokio::time::sleep(Duration::from_millis(300)).await;
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(spec.pid), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    let o = adopted.await.unwrap().unwrap();
    assert_eq!(o.reason, EndReason::Crashed, "{o:?}");
}

/// A command agent that ended on its own after its result line is finished, exit status or not.
#[tokio::test]
async fn a_command_agent_that_printed_its_result_line_is_collected_as_finished() {
    let sb = Sandbox::new();
    let spec = orphaned_command(&sb, "1").await;
    gone(&spec).await;
    let (tx, _rx) = mpsc::unbounded_channel();
    let o = worker::collect(spec, tx).await.unwrap();
    assert_eq!(o.reason, EndReason::Finished, "{o:?}");
}
