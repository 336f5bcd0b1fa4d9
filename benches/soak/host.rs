//! One host: its directory (clone of the repository, config, data directory, worktrees, logs, and its
//! own copy of the agent so that the process table tells whose agents are whose) and its crons — one
//! restarting `executor runner` whenever it exits, and on the first host one restarting
//! `executor analyzer` — which the chaos can kill, take down for a while, or freeze.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::sides::SideConfig;

/// How long a cron waits after its process exits before starting the next (a real cron: minutes).
const CRON_PAUSE: Duration = Duration::from_millis(1500);

/// Everything a host's config names that is the same for every host.
pub struct Shared<'a> {
    pub database_url: &'a str,
    pub remote: &'a Path,
    /// The forge's part of the config (its section, the keys of `[repos.app]`, its token).
    pub forge: SideConfig,
    /// The tracker's (its `[[sources]]`, its token).
    pub tracker: SideConfig,
    /// Where agents keep their ledgers: the one directory outside its worktree a sandbox lets them write.
    pub ledger: &'a Path,
    pub host_max: usize,
    pub cluster_max: Option<usize>,
}

/// `runner.lease_ttl` of every host.
pub const LEASE_TTL: Duration = Duration::from_secs(5);
/// `runner.check_timeout`.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(40);

pub struct Host {
    pub name: String,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub runs_analyzer: bool,
    pub runner: Cron,
    pub analyzer: Cron,
    /// The forge's and the tracker's tokens, in every executor process's environment.
    secrets: Vec<(String, String)>,
}

impl Host {
    pub fn create(root: &Path, name: &str, runs_analyzer: bool, shared: &Shared) -> anyhow::Result<Host> {
        let dir = root.join(name);
        std::fs::create_dir_all(dir.join("logs"))?;
        let agent = dir.join("agent.sh");
        std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/soak/agent.sh"), &agent)?;
        let clone = dir.join("repo");
        git(root, &["clone", "-q", &shared.remote.display().to_string(), &clone.display().to_string()])?;
        let cluster =
            shared.cluster_max.map(|n| format!("[cluster]\nmax_workers = {n}\n")).unwrap_or_default();
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
max_workers = {host_max}
loop_interval = "1s"
lease_ttl = "{lease}s"
retry_backoff = "2s"
check_timeout = "{check}s"
max_stuck = 3
max_ci_attempts = 3
{cluster}
[worker]
agent = "claude"
idle_timeout = "6s"
hard_timeout = "30s"
kill_grace = "1s"
max_output_bytes = 1000000
pass_env = ["SOAK_MIX", "SOAK_OUTSIDE", "SOAK_LEDGER"]
sandbox = "auto"
sandbox_writable = [{ledger}]
[worker.claude]
program = {agent}
[analyzer]
idle_timeout = "6s"
hard_timeout = "20s"
retry_backoff = "3s"
max_attempts = 3
[budget]
per_run_usd = 2.0
per_day_usd = 100000.0
min_launch_usd = 0.05
[pricing.soak]
input = 10.0
output = 0.0
cache_read = 0.0
cache_write = 0.0
[notify]
mention = "@alex"
{forge}
{tracker}
[repos.app]
path = {clone}
remote = "origin"
{repo_keys}"#,
            url = toml_string(shared.database_url),
            data = toml_path(&dir.join("data")),
            worktrees = toml_path(&dir.join("worktrees")),
            name = toml_string(name),
            host_max = shared.host_max,
            lease = LEASE_TTL.as_secs(),
            check = CHECK_TIMEOUT.as_secs(),
            agent = toml_path(&agent),
            forge = shared.forge.toml,
            tracker = shared.tracker.toml,
            repo_keys = shared.forge.repo_keys,
            clone = toml_path(&clone),
            ledger = toml_path(shared.ledger),
        );
        let config_path = dir.join("executor.toml");
        std::fs::write(&config_path, config)?;
        Ok(Host {
            name: name.to_string(),
            dir,
            config: config_path,
            runs_analyzer,
            runner: Cron::new("runner"),
            analyzer: Cron::new("analyzer"),
            secrets: shared.forge.env.iter().chain(&shared.tracker.env).cloned().collect(),
        })
    }

    /// `executor ARGS` on this host, with the tokens and the agents' variables in its environment.
    pub fn command(&self, args: &[&str], env: &[(String, String)]) -> Command {
        let env: Vec<(String, String)> = self.secrets.iter().chain(env).cloned().collect();
        executor(&self.config, &self.dir, args, &env)
    }

    /// Runs `executor ARGS` to the end (a human at the terminal); returns whether it succeeded and what
    /// it printed.
    pub fn run(&self, args: &[&str]) -> (bool, String) {
        match self.command(args, &[]).output() {
            Ok(out) => (
                out.status.success(),
                format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
            ),
            Err(e) => (false, format!("cannot run executor: {e}")),
        }
    }

    /// Starts the crons; `env` is given to every process they start (and so to the agents).
    pub fn start(&self, env: &[(String, String)]) {
        let env: Vec<(String, String)> = self.secrets.iter().chain(env).cloned().collect();
        let (config, dir) = (self.config.clone(), self.dir.clone());
        let make = move |what: &str| executor(&config, &dir, &[what], &env);
        let runner = make.clone();
        self.runner.start(self.dir.join("logs"), move || runner("runner"));
        if self.runs_analyzer {
            self.analyzer.start(self.dir.join("logs"), move || make("analyzer"));
        }
    }

    pub fn crons(&self) -> Vec<&Cron> {
        if self.runs_analyzer { vec![&self.runner, &self.analyzer] } else { vec![&self.runner] }
    }

    pub fn agent_script(&self) -> PathBuf {
        self.dir.join("agent.sh")
    }
}

