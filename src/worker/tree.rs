//! Stopping a worker stops every process its agent started: also those in a session or process group
//! of their own (Claude Code runs each Bash tool command under `setsid`) and those whose parent died.
//! Signalling the agent's process group alone let such a command commit to a run's branch after the
//! run had moved on.
//!
//! Three ways to find a worker's processes, used together, because each catches what the others miss:
//!
//! - **Its cgroup** ([`super::cgroup`]), where executor can create one (root, a delegated systemd
//!   subtree): the kernel puts every descendant in it whatever it does — new sessions, double forks,
//!   orphans, a scrubbed environment — and `cgroup.kill` kills them all, forks racing the kill included.
//!   The real answer, where available; under the sandbox an agent cannot leave it.
//! - **Descendants in `/proc`**: the agent's process group, and every process whose parent chain leads
//!   to the agent or to a process already found. Where there is no cgroup, the agent is made a child
//!   subreaper (`PR_SET_CHILD_SUBREAPER`, kept across `execve`), so the orphans of its children stay its
//!   descendants while it lives. Once the agent itself is dead, its orphans belong to init and only the
//!   other two ways find them. (With a cgroup the agent is no subreaper: orphans it would never reap
//!   would linger as zombies under a Node.js CLI.)
//! - **A marker in the environment**: every agent runs with `EXECUTOR_WORKER_ID=<token>`, which its
//!   children inherit; processes of executor's user whose `/proc/PID/environ` holds it are the worker's.
//!   This finds orphans of an agent that died while no runner watched (a restarted runner collecting
//!   the worker), but a process that execs with a scrubbed environment escapes it.
//!
//! So without a cgroup, what escapes is a process that cleared its environment and was orphaned after
//! the agent's death (or during the moments between two looks while it was being stopped).
//!
//! The stop: every process found is stopped (SIGSTOP) and the search repeated until it finds nothing
//! new, so none forks or slips away meanwhile; the agent's own process group is then sent SIGTERM and
//! let run for the grace period (the rest stays stopped); then the cgroup is killed and every process
//! found is sent SIGKILL, the search repeated until nothing is left. Each signal goes to a pid only
//! while it is the process found (pid and start time, [`process::signal_identified`]). The output
//! writer (`super::output_cap`) ends last, on its own once nothing holds its pipe, so the agent's last
//! lines reach the file.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde::Serialize;

use super::cgroup::{self, WorkerCgroup};
use super::output_cap;
use super::process::{self, ProcStat};

/// The variable every agent (and so every process it starts) carries: the worker's [`token`].
pub const MARKER_ENV: &str = "EXECUTOR_WORKER_ID";

/// How often the processes are looked at while they are being stopped.
const POLL: Duration = Duration::from_millis(50);
/// How long processes sent SIGKILL get to disappear, and then the output writer to end on its own.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// Search rounds per look: each stops what it found, so only a process forking faster than it is
/// stopped needs more.
const MAX_ROUNDS: usize = 32;
/// At most this many processes are named in the work log.
const MAX_NAMED: usize = 50;

