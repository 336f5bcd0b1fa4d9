//! The documented command-agent contract, proven by its example: `examples/command-agent.sh`, written
//! from the README alone, triages a task and takes it to a complete pull request through a comment.

mod runner_support;

use std::path::Path;
use std::time::{Duration, Instant};

use executor::domain::{QueueStatus, RunState, TaskGid};
use executor::store::RunFilter;
use runner_support::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_agent_triages_and_completes_a_run() {
    let env = Env::new(&[]);
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/command-agent.sh");
    let pipeline = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agents/pipeline.sh");
    env.edit_config(&pipeline.display().to_string(), &example.display().to_string());
    // CI waits until the test opens its gate, so the comment below lands while the pull request is open.
    let gate = env.path().join("ci-gate");
    env.edit_config(
        "ci_command = [\"sh\", \"-c\", \"sleep 2; test -f ci-fixed\"]",
        &format!(
            "ci_command = [\"sh\", \"-c\", \"while [ ! -f '{}' ]; do sleep 0.2; done\"]",
            gate.display()
        ),
    );
    env.run(&["queue", "add", "--gid", "E-1", "--description", "Write down what you do"]);
    env.run(&["analyzer"]);
    let store = env.store().await;
    let gid = TaskGid::parse("E-1").unwrap();
    let task = store.task(&gid).await.unwrap();
    assert_eq!(task.status, QueueStatus::AwaitingGo);
    assert_eq!(task.acceptance_criteria, vec!["the change is committed".to_string()]);
    env.run(&["approve", "E-1"]);
    let (mut commented, deadline) = (false, Instant::now() + Duration::from_secs(120));
    loop {
        // A pass at a time: `--once` stops at the first wait (CI running), where the human comments.
        env.run(&["runner", "--once"]);
        let run =
            store.list_runs(&RunFilter { task_gid: Some(gid.clone()), ..Default::default() }).await.unwrap();
        let run = &run[0];
        if run.state == RunState::Complete {
            break;
        }
        assert_ne!(run.state, RunState::Abandoned, "{run:?}");
        if run.state == RunState::Pr && !commented {
            env.run(&["comment", &run.id.to_string(), "Please note the date too.", "--author", "alex"]);
            std::fs::write(&gate, "open").unwrap();
            commented = true;
        }
        assert!(Instant::now() < deadline, "no completion in 2 minutes: {run:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let log = std::process::Command::new("git")
        .args(["log", "--all", "--format=%s"])
        .current_dir(env.repo())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("queued for task E-1") && log.contains("Address comment"), "{log}");
    let shown = String::from_utf8_lossy(&env.run(&["runs", "show", "1"]).stdout).to_string();
    assert!(shown.contains("[ACKNOWLEDGED: addressed in a commit]"), "{shown}");
}
