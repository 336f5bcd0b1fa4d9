//! `executor import` with the real binary: a sample v1 export (every status, every run state including
//! `ci_running`, a `user_context`, bad rows) planned, imported, imported again, and its CSV variant.

mod cli_support;

use std::collections::BTreeMap;

use cli_support::{Sandbox, text};
use serde_json::Value;

fn sample(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// gid → status, from `queue list --json`.
fn statuses(sb: &Sandbox) -> BTreeMap<String, String> {
    let tasks = sb.json(&["queue", "list"]);
    tasks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["task_gid"].as_str().unwrap().to_string(), t["status"].as_str().unwrap().to_string()))
        .collect()
}

/// gid → the task's newest run as `runs list --json` shows it (its current one).
fn runs(sb: &Sandbox) -> BTreeMap<String, Value> {
    let runs = sb.json(&["runs", "list"]);
    runs.as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|r| (r["task_gid"].as_str().unwrap().to_string(), r.clone()))
        .collect()
}

fn counts(report: &Value, table: &str) -> [u64; 4] {
    let c = &report[table];
    ["added", "updated", "unchanged", "refused"].map(|k| c[k].as_u64().unwrap())
}

#[test]
fn a_dry_run_prints_the_plan_and_writes_nothing() {
    let sb = Sandbox::new();
    let out = sb.ok(&["import", &sample("v1_export.json"), "--dry-run"]);
    assert!(out.contains("dry run: nothing written"), "{out}");
    assert!(out.contains("executor_queue: 12 added, 0 updated, 0 unchanged, 1 refused"), "{out}");
    assert!(out.contains("executor_runs:  7 added, 0 updated, 0 unchanged, 3 refused"), "{out}");
    // One line per refused row, naming it and why.
    assert!(out.contains("executor_queue row 13: no task_gid"), "{out}");
    // Task 1008's earlier run (row 7) goes in as its history, not refused.
    assert!(out.contains("abandoned → abandoned (an earlier run of its task: history): 1"), "{out}");
    assert!(!out.contains("another run"), "{out}");
    assert!(out.contains("executor_runs row 8 (task 1004): unknown state \"exploded\""), "{out}");
    assert!(out.contains("executor_runs row 9 (task 1003): its task is awaiting_go"), "{out}");
    assert!(
        out.contains("executor_runs row 10 (task 9999): no executor_queue row imports task 9999"),
        "{out}"
    );
    // The mapping counts, and what is left behind.
    assert!(out.contains("ci_running → pr (CI pending): 1"), "{out}");
    assert!(out.contains("(null) → pending: 1") && out.contains("needs_info → pending: 1"), "{out}");
    assert!(out.contains("approved → approved: 5"), "{out}");
    assert!(out.contains("done → done (its run is complete): 1"), "{out}");
    assert!(out.contains("a v1 process is not executor's to adopt"), "{out}");

    assert!(statuses(&sb).is_empty(), "a dry run adds no task");
    assert!(runs(&sb).is_empty(), "a dry run creates no run");
    assert_eq!(sb.json(&["events"]), serde_json::json!([]), "a dry run records nothing");
}

