//! Issue 31: a prompt-injected agent that knows executor's source, run by the real runner under the
//! default `worker.sandbox = "auto"` (Landlock here). `tests/fake_agents/attacker.sh` tries to read
//! executor's config, database, another run's work log and a hidden key; to write the database and the
//! agent CLIs' real settings; to list the other worktrees, reach a loopback port that is not its model
//! API and signal the runner — each refused by the kernel and visible in the work log — while its model
//! API answers and its commit works. The hostile `ci.sh` it commits then runs as the local forge's CI,
//! contained too: it cannot write `$HOME`, see a secret kept from agents, or forge its exit status.
//! Linux with Landlock only; skipped with a note elsewhere.

#![cfg(target_os = "linux")]

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use executor::domain::{RunState, TaskGid};
use executor::store::RunFilter;
use executor::worker::sandbox::{self, Support};

mod runner_support;
use runner_support::{Env, succeeded};

const SECRET: &str = "ci-secret-4f1d9a";

fn landlock_abi() -> Option<i32> {
    match sandbox::support() {
        Support::Landlock { abi } => Some(abi),
        Support::Missing(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_injected_agent_and_its_ci_reach_nothing_outside_their_sandbox() {
    let Some(abi) = landlock_abi() else { return };
    let env = Env::new(&[
        "FAKE_OTHER_LOG",
        "FAKE_DASHBOARD_PORT",
        "FAKE_MODEL_PORT",
        "FAKE_DATA",
        "ANTHROPIC_BASE_URL",
    ]);
    let attacker = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake_agents/attacker.sh");
    env.edit_config("tests/fake_agents/pipeline.sh", "tests/fake_agents/attacker.sh");
    env.edit_config(r#"["sh", "-c", "sleep 2; test -f ci-fixed"]"#, r#"["sh", "ci.sh"]"#);
    env.edit_config("[worker.command]", "redact_env = [\"CI_SECRET\"]\n[worker.command]");
    assert!(std::path::Path::new(attacker).is_file());

    let home = env.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    let data = env.path().join("data");
    let other_log = data.join("logs/other-task/queued_2026-01-01-00-00-00.md");
    std::fs::create_dir_all(other_log.parent().unwrap()).unwrap();
    std::fs::write(&other_log, "another run's log").unwrap();
    let dashboard = TcpListener::bind("127.0.0.1:0").unwrap();
    let model = TcpListener::bind("127.0.0.1:0").unwrap();
    for l in [&dashboard, &model] {
        l.set_nonblocking(true).unwrap();
    }
    let port = |l: &TcpListener| l.local_addr().unwrap().port().to_string();

    env.queue_approved("1301");
    let store = env.store().await;
    let gid = TaskGid::parse("1301").unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let check = loop {
        let out = env
            .command(&["runner", "--once"])
            .env("HOME", &home)
            .env("FAKE_OTHER_LOG", &other_log)
            .env("FAKE_DASHBOARD_PORT", port(&dashboard))
            .env("FAKE_MODEL_PORT", port(&model))
            .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{}", port(&model)))
            .env("FAKE_DATA", &data)
            .env("CI_SECRET", SECRET)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        succeeded(out, "runner --once");
        let runs =
            store.list_runs(&RunFilter { task_gid: Some(gid.clone()), ..Default::default() }).await.unwrap();
        let run = &runs[0];
        assert_ne!(run.state, RunState::Abandoned, "{run:?}");
        if let Some(pr) = store.local_pr_for_run(run.id).await.unwrap() {
            let checks = store.local_checks(pr.id).await.unwrap();
            if let Some(done) = checks.into_iter().find(|c| c.status != "pending") {
                break done;
            }
        }
        assert!(Instant::now() < deadline, "CI never finished");
        std::thread::sleep(Duration::from_millis(300));
    };

    let log = String::from_utf8_lossy(&env.run(&["logs", "1301", "--kind", "queued"]).stdout).into_owned();
    let mut expected = vec![
        "read-config",
        "read-database",
        "read-other-log",
        "read-ssh-key",
        "write-database",
        "write-claude-settings",
        "write-codex-config",
        "list-worktrees",
    ];
    if abi >= sandbox::NET_ABI {
        expected.push("connect-dashboard");
    }
    if abi >= sandbox::SCOPE_ABI {
        expected.push("signal-runner");
    }
    for name in expected {
        assert!(log.contains(&format!("REFUSED {name}")), "{name} was not refused:\n{log}");
    }
    assert!(!log.contains("DONE read") && !log.contains("DONE write"), "{log}");
    assert!(log.contains("DONE model-api"), "the model API stays reachable:\n{log}");
    assert!(log.contains("COMMIT 0"), "the agent's commit works:\n{log}");
    assert!(!home.join(".claude").exists() && !home.join(".codex").exists());
    if abi >= sandbox::NET_ABI {
        let mut reached = dashboard.accept();
        if let Ok((stream, _)) = reached.as_mut() {
            let mut buf = Vec::new();
            let _ = stream.read_to_end(&mut buf);
        }
        assert!(reached.is_err(), "the agent reached the dashboard's port");
    }
    assert!(model.accept().is_ok(), "the agent's model API saw no connection");

    // CI ran the hostile script contained: it failed, wrote nothing outside, saw no secret.
    assert_eq!(check.status, "failure", "{check:?}");
    let tail = check.output_tail.clone().unwrap_or_default();
    assert!(!home.join("ci-was-here").exists(), "CI wrote to $HOME: {tail}");
    assert!(!tail.contains("CI ESCAPED"), "{tail}");
    assert!(tail.contains("CI saw secret=none"), "CI was given the secret: {tail}");
    assert!(!tail.contains(SECRET), "{tail}");
}
