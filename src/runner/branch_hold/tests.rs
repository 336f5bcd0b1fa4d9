//! Issue: a run taken over from another host stuck on `git push` (item 1). Real git: two clones of one
//! bare remote stand in for hosts alpha and beta, one SQLite database for both runners.

use std::path::Path;

use super::{BranchHold, Settled, branch_hold};
use crate::domain::{EndReason, Run, WorkerKind};
use crate::runner::Runner;
use crate::runner::test_hosts::{git, host_runner, remote_and_clones, store_with_runs};
use crate::store::{SessionStart, Store, WorkerEnd, test_session};

const BRANCH: &str = "executor/p1-work";

/// A worker of `runner`'s host that ran and ended with `reason`, after committing in `clone`.
async fn worker_ran(store: &Store, runner: &Runner, run: &Run, clone: &Path, reason: EndReason) -> i64 {
    let start = SessionStart::default();
    let s = store.begin_worker_session(run.id, WorkerKind::InProgress, "command", &runner.host, &start);
    let s = s.await.unwrap().unwrap();
    store.set_worker_process(s.id, None, 4242, Some(1), "out", "log").await.unwrap();
    git(clone, &["commit", "-q", "--allow-empty", "-m", &format!("work of session {}", s.id)]);
    store.end_worker_session(s.id, None, &WorkerEnd::new(reason)).await.unwrap();
    s.id
}

async fn settle(runner: &Runner, run_id: i64) -> Result<Settled, crate::runner::RunnerError> {
    let ttl = runner.config.runner.lease_ttl.std();
    assert!(runner.store.claim_run(run_id, &runner.owner, ttl).await.unwrap(), "{} claims", runner.host);
    let run = runner.store.run(run_id).await.unwrap();
    let memory = runner.store.run_memory(run_id).await.unwrap();
    let sessions = runner.store.worker_sessions(run_id).await.unwrap();
    let forge = runner.forge_of(&run).unwrap();
    runner.settle_branch(&run, &forge, &memory, &sessions).await
}

fn remote_head(root: &Path) -> String {
    git(&root.join("remote.git"), &["rev-parse", &format!("refs/heads/{BRANCH}")])
}

