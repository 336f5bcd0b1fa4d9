//! The pure part of the import: v1 rows → what executor should hold, with every row that cannot be
//! imported refused by name and reason. No database here; `apply` compares the plan with the store.

mod columns;

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use self::columns::{count, int, text, time};
use super::read::{QUEUE_TABLE, RUNS_TABLE, V1Export, V1Row};
use crate::domain::{QueueStatus, RunState, TaskGid};
use crate::store::{ImportedRun, NewTask};

/// A v1 queue row as executor will hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedTask {
    pub position: usize,
    pub gid: TaskGid,
    /// The tracker's fields (source, description, notes with `user_context` appended) and v1's priority,
    /// which is part of v1's analysis: `apply` gives it only to a task executor has not triaged.
    pub fields: NewTask,
    pub status: QueueStatus,
    pub complexity: Option<String>,
    pub feasibility: Option<String>,
    pub analysis_summary: Option<String>,
    /// v1's own times, kept for a task the import adds (`None`: v1 has none).
    pub added_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// A v1 run as executor will hold it: its state, branch, pull request, worker fields and times; with
/// the task's earlier v1 runs, which go in with it as history.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRun {
    pub position: usize,
    pub gid: TaskGid,
    pub run: ImportedRun,
    /// The task's other v1 runs, oldest first (by v1 id, then export order): each kept as an ended run
    /// of the task, as a run superseded by `queue retry` is, before this one.
    pub earlier: Vec<EarlierRun>,
}

/// An earlier v1 run of a task, as history: its row's position and the run as v1 had it.
#[derive(Debug, Clone, PartialEq)]
pub struct EarlierRun {
    pub position: usize,
    pub run: ImportedRun,
}

/// A row left out, and why (one line of the plan's output).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Refusal {
    pub table: &'static str,
    /// "row 3" (JSON) or "line 4" (CSV).
    pub row: String,
    pub task_gid: Option<String>,
    pub reason: String,
    /// The row's position, for listing refusals in input order.
    #[serde(skip)]
    pub position: usize,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.table, self.row)?;
        if let Some(gid) = &self.task_gid {
            write!(f, " (task {gid})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// Everything the v1 export asks for, before looking at the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub tasks: Vec<PlannedTask>,
    pub runs: Vec<PlannedRun>,
    pub refused: Vec<Refusal>,
    /// "v1 status → executor status" → rows, e.g. "(null) → pending", with what it means when that is
    /// not plain ("in_progress → approved (its run carries on)").
    pub status_mapping: BTreeMap<String, usize>,
    /// "v1 state → executor state" → rows, e.g. "ci_running → pr (CI pending)".
    pub state_mapping: BTreeMap<String, usize>,
    /// Runs that carried v1 worker fields (pid, session id, last update, stuck count), kept as v1's record.
    pub runs_with_v1_process: usize,
    /// "row" (JSON) or "line" (CSV): how refusals name a row.
    pub position_word: &'static str,
    /// The export's columns this import does not know, so does not carry over: (table, column), each once.
    pub unknown_columns: Vec<(&'static str, String)>,
}

/// Maps a v1 queue status. v1 had no `pending`: a row the analyzer had not reached has NULL, and an
/// unknown value is treated the same way (the analyzer will look at it again), never refused. v1 marked
/// a task it was working on `in_progress`: a human had said go, and its run carries on (the seed's
/// "16 in_progress").
pub fn map_status(v1: Option<&str>) -> QueueStatus {
    match v1.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        Some("for_review") => QueueStatus::ForReview,
        Some("awaiting_go") => QueueStatus::AwaitingGo,
        Some("approved" | "in_progress") => QueueStatus::Approved,
        Some("skip") => QueueStatus::Skip,
        Some("done") => QueueStatus::Done,
        _ => QueueStatus::Pending,
    }
}

/// Maps a v1 run state; `None` for one executor does not know (the row is refused). v1's `ci_running`
/// and `awaiting_review` are `pr`: waiting on CI, or on the review, is the pr sub-logic's to drive
/// (it starts the `pr_review` worker once CI is green) and holds no worker slot.
pub fn map_state(v1: &str) -> Option<RunState> {
    match v1.trim().to_ascii_lowercase().as_str() {
        "queued" => Some(RunState::Queued),
        "in_progress" => Some(RunState::InProgress),
        "pr" | "ci_running" | "awaiting_review" => Some(RunState::Pr),
        "complete" => Some(RunState::Complete),
        "abandoned" => Some(RunState::Abandoned),
        _ => None,
    }
}

/// What a v1 state means in executor, when the name alone does not say.
fn state_note(v1: &str) -> &'static str {
    match v1.trim().to_ascii_lowercase().as_str() {
        "ci_running" => " (CI pending)",
        "awaiting_review" => " (review to come)",
        _ => "",
    }
}

