//! Shared by the runner-against-GitHub tests: a temporary working repository with a bare remote, the fake
//! GitHub serving `octo/app` from that remote, a config pointing `[github]` at the fake, and the real
//! `executor` binary run with the `pipeline.sh` fake agent.
//!
//! The fake runs on the test's tokio runtime, so the binary is always run as a child process awaited
//! asynchronously: the runtime keeps serving the fake while the runner talks to it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use executor::domain::{Run, TaskGid, WritebackStatus};
use executor::store::{RunFilter, Store};

use crate::fake_github::FakeGitHub;

pub const REPO: &str = "octo/app";
/// The token the runner is given (through `github.token_env`); it must never show in a log.
pub const TOKEN: &str = "test-token-0123456789abcdef";
pub const TOKEN_ENV: &str = "EXECUTOR_TEST_GH_TOKEN";

pub struct GhEnv {
    pub dir: tempfile::TempDir,
    pub fake: FakeGitHub,
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl GhEnv {
    /// The temp repo (`repo/`, branch main, one commit) pushed to `remote.git`, the fake serving it, and
    /// the config. `agent_env` is passed to the fake agent (`FAKE_REVIEW=fail`, say); `github_extra` is
    /// added under `[github]` (e.g. `request_timeout` is set here, so pass other keys only).
    pub async fn new(agent_env: &[(&str, &str)], github_extra: &str) -> GhEnv {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let remote = dir.path().join("remote.git");
        std::fs::create_dir(&repo).unwrap();
        git(dir.path(), &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README"), "app\n").unwrap();
        git(&repo, &["add", "README"]);
        git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial"]);
        git(&repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
        git(&repo, &["push", "-q", "origin", "main"]);

        let fake = FakeGitHub::start().await;
        fake.add_repo("octo", "app", Some(remote.clone()));
        // executor's own comments come from the human's account, as often on GitHub.
        fake.set_login("alex");
        fake.set_token(TOKEN);

        let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/pipeline.sh");
        let pass: Vec<String> = agent_env.iter().map(|(k, _)| format!("{k:?}")).collect();
        // The agent answers in its result: it needs neither the token nor the database.
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
[github]
api_url = "{api}"
graphql_url = "{graphql}"
token_env = ["{TOKEN_ENV}"]
check_grace = "1s"
{github_extra}
[repos.app]
path = "{repo}"
forge = "github"
github = "{REPO}"
remote = "origin"
ci_trigger = "workflow:ci.yml"
required_checks = ["ci"]
required_labels = ["executor"]
trusted_authors = ["alex"]
"#,
            data = dir.path().join("data").display(),
            agent = agent.display(),
            repo = repo.display(),
            pass = pass.join(", "),
            api = fake.api_url(),
            graphql = fake.graphql_url(),
        );
        std::fs::write(dir.path().join("executor.toml"), config).unwrap();
        let env = GhEnv { dir, fake };
        for (k, v) in agent_env {
            env.set_agent_env(k, v);
        }
        if !github_extra.contains("request_timeout") {
            env.insert_after("[github]\n", "request_timeout = \"5s\"\n");
        }
        env
    }

    /// Sets a variable for the agent (its name must be in `pass_env`: give it to [`GhEnv::new`]).
    pub fn set_agent_env(&self, key: &str, value: &str) {
        let path = self.path().join("agent_env");
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str(&format!("{key}={value}\n"));
        std::fs::write(path, text).unwrap();
    }

    /// Replaces the first `from` in the config with `to` (a key's value, say).
    pub fn edit_config(&self, from: &str, to: &str) {
        let path = self.path().join("executor.toml");
        let config = std::fs::read_to_string(&path).unwrap();
        assert!(config.contains(from), "{from:?} is not in the config");
        std::fs::write(path, config.replacen(from, to, 1)).unwrap();
    }

    fn insert_after(&self, marker: &str, text: &str) {
        let path = self.path().join("executor.toml");
        let config = std::fs::read_to_string(&path).unwrap();
        assert!(config.contains(marker));
        std::fs::write(path, config.replacen(marker, &format!("{marker}{text}"), 1)).unwrap();
    }

    /// Points the config at another database (PostgreSQL, say) instead of SQLite in the data dir.
    pub fn use_database(&self, url: &str) {
        let path = self.path().join("executor.toml");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&format!(
            "\n[database]\nurl = \"{}\"\n",
            url.replace('\\', "\\\\").replace('"', "\\\"")
        ));
        std::fs::write(path, text).unwrap();
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn repo(&self) -> PathBuf {
        self.path().join("repo")
    }

    pub fn remote(&self) -> PathBuf {
        self.path().join("remote.git")
    }

    pub fn logs_dir(&self) -> PathBuf {
        self.path().join("data").join("logs")
    }

    /// The bare remote's head of `branch`, if it has that branch.
    pub fn remote_head(&self, branch: &str) -> Option<String> {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(self.remote())
            .args(["rev-parse", "--verify", "-q", &format!("refs/heads/{branch}")])
            .output()
            .unwrap();
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Runs the binary with the token in its environment (and the agent's extra variables), without
    /// blocking the runtime that serves the fake.
    pub async fn exec(&self, args: &[&str]) -> Output {
        let mut cmd = self.command(args);
        // A runner that never ends is a failure, not a hung test suite.
        tokio::time::timeout(Duration::from_secs(90), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("executor {args:?} did not end within 90 s"))
            .unwrap()
    }

    /// The binary with `args`, the config, the token and the agent's extra variables, not yet started
    /// (killed when dropped): for a process that lives on beside the test (`executor serve`).
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_executor"));
        cmd.arg("--config")
            .arg(self.path().join("executor.toml"))
            .args(args)
            .current_dir(self.path())
            .env(TOKEN_ENV, TOKEN)
            .env_remove("GH_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let extra = std::fs::read_to_string(self.path().join("agent_env")).unwrap_or_default();
        for line in extra.lines() {
            if let Some((k, v)) = line.split_once('=') {
                cmd.env(k, v);
            }
        }
        cmd
    }

    /// Runs the binary and asserts it succeeded.
    pub async fn ok(&self, args: &[&str]) -> Output {
        let out = self.exec(args).await;
        assert!(out.status.success(), "{args:?} failed:\n{}", text(&out));
        out
    }

    /// One `executor runner` (until idle), as cron would start it.
    pub async fn runner(&self) -> Output {
        self.exec(&["runner"]).await
    }

    /// The database the config names.
    pub async fn store(&self) -> Store {
        let text = std::fs::read_to_string(self.path().join("executor.toml")).unwrap();
        let config = executor::config::Config::parse(&text).unwrap();
        Store::open(&config.database_url()).await.unwrap()
    }

    pub async fn queue_approved(&self, gid: &str) {
        self.ok(&[
            "queue",
            "add",
            "--gid",
            gid,
            "--description",
            "Add the feature file",
            "--source",
            "my_tasks_inbox",
        ])
        .await;
        self.ok(&["approve", "--skip-triage", gid]).await;
    }

    /// Every work log's text (prompts and agents' output), for what must or must not reach an agent.
    pub fn all_logs(&self) -> String {
        let mut all = String::new();
        let mut dirs = vec![self.logs_dir()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if let Ok(text) = std::fs::read_to_string(&path) {
                    all.push_str(&text);
                }
            }
        }
        all
    }
}

/// The only run of task `gid`.
pub async fn run_of(store: &Store, gid: &str) -> Run {
    let gid = TaskGid::parse(gid).unwrap();
    let mut runs = store.list_runs(&RunFilter { task_gid: Some(gid), ..Default::default() }).await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.remove(0)
}

pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Delivers task `gid`'s write-back messages still pending after a failure: their back-off is cut
/// short, as time would end it, and a runner started, at most three times; fails if any is left. The
/// runs are complete by then, so only the delivery is left to wait for.
pub async fn deliver_what_is_left(env: &GhEnv, store: &Store, gid: &str) {
    for _ in 0..3 {
        let rows = store.writebacks(Some(gid)).await.unwrap();
        if rows.iter().all(|w| w.status != WritebackStatus::Pending) {
            return;
        }
        store.make_writebacks_due_for_tests().await.unwrap();
        let out = env.runner().await;
        assert!(out.status.success(), "the runner failed:\n{}", text(&out));
    }
    panic!("write-backs still pending: {:?}", store.writebacks(Some(gid)).await.unwrap());
}

/// Plays GitHub's CI: a `ci` check run appears at a head only after CI was dispatched for it. The first
/// one fails with a job log naming the failing test; every later one passes.
pub struct CiPlayer {
    /// Dispatches already answered.
    answered: usize,
    /// The heads that got a check, in order.
    pub heads: Vec<String>,
    fail_first: bool,
}

pub const FAILING_LINE: &str = "error: test_login failed";

impl CiPlayer {
    /// The first check fails (with a job log), every later one passes.
    pub fn failing_first() -> CiPlayer {
        CiPlayer { answered: 0, heads: Vec::new(), fail_first: true }
    }

    /// Every check passes.
    pub fn green() -> CiPlayer {
        CiPlayer { answered: 0, heads: Vec::new(), fail_first: false }
    }

    /// Answers any new `workflow_dispatch` of `branch` with a finished check at the remote's head.
    /// Returns whether a check was added.
    pub fn play(&mut self, env: &GhEnv, number: i64, branch: &str) -> bool {
        let dispatches = env.fake.dispatches();
        let new: Vec<_> = dispatches[self.answered..].to_vec();
        self.answered = dispatches.len();
        if !new.iter().any(|(workflow, reference)| workflow == "ci.yml" && reference == branch) {
            return false;
        }
        let head = env.remote_head(branch).expect("the branch was pushed before CI was dispatched");
        if self.heads.is_empty() && self.fail_first {
            let log = format!("Run cargo test\nrunning 12 tests\ntest login ... FAILED\n{FAILING_LINE}\n");
            env.fake.add_check_run(REPO, number, &head, "ci", "COMPLETED", Some("FAILURE"), Some(&log));
        } else {
            env.fake.add_check_run(REPO, number, &head, "ci", "COMPLETED", Some("SUCCESS"), Some("ok\n"));
        }
        self.heads.push(head);
        true
    }
}
