//! The task sources against their inputs: the Asana source against a fake Asana (pagination,
//! `modified_since`, 429, 401, 500, bad tasks) and the file source on JSON Lines and CSV, bad rows
//! included.

#[path = "fake_asana/mod.rs"]
mod fake_asana;

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use executor::intake::source::EnvLookup;
use executor::intake::source::asana::{AsanaConfig, AsanaError, AsanaSource, OPT_FIELDS};
use executor::intake::source::file::{FileError, read_file};
use fake_asana::{FakeAsana, Fault, task};
use serde_json::json;

const TOKEN: &str = "2/1234567890/secret-token-value";

fn env_with_token() -> EnvLookup {
    Arc::new(|name| (name == "ASANA_TOKEN").then(|| TOKEN.to_string()))
}

fn source(fake: &FakeAsana, configure: impl FnOnce(&mut AsanaConfig)) -> AsanaSource {
    let mut config = AsanaConfig::new("backlog", "ASANA_TOKEN");
    config.api_url = fake.url.clone();
    configure(&mut config);
    AsanaSource::new(config, env_with_token()).unwrap()
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
}

fn gids(tasks: &[executor::intake::source::SourceTask]) -> Vec<&str> {
    tasks.iter().map(|task| task.gid.as_str()).collect()
}

#[tokio::test]
async fn three_pages_are_read_by_offset() {
    let fake = FakeAsana::start(TOKEN).await;
    for n in 1..=7 {
        fake.add_project_task("100", task(&n.to_string(), &format!("Task {n}"), "2026-11-01T00:00:00.000Z"));
    }
    let fetched = source(&fake, |c| {
        c.projects = vec!["100".into()];
        c.page_size = 3;
    })
    .fetch(None)
    .await
    .unwrap();

    assert_eq!(gids(&fetched.tasks), ["1", "2", "3", "4", "5", "6", "7"]);
    assert!(fetched.refused.is_empty());
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].query.get("offset"), None);
    assert_eq!(requests[1].query.get("offset").map(String::as_str), Some("eyJvZmZzZXQi:3"));
    assert_eq!(requests[2].query.get("offset").map(String::as_str), Some("eyJvZmZzZXQi:6"));
    for request in &requests {
        assert_eq!(request.path, "/tasks");
        assert_eq!(request.query["project"], "100");
        assert_eq!(request.query["limit"], "3");
        assert_eq!(request.query["opt_fields"], OPT_FIELDS);
        assert_eq!(request.authorization.as_deref(), Some(format!("Bearer {TOKEN}").as_str()));
    }
    let first = &fetched.tasks[0];
    assert_eq!(first.name, "Task 1");
    assert_eq!(first.notes, "Notes of Task 1");
    assert_eq!(first.assignee.as_deref(), Some("Alex Doe"));
    assert_eq!(first.section.as_deref(), Some("Backlog"));
    assert_eq!(first.url.as_deref(), Some("https://app.asana.com/0/1/1"));
    assert_eq!(first.completed, Some(false));
    assert_eq!(first.raw["custom_fields"][0]["display_value"], "macOS");
}

#[tokio::test]
async fn modified_since_is_sent_and_only_later_tasks_come_back() {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("100", task("old", "Old", "2026-10-01T00:00:00.000Z"));
    fake.add_project_task("100", task("new", "New", "2026-11-20T08:30:00.000Z"));
    fake.add_project_task("100", task("newer", "Newer", "2026-11-25T12:00:00.000Z"));
    let source = source(&fake, |c| c.projects = vec!["100".into()]);

    let since = at("2026-11-15T00:00:00Z");
    let fetched = source.fetch(Some(since)).await.unwrap();
    assert_eq!(gids(&fetched.tasks), ["new", "newer"]);
    assert_eq!(fake.requests()[0].query["modified_since"], "2026-11-15T00:00:00.000Z");
    assert_eq!(fetched.cursor, Some(at("2026-11-25T12:00:00Z")));

    // Nothing newer: the cursor stays where it was.
    let again = source.fetch(Some(at("2026-12-01T00:00:00Z"))).await.unwrap();
    assert!(again.tasks.is_empty());
    assert_eq!(again.cursor, Some(at("2026-12-01T00:00:00Z")));

    // A first fetch sends no modified_since.
    source.fetch(None).await.unwrap();
    assert_eq!(fake.requests().last().unwrap().query.get("modified_since"), None);
}

