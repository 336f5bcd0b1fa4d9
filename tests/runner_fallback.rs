//! Issue 34 item 4: another agent when one fails. A run whose first agent fails turns to the next one of
//! `worker.fallback` and lands, through the real binary on the local forge; the run's sessions say
//! which agent did what, and its decision says why it turned.

use std::time::{Duration, Instant};

use executor::domain::{EndReason, RunState, TaskGid, WorkerKind};
use executor::store::{EventFilter, RunFilter};

mod common;
mod runner_support;
use runner_support::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_agent_fails_turns_to_the_fallback_and_completes() {
    let env = Env::new(&[]);
    // Codex "installed" as a program that fails at once; the command agent (the pipeline fake) next.
    env.edit_config("agent = \"command\"", "agent = \"codex\"\nfallback = [\"command\"]");
    env.edit_config("sleep 2; test -f ci-fixed", "true");
    env.append_config("\n[worker.codex]\nprogram = \"/bin/false\"\n");
    env.queue_approved("77");
    let store = env.store().await;
    let gid = TaskGid::parse("77").unwrap();
    let mut decisions = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let run = loop {
        env.run(&["runner", "--once"]);
        let run = store
            .list_runs(&RunFilter { task_gid: Some(gid.clone()), ..Default::default() })
            .await
            .unwrap()
            .remove(0);
        decisions.extend(store.run_memory(run.id).await.unwrap().last_decision);
        if run.state == RunState::Complete || Instant::now() > deadline {
            break run;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    let sessions = store.worker_sessions(run.id).await.unwrap();
    let who: Vec<(WorkerKind, &str, Option<EndReason>)> =
        sessions.iter().map(|s| (s.kind, s.agent.as_str(), s.end_reason)).collect();
    assert_eq!(run.state, RunState::Complete, "{who:?}\n{decisions:#?}");
    // It exits 1 without a result: a crash, which counts against the run like any failure.
    assert_eq!(who[0], (WorkerKind::Queued, "codex", Some(EndReason::Crashed)), "{who:?}");
    assert_eq!(
        (who[1].0, who[1].1),
        (WorkerKind::InProgress, "command"),
        "the next attempt, the next agent: {who:?}"
    );
    assert!(who[1..].iter().all(|(_, agent, _)| *agent == "command"), "a working agent is kept: {who:?}");
    let notes: Vec<String> = store
        .events(&EventFilter { run_id: Some(run.id), ..Default::default() })
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "note")
        .filter_map(|e| e.reason)
        .collect();
    let turned = "with command: the last queued worker (codex) failed";
    assert_eq!(
        notes.iter().filter(|n| n.contains(turned)).count(),
        1,
        "said once, in the history: {notes:#?}"
    );

    // Issue 34 item 5: the human merges; the runner's next look records when, and insights credit the
    // merged pull request to the agent whose code it holds, with the failed attempt's cost counted.
    let branch = run.branch_name.clone().expect("the run's branch");
    let merge = ["-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-ff", "-m", "merge"];
    runner_support::git(&env.repo(), &[&merge[..], &[branch.as_str()]].concat());
    env.run(&["runner", "--once"]);
    let out = env.run(&["insights", "--json"]);
    let insights: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let landed = insights["landed"].as_array().expect("landed rows");
    let all = &landed[0];
    assert_eq!((all["merged"].as_u64(), all["abandoned"].as_u64()), (Some(1), Some(0)), "{landed:#?}");
    assert_eq!(all["merge_rate"].as_f64(), Some(1.0));
    assert!(all["p50_hours_to_merge"].as_f64().is_some_and(|h| h >= 0.0), "{all}");
    let by_agent: Vec<(&str, &str)> = landed[1..]
        .iter()
        .map(|l| (l["repo"].as_str().unwrap_or(""), l["agent"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(by_agent, [("(default)", "command")], "the agent whose code landed: {landed:#?}");
    let table = String::from_utf8_lossy(&env.run(&["insights"]).stdout).to_string();
    assert!(table.contains("(all)") && table.contains("100%"), "{table}");

    // The human reverts the merge on the base branch: the runner's next start finds it there (the local
    // forge's base is the repository's own branch), records it once, and insights count it reverted.
    let revert = ["-c", "user.name=t", "-c", "user.email=t@t", "revert", "--no-edit", "-m", "1", "HEAD"];
    runner_support::git(&env.repo(), &revert);
    env.run(&["runner", "--once"]);
    env.run(&["runner", "--once"]);
    let said: Vec<_> = store
        .events(&EventFilter { run_id: Some(run.id), ..Default::default() })
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| e.reason.filter(|r| r.contains("pull request was reverted on main")))
        .collect();
    assert_eq!(said.len(), 1, "found once: {said:#?}");
    let out = env.run(&["insights", "--json"]);
    let insights: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let all = &insights["landed"][0];
    assert_eq!((all["reverted"].as_u64(), all["revert_rate"].as_f64()), (Some(1), Some(1.0)), "{all}");
    let kinds = insights["slices"].as_array().unwrap().iter().find(|s| s["by"] == "worker_kind").unwrap();
    assert!(kinds["rows"].as_array().unwrap().iter().any(|r| r["name"] == "queued"), "{kinds}");
    assert_eq!(insights["expensive_failures"]["runs"].as_array().map(Vec::len), Some(0));
    let text = String::from_utf8_lossy(&env.run(&["insights"]).stdout).to_string();
    assert!(text.contains("By worker kind:") && text.contains("By label:"), "{text}");
    assert!(text.contains("Runs given up after spending more than $5.00:\nnone"), "{text}");
}
