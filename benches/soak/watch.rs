//! The soak's watch, in the background the whole time. Every ~200 ms (every ~10 ms while a host thaws,
//! to see how long its agents run beside the ones that took its runs over) it reads the agents from the
//! process table (each host runs its own copy of the agent; `/proc/PID/environ` says which run and
//! worker kind) and the live worker sessions from the database, and records every moment a limit did
//! not hold: two agents on one run, more than a host's or the cluster's limit. Every second it looks for
//! a write by a runner after it was declared lost. Every 2 s it reads each runner's memory, open files
//! and database connections from `/proc`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::host::Host;
use crate::verdict::Violations;
use crate::world::{HOST_MAX, World};

const SAMPLE_EVERY: Duration = Duration::from_millis(200);
/// How often the process table is read while a host thaws.
const THAW_SAMPLE_EVERY: Duration = Duration::from_millis(10);
/// After a frozen host is thawed, its runner needs a tick to find it was declared lost and stop its
/// agents (its lease fence keeps them frozen meanwhile, where it has cgroups). Two agents on one run
/// in this window are measured (`thaw_overlap`), not counted as a violation.
pub const THAW_GRACE: Duration = Duration::from_secs(8);

/// An agent's process group, as the process table shows it.
#[derive(Debug, Clone)]
pub struct Agent {
    pub pgid: i32,
    pub host: String,
    pub run_id: Option<i64>,
    pub kind: String,
    /// Every process of the group is stopped (SIGSTOP: a frozen host's) or in a frozen cgroup (a runner's
    /// lease fence).
    pub stopped: bool,
}

/// The agents of `hosts` running now: process groups with a process whose arguments name a host's
/// copy of the agent (the start gate's shell has it as an argument before the agent's `exec`).
pub fn agents(hosts: &[Host]) -> Vec<Agent> {
    let scripts: Vec<(String, String)> =
        hosts.iter().map(|h| (h.name.clone(), h.agent_script().display().to_string())).collect();
    let mut groups: BTreeMap<i32, Agent> = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let Some((host, _)) = scripts.iter().find(|(_, script)| args.contains(&script.as_bytes())) else {
            continue;
        };
        let Some((state, pgid)) = stat(pid) else { continue };
        if state == 'Z' {
            continue;
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let var = |name: &str| {
            environ.split(|b| *b == 0).find_map(|kv| {
                let kv = String::from_utf8_lossy(kv);
                kv.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')).map(str::to_string)
            })
        };
        let group = groups.entry(pgid).or_insert_with(|| Agent {
            pgid,
            host: host.clone(),
            run_id: var("EXECUTOR_RUN_ID").and_then(|v| v.parse().ok()),
            kind: var("EXECUTOR_WORKER_KIND").unwrap_or_default(),
            stopped: true,
        });
        group.stopped &= state == 'T' || in_frozen_cgroup(pid);
    }
    groups.into_values().collect()
}

/// Whether `pid` is in a frozen cgroup v2 (its state letter says `S` then, not `T`).
fn in_frozen_cgroup(pid: i32) -> bool {
    static MOUNT: std::sync::LazyLock<Option<std::path::PathBuf>> = std::sync::LazyLock::new(|| {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        mounts.lines().find_map(|l| {
            let (before, after) = l.split_once(" - ")?;
            (after.split_whitespace().next()? == "cgroup2")
                .then(|| before.split_whitespace().nth(4).map(Into::into))?
        })
    });
    let Some(mount) = MOUNT.as_ref() else { return false };
    let Ok(cgroups) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else { return false };
    let Some(path) = cgroups.lines().find_map(|l| l.strip_prefix("0::")) else { return false };
    let events = mount.join(path.trim_start_matches('/')).join("cgroup.events");
    std::fs::read_to_string(events).is_ok_and(|e| e.lines().any(|l| l == "frozen 1"))
}

/// A process's state letter and process group, from `/proc/PID/stat` (the command may hold spaces and
/// parentheses: the fields start after the last `)`).
fn stat(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, pgid))
}

/// One look at a runner's resources.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Usage {
    pub at_secs: f64,
    pub rss_kb: u64,
    pub open_files: u64,
    pub db_connections: u64,
}

