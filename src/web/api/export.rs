//! The exports as CSV: `GET /tasks.csv` and `GET /runs.csv` take the same query as `/tasks` and `/runs`
//! and answer the same rows (the same filters and limits), one line each, for a spreadsheet.

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::ApiResult;
use super::reads::{RunsQuery, TasksQuery};
use crate::web::AppState;
use crate::web::csv::{Csv, cell, opt};

/// A CSV answer, offered as a file named `name`.
fn answer(name: &str, csv: Csv) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
        ],
        csv.finish(),
    )
        .into_response()
}

fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map(|t| t.to_rfc3339()).unwrap_or_default()
}

/// `GET /tasks.csv?…` (the query of `GET /tasks`): the queue's tasks, one row each.
pub async fn tasks(State(state): State<AppState>, Query(q): Query<TasksQuery>) -> ApiResult<Response> {
    let tasks = state.store.list_tasks(&q.filter()?).await?;
    let mut csv = Csv::new(&[
        "task_gid",
        "status",
        "priority",
        "source",
        "repo",
        "added_at",
        "updated_at",
        "run_id",
        "url",
        "description",
    ]);
    for t in &tasks {
        csv.row(vec![
            cell(t.task_gid.as_str()),
            cell(t.status.as_str()),
            t.priority.map(|p| p.to_string()).unwrap_or_default(),
            opt(t.source.as_deref()),
            opt(t.repo.as_deref()),
            time(Some(t.added_at)),
            time(Some(t.updated_at)),
            t.executor_run_id.map(|id| id.to_string()).unwrap_or_default(),
            opt(t.url.as_deref()),
            opt(t.description.as_deref()),
        ]);
    }
    Ok(answer("executor-queue.csv", csv))
}

/// `GET /runs.csv?state=&limit=` (the query of `GET /runs`): the runs, newest first, one row each.
pub async fn runs(State(state): State<AppState>, Query(q): Query<RunsQuery>) -> ApiResult<Response> {
    let runs = state.store.list_runs(&q.filter()?).await?;
    let mut csv = Csv::new(&[
        "id",
        "task_gid",
        "state",
        "repo",
        "branch",
        "pr_number",
        "pr_url",
        "started_at",
        "updated_at",
        "completed_at",
        "ci_attempts",
        "stuck_count",
        "cost_usd",
        "input_tokens",
        "output_tokens",
    ]);
    for r in &runs {
        csv.row(vec![
            r.id.to_string(),
            cell(r.task_gid.as_str()),
            cell(r.state.as_str()),
            opt(r.repo.as_deref()),
            opt(r.branch_name.as_deref()),
            r.pr_number.map(|n| n.to_string()).unwrap_or_default(),
            opt(r.pr_url.as_deref()),
            time(Some(r.started_at)),
            time(Some(r.updated_at)),
            time(r.completed_at),
            r.ci_attempts.to_string(),
            r.worker_stuck_count.to_string(),
            format!("{:.4}", r.cost_usd),
            r.input_tokens.to_string(),
            r.output_tokens.to_string(),
        ]);
    }
    Ok(answer("executor-runs.csv", csv))
}
