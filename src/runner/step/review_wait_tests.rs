//! Issue 37, item 5: a decision taken in the tick that posted a review. The soak abandoned a run 3 ms
//! after its third review posted a finding ("no passing review of this head"): the tick had read the run
//! before the review's verdict was recorded, and decided on a view that lacked the findings. Real git,
//! the local forge, one SQLite database.

use crate::domain::{Actor, EndReason, ReviewVerdict, RunState, WorkerKind};
use crate::runner::test_hosts::{git, host_runner, remote_and_clones, store_with_runs};
use crate::store::{SessionStart, Store, WorkerEnd};

const BRANCH: &str = "executor/p1-work";

/// A `pr_review` session at `sha` on the runner's host, not ended yet.
async fn review_began(store: &Store, run_id: i64, sha: &str) -> i64 {
    let start = SessionStart { start_sha: Some(sha.into()), ..Default::default() };
    let s = store.begin_worker_session(run_id, WorkerKind::PrReview, "command", "alpha", &start).await;
    s.unwrap().unwrap().id
}

#[tokio::test]
async fn the_tick_that_posts_a_review_decides_nothing_on_what_it_read_before() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let clone = &remote_and_clones(root, &["alpha"])[0];
    let (store, runs) = store_with_runs(root, 1).await;
    let run = &runs[0];
    let mut runner = host_runner(root, &store, "alpha", "local", 2);
    runner.register().await.unwrap();
    let ttl = runner.config.runner.lease_ttl.std();
    assert!(store.claim_run(run.id, &runner.owner, ttl).await.unwrap());

    // The run's work is on its branch, in an open pull request whose CI is green at the head.
    git(clone, &["checkout", "-q", "-b", BRANCH]);
    git(clone, &["commit", "-q", "--allow-empty", "-m", "the feature"]);
    let head = git(clone, &["rev-parse", "HEAD"]);
    let wt = root.join("data-alpha/worktrees/p1-1").display().to_string();
    store.set_run_workspace(run.id, None, &wt, BRANCH).await.unwrap();
    store
        .set_run_state_if(run.id, RunState::Queued, RunState::InProgress, None, Actor::Runner, "w")
        .await
        .unwrap();
    let forge = runner.forge_of(run).unwrap();
    let branched = store.run(run.id).await.unwrap();
    let pr = forge.open_pr(&branched, &store.task(&run.task_gid).await.unwrap(), None).await.unwrap();
    store.set_run_pr(run.id, None, &pr.url, pr.number).await.unwrap();
    store
        .set_run_state_if(run.id, RunState::InProgress, RunState::Pr, None, Actor::Runner, "pr")
        .await
        .unwrap();
    let check = store.start_local_check(pr.number, &head, "ci", &wt, "alpha").await.unwrap();
    store.finish_local_check(check, "success", "ok").await.unwrap();

    // Two reviews crashed; the third ends with a failing verdict and one finding just after the tick
    // read the run (the soak's case).
    for _ in 0..2 {
        let s = review_began(&store, run.id, &head).await;
        store.end_worker_session(s, None, &WorkerEnd::new(EndReason::Failed)).await.unwrap();
    }
    let third = review_began(&store, run.id, &head).await;
    let read_before = store.run(run.id).await.unwrap();
    let review = r#"{"verdict": "fail", "summary": "not there yet", "findings": [{"body": "say more"}]}"#;
    let end = WorkerEnd {
        result_json: Some(review.into()),
        verdict: Some(ReviewVerdict::Fail),
        ..WorkerEnd::new(EndReason::Finished)
    };
    store.end_worker_session(third, None, &end).await.unwrap();
    runner.free_slots = 0;

    let step = |run: crate::domain::Run| {
        let (store, forge) = (store.clone(), forge.clone());
        async move {
            let memory = store.run_memory(run.id).await.unwrap();
            let snapshot = forge.snapshots(std::slice::from_ref(&run)).await.unwrap().prs.remove(&run.id);
            (run, memory, snapshot.flatten())
        }
    };
    let (stale, memory, snapshot) = step(read_before).await;
    assert!(runner.step(&stale, &forge, memory, None, snapshot).await.unwrap(), "the review was posted");
    let after = store.run(run.id).await.unwrap();
    let memory = store.run_memory(run.id).await.unwrap();
    assert_eq!(after.state, RunState::Pr, "decided on the stale view: {:?}", memory.last_decision);
    assert_eq!(memory.last_decision, None, "nothing is decided in the tick that posted the review");
    assert_eq!(store.worker_sessions(run.id).await.unwrap().len(), 3, "no worker started");
    let sessions = store.worker_sessions(run.id).await.unwrap();
    assert!(sessions[2].review_posted_at.is_some());
    let comments = store.local_comments(pr.number).await.unwrap();
    assert!(comments.iter().any(|c| c.body.contains("say more")), "{comments:?}");

    // The next tick sees the review and its verdict: fix_comments on its findings (no slot here).
    let (fresh, memory, snapshot) = step(store.run(run.id).await.unwrap()).await;
    let previous = memory.last_snapshot.as_deref().and_then(|j| serde_json::from_str(j).ok());
    runner.step(&fresh, &forge, memory, previous, snapshot).await.unwrap();
    let memory = store.run_memory(run.id).await.unwrap();
    let decided = memory.last_decision.unwrap_or_default();
    assert!(decided.contains("fix_comments works on its findings"), "{decided}");
    assert_eq!(store.run(run.id).await.unwrap().state, RunState::Pr);
}
