//! The sampler: every 100 ms, in the background while the hosts work, it reads the live worker
//! sessions from the database and the agent processes from `ps`, and records the most it saw at once
//! and every moment a worker limit ([`HOST_MAX`] per host, [`CLUSTER_MAX`] in all, one session per
//! run) did not hold. A limit that holds only at the moments a test happens to look proves little.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use sqlx::PgPool;

use super::ps::{AgentProcess, PS_ARGS, parse_ps};
use super::rows::{LiveSession, live_sessions};
use super::{CLUSTER_MAX, HOST_MAX, tick};

/// What the sampler saw: the most at once, and every moment a limit did not hold.
#[derive(Debug, Default, Clone)]
pub struct SampleReport {
    pub samples: u64,
    /// Live sessions of live runners, on all hosts.
    pub max_sessions: usize,
    pub max_sessions_per_host: BTreeMap<String, usize>,
    pub max_agents: usize,
    pub max_agents_per_host: BTreeMap<String, usize>,
    pub violations: Vec<String>,
}

impl SampleReport {
    fn violate(&mut self, what: String) {
        // The first ones tell the story; a flood of the same would only bury it.
        if self.violations.len() < 20 && !self.violations.contains(&what) {
            self.violations.push(what);
        }
    }

    fn check_sessions(&mut self, sessions: &[LiveSession]) {
        let counted = sessions.iter().filter(|s| s.counts).count();
        self.max_sessions = self.max_sessions.max(counted);
        if counted > CLUSTER_MAX {
            self.violate(format!(
                "{counted} live sessions of live runners (cluster max {CLUSTER_MAX}): {sessions:?}"
            ));
        }
        let mut per_host: BTreeMap<&str, usize> = BTreeMap::new();
        let mut per_run: BTreeMap<i64, usize> = BTreeMap::new();
        for s in sessions {
            *per_host.entry(&s.host).or_default() += 1;
            *per_run.entry(s.run_id).or_default() += 1;
        }
        for (host, n) in per_host {
            let max = self.max_sessions_per_host.entry(host.to_string()).or_default();
            *max = (*max).max(n);
            if n > HOST_MAX {
                let here: Vec<&LiveSession> = sessions.iter().filter(|s| s.host == host).collect();
                self.violate(format!("{n} live sessions on {host} (host max {HOST_MAX}): {here:?}"));
            }
        }
        for (run, n) in per_run {
            if n > 1 {
                self.violate(format!("run {run} has {n} live sessions: {sessions:?}"));
            }
        }
    }

    fn check_agents(&mut self, agents: &[AgentProcess]) {
        self.max_agents = self.max_agents.max(agents.len());
        if agents.len() > CLUSTER_MAX {
            self.violate(format!("{} agent processes (cluster max {CLUSTER_MAX}): {agents:?}", agents.len()));
        }
        let mut per_host: BTreeMap<&str, usize> = BTreeMap::new();
        for a in agents {
            *per_host.entry(&a.host).or_default() += 1;
        }
        for (host, n) in per_host {
            let max = self.max_agents_per_host.entry(host.to_string()).or_default();
            *max = (*max).max(n);
            if n > HOST_MAX {
                let here: Vec<&AgentProcess> = agents.iter().filter(|a| a.host == host).collect();
                self.violate(format!("{n} agent processes on {host} (host max {HOST_MAX}): {here:?}"));
            }
        }
    }

    pub fn summary(&self) -> String {
        format!(
            "{} samples; at most {} live sessions ({:?} per host), {} agent processes ({:?} per host); {} violations",
            self.samples,
            self.max_sessions,
            self.max_sessions_per_host,
            self.max_agents,
            self.max_agents_per_host,
            self.violations.len()
        )
    }
}

/// Checks the limits every 100 ms in the background, from the database and from `ps`.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    report: Arc<Mutex<SampleReport>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Starts sampling `db` and the agents of `hosts` (name, host directory) until [`Sampler::finish`].
    pub(super) fn start(db: PgPool, hosts: Vec<(String, PathBuf)>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let report = Arc::new(Mutex::new(SampleReport::default()));
        let (stop_flag, sink) = (stop.clone(), report.clone());
        let task = tokio::spawn(async move {
            while !stop_flag.load(Ordering::SeqCst) {
                let sessions = live_sessions(&db).await;
                let ps = tokio::process::Command::new("ps").args(PS_ARGS).output().await;
                {
                    let mut r = sink.lock().unwrap();
                    r.samples += 1;
                    match sessions {
                        Ok(sessions) => r.check_sessions(&sessions),
                        Err(e) => r.violate(format!("cannot read the live sessions: {e}")),
                    }
                    match ps {
                        Ok(out) => r.check_agents(&parse_ps(&String::from_utf8_lossy(&out.stdout), &hosts)),
                        Err(e) => r.violate(format!("cannot run ps: {e}")),
                    }
                }
                tick().await;
            }
        });
        Sampler { stop, report, task }
    }

    pub async fn finish(self) -> SampleReport {
        self.stop.store(true, Ordering::SeqCst);
        let report = self.report.clone();
        self.task.await.unwrap();
        report.lock().unwrap().clone()
    }
}