#[tokio::test]
async fn only_the_host_whose_worker_moved_the_branch_pushes_it_and_a_lost_holder_is_told() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let clones = remote_and_clones(root, &["alpha", "beta"]);
    let (alpha_clone, beta_clone) = (&clones[0], &clones[1]);
    let (store, runs) = store_with_runs(root, 1).await;
    let run = &runs[0];
    let mut alpha = host_runner(root, &store, "alpha", "github", 2);
    let mut beta = host_runner(root, &store, "beta", "github", 2);
    alpha.register().await.unwrap();
    beta.register().await.unwrap();

    // Alpha's first worker made the branch; the pull request was opened from it (pushed).
    git(alpha_clone, &["checkout", "-q", "-b", BRANCH]);
    let wt = root.join("data-alpha/worktrees/p1-1").display().to_string();
    store.set_run_workspace(run.id, None, &wt, BRANCH).await.unwrap();
    worker_ran(&store, &alpha, run, alpha_clone, EndReason::Finished).await;
    git(alpha_clone, &["push", "-q", "origin", BRANCH]);
    store.set_run_pr(run.id, None, "https://github.com/o/app/pull/1", 1).await.unwrap();
    store.set_pushed_at(run.id, None, chrono::Utc::now()).await.unwrap();
    let pushed = remote_head(root);

    // Alpha's next worker committed and ended; alpha's runner let the run go before pushing.
    worker_ran(&store, &alpha, run, alpha_clone, EndReason::Finished).await;
    let alpha_head = git(alpha_clone, &["rev-parse", "HEAD"]);
    // Beta picks it up to watch: its clone lacks the branch, so it must not push (the old code did, and
    // failed with "src refspec … does not match any" on every tick). It lets the run go for alpha.
    assert_eq!(settle(&beta, run.id).await.unwrap(), Settled::LetGo);
    assert_eq!(remote_head(root), pushed);
    assert!(!store.holds_lease(run.id, &beta.owner).await.unwrap(), "beta let the run go");
    let memory = store.run_memory(run.id).await.unwrap();
    assert!(memory.last_decision.unwrap_or_default().contains("host alpha's clone"));
    // Alpha's runner takes it and pushes its own commits.
    assert_eq!(settle(&alpha, run.id).await.unwrap(), Settled::Pushed);
    assert_eq!(remote_head(root), alpha_head);
    store.release_run(run.id, &alpha.owner).await.unwrap();

    // Alpha's next worker is cut off with its host: its commits can never be pushed. Beta goes on from
    // the branch as pushed, once, and the human is told.
    let lost = worker_ran(&store, &alpha, run, alpha_clone, EndReason::HostLost).await;
    assert_eq!(settle(&beta, run.id).await.unwrap(), Settled::Proceed);
    assert_eq!(remote_head(root), alpha_head, "nothing pushed from beta's clone");
    let notices = store.notices(Some(run.id)).await.unwrap();
    let told = notices.iter().filter(|n| n.notice_key.as_deref() == Some(&format!("unpushed_lost:{lost}")));
    assert_eq!(told.count(), 1, "{notices:?}");
    assert_eq!(settle(&beta, run.id).await.unwrap(), Settled::Proceed, "given up once, then settled");
    assert_eq!(store.notices(Some(run.id)).await.unwrap().len(), notices.len());

    // Beta's own worker, in a clone whose branch is stale: the push is refused the same way twice in a
    // row, and the second time the human is told (once).
    git(beta_clone, &["checkout", "-q", "-b", BRANCH, "origin/main"]);
    let mine = worker_ran(&store, &beta, run, beta_clone, EndReason::Finished).await;
    let key = format!("push_failed:{mine}");
    let told =
        |n: &[crate::store::Notice]| n.iter().filter(|n| n.notice_key.as_deref() == Some(&key)).count();
    for (tick, want) in [(1, 0), (2, 1), (3, 1)] {
        // As the engine does: a failed step is the run's decision.
        let e = settle(&beta, run.id).await.expect_err("refused: the remote moved on");
        let current = store.run(run.id).await.unwrap();
        beta.step_failed(&mut Default::default(), &current, &e).await.unwrap();
        assert_eq!(told(&store.notices(Some(run.id)).await.unwrap()), want, "after tick {tick}");
    }
}

#[tokio::test]
async fn a_holder_whose_runner_is_gone_is_waited_for_within_the_lease_ttl() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, _) = store_with_runs(tmp.path(), 1).await;
    let ttl = std::time::Duration::from_secs(600);
    assert!(store.host_absent_for("alpha", ttl).await.unwrap(), "never seen");
    let alpha = host_runner(tmp.path(), &store, "alpha", "local", 2);
    let mut alpha = alpha;
    alpha.register().await.unwrap();
    assert!(!store.host_absent_for("alpha", ttl).await.unwrap());
    store.runner_ended(&alpha.owner).await.unwrap();
    assert!(!store.host_absent_for("alpha", ttl).await.unwrap(), "ended just now: cron starts it again");
    assert!(store.host_absent_for("alpha", std::time::Duration::ZERO).await.unwrap());
}

#[test]
fn the_newest_worker_that_ran_since_the_push_holds_the_branch() {
    let at = |secs| chrono::DateTime::from_timestamp(secs, 0);
    let ran = |id, host: &str, end| crate::store::WorkerSession {
        pid: Some(7),
        host: host.into(),
        ended_at: at(end),
        ..test_session(id, WorkerKind::InProgress)
    };
    let sessions = [ran(1, "alpha", 10), ran(2, "beta", 20)];
    assert_eq!(branch_hold(&sessions, at(25), "alpha"), BranchHold::Pushed);
    assert_eq!(branch_hold(&sessions, at(15), "alpha"), BranchHold::Elsewhere(&sessions[1]));
    assert_eq!(branch_hold(&sessions, None, "beta"), BranchHold::Here(&sessions[1]));
    // A worker that never started committed nothing, and a review moves no branch, wherever they ran.
    let never = crate::store::WorkerSession { pid: None, ..ran(3, "alpha", 30) };
    let review = crate::store::WorkerSession { kind: WorkerKind::PrReview, ..ran(4, "alpha", 40) };
    let sessions = [ran(2, "beta", 20), never, review];
    assert_eq!(branch_hold(&sessions, at(15), "alpha"), BranchHold::Elsewhere(&sessions[0]));
    assert_eq!(branch_hold(&sessions, at(25), "alpha"), BranchHold::Pushed);
}

