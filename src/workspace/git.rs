//! Running git: an argument array, a fixed locale, no prompts, bounded error text.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::WorkspaceError;
use super::link::{Checkout, Linked, checkout_in};

/// What could start a program that git finds in configuration or in a work tree, switched off for every
/// git command on a worktree (which an agent or a CI command wrote): the file-system monitor, hooks
/// (status, rev-parse, rev-list and worktree removal need none; a checkout's `post-checkout` would run
/// on the agent's files), the untracked cache, and submodules (whose own `.git` an agent writes).
const HARDENED: [&str; 10] = [
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "submodule.recurse=false",
    "-c",
    "diff.ignoreSubmodules=all",
];

/// Where a git command runs.
#[derive(Clone, Copy)]
pub(super) enum At<'a> {
    /// The configured repository (its own checkout, which agents cannot write): git finds its `.git`.
    Repo(&'a Path),
    /// A linked worktree, with the git directories executor derived ([`super::link`]), never its `.git`.
    Worktree(&'a Linked),
}

/// How much of git's stderr an error keeps: enough to see the cause, not a flood in the database.
const STDERR_LIMIT: usize = 2000;

/// Runs `git -C dir args…` and returns its stdout, or an error naming the command when it fails.
pub(super) fn git<'a, I, S>(at: impl Into<At<'a>>, args: I) -> Result<String, WorkspaceError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (command, output) = run(at.into(), args)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(failure(command, &output))
    }
}

/// Like [`git`], but a non-zero exit is an answer ("no"), not an error: `Ok(None)`.
pub(super) fn git_probe<'a, I, S>(at: impl Into<At<'a>>, args: I) -> Result<Option<String>, WorkspaceError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (_, output) = run(at.into(), args)?;
    Ok(output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned()))
}

/// Like [`git`], with `hold` as git's standard input: an open file (a lock) that git, and whatever it
/// starts, keeps open until it is done, even when the caller dies meanwhile.
pub(super) fn git_holding<I, S>(dir: &Path, args: I, hold: std::fs::File) -> Result<String, WorkspaceError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let (command, output) = run_with(At::Repo(dir), args, Stdio::from(hold))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(failure(command, &output))
    }
}

impl<'a> From<&'a Path> for At<'a> {
    fn from(dir: &'a Path) -> Self {
        At::Repo(dir)
    }
}

impl<'a> From<&'a PathBuf> for At<'a> {
    fn from(dir: &'a PathBuf) -> Self {
        At::Repo(dir)
    }
}

impl<'a> From<&'a Linked> for At<'a> {
    fn from(linked: &'a Linked) -> Self {
        At::Worktree(linked)
    }
}

/// The repository's common git directory (canonical), asked of the configured repository itself, whose
/// configuration agents cannot write.
pub(crate) fn common_dir(repo: &Path) -> Result<PathBuf, WorkspaceError> {
    let out = git(repo, ["rev-parse", "--git-common-dir"])?;
    // Older gits print it relative to the directory they ran in.
    let path = repo.join(out.trim_end_matches(['\n', '\r']));
    std::fs::canonicalize(&path).map_err(|source| WorkspaceError::Io { path, source })
}

/// What `worktree` is to `repo`: its main checkout, or one of its linked worktrees whose link is intact.
pub(crate) fn checkout_of(repo: &Path, worktree: &Path) -> Result<Checkout, WorkspaceError> {
    let common = common_dir(repo)?;
    checkout_in(&common, worktree)
}

/// Like [`checkout_of`], for a linked worktree only: the repository's own checkout is never an agent's.
pub(crate) fn linked(repo: &Path, worktree: &Path) -> Result<Linked, WorkspaceError> {
    match checkout_of(repo, worktree)? {
        Checkout::Linked(linked) => Ok(linked),
        Checkout::Main(path) => Err(WorkspaceError::Tampered {
            path,
            what: "it is the repository's own checkout, not a worktree of it".into(),
        }),
    }
}

