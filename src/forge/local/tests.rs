//! The local forge against real git, real processes and a real SQLite store: CI that cannot start is an
//! error with its reason (never a code failure), a real failure stays one, and a deleted branch is merged
//! or closed by what happened to its work.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::*;
use crate::domain::{Actor, QueueStatus, TaskGid};
use crate::forge::CiRollup;
use crate::store::NewTask;

struct Fixture {
    dir: tempfile::TempDir,
    forge: LocalForge,
    run: Run,
    /// The head of the run's branch `feature`, one commit past `main`.
    sha: String,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.test", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository whose branch `feature` adds an executable `ci.sh` that fails with exit status 3, a
/// store with one run on that branch, and its open pull request. `ci_command` is TOML.
async fn fixture(ci_command: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "app\n").unwrap();
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-qm", "initial"]);
    git(&repo, &["checkout", "-qb", "feature"]);
    std::fs::write(repo.join("ci.sh"), "#!/bin/sh\necho 'the tests fail'\nexit 3\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(repo.join("ci.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    git(&repo, &["add", "ci.sh"]);
    git(&repo, &["commit", "-qm", "feature"]);
    let sha = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["checkout", "-q", "main"]);

    let store = Store::open(&format!("sqlite://{}", dir.path().join("executor.db").display())).await.unwrap();
    store.migrate().await.unwrap();
    let gid = TaskGid::parse("f1").unwrap();
    let task = NewTask { description: Some("work".into()), ..Default::default() };
    store.upsert_task(&gid, &task, Actor::Cli).await.unwrap();
    store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
    store.set_task_status(&gid, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
    let mut run = store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap();
    run.branch_name = Some("feature".into());

    let repo_toml = format!("path = {:?}\nci_command = {ci_command}\n", repo.display().to_string());
    let forge = LocalForge {
        store,
        repo_name: "app".into(),
        repo: toml::from_str(&repo_toml).unwrap(),
        ci_root: dir.path().join("ci"),
        host: "here".into(),
        ci_sandbox: None,
    };
    forge.open_pr(&run).await.unwrap();
    Fixture { dir, forge, run, sha }
}

impl Fixture {
    async fn checks(&self) -> Vec<LocalCheck> {
        let pr = self.forge.store.local_pr_for_run(self.run.id).await.unwrap().unwrap();
        self.forge.store.local_checks(pr.id).await.unwrap()
    }

