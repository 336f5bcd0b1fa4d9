//! Watchdogs and process-group hygiene: idle and hard timeouts, interruption, leftover grandchildren.

#[path = "worker_support/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;
use executor::domain::WorkerKind;
use executor::worker::{self, EndReason, WorkerUpdate};
use tokio::sync::{mpsc, watch};

#[tokio::test]
async fn silence_trips_the_idle_watchdog_and_the_group_is_killed() {
    let sb = Sandbox::new();
    let mut spec = sb.spec(claude("silent.sh"), WorkerKind::Queued, &[]);
    spec.timeouts.idle = Duration::from_secs(1);
    let began = Instant::now();
    let (o, updates) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::IdleTimeout);
    assert!(o.reason.counts_as_stuck());
    assert_eq!(o.session_id.as_deref(), Some("silent-1"));
    // 1 s idle + at most the 0.5 s grace (sleep dies on SIGTERM) + polling.
    assert!(began.elapsed() < Duration::from_secs(5), "took {:?}", began.elapsed());
    let text = read(&o.log_path);
    assert!(text.contains("no output for the idle timeout"), "{text}");
    let pid = started_pid(&updates);
    assert!(is_dead(pid));
    assert_no_leftovers(pid);
}

#[tokio::test]
async fn busy_but_endless_work_hits_the_hard_timeout() {
    let sb = Sandbox::new();
    // Prints a heartbeat every second for 30 s: never idle, but too long.
    let mut spec = sb.spec(claude("claude.sh"), WorkerKind::Queued, &[("FAKE_SLEEP", "30".into())]);
    spec.timeouts.idle = Duration::from_secs(5);
    spec.timeouts.hard = Duration::from_millis(1500);
    let began = Instant::now();
    let (o, updates) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::HardTimeout);
    assert!(began.elapsed() < Duration::from_secs(6), "took {:?}", began.elapsed());
    assert!(read(&o.log_path).contains("ran past the hard timeout"));
    assert_no_leftovers(started_pid(&updates));
}

#[tokio::test]
async fn a_grandchild_left_behind_is_killed_with_the_group() {
    let sb = Sandbox::new();
    let pid_file = sb.path("grandchild.pid");
    let spec = sb.spec(
        command("grandchild.sh"),
        WorkerKind::Queued,
        &[("FAKE_PID_FILE", pid_file.display().to_string())],
    );
    let (o, updates) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::Finished);
    let grandchild: i32 = read(&pid_file).trim().parse().unwrap();
    assert!(is_dead(grandchild), "grandchild {grandchild} survived the worker");
    assert_no_leftovers(started_pid(&updates));
    assert!(read(&o.log_path).contains("left 1 process(es) in its group"));
}

#[tokio::test]
async fn the_caller_can_interrupt_a_worker() {
    let sb = Sandbox::new();
    let spec = sb.spec(claude("silent.sh"), WorkerKind::Queued, &[]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop, stop_rx) = watch::channel(false);
    let handle = tokio::spawn(worker::run(spec, tx, stop_rx));
    // Wait until the agent has said something, then stop it.
    loop {
        match rx.recv().await {
            Some(WorkerUpdate::SessionId(_)) => break,
            Some(_) => {}
            None => panic!("worker ended before its session id"),
        }
    }
    stop.send(true).unwrap();
    let o = handle.await.unwrap().unwrap();
    assert_eq!(o.reason, EndReason::Interrupted);
    assert!(read(&o.log_path).contains("interrupted by executor"));
}

#[tokio::test]
async fn sigterm_is_followed_by_sigkill_after_the_grace_period() {
    let sb = Sandbox::new();
    let mut spec = sb.spec(claude("stubborn.sh"), WorkerKind::Queued, &[]);
    spec.timeouts.idle = Duration::from_millis(500);
    spec.timeouts.grace = Duration::from_millis(700);
    let began = Instant::now();
    let (o, updates) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::IdleTimeout);
    // It had to wait out the grace period before SIGKILL.
    assert!(began.elapsed() >= Duration::from_millis(1200), "took {:?}", began.elapsed());
    let pid = started_pid(&updates);
    assert!(is_dead(pid));
    assert_no_leftovers(pid);
}
