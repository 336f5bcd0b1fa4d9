//! `executor intake`, the real binary: a config with file sources (JSON Lines, CSV) and an Asana source
//! pointed at the fake Asana. What lands in the queue, incremental fetches by cursor, revisions of
//! approved tasks, a failing source beside working ones, and bad input.

mod cli_support;
mod common;
#[path = "fake_asana/mod.rs"]
mod fake_asana;

use std::process::Output;

use cli_support::{Sandbox, text};
use executor::domain::{QueueStatus, Task, TaskGid};
use executor::store::Store;
use fake_asana::{FakeAsana, Fault, task};
use serde_json::{Value, json};

const TOKEN: &str = "2/1234567890/fake-asana-token";
const TOKEN_ENV: &str = "TEST_ASANA_TOKEN";

/// A sandbox whose config has a repo, the file source `inbox` (tasks.jsonl beside the config), the
/// file source `sheet` (tasks.csv) and the Asana source `backlog` (project 100 of `fake`), on SQLite or
/// on the PostgreSQL `database`.
fn sandbox(fake: &FakeAsana, database: Option<&str>) -> Sandbox {
    let sb = Sandbox::fresh();
    let database = database.map_or(String::new(), |url| format!("[database]\nurl = \"{url}\"\n"));
    sb.write_config(&format!(
        "{database}\
         [repos.app]\npath = \"/nonexistent/app\"\n\
         [[sources]]\nname = \"inbox\"\nkind = \"file\"\npath = \"tasks.jsonl\"\nrepo = \"app\"\n\
         [[sources]]\nname = \"sheet\"\nkind = \"file\"\npath = \"tasks.csv\"\n\
         [[sources]]\nname = \"backlog\"\nkind = \"asana\"\napi_url = \"{}\"\nprojects = [\"100\"]\n\
         token_env = \"{TOKEN_ENV}\"\nrepo = \"app\"\n",
        fake.url
    ));
    sb
}

fn write(sb: &Sandbox, name: &str, bytes: &[u8]) {
    std::fs::write(sb.path().join(name), bytes).unwrap();
}