#[test]
fn an_import_writes_the_export_and_a_second_changes_nothing() {
    let sb = Sandbox::new();
    let first = sb.json(&["import", &sample("v1_export.json")]);
    assert_eq!(first["dry_run"], false);
    assert_eq!(counts(&first, "executor_queue"), [12, 0, 0, 1]);
    assert_eq!(counts(&first, "executor_runs"), [7, 0, 0, 3]);
    assert_eq!(first["refused"].as_array().unwrap().len(), 4);

    let expected: BTreeMap<String, String> = [
        ("1001", "pending"),
        ("1002", "for_review"),
        ("1003", "awaiting_go"),
        ("1004", "approved"),
        ("1005", "approved"),
        ("1006", "approved"),
        ("1007", "approved"),
        ("1008", "done"),
        ("1009", "approved"),
        ("1010", "skip"),
        ("1011", "pending"),
        ("1012", "done"),
    ]
    .into_iter()
    .map(|(g, s)| (g.to_string(), s.to_string()))
    .collect();
    assert_eq!(statuses(&sb), expected);

    let runs = runs(&sb);
    let states: BTreeMap<&str, &str> =
        runs.iter().map(|(g, r)| (g.as_str(), r["state"].as_str().unwrap())).collect();
    assert_eq!(
        states,
        BTreeMap::from([
            ("1004", "queued"),
            ("1005", "in_progress"),
            ("1006", "pr"),
            ("1007", "pr"),
            ("1008", "complete"),
            ("1009", "abandoned"),
        ])
    );
    let ci = &runs["1006"];
    assert_eq!(ci["pr_number"], 306, "ci_running became pr with its pull request");
    assert_eq!(ci["pr_url"], "https://github.com/acme/browser/pull/306");
    assert_eq!(ci["ci_attempts"], 2);
    assert_eq!(ci["thread_id"], "thr-6");
    assert_eq!(ci["worktree_path"], "/Users/alex/wt/1006");
    assert_eq!(ci["branch_name"], "executor/1006");
    let v1_worker = &runs["1005"];
    assert_eq!(v1_worker["worker_pid"], 4242, "v1's worker fields are kept as its record");
    assert_eq!(v1_worker["worker_session_id"], "sess-5");
    assert_eq!(v1_worker["worker_stuck_count"], 1);
    assert_eq!(v1_worker["worker_last_update"], "2026-01-06T10:00:00Z");
    assert_eq!(runs["1008"]["completed_at"], "2026-01-07T10:00:00Z", "v1's completion time");
    let first = sb.json(&["queue", "show", "1001"]);
    let first = if first["task"].is_object() { &first["task"] } else { &first };
    assert_eq!(first["added_at"], "2026-01-05T10:00:00Z", "v1's added_at");
    assert_eq!(runs["1008"]["branch_name"], "executor/1008-2", "the run the queue row names is the one kept");

    let task = sb.json(&["queue", "show", "1002"]);
    let task = if task["task"].is_object() { &task["task"] } else { &task };
    assert_eq!(task["notes"], "Asana notes\n\nAlex: check the RTL case", "user_context is appended to notes");
    assert_eq!(task["analysis_summary"], "Needs a design decision");
    assert_eq!(task["priority"], 3);
    let only_context = sb.json(&["queue", "show", "1001"]);
    let only_context = if only_context["task"].is_object() { &only_context["task"] } else { &only_context };
    assert_eq!(only_context["notes"], "Seen on an external display only");

    // Every change went through the ordinary transitions, with events saying so.
    let events = sb.json(&["events", "1006"]);
    let moves: Vec<String> = events
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some(format!("{}→{}", e["from_state"].as_str()?, e["to_state"].as_str()?)))
        .collect();
    assert_eq!(
        moves,
        ["pending→awaiting_go", "awaiting_go→approved", "queued→in_progress", "in_progress→pr"]
    );

    let events_before = sb.json(&["events"]).as_array().unwrap().len();
    let second = sb.json(&["import", &sample("v1_export.json")]);
    assert_eq!(counts(&second, "executor_queue"), [0, 0, 12, 1]);
    assert_eq!(counts(&second, "executor_runs"), [0, 0, 7, 3]);
    assert_eq!(
        sb.json(&["events"]).as_array().unwrap().len(),
        events_before,
        "the second import wrote nothing"
    );
    assert_eq!(statuses(&sb), expected);
    let text = sb.ok(&["import", &sample("v1_export.json")]);
    assert!(text.contains("executor_queue: 0 added, 0 updated, 12 unchanged, 1 refused"), "{text}");
}

