//! The local forge's CI processes: a check directory per pull request and commit, a scratch checkout in
//! it, and the CI command run there in the background by a tiny shell that records its exit status in a
//! file, so the result outlives the runner.
//!
//! Each check directory has a `lock` file. Whoever starts CI takes the lock before the check is recorded
//! and hands it to git and then to the CI's shell (as their standard input), which hold it until they
//! exit. So a pending check whose lock nobody holds and whose CI left no trace (no pid file, no exit
//! status) was being started by a runner that died: it is started again. CI that really cannot start
//! (its directory, its checkout, its program) is known while starting, and is an error for a human.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use crate::store::LocalCheck;
use crate::workspace::{self, WorkspaceError};

/// How much of a CI run's output is kept (its tail: the end is where failures are).
const OUTPUT_TAIL: usize = 8_000;

#[derive(Debug, thiserror::Error)]
pub enum CiError {
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error(transparent)]
    Git(#[from] WorkspaceError),
    #[error("CI program {program:?} {why}")]
    Program { program: String, why: &'static str },
    #[error("CI for this commit is already starting or running in {0}")]
    Busy(PathBuf),
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> CiError {
    move |source| CiError::Io { what, source }
}

/// A check directory's lock, held: nobody else starts or runs CI there meanwhile.
#[derive(Debug)]
pub struct CiLock {
    file: File,
    dir: PathBuf,
}

impl CiLock {
    /// Creates the check directory and takes its lock, then clears what an earlier CI there left (its
    /// exit status and pid), so that nothing of it is read as this CI's. Blocking.
    pub fn take(dir: &Path) -> Result<CiLock, CiError> {
        std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
        match try_lock(dir)? {
            Some(lock) => {
                for leftover in ["exit", "pid"] {
                    let _ = std::fs::remove_file(dir.join(leftover));
                }
                Ok(lock)
            }
            None => Err(CiError::Busy(dir.to_path_buf())),
        }
    }
}

/// The lock of `dir` if nobody holds it, `None` if somebody does. Blocking.
fn try_lock(dir: &Path) -> Result<Option<CiLock>, CiError> {
    let path = dir.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io(format!("opening {}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(CiLock { file, dir: dir.to_path_buf() })),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => {
            Err(CiError::Io { what: format!("locking {}", path.display()), source: e })
        }
    }
}

/// Checks `sha` out in the locked directory and starts `command` there; returns the CI shell's pid.
/// The lock passes to git and then to the CI's shell. Blocking.
pub fn launch(lock: CiLock, repo: &Path, sha: &str, command: &[String]) -> Result<u32, CiError> {
    let Some((program, args)) = command.split_first() else {
        return Err(CiError::Program { program: String::new(), why: "is empty" });
    };
    let work = lock.dir.join("work");
    let for_git = lock.file.try_clone().map_err(io(format!("sharing the lock of {}", lock.dir.display())))?;
    workspace::add_detached_holding(repo, &work, sha, for_git)?;
    find_program(program, &work)?;
    spawn(lock, &work, program, args)
}

/// Looks `program` up as the shell that runs it will: a name with a `/` relative to the checkout, any
/// other name on `PATH`. A program that is not there (or cannot be executed) is an infrastructure error,
/// known before anything runs — not the exit status 127 of a failed build.
fn find_program(program: &str, work: &Path) -> Result<(), CiError> {
    use std::os::unix::fs::PermissionsExt;
    let runnable =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    let found = if program.contains('/') {
        runnable(&work.join(program))
    } else if program.is_empty() {
        false
    } else {
        // Without PATH the shell falls back to its own default; let it decide.
        let Some(path) = std::env::var_os("PATH") else {
            return Ok(());
        };
        std::env::split_paths(&path).any(|dir| runnable(&dir.join(program)))
    };
    if found {
        Ok(())
    } else {
        Err(CiError::Program { program: program.to_string(), why: "was not found or is not executable" })
    }
}

/// Runs `program args…` in `work` through a tiny fixed shell script that records the exit status in a
/// file. The CI command comes from the config, never from task text, and reaches the script as
/// positional parameters (no interpolation). The shell's standard input is the lock, which it holds for
/// its life; the command itself gets `/dev/null`, so nothing it leaves behind holds the lock.
fn spawn(lock: CiLock, work: &Path, program: &str, args: &[String]) -> Result<u32, CiError> {
    use std::os::unix::process::CommandExt;
    let dir = &lock.dir;
    let child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(r#"echo $$ >"$EXECUTOR_CI_PID"; "$@" </dev/null >"$EXECUTOR_CI_OUT" 2>&1; echo $? >"$EXECUTOR_CI_EXIT.tmp" && mv "$EXECUTOR_CI_EXIT.tmp" "$EXECUTOR_CI_EXIT""#)
        .arg("executor-ci")
        .arg(program)
        .args(args)
        .env("EXECUTOR_CI_OUT", dir.join("output.log"))
        .env("EXECUTOR_CI_EXIT", dir.join("exit"))
        .env("EXECUTOR_CI_PID", dir.join("pid"))
        .current_dir(work)
        .stdin(lock.file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(io(format!("starting CI {program:?}")))?;
    let pid = child.id();
    // Reap it in the background so it leaves no zombie while this runner lives; its result is the file.
    std::thread::spawn(move || {
        let mut child = child;
        let _ = child.wait();
    });
    Ok(pid)
}

/// Where a pending check stands.
#[derive(Debug)]
pub enum CiState {
    /// Being started, or running.
    Running,
    /// Ended: status (`success`, `failure`) and output tail.
    Ended(&'static str, String),
    /// Its runner died while starting it and nothing ran: start it again with this lock.
    Abandoned(CiLock),
}

/// The check's directory as recorded, resolved, when it lies under `ci_root`: the database is writable
/// by more than executor, and this directory is locked, written and its checkout deleted.
pub fn check_dir(check: &LocalCheck, ci_root: &Path) -> Result<PathBuf, CiError> {
    let recorded = Path::new(check.work_dir.as_deref().unwrap_or_default());
    Ok(workspace::path_under(ci_root, recorded)?)
}

/// What a pending check's directory (under `ci_root`) says about it. Blocking (file reads, a lock
/// attempt).
pub fn state(check: &LocalCheck, ci_root: &Path) -> Result<CiState, CiError> {
    let dir = check_dir(check, ci_root)?;
    if let Some(ended) = exit_status(&dir) {
        return Ok(ended);
    }
    // The recorded pid, or the one the CI wrote itself when a crash came before it was recorded.
    let pid = check.pid.or_else(|| std::fs::read_to_string(dir.join("pid")).ok()?.trim().parse().ok());
    if !dir.join("lock").exists() {
        // A check started before CI directories had locks: its pid is all there is to go by.
        return Ok(match pid.and_then(|p| i32::try_from(p).ok()) {
            Some(pid) if crate::worker::process::is_alive(pid) => CiState::Running,
            Some(_) => killed(&dir),
            None => CiState::Abandoned(CiLock::take(&dir)?),
        });
    }
    let Some(lock) = try_lock(&dir)? else {
        return Ok(CiState::Running);
    };
    // Nobody holds the lock: the shell exited (maybe just now, after writing its status) or never ran.
    if let Some(ended) = exit_status(&dir) {
        return Ok(ended);
    }
    Ok(if pid.is_some() { killed(&dir) } else { CiState::Abandoned(lock) })
}

fn exit_status(dir: &Path) -> Option<CiState> {
    let code = std::fs::read_to_string(dir.join("exit")).ok()?;
    let status = if code.trim() == "0" { "success" } else { "failure" };
    Some(CiState::Ended(status, format!("exit status {}\n{}", code.trim(), read_tail(dir))))
}

/// The CI's shell started and is gone without an exit status: killed from outside, like a build.
fn killed(dir: &Path) -> CiState {
    CiState::Ended("failure", format!("CI ended without an exit status (killed?)\n{}", read_tail(dir)))
}

fn read_tail(dir: &Path) -> String {
    let bytes = std::fs::read(dir.join("output.log")).unwrap_or_default();
    let start = bytes.len().saturating_sub(OUTPUT_TAIL);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}
