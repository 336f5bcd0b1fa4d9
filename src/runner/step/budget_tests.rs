//! Issue 35, item 5: a run its budget stops was explained as "No free worker slot" when the host had
//! none (the caps were read only once a worker was about to start), while it stayed marked as stopped.
//! It is told which cap and by how much, slot or not, and is not let go to wait for a slot elsewhere.

use crate::domain::{BudgetCap, EndReason, WorkerKind};
use crate::runner::test_hosts::{host_runner_with, remote_and_clones, store_with_runs};
use crate::store::{SessionStart, WorkerEnd};

#[tokio::test]
async fn a_budget_stop_without_a_free_slot_says_which_cap_and_by_how_much() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    remote_and_clones(root, &["alpha"]);
    let (store, runs) = store_with_runs(root, 1).await;
    let run = &runs[0];
    let worker = "agent = \"command\"\nsandbox = \"off\"\n[worker.command]\nargv = [\"true\"]\n\
                  [budget]\nper_run_usd = 1.0\nper_day_usd = 50.0\nmin_launch_usd = 0.05";
    let mut runner = host_runner_with(root, &store, "alpha", "local", 2, worker);
    runner.register().await.unwrap();
    let ttl = runner.config.runner.lease_ttl.std();
    assert!(store.claim_run(run.id, &runner.owner, ttl).await.unwrap());
    // Its first worker spent $0.96 of the run's $1 and stopped at its cap: $0.04 is left.
    let start = SessionStart::default();
    let s = store.begin_worker_session(run.id, WorkerKind::Queued, "command", "alpha", &start).await;
    let end = WorkerEnd { cost_usd: 0.96, ..WorkerEnd::new(EndReason::BudgetExceeded) };
    store.end_worker_session(s.unwrap().unwrap().id, None, &end).await.unwrap();
    runner.free_slots = 0;

    let fresh = store.run(run.id).await.unwrap();
    let forge = runner.forge_of(&fresh).unwrap();
    let memory = store.run_memory(run.id).await.unwrap();
    runner.step(&fresh, &forge, memory, None, None).await.unwrap();

    let memory = store.run_memory(run.id).await.unwrap();
    let decided = memory.last_decision.clone().unwrap_or_default();
    assert!(!decided.contains("No free worker slot"), "{decided}");
    assert!(decided.contains("$0.96 of its $1.00 budget (budget.per_run_usd)"), "{decided}");
    assert!(decided.contains("$0.04 left is below the $0.05 minimum launch"), "{decided}");
    assert_eq!(memory.budget_cap, Some(BudgetCap::Run), "the cap is recorded as such: {memory:?}");
    let after = store.run(run.id).await.unwrap();
    assert_eq!(after.lease_owner.as_deref(), Some(runner.owner.as_str()), "not let go for a slot");
    let notices = store.notices(Some(run.id)).await.unwrap();
    assert!(notices.iter().any(|n| n.message.contains("minimum launch")), "{notices:?}");
}