#[test]
fn a_task_executor_already_triaged_keeps_its_status_and_a_pending_one_takes_v1s() {
    let sb = Sandbox::new();
    sb.ok(&["queue", "add", "--gid", "1004", "--description", "Queued: fix downloads badge"]);
    sb.ok(&["skip", "1004", "--reason", "not ours"]);
    sb.ok(&["queue", "add", "--gid", "1003", "--description", "old text"]);
    let report = sb.json(&["import", &sample("v1_export.json")]);
    assert_eq!(counts(&report, "executor_queue"), [10, 2, 0, 1]);
    let kept = report["kept_status"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].as_str().unwrap().contains("task 1004: executor has it skip"), "{kept:?}");
    let statuses = statuses(&sb);
    assert_eq!(statuses["1004"], "skip", "a human's skip stands");
    assert_eq!(statuses["1003"], "awaiting_go", "a task still pending takes v1's status");
    // The skipped task gets no run, and the refusal says why.
    assert!(!runs(&sb).contains_key("1004"));
    let refusals: Vec<&str> =
        report["refused"].as_array().unwrap().iter().map(|r| r["reason"].as_str().unwrap()).collect();
    assert!(refusals.iter().any(|r| r.contains("executor has task 1004 skip without a run")), "{refusals:?}");
}

#[test]
fn the_csv_variant_imports_the_same_way() {
    let sb = Sandbox::new();
    let dir = sample("v1_export");
    let plan = sb.ok(&["import", &dir, "--dry-run"]);
    assert!(plan.contains("executor_queue: 4 added, 0 updated, 0 unchanged, 1 refused"), "{plan}");
    // Lines are the file's own: the first task's notes span two.
    assert!(plan.contains("executor_queue line 6: no task_gid"), "{plan}");
    assert!(plan.contains("executor_runs line 5 (task 2001): unknown state \"lost\""), "{plan}");
    assert!(plan.contains("executor_runs line 4 (task 2003): its task is skip"), "{plan}");
    assert!(statuses(&sb).is_empty());

    let report = sb.json(&["import", &dir]);
    assert_eq!(counts(&report, "executor_queue"), [4, 0, 0, 1]);
    assert_eq!(counts(&report, "executor_runs"), [2, 0, 0, 2]);
    let statuses = statuses(&sb);
    assert_eq!(statuses["2001"], "approved");
    assert_eq!(statuses["2002"], "pending");
    assert_eq!(statuses["2003"], "skip");
    assert_eq!(statuses["2005"], "done");
    let runs = runs(&sb);
    assert_eq!(runs["2001"]["state"], "pr", "ci_running → pr");
    assert_eq!(runs["2001"]["pr_number"], 1);
    assert_eq!(runs["2001"]["ci_attempts"], 3);
    assert_eq!(runs["2005"]["state"], "complete");
    let task = sb.json(&["queue", "show", "2001"]);
    let task = if task["task"].is_object() { &task["task"] } else { &task };
    assert_eq!(task["notes"], "Line one\nline two\n\nFrom Alex");
    assert_eq!(task["description"], "Crash, on quit");

    let again = sb.json(&["import", &dir]);
    assert_eq!(counts(&again, "executor_queue"), [0, 0, 4, 1]);
    assert_eq!(counts(&again, "executor_runs"), [0, 0, 2, 2]);
}