#[tokio::test]
async fn projects_sections_and_the_user_task_list_are_read_and_a_task_comes_once() {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("100", task("1", "In project", "2026-11-01T00:00:00Z"));
    fake.add_section_task("200", task("1", "In project", "2026-11-01T00:00:00Z"));
    fake.add_section_task("200", task("2", "In section", "2026-11-01T00:00:00Z"));
    fake.add_user_task_list_task("300", task("3", "Mine", "2026-11-01T00:00:00Z"));
    let fetched = source(&fake, |c| {
        c.projects = vec!["100".into()];
        c.sections = vec!["200".into()];
        c.user_task_list = Some("300".into());
    })
    .fetch(None)
    .await
    .unwrap();
    assert_eq!(gids(&fetched.tasks), ["1", "2", "3"]);
    let asked: Vec<(String, Option<String>, Option<String>)> = fake
        .requests()
        .into_iter()
        .map(|r| (r.path, r.query.get("project").cloned(), r.query.get("section").cloned()))
        .collect();
    assert_eq!(
        asked,
        [
            ("/tasks".to_string(), Some("100".to_string()), None),
            ("/tasks".to_string(), None, Some("200".to_string())),
            ("/user_task_lists/300/tasks".to_string(), None, None),
        ]
    );
}

#[tokio::test]
async fn a_429_waits_its_retry_after_and_retries() {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("100", task("1", "Task", "2026-11-01T00:00:00Z"));
    fake.fail_next(Fault::TooMany { retry_after: 1 });
    let fetched = source(&fake, |c| c.projects = vec!["100".into()]).fetch(None).await.unwrap();
    assert_eq!(gids(&fetched.tasks), ["1"]);
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn a_429_that_never_ends_is_an_error_after_three_retries() {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("100", task("1", "Task", "2026-11-01T00:00:00Z"));
    for _ in 0..4 {
        fake.fail_next(Fault::TooMany { retry_after: 0 });
    }
    let error = source(&fake, |c| c.projects = vec!["100".into()]).fetch(None).await.unwrap_err();
    assert!(matches!(error, AsanaError::RateLimited { retries: 3, .. }), "{error:?}");
    assert_eq!(fake.requests().len(), 4);
}

#[tokio::test]
async fn a_401_names_the_variable_and_says_how_to_make_a_token() {
    let fake = FakeAsana::start("another-token").await;
    fake.add_project_task("100", task("1", "Task", "2026-11-01T00:00:00Z"));
    let error = source(&fake, |c| c.projects = vec!["100".into()]).fetch(None).await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, AsanaError::Unauthorized { .. }), "{error:?}");
    assert!(message.contains("ASANA_TOKEN"), "{message}");
    assert!(message.contains("personal access token"), "{message}");
    assert!(!message.contains(TOKEN) && !format!("{error:?}").contains(TOKEN), "{message}");
}

#[tokio::test]
async fn an_unset_variable_is_named_before_any_request() {
    let fake = FakeAsana::start(TOKEN).await;
    let mut config = AsanaConfig::new("backlog", "MY_ASANA_PAT");
    config.api_url = fake.url.clone();
    config.projects = vec!["100".into()];
    let error = AsanaSource::new(config, Arc::new(|_| None)).unwrap().fetch(None).await.unwrap_err();
    assert!(matches!(error, AsanaError::MissingToken { .. }), "{error:?}");
    assert!(error.to_string().contains("MY_ASANA_PAT"), "{error}");
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn a_500_is_an_error_naming_the_path_and_never_the_token() {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("100", task("1", "Task", "2026-11-01T00:00:00Z"));
    fake.fail_next(Fault::Status(500));
    let error = source(&fake, |c| c.projects = vec!["100".into()]).fetch(None).await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, AsanaError::Status { status: 500, .. }), "{error:?}");
    assert!(message.contains("/tasks?project=100"), "{message}");
    assert!(!message.contains(TOKEN) && !format!("{error:?}").contains(TOKEN), "{message}");
    assert!(!format!("{:?}", source(&fake, |_| {})).contains(TOKEN));
}