/// The usual files: two JSON Lines tasks and a CSV of two columns only.
fn write_files(sb: &Sandbox) {
    let lines = [
        json!({"gid": "f1", "name": "From the file", "notes": "Body", "assignee": "Sam", "completed": false,
               "url": "https://tracker.example/f1", "modified_at": "2026-11-01T00:00:00Z", "team": "mac"}),
        json!({"task_gid": "f2", "name": "Done already", "completed": true}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    write(sb, "tasks.jsonl", text.as_bytes());
    write(sb, "tasks.csv", b"gid,name\nc1,From the sheet\nc2\n");
}

async fn intake(sb: &Sandbox, args: &[&str], token: &str) -> Output {
    let mut all = vec!["intake"];
    all.extend_from_slice(args);
    let mut command = tokio::process::Command::from(sb.command(&all));
    command.env(TOKEN_ENV, token).stdin(std::process::Stdio::null());
    command.output().await.unwrap()
}

async fn succeeds(sb: &Sandbox, args: &[&str]) -> String {
    let out = intake(sb, args, TOKEN).await;
    assert_eq!(out.status.code(), Some(0), "stdout {} stderr {}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

/// The store the sandbox's commands use.
async fn store(sb: &Sandbox, database: Option<&str>) -> Store {
    let url = match database {
        Some(url) => url.to_string(),
        None => format!("sqlite://{}", sb.path().join("data/executor.db").display()),
    };
    Store::open(&url).await.unwrap()
}

async fn task_of(store: &Store, gid: &str) -> Task {
    store.task(&TaskGid::parse(gid).unwrap()).await.unwrap()
}

fn raw(t: &Task) -> Value {
    serde_json::from_str(t.raw_json.as_deref().unwrap()).unwrap()
}

/// Every source lands with its facts; a second intake asks Asana only for what changed since the
/// first, updates only the changed task, and makes an approved task's new text a revision.
async fn sources_land_then_only_changes_come_back(database: Option<&str>) {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("100", task("101", "First", "2026-11-01T00:00:00.000Z"));
    fake.add_project_task("100", task("102", "Second", "2026-11-02T00:00:00.000Z"));
    fake.add_project_task("100", task("103", "Third", "2026-11-03T00:00:00.000Z"));
    let sb = sandbox(&fake, database);
    write_files(&sb);

    let out = succeeds(&sb, &[]).await;
    assert_eq!(
        out,
        "inbox (file): 2 fetched — 2 added, 0 updated, 0 unchanged\n\
         sheet (file): 1 fetched — 1 added, 0 updated, 0 unchanged; 1 refused: sheet line 3: 1 columns, but the header has 2\n\
         backlog (asana): 3 fetched — 3 added, 0 updated, 0 unchanged\n"
    );
    let s = store(&sb, database).await;
    let first = task_of(&s, "101").await;
    assert_eq!(first.status, QueueStatus::Pending);
    assert_eq!(first.source.as_deref(), Some("backlog"));
    assert_eq!(first.repo.as_deref(), Some("app"));
    assert_eq!(first.description.as_deref(), Some("First\n\nNotes of First"));
    assert_eq!(first.notes, None);
    assert_eq!(first.assignee.as_deref(), Some("Alex Doe"));
    assert_eq!(first.completed, Some(false));
    assert_eq!(first.url.as_deref(), Some("https://app.asana.com/0/1/101"));
    assert_eq!(raw(&first)["custom_fields"][0]["display_value"], "macOS");
    assert_eq!(raw(&first)["memberships"][0]["section"]["name"], "Backlog");
    let file = task_of(&s, "f1").await;
    assert_eq!((file.source.as_deref(), file.repo.as_deref()), (Some("inbox"), Some("app")));
    assert_eq!(file.description.as_deref(), Some("From the file\n\nBody"));
    assert_eq!((file.assignee.as_deref(), file.completed), (Some("Sam"), Some(false)));
    assert_eq!(raw(&file)["team"], "mac");
    assert_eq!(task_of(&s, "f2").await.completed, Some(true));
    let sheet = task_of(&s, "c1").await;
    assert_eq!((sheet.source.as_deref(), sheet.repo), (Some("sheet"), None));
    assert_eq!(sheet.description.as_deref(), Some("From the sheet"));
    assert_eq!((sheet.assignee, sheet.completed), (None, None));
    let cursors = s.source_cursors().await.unwrap();
    let backlog = cursors.iter().find(|c| c.source == "backlog").unwrap();
    assert_eq!(backlog.cursor.map(|c| c.to_rfc3339()).as_deref(), Some("2026-11-03T00:00:00+00:00"));
    assert!(backlog.fetched_at.is_some() && backlog.last_error.is_none(), "{backlog:?}");
    assert!(fake.requests().iter().all(|r| !r.query.contains_key("modified_since")));

    // A human approves 102; then both 101 and 102 change in Asana.
    sb.ok(&["approve", "--skip-triage", "102"]);
    fake.set_project_task("100", task("101", "First, edited", "2026-11-05T00:00:00.000Z"));
    fake.set_project_task("100", task("102", "Second, edited", "2026-11-06T00:00:00.000Z"));
    let before = fake.requests().len();
    let out = succeeds(&sb, &["--source", "backlog"]).await;
    assert_eq!(
        out,
        "backlog (asana): 3 fetched — 0 added, 1 updated, 1 revised, 1 unchanged\n  \
         revision received for task 102: its approved text is kept and agents are told only that; \
         compare with `executor queue show 102`, accept it with `executor approve 102`\n"
    );
    let asked: Vec<_> = fake.requests()[before..].to_vec();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].query.get("modified_since").map(String::as_str), Some("2026-11-03T00:00:00.000Z"));

    let first = task_of(&s, "101").await;
    assert_eq!(first.description.as_deref(), Some("First, edited\n\nNotes of First, edited"));
    assert_eq!(first.status, QueueStatus::Pending);
    let approved = task_of(&s, "102").await;
    assert_eq!(approved.status, QueueStatus::Approved);
    assert_eq!(approved.description.as_deref(), Some("Second\n\nNotes of Second"));
    assert_eq!(approved.revision_description.as_deref(), Some("Second, edited\n\nNotes of Second, edited"));
    assert_eq!(task_of(&s, "103").await.description.as_deref(), Some("Third\n\nNotes of Third"));
    assert_eq!(task_of(&s, "f1").await.description.as_deref(), Some("From the file\n\nBody"));
    let cursor = s.source_cursors().await.unwrap().into_iter().find(|c| c.source == "backlog").unwrap();
    assert_eq!(cursor.cursor.map(|c| c.to_rfc3339()).as_deref(), Some("2026-11-06T00:00:00+00:00"));

    // Nothing changed: the next intake stores nothing new.
    let out = succeeds(&sb, &["--json"]).await;
    let report: Value = serde_json::from_str(&out).unwrap();
    let backlog = &report["sources"][2];
    assert_eq!((backlog["name"].as_str(), backlog["kind"].as_str()), (Some("backlog"), Some("asana")));
    assert_eq!((backlog["fetched"].as_u64(), backlog["unchanged"].as_u64()), (Some(1), Some(1)));
    assert_eq!(backlog["cursor"], "2026-11-06T00:00:00Z");
    assert_eq!(report["sources"][1]["refused"][0]["where"], "sheet line 3");

    // --full asks for everything again (no modified_since), changes nothing that did not change, and
    // the cursor stays where the data is.
    let before = fake.requests().len();
    let out = succeeds(&sb, &["--source", "backlog", "--full"]).await;
    assert!(out.starts_with("backlog (asana): 3 fetched — 0 added, 0 updated, 3 unchanged"), "{out}");
    let asked: Vec<_> = fake.requests()[before..].to_vec();
    assert!(asked.iter().all(|r| !r.query.contains_key("modified_since")), "{asked:?}");
    let cursor = s.source_cursors().await.unwrap().into_iter().find(|c| c.source == "backlog").unwrap();
    assert_eq!(cursor.cursor.map(|c| c.to_rfc3339()).as_deref(), Some("2026-11-06T00:00:00+00:00"));
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_land_then_only_changes_come_back_on_sqlite() {
    sources_land_then_only_changes_come_back(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn sources_land_then_only_changes_come_back_on_postgres() {
    if let Some(db) = common::postgres("sources_land_then_only_changes_come_back").await {
        sources_land_then_only_changes_come_back(Some(&db.url)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_token_fails_its_source_and_the_others_still_come_in() {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("100", task("101", "First", "2026-11-01T00:00:00.000Z"));
    let sb = sandbox(&fake, None);
    write_files(&sb);

    let out = intake(&sb, &[], "revoked-token-value").await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.contains("inbox (file): 2 fetched — 2 added"), "{stdout}");
    assert!(
        stdout.contains(&format!("backlog (asana): failed: Asana refused the token in {TOKEN_ENV} (401")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("export it as {TOKEN_ENV}")), "{stdout}");
    assert!(stderr.contains("1 of 3 sources failed (backlog); 2 others were taken in"), "{stderr}");
    assert!(!stdout.contains("revoked-token-value") && !stderr.contains("revoked-token-value"));

    let s = store(&sb, None).await;
    assert_eq!(task_of(&s, "f1").await.source.as_deref(), Some("inbox"));
    assert!(s.find_task(&TaskGid::parse("101").unwrap()).await.unwrap().is_none());
    let cursors = s.source_cursors().await.unwrap();
    let backlog = cursors.iter().find(|c| c.source == "backlog").unwrap();
    assert!(backlog.last_error.as_deref().unwrap().contains(TOKEN_ENV), "{backlog:?}");
    assert!(backlog.last_error_at.is_some() && backlog.cursor.is_none() && backlog.fetched_at.is_none());
    let inbox = cursors.iter().find(|c| c.source == "inbox").unwrap();
    assert!(inbox.fetched_at.is_some() && inbox.last_error.is_none(), "{inbox:?}");

    // A 500 is Asana's side: said so, and recorded in place of the 401.
    fake.fail_next(Fault::Status(500));
    let out = intake(&sb, &["--source", "backlog"], TOKEN).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("backlog (asana): failed: Asana answered 500"), "{stdout}");
    assert!(stdout.contains("nothing was lost"), "{stdout}");
    let error = s.source_cursors().await.unwrap().into_iter().find(|c| c.source == "backlog").unwrap();
    assert!(error.last_error.as_deref().unwrap().contains("500"), "{error:?}");

    // Fixed: the task comes in and the error is cleared.
    let out = succeeds(&sb, &["--source", "backlog"]).await;
    assert_eq!(out, "backlog (asana): 1 fetched — 1 added, 0 updated, 0 unchanged\n");
    let fixed = s.source_cursors().await.unwrap().into_iter().find(|c| c.source == "backlog").unwrap();
    assert!(fixed.last_error.is_none() && fixed.cursor.is_some(), "{fixed:?}");
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_file_names_the_key_to_fix() {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("100", task("101", "First", "2026-11-01T00:00:00.000Z"));
    let sb = sandbox(&fake, None);
    write(&sb, "tasks.csv", b"gid,name\nc1,From the sheet\n");

    let out = intake(&sb, &[], TOKEN).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("inbox (file): failed: cannot read the task file"), "{stdout}");
    assert!(stdout.contains("check `path` of the [[sources]] entry named \"inbox\" in"), "{stdout}");
    assert!(stdout.contains("sheet (file): 1 fetched — 1 added"), "{stdout}");
    assert!(stdout.contains("backlog (asana): 1 fetched — 1 added"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_html_and_empty_notes_and_bad_items_are_each_handled() {
    let fake = FakeAsana::start(TOKEN).await;
    let mut huge = task("201", "Huge", "2026-11-01T00:00:00.000Z");
    huge["notes"] = json!("log line\n".repeat(120_000));
    fake.add_project_task("100", huge);
    let mut html = task("202", "Html", "2026-11-01T00:00:00.000Z");
    html["notes"] = json!("<p>Click <a href=\"x\">here</a></p><script>alert(1)</script>");
    fake.add_project_task("100", html);
    let mut empty = task("203", "No notes", "2026-11-01T00:00:00.000Z");
    empty["notes"] = json!("");
    fake.add_project_task("100", empty);
    let mut null = task("204", "Null notes", "2026-11-01T00:00:00.000Z");
    null["notes"] = Value::Null;
    fake.add_project_task("100", null);
    fake.add_project_task("100", json!({"name": "no gid"}));
    let sb = sandbox(&fake, None);
    let mut lines = Vec::new();
    lines.extend_from_slice(b"{\"gid\": \"../escape\", \"name\": \"bad gid\"}\n");
    lines.extend_from_slice(b"{\"gid\": \"nul\", \"name\": \"a\\u0000b\"}\n");
    lines.extend_from_slice(b"{\"gid\": \"utf\", \"name\": \"bad \xff byte\"}\n");
    lines.extend_from_slice(b"{\"gid\": \"ok\", \"name\": \"fine\"}\n");
    write(&sb, "tasks.jsonl", &lines);
    // Columns missing (no notes, completed …), one row short, one with an extra column.
    write(&sb, "tasks.csv", b"task_gid,name,assignee\nc1,Sheet task,Kim\nc2,Short\nc3,Long,Kim,extra\n");

    let out = intake(&sb, &["--json"], TOKEN).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let refused = |i: usize| -> Vec<(String, String)> {
        report["sources"][i]["refused"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["where"].as_str().unwrap().to_string(), r["why"].as_str().unwrap().to_string()))
            .collect()
    };
    let inbox = refused(0);
    assert_eq!(inbox.len(), 3, "{inbox:?}");
    assert_eq!(inbox[0].0, "inbox line 3");
    assert!(inbox[0].1.contains("invalid UTF-8"), "{inbox:?}");
    assert_eq!(inbox[1].0, "inbox task ../escape");
    assert!(inbox[1].1.contains("invalid task gid"), "{inbox:?}");
    assert_eq!(inbox[2].0, "inbox task nul");
    assert!(inbox[2].1.contains("NUL"), "{inbox:?}");
    assert_eq!(report["sources"][0]["added"], 1);
    let sheet = refused(1);
    assert_eq!(sheet.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(), ["sheet line 3", "sheet line 4"]);
    assert_eq!(report["sources"][1]["added"], 1);
    let backlog = refused(2);
    assert_eq!(backlog.len(), 1, "{backlog:?}");
    assert!(backlog[0].1.contains("no gid"), "{backlog:?}");
    assert_eq!(report["sources"][2]["added"], 4);

    let s = store(&sb, None).await;
    let huge = task_of(&s, "201").await;
    let description = huge.description.unwrap();
    assert!(description.starts_with("Huge\n\nlog line\n"));
    assert!(description.len() > 512 * 1024, "kept whole for the filters: {}", description.len());
    let html = task_of(&s, "202").await;
    assert_eq!(
        html.description.as_deref(),
        Some("Html\n\n<p>Click <a href=\"x\">here</a></p><script>alert(1)</script>")
    );
    assert_eq!(task_of(&s, "203").await.description.as_deref(), Some("No notes"));
    assert_eq!(task_of(&s, "204").await.description.as_deref(), Some("Null notes"));
    let c1 = task_of(&s, "c1").await;
    assert_eq!((c1.description.as_deref(), c1.assignee.as_deref()), (Some("Sheet task"), Some("Kim")));
    assert_eq!(task_of(&s, "ok").await.status, QueueStatus::Pending);
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_source_is_a_usage_error_listing_the_names() {
    let fake = FakeAsana::start(TOKEN).await;
    let sb = sandbox(&fake, None);
    let out = intake(&sb, &["--source", "nope"], TOKEN).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("there is no source named \"nope\"; the configured ones are inbox, sheet, backlog"),
        "{stderr}"
    );
    assert!(fake.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_sources_says_how_to_add_one() {
    let sb = Sandbox::fresh();
    let out = succeeds(&sb, &[]).await;
    assert!(out.starts_with("no task sources are configured: add a [[sources]] table to "), "{out}");
    let out = succeeds(&sb, &["--json"]).await;
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!({"sources": []}));
}

#[test]
fn the_help_says_what_a_source_is_and_where_to_configure_it() {
    let sb = Sandbox::fresh();
    let help = sb.ok(&["intake", "--help"]);
    for needle in ["[[sources]]", "cursor", "ASANA_TOKEN", "revision", "--source <NAME>"] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}