/// The git directories a commit in `worktree` writes to, absolute: its own git directory
/// (`<common>/worktrees/<name>` for a linked worktree: index, HEAD) and the common one (objects, refs).
/// One directory for the repository's own checkout, where both are the same. A sandboxed agent needs
/// write access to exactly these to commit. They are derived from `repo` (the configured repository),
/// never from what the worktree's `.git` says: a worktree whose link was changed is an error
/// ([`WorkspaceError::Tampered`]), so no writable set comes from an agent's say-so.
pub fn git_dirs(repo: &Path, worktree: &Path) -> Result<Vec<PathBuf>, WorkspaceError> {
    Ok(match checkout_of(repo, worktree)? {
        Checkout::Main(work_tree) => vec![work_tree.join(".git")],
        Checkout::Linked(Linked { admin, common, .. }) => vec![admin, common],
    })
}

/// What a contained agent in `worktree` may write of its repository's git directories to commit: for a
/// linked worktree, its own directory (`<common>/worktrees/NAME`: index, HEAD) and of the common
/// directory only `objects`, `refs` and `logs` — never `hooks/` or `config`, which would run or steer
/// the user's own git later. The repository's own checkout has its `.git` inside, writable already.
/// Derived like [`git_dirs`], and an error for a tampered worktree.
pub fn git_write_dirs(repo: &Path, worktree: &Path) -> Result<Vec<PathBuf>, WorkspaceError> {
    let Checkout::Linked(Linked { admin, common, .. }) = checkout_of(repo, worktree)? else {
        return Ok(Vec::new());
    };
    let mut out = vec![admin];
    for sub in ["objects", "refs", "logs"] {
        let dir = common.join(sub);
        // A repository without reflogs yet has no `logs`; the agent could not create it.
        std::fs::create_dir_all(&dir).map_err(|source| WorkspaceError::Io { path: dir.clone(), source })?;
        out.push(dir);
    }
    Ok(out)
}

/// Pushes `branch` of the repository at `repo` to the same branch on `remote`, without forcing: a
/// branch someone else moved on the remote is refused by git, and the error says so. `remote` comes from
/// the config and `branch` was checked by `check_branch_name`; `--` keeps either from being read as an
/// option.
pub fn push_branch(repo: &Path, remote: &str, branch: &str) -> Result<(), WorkspaceError> {
    push_branch_with(repo, remote, branch, &[])
}

/// [`push_branch`] with `env` set for git: credentials a forge hands git through its environment
/// (`GIT_CONFIG_*`), never on its command line, which other users' `ps` shows and errors quote.
pub fn push_branch_with(
    repo: &Path,
    remote: &str,
    branch: &str,
    env: &[(String, String)],
) -> Result<(), WorkspaceError> {
    let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
    let args = ["push", "--porcelain", "--", remote, refspec.as_str()];
    let (command, output) = run_with_env(At::Repo(repo), args, Stdio::null(), env)?;
    if output.status.success() {
        return Ok(());
    }
    // `--porcelain` prints one line per ref, `!` and `[rejected]` for one refused as not a fast-forward
    // (`LC_ALL=C`: the words do not change with the user's language).
    let stdout = String::from_utf8_lossy(&output.stdout);
    if stdout.lines().any(|l| l.starts_with('!') && l.contains("[rejected]")) {
        return Err(WorkspaceError::PushRejected { command, stderr: bounded_stderr(&output) });
    }
    Err(failure(command, &output))
}

/// Brings what others pushed to `branch` on `remote` into `worktree` (a worktree of `repo` that has it
/// checked out, its link checked first): fetched and merged (never rebased: their commits keep their
/// ids), as `git pull` would. A merge that does not go through cleanly is undone and is an error: a
/// human or a conflicts worker resolves it, not this.
pub fn merge_remote_branch(
    repo: &Path,
    worktree: &Path,
    remote: &str,
    branch: &str,
) -> Result<(), WorkspaceError> {
    merge_remote_branch_with(repo, worktree, remote, branch, &[])
}

