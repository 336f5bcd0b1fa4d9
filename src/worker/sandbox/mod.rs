//! Kernel containment of agents and local CI: on Linux, a Landlock ruleset applied to the process
//! between fork and exec (so executor itself stays unrestricted), inherited by everything it starts.
//!
//! A contained process may
//! - write only beneath the paths its [`Sandbox`] makes writable (the worktree, what a commit needs of
//!   the repository's `.git`, a private temporary directory, a private state directory of the agent's
//!   CLI) and to device nodes (`/dev/null`, a terminal);
//! - read and execute everything else except the hidden paths: executor's config, data directory and
//!   database, the other runs' worktrees, the agent CLIs' real state and `worker.sandbox_hidden`'s
//!   credentials ([`cover`] turns "all but these" into Landlock's grants);
//! - connect over TCP only to the ports it is allowed (Landlock ABI 4+), with `worker.network =
//!   "allowlist"`;
//! - signal, or reach through abstract Unix sockets, only processes of its own sandbox (ABI 6+): not
//!   executor, not the user's other programs.
//!
//! Anything else fails with EACCES inside the agent, which its output — and so the work log — shows.
//! This layer is the same for every agent, a plain `command` too; where it contains an agent, the CLI's
//! own sandbox is switched off (Codex's cannot set itself up inside Landlock) — `executor doctor` says
//! which layer holds what.

pub(crate) mod cover;
#[cfg(target_os = "linux")]
mod landlock;
mod policy;

pub use policy::{for_config, layers, model_ports, url_port};

use std::path::{Path, PathBuf};

use crate::config::SandboxMode;

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// `worker.sandbox = "landlock"` on a system that cannot enforce it.
    #[error(
        "worker.sandbox = \"landlock\", but {0}: agents cannot be contained. Set worker.sandbox = \"off\" \
         (or \"auto\") to run them without kernel containment, or use a Linux kernel with Landlock \
         (5.13+, enabled in the `lsm=` boot parameter)"
    )]
    Unavailable(String),
    #[error("cannot set up the agent's Landlock sandbox at {path}: {message}")]
    Setup { path: PathBuf, message: String },
}

/// What this system offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Landlock is there, at this ABI version.
    Landlock { abi: i32 },
    /// It is not, and why.
    Missing(String),
}

/// Whether the kernel enforces Landlock, asked of the kernel itself.
pub fn support() -> Support {
    #[cfg(target_os = "linux")]
    {
        landlock::support()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Support::Missing("Landlock is a Linux feature; this system has no equivalent executor uses".into())
    }
}

/// Whether agents are to be contained under `mode` on this system: `Ok(true)` for Landlock,
/// `Ok(false)` for none (`off`, or `auto` where the kernel lacks it). `landlock` where the kernel lacks
/// it is an error naming the key and the fix: the setting never silently does nothing.
pub fn enabled(mode: SandboxMode) -> Result<bool, SandboxError> {
    match (mode, support()) {
        (SandboxMode::Off, _) => Ok(false),
        (_, Support::Landlock { .. }) => Ok(true),
        (SandboxMode::Auto, Support::Missing(_)) => Ok(false),
        (SandboxMode::Landlock, Support::Missing(why)) => Err(SandboxError::Unavailable(why)),
    }
}

/// Said once when a runner or analyzer starts: an error for `landlock` without Landlock (nothing may
/// start), a warning in the log for `auto` without it (agents run uncontained), nothing otherwise.
pub fn check_at_start(mode: SandboxMode) -> Result<(), SandboxError> {
    if !enabled(mode)? && mode == SandboxMode::Auto {
        tracing::warn!("agents run without kernel containment: {}", describe(mode).1);
    }
    Ok(())
}

/// What `executor doctor` and a starting runner say about `mode` here.
pub fn describe(mode: SandboxMode) -> (bool, String) {
    match (mode, support()) {
        (SandboxMode::Off, _) => (
            true,
            "off (worker.sandbox): agents may write wherever the user running executor may; only Claude \
             Code's and Codex's own sandboxes contain them"
                .into(),
        ),
        (_, Support::Landlock { abi }) => (
            true,
            format!(
                "Landlock ABI {abi}: agents and local CI write only their worktree (triage: its scratch \
                 checkout), what a commit needs of .git, a private temporary directory and a private state \
                 directory; they cannot read executor's config, data directory or other runs' worktrees, \
                 nor worker.sandbox_hidden; {}; {}",
                if abi >= NET_ABI {
                    "TCP connections only to the model API's port and worker.network_allow (worker.network)"
                } else {
                    "the network is not contained (it needs Landlock ABI 4, Linux 6.7)"
                },
                if abi >= SCOPE_ABI {
                    "they cannot signal processes outside their sandbox"
                } else {
                    "they can signal the user's other processes (scoping needs Landlock ABI 6, Linux 6.12)"
                }
            ),
        ),
        (SandboxMode::Auto, Support::Missing(why)) => (
            false,
            format!(
                "not available ({why}): agents run uncontained and may write wherever the user running \
                 executor may, including the main repository and ~/.ssh; a command agent in triage is not \
                 read-only"
            ),
        ),
        (SandboxMode::Landlock, Support::Missing(why)) => (false, SandboxError::Unavailable(why).to_string()),
    }
}

