//! Creating, reusing and removing a run's worktree with real git.

use std::path::{Component, Path, PathBuf};

use super::git::{git, git_probe, linked};
use super::link::Linked;
use super::{WorkspaceError, check_branch_name};
use crate::domain::TaskGid;

/// A run's worktree: a checkout of `branch` at `path`, sharing the repository's objects and refs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    pub path: PathBuf,
    pub branch: String,
    /// It already existed (a resumed run) rather than being created now.
    pub reused: bool,
}

/// What [`remove_if_safe`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removal {
    Removed,
    /// The directory had already vanished; git's record of it was pruned.
    AlreadyGone,
    /// Removing it would lose work, or its git link was tampered with (then nothing was run through
    /// it); the reason is for the human.
    Kept {
        reason: String,
    },
}

/// The worktree for a run at `worktrees_root/<gid>-<run_id>` on `branch`: reused if git already has a
/// worktree for the branch under `worktrees_root` whose directory exists; otherwise created on the
/// existing branch, or on a new branch from `base`. A worktree whose directory vanished is pruned and
/// created again. Another host's worktree of the branch (a repository shared between hosts) is never
/// reused: this host gets its own beside it.
pub fn ensure_worktree(
    repo: &Path,
    worktrees_root: &Path,
    gid: &TaskGid,
    run_id: i64,
    branch: &str,
    base: &str,
) -> Result<Worktree, WorkspaceError> {
    check_branch_name(branch)?;
    let branch_ref = format!("refs/heads/{branch}");
    let io = |source| WorkspaceError::Io { path: worktrees_root.to_path_buf(), source };
    let root = std::path::absolute(worktrees_root).map_err(io)?;
    // The repository's own checkout is never handed to an agent, so it is skipped here.
    let of_branch: Vec<Listed> = list_worktrees(repo)?
        .into_iter()
        .skip(1)
        .filter(|w| w.branch.as_deref() == Some(branch_ref.as_str()))
        .collect();
    if let Some(found) = of_branch.iter().find(|w| w.path.starts_with(&root)) {
        if found.path.is_dir() {
            // An agent worked here: no other starts in it unless its link is as git made it.
            linked(repo, &found.path)?;
            return Ok(Worktree { path: found.path.clone(), branch: branch.to_string(), reused: true });
        }
        prune(repo)?;
    }
    let elsewhere = of_branch.iter().any(|w| !w.path.starts_with(&root) && w.path.is_dir());

    std::fs::create_dir_all(&root).map_err(io)?;
    let path = root.join(format!("{gid}-{run_id}"));
    let branch_exists = git_probe(repo, ["rev-parse", "--verify", "--quiet", &branch_ref])?.is_some();
    if branch_exists {
        // `--force`: git refuses a second checkout of a branch, which is right within one host and
        // wrong for a run taken over from a host that is gone (its worktree is still registered).
        let mut args: Vec<&std::ffi::OsStr> = vec!["worktree".as_ref(), "add".as_ref()];
        if elsewhere {
            args.push("--force".as_ref());
        }
        args.extend(["--".as_ref(), path.as_os_str(), branch.as_ref()]);
        git(repo, args)?;
    } else {
        git(
            repo,
            [
                "worktree".as_ref(),
                "add".as_ref(),
                "-b".as_ref(),
                branch.as_ref(),
                "--".as_ref(),
                path.as_os_str(),
                base.as_ref(),
            ],
        )?;
    }
    Ok(Worktree { path, branch: branch.to_string(), reused: false })
}

/// Prepares a run taken over from another host: this host's own worktree of `branch` (left from an
/// earlier turn, and stale now) is removed, and when the branch lives on a remote (`remote`: it was
/// pushed there after each worker) it is fetched, replacing the local branch. [`ensure_worktree`] then
/// makes a fresh worktree from it. Uncommitted files of the stale worktree are dropped: the other host
/// worked on since.
pub fn take_over_branch(
    repo: &Path,
    worktrees_root: &Path,
    branch: &str,
    remote: Option<&str>,
) -> Result<(), WorkspaceError> {
    check_branch_name(branch)?;
    let branch_ref = format!("refs/heads/{branch}");
    let io = |source| WorkspaceError::Io { path: worktrees_root.to_path_buf(), source };
    let root = std::path::absolute(worktrees_root).map_err(io)?;
    for stale in list_worktrees(repo)?.into_iter().skip(1) {
        if stale.branch.as_deref() == Some(branch_ref.as_str())
            && stale.path.starts_with(&root)
            && std::fs::symlink_metadata(&stale.path).is_ok()
        {
            // A tampered one is an error, not deleted: git's record of its path is the agent's to write.
            let wt = linked(repo, &stale.path)?;
            remove_forced(repo, &wt)?;
        }
    }
    prune(repo)?;
    if let Some(remote) = remote {
        let refspec = format!("+{branch_ref}:{branch_ref}");
        // `--update-head-ok`: a worktree of this repository elsewhere (an old `workspace.root`) may have the
        // branch checked out; it is not used again, and the fetched branch must win.
        git(repo, ["fetch", "--quiet", "--update-head-ok", "--", remote, refspec.as_str()])?;
    }
    Ok(())
}

