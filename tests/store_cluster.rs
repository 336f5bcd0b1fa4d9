//! Several runners sharing one database, at the store level, on SQLite and PostgreSQL: registration and
//! heartbeats by the database's clock, claims that never hand a run to two runners and never take one
//! from a live runner, fenced writes, worker limits taken under a lock, and what is taken from a runner
//! that was lost or died.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::TestDb;
use executor::domain::{Actor, EndReason, QueueStatus, RunState, RunnerEnd, TaskGid, WorkerKind};
use executor::store::{
    EventFilter, Heartbeat, HostRunner, NewTask, RunnerRegistration, SessionStart, Spent, Store, StoreError,
    WorkerBegin, WorkerEnd, WorkerSlot,
};
use sqlx::Connection;

on_both_databases!(
    a_runner_registers_heartbeats_and_ends,
    a_live_runners_run_is_never_claimed_by_another,
    a_run_is_taken_from_a_runner_whose_heartbeat_lapsed_only_after_its_ttl,
    eight_runners_claiming_at_once_take_each_run_once,
    claims_of_runs_that_need_a_worker_stop_at_the_free_slots,
    a_runner_that_lost_its_lease_writes_nothing,
    worker_limits_hold_per_host_and_across_hosts_under_concurrent_starts,
    a_lost_runners_workers_end_as_host_lost_and_its_runs_are_freed,
    a_dead_runner_of_this_host_hands_its_runs_over_at_once,
    a_rescue_cut_short_is_finished_by_the_next,
    a_host_is_absent_only_once_it_had_no_runner_for_the_ttl,
    among_thousands_of_ended_runners_only_what_the_gone_left_is_taken,
);

const LONG: Duration = Duration::from_secs(600);
/// Short enough to lapse within a test; the waits below are for the lapse, not measurements.
const SHORT: Duration = Duration::from_millis(300);

/// The runner's last heartbeat gives it `SHORT` to live, and that passes: set up with long leases, so
/// that a slow machine never lets one lapse before the test means it to.
async fn lapse(store: &Store, runner: &str) {
    assert!(matches!(store.heartbeat(runner, SHORT).await.unwrap(), Heartbeat::Alive { .. }));
    tokio::time::sleep(SHORT * 2).await;
}

async fn register(store: &Store, id: &str, host: &str, ttl: Duration) {
    let r = RunnerRegistration { id, host, pid: 1, version: "test", machine: "m", ttl, max_workers: 2 };
    store.register_runner(&r).await.unwrap();
}

async fn approved_run(store: &Store, g: &str) -> i64 {
    let g = TaskGid::parse(g).unwrap();
    let t = NewTask { source: Some("inbox".into()), description: Some("work".into()), ..Default::default() };
    store.upsert_task(&g, &t, Actor::Cli).await.unwrap();
    store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Analyzer, None).await.unwrap();
    store.set_task_status(&g, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
    store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap().id
}

fn slot<'a>(runner: &'a str, host: &'a str, host_max: u32, cluster_max: Option<u32>) -> WorkerSlot<'a> {
    WorkerSlot { runner, host, host_max, cluster_max }
}

async fn begin(store: &Store, run: i64, slot: &WorkerSlot<'_>) -> WorkerBegin {
    store
        .begin_runner_worker(run, WorkerKind::Queued, "claude", slot, &SessionStart::default())
        .await
        .unwrap()
}

/// A worker of `runner` (on `host`, without limits to speak of) on a run it holds.
async fn start_worker(store: &Store, run: i64, runner: &str, host: &str) -> executor::store::WorkerSession {
    match begin(store, run, &slot(runner, host, 2, None)).await {
        WorkerBegin::Started(session) => *session,
        other => panic!("{other:?}"),
    }
}

