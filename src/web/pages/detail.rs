//! `GET /tasks/{gid}`: every field of one task, with its runs and history (a run's page is `run_page`).

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use serde::Serialize;

use super::{FlashQuery, PageError, ago, money, render, web_link};
use crate::domain::{QueueStatus, RunState, TaskGid};
use crate::store::{Event, EventFilter, RunFilter, now};
use crate::web::AppState;
use crate::web::session::Auth;

/// An event as a history line shows it.
#[derive(Serialize)]
pub(super) struct EventLine {
    at: String,
    ago: String,
    actor: String,
    task_gid: Option<String>,
    run_id: Option<i64>,
    kind: String,
    change: Option<String>,
    reason: Option<String>,
}

pub(super) fn event_lines(events: &[Event]) -> Vec<EventLine> {
    let now = now();
    events
        .iter()
        .map(|e| EventLine {
            at: e.at.format("%Y-%m-%d %H:%M:%S").to_string(),
            ago: ago(e.at, now),
            actor: e.who(),
            task_gid: e.task_gid.clone(),
            run_id: e.run_id,
            kind: e.kind.clone(),
            change: match (&e.from_state, &e.to_state) {
                (Some(f), Some(t)) => Some(format!("{f} → {t}")),
                (None, Some(t)) => Some(format!("→ {t}")),
                _ => None,
            },
            // Whatever wrote it (the CLI takes any length), a page shows a bounded part.
            reason: e.reason.as_deref().map(|r| super::short(r, super::SHOWN_TEXT)),
        })
        .collect()
}

/// What skipped a skipped task, as `executor queue show` says it.
fn skipped_by(task: &crate::domain::Task) -> Option<String> {
    if task.status != QueueStatus::Skip {
        return None;
    }
    // Who made the last decision, as recorded with the skip (a human's skip is a human's, whatever
    // the triage said before).
    Some(match (task.skipped_by, &task.skip_rule, &task.skip_why) {
        (Some(crate::domain::SkippedBy::Filter), Some(rule), Some(why)) if !why.is_empty() => {
            format!("filter {rule}: {why}")
        }
        (Some(crate::domain::SkippedBy::Filter), Some(rule), _) => format!("filter {rule}"),
        (Some(crate::domain::SkippedBy::Triage), _, _) => "the triage (see the analysis)".to_string(),
        (Some(crate::domain::SkippedBy::Imported), _, _) => {
            "imported skipped from v1 (see the history)".to_string()
        }
        _ => "a human (see the history)".to_string(),
    })
}

pub(super) async fn task(
    State(state): State<AppState>,
    Extension(auth): Extension<Auth>,
    Path(gid): Path<String>,
    Query(flash): Query<FlashQuery>,
) -> Result<Html<String>, PageError> {
    let (flash, error) = flash.verified(&state, &auth);
    let gid = TaskGid::parse(&gid).map_err(|e| PageError::NotFound(e.to_string()))?;
    let mut task = state.store.task(&gid).await?;
    // Stored whole (the filters read all of it); a page shows a bounded part.
    for text in
        [&mut task.description, &mut task.notes, &mut task.revision_description, &mut task.revision_notes]
            .into_iter()
            .flatten()
    {
        if text.len() > crate::domain::SHOWN_TEXT_BYTES {
            *text = crate::domain::shown(text, crate::domain::SHOWN_TEXT_BYTES).into_owned();
        }
    }
    let runs =
        state.store.list_runs(&RunFilter { task_gid: Some(gid.clone()), ..Default::default() }).await?;
    let events =
        state.store.events(&EventFilter { task_gid: Some(gid.clone()), ..Default::default() }).await?;
    let sessions = state.store.analysis_sessions(&gid).await?;
    let plan_mode = state.store.task_plan_mode(&gid).await?;
    // What "the repository's" means for this task: its repository's `plan`, when the config names it.
    let repo_plan = state
        .config
        .repo_for(task.repo.as_deref(), &format!("task {gid}"))
        .ok()
        .map(|(_, repo)| repo.plan.as_str());
    let now = now();
    let runs_state: Vec<(i64, RunState)> = runs.iter().map(|r| (r.id, r.state)).collect();
    let runs: Vec<_> = runs
        .iter()
        .map(|r| {
            minijinja::context! {
                id => r.id, state => r.state.as_str(), branch => r.branch_name,
                pr_url => web_link(r.pr_url.as_deref()), pr_number => r.pr_number,
                words => state.config.words_for(r.repo.as_deref()),
                cost => money(r.cost_usd, r.cost_estimated), started => ago(r.started_at, now),
            }
        })
        .collect();
    let sessions: Vec<_> = sessions
        .iter()
        .map(|s| {
            minijinja::context! {
                started => s.started_at.format("%Y-%m-%d %H:%M:%S").to_string(), agent => s.agent,
                end => match (s.end_reason, s.ended_at) {
                    (Some(r), _) => r.to_string(),
                    (None, Some(_)) => "ended".to_string(),
                    (None, None) => "running (or killed)".to_string(),
                },
                cost => money(s.cost_usd, false), error => s.result_error, log => s.log_path,
            }
        })
        .collect();
    let can_approve = matches!(task.status, QueueStatus::AwaitingGo | QueueStatus::ForReview)
        || (task.status == QueueStatus::Approved && task.revision_at.is_some());
    // The moves `executor queue requeue` and `queue retry` make, offered only where the store would
    // take them (it checks again, and says why when it refuses).
    let can_requeue = task.status == QueueStatus::Skip
        || (task.status == QueueStatus::Pending
            && task.analysis_attempts >= i64::from(state.config.analyzer.max_attempts));
    let own_run_abandoned = task.executor_run_id.is_some_and(|id| {
        runs_state.iter().any(|(run, run_state)| *run == id && *run_state == RunState::Abandoned)
    });
    let can_retry = matches!(task.status, QueueStatus::Approved | QueueStatus::Done) && own_run_abandoned;
    render(
        "task.html",
        minijinja::context! {
            nav => "queue",
            csrf => state.keys.csrf(&auth),
            skipped_by => skipped_by(&task),
            url => web_link(task.url.as_deref()),
            added => format!("{} ({})", task.added_at.to_rfc3339(), ago(task.added_at, now)),
            updated => format!("{} ({})", task.updated_at.to_rfc3339(), ago(task.updated_at, now)),
            analyzed => task.analyzed_at.map(|t| format!("{} ({})", t.to_rfc3339(), ago(t, now))),
            revision_at => task.revision_at.map(|t| format!("{} ({})", t.to_rfc3339(), ago(t, now))),
            can_approve,
            can_approve_pending => task.status == QueueStatus::Pending,
            can_skip => task.status.next().contains(&QueueStatus::Skip),
            can_requeue,
            can_retry,
            plan_mode => plan_mode.map(|m| m.as_str()),
            repo_plan,
            // The runs table's heading: the task's repository's word for a change ("PR", "MR").
            words => state.config.words_for(task.repo.as_deref()),
            task,
            runs,
            sessions,
            events => event_lines(&events),
            flash,
            error,
        },
    )
}