/// What the watch saw, over the whole soak.
#[derive(Debug, Default)]
pub struct WatchReport {
    pub samples: u64,
    pub max_agents: usize,
    pub max_agents_per_host: BTreeMap<String, usize>,
    pub thaw_exemptions: u64,
    /// Two agents on one run, one of them a thawing host's: looks that saw it, and the longest time it
    /// was seen for on end.
    pub thaw_overlap_looks: u64,
    pub thaw_overlap_longest: Duration,
    thaw_overlap_since: BTreeMap<i64, std::time::Instant>,
    pub violations: Violations,
    /// Each runner process's looks, by (host, pid).
    pub runners: BTreeMap<(String, i32), Vec<Usage>>,
    /// The agents counted at each look of the last minute: whether the slots were full at the end.
    pub last_minute: std::collections::VecDeque<(std::time::Instant, usize)>,
}

impl WatchReport {
    /// The most agents at once in the last minute of the soak.
    pub fn busiest_last_minute(&self) -> usize {
        self.last_minute.iter().map(|(_, n)| *n).max().unwrap_or(0)
    }
}

pub struct Watch {
    report: Arc<Mutex<WatchReport>>,
    task: tokio::task::JoinHandle<()>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Watch {
    pub fn start(world: Arc<World>) -> Watch {
        let report = Arc::new(Mutex::new(WatchReport::default()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (sink, stopping) = (report.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut n: u64 = 0;
            let mut last_full = std::time::Instant::now() - SAMPLE_EVERY;
            while !stopping.load(std::sync::atomic::Ordering::SeqCst) {
                let agents = agents(&world.hosts);
                if last_full.elapsed() < SAMPLE_EVERY {
                    // A look at the process table only, while a host thaws.
                    {
                        let mut r = sink.lock().unwrap_or_else(|p| p.into_inner());
                        r.samples += 1;
                        r.check_agents(&world, &agents);
                    }
                    tokio::time::sleep(THAW_SAMPLE_EVERY).await;
                    continue;
                }
                last_full = std::time::Instant::now();
                n += 1;
                let sessions = world.db.live_sessions().await;
                let lost_writes =
                    if n.is_multiple_of(5) { Some(world.db.writes_after_loss().await) } else { None };
                let usage = if n % 10 == 1 { Some(runner_usage(&world)) } else { None };
                {
                    let mut r = sink.lock().unwrap_or_else(|p| p.into_inner());
                    r.samples += 1;
                    r.check_agents(&world, &agents);
                    match sessions {
                        Ok(sessions) => r.check_sessions(&sessions),
                        Err(e) => r.violations.add("database", format!("cannot read the live sessions: {e}")),
                    }
                    match lost_writes {
                        Some(Ok(writes)) => {
                            writes.into_iter().for_each(|w| r.violations.add("write after loss", w))
                        }
                        Some(Err(e)) => r.violations.add("database", format!("cannot read the runners: {e}")),
                        None => {}
                    }
                    for (host, pid, u) in usage.into_iter().flatten() {
                        r.runners.entry((host, pid)).or_default().push(u);
                    }
                }
                let thawing = !world.thawing(THAW_GRACE).is_empty();
                tokio::time::sleep(if thawing { THAW_SAMPLE_EVERY } else { SAMPLE_EVERY }).await;
            }
        });
        Watch { report, task, stop }
    }

    pub async fn finish(self) -> WatchReport {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.task.await;
        std::mem::take(&mut *self.report.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl WatchReport {
    fn check_agents(&mut self, world: &World, agents: &[Agent]) {
        let thawing = world.thawing(THAW_GRACE);
        let mut counted: Vec<&Agent> = Vec::new();
        for agent in agents.iter().filter(|a| a.kind != "analyzer" && !a.stopped) {
            if thawing.contains(&agent.host) {
                self.thaw_exemptions += 1;
            } else {
                counted.push(agent);
            }
        }
        self.measure_thaw_overlap(agents, &thawing);
        self.max_agents = self.max_agents.max(counted.len());
        let now = std::time::Instant::now();
        self.last_minute.push_back((now, counted.len()));
        while self
            .last_minute
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > Duration::from_secs(60))
        {
            self.last_minute.pop_front();
        }
        if counted.len() > world.cluster_max {
            self.violations.add("cluster limit", format!("{} agents at once: {counted:?}", counted.len()));
        }
        let mut per_host: BTreeMap<&str, usize> = BTreeMap::new();
        let mut per_run: BTreeMap<i64, Vec<&Agent>> = BTreeMap::new();
        for agent in &counted {
            *per_host.entry(&agent.host).or_default() += 1;
            if let Some(run) = agent.run_id {
                per_run.entry(run).or_default().push(agent);
            }
        }
        for (host, n) in per_host {
            let max = self.max_agents_per_host.entry(host.to_string()).or_default();
            *max = (*max).max(n);
            if n > HOST_MAX {
                self.violations.add("host limit", format!("{n} agents on {host}: {counted:?}"));
            }
        }
        for (run, group) in per_run {
            if group.len() > 1 {
                self.violations.add("two agents on a run", format!("run {run}: {group:?}"));
            }
        }
    }

    /// Runs with an agent of a thawing host running beside another: how long that lasts.
    fn measure_thaw_overlap(&mut self, agents: &[Agent], thawing: &[String]) {
        let running: Vec<&Agent> = agents.iter().filter(|a| a.kind != "analyzer" && !a.stopped).collect();
        let mut per_run: BTreeMap<i64, Vec<&Agent>> = BTreeMap::new();
        for agent in &running {
            if let Some(run) = agent.run_id {
                per_run.entry(run).or_default().push(agent);
            }
        }
        let now = std::time::Instant::now();
        let overlapping: Vec<i64> = per_run
            .iter()
            .filter(|(_, group)| group.len() > 1 && group.iter().any(|a| thawing.contains(&a.host)))
            .map(|(run, _)| *run)
            .collect();
        self.thaw_overlap_since.retain(|run, _| overlapping.contains(run));
        for run in overlapping {
            self.thaw_overlap_looks += 1;
            let since = *self.thaw_overlap_since.entry(run).or_insert(now);
            // Seen once, it lasted at least one look's interval.
            let lasted = now.duration_since(since).max(THAW_SAMPLE_EVERY);
            self.thaw_overlap_longest = self.thaw_overlap_longest.max(lasted);
        }
    }

    fn check_sessions(&mut self, sessions: &[(i64, String)]) {
        let mut per_run: BTreeMap<i64, usize> = BTreeMap::new();
        for (run, _) in sessions {
            *per_run.entry(*run).or_default() += 1;
        }
        for (run, n) in per_run {
            if n > 1 {
                self.violations.add("two live sessions on a run", format!("run {run}: {n}"));
            }
        }
    }
}

/// Each host's runner now: its memory, open files and database connections.
fn runner_usage(world: &World) -> Vec<(String, i32, Usage)> {
    let at_secs = world.started.elapsed().as_secs_f64();
    let pg_sockets = postgres_sockets();
    world
        .hosts
        .iter()
        .filter_map(|host| {
            let pid = host.runner.current()?;
            let rss_kb = std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())?;
            let mut open_files = 0;
            let mut db_connections = 0;
            for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.flatten() {
                open_files += 1;
                let Ok(target) = std::fs::read_link(fd.path()) else { continue };
                if is_database_file(&target) || socket_inode(&target).is_some_and(|i| pg_sockets.contains(&i))
                {
                    db_connections += 1;
                }
            }
            Some((host.name.clone(), pid, Usage { at_secs, rss_kb, open_files, db_connections }))
        })
        .collect()
}

/// An SQLite database file (the WAL and shared-memory files are the same connection's).
fn is_database_file(target: &Path) -> bool {
    target.extension().is_some_and(|e| e == "db")
}

fn socket_inode(target: &Path) -> Option<u64> {
    target.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// The inodes of TCP sockets connected to port 5432 (PostgreSQL), from `/proc/net/tcp` and `tcp6`.
fn postgres_sockets() -> Vec<u64> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(remote), Some(inode)) = (fields.get(2), fields.get(9)) else { continue };
            if remote.ends_with(":1538")
                && let Ok(inode) = inode.parse()
            {
                inodes.push(inode);
            }
        }
    }
    inodes
}