/// Whether the host holding a run's unpushed commits may still push them (its runner alive, or ended
/// within the ttl: cron starts another), by the database's clock.
async fn a_host_is_absent_only_once_it_had_no_runner_for_the_ttl(db: TestDb) {
    let store = db.open().await;
    assert!(store.host_absent_for("h1", LONG).await.unwrap(), "never seen");
    register(&store, "h1/1", "h1", LONG).await;
    assert!(!store.host_absent_for("h1", LONG).await.unwrap(), "a live runner");
    assert!(store.host_absent_for("h2", LONG).await.unwrap(), "another host's runner says nothing of h2");
    store.runner_ended("h1/1").await.unwrap();
    assert!(!store.host_absent_for("h1", LONG).await.unwrap(), "ended within the ttl");
    tokio::time::sleep(SHORT * 2).await;
    assert!(store.host_absent_for("h1", SHORT).await.unwrap(), "ended longer than the ttl ago");
}

async fn a_runner_registers_heartbeats_and_ends(db: TestDb) {
    let store = db.open().await;
    register(&store, "h1/1", "h1", LONG).await;
    let run = approved_run(&store, "r1").await;
    assert!(store.claim_run(run, "h1/1", LONG).await.unwrap());
    assert_eq!(store.heartbeat("h1/1", LONG).await.unwrap(), Heartbeat::Alive { leases: 1 });
    store.runner_ticked("h1/1", 2, Some("run 3: no repo")).await.unwrap();
    let s = &store.runner_statuses().await.unwrap()[0];
    assert_eq!((s.id.as_str(), s.host.as_str(), s.alive, s.leases), ("h1/1", "h1", true, 1));
    assert_eq!((s.ticks, s.errors, s.last_error.as_deref()), (1, 2, Some("run 3: no repo")));
    assert!(s.alive_until > s.heartbeat_at && s.ended_at.is_none());

    store.runner_ended("h1/1").await.unwrap();
    let s = &store.runner_statuses().await.unwrap()[0];
    assert_eq!((s.alive, s.end_reason, s.leases), (false, Some(RunnerEnd::Stopped), 0), "ending lets go");
    assert_eq!(store.run(run).await.unwrap().lease_owner, None);
    assert_eq!(
        store.heartbeat("h1/1", LONG).await.unwrap(),
        Heartbeat::Lost,
        "an ended runner beats no more"
    );
    // The next runner of the host is listed beside the last ended one.
    register(&store, "h1/2", "h1", LONG).await;
    let ids: Vec<String> = store.runner_statuses().await.unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(ids, ["h1/2", "h1/1"]);
}

async fn a_live_runners_run_is_never_claimed_by_another(db: TestDb) {
    let store = db.open().await;
    register(&store, "a/1", "a", LONG).await;
    register(&store, "b/1", "b", LONG).await;
    let run = approved_run(&store, "r1").await;
    assert!(store.claim_run(run, "a/1", LONG).await.unwrap());
    assert!(!store.claim_run(run, "b/1", LONG).await.unwrap());
    assert!(store.claim_runs("b/1", LONG, 10).await.unwrap().is_empty());
    assert!(store.claim_run(run, "a/1", LONG).await.unwrap(), "a renewal");
    store.release_run(run, "b/1").await.unwrap();
    assert_eq!(store.run(run).await.unwrap().lease_owner.as_deref(), Some("a/1"), "only the holder lets go");
    store.release_run(run, "a/1").await.unwrap();
    assert_eq!(store.claim_runs("b/1", LONG, 10).await.unwrap(), [run], "free after release");
    assert_eq!(store.held_runs("b/1").await.unwrap().len(), 1);
    assert!(store.held_runs("a/1").await.unwrap().is_empty());
}

async fn a_run_is_taken_from_a_runner_whose_heartbeat_lapsed_only_after_its_ttl(db: TestDb) {
    let store = db.open().await;
    register(&store, "a/1", "a", LONG).await;
    register(&store, "b/1", "b", LONG).await;
    let run = approved_run(&store, "r1").await;
    assert!(store.claim_run(run, "a/1", LONG).await.unwrap());
    assert!(store.claim_runs("b/1", LONG, 10).await.unwrap().is_empty(), "a's heartbeat is live");
    assert!(store.declare_lost_runners().await.unwrap().is_empty());
    lapse(&store, "a/1").await;
    // Lapsed: the lease and the heartbeat. Another runner may take the run even before anyone declared
    // a lost, and a write of a's is refused.
    assert_eq!(store.claim_runs("b/1", LONG, 10).await.unwrap(), [run]);
    let err = store.record_decision(run, Some("a/1"), "stale").await.unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost(r) if r == run), "{err}");
    store.record_decision(run, Some("b/1"), "mine").await.unwrap();
}

