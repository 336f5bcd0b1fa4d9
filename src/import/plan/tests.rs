use serde_json::json;

use super::*;
use crate::import::read::parse_json;

fn plan_of(v: serde_json::Value) -> Plan {
    plan(&parse_json(&v.to_string()).unwrap())
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
}

#[test]
fn ci_running_is_pr_and_unknown_states_are_none() {
    assert_eq!(map_state("ci_running"), Some(RunState::Pr));
    assert_eq!(map_state("in_progress"), Some(RunState::InProgress));
    assert_eq!(map_state("complete"), Some(RunState::Complete));
    assert_eq!(map_state("exploded"), None);
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
fn runs_need_an_approved_or_done_task_a_known_state_and_keep_one_per_task() {
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
            {"id": 13, "task_gid": "3", "state": "abandoned"},
            {"id": 14, "task_gid": "3", "state": "complete"},
            {"id": 15, "task_gid": "4", "state": "pr"},
            {"id": 16, "task_gid": "3", "state": "lost"},
            {"id": 17, "state": "pr"},
        ]
    }));
    let kept: Vec<(&str, RunState)> = p.runs.iter().map(|r| (r.gid.as_str(), r.state)).collect();
    assert_eq!(kept, [("1", RunState::Pr), ("3", RunState::Complete)], "the named run, else the last");
    assert_eq!(p.runs_with_v1_process, 1);
    assert_eq!(p.state_mapping.get("ci_running → pr"), Some(&1));
    let lines: Vec<String> = p.refused.iter().map(|r| r.to_string()).collect();
    assert_eq!(lines.len(), 6, "{lines:#?}");
    assert!(
        lines[0].starts_with("executor_runs row 2 (task 1): task 1 has another run (row 1)"),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("its task is for_review"), "{}", lines[1]);
    assert!(
        lines[2].starts_with("executor_runs row 4 (task 3): task 3 has another run (row 5)"),
        "{}",
        lines[2]
    );
    assert!(lines[3].contains("no executor_queue row imports task 4"), "{}", lines[3]);
    assert!(lines[4].contains("unknown state \"lost\""), "{}", lines[4]);
    assert_eq!(lines[5], "executor_runs row 8: no task_gid");
}

#[test]
fn csv_text_numbers_are_read_as_integers() {
    let p = plan_of(json!({
        "executor_queue": [{"task_gid": "1", "status": "approved", "priority": " 3 "}],
        "executor_runs": [{"task_gid": "1", "state": "pr", "pr_number": "42", "ci_attempts": "2"}]
    }));
    assert_eq!(p.tasks[0].fields.priority, Some(3));
    assert_eq!((p.runs[0].pr_number, p.runs[0].ci_attempts), (Some(42), Some(2)));
}
