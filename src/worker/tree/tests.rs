//! The stop without a cgroup: descendants in other sessions (the agent their subreaper), and a dead
//! agent's orphans found by their marker.

use std::os::unix::process::CommandExt;

use super::*;

/// A fake agent without a cgroup (none is created here): its own group, a subreaper, the marker
/// when `marked`, and two processes that left its group and session — one its child, one orphaned
/// by a subshell. Returns the agent and the pids of the two, once they run.
fn agent_with_detached_children(dir: &Path, marked: bool) -> (std::process::Child, Vec<i32>) {
    let pids = dir.join("pids");
    let script = r#"
        setsid sh -c 'echo $$ >> "$PIDS"; exec sleep 1000' < /dev/null > /dev/null 2>&1 &
        ( setsid sh -c 'echo $$ >> "$PIDS"; exec sleep 1001' < /dev/null > /dev/null 2>&1 & )
        exec sleep 1002
    "#;
    let mut command = std::process::Command::new("/bin/sh");
    command.args(["-c", script]).env("PIDS", &pids).process_group(0);
    if marked {
        command.env(MARKER_ENV, token(dir));
    }
    // SAFETY: only the prctl of `enter`.
    unsafe { command.pre_exec(|| enter(None)) };
    let child = command.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let found = loop {
        let found: Vec<i32> = std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if found.len() == 2 && found.iter().all(|p| process::is_alive(*p)) {
            break found;
        }
        assert!(std::time::Instant::now() < deadline, "the detached children never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    (child, found)
}

fn assert_all_gone(pids: &[i32]) {
    let alive: Vec<i32> = pids.iter().copied().filter(|p| process::is_alive(*p)).collect();
    for pid in &alive {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
    }
    assert!(alive.is_empty(), "left running: {alive:?}");
}

#[tokio::test]
async fn without_a_cgroup_the_agents_descendants_in_other_sessions_are_stopped() {
    let dir = tempfile::tempdir().unwrap();
    // No marker either: found as descendants, the orphan because the agent is its subreaper.
    let (mut agent, detached) = agent_with_detached_children(dir.path(), false);
    let leader = agent.id() as i32;
    let tree = WorkerTree::of_worker(Some((leader, process::pid_start_time(leader))), dir.path());
    assert!(tree.cgroup.is_none());
    let stopped = tree
        .stop(Duration::from_millis(200), || {
            let _ = agent.try_wait();
        })
        .await;
    assert_all_gone(&[vec![leader], detached.clone()].concat());
    let named: Vec<i32> = stopped.iter().map(|p| p.pid).collect();
    assert_eq!(named.first(), Some(&leader), "the agent comes first: {stopped:?}");
    assert!(detached.iter().all(|p| named.contains(p)), "{stopped:?}");
    assert!(stopped.iter().filter(|p| detached.contains(&p.pid)).all(|p| !p.in_group));
}

#[tokio::test]
async fn the_orphans_of_a_dead_agent_are_found_by_their_marker() {
    let dir = tempfile::tempdir().unwrap();
    let (mut agent, detached) = agent_with_detached_children(dir.path(), true);
    agent.kill().unwrap();
    agent.wait().unwrap();
    assert!(detached.iter().all(|p| process::is_alive(*p)));
    // What a runner that collects the worker knows: its files, not its (dead) agent.
    let stopped = WorkerTree::of_worker(None, dir.path()).stop(Duration::from_millis(200), || {}).await;
    assert_all_gone(&detached);
    assert_eq!(stopped.len(), 2, "{stopped:?}");
}

#[test]
fn describes_what_was_stopped() {
    let p = |pid, name: &str| StoppedProcess { pid, name: name.into(), in_group: true };
    assert_eq!(
        describe(&[p(123, "claude"), p(130, "bash"), p(131, "git")]),
        "3 processes: claude (123), bash (130), git (131)"
    );
    assert_eq!(describe(&[p(7, "sleep")]), "1 process: sleep (7)");
}