async fn eight_runners_claiming_at_once_take_each_run_once(db: TestDb) {
    let store = db.open().await;
    let mut runs = Vec::new();
    for i in 0..60 {
        runs.push(approved_run(&store, &format!("c{i:02}")).await);
    }
    // Half need watching only (in_progress), half need a worker (queued).
    for id in &runs[..30] {
        store
            .set_run_state_if(*id, RunState::Queued, RunState::InProgress, None, Actor::Cli, "t")
            .await
            .unwrap();
    }
    let mut claimers = Vec::new();
    for c in 0..8 {
        // Each with its own pool, as separate processes would.
        let store = Store::open(&db.url).await.unwrap();
        let owner = format!("h{c}/1");
        register(&store, &owner, &format!("h{c}"), LONG).await;
        claimers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for _ in 0..5 {
                mine.extend(store.claim_runs(&owner, LONG, 3).await.unwrap());
            }
            (owner, mine)
        }));
    }
    let mut claimed_by: HashMap<i64, Vec<String>> = HashMap::new();
    let mut work_claims: HashMap<String, usize> = HashMap::new();
    for c in claimers {
        let (owner, mine) = c.await.unwrap();
        for id in mine {
            if runs[30..].contains(&id) {
                *work_claims.entry(owner.clone()).or_default() += 1;
            }
            claimed_by.entry(id).or_default().push(owner.clone());
        }
    }
    for id in &runs {
        let owners = claimed_by.get(id).cloned().unwrap_or_default();
        assert_eq!(owners.len(), 1, "run {id} claimed by {owners:?}");
        assert_eq!(store.run(*id).await.unwrap().lease_owner.as_deref(), Some(owners[0].as_str()));
    }
    for (owner, n) in work_claims {
        assert!(n <= 15, "{owner} took {n} runs that need a worker: at most 3 a claim, 5 claims");
    }
}

async fn claims_of_runs_that_need_a_worker_stop_at_the_free_slots(db: TestDb) {
    let store = db.open().await;
    register(&store, "a/1", "a", LONG).await;
    let queued = [approved_run(&store, "q1").await, approved_run(&store, "q2").await];
    let watched = approved_run(&store, "w1").await;
    store
        .set_run_state_if(watched, RunState::Queued, RunState::InProgress, None, Actor::Cli, "t")
        .await
        .unwrap();
    assert_eq!(store.claim_runs("a/1", LONG, 0).await.unwrap(), [watched], "no slot: only watching");
    assert_eq!(store.claim_runs("a/1", LONG, 1).await.unwrap(), [queued[0]]);
    // A run let go for want of a slot is taken by a runner that has one, and only by such.
    store.release_run_for_slot(watched, "a/1").await.unwrap();
    register(&store, "b/1", "b", LONG).await;
    assert!(store.claim_runs("b/1", LONG, 0).await.unwrap().is_empty());
    assert_eq!(store.claim_runs("b/1", LONG, 5).await.unwrap(), [queued[1], watched]);
}

