//! The shared task shape: notes kept whole, and both JSON shapes a source may deliver.

use serde_json::json;

use super::*;

#[test]
fn an_asana_shaped_task_is_read() {
    let task = task_from_json(json!({
        "gid": "1201", "name": "Fix login", "notes": "It fails", "completed": false,
        "assignee": {"gid": "9", "name": null, "email": "alex@example.com"},
        "memberships": [{"section": {"name": "Backlog"}}, {"section": {"name": "Other"}}],
        "permalink_url": "https://app.asana.com/0/1/1201",
        "modified_at": "2026-11-30T10:00:00.000Z"
    }))
    .unwrap();
    assert_eq!(task.gid, "1201");
    assert_eq!(task.name, "Fix login");
    assert_eq!(task.assignee.as_deref(), Some("alex@example.com"));
    assert_eq!(task.section.as_deref(), Some("Backlog"));
    assert_eq!(task.url.as_deref(), Some("https://app.asana.com/0/1/1201"));
    assert_eq!(task.completed, Some(false));
    assert_eq!(task.modified_at.unwrap().to_rfc3339(), "2026-11-30T10:00:00+00:00");
    assert_eq!(task.raw["memberships"][1]["section"]["name"], "Other");
}

#[test]
fn a_flat_task_is_read_and_a_numeric_id_is_text() {
    let task = task_from_json(json!({
        "task_gid": 42, "name": "Flat", "assignee": "Alex", "section": "Inbox", "url": "u",
        "completed": "yes"
    }))
    .unwrap();
    assert_eq!(task.gid, "42");
    assert_eq!(task.notes, "");
    assert_eq!(task.assignee.as_deref(), Some("Alex"));
    assert_eq!(task.section.as_deref(), Some("Inbox"));
    assert_eq!(task.completed, Some(true));
}

#[test]
fn a_task_without_notes_has_empty_notes_and_null_fields_are_absent() {
    let task = task_from_json(json!({"gid": "1", "name": "n", "notes": null, "assignee": null})).unwrap();
    assert_eq!(task.notes, "");
    assert_eq!(task.assignee, None);
}

#[test]
fn long_notes_are_kept_whole_for_the_filters() {
    // A Figma link after a megabyte of pasted logs: the filters must see it (they once saw 256 KiB).
    let notes = format!("{}\nDesign: https://www.figma.com/design/abc/x", "log line é😀\n".repeat(80_000));
    let task = task_from_json(json!({"gid": "1", "notes": notes.clone()})).unwrap();
    assert_eq!(task.notes, notes);
    assert_eq!(task.raw["notes"].as_str(), Some(notes.as_str()));
}

#[test]
fn unreadable_tasks_say_why() {
    let cases = [
        (json!([1, 2]), "not a JSON object but an array"),
        (json!({"name": "no id"}), "it has no gid"),
        (json!({"gid": ""}), "its gid is a string, not a non-empty string"),
        (json!({"gid": {"x": 1}}), "its gid is an object, not a non-empty string"),
        (json!({"gid": "1", "name": 5}), "its name is a number, not a string"),
        (json!({"gid": "1", "completed": "maybe"}), "its completed is \"maybe\", not true or false"),
        (
            json!({"gid": "1", "modified_at": "yesterday"}),
            "its modified_at \"yesterday\" is not an RFC 3339 timestamp",
        ),
    ];
    for (raw, why) in cases {
        assert_eq!(task_from_json(raw.clone()).unwrap_err(), why, "{raw}");
    }
}

#[test]
fn the_cursor_only_moves_forward() {
    let early = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().with_timezone(&Utc);
    let late = DateTime::parse_from_rfc3339("2026-02-01T00:00:00Z").unwrap().with_timezone(&Utc);
    let mut fetched = Fetched { cursor: Some(late), ..Fetched::default() };
    fetched.advance_cursor(Some(early));
    fetched.advance_cursor(None);
    assert_eq!(fetched.cursor, Some(late));
    fetched.cursor = None;
    fetched.advance_cursor(Some(early));
    assert_eq!(fetched.cursor, Some(early));
}
