use serde_json::json;

use super::*;
use crate::import::read::parse_json;

fn plan_of(v: serde_json::Value) -> Plan {
    plan(&parse_json(&v.to_string()).unwrap())
}

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

#[test]
fn statuses_map_and_null_or_unknown_become_pending() {
    assert_eq!(map_status(Some("for_review")), QueueStatus::ForReview);
    assert_eq!(map_status(Some(" Awaiting_Go ")), QueueStatus::AwaitingGo);
    assert_eq!(map_status(Some("approved")), QueueStatus::Approved);
    assert_eq!(map_status(Some("skip")), QueueStatus::Skip);
    assert_eq!(map_status(Some("done")), QueueStatus::Done);
    assert_eq!(map_status(None), QueueStatus::Pending);
    assert_eq!(map_status(Some("needs_info")), QueueStatus::Pending);
    assert_eq!(map_status(Some("in_progress")), QueueStatus::Approved, "v1 was working on it");
}

#[test]
fn ci_running_is_pr_and_unknown_states_are_none() {
    assert_eq!(map_state("ci_running"), Some(RunState::Pr));
    assert_eq!(map_state("in_progress"), Some(RunState::InProgress));
    assert_eq!(map_state("complete"), Some(RunState::Complete));
    assert_eq!(map_state("exploded"), None);
    assert_eq!(map_state("awaiting_review"), Some(RunState::Pr), "the review is the pr sub-logic's");
}

#[test]
fn the_seeds_in_progress_tasks_keep_their_runs_and_the_mapping_says_what_each_value_became() {
    let p = plan_of(json!({
        "executor_queue": [
            {"task_gid": "1", "status": "in_progress", "executor_run_id": 10},
            {"task_gid": "2", "status": "in_progress"},
            {"task_gid": "3", "status": "in_progress"},
            {"task_gid": "4", "status": "in_progress"},
            {"task_gid": "5", "status": "awaiting_go"},
            {"task_gid": "6", "status": "awaiting_go"},
        ],
        "executor_runs": [
            {"id": 10, "task_gid": "1", "state": "ci_running"},
            {"id": 11, "task_gid": "2", "state": "awaiting_review"},
            {"id": 12, "task_gid": "3", "state": "queued"},
            {"id": 13, "task_gid": "4", "state": "complete"},
            {"id": 14, "task_gid": "5", "state": "awaiting_review"},
            {"id": 15, "task_gid": "6", "state": "queued"},
        ]
    }));
    let states: Vec<(&str, RunState)> = p.runs.iter().map(|r| (r.gid.as_str(), r.run.state)).collect();
    use RunState::*;
    assert_eq!(states, [("1", Pr), ("2", Pr), ("3", Queued), ("4", Complete), ("5", Pr)]);
    let statuses: Vec<QueueStatus> = p.tasks.iter().map(|t| t.status).collect();
    use QueueStatus::*;
    assert_eq!(statuses, [Approved, Approved, Approved, Done, Approved, AwaitingGo]);
    let mapping = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>()
    };
    assert_eq!(
        mapping(&p.status_mapping),
        [
            "awaiting_go → approved (v1 had started its run): 1",
            "awaiting_go → awaiting_go: 1",
            "in_progress → approved (its run carries on): 3",
            "in_progress → done (its run is complete): 1",
        ]
    );
    assert_eq!(
        mapping(&p.state_mapping),
        [
            "awaiting_review → pr (review to come): 2",
            "ci_running → pr (CI pending): 1",
            "complete → complete: 1",
            "queued → queued: 1",
        ]
    );
    assert_eq!(
        p.refused.len(),
        1,
        "a queued run of a task never approved waits for a human: {:?}",
        p.refused
    );
    assert!(p.refused[0].reason.contains("its task is awaiting_go"), "{}", p.refused[0]);
}

