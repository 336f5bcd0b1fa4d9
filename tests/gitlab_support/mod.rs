//! The GitLab end-to-end tests' home: a local clone with a bare "GitLab" remote the fake reads heads
//! from, the fake GitLab, and a config driving the real binary with the `pipeline.sh` fake agent on
//! `forge = "gitlab"`. The test crate declares `mod fake_gitlab` (tests/fake_gitlab/mod.rs).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use executor::domain::TaskGid;
use executor::store::{RunFilter, Store};

use crate::fake_gitlab::FakeGitLab;

pub const PROJECT: &str = "group/app";
pub const TOKEN: &str = "glpat-test-0123456789abcdef";
pub const TOKEN_ENV: &str = "EXECUTOR_TEST_GITLAB_TOKEN";

pub struct GlEnv {
    pub dir: tempfile::TempDir,
    pub fake: FakeGitLab,
    /// More variables for every command (a tracker's token).
    env: std::sync::Mutex<Vec<(String, String)>>,
}

pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

impl GlEnv {
    pub async fn new() -> GlEnv {
        let dir = tempfile::tempdir().unwrap();
        let (repo, remote) = (dir.path().join("repo"), dir.path().join("remote.git"));
        std::fs::create_dir(&repo).unwrap();
        git(dir.path(), &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README"), "app\n").unwrap();
        git(&repo, &["add", "README"]);
        git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial"]);
        git(&repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
        git(&repo, &["push", "-q", "origin", "main"]);

        let fake = FakeGitLab::start().await;
        fake.set_token(TOKEN);
        fake.add_project(PROJECT, Some(remote));
        let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/pipeline.sh");
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
[worker.command]
argv = ["{agent}"]
[notify]
mention = "@alex"
[gitlab]
url = "{url}"
token_env = ["{TOKEN_ENV}"]
check_grace = "1s"
request_timeout = "2s"
[repos.app]
path = "{repo}"
forge = "gitlab"
gitlab = "{PROJECT}"
remote = "origin"
ci_trigger = ""
required_checks = ["test"]
required_labels = ["executor"]
trusted_authors = ["alex"]
"#,
            data = dir.path().join("data").display(),
            agent = agent.display(),
            url = fake.url,
            repo = repo.display(),
        );
        std::fs::write(dir.path().join("executor.toml"), config).unwrap();
        GlEnv { dir, fake, env: Default::default() }
    }

    /// `executor ARGS` on this home's config, with the GitLab token and the variables set here.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_executor"));
        cmd.arg("--config")
            .arg(self.dir.path().join("executor.toml"))
            .args(args)
            .current_dir(self.dir.path())
            .env(TOKEN_ENV, TOKEN)
            .env_remove("GITLAB_TOKEN")
            .envs(self.env.lock().unwrap().clone())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    pub async fn exec(&self, args: &[&str]) -> Output {
        let mut cmd = self.command(args);
        tokio::time::timeout(Duration::from_secs(90), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("executor {args:?} did not end within 90 s"))
            .unwrap()
    }

    pub async fn ok(&self, args: &[&str]) -> Output {
        let out = self.exec(args).await;
        assert!(out.status.success(), "{args:?} failed:\n{}", text(&out));
        out
    }

    /// Adds TOML (a tracker's `[[sources]]`, say) to the end of the config.
    pub fn append_config(&self, toml: &str) {
        let path = self.dir.path().join("executor.toml");
        let config = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{config}{toml}")).unwrap();
    }

    /// Sets `name` for every command run from now on.
    pub fn set_env(&self, name: &str, value: &str) {
        self.env.lock().unwrap().push((name.into(), value.into()));
    }

    pub async fn store(&self) -> Store {
        let text = std::fs::read_to_string(self.dir.path().join("executor.toml")).unwrap();
        let config = executor::config::Config::parse(&text).unwrap();
        Store::open(&config.database_url()).await.unwrap()
    }

    /// Every work log's text (prompts and agents' output).
    pub fn all_logs(&self) -> String {
        let mut all = String::new();
        let mut dirs: Vec<PathBuf> = vec![self.dir.path().join("data").join("logs")];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for path in entries.flatten().map(|e| e.path()) {
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

pub async fn run_of(store: &Store, gid: &str) -> executor::domain::Run {
    let filter = RunFilter { task_gid: Some(TaskGid::parse(gid).unwrap()), ..Default::default() };
    let mut runs = store.list_runs(&filter).await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.remove(0)
}
