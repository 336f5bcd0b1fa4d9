//! The multi-host harness of issue 12. Several "hosts" share one bare repository and one PostgreSQL
//! schema, and each keeps starting `executor runner` from its cron; a sampler checks the worker limits
//! every 100 ms meanwhile. This file holds the [`Cluster`] (the hosts, the repository, the database,
//! and what a test does to the cluster as a whole: losing a host, waiting, diagnosing a failure), the
//! limits every host is configured with, and small waiting helpers. The rest, by responsibility:
//! - `host`: one host's directory and config, and its cron thread ([`Host`]);
//! - `rows`: the rows read from the database, and the [`Cluster`]'s queries for them;
//! - `sampler`: the background check of the limits ([`Sampler`]);
//! - `ps`: the agent processes running now, from `ps` ([`AgentProcess`]).

mod host;
mod ps;
mod rows;
mod sampler;

pub use host::Host;
pub use ps::AgentProcess;
pub use rows::{RunRow, SessionRow};
pub use sampler::Sampler;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use sqlx::PgPool;

/// Agents on one host, and on all hosts together (`runner.max_workers`, `cluster.max_workers`).
pub const HOST_MAX: usize = 2;
pub const CLUSTER_MAX: usize = 4;
/// `runner.lease_ttl` of every host: a runner silent this long is lost.
pub const LEASE_TTL: Duration = Duration::from_secs(3);

/// A point in time after which a wait has failed.
pub struct Deadline(Instant);

impl Deadline {
    pub fn after(secs: u64) -> Deadline {
        Deadline(Instant::now() + Duration::from_secs(secs))
    }

    pub fn passed(&self) -> bool {
        Instant::now() >= self.0
    }
}

/// The pause between two looks at the cluster while waiting for something.
pub async fn tick() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// The hosts, their shared repository and database, and a connection to read the database with.
pub struct Cluster {
    /// Holds the shared repository and every host directory; removed when the cluster is dropped.
    _dir: tempfile::TempDir,
    pub hosts: Vec<Host>,
    pub db: PgPool,
}

impl Cluster {
    /// One bare repository with `main` at an initial commit, and a host directory per name, each
    /// configured for `database_url`.
    pub async fn new(database_url: &str, names: &[&str]) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("shared.git");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "--bare", "-b", "main"]);
        let seed = dir.path().join("seed");
        git(dir.path(), &["clone", "-q", repo.to_str().unwrap(), seed.to_str().unwrap()]);
        std::fs::write(seed.join("README"), "app\n").unwrap();
        git(&seed, &["add", "README"]);
        git(&seed, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial"]);
        git(&seed, &["push", "-q", "origin", "HEAD:refs/heads/main"]);
        let hosts = names.iter().map(|name| Host::create(dir.path(), name, &repo, database_url)).collect();
        let db = PgPool::connect(database_url).await.expect("connect to the test schema");
        Cluster { _dir: dir, hosts, db }
    }

    pub fn host(&self, name: &str) -> &Host {
        self.hosts.iter().find(|h| h.name == name).unwrap_or_else(|| panic!("no host {name}"))
    }

    /// Every host's agent processes, as `ps` shows them now.
    pub fn agents(&self) -> Vec<AgentProcess> {
        ps::agents_now(&self.host_dirs())
    }

    fn host_dirs(&self) -> Vec<(String, PathBuf)> {
        self.hosts.iter().map(|h| (h.name.clone(), h.dir.clone())).collect()
    }

    /// Starts sampling the limits every 100 ms until [`Sampler::finish`].
    pub fn start_sampler(&self) -> Sampler {
        Sampler::start(self.db.clone(), self.host_dirs())
    }

    /// Queues and approves each task through the first host's CLI, as a human would.
    pub fn queue_approved(&self, gids: impl IntoIterator<Item = String>) {
        for gid in gids {
            self.hosts[0].queue_approved(&gid);
        }
    }

    /// Machine loss: `name`'s runner is killed (SIGKILL) and its cron stopped, then every agent of the
    /// host is killed with its process group. Nothing on that host writes to the database afterwards.
    /// Returns the runner's pid and the database's clock right after it was killed.
    pub async fn lose_host(&self, name: &str) -> (Option<i32>, DateTime<Utc>) {
        let host = self.host(name);
        let runner = host.kill_cron_nowait();
        // Taken before anything slower: the runner's last heartbeat is at most one interval before this.
        let killed_at = self.db_now().await;
        self.signal_agents(name, Signal::SIGKILL);
        host.join_cron(Duration::from_secs(10));
        (runner, killed_at)
    }

    /// Signals every agent of `name` with its process group; returns the groups signalled.
    pub fn signal_agents(&self, name: &str, signal: Signal) -> Vec<i32> {
        let groups: Vec<i32> = self.agents().into_iter().filter(|a| a.host == name).map(|a| a.pgid).collect();
        for pgid in &groups {
            let _ = kill(Pid::from_raw(-pgid), signal);
        }
        groups
    }

    /// Waits until every task in `gids` is `done`; on timeout fails with the whole picture.
    pub async fn wait_all_done(&self, gids: &[String], secs: u64) {
        let deadline = Deadline::after(secs);
        loop {
            let statuses = self.queue_statuses().await;
            let pending: Vec<String> = gids
                .iter()
                .filter(|g| statuses.get(*g).map(String::as_str) != Some("done"))
                .map(|g| format!("{g}={}", statuses.get(g).map(String::as_str).unwrap_or("missing")))
                .collect();
            if pending.is_empty() {
                return;
            }
            if deadline.passed() {
                panic!(
                    "{} of {} tasks not done after {secs}s: {}\n{}",
                    pending.len(),
                    gids.len(),
                    pending.join(" "),
                    self.diagnose().await
                );
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// What a failure message needs: runs, live sessions, runners, agents and each host's runner logs.
    pub async fn diagnose(&self) -> String {
        let mut out = String::from("--- runs\n");
        match rows::runs(&self.db).await {
            Ok(rows) => rows.iter().for_each(|r| out.push_str(&format!("{r:?}\n"))),
            Err(e) => out.push_str(&format!("(cannot read runs: {e})\n")),
        }
        out.push_str("--- live worker sessions\n");
        match rows::live_sessions(&self.db).await {
            Ok(rows) => rows.iter().for_each(|s| out.push_str(&format!("{s:?}\n"))),
            Err(e) => out.push_str(&format!("(cannot read sessions: {e})\n")),
        }
        out.push_str("--- runners\n");
        match rows::runners(&self.db).await {
            Ok(rows) => rows.iter().for_each(|r| out.push_str(&format!("{r:?}\n"))),
            Err(e) => out.push_str(&format!("(cannot read runners: {e})\n")),
        }
        out.push_str(&format!("--- agent processes\n{:?}\n", self.agents()));
        for host in &self.hosts {
            out.push_str(&host.log_tails(2, 25));
        }
        out
    }
}

impl Drop for Cluster {
    /// A failed test leaves no runner or agent behind.
    fn drop(&mut self) {
        for host in &self.hosts {
            host.kill_cron();
        }
        for agent in self.agents() {
            let _ = kill(Pid::from_raw(-agent.pgid), Signal::SIGKILL);
        }
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}
