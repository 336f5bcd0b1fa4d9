//! Real git in temporary directories.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use super::*;

/// Runs git for test setup, with an identity so commits work on any machine.
fn sh_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.test"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

struct Fixture {
    _tmp: TempDir,
    repo: PathBuf,
    root: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    sh_git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    sh_git(&repo, &["add", "README.md"]);
    sh_git(&repo, &["commit", "-q", "-m", "initial"]);
    let root = tmp.path().join("worktrees");
    Fixture { _tmp: tmp, repo, root }
}

fn gid() -> TaskGid {
    TaskGid::parse("1207").unwrap()
}

const BRANCH: &str = "executor/1207-fix-login";

fn ensure(f: &Fixture, run_id: i64) -> Result<Worktree, WorkspaceError> {
    ensure_worktree(&f.repo, &f.root, &gid(), run_id, BRANCH, "main")
}

fn commit_in(path: &Path, file: &str) -> String {
    std::fs::write(path.join(file), "work\n").unwrap();
    sh_git(path, &["add", file]);
    sh_git(path, &["commit", "-q", "-m", "work"]);
    sh_git(path, &["rev-parse", "HEAD"])
}

#[test]
fn creates_a_worktree_on_a_new_branch_from_base() {
    let f = fixture();
    let wt = ensure(&f, 5).unwrap();
    assert_eq!(wt.path, f.root.join("1207-5"));
    assert!(!wt.reused);
    assert!(wt.path.join("README.md").is_file());
    assert_eq!(sh_git(&wt.path, &["branch", "--show-current"]), BRANCH);
    assert_eq!(head_sha(&wt.path).unwrap(), sh_git(&f.repo, &["rev-parse", "main"]));
    assert!(!branch_has_commits(&f.repo, BRANCH, "main").unwrap());
}

#[test]
fn reuses_the_worktree_on_resume_and_sees_commits() {
    let f = fixture();
    let first = ensure(&f, 5).unwrap();
    let sha = commit_in(&first.path, "fix.txt");
    assert!(branch_has_commits(&f.repo, BRANCH, "main").unwrap());

    let again = ensure(&f, 5).unwrap();
    assert!(again.reused);
    assert_eq!(again.path, first.path);
    assert_eq!(head_sha(&again.path).unwrap(), sha);
}

#[test]
fn recreates_a_worktree_whose_directory_vanished_keeping_the_branch() {
    let f = fixture();
    let first = ensure(&f, 5).unwrap();
    let sha = commit_in(&first.path, "fix.txt");
    std::fs::remove_dir_all(&first.path).unwrap();

    let again = ensure(&f, 5).unwrap();
    assert!(!again.reused);
    assert!(again.path.join("fix.txt").is_file());
    assert_eq!(head_sha(&again.path).unwrap(), sha, "the branch's work survives");
}

#[test]
fn an_existing_branch_without_a_worktree_is_checked_out_not_recreated() {
    let f = fixture();
    sh_git(&f.repo, &["branch", BRANCH, "main"]);
    let wt = ensure(&f, 9).unwrap();
    assert_eq!(sh_git(&wt.path, &["branch", "--show-current"]), BRANCH);
}

#[test]
fn removes_a_clean_worktree_but_keeps_the_branch() {
    let f = fixture();
    let wt = ensure(&f, 5).unwrap();
    let sha = commit_in(&wt.path, "fix.txt");
    assert_eq!(remove_if_safe(&f.repo, &wt).unwrap(), Removal::Removed);
    assert!(!wt.path.exists());
    assert_eq!(sh_git(&f.repo, &["rev-parse", BRANCH]), sha);
    assert_eq!(remove_if_safe(&f.repo, &wt).unwrap(), Removal::AlreadyGone);
}

