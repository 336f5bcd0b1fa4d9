//! The API's reads: each one a few queries, never one per row.

use axum::Json;
use axum::extract::{Path, Query, State};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, ApiResult, gid, named, number};
use crate::domain::RunState;
use crate::store::{EventFilter, RunFilter, TaskFilter, now, start_of_day};
use crate::web::AppState;
use crate::web::task_view::ViewQuery;

/// Tasks per page when the request does not say.
pub const DEFAULT_LIMIT: i64 = 50;
/// The most tasks, runs or events one request returns.
pub const MAX_LIMIT: i64 = 1000;

/// The query string of `GET /tasks`: the queue page's view (filters, search, sort; `page` is not
/// read) and `limit`/`offset`; each value checked by hand so that a bad one is a 422 naming it.
#[derive(Debug, Deserialize)]
pub struct TasksQuery {
    #[serde(flatten)]
    view: ViewQuery,
    limit: Option<String>,
    offset: Option<String>,
}

impl TasksQuery {
    /// The store's filter for this view and page.
    pub(super) fn filter(&self) -> ApiResult<TaskFilter> {
        let view = self.view.view(now()).map_err(|e| ApiError::invalid(e.to_string()))?;
        Ok(TaskFilter {
            limit: Some(number("limit", self.limit.as_deref())?.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT)),
            offset: number("offset", self.offset.as_deref())?,
            ..view.filter
        })
    }
}

/// `GET /tasks?status=&source=&repo=&prio_min=&prio_max=&added_within=&older_than=&q=&sort=&dir=&limit=&offset=`
/// → `{"tasks": [...], "total": N}` (total ignores the page).
pub async fn tasks(State(state): State<AppState>, Query(q): Query<TasksQuery>) -> ApiResult<Json<Value>> {
    let filter = q.filter()?;
    let tasks = state.store.list_tasks(&filter).await?;
    let total = state.store.count_tasks(&filter).await?;
    Ok(Json(json!({ "tasks": tasks, "total": total })))
}

/// `GET /tasks/{gid}` → what `executor queue show GID --json` prints.
pub async fn task(State(state): State<AppState>, Path(raw): Path<String>) -> ApiResult<Json<Value>> {
    let gid = gid(&raw)?;
    let task = state.store.task(&gid).await?;
    let runs =
        state.store.list_runs(&RunFilter { task_gid: Some(gid.clone()), ..Default::default() }).await?;
    let events =
        state.store.events(&EventFilter { task_gid: Some(gid.clone()), ..Default::default() }).await?;
    let sessions = state.store.analysis_sessions(&gid).await?;
    Ok(Json(json!({ "task": task, "runs": runs, "events": events, "analysis_sessions": sessions })))
}

/// The query string of `GET /runs`.
#[derive(Debug, Deserialize)]
pub struct RunsQuery {
    state: Option<String>,
    limit: Option<String>,
}

/// `GET /runs?state=&limit=` → what `executor runs list --json` prints, newest first (one query; the
/// dashboard page for runs reads its richer board rows separately).
pub async fn runs(State(state): State<AppState>, Query(q): Query<RunsQuery>) -> ApiResult<Json<Value>> {
    Ok(Json(json!(state.store.list_runs(&q.filter()?).await?)))
}

impl RunsQuery {
    /// The store's filter for this query.
    pub(super) fn filter(&self) -> ApiResult<RunFilter> {
        Ok(RunFilter {
            state: named::<RunState>(self.state.as_deref())?,
            task_gid: None,
            limit: Some(number("limit", self.limit.as_deref())?.unwrap_or(MAX_LIMIT).min(MAX_LIMIT)),
        })
    }
}

/// `GET /runs/{id}` → what `executor runs show ID --json` prints: the run, its workers, the pull request
/// as last seen, notices and history.
pub async fn run(State(state): State<AppState>, Path(raw): Path<String>) -> ApiResult<Json<Value>> {
    let id: i64 = raw
        .parse()
        .map_err(|_| ApiError::new(axum::http::StatusCode::NOT_FOUND, format!("no run with id {raw:?}")))?;
    Ok(Json(state.store.run_view(id).await?))
}

/// `GET /status` → what `executor status --json` prints.
pub async fn status(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let store = &state.store;
    let counts = store.status_counts().await?;
    let queue: serde_json::Map<_, _> = counts.queue.iter().map(|(k, v)| (k.clone(), (*v).into())).collect();
    let runs: serde_json::Map<_, _> = counts.runs.iter().map(|(k, v)| (k.clone(), (*v).into())).collect();
    Ok(Json(json!({
        "executor_queue": queue,
        "executor_runs": runs,
        "workers_alive": store.live_worker_count().await?,
        "spent_today_usd": store.spent_since(start_of_day(now())).await?,
        "per_day_usd": state.config.budget.per_day_usd,
        "runners": store.runner_statuses().await?,
        "undelivered_notices": store.undelivered_notices().await?,
        "pending": store.pending_detail(state.config.analyzer.max_attempts).await?,
        "sources": store.source_cursors().await?,
    })))
}

/// The query string of `GET /events`.
#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    since: Option<String>,
    limit: Option<String>,
}

/// `GET /events?since=&limit=` → what `executor events --json` prints (oldest first; `limit`: the newest
/// N; `since`: a time like 2026-11-29T08:00:00Z or an age like 2h).
pub async fn events(State(state): State<AppState>, Query(q): Query<EventsQuery>) -> ApiResult<Json<Value>> {
    let since = q.since.as_deref().filter(|s| !s.is_empty()).map(parse_since).transpose()?;
    let limit = Some(number("limit", q.limit.as_deref())?.unwrap_or(100).min(MAX_LIMIT));
    let filter = EventFilter { task_gid: None, run_id: None, since, limit };
    Ok(Json(json!(state.store.events(&filter).await?)))
}

fn parse_since(s: &str) -> ApiResult<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    let bad =
        || ApiError::invalid(format!("since {s:?} is neither a time (2026-11-29T08:00:00Z) nor an age (2h)"));
    let age = humantime::parse_duration(s).map_err(|_| bad())?;
    let age = chrono::Duration::from_std(age).map_err(|_| bad())?;
    Ok(Utc::now() - age)
}

/// The query string of `GET /insights`.
#[derive(Debug, Deserialize)]
pub struct InsightsQuery {
    days: Option<String>,
}

/// `GET /insights?days=7|30|90` → the figures of the insights page (`web::insights::Insights`).
pub async fn insights(
    State(state): State<AppState>,
    Query(q): Query<InsightsQuery>,
) -> ApiResult<Json<crate::web::insights::Insights>> {
    let days = crate::web::insights::window(q.days.as_deref()).map_err(ApiError::invalid)?;
    let gathered = crate::web::insights::gather(&state.store, &state.config, days, state.github.is_some());
    Ok(Json(gathered.await?))
}
