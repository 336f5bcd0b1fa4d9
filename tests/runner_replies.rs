//! Replies without reaching back: a `fix_comments` agent that has no network, no `executor` on its PATH
//! and (where the kernel has Landlock) writes only its own directories answers every trusted comment by
//! handing its replies back — one through the file `EXECUTOR_REPLIES` names, the others in its final
//! JSON line — and the runner posts each in its thread, redacted, exactly once; a reply to a comment the
//! prompt did not list is refused. Also when the runner is killed after the agent wrote its replies.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use executor::domain::{Run, RunState, TaskGid, WorkerKind};
use executor::store::{EventFilter, RunFilter, Store};
use executor::worker::sandbox::{self, Support};

mod common;
mod runner_support;
use runner_support::{Env, kill_when_flagged};

const SECRET: &str = "tok-3f9a8b7c6d5e";

/// The pipeline with the shut-off agent, contained by Landlock where the kernel has it.
fn shut_off_env() -> Env {
    let env = Env::new(&["FAKE_SECRET", "FAKE_KILL_RUNNER"]);
    let pipeline = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/pipeline.sh");
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/sandboxed_replies.sh");
    env.edit_config(&pipeline.display().to_string(), &agent.display().to_string());
    match sandbox::support() {
        Support::Landlock { .. } => {
            env.edit_config("agent = \"command\"", "agent = \"command\"\nsandbox = \"landlock\"")
        }
        Support::Missing(why) => eprintln!("note: the agent runs without Landlock here: {why}"),
    }
    env
}

/// A runner pass: `--once` stops at the first wait (CI running), where alex comments.
fn runner(env: &Env, kill_flag: Option<&Path>) -> Output {
    let mut cmd = env.command(&["runner", "--once"]);
    cmd.env("FAKE_SECRET", SECRET).stdin(Stdio::null());
    let Some(flag) = kill_flag else { return cmd.output().unwrap() };
    cmd.env("FAKE_KILL_RUNNER", flag).stdout(Stdio::null()).stderr(Stdio::null());
    if flag.exists() {
        return cmd.output().unwrap();
    }
    let status = kill_when_flagged(&mut cmd, flag);
    Output { status, stdout: Vec::new(), stderr: Vec::new() }
}

async fn run_of(store: &Store, gid: &str) -> Run {
    let gid = TaskGid::parse(gid).unwrap();
    store.list_runs(&RunFilter { task_gid: Some(gid), ..Default::default() }).await.unwrap().remove(0)
}