/// [`merge_remote_branch`] with `env` set for the fetch (a forge's credentials, as for
/// [`push_branch_with`]).
pub fn merge_remote_branch_with(
    repo: &Path,
    worktree: &Path,
    remote: &str,
    branch: &str,
    env: &[(String, String)],
) -> Result<(), WorkspaceError> {
    let wt = linked(repo, worktree)?;
    let refspec = format!("refs/heads/{branch}");
    let fetch = ["fetch", "--quiet", "--", remote, refspec.as_str()];
    let (command, output) = run_with_env(At::Worktree(&wt), fetch, Stdio::null(), env)?;
    if !output.status.success() {
        return Err(failure(command, &output));
    }
    let merged = git(
        &wt,
        [
            "-c",
            "user.name=executor",
            "-c",
            "user.email=executor@localhost",
            "merge",
            "--no-edit",
            "--quiet",
            "FETCH_HEAD",
        ],
    );
    if merged.is_err() {
        let _ = git(&wt, ["merge", "--abort"]);
    }
    merged.map(|_| ())
}

fn run<I, S>(at: At<'_>, args: I) -> Result<(String, Output), WorkspaceError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_with(at, args, Stdio::null())
}

/// git's worktree commands are not safe against each other in one repository: an `add` reads every
/// registered worktree and fails on one that another `add` is still writing ("failed to read
/// .git/worktrees/NAME/commondir"; seen with the analyzer's concurrent checkouts). Every executor process
/// and thread takes this lock around them: an advisory lock on the repository's `.git` directory itself,
/// so that nothing is written into the user's repository (git takes no such lock). None where `dir` has
/// no `.git` directory of its own.
fn lock_worktrees(dir: &Path) -> Option<nix::fcntl::Flock<std::fs::File>> {
    let git_dir = dir.join(".git");
    if !git_dir.is_dir() {
        return None;
    }
    let handle = std::fs::File::open(&git_dir).ok()?;
    nix::fcntl::Flock::lock(handle, nix::fcntl::FlockArg::LockExclusive).ok()
}

fn run_with<I, S>(at: At<'_>, args: I, stdin: Stdio) -> Result<(String, Output), WorkspaceError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_with_env(at, args, stdin, &[])
}

fn run_with_env<I, S>(
    at: At<'_>,
    args: I,
    stdin: Stdio,
    env: &[(String, String)],
) -> Result<(String, Output), WorkspaceError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<_> = args.into_iter().collect();
    let worktree_command = args.first().is_some_and(|first| first.as_ref() == OsStr::new("worktree"));
    let _one_at_a_time = match at {
        At::Repo(dir) if worktree_command => lock_worktrees(dir),
        _ => None,
    };
    let command = std::iter::once("git".to_string())
        .chain(args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    let mut git = Command::new("git");
    // Git's own variables from executor's environment would override what is set here.
    for var in ["GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"] {
        git.env_remove(var);
    }
    match at {
        At::Repo(dir) => {
            git.arg("-C").arg(dir);
            // Worktree commands check out, list and delete what agents and CI wrote.
            if worktree_command {
                git.args(HARDENED);
            }
        }
        At::Worktree(wt) => {
            git.arg("-C")
                .arg(&wt.work_tree)
                .args(HARDENED)
                .env("GIT_DIR", &wt.admin)
                .env("GIT_COMMON_DIR", &wt.common)
                .env("GIT_WORK_TREE", &wt.work_tree);
        }
    }
    let output = git
        .args(&args)
        // Parseable messages, and never wait for a password on a terminal nobody watches.
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(stdin)
        .output()
        .map_err(|source| WorkspaceError::Spawn { command: command.clone(), source })?;
    Ok((command, output))
}

fn failure(command: String, output: &Output) -> WorkspaceError {
    WorkspaceError::Git {
        command,
        status: output.status.code().map_or("killed by a signal".into(), |c| format!("exit {c}")),
        stderr: bounded_stderr(output),
    }
}

