//! Issue 31, item 6: stopping a worker stops every process its agent started, also those in a session
//! of their own (Claude Code runs each Bash tool command under `setsid`) and those already reparented.
//! Before, only the agent's process group was signalled: a detached command committed to the run's
//! branch after its worker had been stopped. The work log says what was stopped.

#[path = "worker_support/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use executor::domain::{TaskGid, WorkerKind};
use executor::worker::{self, AdoptSpec, EndReason, WorkerOutcome, WorkerSpec, WorkerUpdate, process};
use tokio::sync::{mpsc, watch};

/// What the detached child would do after this long, were it not stopped.
const CHILD_DELAY_SECS: u64 = 2;

struct Detached {
    pid_file: PathBuf,
    marker: PathBuf,
}

fn detach_spec(sb: &Sandbox, exit_at_once: bool) -> (WorkerSpec, Detached) {
    sb.git_init();
    let d = Detached { pid_file: sb.path("child.pid"), marker: sb.path("escaped") };
    let mut env = vec![
        ("FAKE_PID_FILE", d.pid_file.display().to_string()),
        ("FAKE_MARKER", d.marker.display().to_string()),
        ("FAKE_DELAY", CHILD_DELAY_SECS.to_string()),
    ];
    if exit_at_once {
        env.push(("FAKE_EXIT", "1".into()));
    }
    let mut spec = sb.spec(command("detach.sh"), WorkerKind::Queued, &env);
    spec.env.pass = vec!["PATH".into()];
    (spec, d)
}

/// Waits (without a bound on time the test asserts) for the detached child to say it runs.
async fn child_pid(d: &Detached) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = std::fs::read_to_string(&d.pid_file).ok().and_then(|s| s.trim().parse().ok()) {
            return pid;
        }
        assert!(Instant::now() < deadline, "the detached child never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The child is gone now, and what it would have done later never happens: not the marker file, not
/// the commit.
async fn assert_child_stopped(sb: &Sandbox, d: &Detached, child: i32) {
    let alive = !is_dead(child);
    if alive {
        // Do not leave it to commit into the next test's world.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child), nix::sys::signal::Signal::SIGKILL);
    }
    assert!(!alive, "the detached child {child} outlived its worker");
    tokio::time::sleep(Duration::from_secs(CHILD_DELAY_SECS + 2)).await;
    assert!(!d.marker.exists(), "the detached child acted after its worker was stopped");
    assert_eq!(commits(&sb.worktree), 1, "the detached child committed after its worker was stopped");
}

fn commits(repo: &Path) -> usize {
    let out = Command::new("git").args(["rev-list", "--count", "HEAD"]).current_dir(repo).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// The work log's end names the stopped child by name and pid.
fn assert_logged(o: &WorkerOutcome, child: i32) {
    let log = read(&o.log_path);
    assert!(log.contains("**Stopped:**"), "{log}");
    assert!(log.contains(&format!("sh ({child})")), "the work log does not name the child {child}:\n{log}");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn under_the_sandbox_a_child_that_hides_cannot_leave_its_cgroup_and_is_stopped() {
    use executor::config::SandboxMode;
    use executor::worker::Sandbox as Contained;
    use executor::worker::sandbox::{self, Support};
    if let Support::Missing(why) = sandbox::support() {
        eprintln!("skipped: {why}");
        return;
    }
    let sb = Sandbox::new();
    sb.git_init();
    // In the worktree: the contained agent writes nowhere else.
    let d = Detached { pid_file: sb.worktree.join("child.pid"), marker: sb.worktree.join("escaped") };
    let env = [
        ("FAKE_PID_FILE", d.pid_file.display().to_string()),
        ("FAKE_MARKER", d.marker.display().to_string()),
        ("FAKE_DELAY", CHILD_DELAY_SECS.to_string()),
        ("FAKE_HIDE", "1".to_string()),
    ];
    let mut spec = sb.spec(command("detach.sh"), WorkerKind::Queued, &env);
    spec.env.pass = vec!["PATH".into()];
    spec.sandbox = Contained::for_mode(SandboxMode::Landlock, [sb.worktree.clone()]);
    let (tx, _rx) = mpsc::unbounded_channel();
    let (stop, stop_rx) = watch::channel(false);
    let worker = tokio::spawn(worker::run(spec, tx, stop_rx));
    let child = child_pid(&d).await;
    let cgroup = std::fs::read_to_string(format!("/proc/{child}/cgroup")).unwrap_or_default();
    stop.send(true).unwrap();
    let o = worker.await.unwrap().unwrap();
    let tried = read(&sb.worktree.join("child.pid.cgroup"));
    let in_worker_cgroup = cgroup.contains("executor-worker-");
    if !in_worker_cgroup {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child), nix::sys::signal::Signal::SIGKILL);
    }
    if !cgroup_creatable() {
        // Not root, no delegated subtree: an orphan with a cleared environment is what the /proc
        // search cannot find, as the documentation of `worker::tree` says.
        eprintln!("skipped: no cgroup v2 can be created here");
        return;
    }
    assert!(in_worker_cgroup, "the agent's child is not in a worker cgroup: {cgroup}");
    assert_eq!(tried.trim(), "stayed", "the contained child moved itself out of its cgroup");
    assert_child_stopped(&sb, &d, child).await;
    let log = read(&o.log_path);
    assert!(
        log.contains(&format!("hide.sh ({child})")),
        "the work log does not name the child {child}:\n{log}"
    );
}

#[tokio::test]
async fn a_cancelled_worker_takes_its_detached_child_with_it() {
    let sb = Sandbox::new();
    let (spec, d) = detach_spec(&sb, false);
    let (tx, _rx) = mpsc::unbounded_channel();
    let (stop, stop_rx) = watch::channel(false);
    let worker = tokio::spawn(worker::run(spec, tx, stop_rx));
    let child = child_pid(&d).await;
    stop.send(true).unwrap();
    let o = worker.await.unwrap().unwrap();
    assert_eq!(o.reason, EndReason::Interrupted);
    assert_child_stopped(&sb, &d, child).await;
    assert_logged(&o, child);
}

#[tokio::test]
async fn a_timed_out_worker_takes_its_detached_child_with_it() {
    let sb = Sandbox::new();
    let (mut spec, d) = detach_spec(&sb, false);
    // Its only output is the result line: it goes silent while the child sleeps.
    spec.timeouts.idle = Duration::from_millis(300);
    let (o, _updates) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::IdleTimeout);
    let child = child_pid(&d).await;
    assert_child_stopped(&sb, &d, child).await;
    assert_logged(&o, child);
}