#[tokio::test]
async fn odd_tasks_are_kept_as_text_and_a_malformed_one_is_refused_with_its_reason() {
    let fake = FakeAsana::start(TOKEN).await;
    let mut no_notes = task("empty", "No notes", "2026-11-01T00:00:00Z");
    no_notes["notes"] = json!("");
    let mut huge = task("huge", "Huge notes", "2026-11-01T00:00:00Z");
    huge["notes"] = json!("log line 🚀\n".repeat(80_000)); // about 1 MB
    let mut html = task("html", "<b>Bold</b> title 🎉", "2026-11-01T00:00:00Z");
    html["notes"] = json!("<p>Hello <a href=\"https://figma.com/x\">design</a></p> &amp; 😀");
    let mut no_gid = task("x", "No gid", "2026-11-01T00:00:00Z");
    no_gid.as_object_mut().unwrap().remove("gid");
    fake.add_project_task("100", no_notes);
    fake.add_project_task("100", no_gid);
    fake.add_project_task("100", huge);
    fake.add_project_task("100", json!("not an object"));
    fake.add_project_task("100", html);

    let fetched = source(&fake, |c| c.projects = vec!["100".into()]).fetch(None).await.unwrap();
    assert_eq!(gids(&fetched.tasks), ["empty", "huge", "html"]);
    assert_eq!(fetched.tasks[0].notes, "");
    let huge = &fetched.tasks[1];
    assert!(huge.notes.len() > 512 * 1024, "kept whole for the filters: {}", huge.notes.len());
    assert!(huge.notes.starts_with("log line 🚀\n"));
    assert_eq!(fetched.tasks[2].name, "<b>Bold</b> title 🎉");
    assert_eq!(fetched.tasks[2].notes, "<p>Hello <a href=\"https://figma.com/x\">design</a></p> &amp; 😀");
    assert_eq!(
        fetched.refused,
        [
            ("backlog project 100 page 1 item 2".to_string(), "it has no gid".to_string()),
            ("backlog project 100 page 1 item 4".to_string(), "not a JSON object but a string".to_string()),
        ]
    );
}

#[tokio::test]
async fn a_user_task_list_ignores_modified_since_so_older_tasks_are_dropped_here() {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_user_task_list_task("300", task("old", "Old", "2026-10-01T00:00:00Z"));
    fake.add_user_task_list_task("300", task("new", "New", "2026-11-20T00:00:00Z"));
    let fetched = source(&fake, |c| c.user_task_list = Some("300".into()))
        .fetch(Some(at("2026-11-15T00:00:00Z")))
        .await
        .unwrap();
    assert_eq!(gids(&fetched.tasks), ["new"]);
    assert!(fetched.refused.is_empty());
}

#[tokio::test]
async fn invalid_utf8_in_a_page_loses_only_the_bad_bytes() {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("100", task("1", "Unused", "2026-11-01T00:00:00Z"));
    fake.fail_next(Fault::Body(
        b"{\"data\":[{\"gid\":\"1\",\"name\":\"caf\xE9\",\"notes\":\"ok \xFF\xFE end\"},{\"gid\":\"2\",\"name\":\"fine\"}],\"next_page\":null}",
    ));
    let fetched = source(&fake, |c| c.projects = vec!["100".into()]).fetch(None).await.unwrap();
    assert_eq!(gids(&fetched.tasks), ["1", "2"]);
    assert_eq!(fetched.tasks[0].name, "caf\u{FFFD}");
    assert_eq!(fetched.tasks[0].notes, "ok \u{FFFD}\u{FFFD} end");
}

// The file source.

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn json_lines_are_read_and_bad_lines_refused_by_number() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"{\"gid\":\"1\",\"name\":\"One\",\"modified_at\":\"2026-11-02T00:00:00Z\"}\n");
    bytes.extend_from_slice(b"\n");
    bytes.extend_from_slice(b"{\"name\":\"no id\"}\n");
    bytes.extend_from_slice(b"{\"gid\":\"4\",\"name\":\"caf\xE9\"}\n"); // Latin-1, not UTF-8
    bytes.extend_from_slice(b"{\"gid\":\"5\",\"name\":\r\n"); // truncated JSON
    bytes.extend_from_slice(
        "{\"task_gid\":6,\"name\":\"Six 😀\",\"assignee\":{\"name\":\"Alex\"},\"modified_at\":\"2026-11-09T00:00:00Z\"}\r\n"
            .as_bytes(),
    );
    bytes.extend_from_slice(b"{\"gid\":\"7\"}"); // no final newline
    let path = write(&dir, "tasks.jsonl", &bytes);

    let fetched = read_file(&path, "inbox").unwrap();
    assert_eq!(gids(&fetched.tasks), ["1", "6", "7"]);
    assert_eq!(fetched.tasks[1].name, "Six 😀");
    assert_eq!(fetched.tasks[1].assignee.as_deref(), Some("Alex"));
    assert_eq!(fetched.cursor, Some(at("2026-11-09T00:00:00Z")));
    let places: Vec<&str> = fetched.refused.iter().map(|(place, _)| place.as_str()).collect();
    assert_eq!(places, ["inbox line 3", "inbox line 4", "inbox line 5"]);
    assert_eq!(fetched.refused[0].1, "it has no gid");
    assert_eq!(fetched.refused[1].1, "invalid UTF-8 at byte 23 of the line");
    assert!(fetched.refused[2].1.starts_with("not JSON"), "{:?}", fetched.refused[2]);
}

