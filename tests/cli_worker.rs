//! `executor worker run`, `executor logs` and `executor prompts`, through the real binary with the fake
//! agents (`tests/fake_agents/pipeline.sh` as the `command` agent, `claude.sh` as Claude Code).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use executor::config::Config;
use executor::domain::{Actor, TaskGid, WorkerKind};
use executor::instance_lock::InstanceLock;
use executor::store::{RunFilter, Store};

mod worker_support;

use worker_support::{assert_no_leftovers, fake};

/// The temporary directory and git repository of the worker tests, with an executor.toml.
struct Sandbox {
    inner: worker_support::Sandbox,
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Sandbox {
    /// A git repository `worktree/`, a data directory `data/` and an executor.toml whose `[worker]` section
    /// gets `worker` appended.
    fn new(worker: &str) -> Sandbox {
        let sb = Sandbox { inner: worker_support::Sandbox::new() };
        sb.inner.git_init();
        let config = format!(
            "[paths]\ndata_dir = {data:?}\n[worker]\nkill_grace = \"1s\"\n{worker}\n\
             [worker.claude]\nprogram = {claude:?}\n[repos.app]\npath = {repo:?}\n",
            data = sb.data().display().to_string(),
            claude = fake("claude.sh"),
            repo = sb.inner.worktree.display().to_string(),
        );
        std::fs::write(sb.path().join("executor.toml"), config).unwrap();
        sb
    }

    /// The `command` agent is the pipeline fake.
    fn with_pipeline() -> Sandbox {
        Sandbox::new(&format!(
            "agent = \"command\"\npass_env = [\"FAKE_SLOW\"]\ncommand.argv = [{:?}]",
            fake("pipeline.sh")
        ))
    }

    fn path(&self) -> &Path {
        self.inner.dir.path()
    }

    fn data(&self) -> PathBuf {
        self.path().join("data")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_executor"));
        cmd.arg("--config")
            .arg(self.path().join("executor.toml"))
            .args(args)
            .current_dir(self.path())
            .env("HOME", self.path())
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}{}", text(&out.stdout), text(&out.stderr));
        text(&out.stdout)
    }

    /// Runs and expects the exit code, returning stdout and stderr together.
    fn fails(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(code), "{args:?}: {all}");
        all
    }

    fn add_task(&self, gid: &str) {
        self.ok(&["queue", "add", "--gid", gid, "--description", "Add the feature file"]);
    }

    /// The database the binary uses, found the way it finds it.
    async fn store(&self) -> Store {
        let config = Config::load(&self.path().join("executor.toml")).unwrap();
        Store::open(&config.database_url()).await.unwrap()
    }

    /// An approved task with a run, as the runner would create it.
    async fn task_with_run(&self, gid: &str) -> (Store, i64) {
        self.add_task(gid);
        self.ok(&["approve", "--skip-triage", gid]);
        let store = self.store().await;
        let run =
            store.create_run_for_task(&TaskGid::parse(gid).unwrap(), Actor::Cli).await.unwrap().unwrap();
        (store, run.id)
    }

    fn logs_of(&self, gid: &str) -> Vec<PathBuf> {
        std::fs::read_dir(self.data().join("logs").join(gid))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    }
}