#[tokio::test]
async fn an_agent_that_ends_leaves_nothing_running() {
    let sb = Sandbox::new();
    let (spec, d) = detach_spec(&sb, true);
    let (o, _updates) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::Finished, "the agent's own end is still a finished worker");
    let child = child_pid(&d).await;
    assert_child_stopped(&sb, &d, child).await;
    assert_logged(&o, child);
}

#[tokio::test]
async fn the_orphans_of_a_dead_agent_go_when_its_worker_is_collected() {
    let sb = Sandbox::new();
    let (spec, d) = detach_spec(&sb, false);
    // The runner dies, then the agent (the OOM killer, say): its child is an orphan nobody watches.
    let (child, seen) = start_and_lose_the_supervisor(spec, &d).await;
    let spec = adopt_spec(&seen);
    process::signal_group(spec.pid, nix::sys::signal::Signal::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(30);
    while process::is_same_process(spec.pid, spec.pid_start_time) {
        assert!(Instant::now() < deadline, "the agent did not die");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!is_dead(child), "the detached child must be alive before the worker is collected");

    // A restarted runner finds the worker gone and collects it.
    let (tx, _rx) = mpsc::unbounded_channel();
    let o = worker::collect(spec, tx).await.unwrap();
    assert_child_stopped(&sb, &d, child).await;
    assert_logged(&o, child);
}

#[tokio::test]
async fn a_runner_that_adopts_a_worker_and_stops_it_takes_the_detached_child_too() {
    let sb = Sandbox::new();
    let (spec, d) = detach_spec(&sb, false);
    let (child, seen) = start_and_lose_the_supervisor(spec, &d).await;

    // A restarted runner adopts the live agent, then stops it (the run was abandoned, say).
    let (tx, _rx) = mpsc::unbounded_channel();
    let (stop, stop_rx) = watch::channel(false);
    let adopted = tokio::spawn(worker::adopt(adopt_spec(&seen), tx, stop_rx));
    stop.send(true).unwrap();
    let o = adopted.await.unwrap().unwrap();
    assert_eq!(o.reason, EndReason::Interrupted);
    assert_child_stopped(&sb, &d, child).await;
    assert_logged(&o, child);
}

#[tokio::test]
async fn the_output_writer_does_not_carry_the_runners_command_line() {
    let sb = Sandbox::new();
    let (spec, d) = detach_spec(&sb, false);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop, stop_rx) = watch::channel(false);
    let worker = tokio::spawn(worker::run(spec, tx, stop_rx));
    child_pid(&d).await;
    let pid = loop {
        if let Some(WorkerUpdate::Started { pid, .. }) = rx.recv().await {
            break pid;
        }
    };
    let writers: Vec<i32> = process::group_members(pid)
        .into_iter()
        .filter(|p| read(Path::new(&format!("/proc/{p}/comm"))).trim() == "executor-output")
        .collect();
    let cmdlines: Vec<Vec<u8>> =
        writers.iter().map(|p| std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default()).collect();
    stop.send(true).unwrap();
    worker.await.unwrap().unwrap();

    assert_eq!(writers.len(), 1, "one output writer in the agent's group");
    let cmdline = String::from_utf8_lossy(&cmdlines[0]).into_owned();
    let own = std::env::args().next().unwrap();
    assert!(!cmdline.contains(&own), "the writer shows its parent's command line: {cmdline:?}");
    assert_eq!(cmdline.trim_end_matches('\0'), "executor-output");
}

