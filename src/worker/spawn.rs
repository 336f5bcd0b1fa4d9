//! Starting an agent process so that it can outlive its supervisor: its own process group, the prompt
//! from a file on stdin, stdout and stderr to a file (through a writer bounded by the kernel), and an
//! explicit environment.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::WorkerError;
use super::agent::CommandLine;
use super::sandbox::Prepared;

/// Variables every agent gets from executor's own environment when set. TERM is deliberately absent:
/// there is no terminal, and agents that see one may print colours and progress bars into the log.
pub const BASE_ENV: &[&str] =
    &["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"];

/// The environment an agent runs with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvSpec {
    /// Names passed through from executor's environment when set (config: e.g. `ANTHROPIC_API_KEY`,
    /// `GH_TOKEN`, `IS_SANDBOX`).
    pub pass: Vec<String>,
    /// Variables set to these values.
    pub set: Vec<(String, String)>,
    /// More values to redact from work logs (besides the values of secret-looking variables).
    pub secrets: Vec<String>,
}

impl EnvSpec {
    /// The agent's full environment, resolved now.
    pub fn resolve(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = Vec::new();
        let mut put = |k: &str, v: String| {
            env.retain(|(name, _)| name != k);
            env.push((k.to_string(), v));
        };
        for name in BASE_ENV.iter().copied().chain(self.pass.iter().map(String::as_str)) {
            if let Ok(v) = std::env::var(name) {
                put(name, v);
            }
        }
        for (k, v) in &self.set {
            put(k, v.clone());
        }
        env
    }

    /// Values that must never be written to a log: the explicit `secrets`, plus the values of passed or
    /// set variables whose name says they are credentials.
    pub fn secret_values(&self) -> Vec<String> {
        let mut out = self.secrets.clone();
        for (k, v) in self.resolve() {
            if looks_secret(&k) {
                out.push(v);
            }
        }
        out
    }
}

fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    ["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE"]
        .iter()
        .any(|w| n.contains(w))
}

/// Files belonging to one worker, kept outside the worktree so the agent does not commit them.
#[derive(Debug, Clone)]
pub struct WorkerFiles {
    pub prompt: PathBuf,
    pub output: PathBuf,
    pub schema: PathBuf,
}

impl WorkerFiles {
    pub fn create(dir: PathBuf) -> Result<Self, WorkerError> {
        std::fs::create_dir_all(&dir).map_err(WorkerError::io("create worker directory", &dir))?;
        Ok(WorkerFiles {
            prompt: dir.join("prompt.md"),
            output: dir.join("output.log"),
            schema: dir.join("result-schema.json"),
        })
    }

    /// The directory of the worker's private files.
    pub fn dir(&self) -> PathBuf {
        self.output.parent().map(Path::to_path_buf).unwrap_or_default()
    }

    /// The directory of the worker's replies file (created, owner-only): see [`super::replies`].
    pub fn replies_dir(&self) -> Result<PathBuf, WorkerError> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = super::replies::dir_in(&self.dir());
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(WorkerError::io("create the replies directory", &dir))?;
        Ok(dir)
    }

    /// The worker's private temporary directory (created, owner-only), for a sandboxed agent that may
    /// write nowhere else outside its worktree.
    pub fn temp_dir(&self) -> Result<PathBuf, WorkerError> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = self.output.parent().map(super::sandbox::temp_dir).unwrap_or_default();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(WorkerError::io("create the temporary directory", &dir))?;
        Ok(dir)
    }

    /// Removes the worker's directory (best effort): for a worker that never ran, nothing in it is
    /// needed, and the prompt may hold what should not linger.
    pub fn remove(&self) {
        if let Some(dir) = self.output.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Writes a file only the owner can read: prompts and raw output may contain secrets.
pub fn write_private(path: &Path, content: &[u8]) -> Result<(), WorkerError> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(WorkerError::io("write", path))?;
    f.write_all(content).map_err(WorkerError::io("write", path))
}

/// The line the start gate prints when it is closed without being opened: the agent never ran.
pub const GATE_MARKER: &str = "executor-gate: closed before the agent was released; the agent did not run";
/// The gate's exit status in that case.
pub const GATE_EXIT: i32 = 97;
/// The file descriptor the gate reads its go-ahead from.
const GATE_FD: i32 = 3;

/// An agent spawned behind its start gate: `sh` waiting for one line on fd 3 before it `exec`s the
/// agent (same pid, same process start time). Writing the line opens the gate; closing the write end
/// without writing (dropping this) makes the gate print [`GATE_MARKER`] and exit without running
/// anything.
pub struct Gated {
    pub child: tokio::process::Child,
    pub gate: OwnedFd,
}

