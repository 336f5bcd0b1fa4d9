//! A runner declared lost and then killed before it could stop its agents leaves them running, their
//! sessions ended as `host_lost`: the next runner of the host stops them as it starts (soak finding).

use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::domain::{EndReason, WorkerKind};
use crate::runner::test_hosts::{host_runner, store_with_runs};
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