#[tokio::test]
async fn a_worker_run_by_hand_on_a_run_is_recorded_like_the_runners() {
    let sb = Sandbox::with_pipeline();
    let (store, run_id) = sb.task_with_run("1207").await;

    let out: serde_json::Value = serde_json::from_str(
        &sb.ok(&["worker", "run", "--task", "1207", "--kind", "queued", "--dir", "worktree", "--json"]),
    )
    .unwrap();
    assert_eq!(out["reason"], "finished");
    assert_eq!(out["run_id"], run_id);
    assert!(Path::new(out["log_path"].as_str().unwrap()).is_file());
    assert!(sb.path().join("worktree/feature.txt").is_file(), "the agent worked in --dir");

    // The same run with Claude Code instead of the configured command agent.
    let human = sb.ok(&[
        "worker", "run", "--task", "1207", "--kind", "fix_ci", "--agent", "claude", "--dir", "worktree",
    ]);
    for part in ["work log:", "finished", "$0.1234", "sess-1234-abcd", "3"] {
        assert!(human.contains(part), "{part:?} missing from:\n{human}");
    }
    assert!(human.contains(&format!("recorded on run {run_id}")), "{human}");

    let sessions = store.worker_sessions(run_id).await.unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0].kind, WorkerKind::Queued);
    assert_eq!(sessions[0].agent, "command");
    assert_eq!(sessions[1].kind, WorkerKind::FixCi);
    assert_eq!(sessions[1].agent, "claude");
    for s in &sessions {
        assert_eq!(s.end_reason.map(|r| r.as_str()), Some("finished"));
        assert!(s.ended_at.is_some() && s.pid.is_some() && s.log_path.is_some());
    }
    assert_eq!(sessions[1].session_id.as_deref(), Some("sess-1234-abcd"));
    let run = store.run(run_id).await.unwrap();
    assert!((run.cost_usd - 0.1234).abs() < 1e-9, "{}", run.cost_usd);

    // A run whose worker is still live is not given a second one.
    store
        .begin_worker_session(run_id, WorkerKind::FixComments, "command", "elsewhere", &Default::default())
        .await
        .unwrap()
        .unwrap();
    let err = sb.fails(&["worker", "run", "--task", "1207", "--kind", "queued", "--dir", "worktree"], 1);
    assert!(err.contains("already has a live worker session"), "{err}");
    assert_eq!(store.worker_sessions(run_id).await.unwrap().len(), 3);
}

/// Issue 33 item 6: without a run and without `--dir`, the agent used to work — and commit — in whatever
/// directory the command was run from (another clone's `main`). It gets a scratch worktree instead.
#[tokio::test]
async fn without_a_run_or_dir_the_agent_works_in_a_scratch_worktree_not_where_you_stand() {
    let sb = Sandbox::with_pipeline();
    sb.add_task("42");
    let clone = sb.path().join("worktree");
    let head = |dir: &Path| {
        text(&Command::new("git").args(["rev-parse", "HEAD"]).current_dir(dir).output().unwrap().stdout)
    };
    let before = head(&clone);
    let out = sb
        .command(&["worker", "run", "--task", "42", "--kind", "queued"])
        .current_dir(&clone)
        .output()
        .unwrap();
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stdout));
    assert_eq!(head(&clone), before, "the agent committed where the command was run");
    assert!(!clone.join("feature.txt").exists(), "the agent worked where the command was run");
    assert!(said.contains("scratch worktree"), "{said}");
    let scratch: Vec<PathBuf> = std::fs::read_dir(sb.data().join("worktrees"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("scratch-42-")))
        .collect();
    assert_eq!(scratch.len(), 1, "{scratch:?}");
    assert!(scratch[0].join("feature.txt").is_file(), "the agent did not work in the scratch worktree");
}

#[tokio::test]
async fn without_a_run_nothing_is_recorded_but_the_log_is_written() {
    let sb = Sandbox::with_pipeline();
    sb.add_task("42");
    let out = sb.ok(&["worker", "run", "--task", "42", "--kind", "pr_review", "--dir", "worktree"]);
    assert!(out.contains("nothing was recorded on a run"), "{out}");
    let logs = sb.logs_of("42");
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(log.contains("a worker run by hand"), "{log}");
    assert!(out.contains(&logs[0].display().to_string()), "{out}");
    let store = sb.store().await;
    let runs = store
        .list_runs(&RunFilter { task_gid: Some(TaskGid::parse("42").unwrap()), ..Default::default() })
        .await
        .unwrap();
    assert!(runs.is_empty());

    // `logs` prints it; --follow ends by itself on a closed log.
    assert_eq!(sb.ok(&["logs", "42"]), log);
    assert_eq!(sb.ok(&["logs", "42", "--kind", "pr_review", "--follow"]), log);
    let err = sb.fails(&["logs", "42", "--kind", "fix_ci"], 1);
    assert!(err.contains("no work log of kind fix_ci for task 42 in"), "{err}");
    assert!(err.contains(&sb.data().join("logs/42").display().to_string()), "{err}");
    let err = sb.fails(&["logs", "7"], 1);
    assert!(err.contains(&sb.data().join("logs/7").display().to_string()), "{err}");
    let err = sb.fails(&["logs", "../42"], 2);
    assert!(err.contains("only letters, digits"), "{err}");
}

