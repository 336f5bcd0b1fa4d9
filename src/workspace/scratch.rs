//! Detached scratch worktrees (local CI runs at a pull request's head) and branch lookups.

use std::path::Path;

use super::WorkspaceError;
use super::git::{git, git_holding, git_probe, linked};

/// The commit a branch points at in `repo`, or `None` when the branch does not exist.
pub fn branch_head(repo: &Path, branch: &str) -> Result<Option<String>, WorkspaceError> {
    super::check_branch_name(branch)?;
    let spec = format!("refs/heads/{branch}^{{commit}}");
    Ok(git_probe(repo, ["rev-parse", "--verify", "--quiet", spec.as_str()])?.map(|s| s.trim().to_string()))
}

/// The commit `base` (a repository's base branch as configured: `main`, `origin/main`) names in `repo`,
/// or `None` when it names none. The name is checked like a branch name first, so it cannot be read as
/// an option or a revision expression.
pub fn base_commit(repo: &Path, base: &str) -> Result<Option<String>, WorkspaceError> {
    super::check_branch_name(base)?;
    let spec = format!("{base}^{{commit}}");
    Ok(git_probe(repo, ["rev-parse", "--verify", "--quiet", spec.as_str()])?.map(|s| s.trim().to_string()))
}

/// What a pull request at commit `head` changes against `base` (a branch name, checked like one): files
/// changed, lines added, lines removed, from `git diff --shortstat base...head` (git's words are
/// English: `git` runs with `LC_ALL=C`). `None` when `head` is not a commit id or either names nothing.
pub fn diff_stat(repo: &Path, base: &str, head: &str) -> Result<Option<DiffCounts>, WorkspaceError> {
    super::check_branch_name(base)?;
    if head.is_empty() || !head.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let range = format!("{base}...{head}");
    Ok(git_probe(repo, ["diff", "--shortstat", range.as_str(), "--"])?.map(|out| parse_shortstat(&out)))
}

/// Files changed, lines added, lines removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffCounts {
    pub files: i64,
    pub additions: i64,
    pub deletions: i64,
}

/// " 3 files changed, 10 insertions(+), 2 deletions(-)"; a part with nothing to count is left out, and
/// no change at all prints nothing.
fn parse_shortstat(out: &str) -> DiffCounts {
    let mut counts = DiffCounts::default();
    for part in out.trim().split(',') {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next().and_then(|n| n.parse::<i64>().ok()), words.next()) else {
            continue;
        };
        if what.starts_with("file") {
            counts.files = n;
        } else if what.starts_with("insertion") {
            counts.additions = n;
        } else if what.starts_with("deletion") {
            counts.deletions = n;
        }
    }
    counts
}

/// Checks `sha` out, detached, at `path` (replacing a leftover worktree there).
pub fn add_detached(repo: &Path, path: &Path, sha: &str) -> Result<(), WorkspaceError> {
    add(repo, path, sha, None)
}

/// Like [`add_detached`], with `hold` (a lock) open in git and whatever it starts until they are done:
/// a checkout that outlives a killed caller still holds the lock while it finishes or cleans up.
pub fn add_detached_holding(
    repo: &Path,
    path: &Path,
    sha: &str,
    hold: std::fs::File,
) -> Result<(), WorkspaceError> {
    add(repo, path, sha, Some(hold))
}

fn add(repo: &Path, path: &Path, sha: &str, hold: Option<std::fs::File>) -> Result<(), WorkspaceError> {
    if !sha.bytes().all(|b| b.is_ascii_hexdigit()) || sha.is_empty() {
        return Err(WorkspaceError::Unexpected {
            command: "git worktree add".into(),
            output: format!("not a commit sha: {sha:?}"),
        });
    }
    if std::fs::symlink_metadata(path).is_ok() {
        remove_scratch(repo, path)?;
    }
    let args = ["worktree", "add", "--detach", "--force"]
        .iter()
        .map(std::ffi::OsStr::new)
        .chain([path.as_os_str(), std::ffi::OsStr::new(sha)]);
    match hold {
        Some(hold) => git_holding(repo, args, hold)?,
        None => git(repo, args)?,
    };
    Ok(())
}

