//! Comparing the plan with the store, and applying it through the store's public operations (upsert,
//! legal status and state transitions, the run setters), so each change is recorded as an event like any
//! other. Idempotent by construction: a task is matched by gid, its v1 status and analysis (priority
//! included) are applied only while executor still has it new or pending, and a run is created only for
//! a task without one. What the import adds keeps v1's times.

use std::collections::BTreeMap;

use super::plan::{Plan, PlannedTask, Refusal};
use super::read::RUNS_TABLE;
use crate::domain::{Actor, QueueStatus, Task, TaskGid};
use crate::store::{ImportedRun, NewTask, Result, Store, Upserted};

/// Rows of one v1 table by what the import does (or would do) with them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableCounts {
    pub added: usize,
    pub updated: usize,
    pub unchanged: usize,
    pub refused: usize,
}

/// What `executor import` did, or with `dry_run` would do.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ImportReport {
    pub dry_run: bool,
    pub executor_queue: TableCounts,
    pub executor_runs: TableCounts,
    /// One per row left out, naming it and why.
    pub refused: Vec<Refusal>,
    /// "v1 status → executor status" → rows.
    pub status_mapping: BTreeMap<String, usize>,
    /// "v1 state → executor state" → runs.
    pub state_mapping: BTreeMap<String, usize>,
    /// Tasks whose executor status was kept rather than v1's (someone triaged them in executor already).
    pub kept_status: Vec<String>,
    /// v1 columns carried over in a way worth saying (times, worker fields).
    pub kept_from_v1: Vec<String>,
    /// v1 columns this import does not carry over, and why.
    pub not_imported: Vec<String>,
    /// The export's columns executor does not know (`asana_url`, `section`, …): their values are left
    /// behind. Each once, by table and name.
    pub unknown_columns: Vec<UnknownColumn>,
}

/// A column of the export that the import does not know, so does not carry over.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnknownColumn {
    pub table: &'static str,
    pub column: String,
}

const REASON: &str = "imported from v1";

/// Compares `plan` with the store and, unless `dry_run`, applies it. A store error stops the import
/// where it is; running it again imports what it had not reached (what was applied is found
/// unchanged), except a run created just before the error, which stays in the state it had reached.
pub async fn import(store: &Store, plan: &Plan, dry_run: bool) -> Result<ImportReport> {
    let mut report = ImportReport {
        dry_run,
        refused: plan.refused.clone(),
        status_mapping: plan.status_mapping.clone(),
        state_mapping: plan.state_mapping.clone(),
        kept_from_v1: kept_from_v1(plan),
        not_imported: not_imported(),
        unknown_columns: plan
            .unknown_columns
            .iter()
            .map(|(table, column)| UnknownColumn { table, column: column.clone() })
            .collect(),
        ..ImportReport::default()
    };
    for r in &plan.refused {
        if r.table == RUNS_TABLE {
            report.executor_runs.refused += 1;
        } else {
            report.executor_queue.refused += 1;
        }
    }
    let mut before: BTreeMap<TaskGid, Option<Task>> = BTreeMap::new();
    for t in &plan.tasks {
        before.insert(t.gid.clone(), store.find_task(&t.gid).await?);
    }
    // A task takes v1's status and analysis while executor has not triaged it: new, or still pending.
    let takes_v1 = |gid: &TaskGid| before[gid].as_ref().is_none_or(|t| t.status == QueueStatus::Pending);
    // v1's priority is its analyzer's: a task executor triaged keeps executor's (a field not given is kept).
    let fields = |t: &PlannedTask| NewTask {
        priority: t.fields.priority.filter(|_| takes_v1(&t.gid)),
        ..t.fields.clone()
    };
    let began = crate::store::now();

    let upserted: Vec<Upserted> = if dry_run {
        plan.tasks.iter().map(|t| predict_upsert(before[&t.gid].as_ref(), &fields(t))).collect()
    } else {
        let batch: Vec<(TaskGid, NewTask)> = plan.tasks.iter().map(|t| (t.gid.clone(), fields(t))).collect();
        store.upsert_tasks(&batch, Actor::Cli).await?.into_iter().map(|(_, done)| done).collect()
    };
    let mut added: Vec<&PlannedTask> = Vec::new();
    for (t, done) in plan.tasks.iter().zip(upserted) {
        let old = before[&t.gid].as_ref();
        let triage_changes =
            takes_v1(&t.gid) && old.is_some_and(|o| o.status != t.status || analysis_differs(o, t));
        match (done, triage_changes) {
            (Upserted::Added, _) => {
                report.executor_queue.added += 1;
                added.push(t);
            }
            (Upserted::Updated | Upserted::Revised, _) | (Upserted::Unchanged, true) => {
                report.executor_queue.updated += 1
            }
            (Upserted::Unchanged, false) => report.executor_queue.unchanged += 1,
        }
        if let Some(old) = old.filter(|o| !takes_v1(&o.task_gid) && o.status != t.status) {
            report.kept_status.push(format!(
                "task {}: executor has it {}; v1's {} is not applied",
                t.gid, old.status, t.status
            ));
        }
        if !dry_run && takes_v1(&t.gid) {
            triage(store, t, old).await?;
        }
    }

    for run in &plan.runs {
        let old = before[&run.gid].as_ref();
        // The task's runs, its earlier ones (history) with the current one: all go in together or none.
        let rows = 1 + run.earlier.len();
        let has_run = old.is_some_and(|o| o.executor_run_id.is_some());
        if has_run {
            report.executor_runs.unchanged += rows;
            continue;
        }
        // The task's status when the run is created: v1's (held at approved for a done one), or executor's.
        let status = if takes_v1(&run.gid) {
            QueueStatus::Approved
        } else {
            old.map_or(QueueStatus::Approved, |o| o.status)
        };
        if status != QueueStatus::Approved {
            report.executor_runs.refused += rows;
            for position in run.earlier.iter().map(|e| e.position).chain([run.position]) {
                report.refused.push(Refusal {
                    table: RUNS_TABLE,
                    row: format!("{} {}", plan.position_word, position),
                    task_gid: Some(run.gid.to_string()),
                    reason: format!(
                        "executor has task {} {} without a run; a run is created only for an approved task",
                        run.gid, status
                    ),
                    position,
                });
            }
            continue;
        }
        report.executor_runs.added += rows;
        if !dry_run {
            let earlier: Vec<ImportedRun> = run.earlier.iter().map(|e| e.run.clone()).collect();
            // `None`: someone created one meanwhile (a runner tick), and theirs stands.
            store.create_imported_runs(&run.gid, &earlier, &run.run, Actor::Cli, REASON).await?;
        }
    }
    if !dry_run {
        // A task done in v1 was held at approved for its run; now it is done (a completed run did it already).
        for t in plan.tasks.iter().filter(|t| t.status == QueueStatus::Done && takes_v1(&t.gid)) {
            if store.task(&t.gid).await?.status == QueueStatus::Approved {
                store.set_task_status(&t.gid, QueueStatus::Done, Actor::Cli, Some(REASON)).await?;
            }
        }
        // Last, so that no step of the import stamps over them: the tasks it added carry v1's times.
        for t in added {
            store.date_imported_task(&t.gid, began, t.added_at, t.updated_at).await?;
        }
    }
    Ok(report)
}