#[test]
fn v1_times_and_worker_fields_are_kept_from_json_and_from_postgres_csv_text() {
    let p = plan_of(json!({
        "executor_queue": [
            {"task_gid": "1", "status": "in_progress", "added_at": "2026-01-05T10:00:00.1234567Z",
             "updated_at": "2026-01-06 11:30:00+00"},
        ],
        "executor_runs": [
            {"task_gid": "1", "state": "ci_running", "started_at": "2026-01-05 12:00:00.5+02",
             "updated_at": "2026-01-06T09:00:00+00:00", "worker_pid": "4242", "worker_session_id": "sess-1",
             "worker_last_update": "2026-01-06 08:59:00", "worker_stuck_count": 1},
        ]
    }));
    let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
    assert_eq!(p.tasks[0].added_at, Some(t("2026-01-05T10:00:00.123456Z")), "truncated to microseconds");
    assert_eq!(p.tasks[0].updated_at, Some(t("2026-01-06T11:30:00Z")));
    let r = &p.runs[0].run;
    assert_eq!(r.started_at, Some(t("2026-01-05T10:00:00.5Z")));
    assert_eq!(r.updated_at, Some(t("2026-01-06T09:00:00Z")));
    assert_eq!(r.completed_at, None);
    assert_eq!(
        (r.worker_pid, r.worker_session_id.as_deref(), r.worker_stuck_count),
        (Some(4242), Some("sess-1"), 1)
    );
    assert_eq!(r.worker_last_update, Some(t("2026-01-06T08:59:00Z")));
    assert_eq!(p.runs_with_v1_process, 1);

    let bad = plan_of(json!({
        "executor_queue": [{"task_gid": "1", "status": "approved"}],
        "executor_runs": [{"task_gid": "1", "state": "pr", "started_at": "yesterday"}]
    }));
    assert!(bad.runs.is_empty());
    assert!(
        bad.refused[0].reason.starts_with("started_at \"yesterday\" is not a time"),
        "{}",
        bad.refused[0]
    );
}

#[test]
fn user_context_is_appended_to_notes_or_becomes_them() {
    let p = plan_of(json!({"executor_queue": [
        {"task_gid": "1", "notes": "n", "user_context": "c"},
        {"task_gid": "2", "user_context": "c"},
        {"task_gid": "3", "notes": "n"},
    ]}));
    let notes: Vec<_> = p.tasks.iter().map(|t| t.fields.notes.clone()).collect();
    assert_eq!(notes, [Some("n\n\nc".into()), Some("c".into()), Some("n".into())]);
}

#[test]
fn bad_queue_rows_are_refused_by_name_and_the_rest_kept() {
    let p = plan_of(json!({"executor_queue": [
        {"description": "no gid"},
        "not a row",
        {"task_gid": "../etc"},
        {"task_gid": "4", "priority": "high"},
        {"task_gid": "5", "description": "a\u{0}b"},
        {"task_gid": "6"},
        {"task_gid": "6"},
        {"task_gid": 7},
    ]}));
    let gids: Vec<&str> = p.tasks.iter().map(|t| t.gid.as_str()).collect();
    assert_eq!(gids, ["6", "7"], "a numeric gid is taken as its text");
    let lines: Vec<String> = p.refused.iter().map(|r| r.to_string()).collect();
    assert_eq!(lines[0], "executor_queue row 1: no task_gid");
    assert_eq!(lines[1], "executor_queue row 2: not an object");
    assert!(lines[2].starts_with("executor_queue row 3 (task ../etc): invalid task gid"), "{}", lines[2]);
    assert_eq!(lines[3], "executor_queue row 4 (task 4): priority \"high\" is not an integer");
    assert!(lines[4].contains("description contains a NUL"), "{}", lines[4]);
    assert_eq!(lines[5], "executor_queue row 7 (task 6): task 6 appears again (first at row 6)");
}

