//! The triage of one task by an agent: the real `pipeline.sh` fake agent as the `command` agent (steered
//! by `FAKE_ANALYZER=…` in the task's text), a real git repository and its scratch checkouts, a real
//! database (SQLite; PostgreSQL too where it is cheap).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::TestDb;
use executor::analyzer::triage::{TriageOutcome, Triager};
use executor::config::{self, Config, Repo};
use executor::domain::{Actor, EndReason, QueueStatus, Task, TaskGid};
use executor::store::{AnalysisEnd, AnalysisSession, NewTask, Store};
use executor::worker::{Prompts, pid_start_time};
use tokio::sync::watch;

on_both_databases!(a_good_answer_is_decided_with_its_criteria, prose_then_a_fixed_answer_takes_two_sessions);

struct Env {
    dir: tempfile::TempDir,
    store: Store,
    _db: TestDb,
}

impl Env {
    async fn new(db: TestDb) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"],
        ] {
            assert!(Command::new("git").args(args).current_dir(&repo).status().unwrap().success());
        }
        let store = db.open().await;
        Env { dir, store, _db: db }
    }

    async fn sqlite() -> Env {
        Env::new(common::sqlite()).await
    }

    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn config(&self) -> Config {
        let mut c = Config::default();
        c.paths.data_dir = self.data().display().to_string();
        c.repos.insert("app".into(), Repo::at(&self.repo().display().to_string()));
        c.worker.agent = "command".into();
        let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/pipeline.sh");
        c.worker.command.argv = vec![agent.display().to_string()];
        c.worker.kill_grace = config::Duration(Duration::from_millis(300));
        c.analyzer.idle_timeout = config::Duration::secs(2);
        c.analyzer.hard_timeout = config::Duration::secs(60);
        c
    }

    fn triager(&self, config: Config) -> Triager {
        Triager::new(
            Arc::new(config),
            Arc::new(Prompts::embedded()),
            self.store.clone(),
            "test-host".into(),
            None,
        )
    }

    async fn task(&self, gid: &str, description: &str) -> Task {
        let gid = TaskGid::parse(gid).unwrap();
        let new = NewTask { description: Some(description.into()), ..Default::default() };
        self.store.upsert_task(&gid, &new, Actor::Cli).await.unwrap().0
    }

    async fn triage(&self, task: &Task) -> TriageOutcome {
        let (_stop, rx) = watch::channel(false);
        self.triager(self.config()).triage(task, &["source: tests".into()], rx).await
    }

    async fn sessions(&self, task: &Task) -> Vec<AnalysisSession> {
        self.store.analysis_sessions(&task.task_gid).await.unwrap()
    }

    /// Nothing of any triage is left: no scratch checkout on disk or in git, no raw output.
    fn assert_clean(&self) {
        let analysis = self.data().join("analysis");
        let left: Vec<_> =
            std::fs::read_dir(&analysis).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
        assert!(left.is_empty(), "scratch checkouts left: {left:?}");
        let list = Command::new("git").args(["worktree", "list"]).current_dir(self.repo()).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&list.stdout).lines().count(), 1, "git still lists a scratch");
        let workers = self.data().join("workers");
        let raw: Vec<_> = walk(&workers).into_iter().filter(|p| p.is_file()).collect();
        assert!(raw.is_empty(), "raw output left: {raw:?}");
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries.flatten().flat_map(|e| std::iter::once(e.path()).chain(walk(&e.path()))).collect()
}

fn decided(o: TriageOutcome) -> executor::store::Triage {
    match o {
        TriageOutcome::Decided(t) => t,
        other => panic!("expected a decision, got {other:?}"),
    }
}

