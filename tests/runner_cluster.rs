//! Issue 12 end to end: several hosts share one PostgreSQL and one repository, each host's cron
//! starting `executor runner` again and again. The worker limits hold at every moment (per host and
//! across hosts, in the database and in `ps`), a lost machine's runs are rescued once its lease lapses
//! and no sooner, every task completes exactly once, and a runner paused past its lease cannot write
//! over the state of the runner that rescued its runs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

mod cluster_support;
mod common;
use cluster_support::{Cluster, Deadline, LEASE_TTL, RunRow, SessionRow, tick};

fn gids(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("{}", 1200 + i)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn three_hosts_share_the_work_within_the_limits_and_rescue_a_lost_host() {
    let Some(db) = common::postgres("three_hosts_share_the_work").await else { return };
    let cluster = Cluster::new(&db.url, &["host-a", "host-b", "host-c"]).await;
    let tasks = gids(30);
    cluster.queue_approved(tasks.iter().cloned());

    let sampler = cluster.start_sampler();
    // Two seconds per agent: workers overlap, and across hosts.
    for host in &cluster.hosts {
        host.start_cron(&[("FAKE_SLOW", "2")]);
    }

    // Machine loss, while host-c has work in hand and other work is still to do.
    let deadline = Deadline::after(60);
    loop {
        // A session and its agent process: the kill takes a real agent down with the machine.
        let working = cluster.live_sessions().await.iter().any(|s| s.host == "host-c");
        if working && cluster.agents().iter().any(|a| a.host == "host-c") {
            break;
        }
        let done = cluster.queue_statuses().await.values().filter(|s| *s == "done").count();
        if deadline.passed() || done == tasks.len() {
            panic!("host-c never ran a worker ({done} tasks done)\n{}", cluster.diagnose().await);
        }
        tick().await;
    }
    let (killed_runner, killed_at) = cluster.lose_host("host-c").await;
    let killed_runner = killed_runner.expect("host-c's runner was running");
    // Nothing on host-c can change its sessions now: what is live is what it was working on.
    let lost: Vec<_> = cluster.live_sessions().await.into_iter().filter(|s| s.host == "host-c").collect();
    assert!(!lost.is_empty(), "host-c's live session ended before the kill\n{}", cluster.diagnose().await);
    let lost_runner_id = lost[0].runner_id.clone().expect("a runner's session names its runner");
    eprintln!("killed host-c's runner {lost_runner_id} (pid {killed_runner}) working on {lost:?}");

    // Its sessions end as host_lost once its lease lapses, not before.
    let deadline = Deadline::after(30);
    let ended: Vec<SessionRow> = loop {
        let mut rows = Vec::new();
        for s in &lost {
            rows.push(cluster.session(s.id).await);
        }
        if rows.iter().all(|s| s.ended_at.is_some()) {
            break rows;
        }
        if deadline.passed() {
            panic!("host-c's sessions were never ended: {rows:?}\n{}", cluster.diagnose().await);
        }
        tick().await;
    };
    let runner = cluster.runner(&lost_runner_id).await;
    assert_eq!(runner.end_reason.as_deref(), Some("lost"), "{runner:?}");
    let slack = chrono::Duration::milliseconds(500);
    for s in &ended {
        assert_eq!(s.end_reason.as_deref(), Some("host_lost"), "{s:?}");
        let ended_at = s.ended_at.unwrap();
        assert!(
            ended_at - killed_at >= chrono::Duration::from_std(LEASE_TTL).unwrap() - slack,
            "session {} ended {} after the kill, before the {LEASE_TTL:?} lease could lapse",
            s.id,
            ended_at - killed_at
        );
        assert!(ended_at >= runner.alive_until, "ended while its runner was alive: {s:?} {runner:?}");
    }

    cluster.wait_all_done(&tasks, 150).await;

    // Exactly one run per task, each complete, and each reached complete once.
    let runs = cluster.runs().await;
    let mut runs_per_task: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &runs {
        *runs_per_task.entry(&r.task_gid).or_default() += 1;
    }
    assert_eq!(runs_per_task.len(), tasks.len(), "{runs:?}");
    assert!(runs_per_task.values().all(|n| *n == 1), "a task ran twice: {runs_per_task:?}");
    let not_complete: Vec<&RunRow> = runs.iter().filter(|r| r.state != "complete").collect();
    assert!(not_complete.is_empty(), "{not_complete:?}");
    let completions = cluster.completions_per_run().await;
    for r in &runs {
        assert_eq!(
            completions.get(&r.id),
            Some(&1),
            "run {} reached complete {:?} times",
            r.id,
            completions.get(&r.id)
        );
    }
    let live = cluster.live_sessions().await;
    assert!(live.is_empty(), "sessions left live: {live:?}");

    // The rescued runs were finished elsewhere, by a fresh worker.
    for s in &ended {
        let later: Vec<SessionRow> =
            cluster.sessions_of_run(s.run_id).await.into_iter().filter(|x| x.id > s.id).collect();
        assert!(
            later.iter().any(|x| x.host != "host-c"),
            "run {} was not picked up by another host after host-c was lost: {later:?}",
            s.run_id
        );
    }
    // Every host that lived did its share.
    for host in ["host-a", "host-b"] {
        let worked: i64 = sqlx::query_scalar("SELECT count(*) FROM executor_worker_sessions WHERE host = $1")
            .bind(host)
            .fetch_one(&cluster.db)
            .await
            .unwrap();
        assert!(worked > 0, "{host} ran no worker");
    }

    for host in ["host-a", "host-b"] {
        cluster.host(host).stop_cron();
    }
    let report = sampler.finish().await;
    eprintln!("sampler: {}", report.summary());
    assert!(report.samples > 50, "the sampler barely ran: {}", report.summary());
    assert!(
        report.violations.is_empty(),
        "limits broken:\n{}\n{}",
        report.violations.join("\n"),
        report.summary()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn a_runner_paused_past_its_lease_cannot_write_over_its_rescuer() {
    let Some(db) = common::postgres("a_runner_paused_past_its_lease").await else { return };
    let cluster = Cluster::new(&db.url, &["host-a", "host-b"]).await;
    let tasks = gids(4);
    cluster.queue_approved(tasks.iter().cloned());
    let sampler = cluster.start_sampler();
    // Slow agents: work is in flight when host-b stops, and after its lease lapses.
    for host in &cluster.hosts {
        host.start_cron(&[("FAKE_SLOW", "6")]);
    }
    let (a, b) = (cluster.host("host-a"), cluster.host("host-b"));

    // host-b has a worker on run R.
    let deadline = Deadline::after(60);
    let session = loop {
        if let Some(s) = cluster.live_sessions().await.into_iter().find(|s| s.host == "host-b") {
            break s;
        }
        if deadline.passed() {
            panic!("host-b never ran a worker\n{}", cluster.diagnose().await);
        }
        tick().await;
    };
    let run_id = session.run_id;
    let paused_id = session.runner_id.clone().expect("a runner's session names its runner");
    let paused_pid = cluster.runner(&paused_id).await.pid as i32;
    assert_eq!(b.runner_pid(), Some(paused_pid), "the session's runner is the one host-b's cron runs");

    // Pause host-b's runner, then its agents (the runner first: it cannot start another meanwhile).
    kill(Pid::from_raw(paused_pid), Signal::SIGSTOP).unwrap();
    let paused_agents = cluster.signal_agents("host-b", Signal::SIGSTOP);
    // When the paused runner ends, host-b's cron starts no other until the checks below are done.
    b.hold_cron(true);
    eprintln!(
        "paused host-b's runner {paused_id} (pid {paused_pid}) on run {run_id}, agents {paused_agents:?}"
    );

    // host-a declares it lost and takes R over.
    let deadline = Deadline::after(60);
    let (rescued, lost_session) = loop {
        let run = cluster.run(run_id).await;
        let s = cluster.session(session.id).await;
        let held_by_a = run.lease_owner.as_deref().is_some_and(|o| o.starts_with("host-a/"));
        if held_by_a && s.end_reason.as_deref() == Some("host_lost") {
            break (run, s);
        }
        if deadline.passed() {
            panic!("host-a never took run {run_id} over: {run:?} {s:?}\n{}", cluster.diagnose().await);
        }
        tick().await;
    };
    let paused_sessions = cluster.sessions_of_runner(&paused_id).await;
    let runner_row = cluster.runner(&paused_id).await;
    assert_eq!(runner_row.end_reason.as_deref(), Some("lost"), "{runner_row:?}");
    eprintln!("rescued: {rescued:?}\npaused runner's sessions: {paused_sessions:?}");

    // Wake host-b up: its runner finds it was declared lost, stops its agents and exits with an error.
    kill(Pid::from_raw(paused_pid), Signal::SIGCONT).unwrap();
    for pgid in &paused_agents {
        let _ = kill(Pid::from_raw(-pgid), Signal::SIGCONT);
    }
    let resumed = Instant::now();
    let b_root = b.worktree_root().display().to_string();
    let mut exited_at: Option<Instant> = None;
    let mut left_b_worktree = false;
    // Until a while after it exited, nothing of R goes back to the paused runner.
    loop {
        let run = cluster.run(run_id).await;
        assert!(
            run.lease_owner.as_deref() != Some(paused_id.as_str())
                && !run.lease_owner.as_deref().is_some_and(|o| o.starts_with("host-b/")),
            "run {run_id}'s lease went back to host-b: {run:?}\nrescued as {rescued:?}"
        );
        // The rescuer replaces host-b's worktree when it starts its own worker: until then the path
        // stays host-b's, but once it is not, it never becomes host-b's again.
        let in_b = run.worktree_path.as_deref().is_some_and(|p| p.starts_with(&b_root));
        left_b_worktree |= !in_b;
        assert!(
            !in_b || (!left_b_worktree && run.worktree_path == rescued.worktree_path),
            "run {run_id}'s worktree went back to host-b's: {run:?}\nrescued as {rescued:?}"
        );
        assert!(
            !run.worker_pid.is_some_and(|pid| paused_agents.contains(&(pid as i32))),
            "run {run_id}'s worker went back to host-b's agent: {run:?}\nrescued as {rescued:?}"
        );
        let now_sessions = cluster.sessions_of_runner(&paused_id).await;
        assert_eq!(now_sessions, paused_sessions, "the paused runner's sessions changed after it was lost");
        let row = cluster.runner(&paused_id).await;
        assert_eq!(row.end_reason.as_deref(), Some("lost"), "the lost runner's end was rewritten: {row:?}");

        let launch = b.launch_of(paused_pid).expect("the cron started it");
        if let (Some(status), None) = (launch.status, exited_at) {
            assert!(!status.success(), "the runner declared lost exited {status}");
            let stderr = launch.stderr_text();
            assert!(stderr.to_lowercase().contains("lost"), "its stderr does not say it was lost:\n{stderr}");
            exited_at = Some(Instant::now());
        }
        if let Some(exited) = exited_at {
            // It stopped the agents it had left (long before they would have finished on their own).
            let left: Vec<_> =
                cluster.agents().into_iter().filter(|a| paused_agents.contains(&a.pgid)).collect();
            assert!(
                left.is_empty() || exited.elapsed() < Duration::from_secs(1),
                "the lost runner left its agents running: {left:?}\n{}",
                b.log_tails(1, 30)
            );
            if exited.elapsed() > Duration::from_secs(3) {
                break;
            }
        } else if resumed.elapsed() > Duration::from_secs(15) {
            panic!("host-b's lost runner did not exit after it woke\n{}", cluster.diagnose().await);
        }
        tick().await;
    }

    // host-b may work again, as a new runner.
    b.hold_cron(false);
    cluster.wait_all_done(&tasks, 120).await;
    let runs = cluster.runs().await;
    assert_eq!(runs.len(), tasks.len(), "{runs:?}");
    assert!(runs.iter().all(|r| r.state == "complete"), "{runs:?}");
    let completions = cluster.completions_per_run().await;
    assert!(runs.iter().all(|r| completions.get(&r.id) == Some(&1)), "{completions:?}");
    assert_eq!(cluster.session(lost_session.id).await, lost_session, "host-b's lost session was rewritten");
    assert_eq!(cluster.sessions_of_runner(&paused_id).await, paused_sessions);

    a.stop_cron();
    b.stop_cron();
    let report = sampler.finish().await;
    eprintln!("sampler: {}", report.summary());
    assert!(
        report.violations.is_empty(),
        "limits broken:\n{}\n{}",
        report.violations.join("\n"),
        report.summary()
    );
}