#[tokio::test]
async fn a_branch_a_human_pushed_to_is_merged_before_the_push_and_a_conflict_is_left_to_the_human() {
    // Found by the soak: a human's commit pushed to the pull request's branch made every later push of
    // the run's own commits fail (`rejected (fetch first)`), and the run waited forever for a human who
    // could do nothing about it.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let clones = remote_and_clones(root, &["alpha", "human"]);
    let (alpha_clone, human_clone) = (&clones[0], &clones[1]);
    let (store, runs) = store_with_runs(root, 1).await;
    let run = &runs[0];
    let mut alpha = host_runner(root, &store, "alpha", "github", 2);
    alpha.register().await.unwrap();
    // The run's worktree is alpha's worktree of the branch (under its worktree root: a path read back
    // from the database is used nowhere else), pushed when the pull request was opened.
    let wt = root.join("data-alpha/worktrees/p1-1");
    git(alpha_clone, &["worktree", "add", "-q", "-b", BRANCH, wt.to_str().unwrap()]);
    store.set_run_workspace(run.id, None, &wt.display().to_string(), BRANCH).await.unwrap();
    worker_ran(&store, &alpha, run, &wt, EndReason::Finished).await;
    git(&wt, &["push", "-q", "origin", BRANCH]);
    store.set_run_pr(run.id, None, "https://github.com/o/app/pull/1", 1).await.unwrap();
    store.set_pushed_at(run.id, None, chrono::Utc::now()).await.unwrap();

    // The human pushes a fix of their own to the branch; alpha's next worker commits meanwhile.
    let human_commit = |file: &str, text: &str| {
        git(human_clone, &["fetch", "-q", "origin"]);
        git(human_clone, &["checkout", "-q", "-B", BRANCH, &format!("origin/{BRANCH}")]);
        std::fs::write(human_clone.join(file), text).unwrap();
        git(human_clone, &["add", file]);
        git(human_clone, &["-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "by hand"]);
        git(human_clone, &["push", "-q", "origin", BRANCH]);
        git(human_clone, &["rev-parse", "HEAD"])
    };
    let theirs = human_commit("HUMAN.md", "a fix by hand\n");
    worker_ran(&store, &alpha, run, &wt, EndReason::Finished).await;
    let ours = git(&wt, &["rev-parse", "HEAD"]);
    assert_eq!(settle(&alpha, run.id).await.unwrap(), Settled::Pushed);
    let pushed = remote_head(root);
    for commit in [&theirs, &ours] {
        git(alpha_clone, &["merge-base", "--is-ancestor", commit, &pushed]);
    }
    assert!(wt.join("HUMAN.md").exists(), "the human's fix is in the worktree");
    store.release_run(run.id, &alpha.owner).await.unwrap();

    // A human's change that conflicts with the worker's: the merge is undone, the push stays refused.
    let theirs = human_commit("feature.txt", "the human's version\n");
    std::fs::write(wt.join("feature.txt"), "the agent's version\n").unwrap();
    git(&wt, &["add", "feature.txt"]);
    worker_ran(&store, &alpha, run, &wt, EndReason::Finished).await;
    let e = settle(&alpha, run.id).await.expect_err("a conflict is not merged by the runner");
    assert!(e.to_string().contains("merge"), "{e}");
    assert_eq!(remote_head(root), theirs, "nothing pushed over the human's commit");
    assert!(!alpha_clone.join(".git/worktrees/p1-1/MERGE_HEAD").exists(), "the failed merge was undone");
    assert_eq!(std::fs::read_to_string(wt.join("feature.txt")).unwrap(), "the agent's version\n");
}