fn failed(o: TriageOutcome) -> String {
    match o {
        TriageOutcome::Failed(e) => e,
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn blocked(o: TriageOutcome) -> String {
    match o {
        TriageOutcome::Blocked(b) => b.why,
        other => panic!("expected a block, got {other:?}"),
    }
}

async fn a_good_answer_is_decided_with_its_criteria(db: TestDb) {
    let env = Env::new(db).await;
    let task = env.task("101", "Add a --verbose flag\n\nPrint more.").await;
    let t = decided(env.triage(&task).await);
    assert_eq!(t.status, QueueStatus::AwaitingGo);
    assert_eq!((t.priority, t.complexity.as_str(), t.feasibility.as_str()), (3, "low", "high"));
    assert_eq!(t.summary, "A small change with a clear test.");
    assert_eq!(
        t.acceptance_criteria,
        vec!["the change has a test".to_string(), "the docs mention it".into()]
    );

    let sessions = env.sessions(&task).await;
    assert_eq!(sessions.len(), 1);
    let s = &sessions[0];
    assert_eq!(
        (s.end_reason, s.agent.as_str(), s.host.as_str()),
        (Some(EndReason::Finished), "command", "test-host")
    );
    assert!(s.pid.is_some() && s.pid_start_time.is_some(), "the process was recorded");
    assert_eq!(s.result_error, None);
    // The work log: named by the analyzer kind, the prompt (task fenced, notes listed), the agent working
    // in a detached checkout of the base branch under the data directory.
    let log_path = PathBuf::from(s.log_path.clone().unwrap());
    let name = log_path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        log_path.starts_with(env.data().join("logs").join("101")) && name.starts_with("analyzer_"),
        "{name}"
    );
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("Add a --verbose flag") && log.contains("- source: tests"), "{log}");
    assert!(log.contains("- **Run:** none (a triage)"), "{log}");
    let scratch = env.data().join("analysis").join(format!("101-{}", s.id));
    assert!(log.contains(&format!("triaging in {}", scratch.display())), "{log}");
    assert!(!log.contains("no-checkout"), "the agent ran in a git checkout: {log}");
    env.assert_clean();
}

