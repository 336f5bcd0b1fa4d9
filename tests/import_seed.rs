//! The seed's own v1 state ("Current State (before migration)": executor_queue 924 skip, 16 in_progress,
//! 10 awaiting_go; executor_runs 2 ci_running, 7 queued, 6 awaiting_review, 2 complete), generated here
//! as a v1 export, imported through the real binary, and carried on by a real runner on the local forge
//! with the `pipeline.sh` fake agent: every run keeps its branch, pull request, worker fields and v1's
//! times, queued runs get a worker and the others are observed without error.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, SubsecRound, Utc};
use executor::domain::{QueueStatus, RunState, TaskGid};
use executor::store::{RunFilter, TaskFilter};
use serde_json::{Value, json};

mod runner_support;
use runner_support::Env;

/// v1's clock: every v1 time is days before the import.
fn v1_time(days_ago: i64, minute: i64) -> DateTime<Utc> {
    (Utc::now() - Duration::days(days_ago) + Duration::minutes(minute)).trunc_subsecs(6)
}

/// The 17 runs' v1 states in v1's id order: runs 10 and 11 are the seed's blocking `ci_running` pair.
const RUN_STATES: [&str; 17] = [
    "complete",
    "complete",
    "awaiting_review",
    "awaiting_review",
    "awaiting_review",
    "awaiting_review",
    "awaiting_review",
    "queued",
    "queued",
    "ci_running",
    "ci_running",
    "queued",
    "queued",
    "queued",
    "queued",
    "queued",
    "awaiting_review",
];

fn gid(n: usize) -> String {
    format!("120940{n:07}")
}

/// The seed-shaped v1 export. Tasks 0..924 skip, 924..940 in_progress (runs 1-16, one each), 940..950
/// awaiting_go; run 17 (awaiting_review) belongs to the first awaiting_go task: v1 started it before
/// its queue row said go.
fn seed_export() -> (Value, Vec<Value>) {
    let mut queue = Vec::new();
    for n in 0..950 {
        let status = match n {
            0..924 => "skip",
            924..940 => "in_progress",
            _ => "awaiting_go",
        };
        let run_id = (924..940).contains(&n).then(|| n - 923);
        queue.push(json!({
            "id": n + 1, "task_gid": gid(n), "added_at": v1_time(60, n as i64).to_rfc3339(),
            "updated_at": v1_time(30, n as i64).to_rfc3339(), "source": "O-L Backlog (Desktop Browsers)",
            "description": format!("v1 task {n}"), "notes": "from Asana", "status": status,
            "priority": 2, "complexity": "low", "feasibility": "high", "analysis_summary": "ok",
            "executor_run_id": run_id,
        }));
    }
    let mut runs = Vec::new();
    for (i, state) in RUN_STATES.iter().enumerate() {
        let id = i + 1;
        let task = if id == 17 { gid(940) } else { gid(923 + id) };
        let started = *state != "queued";
        let has_pr = !matches!(*state, "queued");
        runs.push(json!({
            "id": id, "task_gid": task,
            "worktree_path": started.then(|| format!("/Users/alex/Developer/executor/worktrees/{task}")),
            "branch_name": started.then(|| format!("executor/{task}-v1-work")),
            "pr_url": has_pr.then(|| format!("https://github.com/acme/browser/pull/{}", 4100 + id)),
            "pr_number": has_pr.then_some(4100 + id),
            "thread_id": null,
            "started_at": v1_time(20, id as i64).to_rfc3339(),
            "updated_at": v1_time(2, id as i64).to_rfc3339(),
            "completed_at": (*state == "complete").then(|| v1_time(3, id as i64).to_rfc3339()),
            "state": state, "ci_attempts": if *state == "ci_running" { 2 } else { 0 },
            "worker_session_id": started.then(|| format!("v1-sess-{id}")),
            "worker_last_update": started.then(|| v1_time(2, id as i64).to_rfc3339()),
            "worker_pid": (*state == "ci_running").then_some(70000 + id),
            "worker_stuck_count": if *state == "awaiting_review" { 1 } else { 0 },
        }));
    }
    (json!({"executor_queue": queue, "executor_runs": runs}), runs)
}

