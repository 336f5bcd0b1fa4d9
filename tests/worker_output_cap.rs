//! Issue 19, item 8: `worker.max_output_bytes` bounds the output file on disk, by the kernel, even while
//! no runner watches. Before, only the supervisor enforced it: `yes` under a 10 MiB cap wrote hundreds of
//! megabytes before it was stopped, and without a supervisor it never was. The bound is on the output
//! file alone: an agent still writes larger files of its own.

#[path = "worker_support/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;
use executor::domain::{TaskGid, WorkerKind};
use executor::worker::{self, AdoptSpec, AgentConfig, CommandConfig, EndReason, process};
use tokio::sync::{mpsc, watch};

const CAP: u64 = 10 * 1024 * 1024;

fn yes() -> AgentConfig {
    AgentConfig::Command(CommandConfig { program: "yes".into(), args: vec![] })
}

fn size(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[tokio::test]
async fn yes_under_a_10_mib_cap_leaves_at_most_10_mib_while_nobody_watches() {
    let sb = Sandbox::new();
    let mut spec = sb.spec(yes(), WorkerKind::Queued, &[]);
    spec.env.pass = vec!["PATH".into()];
    spec.max_output_bytes = CAP;
    let pending = worker::start(spec.clone()).unwrap();
    let (pid, start_time) = (pending.pid(), pending.pid_start_time());
    let (output, log) = (pending.output_path().to_path_buf(), pending.log_path().to_path_buf());
    let started_at = pending.started_at();
    let (tx, _rx) = mpsc::unbounded_channel();
    let (_stop, stop_rx) = watch::channel(false);
    let supervisor = tokio::spawn(pending.release(tx, stop_rx));
    let deadline = Instant::now() + Duration::from_secs(20);
    while size(&output) == 0 {
        assert!(Instant::now() < deadline, "the agent never wrote");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The runner dies: nobody supervises the agent any more.
    supervisor.abort();
    let _ = supervisor.await;

    let deadline = Instant::now() + Duration::from_secs(30);
    while !process::group_members(pid).is_empty() {
        let now = size(&output);
        if now > CAP + 1024 * 1024 || Instant::now() >= deadline {
            process::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
            panic!("unsupervised, the agent's output reached {now} bytes (cap {CAP}) and it kept running");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let written = size(&output);
    assert!(written <= CAP, "the output file is {written} bytes, over the cap of {CAP}");
    assert!(written > CAP / 2, "yes wrote only {written} bytes: it was stopped by something else");

    // The next runner finds the worker gone and says why it ended: the output cap, not a crash.
    let (tx, _rx) = mpsc::unbounded_channel();
    let adopt = AdoptSpec {
        task_gid: TaskGid::parse("1207").unwrap(),
        run_id: 42,
        kind: spec.kind,
        agent: spec.agent.clone(),
        pid,
        pid_start_time: start_time,
        output_path: output.clone(),
        offset: 0,
        log_path: log,
        started_at,
        cost_cap_usd: None,
        secrets: vec![],
        timeouts: short_timeouts(),
        max_output_bytes: CAP,
        pricing: Default::default(),
        usage_baseline: Default::default(),
        session_root: None,
    };
    let o = worker::collect(adopt, tx).await.unwrap();
    assert_eq!(o.reason, EndReason::OutputLimit, "{o:?}");
    assert!(size(&output) <= CAP);
}

#[tokio::test]
async fn supervised_yes_ends_as_output_limit_with_the_file_at_most_the_cap() {
    let sb = Sandbox::new();
    let mut spec = sb.spec(yes(), WorkerKind::Queued, &[]);
    spec.env.pass = vec!["PATH".into()];
    spec.max_output_bytes = CAP;
    let (o, updates) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::OutputLimit, "{o:?}");
    assert!(size(&o.output_path) <= CAP, "{} bytes", size(&o.output_path));
    assert_no_leftovers(started_pid(&updates));
    let log = read(&o.log_path);
    assert!(!log.contains("left 1 process(es)"), "the output writer is not a leftover of the agent: {log}");
}

/// The limit is the output file's, not the agent's: a build artifact three times the cap is written
/// whole, and what the agent prints after it still reaches the output.
#[tokio::test]
async fn an_agent_writes_files_larger_than_the_output_cap() {
    let sb = Sandbox::new();
    let script = "head -c 3145728 /dev/zero > artifact.bin && echo artifact-written";
    let sh =
        AgentConfig::Command(CommandConfig { program: "sh".into(), args: vec!["-c".into(), script.into()] });
    let mut spec = sb.spec(sh, WorkerKind::Queued, &[]);
    spec.env.pass = vec!["PATH".into()];
    spec.max_output_bytes = 1024 * 1024;
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    assert_ne!(o.reason, EndReason::OutputLimit, "{o:?}");
    assert_eq!(size(&sb.worktree.join("artifact.bin")), 3 * 1024 * 1024);
    assert!(read(&o.output_path).contains("artifact-written"), "the last line reached the file");
}
