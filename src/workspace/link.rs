//! A worktree's git directories as executor derives them from the configured repository — never as the
//! worktree says.
//!
//! An agent may write its worktree (and so its `.git` link file) and the worktree's own git directory
//! (`<common>/worktrees/<name>`: `HEAD`, `index`, `commondir`, `gitdir`, `config.worktree`), but not the
//! repository's `config` or `hooks`. git run on a worktree the ordinary way follows `.git`, then
//! `commondir`, and reads the configuration it finds there (`core.fsmonitor`, hooks, filters…): programs
//! of the agent's choosing, run as the user. So every git command executor runs on a worktree gets
//! `GIT_DIR`, `GIT_COMMON_DIR` and `GIT_WORK_TREE` from what is derived here, and the link is checked
//! first: a worktree whose link differs from what git made is [`WorkspaceError::Tampered`].
//!
//! The worktree's own git directory is found by scanning `<common>/worktrees/*/gitdir` for the one that
//! points back at `<worktree>/.git`, rather than guessed from the worktree's name (git appends a number
//! when the name is taken) or recorded (a recorded name would be one more database value not to trust).
//! Exactly one may point back, and the worktree's `.git` must name that one.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::WorkspaceError;

/// A linked worktree's directories, checked: its work tree, its own git directory and the common one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Linked {
    pub work_tree: PathBuf,
    pub admin: PathBuf,
    pub common: PathBuf,
}

/// What a directory is to the configured repository.
#[derive(Debug)]
pub(crate) enum Checkout {
    /// The repository's own checkout (its `.git` is the common directory).
    Main(PathBuf),
    Linked(Linked),
}

/// The most a link file (`.git`, `gitdir`, `commondir`) may hold: a path.
const LINK_FILE_MAX: u64 = 4096;

/// Settings a worktree's `config.worktree` may hold: what `git sparse-checkout` writes. git copies the
/// main worktree's `config.worktree` into each new worktree, and it is read (with
/// `extensions.worktreeConfig`) by every git command there, so anything else in it is the agent's.
const WORKTREE_CONFIG_ALLOWED: [&str; 3] = ["core.sparsecheckout", "core.sparsecheckoutcone", "index.sparse"];

/// What `worktree` is to the repository whose common git directory is `common` (derived from the
/// configured repository, see `super::git::common_dir`): its own checkout, or one of its linked worktrees
/// whose link is intact.
pub(crate) fn checkout_in(common: &Path, worktree: &Path) -> Result<Checkout, WorkspaceError> {
    let meta = std::fs::symlink_metadata(worktree)
        .map_err(|source| WorkspaceError::Io { path: worktree.to_path_buf(), source })?;
    if !meta.is_dir() {
        return Err(tampered(worktree, "it is not a directory (a symbolic link?)".into()));
    }
    let work_tree = std::fs::canonicalize(worktree)
        .map_err(|source| WorkspaceError::Io { path: worktree.to_path_buf(), source })?;
    let dot_git = work_tree.join(".git");
    let kind = match std::fs::symlink_metadata(&dot_git) {
        Ok(m) => m.file_type(),
        Err(_) => return Err(tampered(&work_tree, ".git is missing".into())),
    };
    if kind.is_symlink() {
        return Err(tampered(&work_tree, ".git is a symbolic link".into()));
    }
    if kind.is_dir() {
        return match std::fs::canonicalize(&dot_git) {
            Ok(dir) if dir == common => Ok(Checkout::Main(work_tree)),
            _ => Err(tampered(&work_tree, ".git is a directory, not the link file git made".into())),
        };
    }
    let named = read_link_file(&work_tree, &dot_git)?
        .strip_prefix("gitdir: ")
        .map(|p| work_tree.join(p))
        .ok_or_else(|| tampered(&work_tree, ".git does not read `gitdir: <path>`".into()))?;
    let admin = own_git_dir(common, &work_tree, &dot_git)?;
    if std::fs::canonicalize(&named).ok().as_ref() != Some(&admin) {
        let what = format!(".git points at {}, not at {}", named.display(), admin.display());
        return Err(tampered(&work_tree, what));
    }
    let commondir = read_link_file(&work_tree, &admin.join("commondir"))?;
    if std::fs::canonicalize(admin.join(&commondir)).ok().as_deref() != Some(common) {
        let what =
            format!("its git directory's commondir points at {commondir:?}, not at {}", common.display());
        return Err(tampered(&work_tree, what));
    }
    check_worktree_config(&work_tree, &admin)?;
    Ok(Checkout::Linked(Linked { work_tree, admin, common: common.to_path_buf() }))
}