#[test]
fn refused_while_a_runner_holds_the_lock_and_for_bad_input() {
    let sb = Sandbox::with_pipeline();
    sb.add_task("9");
    let lock = InstanceLock::acquire(&sb.data(), "runner").unwrap();
    let err = sb.fails(&["worker", "run", "--task", "9", "--kind", "queued", "--dir", "worktree"], 1);
    assert!(err.contains("a runner is running"), "{err}");
    assert!(sb.logs_of("9").is_empty(), "no worker started");
    drop(lock);

    let err = sb.fails(&["worker", "run", "--task", "10", "--kind", "queued"], 1);
    assert!(err.contains("no task 10"), "{err}");
    let err = sb.fails(&["worker", "run", "--task", "a/b", "--kind", "queued"], 2);
    assert!(err.contains("only letters, digits"), "{err}");
    sb.fails(&["worker", "run", "--task", "9", "--kind", "nope"], 2);
}

#[test]
fn the_command_agent_needs_its_argv() {
    let sb = Sandbox::new("agent = \"claude\"");
    sb.add_task("5");
    let err = sb.fails(&["worker", "run", "--task", "5", "--kind", "queued", "--agent", "command"], 1);
    assert!(err.contains("worker.command.argv"), "{err}");
}

#[tokio::test]
async fn ctrl_c_stops_the_agent_and_exits_non_zero() {
    let sb = Sandbox::with_pipeline();
    let (store, run_id) = sb.task_with_run("77").await;
    let child = sb
        .command(&["worker", "run", "--task", "77", "--kind", "queued", "--dir", "worktree"])
        .env("FAKE_SLOW", "60")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let pid = loop {
        let sessions = store.worker_sessions(run_id).await.unwrap();
        if let Some(pid) = sessions.first().and_then(|s| s.pid) {
            break pid;
        }
        assert!(Instant::now() < deadline, "the worker never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("did not finish"), "{}", text(&out.stderr));
    let session = &store.worker_sessions(run_id).await.unwrap()[0];
    assert_eq!(session.end_reason.map(|r| r.as_str()), Some("interrupted"));
    assert_no_leftovers(pid);
}

#[test]
fn prompts_export_keeps_edits_and_check_names_a_broken_override() {
    let sb = Sandbox::with_pipeline();
    let out = sb.ok(&["prompts", "export", "prompts"]);
    let dir = sb.path().join("prompts");
    let names = [
        "queued.md",
        "in_progress.md",
        "fix_ci.md",
        "fix_comments.md",
        "pr_review.md",
        "fix_conflicts.md",
        "plan.md",
        "analyzer.md",
    ];
    for name in names {
        assert!(dir.join(name).is_file(), "{name}");
    }
    assert_eq!(out.matches("wrote").count(), names.len(), "{out}");
    assert!(out.contains("prompts_dir"), "{out}");

    let edited = dir.join("fix_ci.md");
    std::fs::write(&edited, "Fix {{ nope }} now.\n").unwrap();
    let out = sb.ok(&["prompts", "export", "prompts"]);
    assert!(out.contains("kept (edited"), "{out}");
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), "Fix {{ nope }} now.\n");

    sb.ok(&["prompts", "check"]);
    let config = std::fs::read_to_string(sb.path().join("executor.toml")).unwrap();
    let config =
        config.replace("[worker]\n", &format!("[worker]\nprompts_dir = {:?}\n", dir.display().to_string()));
    std::fs::write(sb.path().join("executor.toml"), config).unwrap();
    let err = sb.fails(&["prompts", "check"], 1);
    assert!(err.contains(&edited.display().to_string()), "{err}");
    assert!(err.contains("1 prompt template"), "{err}");

    // A syntax error is found when the templates load, and named by file too.
    std::fs::write(dir.join("pr_review.md"), "{% if %}").unwrap();
    let err = sb.fails(&["prompts", "check"], 1);
    assert!(err.contains(&dir.join("pr_review.md").display().to_string()), "{err}");

    let out = sb.ok(&["prompts", "export", "prompts", "--force"]);
    assert!(out.contains("overwrote"), "{out}");
    sb.ok(&["prompts", "check"]);
}
