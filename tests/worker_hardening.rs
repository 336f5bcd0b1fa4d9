//! Issue 7, the worker side: an agent acts only once released, output cannot defeat the watchdog or
//! fill the disk, and usage is counted even for workers that never report it.

#[path = "worker_support/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;
use executor::domain::{TaskGid, WorkerKind};
use executor::worker::{
    self, AdoptSpec, AgentConfig, CommandConfig, EndReason, Pending, WorkerError, WorkerSpec, WorkerUpdate,
    process,
};
use tokio::sync::{mpsc, watch};

fn adopt_spec_of(p: &Pending, spec: &WorkerSpec) -> AdoptSpec {
    AdoptSpec {
        task_gid: TaskGid::parse("1207").unwrap(),
        run_id: 42,
        kind: spec.kind,
        agent: spec.agent.clone(),
        pid: p.pid(),
        pid_start_time: p.pid_start_time(),
        output_path: p.output_path().to_path_buf(),
        offset: 0,
        log_path: p.log_path().to_path_buf(),
        started_at: p.started_at(),
        cost_cap_usd: None,
        secrets: vec![],
        timeouts: short_timeouts(),
        max_output_bytes: spec.max_output_bytes,
        pricing: Default::default(),
        usage_baseline: Default::default(),
        session_root: None,
    }
}

