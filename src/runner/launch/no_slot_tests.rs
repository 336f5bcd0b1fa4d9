//! Issue: notes and worktrees of runs that never moved (item 4). Host beta takes over alpha's run, makes
//! a worktree for it, and finds no free slot: nothing continued on beta, so its history must not say so,
//! the run still names alpha's worktree, and beta's worktree is removed. Once beta has a slot, the
//! worker starts there and the note is written, once.

use crate::domain::{EndReason, WorkerKind};
use crate::runner::test_hosts::{git, host_runner, remote_and_clones, store_with_runs};
use crate::store::{EventFilter, SessionStart, WorkerBegin, WorkerEnd};

const BRANCH: &str = "executor/p1-work";

#[tokio::test]
async fn a_host_with_no_slot_leaves_no_note_and_no_worktree_and_one_with_a_slot_says_it_continues() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let clones = remote_and_clones(root, &["beta"]);
    let (store, runs) = store_with_runs(root, 2).await;
    let (run, other) = (&runs[0], &runs[1]);
    // Alpha worked on the run last, in its own worktree; the branch is in the shared repository.
    git(&clones[0], &["branch", BRANCH, "main"]);
    let alpha_wt = root.join("data-alpha/worktrees/p1-1").display().to_string();
    store.set_run_workspace(run.id, None, &alpha_wt, BRANCH).await.unwrap();

    let mut beta = host_runner(root, &store, "beta", "local", 1);
    beta.register().await.unwrap();
    let ttl = beta.config.runner.lease_ttl.std();
    for r in [run, other] {
        assert!(store.claim_run(r.id, &beta.owner, ttl).await.unwrap());
    }
    // Beta's one slot is taken by another run's worker.
    let (slot, start) = (beta.slot(), SessionStart::default());
    let busy = store.begin_runner_worker(other.id, WorkerKind::Queued, "command", &slot, &start).await;
    let WorkerBegin::Started(busy) = busy.unwrap() else { panic!("beta's slot") };

    let run_now = store.run(run.id).await.unwrap();
    let forge = beta.forge_of(&run_now).unwrap();
    let command = crate::runner::agent_choice::NextAgent { name: "command".into(), turned: None };
    assert!(!beta.launch(&run_now, WorkerKind::InProgress, &command, &forge, None).await.unwrap(), "no slot");
    let notes = || async {
        let f = EventFilter { run_id: Some(run.id), ..Default::default() };
        let events = store.events(&f).await.unwrap();
        events.into_iter().filter_map(|e| e.reason).filter(|r| r.contains("is on another host")).count()
    };
    assert_eq!(notes().await, 0, "nothing continued on beta");
    assert_eq!(store.run(run.id).await.unwrap().worktree_path.as_deref(), Some(alpha_wt.as_str()));
    let listed = git(&clones[0], &["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("worktree ").count(), 1, "beta's unused worktree was removed: {listed}");
    assert!(!root.join("data-beta/worktrees/p1-1").exists());

    // With the slot free again, beta's worker starts from alpha's work: now it is said, once.
    store.end_worker_session(busy.id, None, &WorkerEnd::new(EndReason::Finished)).await.unwrap();
    assert!(store.claim_run(run.id, &beta.owner, ttl).await.unwrap());
    let run_now = store.run(run.id).await.unwrap();
    assert!(beta.launch(&run_now, WorkerKind::InProgress, &command, &forge, None).await.unwrap(), "started");
    assert_eq!(notes().await, 1);
    let path = store.run(run.id).await.unwrap().worktree_path.unwrap_or_default();
    assert!(path.starts_with(&root.join("data-beta").display().to_string()), "{path}");
    // The agent (`true`) ends by itself; its end is recorded before the test's directory goes.
    beta.ended_rx.recv().await.unwrap();
}