fn counts(report: &Value, table: &str) -> [u64; 4] {
    ["added", "updated", "unchanged", "refused"].map(|k| report[table][k].as_u64().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeds_v1_state_imports_with_all_17_runs_carried_on_by_the_runner() {
    let env = Env::new(&[]);
    // All seven queued runs may start at once.
    env.edit_config("retry_backoff = \"1s\"", "retry_backoff = \"1s\"\nmax_workers = 8");
    let (export, v1_runs) = seed_export();
    let file = env.path().join("v1.json");
    std::fs::write(&file, export.to_string()).unwrap();
    let file = file.to_str().unwrap();

    let plan = String::from_utf8(env.run(&["import", file, "--dry-run"]).stdout).unwrap();
    for line in [
        "executor_queue: 950 added, 0 updated, 0 unchanged, 0 refused",
        "executor_runs:  17 added, 0 updated, 0 unchanged, 0 refused",
        "skip → skip: 924",
        "in_progress → approved (its run carries on): 14",
        "in_progress → done (its run is complete): 2",
        "awaiting_go → approved (v1 had started its run): 1",
        "awaiting_go → awaiting_go: 9",
        "ci_running → pr (CI pending): 2",
        "awaiting_review → pr (review to come): 6",
        "queued → queued: 7",
        "complete → complete: 2",
        "worker_stuck_count of 10 run(s)",
    ] {
        assert!(plan.contains(line), "{line:?} missing from:\n{plan}");
    }

    let report: Value = serde_json::from_slice(&env.run(&["import", file, "--json"]).stdout).unwrap();
    assert_eq!(counts(&report, "executor_queue"), [950, 0, 0, 0]);
    assert_eq!(counts(&report, "executor_runs"), [17, 0, 0, 0]);

    let store = env.store().await;
    let status = store.status_counts().await.unwrap();
    let queue: BTreeMap<&str, i64> = status.queue.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    assert_eq!(queue, BTreeMap::from([("approved", 15), ("awaiting_go", 9), ("done", 2), ("skip", 924)]));
    let runs_by_state: BTreeMap<&str, i64> = status.runs.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    assert_eq!(runs_by_state, BTreeMap::from([("complete", 2), ("pr", 8), ("queued", 7)]));

    // Each run as v1 had it: branch, pull request, worker fields, times.
    let runs = store.list_runs(&RunFilter::default()).await.unwrap();
    assert_eq!(runs.len(), 17);
    for v1 in &v1_runs {
        let gid = TaskGid::parse(v1["task_gid"].as_str().unwrap()).unwrap();
        let run = runs.iter().find(|r| r.task_gid == gid).unwrap();
        let time = |k: &str| v1[k].as_str().map(|s| s.parse::<DateTime<Utc>>().unwrap());
        assert_eq!(run.branch_name.as_deref(), v1["branch_name"].as_str(), "{gid}");
        assert_eq!(run.worktree_path.as_deref(), v1["worktree_path"].as_str(), "{gid}");
        assert_eq!(run.pr_url.as_deref(), v1["pr_url"].as_str(), "{gid}");
        assert_eq!(run.pr_number, v1["pr_number"].as_i64(), "{gid}");
        assert_eq!(run.worker_pid.map(i64::from), v1["worker_pid"].as_i64(), "{gid}");
        assert_eq!(run.worker_session_id.as_deref(), v1["worker_session_id"].as_str(), "{gid}");
        assert_eq!(i64::from(run.worker_stuck_count), v1["worker_stuck_count"].as_i64().unwrap(), "{gid}");
        assert_eq!(i64::from(run.ci_attempts), v1["ci_attempts"].as_i64().unwrap(), "{gid}");
        assert_eq!(Some(run.started_at), time("started_at"), "{gid}: v1's start");
        assert_eq!(Some(run.updated_at), time("updated_at"), "{gid}: v1's last update");
        assert_eq!(run.completed_at, time("completed_at"), "{gid}");
        assert_eq!(run.worker_last_update, time("worker_last_update"), "{gid}");
    }
    let tasks = store.list_tasks(&TaskFilter::default()).await.unwrap();
    let first = tasks.iter().find(|t| t.task_gid.as_str() == gid(0)).unwrap();
    let v1_task = &export["executor_queue"][0];
    assert_eq!(
        Some(first.added_at),
        v1_task["added_at"].as_str().map(|s| s.parse().unwrap()),
        "v1's added_at"
    );
    assert_eq!(Some(first.updated_at), v1_task["updated_at"].as_str().map(|s| s.parse().unwrap()));
    assert!(tasks.iter().all(|t| t.added_at < Utc::now() - Duration::days(59)), "every task keeps v1's age");

    // Imported again: nothing to do.
    let again: Value = serde_json::from_slice(&env.run(&["import", file, "--json"]).stdout).unwrap();
    assert_eq!(counts(&again, "executor_queue"), [0, 0, 950, 0]);
    assert_eq!(counts(&again, "executor_runs"), [0, 0, 17, 0]);

    // A real runner carries them on: each queued run gets a worker, the others are observed.
    env.run(&["runner", "--once"]);
    for run in store.list_runs(&RunFilter::default()).await.unwrap() {
        let memory = store.run_memory(run.id).await.unwrap();
        let decision = memory.last_decision.unwrap_or_default();
        let sessions = store.worker_sessions(run.id).await.unwrap();
        let v1 = v1_runs.iter().find(|v| v["task_gid"] == run.task_gid.as_str()).unwrap();
        match v1["state"].as_str().unwrap() {
            "queued" => {
                assert_eq!(sessions.len(), 1, "run {} ({decision}) got a worker", run.id);
                assert!(sessions[0].pid.is_some(), "run {}: the worker started", run.id);
                assert!(
                    matches!(run.state, RunState::InProgress | RunState::Pr),
                    "run {}: {}",
                    run.id,
                    run.state
                );
            }
            _ => {
                assert!(
                    sessions.is_empty(),
                    "run {}: no worker for a v1 run past queued: {decision}",
                    run.id
                );
                assert!(!decision.is_empty(), "run {} ({}) was observed", run.id, run.state);
                assert!(run.state != RunState::Abandoned, "run {}: {decision}", run.id);
            }
        }
    }
    // The workers end by themselves; the next runner collects them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let mut live = 0;
        for run in store
            .list_runs(&RunFilter { state: Some(RunState::InProgress), ..Default::default() })
            .await
            .unwrap()
        {
            live +=
                store.worker_sessions(run.id).await.unwrap().iter().filter(|s| s.ended_at.is_none()).count();
        }
        if live == 0 || std::time::Instant::now() > deadline {
            break;
        }
        env.run(&["runner", "--once"]);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let done = store
        .list_tasks(&TaskFilter { status: Some(QueueStatus::Done), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(done.len(), 2, "the completed runs' tasks are done");
}