/// Drives the run to completion, commenting twice as alex (a conversation comment, and one on a line)
/// once the pull request is open. Returns the run and alex's two comment ids.
async fn drive(env: &Env, kill_flag: Option<&Path>) -> (Run, Vec<i64>) {
    env.queue_approved("77");
    let store = env.store().await;
    let mut asked = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        let out = runner(env, kill_flag);
        let run = run_of(&store, "77").await;
        if kill_flag.is_none() {
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        if run.state == RunState::Complete {
            return (run, asked);
        }
        assert_ne!(run.state, RunState::Abandoned, "{:?}", store.run_memory(run.id).await.unwrap());
        if run.state == RunState::Pr && asked.is_empty() {
            let id = run.id.to_string();
            env.run(&[
                "comment",
                &id,
                "Please also write down what you did, in NOTES.md.",
                "--author",
                "alex",
            ]);
            env.run(&[
                "comment",
                &id,
                "Why one line?",
                "--author",
                "alex",
                "--path",
                "feature.txt",
                "--line",
                "1",
            ]);
            let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
            asked = store
                .local_comments(pr.id)
                .await
                .unwrap()
                .iter()
                .filter(|c| c.author == "alex")
                .map(|c| c.id)
                .collect();
            assert_eq!(asked.len(), 2);
        }
        assert!(
            Instant::now() < deadline,
            "stuck in {}: {:?}",
            run.state,
            store.run_memory(run.id).await.unwrap()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Each of alex's comments has exactly one reply, the agent's, in its thread; nothing else the agent
/// said was posted; the secret never was.
async fn assert_answered_once(env: &Env, run: &Run, asked: &[i64]) {
    let store = env.store().await;
    let sessions = store.worker_sessions(run.id).await.unwrap();
    let fixes: Vec<_> = sessions.iter().filter(|s| s.kind == WorkerKind::FixComments).collect();
    assert_eq!(fixes.len(), 1, "one fix_comments worker answered both: {sessions:?}");
    let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
    let comments = store.local_comments(pr.id).await.unwrap();
    for id in asked {
        let replies: Vec<_> = comments.iter().filter(|c| c.in_reply_to == Some(*id)).collect();
        assert_eq!(replies.len(), 1, "comment {id} answered once: {comments:#?}");
        assert!(replies[0].by_agent && replies[0].body.starts_with("[ACKNOWLEDGED:"), "{:?}", replies[0]);
    }
    let bodies: Vec<&str> = comments.iter().filter(|c| c.by_agent).map(|c| c.body.as_str()).collect();
    assert!(bodies.iter().any(|b| b.ends_with("(from the file)")), "{bodies:?}");
    let from_answer = bodies.iter().find(|b| b.contains("(from the answer;")).expect("the answer's reply");
    assert!(from_answer.contains("[REDACTED]") && !from_answer.contains(SECRET), "{from_answer}");
    assert!(
        !bodies.iter().any(|b| b.contains("nobody listed")),
        "an unlisted comment got no reply: {bodies:?}"
    );
    assert_eq!(comments.iter().filter(|c| c.author == "agent").count(), 2, "{comments:#?}");
    // The refusal is on the run's history, without the reply's text.
    let events = store.events(&EventFilter { run_id: Some(run.id), ..Default::default() }).await.unwrap();
    let refused =
        events.iter().filter_map(|e| e.reason.as_deref()).find(|r| r.contains("replies not posted"));
    let refused = refused.expect("the refused reply is noted");
    assert!(refused.contains("\"999999\" was not listed") && !refused.contains("nobody listed"), "{refused}");
    // The outbox: every offered comment answered and posted.
    let rows = store.agent_replies(run.id).await.unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r.posted_comment_id.is_some()), "{rows:?}");
    // The agent really was shut off from executor.
    let log = std::fs::read_to_string(fixes[0].log_path.as_deref().unwrap()).unwrap();
    assert!(log.contains("NO EXECUTOR ON PATH"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shut_off_agent_answers_each_trusted_comment_in_its_thread_once() {
    let env = shut_off_env();
    let (run, asked) = drive(&env, None).await;
    assert_answered_once(&env, &run, &asked).await;
    let store = env.store().await;
    let fix =
        store.worker_sessions(run.id).await.unwrap().into_iter().find(|s| s.kind == WorkerKind::FixComments);
    let log = std::fs::read_to_string(fix.unwrap().log_path.unwrap()).unwrap();
    // Root can give the contained agent a network namespace of its own (Landlock forbids it the user
    // namespace an unprivileged one needs).
    if Command::new("unshare").args(["-n", "true"]).status().is_ok_and(|s| s.success()) {
        assert!(log.contains("NO NETWORK"), "the agent ran without network: {log}");
    } else {
        eprintln!("note: no network namespace for the agent here; it ran with the host's network");
    }
}

/// The runner dies after the agent wrote its replies and before anything recorded or posted them: the
/// next runner collects the worker, records its replies and posts each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_written_before_the_runner_died_are_posted_once() {
    let env = shut_off_env();
    let flags = env.path().join("flags");
    std::fs::create_dir(&flags).unwrap();
    env.edit_config(
        "kill_grace = \"1s\"",
        &format!("kill_grace = \"1s\"\nsandbox_writable = [{:?}]", flags.display().to_string()),
    );
    let flag = flags.join("killed");
    let (run, asked) = drive(&env, Some(&flag)).await;
    assert!(flag.exists(), "the agent killed the runner");
    assert_answered_once(&env, &run, &asked).await;
}

/// The issue's own case, with the real Codex CLI in its default sandbox (`workspace-write`: no network,
/// the data directory not writable, `bash -lc` resetting PATH) under Landlock where the kernel has it:
/// its `fix_comments` worker answers each trusted comment in its thread once, and the run completes.
/// Costs money and needs the network: `cargo test --test runner_replies -- --ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "drives the real codex CLI (costs money): cargo test --test runner_replies -- --ignored"]
async fn real_codex_in_its_sandbox_answers_each_trusted_comment_once() {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join("codex").is_file()));
    assert!(on_path, "no codex on PATH: install it to run this test");
    let env = Env::new(&["OPENAI_API_KEY", "CODEX_HOME"]);
    env.edit_config("agent = \"command\"", "agent = \"codex\"");
    env.edit_config("idle_timeout = \"20s\"", "idle_timeout = \"600s\"");
    env.edit_config(
        "ci_command = [\"sh\", \"-c\", \"sleep 2; test -f ci-fixed\"]",
        "ci_command = [\"true\"]",
    );
    let (run, asked) = drive(&env, None).await;
    let store = env.store().await;
    let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
    let comments = store.local_comments(pr.id).await.unwrap();
    for id in &asked {
        let replies: Vec<_> = comments.iter().filter(|c| c.in_reply_to == Some(*id)).collect();
        assert_eq!(replies.len(), 1, "comment {id} answered once: {comments:#?}");
        assert!(replies[0].by_agent && replies[0].body.starts_with("[ACKNOWLEDGED:"), "{:?}", replies[0]);
    }
    let rows = store.agent_replies(run.id).await.unwrap();
    assert!(rows.iter().filter(|r| r.body.is_some()).all(|r| r.posted_comment_id.is_some()), "{rows:?}");
}