async fn a_runner_that_lost_its_lease_writes_nothing(db: TestDb) {
    let store = db.open().await;
    register(&store, "a/1", "a", LONG).await;
    register(&store, "b/1", "b", LONG).await;
    let run = approved_run(&store, "r1").await;
    assert!(store.claim_run(run, "a/1", LONG).await.unwrap());
    let session = start_worker(&store, run, "a/1", "a").await;
    store.set_worker_process(session.id, Some("a/1"), 4242, None, "/o", "/l").await.unwrap();
    lapse(&store, "a/1").await;
    assert_eq!(store.declare_lost_runners().await.unwrap().len(), 1);
    assert!(store.claim_run(run, "b/1", LONG).await.unwrap());
    let before = store.run(run).await.unwrap();

    // Every kind of write a's runner and its worker's supervisor would make: each refused.
    let lost = |r: Result<(), StoreError>| matches!(r, Err(StoreError::LeaseLost(id)) if id == run);
    assert!(lost(store.set_run_workspace(run, Some("a/1"), "/wt/a", "b1").await));
    assert!(lost(store.set_run_pr(run, Some("a/1"), "local://x/pull/1", 1).await));
    assert!(lost(store.set_run_head(run, Some("a/1"), "abc").await));
    assert!(lost(store.set_pushed_at(run, Some("a/1"), chrono::Utc::now()).await));
    assert!(lost(store.touch_worker_output(session.id, Some("a/1"), chrono::Utc::now(), 10).await));
    assert!(lost(store.set_worker_agent_session(session.id, Some("a/1"), "sess").await));
    let end =
        store.end_worker_session(session.id, Some("a/1"), &WorkerEnd::new(EndReason::Interrupted)).await;
    assert!(matches!(end, Err(StoreError::LeaseLost(_)) | Ok(false)), "{end:?}");
    let err = store
        .set_run_state_if(run, RunState::Queued, RunState::InProgress, Some("a/1"), Actor::Runner, "stale")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost(_)), "{err}");
    assert_eq!(begin(&store, run, &slot("a/1", "a", 2, None)).await, WorkerBegin::LeaseLost);

    let after = store.run(run).await.unwrap();
    assert_eq!(after, before, "the rescuer's run is as it left it");
    let s = store.worker_session(session.id).await.unwrap();
    assert_eq!((s.end_reason, s.session_id), (Some(EndReason::HostLost), None));
    // The holder writes.
    store.set_run_workspace(run, Some("b/1"), "/wt/b", "b1").await.unwrap();
}

async fn worker_limits_hold_per_host_and_across_hosts_under_concurrent_starts(db: TestDb) {
    let store = db.open().await;
    // Three hosts of two runners; at most 2 workers a host and 3 in all.
    let mut runs = Vec::new();
    for i in 0..12 {
        runs.push(approved_run(&store, &format!("w{i:02}")).await);
    }
    let mut starters = Vec::new();
    for (i, chunk) in runs.chunks(2).enumerate() {
        let store = Store::open(&db.url).await.unwrap();
        let (host, owner) = (format!("h{}", i % 3), format!("h{}/{i}", i % 3));
        register(&store, &owner, &host, LONG).await;
        let chunk = chunk.to_vec();
        starters.push(tokio::spawn(async move {
            let mut started = Vec::new();
            for run in chunk {
                assert!(store.claim_run(run, &owner, LONG).await.unwrap());
                let slot = slot(&owner, &host, 2, Some(3));
                if let WorkerBegin::Started(s) = begin(&store, run, &slot).await {
                    started.push((host.clone(), s.id));
                }
            }
            started
        }));
    }
    let mut by_host: HashMap<String, usize> = HashMap::new();
    let mut all = 0;
    for s in starters {
        for (host, _) in s.await.unwrap() {
            *by_host.entry(host).or_default() += 1;
            all += 1;
        }
    }
    assert_eq!(all, 3, "the cluster limit: {by_host:?}");
    assert!(by_host.values().all(|n| *n <= 2), "{by_host:?}");
    let free = store.free_worker_slots(&slot("x/1", "h9", 2, Some(3))).await.unwrap();
    assert_eq!(free, 0);
    // A host with no worker yet is refused too: the cluster is full, and says so.
    register(&store, "h9/1", "h9", LONG).await;
    let extra = approved_run(&store, "w99").await;
    assert!(store.claim_run(extra, "h9/1", LONG).await.unwrap());
    match begin(&store, extra, &slot("h9/1", "h9", 2, Some(3))).await {
        WorkerBegin::NoSlot(why) => assert!(why.contains("cluster.max_workers = 3"), "{why}"),
        other => panic!("{other:?}"),
    }
}

