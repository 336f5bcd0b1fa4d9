//! Shared by the runner tests: a temporary repository, config and data directory driven through the real
//! binary with the `pipeline.sh` fake agent, and a fake webhook.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use executor::store::Store;

pub struct Env {
    pub dir: tempfile::TempDir,
}

/// `out`, once asserted a success: a failure shows `what` ran and all it wrote, which is what the
/// person reading a failed test needs first.
pub fn succeeded(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git").args(args).current_dir(dir).status().unwrap().success();
    assert!(ok, "git {args:?}");
}

impl Env {
    pub fn new(extra_env: &[&str]) -> Env {
        Env::with_webhook(extra_env, "")
    }

    pub fn with_webhook(extra_env: &[&str], webhook: &str) -> Env {
        let env = Env { dir: tempfile::tempdir().unwrap() };
        let repo = env.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README"), "app\n").unwrap();
        git(&repo, &["add", "README"]);
        git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial"]);
        let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/pipeline.sh");
        let pass: Vec<String> = extra_env.iter().map(|v| format!("{v:?}")).collect();
        let config = format!(
            r#"
[paths]
data_dir = "{data}"
[runner]
loop_interval = "1s"
retry_backoff = "1s"
[worker]
agent = "command"
idle_timeout = "20s"
kill_grace = "1s"
pass_env = [{pass}]
[worker.command]
argv = ["{agent}"]
[notify]
mention = "@alex"
webhook_url = "{webhook}"
[repos.app]
path = "{repo}"
ci_command = ["sh", "-c", "sleep 2; test -f ci-fixed"]
trusted_authors = ["alex"]
"#,
            data = env.path().join("data").display(),
            agent = agent.display(),
            repo = repo.display(),
            pass = pass.join(", "),
            webhook = webhook,
        );
        std::fs::write(env.path().join("executor.toml"), config).unwrap();
        env
    }

    /// Adds TOML (another `[repos.NAME]`, say) to the end of the config.
    pub fn append_config(&self, toml: &str) {
        let path = self.path().join("executor.toml");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(toml);
        std::fs::write(path, text).unwrap();
    }

    /// Replaces text in the config (to change a key the default config already sets).
    pub fn edit_config(&self, from: &str, to: &str) {
        let path = self.path().join("executor.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{from:?} not in the config");
        std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    }

    pub fn repo(&self) -> std::path::PathBuf {
        self.path().join("repo")
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_executor"));
        cmd.arg("--config").arg(self.path().join("executor.toml")).args(args).current_dir(self.path());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        succeeded(self.command(args).stdin(Stdio::null()).output().unwrap(), &format!("{args:?}"))
    }

    /// Points the config at another database (PostgreSQL, say) instead of SQLite in the data dir.
    pub fn use_database(&self, url: &str) {
        self.append_config(&format!("\n[database]\nurl = {}\n", toml_string(url)));
    }

    /// The database the config names.
    pub async fn store(&self) -> Store {
        let text = std::fs::read_to_string(self.path().join("executor.toml")).unwrap();
        let config = executor::config::Config::parse(&text).unwrap();
        Store::open(&config.database_url()).await.unwrap()
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
}

/// Starts `cmd` (a runner) and kills it with SIGKILL as soon as the agent creates `flag`: a contained
/// agent cannot signal its runner, so the test plays the crash. Returns the runner's exit status.
pub fn kill_when_flagged(cmd: &mut Command, flag: &Path) -> std::process::ExitStatus {
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if flag.exists() {
            child.kill().unwrap();
            return child.wait().unwrap();
        }
        assert!(std::time::Instant::now() < deadline, "the agent never created {}", flag.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Alive and not a zombie (an orphaned worker is reaped by whatever init the machine has, maybe late).
/// A Slack-style incoming webhook on loopback that records what it is sent.
pub struct FakeWebhook {
    addr: std::net::SocketAddr,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl FakeWebhook {
    pub fn start() -> FakeWebhook {
        FakeWebhook::start_on("127.0.0.1:0")
    }

    /// A webhook URL on loopback where nothing listens yet (a webhook server that is down), and the
    /// address to [`FakeWebhook::start_on`] later.
    pub fn down() -> (String, String) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        (format!("http://{addr}/services/T000/B000/secret"), addr)
    }

    pub fn start_on(addr: &str) -> FakeWebhook {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind(addr).unwrap();
        let addr = listener.local_addr().unwrap();
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = bodies.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                sink.lock().unwrap().push(String::from_utf8_lossy(&body).into_owned());
                let _ = reader
                    .get_mut()
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
            }
        });
        FakeWebhook { addr, bodies }
    }

    pub fn url(&self) -> String {
        format!("http://{}/services/T000/B000/secret", self.addr)
    }

    pub fn bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }
}

pub fn pid_alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok() && !matches!(state, Some("Z" | "X"))
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}