    /// Polls CI until no check is pending (a real process runs in the background).
    async fn finished_checks(&self) -> Vec<LocalCheck> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            self.forge.poll_ci().await.unwrap();
            let checks = self.checks().await;
            if checks.iter().all(|c| c.status != "pending") {
                return checks;
            }
            assert!(Instant::now() < deadline, "CI never finished: {checks:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[tokio::test]
async fn a_missing_ci_program_is_an_error_with_its_reason_not_a_failure() {
    let f = fixture(r#"["executor-no-such-ci-program", "--all"]"#).await;
    f.forge.trigger_ci(&f.run, &f.sha).await.unwrap();
    let checks = f.checks().await;
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].status, "error", "known before anything runs: {checks:?}");
    assert_eq!(checks[0].pid, None, "nothing was started");
    let why = checks[0].output_tail.as_deref().unwrap_or_default();
    assert!(
        why.contains(r#"CI could not start: CI program "executor-no-such-ci-program" was not found"#),
        "{why}"
    );

    let snapshot = f.forge.snapshot(&f.run).await.unwrap().unwrap();
    assert_eq!(snapshot.checks[0].status, CheckStatus::Error);
    assert_eq!(snapshot.ci(), CiRollup::Error);
}

#[tokio::test]
async fn a_ci_directory_that_cannot_be_created_is_an_error() {
    let mut f = fixture(r#"["./ci.sh"]"#).await;
    let blocker = f.dir.path().join("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    f.forge.ci_root = blocker.join("ci");
    f.forge.trigger_ci(&f.run, &f.sha).await.unwrap();
    let checks = f.checks().await;
    assert_eq!(checks[0].status, "error", "{checks:?}");
    let why = checks[0].output_tail.as_deref().unwrap_or_default();
    assert!(why.starts_with("CI could not start: creating "), "{why}");
}

#[tokio::test]
async fn a_ci_program_in_the_checkout_runs_and_its_failure_stays_a_failure() {
    let f = fixture(r#"["./ci.sh"]"#).await;
    f.forge.trigger_ci(&f.run, &f.sha).await.unwrap();
    let checks = f.finished_checks().await;
    assert_eq!(checks[0].status, "failure", "a failing build is the code's: {checks:?}");
    let output = checks[0].output_tail.as_deref().unwrap_or_default();
    assert!(output.starts_with("exit status 3\n") && output.contains("the tests fail"), "{output}");
    let snapshot = f.forge.snapshot(&f.run).await.unwrap().unwrap();
    assert_eq!(snapshot.ci(), CiRollup::Failure);
}

/// What a runner killed while starting CI leaves: the check directory (its lock free again, the runner
/// being dead) and a pending check with no pid, no pid file and no exit status.
async fn abandoned_check(f: &Fixture, with_lock: bool) -> PathBuf {
    let pr = f.forge.store.local_pr_for_run(f.run.id).await.unwrap().unwrap();
    let dir = f.dir.path().join("ci").join("abandoned");
    if with_lock {
        drop(CiLock::take(&dir).unwrap());
    } else {
        std::fs::create_dir_all(&dir).unwrap();
    }
    f.forge
        .store
        .start_local_check(pr.id, &f.sha, CHECK_NAME, &dir.display().to_string(), "here")
        .await
        .unwrap();
    dir
}

#[tokio::test]
async fn a_check_whose_runner_died_while_starting_it_is_started_again() {
    for with_lock in [true, false] {
        let f = fixture(r#"["./ci.sh"]"#).await;
        abandoned_check(&f, with_lock).await;
        assert_eq!(f.forge.poll_ci().await.unwrap(), 0, "started again, not finished");
        let checks = f.checks().await;
        assert_eq!(checks[0].status, "pending", "{checks:?}");
        assert!(checks[0].pid.is_some(), "{checks:?}");
        let checks = f.finished_checks().await;
        assert_eq!(checks.len(), 1, "the same check, not a second one: {checks:?}");
        let output = checks[0].output_tail.as_deref().unwrap_or_default();
        assert_eq!(checks[0].status, "failure", "CI really ran (lock file: {with_lock}): {checks:?}");
        assert!(output.starts_with("exit status 3\n") && output.contains("the tests fail"), "{output}");
    }
}

#[tokio::test]
async fn a_check_being_started_is_left_alone() {
    // Another start holds the lock (a runner between recording the check and spawning its CI).
    let f = fixture(r#"["./ci.sh"]"#).await;
    let dir = abandoned_check(&f, true).await;
    let held = CiLock::take(&dir).unwrap();
    assert_eq!(f.forge.poll_ci().await.unwrap(), 0);
    let checks = f.checks().await;
    assert_eq!((checks[0].status.as_str(), checks[0].pid), ("pending", None), "{checks:?}");
    drop(held);
}

#[tokio::test]
async fn ci_that_cannot_start_when_started_again_is_still_an_error() {
    let f = fixture(r#"["executor-no-such-ci-program"]"#).await;
    abandoned_check(&f, true).await;
    f.forge.poll_ci().await.unwrap();
    let checks = f.checks().await;
    assert_eq!(checks[0].status, "error", "{checks:?}");
    let why = checks[0].output_tail.as_deref().unwrap_or_default();
    assert!(why.starts_with("CI could not start: CI program"), "{why}");
    f.forge.poll_ci().await.unwrap();
    assert_eq!(f.checks().await[0].status, "error", "an error stays one");
}

#[tokio::test]
async fn a_ci_shell_killed_from_outside_is_a_failure_not_a_restart() {
    let f = fixture(r#"["sleep", "600"]"#).await;
    f.forge.trigger_ci(&f.run, &f.sha).await.unwrap();
    let pid = f.checks().await[0].pid.expect("CI started");
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    let checks = f.finished_checks().await;
    assert_eq!(checks[0].status, "failure", "{checks:?}");
    assert!(checks[0].output_tail.as_deref().unwrap_or_default().contains("without an exit status"));
}

#[tokio::test]
async fn a_check_whose_pid_was_not_recorded_is_found_by_the_pid_file_ci_wrote() {
    // A crash after CI started but before its pid was recorded: the CI's own pid file still finds it.
    let f = fixture(r#"["./ci.sh"]"#).await;
    let pr = f.forge.store.local_pr_for_run(f.run.id).await.unwrap().unwrap();
    let dir = f.dir.path().join("ci").join("started");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pid"), format!("{}\n", std::process::id())).unwrap();
    f.forge
        .store
        .start_local_check(pr.id, &f.sha, CHECK_NAME, &dir.display().to_string(), "here")
        .await
        .unwrap();
    assert_eq!(f.forge.poll_ci().await.unwrap(), 0, "still running");
    assert_eq!(f.checks().await[0].status, "pending");
}

#[tokio::test]
async fn a_deleted_branch_is_merged_when_its_work_reached_the_base_and_closed_otherwise() {
    let mut f = fixture("[]").await;
    let repo = f.dir.path().join("repo");
    let open = f.forge.snapshot(&f.run).await.unwrap().unwrap();
    assert_eq!(open.state, PrState::Open);
    // The branch adds ci.sh, three lines, against main.
    assert_eq!(open.diff, Some(crate::forge::DiffStat { files: 1, additions: 3, deletions: 0 }));
    f.run.head_sha = Some(f.sha.clone());

    git(&repo, &["branch", "-D", "feature"]);
    let closed = f.forge.snapshot(&f.run).await.unwrap().unwrap();
    assert_eq!(closed.state, PrState::Closed, "work not on main");
    assert_eq!(closed.diff, None, "no branch, no diff");

    git(&repo, &["merge", "-q", "--ff-only", &f.sha]);
    assert_eq!(
        f.forge.snapshot(&f.run).await.unwrap().unwrap().state,
        PrState::Merged,
        "merged with git, then the branch deleted"
    );
}

/// Issue 33 item 10: `git merge` alone leaves the branch in place; the pull request used to stay "open
/// (draft)", and a later comment sent a worker to commit on the merged branch.
#[tokio::test]
async fn a_branch_merged_with_git_and_left_in_place_is_merged() {
    let f = fixture("[]").await;
    let repo = f.dir.path().join("repo");
    git(&repo, &["merge", "-q", "--no-ff", "-m", "merge feature", "feature"]);
    assert_eq!(f.forge.snapshot(&f.run).await.unwrap().unwrap().state, PrState::Merged);
}

/// An agent's reply goes out once: recorded before the post, and found on the pull request (not posted
/// again) when the attempt that posted it died before marking it posted.
#[tokio::test]
async fn a_reply_is_posted_once_even_when_an_attempt_died_after_posting_it() {
    use crate::domain::WorkerKind;
    use crate::forge::{AGENT_AUTHOR, Forge, deliver_reply};
    use crate::store::Answer;
    let Fixture { dir: _dir, forge, run, .. } = fixture(r#"["true"]"#).await;
    let store = forge.store.clone();
    let forge = Forge::Local(forge);
    let pr_id = store.local_pr_for_run(run.id).await.unwrap().unwrap().id;
    let ask = |body: &'static str| NewComment {
        author: "alex",
        body,
        path: None,
        line: None,
        in_reply_to: None,
        by_agent: false,
    };
    let first = store.add_local_comment(pr_id, &ask("rename it")).await.unwrap().to_string();
    let second = store.add_local_comment(pr_id, &ask("and explain why")).await.unwrap().to_string();
    let session = store
        .begin_worker_session(run.id, WorkerKind::FixComments, "command", "here", &Default::default())
        .await
        .unwrap()
        .unwrap();
    store.offer_comments(run.id, session.id, &[first.clone(), second.clone()]).await.unwrap();

    let done = "[ACKNOWLEDGED: renamed]";
    assert_eq!(store.answer_comment(session.id, &first, done).await.unwrap(), Answer::Recorded);
    assert_eq!(store.answer_comment(session.id, &first, done).await.unwrap(), Answer::Unchanged);
    assert_eq!(store.answer_comment(session.id, &first, "other").await.unwrap(), Answer::AlreadyAnswered);
    assert_eq!(store.answer_comment(session.id, "999", done).await.unwrap(), Answer::NotOffered);
    let why = "[ACKNOWLEDGED: explained]";
    assert_eq!(store.answer_comment(session.id, &second, why).await.unwrap(), Answer::Recorded);

    // An attempt posted the first reply and died before marking it posted.
    let post = CommentPost {
        author: AGENT_AUTHOR,
        body: done,
        reply_to: Some(&first),
        by_agent: true,
        ..Default::default()
    };
    let earlier = forge.comment(&run, &post).await.unwrap();
    let pr = forge.snapshot(&run).await.unwrap().unwrap();
    let pending = store.replies_to_post(run.id, 5).await.unwrap();
    assert_eq!(pending.len(), 2);
    for reply in &pending {
        deliver_reply(&forge, &store, &run, &pr, reply).await.unwrap();
    }
    assert!(store.replies_to_post(run.id, 5).await.unwrap().is_empty());
    let comments = store.local_comments(pr_id).await.unwrap();
    let replies_to = |id: &str| -> Vec<_> {
        comments.iter().filter(|c| c.in_reply_to.map(|p| p.to_string()).as_deref() == Some(id)).collect()
    };
    assert_eq!(replies_to(&first).len(), 1, "posted once: {comments:?}");
    assert_eq!(replies_to(&first)[0].id.to_string(), earlier, "the earlier post is recorded, not repeated");
    assert_eq!(replies_to(&second).len(), 1, "{comments:?}");
    assert!(replies_to(&second)[0].by_agent && replies_to(&second)[0].body == why);
    let rows = store.agent_replies(run.id).await.unwrap();
    assert_eq!(rows[0].posted_comment_id.as_deref(), Some(earlier.as_str()));
    assert!(rows.iter().all(|r| r.posted_at.is_some()));
}

/// Issue 32, item 1: the 8,000-byte tail of the CI output is cut at a line, so a token the cut lands in
/// is dropped whole instead of keeping its last 18 characters (past any redaction by value).
#[tokio::test]
async fn a_ci_tail_never_keeps_the_end_of_a_cut_token() {
    let token = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8";
    // After the token line: 7,980 filler bytes and a newline, so the last 8,000 bytes start 18
    // characters before the token's end.
    let f = fixture(&format!(
        r#"["sh", "-c", 'printf "x=%s\n" {token}; head -c 7980 /dev/zero | tr "\0" y; echo; exit 1']"#
    ))
    .await;
    f.forge.trigger_ci(&f.run, &f.sha).await.unwrap();
    let checks = f.finished_checks().await;
    let output = checks[0].output_tail.as_deref().unwrap_or_default();
    assert!(output.starts_with("exit status 1\n") && output.contains("yyyy"), "{}", &output[..40]);
    for i in 0..=token.len() - 12 {
        assert!(!output.contains(&token[i..i + 12]), "{}", &output[..60]);
    }
}

/// Each attempt to post a reply is written down before its post (`post_started_at`), so a runner that
/// comes after a crash knows a copy may still land.
#[tokio::test]
async fn an_attempt_to_post_a_reply_is_written_before_the_post() {
    use crate::forge::{Delivery, Forge, deliver_reply};
    let f = fixture("[]").await;
    let store = f.forge.store.clone();
    let pr_id = store.local_pr_for_run(f.run.id).await.unwrap().unwrap().id;
    let asked = NewComment { author: "alex", body: "Why?", ..Default::default() };
    let asked = store.add_local_comment(pr_id, &asked).await.unwrap().to_string();
    let kind = crate::domain::WorkerKind::FixComments;
    let session = store
        .begin_worker_session(f.run.id, kind, "command", "here", &Default::default())
        .await
        .unwrap()
        .unwrap();
    store.offer_comments(f.run.id, session.id, std::slice::from_ref(&asked)).await.unwrap();
    store.answer_comment(session.id, &asked, "[ACKNOWLEDGED: because]").await.unwrap();
    let before = chrono::Utc::now();
    let forge = Forge::Local(f.forge);
    let pr = forge.snapshot(&f.run).await.unwrap().unwrap();
    let reply = store.replies_to_post(f.run.id, 5).await.unwrap().remove(0);
    assert_eq!(reply.post_started_at, None);
    let Delivery::Posted(id) = deliver_reply(&forge, &store, &f.run, &pr, &reply).await.unwrap() else {
        panic!("the local forge posts at once");
    };
    let after = store.agent_replies(f.run.id).await.unwrap().remove(0);
    assert_eq!(after.posted_comment_id.as_deref(), Some(id.as_str()));
    assert!(after.post_started_at.is_some_and(|t| t >= before), "{after:?}");
}