fn commits(sb: &Sandbox) -> usize {
    let out = std::process::Command::new("git")
        .args(["rev-list", "--count", "HEAD"])
        .current_dir(&sb.worktree)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[tokio::test]
async fn a_started_agent_does_nothing_until_released() {
    let sb = Sandbox::new();
    sb.git_init();
    let prompt_copy = sb.path("prompt-received.md");
    let spec = sb.spec(
        claude("claude.sh"),
        WorkerKind::Queued,
        &[("FAKE_PROMPT_FILE", prompt_copy.display().to_string()), ("FAKE_COMMIT", "1".into())],
    );
    let pending = worker::start(spec).unwrap();
    // The process exists and can be identified (what the runner records)…
    assert!(worker::is_same_process(pending.pid(), pending.pid_start_time()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    // …but the agent has not run: no prompt read, no output, no commit.
    assert!(!prompt_copy.exists());
    assert_eq!(std::fs::metadata(pending.output_path()).unwrap().len(), 0);
    assert_eq!(commits(&sb), 1);

    let (pid, start) = (pending.pid(), pending.pid_start_time());
    let (tx, _rx) = mpsc::unbounded_channel();
    let (_stop, stop_rx) = watch::channel(false);
    let o = pending.release(tx, stop_rx).await;
    assert_eq!(o.reason, EndReason::Finished, "{o:?}");
    assert_eq!(commits(&sb), 2);
    assert!(read(&prompt_copy).contains("PROMPT-MARKER-7f3a"));
    assert!(!worker::is_same_process(pid, start));
}

/// A runner killed after recording the process but before releasing it: the gate's write end closes
/// with the runner, the agent never runs, and whoever collects the worker later sees `NeverStarted`
/// rather than a crash.
#[tokio::test]
async fn a_worker_never_released_never_runs_and_is_collected_as_never_started() {
    let sb = Sandbox::new();
    sb.git_init();
    let prompt_copy = sb.path("prompt-received.md");
    let spec = sb.spec(
        claude("claude.sh"),
        WorkerKind::Queued,
        &[("FAKE_PROMPT_FILE", prompt_copy.display().to_string()), ("FAKE_COMMIT", "1".into())],
    );
    let pending = worker::start(spec.clone()).unwrap();
    let adopt = adopt_spec_of(&pending, &spec);
    drop(pending);
    // Gone at once, and reaped: not even a zombie is left.
    assert!(process::read_stat(adopt.pid).is_none(), "{:?}", process::read_stat(adopt.pid));
    assert!(!prompt_copy.exists(), "the agent never ran");
    assert_eq!(commits(&sb), 1);

    let (tx, _rx) = mpsc::unbounded_channel();
    let (_s, srx) = watch::channel(false);
    assert!(matches!(
        worker::adopt(adopt.clone(), tx.clone(), srx).await,
        Err(WorkerError::NotOurProcess { .. })
    ));
    let o = worker::collect(adopt, tx).await.unwrap();
    assert_eq!(o.reason, EndReason::NeverStarted, "{o:?}");
    let text = read(&o.log_path);
    assert!(text.contains("the agent never ran"), "{text}");
    assert!(text.contains(executor::worker::worklog::END_MARKER));
}

#[tokio::test]
async fn an_abandoned_pending_worker_closes_its_log_and_leaves_no_files() {
    let sb = Sandbox::new();
    let spec = sb.spec(claude("claude.sh"), WorkerKind::Queued, &[]);
    let pending = worker::start(spec).unwrap();
    let (pid, output, log) =
        (pending.pid(), pending.output_path().to_path_buf(), pending.log_path().to_path_buf());
    pending.abandon("could not record it");
    assert!(process::read_stat(pid).is_none());
    assert!(!output.exists() && !output.parent().unwrap().exists());
    let text = read(&log);
    assert!(text.contains("could not record it") && text.contains(executor::worker::worklog::END_MARKER));
}

/// Runs `spec` with a safety net: if the worker is not done by `limit`, its process group is killed and
/// `None` returned (a regression would otherwise leave an agent flooding the disk).
async fn run_bounded(spec: WorkerSpec, limit: Duration) -> (Option<worker::WorkerOutcome>, Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_stop, stop_rx) = watch::channel(false);
    let began = Instant::now();
    let result = tokio::time::timeout(limit, worker::run(spec, tx, stop_rx)).await;
    let elapsed = began.elapsed();
    if result.is_err()
        && let Some(WorkerUpdate::Started { pid, .. }) = rx.recv().await
    {
        process::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
    }
    (result.ok().map(|r| r.unwrap()), elapsed)
}

#[tokio::test]
async fn an_agent_printing_without_pause_still_hits_the_hard_timeout() {
    let sb = Sandbox::new();
    let mut spec = sb.spec(command("flood.sh"), WorkerKind::Queued, &[]);
    spec.timeouts.hard = Duration::from_secs(3);
    spec.timeouts.idle = Duration::from_secs(30);
    spec.max_output_bytes = 1024 * 1024 * 1024;
    let (o, elapsed) = run_bounded(spec.clone(), Duration::from_secs(30)).await;
    let o = o.unwrap_or_else(|| panic!("still running after {elapsed:?}"));
    assert_eq!(o.reason, EndReason::HardTimeout, "{o:?}");
    // Hard timeout + grace, and slack for a loaded two-core machine.
    let bound = spec.timeouts.hard + spec.timeouts.grace + Duration::from_secs(5);
    assert!(elapsed < bound, "stopped after {elapsed:?}");
    let text = read(&o.log_path);
    assert!(text.contains("ran past the hard timeout"));
}

/// The issue's own words: `yes` as the agent, a 3 s hard timeout, the default cap. Whichever limit
/// comes first, it is stopped within the hard timeout plus the grace period, its output capped.
#[tokio::test]
async fn yes_with_a_hard_timeout_and_the_default_cap_is_stopped_in_time_with_its_output_capped() {
    let sb = Sandbox::new();
    let yes = AgentConfig::Command(CommandConfig { program: "yes".into(), args: vec![] });
    let mut spec = sb.spec(yes, WorkerKind::Queued, &[]);
    spec.env.pass = vec!["PATH".into()];
    spec.timeouts.hard = Duration::from_secs(3);
    spec.timeouts.idle = Duration::from_secs(30);
    let (o, elapsed) = run_bounded(spec.clone(), Duration::from_secs(30)).await;
    let o = o.unwrap_or_else(|| panic!("still running after {elapsed:?}"));
    assert!(matches!(o.reason, EndReason::HardTimeout | EndReason::OutputLimit), "{o:?}");
    let bound = spec.timeouts.hard + spec.timeouts.grace + Duration::from_secs(5);
    assert!(elapsed < bound, "stopped after {elapsed:?}");
    let size = std::fs::metadata(&o.output_path).unwrap().len();
    assert!(size <= spec.max_output_bytes, "the raw output is {size} bytes");
}

#[tokio::test]
async fn yes_as_the_agent_is_stopped_at_the_output_cap_and_the_file_cut_back() {
    let sb = Sandbox::new();
    let mut spec = sb.spec(
        AgentConfig::Command(CommandConfig { program: "yes".into(), args: vec![] }),
        WorkerKind::Queued,
        &[],
    );
    spec.env.pass = vec!["PATH".into()];
    spec.max_output_bytes = 1024 * 1024;
    let (o, elapsed) = run_bounded(spec.clone(), Duration::from_secs(30)).await;
    let o = o.unwrap_or_else(|| panic!("still running after {elapsed:?}"));
    assert_eq!(o.reason, EndReason::OutputLimit, "{o:?}");
    let size = std::fs::metadata(&o.output_path).unwrap().len();
    assert!(size <= spec.max_output_bytes, "the raw output is {size} bytes");
    let log = std::fs::metadata(&o.log_path).unwrap().len();
    assert!(log < 4 * spec.max_output_bytes, "the work log is {log} bytes");
    assert!(read(&o.log_path).contains("worker.max_output_bytes"));
}

#[tokio::test]
async fn a_stopped_claude_worker_has_its_usage_estimated() {
    let sb = Sandbox::new();
    // Two assistant events of one message (same id, same usage), then a long silence.
    let spec = sb.spec(claude("claude.sh"), WorkerKind::Queued, &[("FAKE_QUIET", "20".into())]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (stop, stop_rx) = watch::channel(false);
    let worker = tokio::spawn(worker::run(spec, tx, stop_rx));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let u = tokio::time::timeout_at(deadline.into(), rx.recv()).await.expect("a usage update");
        if matches!(u, Some(WorkerUpdate::Usage { cost_estimated: true, .. })) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await; // the message's second block is read too
    stop.send(true).unwrap();
    let o = worker.await.unwrap().unwrap();
    assert_eq!(o.reason, EndReason::Interrupted);
    // msg_1 counted once: 1,000 in, 200 out, 2,000 cache read, 100 cache write at the default prices.
    assert_eq!(
        (o.tokens.input, o.tokens.output, o.tokens.cache_read, o.tokens.cache_creation),
        (1000, 200, 2000, 100)
    );
    let expected = (1000.0 * 3.0 + 200.0 * 15.0 + 2000.0 * 0.3 + 100.0 * 3.75) / 1e6;
    assert!(o.cost_usd.is_some_and(|c| (c - expected).abs() < 1e-12), "{:?}", o.cost_usd);
    assert!(o.cost_estimated);
    assert!(read(&o.log_path).contains("(estimated from the price table)"));
}

#[tokio::test]
async fn a_codex_worker_is_stopped_by_the_cost_cap() {
    let sb = Sandbox::new();
    let mut spec = sb.spec(codex("codex.sh"), WorkerKind::Queued, &[]);
    spec.cost_cap_usd = Some(0.001);
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::BudgetExceeded, "{o:?}");
    assert!(o.cost_usd.is_some_and(|c| c > 0.001) && o.cost_estimated, "{o:?}");
}

#[tokio::test]
async fn a_session_that_cannot_be_resumed_ends_resume_failed() {
    let sb = Sandbox::new();
    let mut spec =
        sb.spec(claude("claude.sh"), WorkerKind::InProgress, &[("FAKE_NO_SESSION", "gone-1234".into())]);
    spec.resume_session = Some("gone-1234".into());
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::ResumeFailed, "{o:?}");
    assert!(read(&o.log_path).contains("The session to resume does not exist"));
}