/// A worker's token: the name of its cgroup and its marker's value. Derived from the worker's private
/// directory (unique per worker, and known again from its recorded output path), so a runner that
/// adopts or collects the worker finds both without any record of its own.
pub fn token(files_dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let digest = ring::digest::digest(&ring::digest::SHA256, files_dir.as_os_str().as_bytes());
    digest.as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// What the spawn of an agent needs, made before the fork: the marker, and the cgroup to join.
pub struct Containment {
    token: String,
    cgroup: Option<(WorkerCgroup, OwnedFd)>,
}

impl Containment {
    pub fn prepare(files_dir: &Path) -> Containment {
        let token = token(files_dir);
        let cgroup = WorkerCgroup::create(&token);
        Containment { token, cgroup }
    }

    /// The variable to set in the agent's environment.
    pub fn marker(&self) -> (&'static str, &str) {
        (MARKER_ENV, &self.token)
    }

    /// For [`enter`] in the agent's child.
    pub fn procs_fd(&self) -> Option<libc::c_int> {
        self.cgroup.as_ref().map(|(_, fd)| fd.as_raw_fd())
    }

    /// The agent did not start: its cgroup goes.
    pub fn discard(&self) {
        if let Some((cgroup, _)) = &self.cgroup {
            cgroup.remove();
        }
    }
}

/// Removes what [`Containment::prepare`] made for a worker whose agent never ran.
pub fn discard(files_dir: &Path) {
    if let Some(cgroup) = WorkerCgroup::find(&token(files_dir), None) {
        cgroup.remove();
    }
}

/// Run in the agent's child after fork, before exec, after the output writer was started (which stays
/// out of the cgroup and is not the agent's to reap): joins the worker's cgroup, or, where there is
/// none, makes the agent a child subreaper.
///
/// # Safety
/// Only between fork and exec: a write and a prctl, no allocation.
pub unsafe fn enter(procs: Option<libc::c_int>) -> std::io::Result<()> {
    // SAFETY: see above.
    unsafe {
        if let Some(fd) = procs
            && cgroup::enter(fd)
        {
            return Ok(());
        }
        #[cfg(target_os = "linux")]
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A process a stop ended, for the work log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoppedProcess {
    pub pid: i32,
    /// Its command name (`/proc/PID/comm`), control characters replaced.
    pub name: String,
    /// In the agent's process group (the rest had left it: a new session or group).
    pub in_group: bool,
}

/// "3 processes: claude (123), bash (130), git (131)".
pub fn describe(stopped: &[StoppedProcess]) -> String {
    let noun = if stopped.len() == 1 { "process" } else { "processes" };
    let mut names: Vec<String> =
        stopped.iter().take(MAX_NAMED).map(|p| format!("{} ({})", p.name, p.pid)).collect();
    if stopped.len() > MAX_NAMED {
        names.push(format!("and {} more", stopped.len() - MAX_NAMED));
    }
    format!("{} {noun}: {}", stopped.len(), names.join(", "))
}

/// Stops what is left of a recorded worker that nobody supervises (its runner was declared lost, its
/// analyzer died; `output_path` unknown for the latter): the
/// agent while it is still the recorded process (`pid`, `start_time`), with everything it started;
/// once the agent is dead, its cgroup if it still holds processes. (Not the marker search then: this
/// runs for every such worker ever recorded on the host, and reads every process's environment.)
pub async fn stop_recorded(
    pid: i32,
    start_time: u64,
    output_path: Option<&Path>,
    grace: Duration,
) -> Vec<StoppedProcess> {
    let files_dir = output_path.and_then(Path::parent);
    let tree = if process::is_same_process(pid, start_time) {
        match files_dir {
            Some(dir) => WorkerTree::of_worker(Some((pid, start_time)), dir),
            None => WorkerTree::of_leader(pid),
        }
    } else {
        let cgroup = files_dir.and_then(|dir| WorkerCgroup::find(&token(dir), None));
        match cgroup {
            Some(cgroup) => WorkerTree { leader: None, token: None, cgroup: Some(cgroup) },
            None => return Vec::new(),
        }
    };
    tree.stop(grace, || {}).await
}

/// Everything one worker started, as far as it can be found: see the module's documentation.
pub struct WorkerTree {
    /// The agent (leader of its process group), with its start time; `None` when it is unknown.
    leader: Option<(i32, u64)>,
    token: Option<String>,
    cgroup: Option<WorkerCgroup>,
}

/// A process found, as it was when found.
struct Member {
    start_time: u64,
    name: String,
    in_group: bool,
    writer: bool,
}

impl WorkerTree {
    /// The worker whose private files are in `files_dir`, led by `leader` (pid, start time) when known.
    pub fn of_worker(leader: Option<(i32, u64)>, files_dir: &Path) -> WorkerTree {
        let leader = leader.filter(|(pid, start)| *pid > 1 && *start > 0);
        let token = token(files_dir);
        let cgroup = WorkerCgroup::find(&token, leader.map(|(pid, _)| pid));
        WorkerTree { leader, token: Some(token), cgroup }
    }

    /// The worker led by the live process `leader`, known by nothing else: its group, its descendants,
    /// and its cgroup if it is in a worker's. (Its marker is not read from its environment, which the
    /// agent controls: it could name another worker's.)
    pub fn of_leader(leader: i32) -> WorkerTree {
        let start = process::pid_start_time(leader);
        let leader = (leader > 1 && start > 0).then_some((leader, start));
        WorkerTree { leader, token: None, cgroup: leader.and_then(|(pid, _)| cgroup::of_process(pid)) }
    }

    /// Stops everything the worker started (see the module's documentation) and says what was stopped,
    /// the output writer left out. `reap` is called on every poll, so the caller can collect the
    /// leader's exit status and it does not linger as a zombie.
    pub async fn stop(&self, grace: Duration, mut reap: impl FnMut()) -> Vec<StoppedProcess> {
        if !process::procfs() {
            if let Some((leader, _)) = self.leader {
                stop_group_only(leader, grace, &mut reap).await;
            }
            return Vec::new();
        }
        let mut known = BTreeMap::new();
        self.look(&mut known, false);
        if !known.is_empty() {
            // The agent's group may end cleanly; whatever left the group stays stopped meanwhile.
            for (pid, m) in known.iter().filter(|(_, m)| m.in_group) {
                process::signal_identified(*pid, m.start_time, Signal::SIGTERM);
                process::signal_identified(*pid, m.start_time, Signal::SIGCONT);
            }
            let ended = self.wait(&mut known, grace, &mut reap, |m| m.in_group && !m.writer, false).await;
            if !ended {
                tracing::warn!(leader = ?self.leader, "worker processes still alive after SIGTERM and grace; sending SIGKILL");
            }
            if !self.wait(&mut known, KILL_WAIT, &mut reap, |m| !m.writer, true).await {
                tracing::warn!(leader = ?self.leader, "worker processes survived SIGKILL");
            }
            // Nothing of the agent holds the writer's pipe any more: it ends once it has copied the rest.
            if !self.wait(&mut known, KILL_WAIT, &mut reap, |_| true, true).await {
                kill_live(&known, |_| true);
                self.wait(&mut known, KILL_WAIT, &mut reap, |_| true, true).await;
            }
        }
        if let Some(cgroup) = &self.cgroup {
            cgroup.remove();
        }
        let mut stopped: Vec<StoppedProcess> = known
            .into_iter()
            .filter(|(_, m)| !m.writer)
            .map(|(pid, m)| StoppedProcess { pid, name: m.name, in_group: m.in_group })
            .collect();
        let leader = self.leader.map(|(pid, _)| pid);
        stopped.sort_by_key(|p| (Some(p.pid) != leader, p.pid));
        stopped
    }

    /// Polls until no live member is `waited_for`, or `limit` passes (false). Each poll looks for new
    /// processes: those outside the agent's group are stopped at once; with `kill`, all of them, and
    /// the cgroup and every live member but the writers are killed.
    async fn wait(
        &self,
        known: &mut BTreeMap<i32, Member>,
        limit: Duration,
        reap: &mut impl FnMut(),
        waited_for: impl Fn(&Member) -> bool,
        kill: bool,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            reap();
            if kill && let Some(cgroup) = &self.cgroup {
                cgroup.kill();
            }
            self.look(known, !kill);
            if kill {
                kill_live(known, |m| !m.writer);
                reap();
            }
            if !known.iter().any(|(pid, m)| waited_for(m) && process::is_same_process(*pid, m.start_time)) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Finds the worker's processes not yet `known`, stops each (SIGSTOP; members of the agent's group
    /// are spared with `spare_group`), and looks again until nothing new turns up.
    fn look(&self, known: &mut BTreeMap<i32, Member>, spare_group: bool) {
        for _ in 0..MAX_ROUNDS {
            let mut new = 0;
            for (pid, stat) in self.find(known) {
                if known.get(&pid).is_some_and(|m| m.start_time == stat.start_time) {
                    continue;
                }
                // The agent itself counts as its group even if it left it.
                let in_group = self.leader.is_some_and(|(leader, _)| stat.pgrp == leader || pid == leader);
                if !(spare_group && in_group) {
                    process::signal_identified(pid, stat.start_time, Signal::SIGSTOP);
                }
                let writer = in_group && output_cap::is_writer(pid);
                known.insert(pid, Member { start_time: stat.start_time, name: comm(pid), in_group, writer });
                new += 1;
            }
            if new == 0 {
                return;
            }
        }
    }

    /// The worker's live processes now: its cgroup's, its marked ones, the agent's group, and all their
    /// descendants and those of processes already `known`. Never executor itself.
    fn find(&self, known: &BTreeMap<i32, Member>) -> Vec<(i32, ProcStat)> {
        let procs = snapshot();
        let alive_as = |pid: i32, start: u64| procs.get(&pid).is_some_and(|s| s.start_time == start);
        let mut roots: Vec<i32> =
            known.iter().filter(|(p, m)| alive_as(**p, m.start_time)).map(|(p, _)| *p).collect();
        if let Some((leader, start)) = self.leader {
            // A group whose id a new process took (the agent died, its number was reused) is not ours.
            let reused = procs.get(&leader).is_some_and(|s| s.start_time != start);
            if alive_as(leader, start) {
                roots.push(leader);
            }
            if !reused {
                roots.extend(procs.iter().filter(|(_, s)| s.pgrp == leader).map(|(p, _)| *p));
            }
        }
        if let Some(cgroup) = &self.cgroup {
            roots.extend(cgroup.procs().into_iter().filter(|p| procs.contains_key(p)));
        }
        if let Some(token) = &self.token {
            roots.extend(procs.keys().copied().filter(|p| has_marker(*p, token)));
        }
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for (pid, s) in &procs {
            children.entry(s.ppid).or_default().push(*pid);
        }
        let me = std::process::id() as i32;
        let mut found: BTreeMap<i32, ProcStat> = BTreeMap::new();
        while let Some(pid) = roots.pop() {
            if pid <= 1 || pid == me || found.contains_key(&pid) {
                continue;
            }
            let Some(stat) = procs.get(&pid) else { continue };
            found.insert(pid, *stat);
            roots.extend(children.get(&pid).into_iter().flatten().copied());
        }
        found.into_iter().collect()
    }
}

/// SIGKILL to every live member that `which` selects.
fn kill_live(known: &BTreeMap<i32, Member>, which: impl Fn(&Member) -> bool) {
    for (pid, m) in known.iter().filter(|(_, m)| which(m)) {
        process::signal_identified(*pid, m.start_time, Signal::SIGKILL);
    }
}

/// Every live (not zombie) process, by pid.
fn snapshot() -> HashMap<i32, ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return HashMap::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, process::read_stat(pid)?)))
        .filter(|(_, s)| !matches!(s.state, 'Z' | 'X'))
        .collect()
}

/// Whether `pid` runs as executor's user with the worker's marker in its environment.
fn has_marker(pid: i32, token: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let dir = format!("/proc/{pid}");
    let ours = std::fs::metadata(&dir).is_ok_and(|m| m.uid() == current_uid());
    if !ours {
        return false;
    }
    let Ok(environ) = std::fs::read(format!("{dir}/environ")) else { return false };
    let wanted = format!("{MARKER_ENV}={token}");
    environ.split(|b| *b == 0).any(|var| var == wanted.as_bytes())
}

fn current_uid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// The command name of `pid`, printable.
fn comm(pid: i32) -> String {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    name.trim_end_matches('\n').chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// Where there is no `/proc` (macOS): the agent's process group is all that can be found. SIGTERM,
/// up to `grace`, SIGKILL.
async fn stop_group_only(leader: i32, grace: Duration, reap: &mut impl FnMut()) {
    for (signal, limit) in [(Signal::SIGTERM, grace), (Signal::SIGKILL, KILL_WAIT)] {
        if process::group_members(leader).is_empty() {
            return;
        }
        process::signal_group(leader, signal);
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            reap();
            if process::group_members(leader).is_empty() {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

#[cfg(test)]
mod tests;