fn kept_from_v1(plan: &Plan) -> Vec<String> {
    let mut out = vec![
        "added_at, updated_at (tasks); started_at, updated_at, completed_at (runs): v1's own times, for \
         what the import adds (the import's time only where v1 has none)"
            .to_string(),
        "worktree_path, branch_name, pr_url, pr_number, thread_id, ci_attempts: on the run as v1 had them"
            .to_string(),
    ];
    let earlier: usize = plan.runs.iter().map(|r| r.earlier.len()).sum();
    if earlier > 0 {
        out.push(format!(
            "{earlier} earlier run(s) of tasks v1 ran more than once: each an ended (abandoned) run of its task \
             with v1's fields, times and path of states, as executor keeps a run superseded by `queue retry`; \
             the run the queue row names is the task's current one"
        ));
    }
    if plan.runs_with_v1_process > 0 {
        out.push(format!(
            "worker_pid, worker_session_id, worker_last_update, worker_stuck_count of {} run(s): on the run as \
             v1's record; a v1 process is not executor's to adopt, so the runner starts its own worker when \
             a run needs one",
            plan.runs_with_v1_process
        ));
    }
    out
}

fn not_imported() -> Vec<String> {
    vec![
        "id, executor_run_id: executor numbers its own rows (the run a queue row names is the task's \
         current one, its other runs are history)"
            .into(),
    ]
}

/// What an upsert of `fields` would report, for a dry run (the store's rule: a field not given is kept).
fn predict_upsert(old: Option<&Task>, fields: &NewTask) -> Upserted {
    let Some(old) = old else { return Upserted::Added };
    let differs = |new: &Option<String>, old: &Option<String>| new.is_some() && new != old;
    if differs(&fields.source, &old.source)
        || differs(&fields.description, &old.description)
        || differs(&fields.notes, &old.notes)
        || differs(&fields.repo, &old.repo)
        || fields.priority.is_some_and(|p| Some(p) != old.priority)
    {
        Upserted::Updated
    } else {
        Upserted::Unchanged
    }
}

fn analysis_differs(old: &Task, t: &PlannedTask) -> bool {
    (&old.complexity, &old.feasibility, &old.analysis_summary)
        != (&t.complexity, &t.feasibility, &t.analysis_summary)
}

/// The legal moves from pending to a v1 status. A done task stops at approved here: its run is created
/// first (only an approved task gets one), then it moves to done.
fn path_from_pending(to: QueueStatus) -> &'static [QueueStatus] {
    use QueueStatus::*;
    match to {
        Pending => &[],
        ForReview => &[ForReview],
        AwaitingGo => &[AwaitingGo],
        Approved | Done => &[AwaitingGo, Approved],
        Skip => &[Skip],
    }
}

/// Applies v1's analysis and status to a task executor holds as pending (or has just added).
async fn triage(store: &Store, t: &PlannedTask, old: Option<&Task>) -> Result<()> {
    let has_analysis = t.complexity.is_some() || t.feasibility.is_some() || t.analysis_summary.is_some();
    let write = match old {
        None => has_analysis,
        Some(o) => analysis_differs(o, t),
    };
    if write {
        store
            .set_task_analysis(
                &t.gid,
                None,
                t.complexity.as_deref(),
                t.feasibility.as_deref(),
                t.analysis_summary.as_deref(),
            )
            .await?;
    }
    for &step in path_from_pending(t.status) {
        if step == QueueStatus::Skip {
            // v1's skip names neither a rule nor who made it: not a human's decision made here.
            store.skip_imported_task(&t.gid, Actor::Cli, Some(REASON)).await?;
        } else {
            store.set_task_status(&t.gid, step, Actor::Cli, Some(REASON)).await?;
        }
    }
    Ok(())
}