async fn a_lost_runners_workers_end_as_host_lost_and_its_runs_are_freed(db: TestDb) {
    let store = db.open().await;
    register(&store, "gone/1", "gone", LONG).await;
    register(&store, "here/1", "here", LONG).await;
    let run = approved_run(&store, "r1").await;
    assert!(store.claim_run(run, "gone/1", LONG).await.unwrap());
    let session = start_worker(&store, run, "gone/1", "gone").await;
    store.set_worker_usage(session.id, Some("gone/1"), Some(0.75), 100, 10, false).await.unwrap();
    // Its local CI, which only its host could see.
    let pr = store.open_local_pr(run, Some("app"), "b1", "main").await.unwrap();
    store.start_local_check(pr.id, "abc", "ci", "/gone/ci/1", "gone").await.unwrap();
    store.set_ci_triggered(run, Some("gone/1"), "abc", executor::domain::CiTrigger::LocalCi).await.unwrap();
    // A slot of the lost runner's is not counted as a live worker once its heartbeat lapsed.
    lapse(&store, "gone/1").await;
    assert_eq!(store.free_worker_slots(&slot("here/1", "here", 2, Some(1))).await.unwrap(), 1);

    let lost = store.declare_lost_runners().await.unwrap();
    assert_eq!(lost.len(), 1);
    assert_eq!(
        (lost[0].id.as_str(), lost[0].sessions.clone(), lost[0].runs_freed),
        ("gone/1", vec![(session.id, run)], 1)
    );
    assert!(store.declare_lost_runners().await.unwrap().is_empty(), "declared once");
    let s = store.worker_session(session.id).await.unwrap();
    assert_eq!(s.end_reason, Some(EndReason::HostLost));
    let r = store.run(run).await.unwrap();
    assert_eq!((r.lease_owner, r.cost_usd), (None, 0.75), "freed, and what it spent stays on the run");
    assert!(store.local_checks(pr.id).await.unwrap().is_empty(), "its CI is forgotten");
    assert_eq!(store.run_memory(run).await.unwrap().ci_triggered_sha, None, "so CI runs again");
    let statuses = store.runner_statuses().await.unwrap();
    let gone = statuses.iter().find(|s| s.id == "gone/1").unwrap();
    assert_eq!((gone.alive, gone.end_reason), (false, Some(RunnerEnd::Lost)));
    // Until its heartbeat tells it so, a lost runner's tick goes on: it claims nothing back, and nothing
    // moves the ended session's offset (soak finding: a thawed runner declared itself lost, took its
    // runs straight back and read on, so the agent's last dollars were never settled).
    assert!(store.claim_runs("gone/1", LONG, 2).await.unwrap().is_empty(), "a lost runner claims nothing");
    assert!(!store.claim_run(run, "gone/1", LONG).await.unwrap());
    let offset = store.worker_session(session.id).await.unwrap().output_offset;
    let late = store.touch_worker_output(session.id, None, chrono::Utc::now(), offset + 999).await;
    assert!(matches!(late, Err(StoreError::Refused(_))), "{late:?}");
    assert_eq!(store.worker_session(session.id).await.unwrap().output_offset, offset);
    assert_eq!(store.heartbeat("gone/1", SHORT).await.unwrap(), Heartbeat::Lost, "it learns it was lost");

    // Its agent ran on: its host's next runner read its output to byte 500, $1.25 in all.
    let spent = Spent { cost_usd: 1.25, input_tokens: 150, output_tokens: 20, estimated: false };
    assert_eq!(store.settle_lost_spend(session.id, 0, 500, &spent).await.unwrap(), Some(0.5));
    assert_eq!(store.settle_lost_spend(session.id, 0, 500, &spent).await.unwrap(), None, "settled once");
    let lower = Spent { cost_usd: 1.0, ..spent };
    assert_eq!(
        store.settle_lost_spend(session.id, 500, 600, &lower).await.unwrap(),
        Some(0.0),
        "never lowered"
    );
    let (s, r) = (store.worker_session(session.id).await.unwrap(), store.run(run).await.unwrap());
    assert_eq!((s.cost_usd, s.input_tokens, s.output_offset), (1.25, 150, 600));
    assert_eq!((r.cost_usd, r.input_tokens), (1.25, 150));
    let other = approved_run(&store, "r2").await;
    assert!(store.claim_run(other, "here/1", LONG).await.unwrap());
    let live = start_worker(&store, other, "here/1", "here").await;
    assert_eq!(
        store.settle_lost_spend(live.id, 0, 9, &spent).await.unwrap(),
        None,
        "only a host_lost session"
    );
}