#[test]
fn runs_need_an_approved_or_done_task_a_known_state_and_a_tasks_other_runs_are_its_history() {
    let p = plan_of(json!({
        "executor_queue": [
            {"task_gid": "1", "status": "approved", "executor_run_id": 10},
            {"task_gid": "2", "status": "for_review"},
            {"task_gid": "3", "status": "done"},
        ],
        "executor_runs": [
            {"id": 10, "task_gid": "1", "state": "ci_running", "worker_pid": 12},
            {"id": 11, "task_gid": "1", "state": "abandoned"},
            {"id": 12, "task_gid": "2", "state": "queued"},
            {"id": 14, "task_gid": "3", "state": "abandoned"},
            {"id": 13, "task_gid": "3", "state": "complete", "completed_at": "2026-01-02T10:00:00Z"},
            {"id": 15, "task_gid": "3", "state": "complete"},
            {"id": 16, "task_gid": "4", "state": "pr"},
            {"id": 17, "task_gid": "3", "state": "lost"},
            {"id": 18, "state": "pr"},
        ]
    }));
    let kept: Vec<(&str, RunState)> = p.runs.iter().map(|r| (r.gid.as_str(), r.run.state)).collect();
    assert_eq!(kept, [("1", RunState::Pr), ("3", RunState::Complete)], "the named run, else the last");
    assert_eq!(p.runs[1].position, 6, "task 3's last run in the export is its current one");
    // The others go in as history, oldest (lowest v1 id) first, with v1's state and times.
    let earlier = |i: usize| -> Vec<(usize, RunState)> {
        p.runs[i].earlier.iter().map(|e| (e.position, e.run.state)).collect()
    };
    assert_eq!(earlier(0), [(2, RunState::Abandoned)], "run 11, superseded by the named run 10");
    assert_eq!(earlier(1), [(5, RunState::Complete), (4, RunState::Abandoned)], "ids 13, 14");
    assert_eq!(p.runs[1].earlier[0].run.completed_at, Some(t("2026-01-02T10:00:00Z")));
    assert_eq!(p.runs_with_v1_process, 1);
    assert_eq!(p.state_mapping.get("ci_running → pr (CI pending)"), Some(&1));
    assert_eq!(p.state_mapping.get("complete → abandoned (an earlier run of its task: history)"), Some(&1));
    assert_eq!(p.state_mapping.get("abandoned → abandoned (an earlier run of its task: history)"), Some(&2));
    let lines: Vec<String> = p.refused.iter().map(|r| r.to_string()).collect();
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert!(lines[0].contains("its task is for_review"), "{}", lines[0]);
    assert!(lines[1].contains("no executor_queue row imports task 4"), "{}", lines[1]);
    assert!(lines[2].contains("unknown state \"lost\""), "{}", lines[2]);
    assert_eq!(lines[3], "executor_runs row 9: no task_gid");
    assert!(lines.iter().all(|l| !l.contains("another run")), "{lines:#?}");
}

#[test]
fn every_column_the_import_does_not_know_is_listed_once_by_table() {
    let p = plan_of(json!({
        "executor_queue": [
            {"task_gid": "1", "status": "approved", "asana_url": "https://app.asana.com/0/1/1", "section": "Inbox"},
            {"task_gid": "2", "section": "Later", "notes": "n", "user_context": "c", "repo": "browser"},
            7,
        ],
        "executor_runs": [
            {"id": 1, "task_gid": "1", "state": "queued", "host": "mac-1", "asana_url": "x"},
        ]
    }));
    assert_eq!(
        p.unknown_columns,
        [
            ("executor_queue", "asana_url".to_string()),
            ("executor_queue", "section".to_string()),
            ("executor_runs", "asana_url".to_string()),
            ("executor_runs", "host".to_string()),
        ]
    );
    let known = plan_of(json!({"executor_queue": [{"task_gid": "1", "added_at": "2026-01-01T00:00:00Z"}]}));
    assert!(known.unknown_columns.is_empty(), "{:?}", known.unknown_columns);
}

#[test]
fn csv_text_numbers_are_read_as_integers() {
    let p = plan_of(json!({
        "executor_queue": [{"task_gid": "1", "status": "approved", "priority": " 3 "}],
        "executor_runs": [{"task_gid": "1", "state": "pr", "pr_number": "42", "ci_attempts": "2"}]
    }));
    assert_eq!(p.tasks[0].fields.priority, Some(3));
    assert_eq!((p.runs[0].run.pr_number, p.runs[0].run.ci_attempts), (Some(42), 2));
}
