//! Issue 37, item 4: a reviewer who keeps commenting. Each `fix_comments` worker answers the comment it
//! was given, and while it works alex comments again, four rounds in all: the run goes on through every
//! round (the decision says which round of whose comments it is on) and completes, where three workers
//! in a row used to count as stuck and the run was abandoned. The real binary, the local forge, the
//! `gated_comments.sh` fake agent (which answers listed comments in its result's `replies`).

use std::fs::OpenOptions;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use executor::domain::{RunState, WorkerKind};
use executor::store::RunFilter;

mod common;
mod runner_support;
use runner_support::Env;

const ROUNDS: usize = 4;

/// Posts a comment as alex on the run's pull request; returns its id.
fn alex_comments(env: &Env, run_id: i64, text: &str) -> String {
    let out = env.run(&["comment", &run_id.to_string(), text, "--author", "alex", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_who_keeps_commenting_gets_every_round_answered_and_the_run_completes() {
    let env = Env::new(&["FAKE_COMMENTS_GATE"]);
    env.edit_config("pipeline.sh\"]", "gated_comments.sh\"]");
    let gates = env.path().join("gates");
    std::fs::create_dir(&gates).unwrap();
    let log = env.path().join("runner.log");
    env.queue_approved("c1");
    let store = env.store().await;
    // As cron would: the runner exits whenever it is idle (CI running), and is started again.
    let start = || -> Child {
        let log = OpenOptions::new().create(true).append(true).open(&log).unwrap();
        env.command(&["runner"])
            .env("FAKE_COMMENTS_GATE", &gates)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let mut runner = start();
    let mut asked: Vec<String> = Vec::new();
    let mut released: Vec<i64> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(240);
    let run = loop {
        if runner.try_wait().unwrap().is_some() {
            runner = start();
        }
        let Some(run) = store.list_runs(&RunFilter::default()).await.unwrap().into_iter().next() else {
            assert!(Instant::now() < deadline, "the runner never made a run");
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        if run.state == RunState::Complete {
            break run;
        }
        assert_ne!(
            run.state,
            RunState::Abandoned,
            "a reviewer's stream of comments abandoned the run: {:?}",
            store.run_memory(run.id).await.unwrap().last_decision
        );
        if run.state == RunState::Pr && asked.is_empty() {
            asked.push(alex_comments(&env, run.id, "Round 1: please name the file better."));
        }
        // A fix_comments worker waits at its gate: alex comments again (until the last round), then
        // the worker may answer the comment it was given.
        let live = store.live_worker_sessions().await.unwrap();
        if let Some(s) = live.iter().find(|s| s.kind == WorkerKind::FixComments && !released.contains(&s.id))
        {
            // Its offer is recorded just after its session opens, before its agent may run.
            let offered = store.offered_comments(s.id).await.unwrap();
            if offered.is_empty() {
                assert!(Instant::now() < deadline, "fix_comments worker {} was offered nothing", s.id);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            assert_eq!(offered, [asked.last().unwrap().clone()], "each round is given its new comment");
            if asked.len() < ROUNDS {
                let text = format!("Round {}: one more thing.", asked.len() + 1);
                asked.push(alex_comments(&env, run.id, &text));
            }
            for id in &offered {
                std::fs::write(gates.join(format!("go-{id}")), "").unwrap();
            }
            released.push(s.id);
        }
        assert!(
            Instant::now() < deadline,
            "stuck in {} after {} round(s): {:?}",
            run.state,
            asked.len(),
            store.run_memory(run.id).await.unwrap().last_decision
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = runner.kill();
    let _ = runner.wait();

    // Four rounds, four workers, each comment answered once, in its thread.
    let sessions = store.worker_sessions(run.id).await.unwrap();
    let fixes = sessions.iter().filter(|s| s.kind == WorkerKind::FixComments).count();
    assert_eq!((asked.len(), fixes), (ROUNDS, ROUNDS), "{sessions:?}");
    let pr = store.local_pr_for_run(run.id).await.unwrap().unwrap();
    let comments = store.local_comments(pr.id).await.unwrap();
    for id in &asked {
        let replies = comments.iter().filter(|c| c.in_reply_to.map(|r| r.to_string()).as_ref() == Some(id));
        assert_eq!(replies.filter(|c| c.by_agent).count(), 1, "comment {id}: {comments:#?}");
    }
    // The decision said why the run went on.
    let said = std::fs::read_to_string(&log).unwrap();
    let why =
        "the 4th round of comments by alex (the 3 before were answered). Starting a fix_comments worker.";
    assert!(said.contains(why), "{}", tail(&said));
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