fn adopt_spec(updates: &[WorkerUpdate]) -> AdoptSpec {
    let (pid, pid_start_time, output_path, log_path, started_at) = updates
        .iter()
        .find_map(|u| match u {
            WorkerUpdate::Started { pid, pid_start_time, output_path, log_path, started_at } => {
                Some((*pid, *pid_start_time, output_path.clone(), log_path.clone(), *started_at))
            }
            _ => None,
        })
        .expect("Started");
    AdoptSpec {
        task_gid: TaskGid::parse("1207").unwrap(),
        run_id: 42,
        kind: WorkerKind::Queued.into(),
        agent: command("detach.sh"),
        pid,
        pid_start_time,
        output_path,
        offset: 0,
        log_path,
        started_at,
        cost_cap_usd: None,
        secrets: vec![],
        timeouts: short_timeouts(),
        max_output_bytes: 256 * 1024 * 1024,
        pricing: Default::default(),
        usage_baseline: Default::default(),
        session_root: None,
    }
}

/// Whether this process may create a cgroup v2 beneath its own, as executor does for each worker.
#[cfg(target_os = "linux")]
fn cgroup_creatable() -> bool {
    let own = read(Path::new("/proc/self/cgroup"));
    let Some(own) = own.lines().find_map(|l| l.strip_prefix("0::")) else { return false };
    let mounts = read(Path::new("/proc/self/mountinfo"));
    let Some(mount) = mounts.lines().find_map(|l| {
        let (before, after) = l.split_once(" - ")?;
        (after.split_whitespace().next()? == "cgroup2")
            .then(|| before.split_whitespace().nth(4).map(String::from))?
    }) else {
        return false;
    };
    let probe =
        Path::new(&mount).join(own.trim_start_matches('/')).join(format!("probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    made
}

/// Starts the worker, waits for the agent's detached child, then drops its supervisor as a dying runner
/// would (the agent runs on). Returns the child's pid and the updates the supervisor sent.
async fn start_and_lose_the_supervisor(spec: WorkerSpec, d: &Detached) -> (i32, Vec<WorkerUpdate>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_stop, stop_rx) = watch::channel(false);
    let supervisor = tokio::spawn(worker::run(spec, tx, stop_rx));
    let child = child_pid(d).await;
    supervisor.abort();
    let _ = supervisor.await;
    let mut seen = Vec::new();
    while let Ok(u) = rx.try_recv() {
        seen.push(u);
    }
    (child, seen)
}