/// The Landlock ABI that contains TCP connections.
pub const NET_ABI: i32 = 4;
/// The Landlock ABI that scopes signals and abstract Unix sockets.
pub const SCOPE_ABI: i32 = 6;

/// Where a contained process may write, what it may not read, and where it may connect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    pub(super) writable: Vec<PathBuf>,
    /// Read-only, even beneath a hidden path (a worker's own files in the data directory).
    pub(super) readable: Vec<PathBuf>,
    hidden: Vec<PathBuf>,
    /// `None`: any connection; `Some(ports)`: TCP connections to these ports only.
    connect: Option<Vec<u16>>,
}

impl Sandbox {
    /// A sandbox for `mode` (`None`: the agent runs uncontained) allowing writes beneath `writable`.
    /// With `landlock` on a kernel without it, the sandbox is still returned, and the agent's start
    /// fails with [`SandboxError::Unavailable`]; callers refuse to start earlier through [`enabled`].
    pub fn for_mode(mode: SandboxMode, writable: impl IntoIterator<Item = PathBuf>) -> Option<Sandbox> {
        let on = match mode {
            SandboxMode::Off => false,
            SandboxMode::Landlock => true,
            SandboxMode::Auto => matches!(support(), Support::Landlock { .. }),
        };
        on.then(|| {
            let mut s = Sandbox::default();
            for p in writable {
                s.allow(p);
            }
            s
        })
    }

    /// Allows writes beneath `path` too (a file or a directory).
    pub fn allow(&mut self, path: PathBuf) {
        if !self.writable.contains(&path) {
            self.writable.push(path);
        }
    }

    /// Allows reading beneath `path` (a file or a directory), even where it lies in a hidden path.
    pub fn allow_read(&mut self, path: PathBuf) {
        if !self.readable.contains(&path) {
            self.readable.push(path);
        }
    }

    /// Keeps `path` (and what is beneath it) from being read, unless a writable or readable path
    /// beneath it says otherwise.
    pub fn hide(&mut self, path: PathBuf) {
        if !self.hidden.contains(&path) {
            self.hidden.push(path);
        }
    }

    /// Allows TCP connections to `ports` only (more calls add ports).
    pub fn connect_only(&mut self, ports: impl IntoIterator<Item = u16>) {
        let allowed = self.connect.get_or_insert_with(Vec::new);
        for port in ports {
            if !allowed.contains(&port) {
                allowed.push(port);
            }
        }
    }

    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    pub fn hidden(&self) -> &[PathBuf] {
        &self.hidden
    }

    /// The TCP ports it may connect to; `None` when connections are not contained.
    pub fn connect_ports(&self) -> Option<&[u16]> {
        self.connect.as_deref()
    }

    /// The kernel object to apply in the child before it runs the agent. Paths that do not exist are
    /// left out (there is nothing beneath them to write); everything else must be accepted.
    pub(crate) fn prepare(&self) -> Result<Prepared, SandboxError> {
        #[cfg(target_os = "linux")]
        {
            landlock::prepare(self).map(Prepared)
        }
        #[cfg(not(target_os = "linux"))]
        {
            match support() {
                Support::Missing(why) => Err(SandboxError::Unavailable(why)),
                Support::Landlock { .. } => unreachable!("Landlock is Linux-only"),
            }
        }
    }
}

/// A ruleset ready to be applied by [`Prepared::apply_in_child`].
pub(crate) struct Prepared(#[cfg(target_os = "linux")] std::os::fd::OwnedFd);

impl Prepared {
    /// The raw descriptor to restrict the child with; valid while `self` lives.
    #[cfg(target_os = "linux")]
    pub(crate) fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.0.as_raw_fd()
    }
}

/// Restricts the calling process with the ruleset `fd`. Only async-signal-safe system calls: it runs
/// between fork and exec.
///
/// # Safety
/// `fd` must be a Landlock ruleset descriptor open in this process.
#[cfg(target_os = "linux")]
pub(crate) unsafe fn restrict_self(fd: i32) -> std::io::Result<()> {
    // SAFETY: plain system calls on integers; the caller guarantees `fd`.
    unsafe { landlock::restrict_self(fd) }
}

/// Directories the user's config adds (`worker.sandbox_writable`), `~/` expanded.
pub fn configured(extra: &[String]) -> Vec<PathBuf> {
    extra.iter().filter(|s| !s.trim().is_empty()).map(|s| crate::config::expand_home(s)).collect()
}

/// The private temporary directory of a worker whose files live in `dir`.
pub(crate) fn temp_dir(dir: &Path) -> PathBuf {
    dir.join("tmp")
}
