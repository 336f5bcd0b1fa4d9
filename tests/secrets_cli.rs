//! The real `executor` binary (issue 32, items 4 and 6): whatever the database holds, the command line
//! prints no secret it knows (JSON included) and no terminal or bidirectional control from outside
//! text; a secret of a well-known shape is stored redacted even by a process whose environment lacks
//! it; `doctor` says when a secret the config names is missing from its environment.

mod cli_support;

use cli_support::{Sandbox, text};
use executor::domain::{Actor, QueueStatus, TaskGid};
use executor::store::{NewTask, Store};

const SECRET_ENV: &str = "EXECUTOR_TEST_PLANTED_SECRET";
const SECRET: &str = "planted-redact-env-value-0123456789";

fn sandbox() -> Sandbox {
    let sb = Sandbox::with_config("");
    let path = sb.path().join("executor.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    let config = config.replacen("redact_env = []", &format!("redact_env = [\"{SECRET_ENV}\"]"), 1);
    assert!(config.contains(SECRET_ENV), "the template has [worker] redact_env");
    std::fs::write(&path, config).unwrap();
    sb
}

/// Writes a task and a run whose notes and history quote `text`, the way a store without the secret
/// (an older version, another process's environment) left them. Returns the run's id.
fn plant(sb: &Sandbox, gid: &str, description: &str, text: &str) -> i64 {
    let url = format!("sqlite://{}", sb.path().join("data/executor.db").display());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let store = Store::open(&url).await.unwrap();
        store.migrate().await.unwrap();
        let gid = TaskGid::parse(gid).unwrap();
        let task = NewTask {
            description: Some(description.into()),
            notes: Some(format!("notes: {text}")),
            ..Default::default()
        };
        store.upsert_task(&gid, &task, Actor::Cli).await.unwrap();
        store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
        store.approve_task(&gid, false, Actor::Cli).await.unwrap();
        let run = store.create_run_for_task(&gid, Actor::Runner).await.unwrap().expect("a run");
        store.record_note(Actor::Runner, Some(&gid), Some(run.id), &format!("saw {text}")).await.unwrap();
        store.close().await;
        run.id
    })
}

fn output(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.command(args).env(SECRET_ENV, SECRET).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn no_command_prints_a_secret_it_knows_json_included() {
    let sb = sandbox();
    let run = plant(&sb, "S-1", "rotate the key", SECRET).to_string();
    let foreign = "ghp_ForeignTokenNobodyNamed0123456789ab";
    plant(&sb, "S-2", "another", foreign);
    for args in [
        vec!["runs", "show", &run, "--json"],
        vec!["runs", "show", &run],
        vec!["queue", "show", "S-1", "--json"],
        vec!["queue", "show", "S-1"],
        vec!["queue", "show", "S-2"],
        vec!["queue", "list", "--json"],
        vec!["events", "S-1", "--json"],
        vec!["events", "S-1"],
    ] {
        let printed = output(&sb, &args);
        assert!(
            !printed.contains("planted-redact-env") && !printed.contains("ForeignToken"),
            "{args:?}: {printed}"
        );
        if args.contains(&"--json") {
            let _: serde_json::Value =
                serde_json::from_str(&printed).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
    }
    assert!(output(&sb, &["runs", "show", &run, "--json"]).contains("[REDACTED]"));
}

/// A reason typed by a human in a process whose environment lacks the secret (`serve` started from
/// another shell) still reaches the database without a secret of a well-known shape.
#[test]
fn a_foreign_token_in_a_skip_reason_never_reaches_the_database() {
    let sb = sandbox();
    sb.ok(&["queue", "add", "--gid", "7", "--description", "a task"]);
    let token = "github_pat_11ABCDEFG0aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    sb.ok(&["skip", "7", "--reason", &format!("duplicate; it leaks {token}")]);
    let raw = std::fs::read(sb.path().join("data/executor.db")).unwrap_or_default();
    let wal = std::fs::read(sb.path().join("data/executor.db-wal")).unwrap_or_default();
    let needle = b"ABCDEFG0aaaaaaaaaaaa";
    let found = |bytes: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(!found(&raw) && !found(&wal), "the database holds the token");
}

#[test]
fn outside_text_cannot_write_terminal_controls() {
    let sb = sandbox();
    let hostile = "fix it\u{1b}[2K\u{1b}[1A\u{1b}[32mapproved\u{1b}[0m \u{202e}txt.exe\u{9b}";
    plant(&sb, "T-1", hostile, "\u{1b}]0;title\u{7}");
    for args in [vec!["queue", "show", "T-1"], vec!["queue", "list"], vec!["events", "T-1"]] {
        let printed = output(&sb, &args);
        assert!(
            !printed.chars().any(|c| c == '\u{1b}' || c == '\u{202e}' || c == '\u{9b}' || c == '\u{7}'),
            "{args:?}: {printed:?}"
        );
        assert!(printed.contains("[U+001B]"), "{args:?}: {printed}");
    }
    assert!(output(&sb, &["queue", "show", "T-1"]).contains("[U+202E]txt.exe"));
    // JSON stays exact: the text comes back as it was written.
    let json: serde_json::Value =
        serde_json::from_str(&output(&sb, &["queue", "show", "T-1", "--json"])).unwrap();
    assert!(json.to_string().contains("\\u001b[32mapproved"), "{json}");
}

#[test]
fn doctor_warns_when_a_secret_the_config_names_is_missing() {
    let sb = sandbox();
    let out = sb.command(&["doctor", "--json"]).env_remove(SECRET_ENV).output().unwrap();
    let report: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let checks = report["checks"].as_array().cloned().unwrap_or_default();
    let redaction = checks.iter().find(|c| c["name"] == "redaction").unwrap_or_else(|| panic!("{report}"));
    assert_eq!(redaction["outcome"], "warn", "{redaction}");
    assert!(redaction["detail"].as_str().unwrap_or_default().contains(SECRET_ENV), "{redaction}");
    let out = sb.command(&["doctor", "--json"]).env(SECRET_ENV, SECRET).output().unwrap();
    let report: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert!(report.to_string().contains("every secret the config names is set here"), "{report}");
}