#[test]
fn invalid_json_is_an_error_naming_the_file_and_writes_nothing() {
    let sb = Sandbox::new();
    let bad = sb.path().join("bad.json");
    std::fs::write(&bad, "{\"executor_queue\": [{\"task_gid\": \"1\"},").unwrap();
    let out = sb.run(&["import", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("invalid JSON") && err.contains("bad.json"), "{err}");
    assert!(statuses(&sb).is_empty());

    let missing = sb.run(&["import", "nowhere.json"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("nowhere.json"), "{}", text(&missing.stderr));
}

#[test]
fn help_teaches_the_export_format_and_the_mapping() {
    let sb = Sandbox::new();
    let help = sb.ok(&["import", "--help"]);
    for needle in [
        "executor_queue",
        "executor_runs.csv",
        "ci_running → pr",
        "user_context",
        "--dry-run",
        "executor import v1.json",
    ] {
        assert!(help.contains(needle), "{needle} missing from:\n{help}");
    }
}

#[test]
fn repo_names_where_the_work_happens_and_must_be_configured() {
    let sb = Sandbox::with_config(
        "\n[repos.app]\npath = \"/nonexistent/app\"\n[repos.web]\npath = \"/nonexistent/web\"\n",
    );
    let out = sb.run(&["import", &sample("v1_export.json"), "--repo", "nope"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(text(&out.stderr).contains("configured: app, web"), "{}", text(&out.stderr));
    assert!(statuses(&sb).is_empty());

    sb.ok(&["import", &sample("v1_export.json"), "--repo", "web"]);
    let runs = runs(&sb);
    assert!(runs.values().all(|r| r["repo"] == "web"), "runs take their task's repo");
    let again = sb.json(&["import", &sample("v1_export.json"), "--repo", "web"]);
    assert_eq!(counts(&again, "executor_queue"), [0, 0, 12, 1]);
}

#[test]
fn a_second_import_keeps_the_priority_executors_analyzer_gave() {
    let sb = Sandbox::new();
    sb.ok(&["import", &sample("v1_export.json")]);
    // executor's analyzer re-triages task 1003 (v1: priority 2) at priority 3.
    sb.ok(&["skip", "1003", "--reason", "re-triage"]);
    sb.ok(&["queue", "requeue", "1003"]);
    let db = sb.path().join("data").join("executor.db");
    let conn = format!("sqlite://{}", db.display());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = executor::store::Store::open(&conn).await.unwrap();
        let gid = executor::domain::TaskGid::parse("1003").unwrap();
        store
            .set_task_analysis(&gid, Some(3), Some("low"), Some("high"), Some("Small change in HistoryMenu"))
            .await
            .unwrap();
        store
            .set_task_status(
                &gid,
                executor::domain::QueueStatus::AwaitingGo,
                executor::domain::Actor::Analyzer,
                None,
            )
            .await
            .unwrap();
    });
    let again = sb.json(&["import", &sample("v1_export.json")]);
    assert_eq!(counts(&again, "executor_queue"), [0, 0, 12, 1], "v1's priority is not an update: {again}");
    let task = sb.json(&["queue", "show", "1003"]);
    let task = if task["task"].is_object() { &task["task"] } else { &task };
    assert_eq!(task["priority"], 3, "the analyzer's priority stands");
}

#[test]
fn csv_with_crlf_line_ends_names_the_refused_rows_by_their_own_lines() {
    let sb = Sandbox::new();
    let dir = sb.path().join("crlf");
    std::fs::create_dir(&dir).unwrap();
    for name in ["executor_queue.csv", "executor_runs.csv"] {
        let text = std::fs::read_to_string(format!("{}/{name}", sample("v1_export"))).unwrap();
        std::fs::write(dir.join(name), text.replace('\n', "\r\n")).unwrap();
    }
    let plan = sb.ok(&["import", dir.to_str().unwrap(), "--dry-run"]);
    assert!(plan.contains("executor_queue line 6: no task_gid"), "{plan}");
    assert!(plan.contains("executor_runs line 5 (task 2001): unknown state \"lost\""), "{plan}");
    assert!(plan.contains("executor_runs line 4 (task 2003): its task is skip"), "{plan}");
}

/// `runs list --task GID --json`, newest first.
fn runs_of(sb: &Sandbox, gid: &str) -> Vec<Value> {
    sb.json(&["runs", "list", "--task", gid]).as_array().unwrap().clone()
}

#[test]
fn a_task_v1_ran_more_than_once_keeps_every_run_and_unknown_columns_are_named() {
    let sb = Sandbox::new();
    let export = serde_json::json!({
        "executor_queue": [
            {"id": 1, "task_gid": "5001", "description": "Done twice", "status": "done", "executor_run_id": 21,
             "asana_url": "https://app.asana.com/0/1/5001", "section": "Shipped"},
            {"id": 2, "task_gid": "5002", "description": "Retried", "status": "approved", "executor_run_id": 31,
             "section": "Doing"},
        ],
        "executor_runs": [
            {"id": 20, "task_gid": "5001", "state": "complete", "branch_name": "executor/5001", "pr_number": 50,
             "started_at": "2026-01-01T10:00:00Z", "updated_at": "2026-01-02T10:00:00Z",
             "completed_at": "2026-01-02T11:00:00Z", "host": "mac-1"},
            {"id": 21, "task_gid": "5001", "state": "complete", "branch_name": "executor/5001-2", "pr_number": 51,
             "started_at": "2026-01-03T10:00:00Z", "completed_at": "2026-01-04T11:00:00Z"},
            {"id": 31, "task_gid": "5002", "state": "ci_running", "branch_name": "executor/5002-2", "pr_number": 61,
             "started_at": "2026-01-06T10:00:00Z"},
            {"id": 30, "task_gid": "5002", "state": "abandoned", "branch_name": "executor/5002", "pr_number": 60,
             "started_at": "2026-01-05T10:00:00Z", "completed_at": "2026-01-05T12:00:00Z"},
        ]
    });
    let file = sb.path().join("twice.json");
    std::fs::write(&file, export.to_string()).unwrap();
    let file = file.to_str().unwrap();

    let plan = sb.ok(&["import", file, "--dry-run"]);
    assert!(plan.contains("executor_runs:  4 added, 0 updated, 0 unchanged, 0 refused"), "{plan}");
    assert!(plan.contains("complete → abandoned (an earlier run of its task: history): 1"), "{plan}");
    for column in ["executor_queue.asana_url", "executor_queue.section", "executor_runs.host"] {
        let line = format!("  {column}: a column executor does not know");
        assert_eq!(plan.matches(&line).count(), 1, "{column} named once in:\n{plan}");
    }

    let report = sb.json(&["import", file]);
    assert_eq!(counts(&report, "executor_runs"), [4, 0, 0, 0]);
    assert_eq!(
        report["unknown_columns"],
        serde_json::json!([
            {"table": "executor_queue", "column": "asana_url"},
            {"table": "executor_queue", "column": "section"},
            {"table": "executor_runs", "column": "host"},
        ])
    );

    // Both runs of each task, the current one (the queue row's) newest, the earlier one ended with v1's times.
    let done = runs_of(&sb, "5001");
    let seen: Vec<(&str, &str)> =
        done.iter().map(|r| (r["branch_name"].as_str().unwrap(), r["state"].as_str().unwrap())).collect();
    assert_eq!(seen, [("executor/5001-2", "complete"), ("executor/5001", "abandoned")]);
    assert_eq!(done[1]["started_at"], "2026-01-01T10:00:00Z");
    assert_eq!(done[1]["updated_at"], "2026-01-02T10:00:00Z");
    assert_eq!(done[1]["completed_at"], "2026-01-02T11:00:00Z");
    assert_eq!(done[1]["pr_number"], 50);
    let retried = runs_of(&sb, "5002");
    let seen: Vec<(&str, &str)> =
        retried.iter().map(|r| (r["branch_name"].as_str().unwrap(), r["state"].as_str().unwrap())).collect();
    assert_eq!(seen, [("executor/5002-2", "pr"), ("executor/5002", "abandoned")]);
    assert_eq!(retried[1]["completed_at"], "2026-01-05T12:00:00Z");
    let task = sb.json(&["queue", "show", "5001"]);
    let task = if task["task"].is_object() { &task["task"] } else { &task };
    assert_eq!(task["status"], "done");
    assert_eq!(task["executor_run_id"], done[0]["id"], "the task names its current run");
    // v1's states on the way are recorded: the earlier run was complete before it was superseded.
    let events = sb.json(&["events", "5001"]);
    let moves: Vec<String> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["run_id"] == done[1]["id"])
        .filter_map(|e| Some(format!("{}→{}", e["from_state"].as_str()?, e["to_state"].as_str()?)))
        .collect();
    assert_eq!(moves, ["queued→in_progress", "in_progress→pr", "pr→complete", "complete→abandoned"]);

    let events_before = sb.json(&["events"]).as_array().unwrap().len();
    let again = sb.json(&["import", file]);
    assert_eq!(counts(&again, "executor_runs"), [0, 0, 4, 0]);
    assert_eq!(
        sb.json(&["events"]).as_array().unwrap().len(),
        events_before,
        "the second import wrote nothing"
    );
    assert_eq!(sb.json(&["runs", "list"]).as_array().unwrap().len(), 4);
}
