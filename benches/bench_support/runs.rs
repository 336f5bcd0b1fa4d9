//! Runs set up for the benchmarks, through the store's public operations.

use executor::domain::{Actor, QueueStatus, RunState, TaskGid};
use executor::store::{NewTask, Store};

/// A run in `complete` for task `B{i}` with pull request `number`, through the store's public
/// operations and the state machine's legal transitions.
pub async fn complete_run(store: &Store, i: usize, number: i64, url: &str, worktree: &std::path::Path) {
    let gid = TaskGid::parse(&format!("B{i}")).expect("gid");
    let task = NewTask { description: Some(format!("task {i}")), ..Default::default() };
    store.upsert_task(&gid, &task, Actor::Cli).await.expect("add");
    store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Cli, None).await.expect("triage");
    store.set_task_status(&gid, QueueStatus::Approved, Actor::Cli, None).await.expect("approve");
    let run = store.create_run_for_task(&gid, Actor::Runner).await.expect("run").expect("new run");
    let branch = format!("executor/b{i}");
    store.set_run_workspace(run.id, None, &worktree.display().to_string(), &branch).await.expect("ws");
    for (from, to) in [
        (RunState::Queued, RunState::InProgress),
        (RunState::InProgress, RunState::Pr),
        (RunState::Pr, RunState::Complete),
    ] {
        store.set_run_state_if(run.id, from, to, None, Actor::Runner, "bench").await.expect("state");
    }
    store.set_run_pr(run.id, None, url, number).await.expect("pr");
}
