//! Reverts found with real git: a merge commit reverted, one of a pull request's commits reverted, a
//! fast-forward, a squash reverted by `git revert` and by GitHub's button; and what is not a revert of
//! it (an agent's revert inside its own branch, another pull request's, one after the window).

use std::path::Path;
use std::process::Command;

use chrono::{Duration, Utc};

use super::*;

/// Runs git in `dir` as a person would, at `date` (seconds since the epoch) when given; returns stdout.
fn sh(dir: &Path, date: Option<i64>, args: &[&str]) -> String {
    let mut cmd = Command::new("git");
    cmd.args(["-c", "user.name=t", "-c", "user.email=t@t"]).args(args).current_dir(dir);
    if let Some(d) = date {
        cmd.env("GIT_COMMITTER_DATE", format!("{d} +0000")).env("GIT_AUTHOR_DATE", format!("{d} +0000"));
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn commit_file(dir: &Path, name: &str, message: &str) -> String {
    std::fs::write(dir.join(name), name).unwrap();
    sh(dir, None, &["add", name]);
    sh(dir, None, &["commit", "-q", "-m", message]);
    sh(dir, None, &["rev-parse", "HEAD"])
}

/// A repository on `main` with one commit, and branch `feat` with two more (the pull request).
fn repo_with_branch() -> (tempfile::TempDir, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    sh(dir, None, &["init", "-q", "-b", "main"]);
    commit_file(dir, "init", "init");
    sh(dir, None, &["checkout", "-q", "-b", "feat"]);
    let first = commit_file(dir, "a", "Add a");
    let head = commit_file(dir, "b", "Add b");
    sh(dir, None, &["checkout", "-q", "main"]);
    (tmp, first, head)
}

fn pr<'a>(head: &'a str, github: Option<(&'a str, i64)>) -> MergedPr<'a> {
    MergedPr {
        head: Some(head),
        branch: Some("feat"),
        github,
        started_at: Utc::now() - Duration::hours(1),
        merged_at: Utc::now(),
        window: Duration::days(14),
    }
}

#[test]
fn a_reverted_merge_commit_is_found_once_and_a_later_change_is_not_one() {
    let (tmp, _, head) = repo_with_branch();
    let dir = tmp.path();
    commit_file(dir, "m", "Meanwhile on main");
    sh(dir, None, &["merge", "-q", "--no-ff", "feat", "-m", "Merge feat"]);
    commit_file(dir, "c", "An unrelated change");
    assert_eq!(find_revert(dir, "main", &pr(&head, None)).unwrap(), None, "nothing reverted yet");
    let merge = sh(dir, None, &["rev-parse", "HEAD~1"]);
    sh(dir, None, &["revert", "--no-edit", "-m", "1", &merge]);
    let revert = sh(dir, None, &["rev-parse", "HEAD"]);
    let found = find_revert(dir, "main", &pr(&head, None)).unwrap().expect("the revert of its merge");
    assert_eq!(found.sha, revert);
    // The branch's head alone (none recorded) finds the same.
    let by_branch = MergedPr { head: None, ..pr(&head, None) };
    assert_eq!(find_revert(dir, "main", &by_branch).unwrap().map(|r| r.sha), Some(revert));
}

#[test]
fn one_of_its_commits_reverted_counts_but_the_agents_own_revert_inside_the_branch_does_not() {
    let (tmp, first, _) = repo_with_branch();
    let dir = tmp.path();
    // The agent reverted a commit of its own before the merge: part of the pull request, not a revert
    // of it.
    sh(dir, None, &["checkout", "-q", "feat"]);
    let oops = commit_file(dir, "oops", "Try something");
    sh(dir, None, &["revert", "--no-edit", &oops]);
    let head = sh(dir, None, &["rev-parse", "HEAD"]);
    sh(dir, None, &["checkout", "-q", "main"]);
    sh(dir, None, &["merge", "-q", "--ff-only", "feat"]);
    assert_eq!(find_revert(dir, "main", &pr(&head, None)).unwrap(), None, "a fast-forward, not reverted");
    sh(dir, None, &["revert", "--no-edit", &first]);
    let revert = sh(dir, None, &["rev-parse", "HEAD"]);
    assert_eq!(find_revert(dir, "main", &pr(&head, None)).unwrap().map(|r| r.sha), Some(revert));
}

#[test]
fn a_squashed_pull_request_reverted_by_git_or_by_githubs_button_is_found_by_its_number() {
    let (tmp, _, head) = repo_with_branch();
    let dir = tmp.path();
    sh(dir, None, &["merge", "-q", "--squash", "feat"]);
    sh(dir, None, &["commit", "-q", "-m", "Add a and b (#12)"]);
    let squash = sh(dir, None, &["rev-parse", "HEAD"]);
    let github = Some(("octo/app", 12));
    assert_eq!(find_revert(dir, "main", &pr(&head, github)).unwrap(), None);
    // Another pull request's revert is not this one's.
    commit_file(dir, "x", "Other (#1)");
    std::fs::write(dir.join("x"), "changed").unwrap();
    sh(dir, None, &["commit", "-q", "-am", "Revert \"Other (#1)\"\n\nReverts octo/app#1"]);
    assert_eq!(find_revert(dir, "main", &pr(&head, github)).unwrap(), None, "#1 is not #12");
    // `git revert` of the squashed commit.
    sh(dir, None, &["revert", "--no-edit", &squash]);
    let reverted = sh(dir, None, &["rev-parse", "HEAD"]);
    assert_eq!(find_revert(dir, "main", &pr(&head, github)).unwrap().map(|r| r.sha), Some(reverted.clone()));
    // Landed again by reverting the revert: the first revert is still the one found.
    sh(dir, None, &["revert", "--no-edit", &reverted]);
    assert_eq!(find_revert(dir, "main", &pr(&head, github)).unwrap().map(|r| r.sha), Some(reverted));

    // GitHub's revert button, squashed: the title and `Reverts owner/repo#N`, no sha of ours.
    let (tmp, _, head) = repo_with_branch();
    let dir = tmp.path();
    sh(dir, None, &["merge", "-q", "--squash", "feat"]);
    sh(dir, None, &["commit", "-q", "-m", "Add a and b (#12)"]);
    sh(dir, None, &["rm", "-q", "a", "b"]);
    sh(dir, None, &["commit", "-q", "-m", "Revert \"Add a and b (#12)\" (#13)\n\nReverts octo/app#12"]);
    let button = sh(dir, None, &["rev-parse", "HEAD"]);
    assert_eq!(find_revert(dir, "main", &pr(&head, github)).unwrap().map(|r| r.sha), Some(button));
    let local = pr(&head, None);
    assert_eq!(find_revert(dir, "main", &local).unwrap(), None, "the local forge's numbers are not GitHub's");
}

#[test]
fn a_revert_after_the_window_does_not_count() {
    let (tmp, first, head) = repo_with_branch();
    let dir = tmp.path();
    sh(dir, None, &["merge", "-q", "--no-ff", "feat", "-m", "Merge feat"]);
    let late = (Utc::now() + Duration::days(20)).timestamp();
    sh(dir, Some(late), &["revert", "--no-edit", &first]);
    assert_eq!(find_revert(dir, "main", &pr(&head, None)).unwrap(), None, "20 days after a 14-day window");
    let wide = MergedPr { window: Duration::days(30), ..pr(&head, None) };
    assert!(find_revert(dir, "main", &wide).unwrap().is_some());
}

#[test]
fn the_base_is_fetched_into_its_remote_tracking_branch() {
    let (tmp, _, head) = repo_with_branch();
    let dir = tmp.path();
    let remote = tmp.path().join("remote.git");
    sh(dir, None, &["clone", "-q", "--bare", ".", remote.to_str().unwrap()]);
    sh(dir, None, &["remote", "add", "origin", remote.to_str().unwrap()]);
    // Someone merges and reverts on the remote; the local `main` knows nothing of it.
    let other = tmp.path().join("other");
    sh(dir, None, &["clone", "-q", remote.to_str().unwrap(), other.to_str().unwrap()]);
    sh(&other, None, &["merge", "-q", "--no-ff", "origin/feat", "-m", "Merge feat"]);
    sh(&other, None, &["revert", "--no-edit", "-m", "1", "HEAD"]);
    sh(&other, None, &["push", "-q", "origin", "main"]);
    assert_eq!(find_revert(dir, "main", &pr(&head, None)).unwrap(), None);
    let base = fetch_base(dir, "origin", "main").unwrap();
    assert_eq!(base, "origin/main");
    assert!(find_revert(dir, &base, &pr(&head, None)).unwrap().is_some());
    assert!(fetch_base(dir, "--upload-pack=x", "main").is_err(), "a remote is never an option");
}