#[test]
fn csv_rows_are_read_with_unknown_columns_in_raw_and_bad_rows_refused_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"gid,name,notes,completed,assignee,section,url,modified_at,platform\n");
    bytes.extend_from_slice(
        b"1,One,\"Two\nlines, quoted\",false,Alex,Backlog,https://x/1,2026-11-01T00:00:00Z,macOS\n",
    );
    bytes.extend_from_slice(b"2,Short row\n");
    bytes.extend_from_slice(b",No id,,,,,,,\n");
    bytes.extend_from_slice(b"4,Bad \xFF byte,,,,,,,\n");
    bytes.extend_from_slice(b"5,Bad completed,,perhaps,,,,,\n");
    bytes.extend_from_slice("6,Six 🎉,<b>html</b>,true,,,,,iOS\n".as_bytes());
    let path = write(&dir, "tasks.csv", &bytes);

    let fetched = read_file(&path, "csv").unwrap();
    assert_eq!(gids(&fetched.tasks), ["1", "6"]);
    let one = &fetched.tasks[0];
    assert_eq!(one.notes, "Two\nlines, quoted");
    assert_eq!(one.completed, Some(false));
    assert_eq!(one.assignee.as_deref(), Some("Alex"));
    assert_eq!(one.section.as_deref(), Some("Backlog"));
    assert_eq!(one.url.as_deref(), Some("https://x/1"));
    assert_eq!(one.modified_at, Some(at("2026-11-01T00:00:00Z")));
    assert_eq!(one.raw["platform"], "macOS");
    assert_eq!(fetched.tasks[1].notes, "<b>html</b>");
    assert_eq!(fetched.tasks[1].completed, Some(true));
    assert_eq!(
        fetched.refused,
        [
            ("csv line 4".to_string(), "2 columns, but the header has 9".to_string()),
            ("csv line 5".to_string(), "it has no gid".to_string()),
            ("csv line 6".to_string(), "invalid UTF-8 in column \"name\" (column 2) at byte 5".to_string()),
            ("csv line 7".to_string(), "its completed is \"perhaps\", not true or false".to_string()),
        ]
    );
}

#[test]
fn a_csv_with_only_some_columns_is_read_and_one_without_an_id_column_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "few.csv", b"task_gid,name\n10,Ten\n11,Eleven\n");
    let fetched = read_file(&path, "few").unwrap();
    assert_eq!(gids(&fetched.tasks), ["10", "11"]);
    assert_eq!(fetched.tasks[0].notes, "");
    assert_eq!(fetched.tasks[0].completed, None);

    let path = write(&dir, "noid.csv", b"name,notes\nTen,x\n");
    assert!(matches!(read_file(&path, "noid"), Err(FileError::NoIdColumn { .. })));
}

#[test]
fn the_format_of_an_unknown_extension_is_read_from_the_content() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = write(&dir, "tasks.txt", b"\n  {\"gid\":\"1\"}\n{\"gid\":\"2\"}\n");
    assert_eq!(gids(&read_file(&jsonl, "t").unwrap().tasks), ["1", "2"]);
    let csv = write(&dir, "tasks.export", b"gid,name\n3,Three\n");
    assert_eq!(gids(&read_file(&csv, "t").unwrap().tasks), ["3"]);
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let error = read_file(std::path::Path::new("/nonexistent/tasks.jsonl"), "t").unwrap_err();
    assert!(error.to_string().contains("/nonexistent/tasks.jsonl"), "{error}");
}

#[test]
fn a_file_is_handed_on_in_pages_and_a_closed_intake_stops_the_reading() {
    use executor::intake::source::FILE_PAGE;
    use executor::intake::source::file::read_file_pages;
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=FILE_PAGE * 2 + 5)
        .map(|n| {
            format!(
                "{}\n",
                json!({"gid": n.to_string(), "modified_at": format!("2026-11-{:02}T00:00:00Z", 1 + n % 28)})
            )
        })
        .collect();
    let path = write(&dir, "many.jsonl", lines.as_bytes());

    let mut sizes = Vec::new();
    let cursor = read_file_pages(&path, "inbox", |page| {
        sizes.push(page.tasks.len());
        true
    })
    .unwrap();
    assert_eq!(sizes, [FILE_PAGE, FILE_PAGE, 5]);
    assert_eq!(cursor, Some(at("2026-11-28T00:00:00Z")));

    let mut pages = 0;
    read_file_pages(&path, "inbox", |_| {
        pages += 1;
        false
    })
    .unwrap();
    assert_eq!(pages, 1, "reading went on after the intake stopped");
}