fn bounded_stderr(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut stderr = stderr.trim().to_string();
    if stderr.len() > STDERR_LIMIT {
        let cut = (0..=STDERR_LIMIT).rev().find(|&i| stderr.is_char_boundary(i)).unwrap_or(0);
        stderr.truncate(cut);
        stderr.push('…');
    }
    stderr
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh_git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git").args(args).current_dir(dir).status().unwrap().success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn git_dirs_of_a_linked_worktree_are_its_own_and_the_common_one() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        sh_git(&repo, &["init", "-q", "-b", "main"]);
        sh_git(
            &repo,
            &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "i"],
        );
        sh_git(&repo, &["worktree", "add", "-q", "-b", "feature", "../wt"]);
        let wt = tmp.path().join("wt");
        let repo = std::fs::canonicalize(&repo).unwrap();
        assert_eq!(
            git_dirs(&repo, &wt).unwrap(),
            vec![repo.join(".git").join("worktrees").join("wt"), repo.join(".git")]
        );
        // Pushing a branch to a bare remote, and refusing to overwrite what someone else pushed.
        let remote = tmp.path().join("remote.git");
        sh_git(tmp.path(), &["init", "-q", "--bare", remote.to_str().unwrap()]);
        sh_git(&repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
        push_branch(&repo, "origin", "feature").unwrap();
        let pushed = git(&remote, ["rev-parse", "refs/heads/feature"]).unwrap();
        assert_eq!(pushed, git(&repo, ["rev-parse", "refs/heads/feature"]).unwrap());
        sh_git(
            &repo,
            &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "other"],
        );
        sh_git(&repo, &["push", "-q", "origin", "+main:feature"]);
        let refused = push_branch(&repo, "origin", "feature").unwrap_err().to_string();
        assert!(refused.contains("rejected") || refused.contains("non-fast-forward"), "{refused}");
        // The main checkout: one directory.
        assert_eq!(git_dirs(&repo, &repo).unwrap(), vec![repo.join(".git")]);
        assert!(git_dirs(&repo, tmp.path()).is_err(), "not a worktree of the repository");
    }

    #[test]
    fn what_others_pushed_is_merged_into_an_intact_worktree_only() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, remote, other) =
            (tmp.path().join("repo"), tmp.path().join("remote.git"), tmp.path().join("other"));
        std::fs::create_dir(&repo).unwrap();
        let id = ["-c", "user.name=t", "-c", "user.email=t@t"];
        sh_git(&repo, &["init", "-q", "-b", "main"]);
        sh_git(&repo, &[&id[..], &["commit", "-q", "--allow-empty", "-m", "i"]].concat());
        sh_git(tmp.path(), &["init", "-q", "--bare", remote.to_str().unwrap()]);
        sh_git(&repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
        sh_git(&repo, &["worktree", "add", "-q", "-b", "feature", "../wt"]);
        push_branch(&repo, "origin", "feature").unwrap();
        sh_git(
            tmp.path(),
            &["clone", "-q", "-b", "feature", remote.to_str().unwrap(), other.to_str().unwrap()],
        );
        std::fs::write(other.join("theirs"), "x").unwrap();
        sh_git(&other, &["add", "theirs"]);
        sh_git(&other, &[&id[..], &["commit", "-q", "-m", "theirs"]].concat());
        sh_git(&other, &["push", "-q", "origin", "feature"]);

        let wt = tmp.path().join("wt");
        merge_remote_branch(&repo, &wt, "origin", "feature").unwrap();
        assert!(wt.join("theirs").is_file());
        // A link the agent rewrote: nothing is fetched or merged through it.
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", other.join(".git").display())).unwrap();
        let refused = merge_remote_branch(&repo, &wt, "origin", "feature").unwrap_err();
        assert!(matches!(refused, WorkspaceError::Tampered { .. }), "{refused}");
    }
}