#[test]
fn keeps_a_worktree_with_uncommitted_or_untracked_work() {
    let f = fixture();
    let wt = ensure(&f, 5).unwrap();

    std::fs::write(wt.path.join("README.md"), "changed\n").unwrap();
    let Removal::Kept { reason } = remove_if_safe(&f.repo, &wt).unwrap() else {
        panic!("a modified file must keep the worktree");
    };
    assert!(reason.contains("README.md"), "{reason}");
    sh_git(&wt.path, &["checkout", "--", "README.md"]);

    std::fs::create_dir(wt.path.join("notes")).unwrap();
    std::fs::write(wt.path.join("notes/draft.md"), "x").unwrap();
    let Removal::Kept { reason } = remove_if_safe(&f.repo, &wt).unwrap() else {
        panic!("an untracked file must keep the worktree");
    };
    assert!(reason.contains("notes/draft.md"), "{reason}");
    assert!(wt.path.join("notes/draft.md").exists());
}

#[test]
fn keeps_a_worktree_with_unpushed_commits_until_they_are_pushed() {
    let f = fixture();
    let remote = f.repo.parent().unwrap().join("remote.git");
    sh_git(f.repo.parent().unwrap(), &["init", "-q", "--bare", "remote.git"]);
    sh_git(&f.repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
    let wt = ensure(&f, 5).unwrap();
    sh_git(&wt.path, &["push", "-q", "-u", "origin", BRANCH]);
    commit_in(&wt.path, "fix.txt");

    let Removal::Kept { reason } = remove_if_safe(&f.repo, &wt).unwrap() else {
        panic!("unpushed commits must keep the worktree");
    };
    assert_eq!(reason, format!("1 commit(s) not pushed to origin/{BRANCH}"));

    sh_git(&wt.path, &["push", "-q"]);
    assert_eq!(remove_if_safe(&f.repo, &wt).unwrap(), Removal::Removed);
}

#[test]
fn keeps_a_worktree_with_a_detached_head() {
    let f = fixture();
    let wt = ensure(&f, 5).unwrap();
    sh_git(&wt.path, &["checkout", "-q", "--detach"]);
    let Removal::Kept { reason } = remove_if_safe(&f.repo, &wt).unwrap() else {
        panic!("a detached head must keep the worktree");
    };
    assert!(reason.contains("detached"), "{reason}");
}

#[test]
fn prune_forgets_vanished_worktrees() {
    let f = fixture();
    let wt = ensure(&f, 5).unwrap();
    std::fs::remove_dir_all(&wt.path).unwrap();
    prune(&f.repo).unwrap();
    let listed = sh_git(&f.repo, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains("1207-5"), "{listed}");
}

#[test]
fn git_failures_name_the_command_and_its_stderr() {
    let f = fixture();
    let err = ensure_worktree(&f.repo, &f.root, &gid(), 5, BRANCH, "no-such-base").unwrap_err();
    let WorkspaceError::Git { command, stderr, .. } = &err else {
        panic!("expected a git error, got {err}");
    };
    assert!(command.starts_with("git worktree add -b"), "{command}");
    assert!(stderr.contains("no-such-base"), "{stderr}");
}

#[test]
fn an_invalid_branch_is_refused_before_git_runs() {
    let f = fixture();
    for bad in ["a..b", "-x", "x y", "$(touch pwned)"] {
        let err = ensure_worktree(&f.repo, &f.root, &gid(), 5, bad, "main").unwrap_err();
        assert!(matches!(err, WorkspaceError::InvalidBranch { .. }), "{bad}: {err}");
    }
    assert!(!f.root.exists(), "nothing was created");
}

#[test]
fn a_base_that_looks_like_an_option_is_not_one() {
    let f = fixture();
    let err = ensure_worktree(&f.repo, &f.root, &gid(), 5, BRANCH, "--detach").unwrap_err();
    assert!(matches!(err, WorkspaceError::Git { .. }), "{err}");
    let listed = sh_git(&f.repo, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains("1207-5"), "{listed}");
}
