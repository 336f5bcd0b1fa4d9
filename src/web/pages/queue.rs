//! `GET /queue`: the queue, filtered by status, source and text, 50 tasks a page (three queries: the page's
//! ids, their rows, the count), with approve and skip forms per task and "Approve selected".

use axum::Extension;
use axum::extract::{Query, State};
use axum::response::Html;
use serde::{Deserialize, Serialize};

use super::{FlashQuery, PageError, first_line, render, short};
use crate::domain::{QueueStatus, Task};
use crate::store::TaskFilter;
use crate::web::AppState;
use crate::web::session::Auth;

/// Tasks on one page of the queue.
pub(super) const PER_PAGE: i64 = 50;

/// The queue's query string; also what the forms carry back.
#[derive(Debug, Default, Deserialize)]
pub(super) struct QueueQuery {
    status: Option<String>,
    source: Option<String>,
    q: Option<String>,
    page: Option<String>,
}

/// One row of the table, as the template shows it.
#[derive(Serialize)]
struct Row {
    gid: String,
    title: String,
    source: Option<String>,
    status: String,
    /// The filter that skipped it ("skip (not_macos)"), or a pending revision ("approved (revised)").
    status_note: Option<String>,
    priority: Option<i32>,
    complexity: Option<String>,
    feasibility: Option<String>,
    summary: Option<String>,
    can_approve: bool,
    can_skip: bool,
}

fn row(t: &Task) -> Row {
    let status_note = match (&t.revision_at, &t.skip_rule) {
        (Some(_), _) => Some("revised".to_string()),
        (None, Some(rule)) if t.status == QueueStatus::Skip => Some(format!("filter {}", short(rule, 40))),
        _ => None,
    };
    Row {
        gid: t.task_gid.to_string(),
        title: first_line(t.description.as_deref().unwrap_or(""), 90),
        source: t.source.clone(),
        status: t.status.to_string(),
        status_note,
        priority: t.priority,
        complexity: t.complexity.clone(),
        feasibility: t.feasibility.clone(),
        summary: t.analysis_summary.as_deref().map(|s| short(s, 140)),
        can_approve: matches!(t.status, QueueStatus::AwaitingGo | QueueStatus::ForReview)
            || (t.status == QueueStatus::Approved && t.revision_at.is_some()),
        can_skip: t.status.next().contains(&QueueStatus::Skip),
    }
}

fn nonempty(v: &Option<String>) -> Option<String> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// The query string of this listing on `page`, for the prev/next links.
fn page_link(status: Option<&str>, source: Option<&str>, q: Option<&str>, page: i64) -> String {
    let mut parts = Vec::new();
    for (name, value) in [("status", status), ("source", source), ("q", q)] {
        if let Some(v) = value {
            parts.push(format!("{name}={}", super::encode(v)));
        }
    }
    parts.push(format!("page={page}"));
    format!("/queue?{}", parts.join("&"))
}

pub(super) async fn page(
    State(state): State<AppState>,
    Extension(auth): Extension<Auth>,
    Query(query): Query<QueueQuery>,
    Query(flash): Query<FlashQuery>,
) -> Result<Html<String>, PageError> {
    let (flash, error) = flash.verified(&state, &auth);
    let status = nonempty(&query.status)
        .map(|s| s.parse::<QueueStatus>())
        .transpose()
        .map_err(|e| PageError::BadRequest(e.to_string()))?;
    let source = nonempty(&query.source);
    let text = nonempty(&query.q);
    let page = match nonempty(&query.page) {
        Some(p) => p
            .parse::<i64>()
            .ok()
            .filter(|p| *p >= 1 && *p <= i64::MAX / PER_PAGE)
            .ok_or_else(|| PageError::BadRequest(format!("page {p:?} is not a page number")))?,
        None => 1,
    };
    let live = super::live::mark(&state).await?;
    let mut filter = TaskFilter { status, source: source.clone(), text: text.clone(), ..Default::default() };
    let total = state.store.count_tasks(&filter).await?;
    filter.limit = Some(PER_PAGE);
    filter.offset = Some((page - 1) * PER_PAGE);
    let tasks = state.store.list_tasks(&filter).await?;
    let rows: Vec<Row> = tasks.iter().map(row).collect();
    let pages = (total + PER_PAGE - 1) / PER_PAGE;
    let status_name = status.map(|s| s.as_str());
    let (src, q) = (source.as_deref(), text.as_deref());
    render(
        "queue.html",
        minijinja::context! {
            nav => "queue",
            live,
            csrf => state.keys.csrf(&auth),
            statuses => QueueStatus::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            status => status_name,
            source,
            q => text,
            page,
            pages,
            total,
            first => (page - 1) * PER_PAGE + 1,
            rows,
            prev => (page > 1).then(|| page_link(status_name, src, q, page - 1)),
            next => (page < pages).then(|| page_link(status_name, src, q, page + 1)),
            sources => state.config.sources.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            flash,
            error,
        },
    )
}
