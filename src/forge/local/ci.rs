//! The local forge's CI processes: a check directory per pull request and commit, a scratch checkout in
//! it, and the CI command run there in the background by a tiny shell that records its exit status in a
//! file, so the result outlives the runner.
//!
//! CI runs agent-written code (a committed `ci.sh`, a `build.rs`), so it runs as contained as an agent
//! (`worker.sandbox`): it writes only its checkout and a private temporary directory, reads nothing of
//! executor's, connects only where agents may, and gets an explicit environment (PATH, HOME, the locale
//! and `repos.NAME.ci_env`; never a token). Its output, pid and exit status go to files executor opened
//! before the shell started — descriptors the shell inherits — and that the sandbox does not let CI
//! open by name: CI cannot forge its own result.
//!
//! Each check directory has a `lock` file. Whoever starts CI takes the lock before the check is recorded
//! and hands it to git and then to the CI's shell (as their standard input), which hold it until they
//! exit. So a pending check whose lock nobody holds and whose CI left no trace (no pid file, no exit
//! status) was being started by a runner that died: it is started again. CI that really cannot start
//! (its directory, its checkout, its program) is known while starting, and is an error for a human.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use crate::store::LocalCheck;
use crate::worker::Sandbox;
use crate::workspace::{self, WorkspaceError};

/// Variables CI gets from executor's environment, besides `repos.NAME.ci_env`.
const CI_BASE_ENV: &[&str] =
    &["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ"];

/// How CI runs: its command, the variables it gets, and its sandbox (`None`: uncontained).
#[derive(Debug, Clone)]
pub struct CiRun {
    pub command: Vec<String>,
    pub env: Vec<String>,
    pub sandbox: Option<Sandbox>,
}

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
    #[error(transparent)]
    Sandbox(#[from] crate::worker::SandboxError),
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

/// Checks `sha` out in the locked directory and starts CI there; returns the CI shell's pid. The lock
/// passes to git and then to the CI's shell. Blocking.
pub fn launch(lock: CiLock, repo: &Path, sha: &str, ci: &CiRun) -> Result<u32, CiError> {
    let Some((program, args)) = ci.command.split_first() else {
        return Err(CiError::Program { program: String::new(), why: "is empty" });
    };
    let work = lock.dir.join("work");
    let for_git = lock.file.try_clone().map_err(io(format!("sharing the lock of {}", lock.dir.display())))?;
    workspace::add_detached_holding(repo, &work, sha, for_git)?;
    find_program(program, &work)?;
    spawn(lock, &work, program, args, ci)
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

/// Runs `program args…` in `work` through a tiny fixed shell script that records its pid and the exit
/// status on descriptors 4 and 6 (files opened here) and gives the command descriptor 5 (the output
/// file) as stdout and stderr. The CI command comes from the config, never from task text, and reaches
/// the script as positional parameters (no interpolation). The shell's standard input is the lock,
/// which it holds for its life; the command itself gets `/dev/null`, so nothing it leaves behind holds
/// the lock, and none of the three descriptors.
fn spawn(lock: CiLock, work: &Path, program: &str, args: &[String], ci: &CiRun) -> Result<u32, CiError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let dir = &lock.dir;
    let create = |name: &str| {
        let path = dir.join(name);
        std::fs::File::create(&path).map_err(io(format!("creating {}", path.display())))
    };
    let (pid_file, output, exit) = (create("pid")?, create("output.log")?, create("exit")?);
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).map_err(io(format!("creating {}", tmp.display())))?;
    let prepared = match &ci.sandbox {
        Some(sandbox) => {
            let mut sandbox = sandbox.clone();
            sandbox.allow(work.to_path_buf());
            sandbox.allow(tmp.clone());
            Some(sandbox.prepare()?)
        }
        None => None,
    };
    let mut command = std::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(r#"echo $$ >&4; "$@" </dev/null >&5 2>&1 4>&- 5>&- 6>&-; echo $? >&6"#)
        .arg("executor-ci")
        .arg(program)
        .args(args)
        .env_clear()
        .envs(
            CI_BASE_ENV
                .iter()
                .copied()
                .chain(ci.env.iter().map(String::as_str))
                .filter_map(|name| std::env::var_os(name).map(|value| (name.to_string(), value))),
        )
        .env("TMPDIR", &tmp)
        .current_dir(work)
        .stdin(lock.file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    let fds = [pid_file.as_raw_fd(), output.as_raw_fd(), exit.as_raw_fd()];
    #[cfg(target_os = "linux")]
    let ruleset = prepared.as_ref().map(|p| p.raw_fd());
    // SAFETY: only dup2 and the two system calls of `restrict_self`, async-signal-safe, between fork
    // and exec; the descriptors stay open in this process until `spawn` returns.
    unsafe {
        command.pre_exec(move || {
            // Through copies above the targets first: a source may already sit at 4, 5 or 6.
            let mut high = [0; 3];
            for (copy, fd) in high.iter_mut().zip(fds) {
                *copy = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
                if *copy < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (copy, target) in high.into_iter().zip([4, 5, 6]) {
                if libc::dup2(copy, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            #[cfg(target_os = "linux")]
            if let Some(ruleset) = ruleset {
                crate::worker::sandbox::restrict_self(ruleset)?;
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(io(format!("starting CI {program:?}")))?;
    drop(prepared);
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

/// The exit status the CI's shell wrote: a whole line (the file exists, empty, from the start).
fn exit_status(dir: &Path) -> Option<CiState> {
    let code = std::fs::read_to_string(dir.join("exit")).ok().filter(|c| c.ends_with('\n'))?;
    let status = if code.trim() == "0" { "success" } else { "failure" };
    Some(CiState::Ended(status, format!("exit status {}\n{}", code.trim(), read_tail(dir))))
}

/// The CI's shell started and is gone without an exit status: killed from outside, like a build.
fn killed(dir: &Path) -> CiState {
    CiState::Ended("failure", format!("CI ended without an exit status (killed?)\n{}", read_tail(dir)))
}

/// The end of the CI's output, cut at a line (see [`crate::worker::prompt::tail`]: a token cut in half
/// would pass redaction).
fn read_tail(dir: &Path) -> String {
    let bytes = std::fs::read(dir.join("output.log")).unwrap_or_default();
    // A byte more than is kept, so the tail knows whether its cut lands at the start of a line.
    let start = bytes.len().saturating_sub(OUTPUT_TAIL + 1);
    crate::worker::prompt::tail(&String::from_utf8_lossy(&bytes[start..]), usize::MAX, OUTPUT_TAIL)
}