/// One process a cron started.
#[derive(Debug, Clone)]
pub struct Launch {
    pub pid: i32,
    pub stderr: PathBuf,
    pub ended: Option<(Instant, Option<i32>)>,
}

#[derive(Default)]
struct CronState {
    stop: bool,
    down_until: Option<Instant>,
    current: Option<i32>,
    launches: Vec<Launch>,
}

/// A thread that starts a process, waits for it, pauses, and starts it again until stopped.
pub struct Cron {
    what: String,
    state: Arc<Mutex<CronState>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Cron {
    fn new(what: &str) -> Cron {
        Cron { what: what.to_string(), state: Arc::default(), thread: Mutex::new(None) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CronState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start(&self, logs: PathBuf, command: impl Fn() -> Command + Send + 'static) {
        let state = self.state.clone();
        let what = self.what.clone();
        let thread = std::thread::spawn(move || {
            let mut n = 0;
            loop {
                let mut child: Child = {
                    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                    if s.stop {
                        return;
                    }
                    if s.down_until.is_some_and(|until| Instant::now() < until) {
                        drop(s);
                        std::thread::sleep(Duration::from_millis(100));
                        continue;
                    }
                    n += 1;
                    let err = logs.join(format!("{what}-{n}.err"));
                    let spawned = std::fs::File::create(&err)
                        .and_then(|file| command().stdout(Stdio::null()).stderr(file).spawn());
                    let child = match spawned {
                        Ok(child) => child,
                        Err(e) => {
                            eprintln!("soak: cannot start {what}: {e}");
                            drop(s);
                            std::thread::sleep(CRON_PAUSE);
                            continue;
                        }
                    };
                    let pid = child.id() as i32;
                    s.current = Some(pid);
                    s.launches.push(Launch { pid, stderr: err, ended: None });
                    child
                };
                let status = child.wait().ok();
                {
                    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                    s.current = None;
                    let pid = child.id() as i32;
                    if let Some(launch) = s.launches.iter_mut().find(|l| l.pid == pid && l.ended.is_none()) {
                        launch.ended = Some((Instant::now(), status.and_then(|s| s.code())));
                    }
                }
                let until = Instant::now() + CRON_PAUSE;
                while Instant::now() < until && !state.lock().unwrap_or_else(|p| p.into_inner()).stop {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        });
        *self.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(thread);
    }

    /// The process running now.
    pub fn current(&self) -> Option<i32> {
        self.lock().current
    }

    pub fn launches(&self) -> Vec<Launch> {
        self.lock().launches.clone()
    }

    /// Signals the process running now (the cron starts the next when it exits); returns its pid.
    pub fn signal(&self, signal: Signal) -> Option<i32> {
        let pid = self.lock().current?;
        kill(Pid::from_raw(pid), signal).ok().map(|_| pid)
    }

    /// Starts nothing until `until` (the host is down).
    pub fn down_until(&self, until: Instant) {
        self.lock().down_until = Some(until);
    }

    /// Up again: the next start comes after the usual pause.
    pub fn up(&self) {
        self.lock().down_until = None;
    }

    /// Stops as an operator would (with [`Cron::join`] after): starts nothing more, and sends SIGTERM to the process running now (which winds down).
    pub fn halt(&self) {
        let pid = {
            let mut s = self.lock();
            s.stop = true;
            s.current
        };
        if let Some(pid) = pid {
            let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }

    /// Waits for the halted cron's process to end; SIGKILL after `grace`.
    pub fn join(&self, grace: Duration) {
        let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
        let deadline = Instant::now() + grace;
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if !thread.is_finished()
            && let Some(pid) = self.lock().current
        {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = thread.join();
    }
}

/// `executor ARGS` with `config`, with `env` (the tokens among it) in its environment.
fn executor(config: &Path, dir: &Path, args: &[&str], env: &[(String, String)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_executor"));
    cmd.arg("--config")
        .arg(config)
        .args(args)
        .current_dir(dir)
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITLAB_TOKEN")
        .env_remove("JIRA_API_TOKEN")
        .envs(env.iter().cloned())
        .stdin(Stdio::null());
    cmd
}

pub fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git").args(args).current_dir(dir).output()?;
    anyhow::ensure!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn toml_path(p: &Path) -> String {
    toml_string(&p.display().to_string())
}