async fn prose_then_a_fixed_answer_takes_two_sessions(db: TestDb) {
    let env = Env::new(db).await;
    let task = env.task("102", "Fix the crash FAKE_ANALYZER=fail_once").await;
    let t = decided(env.triage(&task).await);
    assert_eq!((t.status, t.priority), (QueueStatus::AwaitingGo, 1));
    let sessions = env.sessions(&task).await;
    assert_eq!(sessions.len(), 2);
    let first = sessions[0].result_error.as_deref().unwrap_or_default();
    assert!(first.contains("no structured result") && first.contains("Looks fine to me."), "{first}");
    assert_eq!(sessions[1].result_error, None);
    assert!(sessions.iter().all(|s| s.end_reason == Some(EndReason::Finished)));
    // The second prompt showed the first error, fenced.
    let log = std::fs::read_to_string(sessions[1].log_path.as_deref().unwrap()).unwrap();
    assert!(log.contains("Your previous answer could not be used"), "{log}");
    assert!(log.contains("source=\"why the previous answer was refused\""), "{log}");
    env.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_status_maps_to_its_queue_status() {
    let env = Env::sqlite().await;
    for (gid, mode, status, priority) in
        [("111", "skip", QueueStatus::Skip, 5), ("112", "for_review", QueueStatus::ForReview, 2)]
    {
        let task = env.task(gid, &format!("Task FAKE_ANALYZER={mode}")).await;
        let t = decided(env.triage(&task).await);
        assert_eq!((t.status, t.priority), (status, priority), "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_unusable_twice_fails_with_both_sessions_ended() {
    let env = Env::sqlite().await;
    let cases = [
        ("121", "prose", "no structured result"),
        ("122", "truncated", "no structured result"),
        ("123", "bad_status", "unknown variant `maybe`"),
        ("124", "bad_priority", "priority 9 is out of range"),
        ("125", "exit1", "exit code 1"),
    ];
    for (gid, mode, why) in cases {
        let task = env.task(gid, &format!("Task FAKE_ANALYZER={mode}")).await;
        let e = failed(env.triage(&task).await);
        assert!(e.contains(why), "{mode}: {e}");
        assert!(
            e.contains("analyzer schema") && e.contains("priority (an integer from 1 to 5)"),
            "{mode}: {e}"
        );
        let sessions = env.sessions(&task).await;
        assert_eq!(sessions.len(), 2, "{mode}: one retry");
        for s in &sessions {
            assert!(s.ended_at.is_some(), "{mode}: session {} ended", s.id);
            assert!(
                s.result_error.as_deref().is_some_and(|r| r.contains(why)),
                "{mode}: {:?}",
                s.result_error
            );
        }
    }
    env.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_agent_is_stopped_at_the_idle_timeout_without_a_retry() {
    let env = Env::sqlite().await;
    let task = env.task("131", "Task FAKE_ANALYZER=silent").await;
    let started = std::time::Instant::now();
    let e = failed(env.triage(&task).await);
    assert!(e.contains("analyzer.idle_timeout"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(20), "stopped at the idle timeout, not later");
    let sessions = env.sessions(&task).await;
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].end_reason, Some(EndReason::IdleTimeout));
    env.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_and_html_text_is_bounded_in_the_prompt_and_triaged() {
    let env = Env::sqlite().await;
    let html = "<html><body><script>alert(1)</script><p>Fix</p></body></html>\n";
    let description = format!("{html}{}", "x".repeat(1024 * 1024));
    let task = env.task("141", &description).await;
    let t = decided(env.triage(&task).await);
    assert_eq!(t.status, QueueStatus::AwaitingGo);
    let sessions = env.sessions(&task).await;
    let log = std::fs::read_to_string(sessions[0].log_path.as_deref().unwrap()).unwrap();
    assert!(log.contains("<script>alert(1)</script>"), "the HTML reaches the agent as text");
    // What the agent read: 64 KiB of the description and the template around it, not 1 MiB.
    let bytes: usize = log
        .lines()
        .find_map(|l| l.strip_prefix("read a prompt of ")?.strip_suffix(" bytes")?.parse().ok())
        .unwrap_or_else(|| panic!("the agent says what it read: {log}"));
    assert!((64 * 1024..80 * 1024).contains(&bytes), "the prompt was bounded: {bytes} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_daily_budget_blocks_before_any_session() {
    let env = Env::sqlite().await;
    let earlier = env.task("150", "Earlier").await;
    let s = env.store.begin_analysis_session(&earlier.task_gid, "command", "test-host").await.unwrap();
    let end = AnalysisEnd { reason: Some(EndReason::Finished), cost_usd: 2.0, ..Default::default() };
    env.store.end_analysis_session(s, &end).await.unwrap();
    let mut config = env.config();
    config.budget.per_day_usd = 2.0;
    let task = env.task("151", "Task").await;
    let (_stop, rx) = watch::channel(false);
    let why = blocked(env.triager(config).triage(&task, &[], rx).await);
    assert!(why.contains("budget.per_day_usd") && why.contains("$2.0000"), "{why}");
    assert!(env.sessions(&task).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_blocks_before_a_run_and_interrupts_one_under_way() {
    let env = Env::sqlite().await;
    let task = env.task("161", "Task FAKE_ANALYZER=silent").await;
    let (stop, rx) = watch::channel(true);
    blocked(env.triager(env.config()).triage(&task, &[], rx).await);
    assert!(env.sessions(&task).await.is_empty(), "nothing tried");

    let mut config = env.config();
    config.analyzer.idle_timeout = config::Duration::secs(60);
    let (stop2, rx) = watch::channel(false);
    let triager = env.triager(config);
    let run = tokio::spawn({
        let task = task.clone();
        async move { triager.triage(&task, &[], rx).await }
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop2.send(true).unwrap();
    let why = blocked(tokio::time::timeout(Duration::from_secs(20), run).await.unwrap().unwrap());
    assert!(why.contains("interrupted"), "{why}");
    let sessions = env.sessions(&task).await;
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].end_reason, Some(EndReason::Interrupted));
    env.assert_clean();
    drop(stop);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_without_a_known_repo_fails_naming_the_config_key() {
    let env = Env::sqlite().await;
    let gid = TaskGid::parse("171").unwrap();
    let new =
        NewTask { description: Some("Task".into()), repo: Some("elsewhere".into()), ..Default::default() };
    let task = env.store.upsert_task(&gid, &new, Actor::Cli).await.unwrap().0;
    let e = failed(env.triage(&task).await);
    assert!(e.contains("\"elsewhere\"") && e.contains("[repos"), "{e}");

    let mut config = env.config();
    config.repos.insert("other".into(), Repo::at("/nonexistent"));
    let plain = env.task("172", "Task").await;
    let (_stop, rx) = watch::channel(false);
    let e = failed(env.triager(config.clone()).triage(&plain, &[], rx).await);
    assert!(e.contains("names no repo") && e.contains("[repos"), "{e}");
    assert!(env.sessions(&plain).await.is_empty());

    // A configured repository that is not a git repository: the checkout fails, recorded on a session.
    config.repos.remove("app");
    let (_stop, rx) = watch::channel(false);
    let e = failed(env.triager(config).triage(&plain, &[], rx).await);
    assert!(e.contains("cannot check out repo other"), "{e}");
    let sessions = env.sessions(&plain).await;
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].end_reason, Some(EndReason::FailedToStart));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_are_stopped_only_when_they_are_the_recorded_process_and_their_sessions_end() {
    let env = Env::sqlite().await;
    let task = env.task("181", "Task").await;
    let gid = &task.task_gid;
    let config = env.config();
    let open = |pid: Option<i32>, start: Option<i64>| {
        let store = env.store.clone();
        let gid = gid.clone();
        async move {
            let id = store.begin_analysis_session(&gid, "command", "test-host").await.unwrap();
            if let Some(pid) = pid {
                store.set_analysis_process(id, pid, start, "/nonexistent/analyzer_x.md").await.unwrap();
            }
            id
        }
    };
    let sleep = |secs: &str| {
        use std::os::unix::process::CommandExt;
        Command::new("sleep").arg(secs).process_group(0).spawn().unwrap()
    };
    // A live orphan: the recorded process, which must be stopped.
    let mut live = sleep("600");
    let live_pid = live.id() as i32;
    let live_session = open(Some(live_pid), Some(pid_start_time(live_pid) as i64)).await;
    let scratch = env.data().join("analysis").join(format!("181-{live_session}"));
    std::fs::create_dir_all(scratch.parent().unwrap()).unwrap();
    let sha = executor::workspace::base_commit(&env.repo(), "main").unwrap().unwrap();
    executor::workspace::add_detached(&env.repo(), &scratch, &sha).unwrap();
    // A pid now used by another process (the start time differs): must be left alone.
    let mut other = sleep("600");
    let other_pid = other.id() as i32;
    let reused = open(Some(other_pid), Some(pid_start_time(other_pid) as i64 + 1)).await;
    // A dead one, and one whose process was never recorded.
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id() as i32;
    gone.wait().unwrap();
    let dead = open(Some(gone_pid), Some(1)).await;
    let never = open(None, None).await;
    // Another host's session is not this analyzer's to end.
    let elsewhere = env.store.begin_analysis_session(gid, "command", "other-host").await.unwrap();
    // Another analyzer of this machine (another data directory, the same database) still at work: its
    // process lives and holds the claim on its task. Left alone.
    let busy_owner = format!("test-host:{}", std::process::id());
    let busy =
        env.store.claim_for_analysis(&busy_owner, chrono::Duration::minutes(30), 3).await.unwrap().unwrap();
    let working = env.store.begin_analysis_session(&busy.task_gid, "command", &busy_owner).await.unwrap();
    // The same, dead: its process is gone, so its session is an orphan even though its claim lives on.
    let gone_owner = format!("test-host:{gone_pid}");
    let dead_analyzer = env.store.begin_analysis_session(gid, "command", &gone_owner).await.unwrap();

    let n = env.triager(config).stop_orphans().await.unwrap();
    assert_eq!(n, 5);
    assert!(live.wait().is_ok_and(|s| !s.success()), "the live orphan was stopped");
    assert!(other.try_wait().unwrap().is_none(), "a process that is not the recorded one is never signalled");
    let sessions = env.sessions(&task).await;
    let reason = |id: i64| sessions.iter().find(|s| s.id == id).and_then(|s| s.end_reason);
    assert_eq!(reason(live_session), Some(EndReason::Interrupted));
    assert_eq!(reason(reused), Some(EndReason::Crashed));
    assert_eq!(reason(dead), Some(EndReason::Crashed));
    assert_eq!(reason(never), Some(EndReason::NeverStarted));
    assert_eq!(reason(elsewhere), None);
    assert_eq!(reason(dead_analyzer), Some(EndReason::NeverStarted));
    let busy_sessions = env.sessions(&busy).await;
    assert!(
        busy_sessions.iter().any(|s| s.id == working && s.end_reason.is_none()),
        "a live analyzer's session"
    );
    assert!(!scratch.exists(), "the orphan's checkout was removed");
    let left = env.store.open_analysis_sessions("test-host").await.unwrap();
    assert_eq!(left.iter().map(|s| s.id).collect::<Vec<_>>(), vec![working]);
    other.kill().unwrap();
    other.wait().unwrap();
}

/// Claude Code (`claude.sh`) as the analyzer, through a wrapper that sets its knobs: it answers
/// `structured` and writes its arguments to `args`.
fn claude_config(env: &Env, structured: &str) -> (Config, PathBuf) {
    // The fake agent records its arguments where the sandbox lets it write (worker.sandbox_writable).
    let out = env.dir.path().join("agent-out");
    std::fs::create_dir_all(&out).unwrap();
    let args = out.join("claude-args");
    let wrapper = env.dir.path().join("claude-wrapper.sh");
    let claude = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/claude.sh");
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let script = format!(
        "#!/bin/sh\nFAKE_ARGS_FILE={} FAKE_STRUCTURED={} exec {} \"$@\"\n",
        quote(&args.display().to_string()),
        quote(structured),
        quote(&claude.display().to_string())
    );
    std::fs::write(&wrapper, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config = env.config();
    config.worker.agent = "claude".into();
    config.worker.claude.program = wrapper.display().to_string();
    config.worker.sandbox_writable = vec![out.display().to_string()];
    (config, args)
}

const GOOD: &str = r#"{"status":"for_review","priority":2,"complexity":"medium","feasibility":"medium","summary":"Needs a look.","acceptance_criteria":["a test covers it"]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_triages_read_only_with_the_schema_and_its_cost_is_recorded() {
    let env = Env::sqlite().await;
    let task = env.task("191", "Task").await;
    let (config, args) = claude_config(&env, GOOD);
    let (_stop, rx) = watch::channel(false);
    let t = decided(env.triager(config).triage(&task, &[], rx).await);
    assert_eq!((t.status, t.priority), (QueueStatus::ForReview, 2));
    assert_eq!(t.acceptance_criteria, vec!["a test covers it".to_string()]);
    let args: Vec<String> = std::fs::read_to_string(&args).unwrap().lines().map(String::from).collect();
    let after = |flag: &str| args.iter().position(|a| a == flag).map(|i| args[i + 1].clone());
    assert_eq!(after("--permission-mode").as_deref(), Some("plan"), "{args:?}");
    assert_eq!(after("--max-turns").as_deref(), Some("40"), "{args:?}");
    assert!(after("--json-schema").is_some_and(|s| s.contains("acceptance_criteria")), "{args:?}");
    assert!(after("--max-budget-usd").is_some(), "{args:?}");
    let s = &env.sessions(&task).await[0];
    assert_eq!((s.session_id.as_deref(), s.cost_usd), (Some("sess-1234-abcd"), 0.1234));
    assert!(s.input_tokens > 0 && s.output_tokens > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_over_its_budget_blocks_on_the_day_cap_and_fails_on_the_run_cap() {
    let env = Env::sqlite().await;
    let task = env.task("192", "Task").await;
    let (mut config, _) = claude_config(&env, GOOD);
    config.budget.per_day_usd = 0.05; // the agent reports $0.1234
    let (_stop, rx) = watch::channel(false);
    let why = blocked(env.triager(config.clone()).triage(&task, &[], rx).await);
    assert!(why.contains("budget.per_day_usd"), "{why}");
    assert_eq!(env.sessions(&task).await[0].end_reason, Some(EndReason::BudgetExceeded));

    let other = env.task("193", "Task").await;
    config.budget.per_day_usd = 50.0;
    config.budget.per_run_usd = 0.05;
    let (_stop, rx) = watch::channel(false);
    let e = failed(env.triager(config).triage(&other, &[], rx).await);
    assert!(e.contains("budget.per_run_usd"), "{e}");
    assert_eq!(env.sessions(&other).await.len(), 1, "a budget stop is not retried");
}

/// Item 5: a `command` agent used for triage is held read-only by the kernel. It tries to append to the
/// main repository's README, plant a file, a hook, a config setting and a branch there, and write a file
/// in /tmp: each is refused (EACCES in its output, so in the work log), its commit in the scratch fails
/// (the scratch's git directory lives in the main repository), and the main repository is byte for byte
/// what it was.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_command_agent_in_triage_cannot_write_outside_its_scratch() {
    use executor::worker::sandbox::{Support, support};
    if let Support::Missing(why) = support() {
        eprintln!("skipped: {why}");
        return;
    }
    let env = Env::sqlite().await;
    std::fs::write(env.repo().join("README.md"), "# The user's project\n").unwrap();
    for args in
        [&["add", "README.md"][..], &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "readme"]]
    {
        assert!(Command::new("git").args(args).current_dir(env.repo()).status().unwrap().success());
    }
    let before = files(&env.repo());
    let outside = std::env::temp_dir().join(format!("outside-triage-{}", std::process::id()));
    let mut config = env.config();
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/escape.sh");
    config.worker.command.argv = vec![agent.display().to_string()];
    let task = env.task("501", &format!("Look around.\nFAKE_OUTSIDE={}", outside.display())).await;
    let (_stop, rx) = watch::channel(false);
    let t = decided(env.triager(config).triage(&task, &[], rx).await);
    assert_eq!(t.summary, "Tried to escape.");

    let s = &env.sessions(&task).await[0];
    let log = std::fs::read_to_string(s.log_path.clone().unwrap()).unwrap();
    for name in ["main-readme", "main-file", "main-hook", "main-config", "main-branch", "outside"] {
        assert!(log.contains(&format!("REFUSED {name}")), "{name} was not refused:\n{log}");
    }
    assert!(log.contains("Permission denied"), "{log}");
    assert!(log.contains("COMMIT FAILED"), "the scratch's .git is the main repository's: {log}");
    assert!(!outside.exists());
    env.assert_clean();
    assert_eq!(files(&env.repo()), before, "the main repository changed");
}

/// Every file under `dir` with its bytes; empty directories left by a removed scratch are not files.
fn files(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    walk(dir).into_iter().filter(|p| p.is_file()).map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect()
}
