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

/// git does not check submodules out in a new worktree: an empty submodule directory holds nothing,
/// and a staged change to the submodule's commit is work.
#[test]
fn a_worktree_with_a_submodule_not_checked_out_is_removed_unless_the_submodule_moved() {
    let f = fixture();
    let sub = f._tmp.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    sh_git(&sub, &["init", "-q", "-b", "main"]);
    sh_git(&sub, &["commit", "-q", "--allow-empty", "-m", "one"]);
    let one = sh_git(&sub, &["rev-parse", "HEAD"]);
    sh_git(&f.repo, &["update-index", "--add", "--cacheinfo", &format!("160000,{one},lib")]);
    sh_git(&f.repo, &["commit", "-q", "-m", "a submodule"]);
    let wt = ensure(&f, 5).unwrap();
    sh_git(&sub, &["commit", "-q", "--allow-empty", "-m", "two"]);
    let two = sh_git(&sub, &["rev-parse", "HEAD"]);
    sh_git(&wt.path, &["update-index", "--cacheinfo", &format!("160000,{two},lib")]);
    let Removal::Kept { reason } = remove_if_safe(&f.repo, &wt).unwrap() else {
        panic!("a staged submodule change must keep the worktree");
    };
    assert!(reason.contains("submodule"), "{reason}");
    sh_git(&wt.path, &["update-index", "--cacheinfo", &format!("160000,{one},lib")]);
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

/// Two hosts sharing one repository (the local forge's way): the second host never reuses the first
/// host's worktree of the branch, and gets its own beside it, at the branch's head.
#[test]
fn a_host_taking_a_run_over_in_a_shared_repository_gets_its_own_worktree() {
    let f = fixture();
    let first = ensure(&f, 1).unwrap();
    std::fs::write(first.path.join("work.txt"), "done on host a\n").unwrap();
    sh_git(&first.path, &["add", "work.txt"]);
    sh_git(&first.path, &["commit", "-q", "-m", "host a's work"]);
    let head = sh_git(&f.repo, &["rev-parse", BRANCH]);

    let other_root = f._tmp.path().join("host-b-worktrees");
    take_over_branch(&f.repo, &other_root, BRANCH, None).unwrap();
    let second = ensure_worktree(&f.repo, &other_root, &gid(), 1, BRANCH, "main").unwrap();
    assert!(!second.reused && second.path.starts_with(std::path::absolute(&other_root).unwrap()));
    assert_ne!(second.path, first.path);
    assert_eq!(head_sha(&second.path).unwrap(), head, "from the branch as host a left it");
    assert!(first.path.join("work.txt").is_file(), "host a's worktree is left alone");
}

/// Two hosts with clones of one remote (the GitHub forge's way): the branch as pushed replaces this
/// host's stale copy and its stale worktree.
#[test]
fn a_host_taking_a_run_over_from_a_remote_starts_from_the_pushed_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote.git");
    sh_git(tmp.path(), &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
    let clone = |name: &str| {
        let dir = tmp.path().join(name);
        sh_git(tmp.path(), &["clone", "-q", remote.to_str().unwrap(), dir.to_str().unwrap()]);
        dir
    };
    let seed = clone("seed");
    std::fs::write(seed.join("README.md"), "hello\n").unwrap();
    sh_git(&seed, &["add", "README.md"]);
    sh_git(&seed, &["commit", "-q", "-m", "initial"]);
    sh_git(&seed, &["push", "-q", "origin", "main"]);
    let (a, b) = (clone("host-a"), clone("host-b"));
    let (root_a, root_b) = (tmp.path().join("wt-a"), tmp.path().join("wt-b"));

    // Host b worked on the run first (its worktree stays, stale), then host a, which pushed.
    let stale = ensure_worktree(&b, &root_b, &gid(), 1, BRANCH, "main").unwrap();
    std::fs::write(stale.path.join("scratch.txt"), "uncommitted\n").unwrap();
    let wt_a = ensure_worktree(&a, &root_a, &gid(), 1, BRANCH, "main").unwrap();
    std::fs::write(wt_a.path.join("work.txt"), "done on host a\n").unwrap();
    sh_git(&wt_a.path, &["add", "work.txt"]);
    sh_git(&wt_a.path, &["commit", "-q", "-m", "host a's work"]);
    crate::workspace::push_branch(&a, "origin", BRANCH).unwrap();
    let pushed = sh_git(&a, &["rev-parse", BRANCH]);

    // Host a is lost; host b takes the run over.
    take_over_branch(&b, &root_b, BRANCH, Some("origin")).unwrap();
    let wt_b = ensure_worktree(&b, &root_b, &gid(), 1, BRANCH, "main").unwrap();
    assert!(!wt_b.reused, "the stale worktree was replaced");
    assert_eq!(head_sha(&wt_b.path).unwrap(), pushed);
    assert!(wt_b.path.join("work.txt").is_file() && !wt_b.path.join("scratch.txt").exists());
}