/// Spawns the agent behind its gate. The child is the leader of a new process group (not hit by a
/// Ctrl-C meant for executor), in the worker's cgroup where there is one, with the worker's marker in
/// its environment (so everything it starts can be found and stopped: [`super::tree`]), reads the prompt file
/// on stdin, and writes to the output file — no pipe to executor, so it keeps running if executor dies.
///
/// Program and arguments reach the agent through `"$@"`: the shell never interprets them.
///
/// With a `sandbox`, the child restricts itself before it runs the gate: the gate and the agent it
/// becomes, and all their children, are contained; executor is not.
///
/// The agent's stdout and stderr reach the output file through a writer process bounded by the kernel
/// at `max_output_bytes` ([`super::output_cap`]), which holds while no runner watches.
pub fn spawn(
    cmd: &CommandLine,
    cwd: &Path,
    env: &[(String, String)],
    files: &WorkerFiles,
    sandbox: Option<&Prepared>,
    max_output_bytes: u64,
) -> Result<Gated, WorkerError> {
    let program = resolve_program(&cmd.program, cwd, env)
        .map_err(|source| WorkerError::Spawn { program: cmd.program.clone(), source })?;
    let stdin = std::fs::File::open(&files.prompt).map_err(WorkerError::io("open", &files.prompt))?;
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&files.output)
        .map_err(WorkerError::io("create", &files.output))?;
    let err = out.try_clone().map_err(WorkerError::io("duplicate", &files.output))?;
    // Both ends close on exec, so no other child of executor (CI, git, another agent) inherits them;
    // the gate gets the read end as fd 3 (dup2 clears close-on-exec on the copy) and closes it itself.
    let (read, write) =
        cloexec_pipe().map_err(|e| WorkerError::Spawn { program: cmd.program.clone(), source: e.into() })?;
    let script = format!(
        "read -r _ <&{GATE_FD} || {{ echo \"{GATE_MARKER}\"; exit {GATE_EXIT}; }}; exec {GATE_FD}<&-; exec \"$@\""
    );
    // The worker's cgroup and marker: everything the agent starts can be found and stopped.
    let containment = super::tree::Containment::prepare(&files.dir());
    let (marker, token) = containment.marker();
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(script)
        .arg("executor-gate")
        .arg(&program)
        .args(&cmd.args)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env(marker, token)
        .stdin(stdin)
        .stdout(out)
        .stderr(err)
        .process_group(0)
        // Dropping the handle (supervisor crash, future aborted) must not kill the agent.
        .kill_on_drop(false);
    let read_fd = read.as_raw_fd();
    let procs_fd = containment.procs_fd();
    #[cfg(target_os = "linux")]
    let ruleset_fd = sandbox.map(Prepared::raw_fd);
    #[cfg(not(target_os = "linux"))]
    if sandbox.is_some() {
        unreachable!("a sandbox is only ever prepared on Linux");
    }
    // SAFETY: between fork and exec only async-signal-safe calls (dup2, fcntl, prctl, landlock, the
    // output writer's fork and its calls, a write to join the cgroup) on descriptors that exist in the
    // child, no allocation.
    unsafe {
        command.pre_exec(move || {
            if read_fd == GATE_FD {
                // Already in place: dup2 would do nothing, so clear close-on-exec by hand.
                if libc::fcntl(GATE_FD, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(read_fd, GATE_FD) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            // Before the writer, so nothing above depends on what the ruleset allows and the writer
            // is contained too. A failure here fails the spawn: an agent never runs uncontained when a
            // sandbox was asked for.
            #[cfg(target_os = "linux")]
            if let Some(fd) = ruleset_fd {
                super::sandbox::restrict_self(fd)?;
            }
            // Stdout and stderr are the output file here; they become the bounded writer's pipe. A
            // failure fails the spawn: an agent never runs with its output unbounded.
            super::output_cap::interpose(max_output_bytes)?;
            // After the writer, which stays out of the cgroup and is not the agent's to reap.
            super::tree::enter(procs_fd)
        });
    }
    let child = command.spawn().map_err(|source| {
        containment.discard();
        WorkerError::Spawn { program: cmd.program.clone(), source }
    })?;
    drop(read);
    Ok(Gated { child, gate: write })
}

/// A pipe whose two ends close on exec. Atomic where the system has `pipe2`.
#[cfg(not(target_vendor = "apple"))]
fn cloexec_pipe() -> nix::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
}

/// macOS has no `pipe2`: the flag is set right after creation. A child forked by another thread in
/// between could inherit an end; the agent's gate still opens only on the line executor writes.
#[cfg(target_vendor = "apple")]
fn cloexec_pipe() -> nix::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{F_SETFD, FdFlag, fcntl};
    let (read, write) = nix::unistd::pipe()?;
    fcntl(&read, F_SETFD(FdFlag::FD_CLOEXEC))?;
    fcntl(&write, F_SETFD(FdFlag::FD_CLOEXEC))?;
    Ok((read, write))
}

/// Where the gate will find `program`: the shell's `exec` would only report a missing program after
/// the gate opens, so it is looked up here (in the agent's own PATH) and refused before anything runs.
fn resolve_program(program: &str, cwd: &Path, env: &[(String, String)]) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    let not_found = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such program");
    if program.is_empty() {
        return Err(not_found());
    }
    if program.contains('/') {
        // Relative to the agent's working directory, as the gate's `exec` would take it.
        let path = cwd.join(program);
        return if runnable(&path) { Ok(path) } else { Err(not_found()) };
    }
    let path = env.iter().rev().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str()).unwrap_or("");
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| runnable(p))
        .ok_or_else(not_found)
}

/// Opens the gate: the agent starts.
pub fn open_gate(gate: OwnedFd) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::from(gate);
    f.write_all(b"go\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_is_explicit_and_secrets_are_found() {
        let spec = EnvSpec {
            pass: vec!["PATH".into(), "EXECUTOR_TEST_SURELY_UNSET".into()],
            set: vec![("GH_TOKEN".into(), "ghp_abcdef".into()), ("MODE".into(), "x".into())],
            secrets: vec!["s3cr3t-value".into()],
        };
        let env = spec.resolve();
        assert!(env.iter().any(|(k, _)| k == "PATH"));
        assert!(!env.iter().any(|(k, _)| k == "EXECUTOR_TEST_SURELY_UNSET" || k == "TERM"));
        let secrets = spec.secret_values();
        assert!(secrets.contains(&"ghp_abcdef".to_string()));
        assert!(secrets.contains(&"s3cr3t-value".to_string()));
        assert!(!secrets.contains(&"x".to_string()));
    }
}
