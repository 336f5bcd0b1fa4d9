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
    let kept: Vec<(&str, RunState)> = p.runs.iter().map(|r| (r.gid.as_str(), r.run.state)).collect();
    assert_eq!(kept, [("1", RunState::Pr), ("3", RunState::Complete)], "the named run, else the last");
    assert_eq!(p.runs_with_v1_process, 1);
    assert_eq!(p.state_mapping.get("ci_running → pr (CI pending)"), Some(&1));
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
    assert_eq!((p.runs[0].run.pr_number, p.runs[0].run.ci_attempts), (Some(42), 2));
}
