//! Reading one column of a loose v1 row: JSON gives typed values, CSV gives text for everything, so each
//! reader takes both. A value that cannot be read is an error naming the column (the row is refused).

use std::collections::BTreeSet;

use chrono::{DateTime, NaiveDateTime, SubsecRound, Utc};
use serde_json::{Map, Value};

use super::super::read::{QUEUE_TABLE, RUNS_TABLE, V1Export, V1Row};

/// The v1 `executor_queue` columns the planner reads (`id` only to name rows, `executor_run_id` to pick
/// the task's current run).
pub(super) const QUEUE_COLUMNS: &[&str] = &[
    "id",
    "task_gid",
    "source",
    "description",
    "notes",
    "user_context",
    "status",
    "priority",
    "complexity",
    "feasibility",
    "analysis_summary",
    "executor_run_id",
    "repo",
    "added_at",
    "updated_at",
];

/// The v1 `executor_runs` columns the planner reads (`id` only to order a task's runs).
pub(super) const RUNS_COLUMNS: &[&str] = &[
    "id",
    "task_gid",
    "state",
    "worktree_path",
    "branch_name",
    "pr_url",
    "pr_number",
    "thread_id",
    "ci_attempts",
    "worker_session_id",
    "worker_pid",
    "worker_last_update",
    "worker_stuck_count",
    "started_at",
    "updated_at",
    "completed_at",
];

/// Every column some row of the export has that the planner does not read (`asana_url`, `section`, …),
/// by table and then name, each once: its values are not imported, and the report says so.
pub(super) fn unknown(export: &V1Export) -> Vec<(&'static str, String)> {
    let mut out = unknown_in(QUEUE_TABLE, &export.queue, QUEUE_COLUMNS);
    out.extend(unknown_in(RUNS_TABLE, &export.runs, RUNS_COLUMNS));
    out
}

fn unknown_in(table: &'static str, rows: &[V1Row], known: &[&str]) -> Vec<(&'static str, String)> {
    let names: BTreeSet<&String> = rows
        .iter()
        .filter_map(|r| r.columns.as_ref())
        .flat_map(|cols| cols.keys())
        .filter(|name| !known.contains(&name.as_str()))
        .collect();
    names.into_iter().map(|name| (table, name.clone())).collect()
}

/// A text column: NULL, missing and "" are `None`; a number is taken as its text.
pub(super) fn text(cols: &Map<String, Value>, name: &str) -> Result<Option<String>, String> {
    match cols.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(format!("{name} must be text, not {}", kind(other))),
    }
}

/// An integer column: a JSON integer or a text holding one (CSV).
pub(super) fn int(cols: &Map<String, Value>, name: &str) -> Result<Option<i64>, String> {
    match cols.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(|| format!("{name} {n} is not an integer")),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => {
            s.trim().parse().map(Some).map_err(|_| format!("{name} {:?} is not an integer", short(s)))
        }
        Some(other) => Err(format!("{name} must be an integer, not {}", kind(other))),
    }
}

/// A non-negative integer column that fits an `i32` (counts, pids).
pub(super) fn count(cols: &Map<String, Value>, name: &str) -> Result<Option<i32>, String> {
    int(cols, name)?
        .map(|n| {
            i32::try_from(n).ok().filter(|n| *n >= 0).ok_or_else(|| format!("{name} {n} is out of range"))
        })
        .transpose()
}

/// A `timestamptz` column as v1 exports it: RFC 3339 from JSON (`2026-01-05T10:00:00Z`), PostgreSQL's
/// text from `\copy … CSV` (`2026-01-05 10:00:00.123+00`). A time without an offset is UTC (v1 wrote
/// UTC). Truncated to microseconds, what both databases keep.
pub(super) fn time(cols: &Map<String, Value>, name: &str) -> Result<Option<DateTime<Utc>>, String> {
    let Some(raw) = text(cols, name)? else { return Ok(None) };
    let s = raw.trim();
    let parsed = DateTime::parse_from_rfc3339(s)
        .or_else(|_| DateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f%#z"))
        .map(|t| t.with_timezone(&Utc))
        .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").map(|t| t.and_utc()))
        .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc()));
    parsed
        .map(|t| Some(t.trunc_subsecs(6)))
        .map_err(|_| format!("{name} {:?} is not a time (expected e.g. 2026-01-05T10:00:00Z)", short(&raw)))
}

fn short(s: &str) -> String {
    s.chars().take(40).collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