async fn a_dead_runner_of_this_host_hands_its_runs_over_at_once(db: TestDb) {
    let store = db.open().await;
    register(&store, "h/old", "h", LONG).await;
    register(&store, "h/new", "h", LONG).await;
    let run = approved_run(&store, "r1").await;
    assert!(store.claim_run(run, "h/old", LONG).await.unwrap());
    assert!(store.declare_runner_died("h/old", "h/new", LONG).await.unwrap());
    assert!(!store.declare_runner_died("h/old", "h/new", LONG).await.unwrap(), "once");
    assert_eq!(store.run(run).await.unwrap().lease_owner.as_deref(), Some("h/new"));
    let live = store.live_runners_of("h").await.unwrap();
    assert_eq!(live, [HostRunner { id: "h/new".into(), pid: 1, machine: "m".into() }]);
    // The history says which runner moved the run on.
    store
        .set_run_state_if(run, RunState::Queued, RunState::InProgress, Some("h/new"), Actor::Runner, "t")
        .await
        .unwrap();
    let filter = EventFilter { run_id: Some(run), ..Default::default() };
    let moved = store.events(&filter).await.unwrap().into_iter().find(|e| e.kind == "run_state").unwrap();
    assert_eq!((moved.actor_id.as_deref(), moved.who().as_str()), (Some("h/new"), "runner h/new"));
}

async fn a_rescue_cut_short_is_finished_by_the_next(db: TestDb) {
    let store = db.open().await;
    register(&store, "gone/1", "gone", LONG).await;
    register(&store, "other/1", "other", LONG).await;
    let run = approved_run(&store, "r1").await;
    assert!(store.claim_run(run, "gone/1", LONG).await.unwrap());
    let session = start_worker(&store, run, "gone/1", "gone").await;
    // The rescuer was killed right after marking the runner lost, before taking anything from it.
    db.execute(
        "UPDATE executor_runners SET ended_at = heartbeat_at, end_reason = 'lost' WHERE id = 'gone/1'",
    )
    .await;
    let taken = store.declare_lost_runners().await.unwrap();
    assert_eq!(taken.len(), 1, "{taken:?}");
    assert_eq!((taken[0].sessions.clone(), taken[0].runs_freed), (vec![(session.id, run)], 1));
    assert_eq!(store.worker_session(session.id).await.unwrap().end_reason, Some(EndReason::HostLost));
    assert_eq!(store.run(run).await.unwrap().lease_owner, None);
    assert!(store.declare_lost_runners().await.unwrap().is_empty(), "nothing left the second time");
}

/// Ended runners of the hosts below that hold nothing, as cron's restarts leave them (soak finding: 2,400
/// within an hour): stopped, died or lost, their heartbeat that of `here/1`, which registered last.
const ENDED_RUNNERS: &str = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) \
    INSERT INTO executor_runners (id, host, pid, version, machine, started_at, heartbeat_at, alive_until, \
      ended_at, end_reason, max_workers) \
    SELECT c.host || '/cron-' || c.i, c.host, c.i, 'test', 'm', t.started_at, t.heartbeat_at, t.heartbeat_at, \
      t.heartbeat_at, CASE c.i % 3 WHEN 0 THEN 'stopped' WHEN 1 THEN 'died' ELSE 'lost' END, 2 \
    FROM (SELECT i, CASE i % 4 WHEN 0 THEN 'gone' WHEN 1 THEN 'busy' WHEN 2 THEN 'quiet' ELSE 'here' END AS host \
      FROM n) AS c CROSS JOIN executor_runners t WHERE t.id = 'here/1'";

