//! The real `executor` binary, run in a temporary directory against its embedded SQLite default.

mod cli_support;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use cli_support::{Sandbox, fake_crontab, text};

#[test]
fn init_writes_a_commented_config_and_the_database_and_says_where() {
    let sb = Sandbox::new();
    let config = std::fs::read_to_string(sb.path().join("executor.toml")).unwrap();
    assert!(config.contains("# How many agent processes may run at once"));
    assert!(config.contains(&format!("data_dir = \"{}\"", sb.path().join("data").display())));
    assert!(sb.path().join("data/executor.db").is_file());

    let out = sb.run(&["init"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("exists and is kept"), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("data/executor.db"));
}

/// Issue 33 items 7 and 8: `init` says how later commands find its config and names the commands that
/// start work; a command that finds no config says it runs on the defaults instead of doing so silently.
#[test]
fn init_says_how_its_config_is_found_and_a_command_without_one_says_so() {
    let sb = Sandbox::fresh();
    std::fs::remove_file(sb.path().join("executor.toml")).unwrap();
    let out = sb.run(&["init", "--data-dir", "data"]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for next in ["executor runner", "executor cron install", "executor serve"] {
        assert!(said.contains(next), "init's next steps do not name `{next}`:\n{said}");
    }
    let config = sb.path().join("executor.toml");
    assert!(said.contains("Commands run in this directory find this config"), "{said}");
    assert!(said.contains(&format!("EXECUTOR_CONFIG={}", config.display())), "{said}");

    // From another directory, with no config there or in the user's config directory: said, once.
    let elsewhere = sb.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let out = sb.command(&["status"]).current_dir(&elsewhere).output().unwrap();
    let warned = text(&out.stderr);
    assert_eq!(warned.matches("no config file found").count(), 1, "{warned}");
    assert!(warned.contains("built-in defaults"), "{warned}");
    // Found there through the variable: nothing to say.
    let out =
        sb.command(&["status"]).current_dir(&elsewhere).env("EXECUTOR_CONFIG", &config).output().unwrap();
    assert!(!text(&out.stderr).contains("no config file found"), "{}", text(&out.stderr));
}

#[test]
fn a_task_goes_from_queue_to_approved_with_its_history() {
    let sb = Sandbox::new();
    let out =
        sb.ok(&["queue", "add", "--gid", "1207", "--source", "my_tasks_inbox", "--description", "Fix crash"]);
    assert_eq!(out.trim(), "added 1207 (pending)");

    let out = sb.run(&["approve", "1207"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--skip-triage"), "{}", text(&out.stderr));

    assert_eq!(sb.ok(&["approve", "--skip-triage", "1207"]).trim(), "approved 1207");
    let shown = sb.json(&["queue", "show", "1207"]);
    assert_eq!(shown["task"]["status"], "approved");
    let changes: Vec<String> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!("{}>{}", e["from_state"].as_str().unwrap_or(""), e["to_state"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(changes, [">pending", "pending>awaiting_go", "awaiting_go>approved"]);

    let human = sb.ok(&["queue", "show", "1207"]);
    assert!(human.contains("status:           approved"), "{human}");
    assert!(human.contains("awaiting_go → approved"), "{human}");

    let status = sb.json(&["status"]);
    assert_eq!(status["executor_queue"]["approved"], 1);
    assert_eq!((status["workers_alive"].as_i64(), status["spent_today_usd"].as_f64()), (Some(0), Some(0.0)));
    let events = sb.json(&["events", "1207"]);
    assert_eq!(events.as_array().unwrap().len(), 3);
}

#[test]
fn adding_an_existing_gid_updates_it_and_says_so() {
    let sb = Sandbox::new();
    sb.ok(&["queue", "add", "--gid", "7", "--description", "old"]);
    sb.ok(&["skip", "7", "--reason", "not macOS"]);
    let out = sb.ok(&["queue", "add", "--gid", "7", "--description", "new"]);
    assert_eq!(out.trim(), "updated 7 (status skip kept)");
    let task = &sb.json(&["queue", "show", "7"])["task"];
    assert_eq!((task["status"].as_str(), task["description"].as_str()), (Some("skip"), Some("new")));
}

#[test]
fn tasks_arrive_as_json_on_stdin_or_from_a_file() {
    let sb = Sandbox::new();
    let out = sb.run_with_stdin(
        &["queue", "add"],
        r#"[{"gid": "a1", "description": "one", "priority": 2}, {"task_gid": "a2", "source": "watched", "priority": 1}]"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    std::fs::write(sb.path().join("t.json"), r#"{"task_gid": "a3", "notes": "n"}"#).unwrap();
    sb.ok(&["queue", "add", "--from-json", "t.json"]);
    let listed = sb.json(&["queue", "list"]);
    let gids: Vec<&str> =
        listed.as_array().unwrap().iter().map(|t| t["task_gid"].as_str().unwrap()).collect();
    assert_eq!(gids, ["a2", "a1", "a3"], "most urgent first");
    let watched = sb.json(&["queue", "list", "--source", "watched"]);
    assert_eq!(watched.as_array().unwrap().len(), 1);
    let by_gid = sb.json(&["queue", "list", "--sort", "gid", "--desc"]);
    let gids: Vec<&str> =
        by_gid.as_array().unwrap().iter().map(|t| t["task_gid"].as_str().unwrap()).collect();
    assert_eq!(gids, ["a3", "a2", "a1"], "--sort gid --desc");
    let found = sb.json(&["queue", "list", "--search", "ON"]);
    assert_eq!(found.as_array().unwrap().len(), 1, "a1's description, \"one\": {found}");
    let out = sb.run(&["queue", "list", "--sort", "title"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
    assert!(text(&out.stderr).contains("sort by one of priority, gid"), "{}", text(&out.stderr));

    let table = sb.ok(&["queue", "list"]);
    let header = table.lines().next().unwrap();
    assert!(header.starts_with("GID  STATUS   PRIO  SOURCE"), "{table}");

    let bad = sb.run_with_stdin(&["queue", "add"], r#"{"gid": "x", "colour": "red"}"#);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("unknown field `colour`"), "{}", text(&bad.stderr));
}

#[test]
fn queue_list_filters_by_priority_and_age_as_the_dashboard_does() {
    let sb = Sandbox::new();
    let out = sb.run_with_stdin(
        &["queue", "add"],
        r#"[{"gid": "a1", "description": "one", "priority": 2}, {"gid": "a2", "description": "two", "priority": 1},
            {"gid": "a3", "description": "three"}]"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let gids = |args: &[&str]| -> Vec<String> {
        let listed = sb.json(&[&["queue", "list", "--sort", "gid"], args].concat());
        listed.as_array().unwrap().iter().map(|t| t["task_gid"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(gids(&["--priority-min", "2"]), ["a1"], "a task without a priority never matches a bound");
    assert_eq!(gids(&["--priority-max", "1"]), ["a2"]);
    assert_eq!(gids(&["--priority-min", "1", "--priority-max", "2"]), ["a1", "a2"]);
    assert_eq!(gids(&["--added-within", "1h"]), ["a1", "a2", "a3"]);
    assert_eq!(gids(&["--older-than", "0s"]), ["a1", "a2", "a3"], "added before now");
    assert!(gids(&["--older-than", "1h"]).is_empty(), "all were added just now");
    assert_eq!(sb.ok(&["queue", "list", "--older-than", "1h"]).trim(), "no tasks match");
    assert_eq!(sb.ok(&["queue", "list", "--search", "four"]).trim(), "no tasks match");

    let out = sb.run(&["queue", "list", "--added-within", "soon"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
    assert!(
        text(&out.stderr).contains("\"soon\" is not an age: give one such as 12h"),
        "{}",
        text(&out.stderr)
    );
    let out = sb.run(&["queue", "list", "--priority-min", "3", "--priority-max", "2"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
    assert!(
        text(&out.stderr).contains("--priority-min 3 is above --priority-max 2"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bad_input_is_refused_with_the_rule_and_nothing_is_written() {
    let sb = Sandbox::new();
    for bad in ["../etc", ".hidden", "a b", "x;rm -rf /"] {
        let out = sb.run(&["queue", "add", "--gid", bad, "--description", "d"]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            text(&out.stderr).contains("only letters, digits, '.', '_' and '-'"),
            "{}",
            text(&out.stderr)
        );
    }
    assert_eq!(sb.json(&["queue", "list"]), serde_json::json!([]));

    let out = sb.run(&["queue", "show", "999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no task with gid '999'"));

    let out = sb.run(&["runs", "show", "42"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no run with id 42"));

    let out = sb.run(&["queue", "list", "--status", "approve"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
    assert!(text(&out.stderr).contains("expected one of: pending, for_review"));

    sb.ok(&["queue", "add", "--gid", "1", "--description", "d"]);
    let out = sb.run(&["queue", "requeue", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("task cannot go from pending to pending"));
}

#[test]
fn a_malformed_config_names_the_file_line_and_key() {
    let sb = Sandbox::new();
    let config: PathBuf = sb.path().join("executor.toml");
    let mut text_ = std::fs::read_to_string(&config).unwrap();
    text_ = text_.replace("max_workers = 2", "max_workers = \"two\"");
    std::fs::write(&config, text_).unwrap();
    let out = sb.run(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("executor.toml") && err.contains("max_workers") && err.contains("line"), "{err}");

    let out = sb.run(&["--config", "nope.toml", "status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("nope.toml does not exist"), "{}", text(&out.stderr));
}

#[test]
fn a_database_from_a_newer_executor_is_refused() {
    let sb = Sandbox::new();
    sb.ok(&["queue", "add", "--gid", "1", "--description", "d"]);
    let db = sb.path().join("data/executor.db");
    let st = Command::new("sqlite3")
        .arg(&db)
        .arg("INSERT INTO executor_schema (version, applied_at) VALUES (999, '2030-01-01T00:00:00+00:00')")
        .status();
    if !matches!(st, Ok(s) if s.success()) {
        // Not eprintln!: the harness would hide it for a passing test.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the sqlite3 command is not available to simulate a newer database"
        );
        return;
    }
    let out = sb.run(&["queue", "add", "--gid", "2", "--description", "d"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("schema version 999, newer than this executor"),
        "{}",
        text(&out.stderr)
    );
    let count = Command::new("sqlite3").arg(&db).arg("SELECT count(*) FROM executor_queue").output().unwrap();
    assert_eq!(text(&count.stdout).trim(), "1", "nothing written");
}

#[test]
fn help_teaches_the_commands() {
    let out = Command::new(env!("CARGO_BIN_EXE_executor")).arg("--help").output().unwrap();
    let help = text(&out.stdout);
    for cmd in ["init", "queue", "approve", "skip", "runs", "status", "events", "migrate"] {
        assert!(help.contains(cmd), "{cmd} missing from --help");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_executor")).arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Issue 33 item 11: `--json` on a command that prints no JSON is refused, never silently ignored.
#[test]
fn json_is_refused_where_a_command_prints_none() {
    let sb = Sandbox::new();
    let out = sb.run(&["cron", "print", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("`executor cron` prints no JSON"), "{}", text(&out.stderr));
    assert!(text(&out.stdout).is_empty());
    let listed = sb.run(&["queue", "list", "--json"]);
    assert_eq!(listed.status.code(), Some(0), "where JSON is printed, --json stays");
}

/// Issue 33 item 5: what the environment file of scheduled runs sets is loaded, redacted like a
/// configured secret, and refused when other users could read it.
#[test]
fn the_environment_file_is_loaded_private_and_its_values_are_redacted() {
    use std::os::unix::fs::PermissionsExt as _;
    let sb = Sandbox::new();
    let file = sb.path().join("scheduled.env");
    std::fs::write(&file, "# for cron\nexport MY_SERVICE_TOKEN='zq8Hw2kLp5Xv9RtY'\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let env_file = file.display().to_string();
    let add =
        ["--env-file", &env_file, "queue", "add", "--gid", "7", "--description", "use zq8Hw2kLp5Xv9RtY"];
    let out = sb.run(&add);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = sb.ok(&["--env-file", &env_file, "queue", "show", "7"]);
    assert!(!shown.contains("zq8Hw2kLp5Xv9RtY") && shown.contains("[REDACTED]"), "{shown}");

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = sb.run(&["--env-file", &env_file, "status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(&format!("chmod 600 {env_file}")), "{}", text(&out.stderr));
}

/// `executor --version` names the commit the binary was built from.
#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().unwrap();
    let head = text(&head.stdout).trim().to_string();
    assert_eq!(head.len(), 12, "this test runs in a git checkout");
    let out = Command::new(env!("CARGO_BIN_EXE_executor")).arg("--version").output().unwrap();
    let version = text(&out.stdout);
    assert_eq!(version.trim(), format!("executor {} (commit {head})", env!("CARGO_PKG_VERSION")));
}

#[test]
fn cron_install_is_idempotent_and_uninstall_leaves_other_entries() {
    let sb = Sandbox::new();
    let bin = fake_crontab(sb.path());
    let table = sb.path().join("crontab.txt");
    std::fs::write(&table, "0 3 * * * backup\n").unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let cron = |args: &[&str]| {
        let out = sb.command(args).env("PATH", &path).stdin(Stdio::null()).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    // The binary under test lives in cargo's target/: scheduling it is warned about, not refused.
    let out = sb.command(&["cron", "print"]).env("PATH", &path).stdin(Stdio::null()).output().unwrap();
    let warning = text(&out.stderr);
    assert!(
        warning.contains("inside a cargo target/ directory") && warning.contains("cargo install"),
        "{warning}"
    );
    let printed = cron(&["cron", "print"]);
    assert!(printed.contains("*/5 * * * *") && printed.contains("'runner'"), "{printed}");
    assert!(printed.contains(&format!("'{}'", sb.path().join("executor.toml").display())), "{printed}");

    cron(&["cron", "install"]);
    let once = std::fs::read_to_string(&table).unwrap();
    assert!(once.starts_with("0 3 * * * backup\n") && once.contains("# BEGIN executor"), "{once}");
    assert!(cron(&["cron", "install"]).contains("already up to date"));
    assert_eq!(std::fs::read_to_string(&table).unwrap(), once);

    cron(&["cron", "uninstall"]);
    assert_eq!(std::fs::read_to_string(&table).unwrap(), "0 3 * * * backup\n");

    let units = cron(&["service", "print", "--systemd"]);
    assert!(units.contains("executor-runner.timer") && units.contains("OnUnitInactiveSec=5min"), "{units}");
    let agent = cron(&["service", "print", "--launchd"]);
    assert!(agent.contains("<integer>300</integer>"), "{agent}");
}

/// A listing piped into a reader that stops early (`| head -1`) ends quietly, without a panic.
#[test]
fn a_listing_cut_short_by_its_reader_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("executor.toml");
    std::fs::write(
        &config,
        format!("[paths]\ndata_dir = {:?}\n", dir.path().join("data").display().to_string()),
    )
    .unwrap();
    let exe = env!("CARGO_BIN_EXE_executor");
    let tasks: String = (0..3000)
        .map(|i| format!("{{\"gid\": \"T{i}\", \"source\": \"s\", \"description\": \"task {i}\"}}\n"))
        .collect();
    let input = dir.path().join("tasks.jsonl");
    std::fs::write(&input, tasks).unwrap();
    let add = std::process::Command::new(exe)
        .args(["--config", config.to_str().unwrap(), "queue", "add", "--from-json", input.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(add.status.success(), "{}", String::from_utf8_lossy(&add.stderr));
    let script =
        format!("'{exe}' --config '{}' queue list --json | head -c 100 > /dev/null", config.display());
    let out = std::process::Command::new("sh").args(["-c", &script]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
}

/// `executor status` shows each host and its runners: the live one holding a run with a worker, and a
/// host whose only runner stopped after failing (what cron never shows).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_each_host_with_its_runners_leases_and_errors() {
    use executor::domain::{Actor, TaskGid, WorkerKind};
    use executor::store::{RunnerRegistration, SessionStart, Store, WorkerBegin, WorkerSlot};

    let sb = Sandbox::new();
    sb.ok(&["queue", "add", "--gid", "H-1", "--description", "held"]);
    sb.ok(&["approve", "--skip-triage", "H-1"]);
    let store =
        Store::open(&format!("sqlite://{}", sb.path().join("data/executor.db").display())).await.unwrap();
    let ttl = std::time::Duration::from_secs(600);
    for (id, host, pid, max_workers) in
        [("host-a/aaaa0001", "host-a", 4242, 2), ("host-b/bbbb0002", "host-b", 77, 3)]
    {
        let registration =
            RunnerRegistration { id, host, pid, version: "test", machine: "m", ttl, max_workers };
        store.register_runner(&registration).await.unwrap();
    }
    let run =
        store.create_run_for_task(&TaskGid::parse("H-1").unwrap(), Actor::Runner).await.unwrap().unwrap();
    assert!(store.claim_run(run.id, "host-a/aaaa0001", ttl).await.unwrap());
    let slot = WorkerSlot { runner: "host-a/aaaa0001", host: "host-a", host_max: 2, cluster_max: None };
    let begun = store
        .begin_runner_worker(run.id, WorkerKind::Queued, "claude", &slot, &SessionStart::default())
        .await
        .unwrap();
    assert!(matches!(begun, WorkerBegin::Started(_)), "{begun:?}");
    for _ in 0..3 {
        store.runner_ticked("host-a/aaaa0001", 0, None).await.unwrap();
    }
    store.runner_ticked("host-b/bbbb0002", 2, Some("the forge was down")).await.unwrap();
    store.runner_ended("host-b/bbbb0002").await.unwrap();

    let out = sb.ok(&["status"]);
    let lines: Vec<&str> = out.lines().skip_while(|l| *l != "hosts:").take(5).collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(lines[1], "  host-a: 1 live runner, 1 lease, 1 worker", "{out}");
    let a = lines[2];
    assert!(a.starts_with("    host-a/aaaa0001 (pid 4242, executor test): alive, heartbeat "), "{a}");
    assert!(a.contains(", 1 lease, 1 of 2 workers, started ") && a.ends_with("; 3 ticks, no errors"), "{a}");
    assert!(lines[3].starts_with("  host-b: no live runner; last one stopped at "), "{out}");
    let b = lines[4];
    assert!(b.starts_with("    host-b/bbbb0002 (pid 77, executor test): stopped "), "{b}");
    assert!(b.contains(", 0 leases, 0 of 3 workers, started "), "{b}");
    assert!(b.contains("; 1 ticks, 2 errors, last (") && b.ends_with("): the forge was down"), "{b}");

    let json = sb.json(&["status"]);
    let runners = json["runners"].as_array().unwrap();
    let ids: Vec<_> = runners.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["host-a/aaaa0001", "host-b/bbbb0002"], "{json}");
    assert_eq!((runners[0]["leases"].as_i64(), runners[0]["workers"].as_i64()), (Some(1), Some(1)));
    assert_eq!(
        (runners[1]["alive"].as_bool(), runners[1]["end_reason"].as_str()),
        (Some(false), Some("stopped"))
    );
}

/// Issue 33 item 11: a task added without text, and a dashboard on a busy port, are refused with the fix.
#[test]
fn a_task_without_text_and_a_busy_port_are_refused_with_the_fix() {
    let sb = Sandbox::new();
    let out = sb.run(&["queue", "add", "--gid", "X-1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--description"), "{}", text(&out.stderr));
    assert!(!sb.ok(&["queue", "list"]).contains("X-1"), "an empty task was added");

    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let out = sb.run(&["serve", "--port", &port]);
    let said = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("in use") && said.contains("--port") && said.contains("web.port"), "{said}");
}

/// Issue 33 item 11: an SQLite path that cannot be made said "File exists (os error 17)" and no more.
#[test]
fn a_database_path_that_cannot_be_made_names_the_directory_and_the_fix() {
    let sb = Sandbox::fresh();
    std::fs::write(sb.path().join("afile"), "").unwrap();
    sb.write_config(&format!("[database]\nurl = \"sqlite://{}/afile/x.db\"\n", sb.path().display()));
    let out = sb.run(&["migrate"]);
    let said = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("{}/afile", sb.path().display())) && said.contains("data_dir"), "{said}");
}

/// `executor status` names the runs that wait on a person's word: a plan awaiting approval, a question
/// nobody answered (the dashboard's "Needs you" lists the same).
#[tokio::test]
async fn status_names_the_plans_and_questions_that_wait() {
    use executor::domain::{Actor, EndReason, TaskGid, WorkerKind};
    use executor::store::{Store, WorkerEnd};

    let sb = Sandbox::new();
    assert!(!sb.ok(&["status"]).contains("awaiting approval"));
    let store =
        Store::open(&format!("sqlite://{}", sb.path().join("data/executor.db").display())).await.unwrap();
    let mut runs = Vec::new();
    for gid in ["PQ-1", "PQ-2"] {
        sb.ok(&["queue", "add", "--gid", gid, "--description", "waits"]);
        sb.ok(&["approve", "--skip-triage", gid]);
        let run = store.create_run_for_task(&TaskGid::parse(gid).unwrap(), Actor::Runner).await.unwrap();
        let run = run.unwrap().id;
        let s = store.begin_worker_session(run, WorkerKind::Plan, "claude", "h", &Default::default()).await;
        let s = s.unwrap().unwrap().id;
        store.end_worker_session(s, None, &WorkerEnd::new(EndReason::Finished)).await.unwrap();
        runs.push((run, s));
    }
    store.record_plan(runs[0].0, runs[0].1, "# Plan").await.unwrap();
    store.ask_question(runs[1].0, runs[1].1, WorkerKind::Plan, "Which\nlocale?").await.unwrap();

    let out = sb.ok(&["status"]);
    assert!(out.contains("plans awaiting approval: 1 (executor plan show RUN_ID)"), "{out}");
    assert!(out.contains(&format!("  run {} (task PQ-1): revision 1", runs[0].0)), "{out}");
    assert!(out.contains("questions waiting for an answer: 1"), "{out}");
    assert!(out.contains(&format!("  run {} (task PQ-2): Which locale?", runs[1].0)), "{out}");
    let json = sb.json(&["status"]);
    assert_eq!(json["plans_awaiting_approval"][0]["run"], runs[0].0, "{json}");
    assert_eq!(json["open_questions"][0]["task_gid"], "PQ-2", "{json}");
}

#[test]
fn people_are_added_listed_and_revoked_and_a_cli_change_names_its_actor() {
    let sb = Sandbox::new();
    let added = sb.json(&["--actor", "root", "users", "add", "alice", "--role", "viewer"]);
    let url = added["login_url"].as_str().expect("a login URL");
    assert!(url.starts_with("http://127.0.0.1:8370/?token=exu_"), "{url}");
    assert_eq!(added["user"]["created_by"], "root");
    let out = sb.run(&["users", "add", "alice"]);
    assert_eq!(out.status.code(), Some(1), "one active alice");
    assert!(text(&out.stderr).contains("executor users revoke alice"), "{}", text(&out.stderr));
    let out = sb.run(&["users", "add", "web"]);
    assert_eq!(out.status.code(), Some(2), "an actor's name is no person's");
    let out = sb.run(&["--actor", "two words", "status"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(sb.ok(&["users", "list"]).contains("alice"));
    sb.ok(&["users", "role", "alice", "approver"]);
    sb.ok(&["users", "revoke", "alice"]);
    let listed = sb.json(&["users", "list"]);
    assert!(listed[0]["revoked_at"].is_string(), "{listed}");
    assert!(!listed.to_string().contains("exu_"), "no token is listed");

    sb.ok(&["queue", "add", "--gid", "9", "--description", "Fix"]);
    sb.ok(&["--actor", "dana", "skip", "9", "--reason", "not now"]);
    let shown = sb.json(&["queue", "show", "9"]);
    let last = shown["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["actor"].as_str(), last["actor_id"].as_str()), (Some("cli"), Some("dana")), "{last}");
    assert!(sb.ok(&["events"]).contains("dana (cli)"));
}
