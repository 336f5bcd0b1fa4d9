//! The multi-host harness of issue 12. Several "hosts" share one bare repository and one PostgreSQL
//! schema; each host is a directory of its own (config, data directory, worktree root and its own copy
//! of the `pipeline.sh` fake agent, so `ps` tells whose agents are whose), and each has a "cron" that
//! starts `executor runner` again whenever it exits. A sampler reads the database and `ps` every
//! 100 ms and records every moment the worker limits did not hold.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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
/// How long a cron waits after a runner exits before starting the next (a real cron waits minutes).
const CRON_PAUSE: Duration = Duration::from_millis(300);

pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

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

pub async fn tick() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// The hosts, their shared repository and database, and a connection to read the database with.
pub struct Cluster {
    dir: tempfile::TempDir,
    pub repo: PathBuf,
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
        Cluster { dir, repo, hosts, db }
    }

    pub fn host(&self, name: &str) -> &Host {
        self.hosts.iter().find(|h| h.name == name).unwrap_or_else(|| panic!("no host {name}"))
    }

    /// Every host's agent processes, as `ps` shows them now.
    pub fn agents(&self) -> Vec<AgentProcess> {
        let ps = Command::new("ps").args(["-eo", "pid=,pgid=,stat=,args="]).output().unwrap();
        parse_ps(&String::from_utf8_lossy(&ps.stdout), &self.host_dirs())
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

    /// The database's clock.
    pub async fn db_now(&self) -> DateTime<Utc> {
        sqlx::query_scalar("SELECT now()").fetch_one(&self.db).await.unwrap()
    }

    pub async fn live_sessions(&self) -> Vec<LiveSession> {
        live_sessions(&self.db).await.unwrap()
    }

    pub async fn sessions_of_run(&self, run_id: i64) -> Vec<SessionRow> {
        SessionRow::query("WHERE s.run_id = $1", &self.db, run_id).await
    }

    pub async fn sessions_of_runner(&self, runner_id: &str) -> Vec<SessionRow> {
        let sql = format!(
            "SELECT {} FROM executor_worker_sessions s WHERE s.runner_id = $1 ORDER BY s.id",
            SessionRow::COLUMNS
        );
        let rows: Vec<SessionTuple> = sqlx::query_as(&sql).bind(runner_id).fetch_all(&self.db).await.unwrap();
        rows.into_iter().map(SessionRow::from).collect()
    }

    pub async fn session(&self, id: i64) -> SessionRow {
        SessionRow::query("WHERE s.id = $1", &self.db, id).await.remove(0)
    }

    pub async fn run(&self, id: i64) -> RunRow {
        let sql = format!("SELECT {} FROM executor_runs WHERE id = $1", RunRow::COLUMNS);
        let row: RunTuple = sqlx::query_as(&sql).bind(id).fetch_one(&self.db).await.unwrap();
        RunRow::from(row)
    }

    pub async fn runs(&self) -> Vec<RunRow> {
        let sql = format!("SELECT {} FROM executor_runs ORDER BY id", RunRow::COLUMNS);
        let rows: Vec<RunTuple> = sqlx::query_as(&sql).fetch_all(&self.db).await.unwrap();
        rows.into_iter().map(RunRow::from).collect()
    }

    pub async fn runner(&self, id: &str) -> RunnerRow {
        let sql = format!("SELECT {} FROM executor_runners WHERE id = $1", RunnerRow::COLUMNS);
        let row: RunnerTuple = sqlx::query_as(&sql).bind(id).fetch_one(&self.db).await.unwrap();
        RunnerRow::from(row)
    }

    pub async fn runners(&self) -> Vec<RunnerRow> {
        let sql = format!("SELECT {} FROM executor_runners ORDER BY host, started_at", RunnerRow::COLUMNS);
        let rows: Vec<RunnerTuple> = sqlx::query_as(&sql).fetch_all(&self.db).await.unwrap();
        rows.into_iter().map(RunnerRow::from).collect()
    }

    /// Tasks by queue status.
    pub async fn queue_statuses(&self) -> BTreeMap<String, String> {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT task_gid, status FROM executor_queue").fetch_all(&self.db).await.unwrap();
        rows.into_iter().collect()
    }

    /// How many times each run's state changed to `complete`, by the audit trail.
    pub async fn completions_per_run(&self) -> BTreeMap<i64, i64> {
        let rows: Vec<(i64, i64)> = sqlx::query_as(
            "SELECT run_id, count(*) FROM executor_events \
             WHERE kind = 'run_state' AND to_state = 'complete' AND run_id IS NOT NULL GROUP BY run_id",
        )
        .fetch_all(&self.db)
        .await
        .unwrap();
        rows.into_iter().collect()
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
        match sqlx::query_as::<_, RunTuple>(&format!(
            "SELECT {} FROM executor_runs ORDER BY id",
            RunRow::COLUMNS
        ))
        .fetch_all(&self.db)
        .await
        {
            Ok(rows) => rows.into_iter().map(RunRow::from).for_each(|r| out.push_str(&format!("{r:?}\n"))),
            Err(e) => out.push_str(&format!("(cannot read runs: {e})\n")),
        }
        out.push_str("--- live worker sessions\n");
        match live_sessions(&self.db).await {
            Ok(rows) => rows.iter().for_each(|s| out.push_str(&format!("{s:?}\n"))),
            Err(e) => out.push_str(&format!("(cannot read sessions: {e})\n")),
        }
        out.push_str("--- runners\n");
        match sqlx::query_as::<_, RunnerTuple>(&format!(
            "SELECT {} FROM executor_runners ORDER BY host, started_at",
            RunnerRow::COLUMNS
        ))
        .fetch_all(&self.db)
        .await
        {
            Ok(rows) => rows.into_iter().map(RunnerRow::from).for_each(|r| out.push_str(&format!("{r:?}\n"))),
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

/// One machine: its directory, config, and the cron that keeps starting its runner.
pub struct Host {
    pub name: String,
    pub dir: PathBuf,
    pub config: PathBuf,
    cron: Cron,
}

impl Host {
    fn create(root: &Path, name: &str, repo: &Path, database_url: &str) -> Host {
        let dir = root.join(name);
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        // Its own copy of the agent: `ps` shows `<host dir>/agent.sh`, so each agent is known by host.
        let agent = dir.join("agent.sh");
        let pipeline = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/pipeline.sh");
        std::fs::copy(pipeline, &agent).unwrap();
        let config = format!(
            r#"
[database]
url = {url}
[paths]
data_dir = {data}
[workspace]
root = {worktrees}
[runner]
host_name = {name}
max_workers = {HOST_MAX}
loop_interval = "300ms"
lease_ttl = "{ttl}s"
retry_backoff = "1s"
[cluster]
max_workers = {CLUSTER_MAX}
[worker]
agent = "command"
idle_timeout = "20s"
kill_grace = "1s"
pass_env = ["FAKE_SLOW"]
[worker.command]
argv = [{agent}]
[notify]
mention = "@alex"
[repos.app]
path = {repo}
ci_command = ["true"]
trusted_authors = ["alex"]
"#,
            url = toml_string(database_url),
            data = toml_path(&dir.join("data")),
            worktrees = toml_path(&dir.join("worktrees")),
            name = toml_string(name),
            ttl = LEASE_TTL.as_secs(),
            agent = toml_path(&agent),
            repo = toml_path(repo),
        );
        let config_path = dir.join("executor.toml");
        std::fs::write(&config_path, config).unwrap();
        Host { name: name.to_string(), dir, config: config_path, cron: Cron::default() }
    }

    pub fn worktree_root(&self) -> PathBuf {
        self.dir.join("worktrees")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_executor"));
        cmd.arg("--config").arg(&self.config).args(args).current_dir(&self.dir);
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).stdin(Stdio::null()).output().unwrap();
        assert!(
            out.status.success(),
            "{} {args:?}: {}{}",
            self.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    pub fn queue_approved(&self, gid: &str) {
        self.run(&[
            "queue",
            "add",
            "--gid",
            gid,
            "--description",
            "Add the feature file",
            "--source",
            "my_tasks_inbox",
        ]);
        self.run(&["approve", "--skip-triage", gid]);
    }

    /// Starts the cron: `executor runner` with `env`, again each time it exits, until stopped.
    pub fn start_cron(&self, env: &[(&str, &str)]) {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let (config, dir) = (self.config.clone(), self.dir.clone());
        self.cron.start(self.name.clone(), self.dir.join("logs"), move || {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_executor"));
            cmd.arg("--config").arg(&config).arg("runner").current_dir(&dir).envs(env.iter().cloned());
            cmd
        });
    }

    /// The runner the cron is waiting on now.
    pub fn runner_pid(&self) -> Option<i32> {
        self.cron.state.lock().unwrap().current
    }

    /// Every runner the cron started, in order, with its exit status once it ended.
    pub fn launches(&self) -> Vec<Launch> {
        self.cron.state.lock().unwrap().launches.clone()
    }

    pub fn launch_of(&self, pid: i32) -> Option<Launch> {
        self.launches().into_iter().find(|l| l.pid == pid)
    }

    /// While held, the cron starts no new runner (the one running goes on).
    pub fn hold_cron(&self, hold: bool) {
        self.cron.state.lock().unwrap().held = hold;
    }

    /// Stops the cron as an operator would: SIGTERM to the runner, which winds down; waits for it.
    pub fn stop_cron(&self) {
        self.cron.stop(Signal::SIGTERM, Duration::from_secs(30));
    }

    /// Kills the runner with SIGKILL, and the cron starts no other. Returns the runner's pid. (Its
    /// agents live on: see [`Cluster::lose_host`].)
    pub fn kill_cron(&self) -> Option<i32> {
        self.cron.stop(Signal::SIGKILL, Duration::from_secs(10))
    }

    /// The last lines of the newest `launches` runners' stderr.
    pub fn log_tails(&self, launches: usize, lines: usize) -> String {
        let all = self.launches();
        let mut out = String::new();
        for launch in all.iter().rev().take(launches).rev() {
            let text = std::fs::read_to_string(&launch.stderr).unwrap_or_default();
            let tail: Vec<&str> =
                text.lines().rev().take(lines).collect::<Vec<_>>().into_iter().rev().collect();
            out.push_str(&format!(
                "--- {} runner pid {} ({}), stderr tail:\n{}\n",
                self.name,
                launch.pid,
                launch.status.map_or("running".to_string(), |s| s.to_string()),
                tail.join("\n")
            ));
        }
        if all.is_empty() {
            out.push_str(&format!("--- {}: no runner started\n", self.name));
        }
        out
    }
}

impl Cluster {
    /// Machine loss: `name`'s runner is killed (SIGKILL) and its cron stopped, then every agent of the
    /// host is killed with its process group. Nothing on that host writes to the database afterwards.
    /// Returns the runner's pid and the database's clock right after it was killed.
    pub async fn lose_host(&self, name: &str) -> (Option<i32>, DateTime<Utc>) {
        let host = self.host(name);
        let runner = host.cron.signal_stop(Signal::SIGKILL);
        // Taken before anything slower: the runner's last heartbeat is at most one interval before this.
        let killed_at = self.db_now().await;
        for agent in self.agents().into_iter().filter(|a| a.host == name) {
            let _ = kill(Pid::from_raw(-agent.pgid), Signal::SIGKILL);
        }
        host.cron.join(Duration::from_secs(10));
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
}

/// One `executor runner` process a cron started.
#[derive(Debug, Clone)]
pub struct Launch {
    pub pid: i32,
    pub stderr: PathBuf,
    pub status: Option<ExitStatus>,
}

impl Launch {
    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

#[derive(Default)]
struct CronState {
    stop: bool,
    held: bool,
    current: Option<i32>,
    launches: Vec<Launch>,
}

/// A thread that starts a runner, waits for it, pauses, and starts it again until stopped.
#[derive(Default)]
struct Cron {
    state: Arc<Mutex<CronState>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Cron {
    fn start(&self, host: String, logs: PathBuf, command: impl Fn() -> Command + Send + 'static) {
        let state = self.state.clone();
        let thread = std::thread::spawn(move || {
            let mut n = 0;
            loop {
                let mut child: Child = {
                    let mut s = state.lock().unwrap();
                    if s.stop {
                        return;
                    }
                    if s.held {
                        drop(s);
                        pause(&state);
                        continue;
                    }
                    n += 1;
                    // Spawned under the lock: a stop either comes before (no runner) or sees its pid.
                    let (out, err) =
                        (logs.join(format!("runner-{n}.out")), logs.join(format!("runner-{n}.err")));
                    let child = command()
                        .stdin(Stdio::null())
                        .stdout(std::fs::File::create(&out).unwrap())
                        .stderr(std::fs::File::create(&err).unwrap())
                        .spawn()
                        .unwrap_or_else(|e| panic!("{host}: cannot start the runner: {e}"));
                    let pid = child.id() as i32;
                    s.current = Some(pid);
                    s.launches.push(Launch { pid, stderr: err, status: None });
                    child
                };
                let status = child.wait().unwrap();
                {
                    let mut s = state.lock().unwrap();
                    s.current = None;
                    let pid = child.id() as i32;
                    if let Some(l) = s.launches.iter_mut().find(|l| l.pid == pid) {
                        l.status = Some(status);
                    }
                }
                pause(&state);
            }
        });
        *self.thread.lock().unwrap() = Some(thread);
    }

    /// Starts no other runner, sends `signal` to the current one and waits for the cron to end
    /// (SIGKILL after `grace`). Returns the pid signalled.
    fn stop(&self, signal: Signal, grace: Duration) -> Option<i32> {
        let pid = self.signal_stop(signal);
        self.join(grace);
        pid
    }

    /// Starts no other runner and sends `signal` to the current one, without waiting.
    fn signal_stop(&self, signal: Signal) -> Option<i32> {
        let mut s = self.state.lock().unwrap();
        s.stop = true;
        if let Some(pid) = s.current {
            let _ = kill(Pid::from_raw(pid), signal);
        }
        s.current
    }

    /// Waits for the cron to end after a stop, killing its runner if it takes longer than `grace`.
    fn join(&self, grace: Duration) {
        let Some(thread) = self.thread.lock().unwrap().take() else { return };
        let deadline = Instant::now() + grace;
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        // Whatever does not end in time is killed.
        let stuck = if thread.is_finished() { None } else { self.state.lock().unwrap().current };
        if let Some(pid) = stuck {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = thread.join();
    }
}

/// The cron's pause between runners, cut short by a stop.
fn pause(state: &Mutex<CronState>) {
    let until = Instant::now() + CRON_PAUSE;
    while Instant::now() < until && !state.lock().unwrap().stop {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An agent process as `ps` shows it, and the host whose copy of the script it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProcess {
    pub pid: i32,
    pub pgid: i32,
    pub host: String,
}

/// Agents in `ps -eo pid=,pgid=,stat=,args=` output: process groups with a process whose arguments
/// name a host's `agent.sh` (before the start gate opens, the gate shell has it as an argument; after,
/// the agent's shell runs it). One agent is one group: the shell's own forks (a `$(…)`, a pipeline)
/// show the same arguments. Zombies are not running agents.
fn parse_ps(text: &str, hosts: &[(String, PathBuf)]) -> Vec<AgentProcess> {
    let scripts: Vec<(String, String)> =
        hosts.iter().map(|(name, dir)| (name.clone(), dir.join("agent.sh").display().to_string())).collect();
    let mut agents = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(pid), Some(pgid), Some(stat)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if stat.starts_with('Z') {
            continue;
        }
        let args: Vec<&str> = fields.collect();
        let Some((host, _)) = scripts.iter().find(|(_, script)| args.contains(&script.as_str())) else {
            continue;
        };
        let (Ok(pid), Ok(pgid)) = (pid.parse(), pgid.parse()) else { continue };
        match agents.iter_mut().find(|a: &&mut AgentProcess| a.pgid == pgid) {
            // The group's leader is the agent itself.
            Some(known) if pid == pgid => known.pid = pid,
            Some(_) => {}
            None => agents.push(AgentProcess { pid, pgid, host: host.clone() }),
        }
    }
    agents
}

/// A worker session not ended, and whether its runner is alive by the database's clock (the sessions
/// of a runner whose heartbeat lapsed no longer count against the limits: that runner is being
/// declared lost, and its agents with it).
#[derive(Debug, Clone)]
pub struct LiveSession {
    pub id: i64,
    pub run_id: i64,
    pub host: String,
    pub runner_id: Option<String>,
    pub counts: bool,
}

pub async fn live_sessions(db: &PgPool) -> Result<Vec<LiveSession>, sqlx::Error> {
    let rows: Vec<(i64, i64, String, Option<String>, bool)> = sqlx::query_as(
        "SELECT s.id, s.run_id, s.host, s.runner_id, \
           (s.runner_id IS NULL OR (r.ended_at IS NULL AND r.alive_until > now())) AS counts \
         FROM executor_worker_sessions s LEFT JOIN executor_runners r ON r.id = s.runner_id \
         WHERE s.ended_at IS NULL ORDER BY s.id",
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, run_id, host, runner_id, counts)| LiveSession { id, run_id, host, runner_id, counts })
        .collect())
}

type SessionTuple =
    (i64, i64, String, Option<String>, String, DateTime<Utc>, Option<DateTime<Utc>>, Option<String>);

#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub id: i64,
    pub run_id: i64,
    pub host: String,
    pub runner_id: Option<String>,
    pub kind: String,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub end_reason: Option<String>,
}

impl SessionRow {
    const COLUMNS: &str =
        "s.id, s.run_id, s.host, s.runner_id, s.kind, s.started_at, s.ended_at, s.end_reason";

    async fn query(filter: &str, db: &PgPool, id: i64) -> Vec<SessionRow> {
        let sql = format!("SELECT {} FROM executor_worker_sessions s {filter} ORDER BY s.id", Self::COLUMNS);
        let rows: Vec<SessionTuple> = sqlx::query_as(&sql).bind(id).fetch_all(db).await.unwrap();
        rows.into_iter().map(SessionRow::from).collect()
    }
}

impl From<SessionTuple> for SessionRow {
    fn from((id, run_id, host, runner_id, kind, started_at, ended_at, end_reason): SessionTuple) -> Self {
        SessionRow { id, run_id, host, runner_id, kind, started_at, ended_at, end_reason }
    }
}

type RunTuple = (
    i64,
    String,
    String,
    Option<String>,
    Option<DateTime<Utc>>,
    i64,
    Option<String>,
    Option<i64>,
    DateTime<Utc>,
    Option<String>,
);

/// The fields of a run a rescue is about.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: i64,
    pub task_gid: String,
    pub state: String,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub wants_slot: i64,
    pub worktree_path: Option<String>,
    pub worker_pid: Option<i64>,
    pub updated_at: DateTime<Utc>,
    pub last_decision: Option<String>,
}

impl RunRow {
    const COLUMNS: &str = "id, task_gid, state, lease_owner, lease_expires_at, wants_slot, worktree_path, \
                           worker_pid, updated_at, last_decision";
}

impl From<RunTuple> for RunRow {
    fn from(t: RunTuple) -> Self {
        let (
            id,
            task_gid,
            state,
            lease_owner,
            lease_expires_at,
            wants_slot,
            worktree_path,
            worker_pid,
            updated_at,
            last_decision,
        ) = t;
        RunRow {
            id,
            task_gid,
            state,
            lease_owner,
            lease_expires_at,
            wants_slot,
            worktree_path,
            worker_pid,
            updated_at,
            last_decision,
        }
    }
}

type RunnerTuple = (String, String, i64, DateTime<Utc>, DateTime<Utc>, Option<DateTime<Utc>>, Option<String>);

#[derive(Debug, Clone, PartialEq)]
pub struct RunnerRow {
    pub id: String,
    pub host: String,
    pub pid: i64,
    pub heartbeat_at: DateTime<Utc>,
    pub alive_until: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub end_reason: Option<String>,
}

impl RunnerRow {
    const COLUMNS: &str = "id, host, pid, heartbeat_at, alive_until, ended_at, end_reason";
}

impl From<RunnerTuple> for RunnerRow {
    fn from((id, host, pid, heartbeat_at, alive_until, ended_at, end_reason): RunnerTuple) -> Self {
        RunnerRow { id, host, pid, heartbeat_at, alive_until, ended_at, end_reason }
    }
}

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
    fn start(db: PgPool, hosts: Vec<(String, PathBuf)>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let report = Arc::new(Mutex::new(SampleReport::default()));
        let (stop_flag, sink) = (stop.clone(), report.clone());
        let task = tokio::spawn(async move {
            while !stop_flag.load(Ordering::SeqCst) {
                let sessions = live_sessions(&db).await;
                let ps =
                    tokio::process::Command::new("ps").args(["-eo", "pid=,pgid=,stat=,args="]).output().await;
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

    /// What it saw so far.
    pub fn report(&self) -> SampleReport {
        self.report.lock().unwrap().clone()
    }

    pub async fn finish(self) -> SampleReport {
        self.stop.store(true, Ordering::SeqCst);
        let report = self.report.clone();
        self.task.await.unwrap();
        report.lock().unwrap().clone()
    }
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn toml_path(p: &Path) -> String {
    toml_string(&p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ps_lines_are_agents_by_the_script_they_run() {
        let hosts = vec![
            ("host-a".to_string(), PathBuf::from("/t/host-a")),
            ("host-b".to_string(), PathBuf::from("/t/host-b")),
        ];
        let text = "  10    10 S    /bin/sh /t/host-a/agent.sh\n\
                    11    10 S    sleep 1\n\
                    15    10 S    /bin/sh /t/host-a/agent.sh\n\
                    12    12 S    /bin/sh -c read -r _ <&3 || exit; exec \"$@\" executor-gate /t/host-b/agent.sh\n\
                    13    13 Z    [agent.sh] <defunct>\n\
                    14    14 S    /bin/sh /t/host-c/agent.sh\n";
        let agents = parse_ps(text, &hosts);
        assert_eq!(
            agents,
            [
                AgentProcess { pid: 10, pgid: 10, host: "host-a".into() },
                AgentProcess { pid: 12, pgid: 12, host: "host-b".into() },
            ]
        );
    }
}
