//! `executor doctor` on a working setup and on a broken one, through the real binary.

mod runner_support;

use std::process::Stdio;

use runner_support::Env;

fn doctor(env: &Env) -> (Option<i32>, serde_json::Value) {
    let out = env.command(&["doctor", "--json"]).stdin(Stdio::null()).output().unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("doctor --json printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout))
    });
    (out.status.code(), report)
}

fn check<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
}

#[test]
fn a_working_setup_passes_every_required_check() {
    let env = Env::new(&[]);
    env.run(&["migrate"]);
    let (code, report) = doctor(&env);
    assert_eq!(code, Some(0), "{report:#}");
    for name in ["config", "git", "database", "repo app", "agent"] {
        assert_eq!(check(&report, name)["outcome"], "pass", "{name}: {report:#}");
    }
    let human = env.command(&["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("✓ database"), "{text}");
}

#[test]
fn a_broken_setup_fails_naming_each_fix_and_writes_nothing() {
    let env = Env::new(&[]);
    env.edit_config("[repos.app]\npath = \"", "[repos.app]\npath = \"/nonexistent");
    env.edit_config("[worker.command]\nargv = [\"", "[worker.command]\nargv = [\"/nonexistent");
    env.append_config(
        "\n[[sources]]\nname = \"inbox\"\nkind = \"asana\"\nprojects = [\"1\"]\ntoken_env = \"DOCTOR_TEST_NO_SUCH_VAR\"\n",
    );
    let (code, report) = doctor(&env);
    assert_eq!(code, Some(1), "{report:#}");
    let fail = |name: &str| {
        let c = check(&report, name);
        assert_eq!(c["outcome"], "fail", "{name}: {report:#}");
        c["fix"].as_str().unwrap_or_default().to_string()
    };
    assert!(fail("database").contains("executor init"));
    assert!(fail("repo app").contains("repos.app.path"));
    assert!(fail("agent").contains("worker.command.argv"));
    assert!(fail("source inbox").contains("DOCTOR_TEST_NO_SUCH_VAR"));
    assert!(!env.path().join("data").exists(), "doctor created the data directory");
}

#[test]
fn read_only_commands_never_create_a_database() {
    let env = Env::new(&[]);
    for args in [&["status"][..], &["queue", "list"], &["runs", "list"], &["events"], &["queue", "show", "1"]]
    {
        let out = env.command(args).stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr.contains("no database at") && stderr.contains("executor init"), "{args:?}: {stderr}");
    }
    assert!(!env.path().join("data").exists(), "a read-only command created the data directory");
    env.run(&["init"]);
    env.run(&["status"]);
}

#[test]
fn completions_are_generated_for_each_shell_and_know_the_subcommands() {
    let env = Env::new(&[]);
    for (shell, marker) in
        [("bash", "_executor()"), ("zsh", "#compdef executor"), ("fish", "complete -c executor")]
    {
        let out = env.run(&["completions", shell]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(marker), "{shell}: {}", &text[..text.len().min(200)]);
        for sub in ["analyzer", "doctor", "runner", "queue"] {
            assert!(text.contains(sub), "{shell} completion lacks {sub}");
        }
    }
}

#[test]
fn a_missing_agent_program_is_said_once_before_any_run_moves() {
    let env = Env::new(&[]);
    env.edit_config("[worker.command]\nargv = [\"", "[worker.command]\nargv = [\"/nonexistent");
    env.run(&["queue", "add", "--gid", "M-1", "--description", "Fix it"]);
    env.run(&["approve", "--skip-triage", "M-1"]);
    let out = env.command(&["runner", "--once"]).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/nonexistent") && stderr.contains("worker.command.argv"), "{stderr}");
    let runs = env.run(&["runs", "list", "--json"]);
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&runs.stdout).unwrap(), serde_json::json!([]));
    let status = String::from_utf8_lossy(&env.run(&["status"]).stdout).to_string();
    assert!(status.contains("worker.command.argv"), "status tells it too: {status}");
    env.run(&["queue", "add", "--gid", "M-2", "--description", "Triage me"]);
    let out = env.command(&["analyzer"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("worker.command.argv"));
}

#[test]
fn an_unreachable_postgresql_is_said_at_once_and_once() {
    let env = Env::new(&[]);
    // Port 9 (discard) is closed on any test machine: the connection is refused.
    env.use_database("postgres://postgres@127.0.0.1:9/test");
    let out = env.command(&["status"]).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("connection refused at 127.0.0.1:9"), "{stderr}");
    assert_eq!(stderr.matches("connection refused").count(), 1, "said once: {stderr}");
}

#[test]
fn queue_add_refuses_an_empty_description_and_an_unknown_repo() {
    let env = Env::new(&[]);
    let out = env.command(&["queue", "add", "--gid", "Q-1", "--description", "  "]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("description is empty"));
    let out = env
        .command(&["queue", "add", "--gid", "Q-2", "--description", "x", "--repo", "web"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the configured ones are app"));
}

/// Item 6: doctor says whether agents are contained, and what it means when they are not.
#[test]
fn doctor_reports_the_sandbox() {
    let env = Env::new(&[]);
    env.run(&["migrate"]);
    let (_, report) = doctor(&env);
    let c = check(&report, "sandbox");
    let detail = c["detail"].as_str().unwrap_or_default();
    if cfg!(target_os = "linux") && detail.starts_with("Landlock ABI") {
        assert_eq!(c["outcome"], "pass", "{report:#}");
        // Which layer holds what, for the configured agent (a command agent here).
        assert!(detail.contains("command agent: executor's Landlock holds"), "{detail}");
        assert!(detail.contains("local CI is contained"), "{detail}");
    } else {
        assert_eq!(c["outcome"], "warn", "{report:#}");
        assert!(detail.contains("uncontained"), "{detail}");
    }
    env.append_config("\n");
    env.edit_config("[worker]\n", "[worker]\nsandbox = \"off\"\n");
    let (_, report) = doctor(&env);
    let c = check(&report, "sandbox");
    assert_eq!(c["outcome"], "warn", "{report:#}");
    assert!(c["fix"].as_str().unwrap_or_default().contains("worker.sandbox"), "{report:#}");
    assert!(
        c["detail"].as_str().unwrap_or_default().contains("nothing contains a command agent"),
        "{report:#}"
    );
    // Codex says its own sandbox is what holds it without executor's.
    env.edit_config("agent = \"command\"", "agent = \"codex\"");
    let (_, report) = doctor(&env);
    let detail = check(&report, "sandbox")["detail"].as_str().unwrap_or_default().to_string();
    assert!(detail.contains("only Codex's own sandbox (--sandbox workspace-write)"), "{detail}");
}
