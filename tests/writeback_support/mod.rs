//! Shared by the write-back tests that drive the real binary (`runner_support::Env`) against a fake
//! tracker: the binary run with the tracker's credential, the runner killed while the tracker holds the
//! answer to a write it applied, the run driven to complete, and `doctor`'s check of the source.
//! A test that includes it declares `mod runner_support;` as well.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use executor::domain::{RunState, TaskGid, WritebackEvent, WritebackStatus};
use executor::store::{RunFilter, Store, Writeback};

use crate::runner_support::{Env, succeeded};

/// A tracker's credential as the binary reads it: the variable a source's `token_env` names, and its
/// value. One value per test file, so each call says which tracker it speaks for and nothing more.
#[derive(Clone, Copy, Debug)]
pub struct Credential {
    pub var: &'static str,
    pub value: &'static str,
}

/// `executor ARGS` with the credential set and nothing on stdin, not yet started: for the callers that
/// spawn it (a runner to kill) or read its output whatever its exit.
pub fn command(env: &Env, credential: Credential, args: &[&str]) -> Command {
    let mut cmd = env.command(args);
    cmd.env(credential.var, credential.value).stdin(Stdio::null());
    cmd
}

/// Runs `executor ARGS` to its end and asserts it succeeded, printing its output if not. It waits off
/// the runtime's threads: the fake tracker answers on them, and a blocking wait here would starve it.
pub async fn run(env: &Env, credential: Credential, args: &[&str]) -> Output {
    let mut cmd = command(env, credential, args);
    let args = args.join(" ");
    tokio::task::spawn_blocking(move || succeeded(cmd.output().unwrap(), &args)).await.unwrap()
}

/// The state of task `gid`'s run, or `None` while it has none; a gid string, as the trackers name it.
pub async fn run_state(store: &Store, gid: &str) -> Option<RunState> {
    let filter = RunFilter { task_gid: Some(TaskGid::parse(gid).unwrap()), ..Default::default() };
    store.list_runs(&filter).await.unwrap().first().map(|r| r.state)
}

/// Starts runners until one has made its first write to the tracker (`written` says so, asking the
/// fake), and kills that one (SIGKILL) while the tracker holds the answer. A runner that ends before
/// writing is started again, as cron would, for up to two minutes.
pub async fn kill_the_runner_once_written(
    env: &Env,
    credential: Credential,
    store: &Store,
    written: impl Fn() -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut runner = command(env, credential, &["runner"]);
        let mut child = runner.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let killed = loop {
            if written() {
                // The write is in the tracker; the runner waits for the answer: kill it there.
                child.kill().unwrap();
                child.wait().unwrap();
                break true;
            }
            if child.try_wait().unwrap().is_some() {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        if killed {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no write-back began: {:?}",
            store.writebacks(None).await.unwrap()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs the runner, as cron would, until task `gid`'s run is complete (for up to three minutes), then
/// once more if a message is still pending: the completion's message is delivered on the tick after it
/// was recorded, if not in its own.
pub async fn run_until_complete(env: &Env, credential: Credential, store: &Store, gid: &str) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while run_state(store, gid).await != Some(RunState::Complete) {
        assert!(Instant::now() < deadline, "never complete: {:?}", run_state(store, gid).await);
        run(env, credential, &["runner"]).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    if store.writebacks(Some(gid)).await.unwrap().iter().any(|w| w.status == WritebackStatus::Pending) {
        run(env, credential, &["runner"]).await;
    }
}

/// Asserts what a tracker shows once task `gid`'s run is complete through a killed runner: exactly two
/// messages (`comments`, as the fake holds them), in order, the pull request opened and then ready for
/// review, each carrying its write-back's marker; both delivered, the first on its second attempt (the
/// retry found the killed attempt's write); no forge @mention and no credential in them; and
/// `executor status` counting the two. Returns the write-backs, for what a tracker adds to check.
pub async fn assert_opened_then_ready_once(
    env: &Env,
    credential: Credential,
    store: &Store,
    gid: &str,
    comments: &[String],
) -> Vec<Writeback> {
    let rows = store.writebacks(Some(gid)).await.unwrap();
    let events: Vec<(WritebackEvent, WritebackStatus)> = rows.iter().map(|w| (w.event, w.status)).collect();
    assert_eq!(
        events,
        [
            (WritebackEvent::PrOpened, WritebackStatus::Delivered),
            (WritebackEvent::Complete, WritebackStatus::Delivered)
        ]
    );
    assert_eq!(rows[0].attempts, 2, "the retry found the killed attempt's comment");
    assert_eq!(comments.len(), 2, "{comments:#?}");
    assert!(comments[0].starts_with("executor opened a pull request for this task: "), "{}", comments[0]);
    assert!(comments[0].contains(&format!("[executor {}]", rows[0].marker)));
    assert!(comments[1].starts_with("The pull request is ready for your review: "), "{}", comments[1]);
    assert!(comments[1].contains(&format!("[executor {}]", rows[1].marker)));
    assert!(!comments.iter().any(|c| c.contains("@alex")), "the forge's @mention is not the tracker's");
    assert!(!comments.iter().any(|c| c.contains(credential.value)));

    let out = run(env, credential, &["status"]).await;
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(status.contains("write-back:     2 delivered (executor writeback)"), "{status}");
    rows
}

/// `executor doctor --json`'s check named `name` (e.g. `writeback inbox`); fails showing the whole
/// report when there is none. Its exit is not checked: the report says what passed.
pub async fn doctor_check(env: &Env, credential: Credential, name: &str) -> serde_json::Value {
    let mut doctor = command(env, credential, &["doctor", "--json"]);
    let out = tokio::task::spawn_blocking(move || doctor.output().unwrap()).await.unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = report["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned();
    check.unwrap_or_else(|| panic!("{report:#}"))
}

/// A human merges task `gid`'s pull request on the local forge.
pub async fn merge_the_pull_request(store: &Store, gid: &str) {
    let filter = RunFilter { task_gid: Some(TaskGid::parse(gid).unwrap()), ..Default::default() };
    let run_id = store.list_runs(&filter).await.unwrap()[0].id;
    let pr = store.local_pr_for_run(run_id).await.unwrap().unwrap();
    store.set_local_pr_state(pr.id, "merged", pr.draft).await.unwrap();
}