/// Whether v1 had started the run's work: its task was approved in v1's own terms, whatever the queue
/// row says (v1's runner drove runs by their state alone).
fn started(state: RunState) -> bool {
    matches!(state, RunState::InProgress | RunState::Pr | RunState::Complete)
}

/// Builds the plan. Queue rows: one per gid (a repeated gid is refused, naming the first). Runs: only for
/// a task imported as approved or done, or one v1 left before approval whose run v1 had started. A task's
/// current run is the one the queue row's `executor_run_id` names, otherwise the last one in the export;
/// its other runs are its history (ended runs, as executor keeps a run superseded by `queue retry`).
pub fn plan(export: &V1Export) -> Plan {
    let word = export.position_word;
    let mut p = Plan { position_word: word, unknown_columns: columns::unknown(export), ..Plan::default() };
    let mut run_ids: HashMap<TaskGid, i64> = HashMap::new();
    let mut seen: HashMap<TaskGid, usize> = HashMap::new();
    let mut v1_statuses: Vec<String> = Vec::new();
    for row in &export.queue {
        match plan_task(row) {
            Err((gid, reason)) => p.refused.push(refusal(QUEUE_TABLE, word, row, gid, reason)),
            Ok((task, v1_status, run_id)) => {
                if let Some(first) = seen.get(&task.gid) {
                    let reason = format!("task {} appears again (first at {word} {first})", task.gid);
                    p.refused.push(refusal(QUEUE_TABLE, word, row, Some(task.gid.to_string()), reason));
                    continue;
                }
                seen.insert(task.gid.clone(), row.position);
                if let Some(id) = run_id {
                    run_ids.insert(task.gid.clone(), id);
                }
                v1_statuses.push(v1_status);
                p.tasks.push(task);
            }
        }
    }
    let status_of: HashMap<TaskGid, QueueStatus> =
        p.tasks.iter().map(|t| (t.gid.clone(), t.status)).collect();
    let mut candidates: Vec<(PlannedRun, &V1Row, String, Option<i64>, bool)> = Vec::new();
    let mut refused_runs: Vec<Refusal> = Vec::new();
    for row in &export.runs {
        let (run, v1_state, v1_id, has_process) = match plan_run(row) {
            Ok(r) => r,
            Err((gid, reason)) => {
                refused_runs.push(refusal(RUNS_TABLE, word, row, gid, reason));
                continue;
            }
        };
        let gid_text = Some(run.gid.to_string());
        match status_of.get(&run.gid) {
            None => {
                let reason = format!("no {QUEUE_TABLE} row imports task {}", run.gid);
                refused_runs.push(refusal(RUNS_TABLE, word, row, gid_text, reason));
            }
            Some(QueueStatus::Approved | QueueStatus::Done) => {
                candidates.push((run, row, v1_state, v1_id, has_process));
            }
            Some(QueueStatus::Pending | QueueStatus::ForReview | QueueStatus::AwaitingGo)
                if started(run.run.state) =>
            {
                candidates.push((run, row, v1_state, v1_id, has_process));
            }
            Some(status) => {
                let reason = format!(
                    "its task is {status}; only an approved or done task has a run (or one whose run v1 had started)"
                );
                refused_runs.push(refusal(RUNS_TABLE, word, row, gid_text, reason));
            }
        }
    }
    // The run kept per task: the one the queue row names, otherwise the last (v1 ids grow with time).
    let mut kept: HashMap<TaskGid, usize> = HashMap::new();
    for (index, (run, _, _, v1_id, _)) in candidates.iter().enumerate() {
        let named = |i: usize| candidates[i].3.is_some() && candidates[i].3 == run_ids.get(&run.gid).copied();
        let keep = match kept.get(&run.gid) {
            None => true,
            Some(&k) => !named(k) || (v1_id.is_some() && named(index)),
        };
        if keep {
            kept.insert(run.gid.clone(), index);
        }
    }
    // The others are the task's history, oldest first (v1 ids grow with time).
    let mut earlier: HashMap<TaskGid, Vec<(Option<i64>, EarlierRun)>> = HashMap::new();
    // What the kept run says of its task: v1 started it (approved), or it is complete (done).
    let mut task_note: HashMap<TaskGid, (QueueStatus, &'static str)> = HashMap::new();
    for (index, (run, _, v1_state, v1_id, has_process)) in candidates.into_iter().enumerate() {
        let k = kept[&run.gid];
        if has_process {
            p.runs_with_v1_process += 1;
        }
        if k == index {
            let state = run.run.state;
            let key = format!("{v1_state} → {state}{}", state_note(&v1_state));
            *p.state_mapping.entry(key).or_default() += 1;
            let before = status_of[&run.gid];
            if state == RunState::Complete {
                task_note.insert(run.gid.clone(), (QueueStatus::Done, " (its run is complete)"));
            } else if !matches!(before, QueueStatus::Approved | QueueStatus::Done) {
                task_note.insert(run.gid.clone(), (QueueStatus::Approved, " (v1 had started its run)"));
            }
            p.runs.push(run);
        } else {
            let key = format!("{v1_state} → {} (an earlier run of its task: history)", RunState::Abandoned);
            *p.state_mapping.entry(key).or_default() += 1;
            let old = EarlierRun { position: run.position, run: run.run };
            earlier.entry(run.gid).or_default().push((v1_id, old));
        }
    }
    for planned in &mut p.runs {
        planned.earlier = earlier_of(&mut earlier, &planned.gid);
    }
    for (task, v1_status) in p.tasks.iter_mut().zip(&v1_statuses) {
        let mut note =
            if v1_status.trim().eq_ignore_ascii_case("in_progress") { " (its run carries on)" } else { "" };
        if let Some(&(status, why)) = task_note.get(&task.gid) {
            task.status = status;
            note = why;
        }
        *p.status_mapping.entry(format!("{v1_status} → {}{note}", task.status)).or_default() += 1;
    }
    refused_runs.sort_by_key(|r| r.position);
    p.refused.extend(refused_runs);
    p
}

/// The earlier runs of `gid` gathered so far, in v1's order: by v1 id (export order where v1 has none).
fn earlier_of(
    earlier: &mut HashMap<TaskGid, Vec<(Option<i64>, EarlierRun)>>,
    gid: &TaskGid,
) -> Vec<EarlierRun> {
    let mut runs = earlier.remove(gid).unwrap_or_default();
    runs.sort_by_key(|(id, r)| (id.unwrap_or(i64::MIN), r.position));
    runs.into_iter().map(|(_, r)| r).collect()
}

fn refusal(table: &'static str, word: &str, row: &V1Row, gid: Option<String>, reason: String) -> Refusal {
    Refusal { table, row: format!("{word} {}", row.position), task_gid: gid, reason, position: row.position }
}

type RowError = (Option<String>, String);

/// The row's gid (for naming it even when refused) and its columns, or why there are none.
fn columns_and_gid(row: &V1Row) -> Result<(&Map<String, Value>, TaskGid), RowError> {
    let Some(cols) = &row.columns else {
        return Err((None, "not an object".into()));
    };
    let raw = text(cols, "task_gid").map_err(|e| (None, e))?;
    let Some(raw) = raw else {
        return Err((None, "no task_gid".into()));
    };
    let gid = TaskGid::parse(&raw).map_err(|e| (Some(raw.chars().take(60).collect()), e.to_string()))?;
    Ok((cols, gid))
}

fn plan_task(row: &V1Row) -> Result<(PlannedTask, String, Option<i64>), RowError> {
    let (cols, gid) = columns_and_gid(row)?;
    let gid_text = gid.to_string();
    let named = |e: String| (Some(gid_text.clone()), e);
    let v1_status = text(cols, "status").map_err(named)?;
    let notes = match (text(cols, "notes").map_err(named)?, text(cols, "user_context").map_err(named)?) {
        (Some(n), Some(c)) => Some(format!("{n}\n\n{c}")),
        (n, c) => n.or(c),
    };
    let priority = int(cols, "priority")
        .map_err(named)?
        .map(|p| i32::try_from(p).map_err(|_| named(format!("priority {p} is out of range"))))
        .transpose()?;
    let fields = NewTask {
        task_gid: Some(gid.clone()),
        source: text(cols, "source").map_err(named)?,
        description: text(cols, "description").map_err(named)?,
        notes,
        repo: text(cols, "repo").map_err(named)?,
        priority,
        ..Default::default()
    };
    if let Some(field) = fields.unstorable_field() {
        return Err(named(format!("{field} contains a NUL character, which PostgreSQL cannot store")));
    }
    let task = PlannedTask {
        position: row.position,
        status: map_status(v1_status.as_deref()),
        complexity: text(cols, "complexity").map_err(named)?,
        feasibility: text(cols, "feasibility").map_err(named)?,
        analysis_summary: text(cols, "analysis_summary").map_err(named)?,
        added_at: time(cols, "added_at").map_err(named)?,
        updated_at: time(cols, "updated_at").map_err(named)?,
        gid: gid.clone(),
        fields,
    };
    let run_id = int(cols, "executor_run_id").map_err(named)?;
    Ok((task, v1_status.unwrap_or_else(|| "(null)".into()), run_id))
}

/// The run, its v1 state as written, its v1 id, and whether it carried v1 worker fields.
fn plan_run(row: &V1Row) -> Result<(PlannedRun, String, Option<i64>, bool), RowError> {
    let (cols, gid) = columns_and_gid(row)?;
    let gid_text = gid.to_string();
    let named = |e: String| (Some(gid_text.clone()), e);
    let Some(v1_state) = text(cols, "state").map_err(named)? else {
        return Err(named("no state".into()));
    };
    let Some(state) = map_state(&v1_state) else {
        return Err(named(format!(
            "unknown state {:?} (v1 states: queued, in_progress, ci_running, pr, awaiting_review, complete, abandoned)",
            v1_state.chars().take(40).collect::<String>()
        )));
    };
    let run = ImportedRun {
        state,
        worktree_path: text(cols, "worktree_path").map_err(named)?,
        branch_name: text(cols, "branch_name").map_err(named)?,
        pr_url: text(cols, "pr_url").map_err(named)?,
        pr_number: int(cols, "pr_number").map_err(named)?,
        thread_id: text(cols, "thread_id").map_err(named)?,
        ci_attempts: count(cols, "ci_attempts").map_err(named)?.unwrap_or(0),
        worker_session_id: text(cols, "worker_session_id").map_err(named)?,
        worker_pid: count(cols, "worker_pid").map_err(named)?,
        worker_last_update: time(cols, "worker_last_update").map_err(named)?,
        worker_stuck_count: count(cols, "worker_stuck_count").map_err(named)?.unwrap_or(0),
        started_at: time(cols, "started_at").map_err(named)?,
        updated_at: time(cols, "updated_at").map_err(named)?,
        completed_at: time(cols, "completed_at").map_err(named)?,
    };
    let has_process = run.worker_pid.is_some()
        || run.worker_session_id.is_some()
        || run.worker_last_update.is_some()
        || run.worker_stuck_count > 0;
    let v1_id = int(cols, "id").map_err(named)?;
    if let Some(text) =
        [&run.worktree_path, &run.branch_name, &run.pr_url, &run.thread_id, &run.worker_session_id]
            .into_iter()
            .flatten()
            .find(|t| t.contains('\0'))
    {
        return Err(named(format!(
            "{:?} contains a NUL character",
            text.chars().take(40).collect::<String>()
        )));
    }
    Ok((PlannedRun { position: row.position, gid, run, earlier: Vec::new() }, v1_state, v1_id, has_process))
}

#[cfg(test)]
mod tests;
