//! Issue 34 item 5: the runner finds a merged pull request reverted on the remote's base branch (fetched,
//! never the local branch a human may have checked out), records it once with a note, and leaves alone
//! one that was not reverted.

use crate::runner::TickReport;
use crate::runner::test_hosts::{git, host_runner, remote_and_clones, store_with_runs};
use crate::store::{EventFilter, Store};

/// `branch` with one commit pushed from `clone`, as the runner pushes a run's branch; its head.
fn pushed_branch(clone: &std::path::Path, branch: &str) -> String {
    git(clone, &["checkout", "-q", "-b", branch, "origin/main"]);
    std::fs::write(clone.join(format!("{branch}.txt").replace('/', "-")), branch).unwrap();
    git(clone, &["add", "-A"]);
    git(clone, &["commit", "-q", "-m", &format!("Work on {branch}")]);
    git(clone, &["push", "-q", "origin", branch]);
    git(clone, &["rev-parse", "HEAD"])
}

async fn merged(store: &Store, run: i64, head: &str, branch: &str) {
    store.set_run_workspace(run, None, "/gone", branch).await.unwrap();
    store.set_run_head(run, None, head).await.unwrap();
    store.set_merged_at(run, None, chrono::Utc::now()).await.unwrap();
}

/// The revert the run's note names, and whether the insights count the run reverted.
async fn reverted(store: &Store, run: i64) -> (Option<String>, bool) {
    let outcomes = store.run_outcomes(chrono::Utc::now() - chrono::Duration::days(1)).await.unwrap();
    let counted = outcomes.iter().find(|o| o.run_id == run).unwrap().reverted_at.is_some();
    (revert_sha(store, run).await, counted)
}

async fn revert_sha(store: &Store, run: i64) -> Option<String> {
    let filter = EventFilter { run_id: Some(run), ..Default::default() };
    let notes: Vec<String> = store
        .events(&filter)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "note")
        .filter_map(|e| e.reason)
        .filter(|r| r.contains("reverted"))
        .collect();
    assert!(notes.len() <= 1, "said once: {notes:?}");
    notes.first().map(|n| n.rsplit(' ').next().unwrap().to_string())
}

#[tokio::test]
async fn a_revert_on_the_remotes_base_is_recorded_once_and_an_unreverted_merge_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let clones = remote_and_clones(root, &["alpha", "human"]);
    let (store, runs) = store_with_runs(root, 2).await;
    let (kept, undone) = (&runs[0], &runs[1]);
    let kept_head = pushed_branch(&clones[0], "executor/p1");
    let undone_head = pushed_branch(&clones[0], "executor/p2");
    merged(&store, kept.id, &kept_head, "executor/p1").await;
    merged(&store, undone.id, &undone_head, "executor/p2").await;
    // A human merges both on the remote, then reverts the second merge.
    let human = &clones[1];
    git(human, &["fetch", "-q", "origin"]);
    git(human, &["merge", "-q", "--no-ff", "origin/executor/p1", "-m", "Merge p1"]);
    git(human, &["merge", "-q", "--no-ff", "origin/executor/p2", "-m", "Merge p2"]);
    git(human, &["revert", "--no-edit", "-m", "1", "HEAD"]);
    let revert = git(human, &["rev-parse", "HEAD"]);
    git(human, &["push", "-q", "origin", "main"]);

    let mut alpha = host_runner(root, &store, "alpha", "github", 1);
    let mut report = TickReport::default();
    alpha.check_reverts_when_due(&mut report).await;
    assert_eq!(report.errors, 0, "{:?}", report.failures);
    assert_eq!(reverted(&store, undone.id).await, (Some(revert.clone()), true));
    assert_eq!(reverted(&store, kept.id).await, (None, false));
    let local_main = git(&clones[0], &["rev-parse", "main"]);
    assert_ne!(local_main, revert, "the clone's own main is not moved");

    // Found again by another runner: kept as first recorded, said once.
    assert!(!store.set_reverted(undone.id, "0000000").await.unwrap());
    let mut beta = host_runner(root, &store, "alpha", "github", 1);
    beta.check_reverts_when_due(&mut report).await;
    assert_eq!(reverted(&store, undone.id).await, (Some(revert), true));
}
