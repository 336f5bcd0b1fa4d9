//! A cgroup v2 of its own for each worker, where executor may create one: the kernel then keeps every
//! process the agent starts in it — a new session, a double fork, a reparented orphan — and
//! `cgroup.kill` stops them all at once, forks racing the kill included.
//!
//! The cgroup is a child of executor's own cgroup (the unified hierarchy: `/sys/fs/cgroup`, or
//! `/sys/fs/cgroup/unified` on a hybrid system), named after the worker's token, so a runner that
//! restarts in the same cgroup finds it again from the worker's files alone. Creating it needs write
//! access there: root, or a systemd-delegated subtree. Elsewhere (a login session's scope, macOS)
//! there is none, and [`super::tree`] falls back to `/proc`.
//!
//! The agent's child joins the cgroup between fork and exec by writing `0` (itself) to the cgroup's
//! `cgroup.procs`, opened by executor beforehand: the agent never runs outside it. Under the sandbox the
//! agent cannot write under `/sys/fs/cgroup`, so it cannot move itself out; without one it runs as the
//! user and could (which the `/proc` search behind the cgroup still partly covers).

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Every worker cgroup's name starts so: nothing else is ever killed or removed as one.
const PREFIX: &str = "executor-worker-";

/// One worker's cgroup (which may not exist, or no longer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCgroup {
    path: PathBuf,
}

impl WorkerCgroup {
    /// Creates the cgroup for the worker with `token` and opens its `cgroup.procs` for the agent's child
    /// to join ([`enter`]). `None` where cgroups v2 cannot be created here.
    pub fn create(token: &str) -> Option<(WorkerCgroup, OwnedFd)> {
        let cgroup = WorkerCgroup { path: own_cgroup()?.join(format!("{PREFIX}{token}")) };
        match std::fs::create_dir(&cgroup.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        }
        // O_CLOEXEC: the agent's exec closes it.
        match std::fs::OpenOptions::new().write(true).open(cgroup.path.join("cgroup.procs")) {
            Ok(procs) => Some((cgroup, procs.into())),
            Err(_) => {
                cgroup.remove();
                None
            }
        }
    }

    /// The cgroup of the worker with `token`, if it exists: under executor's own cgroup, or (a runner
    /// restarted elsewhere) the one `leader` is in, when named for this worker.
    pub fn find(token: &str, leader: Option<i32>) -> Option<WorkerCgroup> {
        let name = format!("{PREFIX}{token}");
        let under_own = own_cgroup().map(|own| WorkerCgroup { path: own.join(&name) });
        under_own
            .into_iter()
            .chain(leader.and_then(of_process))
            .find(|c| c.path.file_name().is_some_and(|n| *n == *name) && c.path.is_dir())
    }

    /// Whether every process in the cgroup is frozen now (`cgroup.events`: `frozen 1`).
    #[cfg(test)]
    pub fn is_frozen(&self) -> bool {
        std::fs::read_to_string(self.path.join("cgroup.events"))
            .is_ok_and(|e| e.lines().any(|l| l == "frozen 1"))
    }

    /// Whether the cgroup still exists.
    pub fn exists(&self) -> bool {
        self.path.is_dir()
    }

    /// Freezes (or thaws) every process in the cgroup (`cgroup.freeze`, Linux 5.2+): a frozen process
    /// does not run until thawed, whatever signals it gets, except a kill. False where that failed.
    pub fn freeze(&self, frozen: bool) -> bool {
        std::fs::OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.freeze"))
            .and_then(|mut f| f.write_all(if frozen { b"1" } else { b"0" }))
            .is_ok()
    }

    /// The pids in the cgroup now (in its child cgroups too, should the agent have made any).
    pub fn procs(&self) -> Vec<i32> {
        let mut out = Vec::new();
        collect_procs(&self.path, &mut out, 0);
        out
    }

    /// Kills every process in the cgroup (`cgroup.kill`, Linux 5.14+). False where that file is
    /// missing: the caller's signals to each member are then all there is.
    pub fn kill(&self) -> bool {
        std::fs::OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.kill"))
            .and_then(|mut f| f.write_all(b"1"))
            .is_ok()
    }

    /// Removes the cgroup once it is empty (best effort; a populated one stays, and the next stop of
    /// the same worker tries again).
    pub fn remove(&self) {
        remove_tree(&self.path, 0);
    }
}

/// The worker cgroup `pid` is in, if it is one (by its name).
pub fn of_process(pid: i32) -> Option<WorkerCgroup> {
    let content = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = unified_path(&content)?;
    let own = path.rsplit('/').next()?;
    if !own.starts_with(PREFIX) {
        return None;
    }
    Some(WorkerCgroup { path: mount()?.join(path.trim_start_matches('/')) })
}

/// Run in the agent's child after fork, before exec: joins the cgroup whose `cgroup.procs` is `procs`.
///
/// # Safety
/// Only between fork and exec: one `write`, no allocation.
pub unsafe fn enter(procs: libc::c_int) -> bool {
    // SAFETY: a write of a static byte to a descriptor the caller opened.
    unsafe { libc::write(procs, b"0".as_ptr().cast(), 1) == 1 }
}

/// Executor's own cgroup in the unified hierarchy, as a directory.
fn own_cgroup() -> Option<PathBuf> {
    let content = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = unified_path(&content)?;
    Some(mount()?.join(path.trim_start_matches('/')))
}

/// The cgroup v2 line of a `/proc/PID/cgroup`: `0::/path`.
fn unified_path(content: &str) -> Option<&str> {
    content.lines().find_map(|l| l.strip_prefix("0::")).filter(|p| p.starts_with('/') && !p.contains(".."))
}

/// Where the unified (v2) hierarchy is mounted.
fn mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // Fields: id parent major:minor root mountpoint options... - fstype source superoptions
    mounts.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        if after.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut fields = before.split_whitespace();
        let root = fields.nth(3)?;
        let point = fields.next()?;
        // A bind mount of a subtree would shift every path; only the hierarchy's root is used.
        (root == "/").then(|| PathBuf::from(point))
    })
}

/// A cgroup is at most this deep under a worker's: an agent cannot make executor recurse without end.
const MAX_DEPTH: usize = 8;

fn collect_procs(dir: &Path, out: &mut Vec<i32>, depth: usize) {
    if let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        out.extend(procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
    }
    if depth < MAX_DEPTH {
        for child in child_dirs(dir) {
            collect_procs(&child, out, depth + 1);
        }
    }
}

fn remove_tree(dir: &Path, depth: usize) {
    if depth < MAX_DEPTH {
        for child in child_dirs(dir) {
            remove_tree(&child, depth + 1);
        }
    }
    let _ = std::fs::remove_dir(dir);
}

fn child_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_unified_line_only() {
        let v1_and_v2 = "9:name=systemd:/\n4:memory:/x\n0::/user.slice/app.scope\n";
        assert_eq!(unified_path(v1_and_v2), Some("/user.slice/app.scope"));
        assert_eq!(unified_path("4:memory:/x\n"), None);
        assert_eq!(unified_path("0::/../../etc\n"), None);
    }
}
