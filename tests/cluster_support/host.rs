//! One host of the cluster: a directory of its own (config, data directory, worktree root, runner logs
//! and its own copy of the fake agent, so `ps` tells whose agents are whose), and its cron: a thread
//! that starts `executor runner` again whenever it exits, as a real cron would, which a test can hold,
//! stop as an operator would, or kill as a machine loss does.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::{CLUSTER_MAX, HOST_MAX, LEASE_TTL};

/// How long a cron waits after a runner exits before starting the next (a real cron waits minutes).
const CRON_PAUSE: Duration = Duration::from_millis(300);

/// One machine: its directory, config, and the cron that keeps starting its runner.
pub struct Host {
    pub name: String,
    pub dir: PathBuf,
    pub config: PathBuf,
    cron: Cron,
}

impl Host {
    /// The directory `root/name`, with a config for the shared `repo` and `database_url`.
    pub(super) fn create(root: &Path, name: &str, repo: &Path, database_url: &str) -> Host {
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

    /// Runs the `executor` CLI on this host to the end; fails the test if it fails.
    pub fn run(&self, args: &[&str]) -> Output {
        let out = executor(&self.config, &self.dir).args(args).stdin(Stdio::null()).output().unwrap();
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
            let mut cmd = executor(&config, &dir);
            cmd.arg("runner").envs(env.iter().cloned());
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
    /// agents live on: see [`super::Cluster::lose_host`].)
    pub fn kill_cron(&self) -> Option<i32> {
        self.cron.stop(Signal::SIGKILL, Duration::from_secs(10))
    }

    /// Sends SIGKILL to the runner and stops the cron, without waiting for either: see
    /// [`Host::join_cron`]. Returns the runner's pid.
    pub(super) fn kill_cron_nowait(&self) -> Option<i32> {
        self.cron.signal_stop(Signal::SIGKILL)
    }

    /// Waits for the cron to end after [`Host::kill_cron_nowait`] (SIGKILL to its runner after `grace`).
    pub(super) fn join_cron(&self, grace: Duration) {
        self.cron.join(grace);
    }

    /// The last lines of the newest `launches` runners' stderr.
    pub fn log_tails(&self, launches: usize, lines: usize) -> String {
        let all = self.launches();
        let mut out = String::new();
        for launch in all.iter().rev().take(launches).rev() {
            let text = launch.stderr_text();
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

/// The `executor` binary under test, run on the host whose config and directory these are.
fn executor(config: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_executor"));
    cmd.arg("--config").arg(config).current_dir(dir);
    cmd
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

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn toml_path(p: &Path) -> String {
    toml_string(&p.display().to_string())
}