/// Among thousands of ended runners, each tick takes what the few gone ones left, and only that: a lost
/// runner's leases, and the live workers of a runner whose host has no live runner left.
async fn among_thousands_of_ended_runners_only_what_the_gone_left_is_taken(db: TestDb) {
    let store = db.open().await;
    // Lost, on a host with no runner left: its worker ends and its run is freed.
    register(&store, "gone/1", "gone", LONG).await;
    // Lost, on a host with another runner: its run is freed, its worker left for that runner to adopt.
    register(&store, "busy/1", "busy", LONG).await;
    register(&store, "busy/2", "busy", LONG).await;
    // Stopped with its worker still running, and no runner of its host came back: the worker ends.
    register(&store, "quiet/1", "quiet", LONG).await;
    // Alive: nothing is taken from it.
    register(&store, "here/1", "here", LONG).await;
    let mut runs = HashMap::new();
    let mut sessions = HashMap::new();
    for (g, (runner, host)) in ["r1", "r2", "r3", "r4"].into_iter().zip([
        ("gone/1", "gone"),
        ("busy/1", "busy"),
        ("quiet/1", "quiet"),
        ("here/1", "here"),
    ]) {
        let run = approved_run(&store, g).await;
        assert!(store.claim_run(run, runner, LONG).await.unwrap());
        sessions.insert(runner, start_worker(&store, run, runner, host).await.id);
        runs.insert(runner, run);
    }
    store.runner_ended("quiet/1").await.unwrap();
    db.execute(ENDED_RUNNERS).await;
    lapse(&store, "gone/1").await;
    lapse(&store, "busy/1").await;

    let lost = store.declare_lost_runners().await.unwrap();
    let taken: Vec<_> = lost.iter().map(|l| (l.id.as_str(), l.sessions.clone(), l.runs_freed)).collect();
    assert_eq!(
        taken,
        [
            ("busy/1", vec![], 1),
            ("gone/1", vec![(sessions["gone/1"], runs["gone/1"])], 1),
            ("quiet/1", vec![(sessions["quiet/1"], runs["quiet/1"])], 0),
        ]
    );
    assert!(store.declare_lost_runners().await.unwrap().is_empty(), "nothing left the second time");
    for (runner, ended, owner) in [
        ("gone/1", Some(EndReason::HostLost), None),
        ("busy/1", None, None),
        ("quiet/1", Some(EndReason::HostLost), None),
        ("here/1", None, Some("here/1")),
    ] {
        let session = store.worker_session(sessions[runner]).await.unwrap();
        assert_eq!(session.end_reason, ended, "{runner}'s worker");
        assert_eq!(store.run(runs[runner]).await.unwrap().lease_owner.as_deref(), owner, "{runner}'s run");
    }
    let statuses = store.runner_statuses().await.unwrap();
    let state = |id: &str| statuses.iter().find(|s| s.id == id).map(|s| s.state());
    assert_eq!((state("busy/2"), state("here/1")), (Some("alive"), Some("alive")));
}

/// A process paused inside its transaction (SIGSTOP, a frozen machine) while it held the worker-slot
/// lock: PostgreSQL ends its session after a while, and the other hosts go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn a_process_paused_holding_the_slot_lock_does_not_stop_the_others() {
    let Some(db) = common::postgres("a_process_paused_holding_the_slot_lock").await else { return };
    let store = db.open().await;
    register(&store, "a/1", "a", LONG).await;
    let run = approved_run(&store, "r1").await;
    assert!(store.claim_run(run, "a/1", LONG).await.unwrap());

    // The paused process: a session with executor's settings that took the lock in a transaction and
    // then never spoke again.
    let options = executor::store::pg_connect_options(&db.url).unwrap();
    let mut conn = sqlx::postgres::PgConnection::connect_with(&options).await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(executor::store::SLOT_LOCK)
        .execute(&mut *tx)
        .await
        .unwrap();

    let started =
        tokio::time::timeout(Duration::from_secs(60), begin(&store, run, &slot("a/1", "a", 2, None)))
            .await
            .expect("the slot lock of a paused session is given back");
    assert!(matches!(started, WorkerBegin::Started(_)), "{started:?}");
    assert!(tx.commit().await.is_err(), "the paused session was ended by the server");
}