/// A worktree this host made for a run: `worktrees_root/<gid>-<run_id>`, as git lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostWorktree {
    pub path: PathBuf,
    /// The run it was made for, read from the directory's name.
    pub run_id: i64,
    /// `refs/heads/…` as git lists it; `None` on a detached HEAD.
    pub branch: Option<String>,
}

/// The repository's worktrees under `worktrees_root` (this host's; a repository shared between hosts
/// lists the others' too, and they are left out), each with the run it was made for. A directory whose
/// name does not end in `-<run id>` is not executor's and is left out.
pub fn host_worktrees(repo: &Path, worktrees_root: &Path) -> Result<Vec<HostWorktree>, WorkspaceError> {
    let io = |source| WorkspaceError::Io { path: worktrees_root.to_path_buf(), source };
    let root = std::path::absolute(worktrees_root).map_err(io)?;
    let listed =
        list_worktrees(repo)?.into_iter().skip(1).filter(|w| w.path.parent() == Some(root.as_path()));
    Ok(listed
        .filter_map(|w| {
            let name = w.path.file_name()?.to_str()?;
            let run_id = name.rsplit_once('-')?.1.parse().ok()?;
            Some(HostWorktree { path: w.path, run_id, branch: w.branch })
        })
        .collect())
}

/// Removes this host's worktree of a run that went on elsewhere (another host took it over, from the
/// branch as pushed): what is left in it is superseded, as [`take_over_branch`] treats it when the run
/// comes back. A worktree whose git link was tampered with is kept, and nothing is run through it.
pub fn remove_superseded(repo: &Path, path: &Path) -> Result<Removal, WorkspaceError> {
    match link_for_removal(repo, path)? {
        Ok(wt) => remove_forced(repo, &wt).map(|()| Removal::Removed),
        Err(not_removed) => Ok(not_removed),
    }
}

/// The link git is run through to remove the worktree at `path`, or what becomes of it instead: gone
/// already (git's record pruned), or kept because its link was tampered with.
fn link_for_removal(repo: &Path, path: &Path) -> Result<Result<Linked, Removal>, WorkspaceError> {
    // A dangling symbolic link is still there (and tampered).
    if std::fs::symlink_metadata(path).is_err() {
        prune(repo)?;
        return Ok(Err(Removal::AlreadyGone));
    }
    match linked(repo, path) {
        Ok(wt) => Ok(Ok(wt)),
        Err(WorkspaceError::Tampered { what, .. }) => Ok(Err(Removal::Kept {
            reason: format!("its git link was tampered with ({what}); git was not run through it"),
        })),
        Err(e) => Err(e),
    }
}

/// Does `branch` have commits that `base` does not?
pub fn branch_has_commits(repo: &Path, branch: &str, base: &str) -> Result<bool, WorkspaceError> {
    let branch_ref = format!("refs/heads/{branch}");
    let not_base = format!("^{base}");
    let command = ["rev-list", "--count", "--end-of-options", &branch_ref, &not_base, "--"];
    let out = git(repo, command)?;
    let count: u64 = out.trim().parse().map_err(|_| WorkspaceError::Unexpected {
        command: format!("git {}", command.join(" ")),
        output: out.trim().chars().take(200).collect(),
    })?;
    Ok(count > 0)
}

/// The full sha of the commit checked out at `path`. git follows `path`'s own `.git`: for a directory
/// the user names, never for one an agent wrote (those go through [`super::link`]).
pub fn head_sha(path: &Path) -> Result<String, WorkspaceError> {
    let out = git(path, ["rev-parse", "--verify", "HEAD^{commit}"])?;
    Ok(out.trim().to_string())
}

/// The branch checked out at `path`, or `None` on a detached HEAD. Like [`head_sha`], for a directory
/// the user names (`executor worker run --dir`), never for one an agent wrote.
pub fn current_branch(path: &Path) -> Result<Option<String>, WorkspaceError> {
    let out = git(path, ["rev-parse", "--abbrev-ref", "HEAD"])?;
    let name = out.trim();
    Ok((!name.is_empty() && name != "HEAD").then(|| name.to_string()))
}

/// `git worktree prune`: forget worktrees whose directories are gone.
pub fn prune(repo: &Path) -> Result<(), WorkspaceError> {
    git(repo, ["worktree", "prune"]).map(drop)
}

