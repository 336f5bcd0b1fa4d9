//! How long one runner tick takes with many active runs, and what it costs: run with
//! `cargo bench --bench runner_tick [-- RUNS TICKS]`. Prints figures; asserts nothing.
//!
//! Setup: RUNS approved tasks, each with a run in `pr` on the local forge (its own branch with one
//! commit, an open draft pull request, CI pending at the head), so every tick observes every run and
//! decides to wait — the steady state of a runner watching many pull requests.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use executor::config::{Config, Repo};
use executor::domain::{Actor, CiTrigger, QueueStatus, RunState, TaskGid};
use executor::runner::Runner;
use executor::store::{NewTask, Store};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=bench", "-c", "user.email=bench@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let runs = args.first().copied().unwrap_or(200);
    let ticks = args.get(1).copied().unwrap_or(5);
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).expect("repo dir");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "initial"]);

    let mut config = Config::default();
    config.paths.data_dir = dir.path().join("data").display().to_string();
    config.runner.max_workers = 2;
    config.repos.insert(
        "app".into(),
        Repo { ci_command: vec!["true".into()], ..Repo::at(&repo.display().to_string()) },
    );
    let store = Store::open(&config.database_url()).await.expect("open");
    store.migrate().await.expect("migrate");

    let setup = Instant::now();
    for i in 0..runs {
        let gid = TaskGid::parse(&format!("B{i}")).expect("gid");
        store
            .upsert_task(
                &gid,
                &NewTask { description: Some(format!("task {i}")), ..Default::default() },
                Actor::Cli,
            )
            .await
            .expect("add");
        store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Cli, None).await.expect("triage");
        store.set_task_status(&gid, QueueStatus::Approved, Actor::Cli, None).await.expect("approve");
        let run = store.create_run_for_task(&gid, Actor::Runner).await.expect("run").expect("new run");
        let branch = format!("executor/b{i}");
        git(&repo, &["branch", &branch, "main"]);
        let sha = git(
            &repo,
            &["commit-tree", "-p", "main", "-m", "work", &git(&repo, &["rev-parse", "main^{tree}"])],
        );
        git(&repo, &["update-ref", &format!("refs/heads/{branch}"), &sha]);
        store
            .set_run_workspace(
                run.id,
                None,
                &dir.path().join(format!("wt{i}")).display().to_string(),
                &branch,
            )
            .await
            .expect("ws");
        store
            .set_run_state_if(run.id, RunState::Queued, RunState::InProgress, None, Actor::Runner, "bench")
            .await
            .expect("s1");
        store
            .set_run_state_if(run.id, RunState::InProgress, RunState::Pr, None, Actor::Runner, "bench")
            .await
            .expect("s2");
        let pr = store.open_local_pr(run.id, Some("app"), &branch, "main").await.expect("pr");
        // A pending check with no process directory: CI "running", so each tick decides to wait.
        store.start_local_check(pr.id, &sha, "ci", "", "bench").await.expect("check");
        store.set_ci_triggered(run.id, None, &sha, CiTrigger::LocalCi).await.expect("triggered");
    }
    println!("setup: {runs} runs in pr on the local forge in {:.1?}", setup.elapsed());

    let mut runner = Runner::new(config, store.clone()).expect("runner");
    let before = rss_kib();
    let mut times = Vec::new();
    for _ in 0..ticks {
        let start = Instant::now();
        let report = runner.tick().await.expect("tick");
        times.push(start.elapsed());
        assert_eq!(report.runs_seen, runs);
    }
    times.sort();
    let total: Duration = times.iter().sum();
    let mean = total / ticks as u32;
    println!("ticks: {ticks}; runs per tick: {runs}");
    println!(
        "tick time: mean {:.1?}, min {:.1?}, max {:.1?}; per run {:.2?}",
        mean,
        times[0],
        times[times.len() - 1],
        mean / runs as u32
    );
    println!("memory: RSS {} KiB before the ticks, {} KiB after", before, rss_kib());
}