/// The one `<common>/worktrees/*` whose `gitdir` points back at `dot_git`.
fn own_git_dir(common: &Path, work_tree: &Path, dot_git: &Path) -> Result<PathBuf, WorkspaceError> {
    let records = common.join("worktrees");
    // No such directory: the repository has no linked worktree, so none points back.
    let entries = std::fs::read_dir(&records).into_iter().flatten();
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let admin = entry.path();
        let Ok(Some(back)) = read_small(&admin.join("gitdir")) else { continue };
        if std::fs::canonicalize(admin.join(back.trim_end_matches(['\n', '\r']))).ok().as_deref()
            == Some(dot_git)
        {
            found.push(admin);
        }
    }
    match found.as_slice() {
        [one] => {
            std::fs::canonicalize(one).map_err(|source| WorkspaceError::Io { path: one.clone(), source })
        }
        [] => {
            Err(tampered(work_tree, format!("no git directory in {} points back at it", records.display())))
        }
        _ => Err(tampered(work_tree, format!("{} git directories claim it", found.len()))),
    }
}

/// A `config.worktree` holding more than sparse-checkout settings is refused: git would read it.
fn check_worktree_config(work_tree: &Path, admin: &Path) -> Result<(), WorkspaceError> {
    let path = admin.join("config.worktree");
    let Ok(meta) = std::fs::symlink_metadata(&path) else { return Ok(()) };
    if !meta.is_file() || meta.len() > 64 * 1024 {
        return Err(tampered(work_tree, "config.worktree is not a small regular file".into()));
    }
    // Read as data: `--file` without `--includes` follows no include and runs nothing; from `/`, where
    // git finds no repository whose configuration it would read too.
    let out = std::process::Command::new("git")
        .current_dir("/")
        .env_remove("GIT_DIR")
        .env_remove("GIT_COMMON_DIR")
        .env_remove("GIT_WORK_TREE")
        .env("GIT_CEILING_DIRECTORIES", "/")
        .args(["config", "--file"])
        .arg(&path)
        .args(["--no-includes", "--null", "--name-only", "--list"])
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| WorkspaceError::Spawn { command: "git config --file".into(), source })?;
    if !out.status.success() {
        return Err(tampered(work_tree, "config.worktree is not a git configuration file".into()));
    }
    let names = String::from_utf8_lossy(&out.stdout);
    match names
        .split('\0')
        .find(|n| !n.is_empty() && !WORKTREE_CONFIG_ALLOWED.contains(&n.to_ascii_lowercase().as_str()))
    {
        Some(name) => Err(tampered(work_tree, format!("config.worktree sets {name:?}"))),
        None => Ok(()),
    }
}

/// A link file's one line, refused unless it is a small regular file.
fn read_link_file(work_tree: &Path, path: &Path) -> Result<String, WorkspaceError> {
    match read_small(path) {
        Ok(Some(text)) => Ok(text.trim_end_matches(['\n', '\r']).to_string()),
        Ok(None) => Err(tampered(work_tree, format!("{} is not a small regular file", path.display()))),
        Err(e) => Err(tampered(work_tree, format!("{} cannot be read: {e}", path.display()))),
    }
}

/// The text of a regular file of at most [`LINK_FILE_MAX`] bytes; `None` for a symbolic link, a FIFO or
/// anything else, or a bigger file. Opened without following links or blocking (an agent's FIFO).
fn read_small(path: &Path) -> std::io::Result<Option<String>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(None),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    let mut text = String::new();
    if file.take(LINK_FILE_MAX + 1).read_to_string(&mut text).is_err() || text.len() as u64 > LINK_FILE_MAX {
        return Ok(None);
    }
    Ok(Some(text))
}

fn tampered(path: &Path, what: String) -> WorkspaceError {
    WorkspaceError::Tampered { path: path.to_path_buf(), what }
}

/// `path` resolved (symbolic links, `.`, `..`), when it lies strictly under `root` (resolved too); a
/// path read back from the database is used only through this, and anything else is
/// [`WorkspaceError::OutsideRoot`]. A path that does not exist (yet) is
/// resolved as far as it exists, and the rest may not hold `..`.
pub fn path_under(root: &Path, path: &Path) -> Result<PathBuf, WorkspaceError> {
    let outside = || WorkspaceError::OutsideRoot { path: path.to_path_buf(), root: root.to_path_buf() };
    let root = std::fs::canonicalize(root).map_err(|_| outside())?;
    // A relative path (a relative `paths.data_dir`) is taken from the current directory, like the root.
    let mut existing = std::path::absolute(path).map_err(|_| outside())?;
    let mut rest = Vec::new();
    let resolved = loop {
        match std::fs::canonicalize(&existing) {
            Ok(resolved) => break resolved,
            // Something there that does not resolve: a dangling symbolic link, which could be made to
            // point anywhere later.
            Err(_) if std::fs::symlink_metadata(&existing).is_ok() => return Err(outside()),
            Err(_) => {
                let (Some(name), Some(parent)) = (existing.file_name(), existing.parent()) else {
                    return Err(outside());
                };
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
        }
    };
    // `file_name` is never `..` or `.`: a missing part such as `gone/../x` is refused above.
    let resolved = rest.into_iter().rev().fold(resolved, |p, name| p.join(name));
    if resolved.starts_with(&root) && resolved != root { Ok(resolved) } else { Err(outside()) }
}