/// Removes the worktree only when nothing would be lost: no uncommitted change or untracked file, HEAD
/// on the worktree's branch, and — when the branch has an upstream — every commit pushed. Without an
/// upstream the branch ref itself is the record (worktrees share the repository, and the branch is never
/// deleted here). Otherwise the worktree is kept and the reason returned for the runner to report.
///
/// git runs on the worktree only with the git directories derived from `repo` ([`super::link`]), never
/// through its `.git`; a worktree whose link was changed is kept, with the change as the reason, and
/// nothing is run through it. `worktree.path` must already be known to lie under the worktree root
/// ([`super::path_under`]) when it was read back from the database.
pub fn remove_if_safe(repo: &Path, worktree: &Worktree) -> Result<Removal, WorkspaceError> {
    let wt = match link_for_removal(repo, &worktree.path)? {
        Ok(wt) => wt,
        Err(not_removed) => return Ok(not_removed),
    };
    if let Some(reason) = unsafe_to_remove(&wt, &worktree.branch)? {
        return Ok(Removal::Kept { reason });
    }
    remove_forced(repo, &wt)?;
    Ok(Removal::Removed)
}

/// `git worktree remove --force`, from the repository: after executor's own checks, so git's (a `git
/// status` in the worktree that follows its `commondir`) does not run.
fn remove_forced(repo: &Path, wt: &Linked) -> Result<(), WorkspaceError> {
    let args = ["worktree", "remove", "--force", "--"].map(std::ffi::OsStr::new);
    git(repo, args.into_iter().chain([wt.work_tree.as_os_str()])).map(drop)
}

fn unsafe_to_remove(wt: &Linked, branch: &str) -> Result<Option<String>, WorkspaceError> {
    if let Some(reason) = checked_out_submodule(wt)? {
        return Ok(Some(reason));
    }
    let status =
        git(wt, ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=all"])?;
    let changed: Vec<&str> = status.split('\0').filter(|s| !s.is_empty()).collect();
    if let Some(first) = changed.first() {
        return Ok(Some(format!(
            "{} uncommitted or untracked path(s), e.g. {:?}",
            changed.len(),
            first.get(3..).unwrap_or(first)
        )));
    }
    // The status above leaves submodules out; a staged change to one (index against HEAD: no work tree,
    // nothing of the submodule read) still counts.
    let staged = ["diff-index", "--cached", "--quiet", "--ignore-submodules=none", "HEAD", "--"];
    if git_probe(wt, staged)?.is_none() {
        return Ok(Some("a staged change to a submodule".into()));
    }
    let head_ref = git_probe(wt, ["symbolic-ref", "--quiet", "HEAD"])?;
    let expected = format!("refs/heads/{branch}");
    match head_ref.as_deref().map(str::trim) {
        Some(r) if r == expected => {}
        Some(other) => return Ok(Some(format!("HEAD is on {other}, not {expected}"))),
        None => {
            return Ok(Some("HEAD is detached; its commits may be on no branch".into()));
        }
    }
    let upstream = git_probe(wt, ["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"])?;
    let Some(upstream) = upstream else {
        return Ok(None);
    };
    let ahead = git(wt, ["rev-list", "--count", "@{upstream}..HEAD", "--"])?;
    match ahead.trim() {
        "0" => Ok(None),
        n => Ok(Some(format!("{n} commit(s) not pushed to {}", upstream.trim()))),
    }
}

/// A submodule checked out in the worktree (anything in its directory) may hold work that only git run
/// inside it could see, and executor does not run git there: its `.git` is the agent's. One that is
/// not checked out (git does not check submodules out in a new worktree) holds nothing.
fn checked_out_submodule(wt: &Linked) -> Result<Option<String>, WorkspaceError> {
    let staged = git(wt, ["ls-files", "--stage", "-z"])?;
    for entry in staged.split('\0').filter(|e| e.starts_with("160000 ")) {
        let path = entry.split_once('\t').map_or("", |(_, p)| p);
        let rel = Path::new(path);
        // The index is the agent's to write: a path that is not plainly inside counts as checked out.
        let inside = !path.is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)));
        let dir = wt.work_tree.join(rel);
        let empty = inside
            && match std::fs::symlink_metadata(&dir) {
                Err(_) => true,
                Ok(m) if m.is_dir() => std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_none()),
                Ok(_) => false,
            };
        if !empty {
            return Ok(Some(format!(
                "submodule {path:?} is checked out, and executor does not look into it"
            )));
        }
    }
    Ok(None)
}

/// One entry of `git worktree list --porcelain -z`.
struct Listed {
    path: PathBuf,
    branch: Option<String>,
}

/// The repository's worktrees, main checkout first (as git lists them).
fn list_worktrees(repo: &Path) -> Result<Vec<Listed>, WorkspaceError> {
    let out = git(repo, ["worktree", "list", "--porcelain", "-z"])?;
    let mut listed = Vec::new();
    let mut current: Option<Listed> = None;
    for field in out.split('\0') {
        if let Some(path) = field.strip_prefix("worktree ") {
            listed.extend(current.take());
            current = Some(Listed { path: PathBuf::from(path), branch: None });
        } else if let (Some(entry), Some(branch)) = (current.as_mut(), field.strip_prefix("branch ")) {
            entry.branch = Some(branch.to_string());
        }
    }
    listed.extend(current);
    Ok(listed)
}

#[cfg(test)]
mod tests;