/// Removes a scratch worktree whatever its contents (CI output is kept elsewhere). A CI command or a
/// triage agent wrote it, so its link is checked first; one that was tampered with is not run git
/// through: its directory is deleted as files (never following a symbolic link) and git's record
/// pruned. `path` must already be known to lie under its root ([`super::path_under`]).
pub fn remove_scratch(repo: &Path, path: &Path) -> Result<(), WorkspaceError> {
    let removed = match linked(repo, path) {
        Ok(wt) => {
            let args = ["worktree", "remove", "--force", "--"].map(std::ffi::OsStr::new);
            git_probe(repo, args.into_iter().chain([wt.work_tree.as_os_str()]))?
        }
        Err(WorkspaceError::Tampered { what, .. }) => {
            tracing::warn!(
                "scratch checkout {} was tampered with ({what}): deleting it without git",
                path.display()
            );
            None
        }
        Err(_) => None,
    };
    if removed.is_none() && std::fs::symlink_metadata(path).is_ok() {
        std::fs::remove_dir_all(path)
            .map_err(|source| WorkspaceError::Io { path: path.to_path_buf(), source })?;
    }
    if removed.is_none() {
        git(repo, ["worktree", "prune"])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sh_git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    #[test]
    fn concurrent_checkouts_in_one_repository_all_succeed() {
        // git alone fails here: an `add` reads a worktree another `add` is still writing.
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        sh_git(&repo, &["init", "-q"]);
        sh_git(
            &repo,
            &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "a"],
        );
        let sha = sh_git(&repo, &["rev-parse", "HEAD"]);
        let threads: Vec<_> = (0..24)
            .map(|i| {
                let (repo, sha, path) = (repo.clone(), sha.clone(), dir.path().join(format!("w{i}")));
                std::thread::spawn(move || {
                    for _ in 0..5 {
                        add_detached(&repo, &path, &sha)?;
                        remove_scratch(&repo, &path)?;
                        // What a removal that found a leftover does (and the runner's clean-up).
                        git(&repo, ["worktree", "prune"])?;
                    }
                    Ok::<_, WorkspaceError>(())
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
    }

    #[test]
    fn a_scratch_checkout_of_a_branch_head_comes_and_goes() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        sh_git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("a"), "1").unwrap();
        sh_git(&repo, &["add", "a"]);
        sh_git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]);
        let sha = branch_head(&repo, "main").unwrap().unwrap();
        assert_eq!(sha, sh_git(&repo, &["rev-parse", "HEAD"]));
        assert_eq!(branch_head(&repo, "nope").unwrap(), None);
        assert_eq!(base_commit(&repo, "main").unwrap().as_deref(), Some(sha.as_str()));
        sh_git(&repo, &["update-ref", "refs/remotes/origin/main", &sha]);
        assert_eq!(base_commit(&repo, "origin/main").unwrap().as_deref(), Some(sha.as_str()));
        assert_eq!(base_commit(&repo, "nope").unwrap(), None);
        assert!(base_commit(&repo, "--output=x").is_err());

        // The branch adds a file of two lines and removes the line of `a`.
        sh_git(&repo, &["checkout", "-qb", "work"]);
        std::fs::write(repo.join("b"), "x\ny\n").unwrap();
        std::fs::write(repo.join("a"), "").unwrap();
        sh_git(&repo, &["add", "a", "b"]);
        sh_git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two"]);
        let work = branch_head(&repo, "work").unwrap().unwrap();
        let stat = diff_stat(&repo, "main", &work).unwrap();
        assert_eq!(stat, Some(DiffCounts { files: 2, additions: 2, deletions: 1 }));
        assert_eq!(diff_stat(&repo, "main", &sha).unwrap(), Some(DiffCounts::default()), "no change");
        assert_eq!(diff_stat(&repo, "main", "--output=x").unwrap(), None, "not a commit id");
        assert!(diff_stat(&repo, "--output=x", &work).is_err(), "a base that reads as an option");
        sh_git(&repo, &["checkout", "-q", "main"]);

        let scratch = dir.path().join("ci-1");
        add_detached(&repo, &scratch, &sha).unwrap();
        assert_eq!(std::fs::read_to_string(scratch.join("a")).unwrap(), "1");
        std::fs::write(scratch.join("junk"), "x").unwrap();
        add_detached(&repo, &scratch, &sha).unwrap();
        remove_scratch(&repo, &scratch).unwrap();
        assert!(!scratch.exists());
        assert!(add_detached(&repo, &scratch, "--help").is_err());
    }
}
