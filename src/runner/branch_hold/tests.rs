//! Issue: a run taken over from another host stuck on `git push` (item 1). Real git: two clones of one
//! bare remote stand in for hosts alpha and beta, one SQLite database for both runners.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{BranchHold, Settled, branch_hold};
use crate::config::Config;
use crate::domain::{Actor, EndReason, QueueStatus, Run, TaskGid, WorkerKind};
use crate::runner::Runner;
use crate::store::{NewTask, SessionStart, Store, WorkerEnd, test_session};

const BRANCH: &str = "executor/p1-work";

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A bare remote with `main`, and one clone of it per host.
pub(crate) fn remote_and_clones(root: &Path, hosts: &[&str]) -> Vec<PathBuf> {
    let remote = root.join("remote.git");
    git(root, &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
    let seed = root.join("seed");
    git(root, &["clone", "-q", remote.to_str().unwrap(), seed.to_str().unwrap()]);
    git(&seed, &["commit", "-q", "--allow-empty", "-m", "base"]);
    git(&seed, &["push", "-q", "origin", "HEAD:refs/heads/main"]);
    hosts
        .iter()
        .map(|h| {
            let clone = root.join(h);
            git(root, &["clone", "-q", remote.to_str().unwrap(), clone.to_str().unwrap()]);
            clone
        })
        .collect()
}

/// A runner of `host` over its own clone and data directory, on `forge`.
pub(crate) fn host_runner(root: &Path, store: &Store, host: &str, forge: &str, max_workers: u32) -> Runner {
    let config = format!(
        r#"
[paths]
data_dir = "{data}"
[runner]
host_name = "{host}"
max_workers = {max_workers}
[github]
api_url = "http://127.0.0.1:9"
request_timeout = "1s"
[repos.app]
path = "{repo}"
forge = "{forge}"
github = "o/app"
remote = "origin"
base = "main"
"#,
        data = root.join(format!("data-{host}")).display(),
        repo = root.join(host).display(),
    );
    Runner::new(Config::parse(&config).unwrap(), store.clone()).unwrap()
}

pub(crate) async fn store_with_runs(root: &Path, n: usize) -> (Store, Vec<Run>) {
    let store = Store::open(&format!("sqlite://{}", root.join("executor.db").display())).await.unwrap();
    store.migrate().await.unwrap();
    let mut runs = Vec::new();
    for i in 1..=n {
        let gid = TaskGid::parse(&format!("p{i}")).unwrap();
        let task = NewTask { description: Some("work".into()), ..Default::default() };
        store.upsert_task(&gid, &task, Actor::Cli).await.unwrap();
        store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Analyzer, None).await.unwrap();
        store.set_task_status(&gid, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
        runs.push(store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap());
    }
    (store, runs)
}

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
    assert!(settle(&beta, run.id).await.is_err());
    let key = format!("push_failed:{mine}");
    let told = |n: &[crate::store::Notice]| n.iter().any(|n| n.notice_key.as_deref() == Some(key.as_str()));
    assert!(!told(&store.notices(Some(run.id)).await.unwrap()), "not after one failure");
    assert!(settle(&beta, run.id).await.is_err());
    assert!(told(&store.notices(Some(run.id)).await.unwrap()), "told after the same failure twice");
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
    // A worker that never started committed nothing, wherever it was recorded.
    let never = crate::store::WorkerSession { pid: None, ..ran(3, "alpha", 30) };
    let sessions = [ran(2, "beta", 20), never];
    assert_eq!(branch_hold(&sessions, at(15), "alpha"), BranchHold::Elsewhere(&sessions[0]));
}
