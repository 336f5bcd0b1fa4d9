//! Shared by the worker integration tests: temp directories, specs with short timeouts, fake agents.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use executor::domain::{TaskGid, WorkerKind};
use executor::worker::{
    self, AgentConfig, ClaudeConfig, CodexConfig, CommandConfig, EnvSpec, Timeouts, WorkerError,
    WorkerOutcome, WorkerSpec, WorkerUpdate, process,
};
use tokio::sync::{mpsc, watch};

pub const SECRET: &str = "ghp_TestSecretValue1234567890";

pub fn fake(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents").join(name).display().to_string()
}

pub fn claude(name: &str) -> AgentConfig {
    AgentConfig::Claude(ClaudeConfig { program: fake(name), ..Default::default() })
}

pub fn codex(name: &str) -> AgentConfig {
    AgentConfig::Codex(CodexConfig { program: fake(name), ..Default::default() })
}

pub fn command(name: &str) -> AgentConfig {
    AgentConfig::Command(CommandConfig { program: fake(name), args: vec![] })
}

pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub worktree: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let worktree = dir.path().join("worktree");
        std::fs::create_dir_all(&worktree).unwrap();
        Sandbox { dir, worktree }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn git_init(&self) {
        for args in [
            vec!["init", "-q", "-b", "main"],
            vec!["config", "user.email", "test@example.com"],
            vec!["config", "user.name", "Test"],
            vec!["commit", "-q", "--allow-empty", "-m", "initial"],
        ] {
            let ok = Command::new("git").args(&args).current_dir(&self.worktree).status().unwrap().success();
            assert!(ok, "git {args:?}");
        }
    }

    pub fn spec(&self, agent: AgentConfig, kind: WorkerKind, env: &[(&str, String)]) -> WorkerSpec {
        WorkerSpec {
            task_gid: TaskGid::parse("1207").unwrap(),
            run_id: 42,
            kind: kind.into(),
            agent,
            cwd: self.worktree.clone(),
            prompt: "Please do the task.\nPROMPT-MARKER-7f3a\n".into(),
            resume_session: None,
            max_turns: Some(30),
            max_budget_usd: None,
            cost_cap_usd: None,
            env: EnvSpec {
                pass: vec![],
                set: env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
                secrets: vec![],
            },
            logs_root: self.path("logs"),
            files_root: self.path("workers"),
            timeouts: short_timeouts(),
            max_output_bytes: 256 * 1024 * 1024,
            pricing: Default::default(),
            usage_baseline: Default::default(),
            writable_dirs: vec![],
            sandbox: None,
        }
    }
}

pub fn short_timeouts() -> Timeouts {
    Timeouts {
        idle: Duration::from_secs(2),
        hard: Duration::from_secs(30),
        grace: Duration::from_millis(500),
        poll: Duration::from_millis(50),
    }
}

/// Runs a worker to its end and returns its outcome with every update it sent.
pub async fn run(spec: WorkerSpec) -> (Result<WorkerOutcome, WorkerError>, Vec<WorkerUpdate>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_stop, stop_rx) = watch::channel(false);
    let outcome = worker::run(spec, tx, stop_rx).await;
    let mut updates = Vec::new();
    while let Ok(u) = rx.try_recv() {
        updates.push(u);
    }
    (outcome, updates)
}

pub fn started_pid(updates: &[WorkerUpdate]) -> i32 {
    updates
        .iter()
        .find_map(|u| match u {
            WorkerUpdate::Started { pid, .. } => Some(*pid),
            _ => None,
        })
        .expect("a Started update")
}

/// Gone, or a zombie nobody reaped yet (it has exited either way).
pub fn is_dead(pid: i32) -> bool {
    process::read_stat(pid).is_none_or(|s| s.state == 'Z')
}

/// Asserts that nothing of the worker's process group is left running.
pub fn assert_no_leftovers(pgid: i32) {
    assert!(
        process::group_members(pgid).is_empty(),
        "processes left in group {pgid}: {:?}",
        process::group_members(pgid)
    );
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}
