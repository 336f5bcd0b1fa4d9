//! `GET /queue`: the queue, filtered (status, source, repo, priority, age), searched, sorted by any
//! column but the free-text ones, 50 tasks a page (three queries: the page's ids, their rows, the
//! count), with approve and skip forms per task and "Approve selected". The whole view is in the query
//! string (`task_view`): a link to it can be shared, and every form carries it back.

use axum::Extension;
use axum::extract::{Query, State};
use axum::response::Html;
use serde::Serialize;

use super::{FlashQuery, PageError, ago, first_line, render, short};
use crate::domain::{QueueStatus, Task};
use crate::store::{TaskFilter, TaskSort, now};
use crate::web::AppState;
use crate::web::session::Auth;
use crate::web::task_view::{View, ViewQuery};

/// Tasks on one page of the queue.
pub(super) const PER_PAGE: i64 = 50;

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
    /// "3d ago", with the exact time in a title.
    added: String,
    added_at: String,
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
        added: ago(t.added_at, now()),
        added_at: t.added_at.format("%Y-%m-%d %H:%M UTC").to_string(),
        summary: t.analysis_summary.as_deref().map(|s| short(s, 140)),
        can_approve: matches!(t.status, QueueStatus::AwaitingGo | QueueStatus::ForReview)
            || (t.status == QueueStatus::Approved && t.revision_at.is_some()),
        can_skip: t.status.next().contains(&QueueStatus::Skip),
    }
}

/// A column header of the table: its label, and for a sortable column the link that sorts by it
/// (ascending, or reversed when it is the current sort) and its `aria-sort`.
#[derive(Serialize)]
struct Header {
    label: &'static str,
    link: Option<String>,
    aria_sort: Option<&'static str>,
}

/// The table's columns after the checkbox; `None`: not sortable (a title or a summary is long free text,
/// and an index over it would be as large as the table).
const COLUMNS: [(&str, Option<TaskSort>); 9] = [
    ("GID", Some(TaskSort::Gid)),
    ("Title", None),
    ("Source", Some(TaskSort::Source)),
    ("Status", Some(TaskSort::Status)),
    ("Prio", Some(TaskSort::Priority)),
    ("Complexity", Some(TaskSort::Complexity)),
    ("Feasibility", Some(TaskSort::Feasibility)),
    ("Added", Some(TaskSort::Added)),
    ("Analysis", None),
];

fn headers(view: &View) -> Vec<Header> {
    let (sort, descending) = (view.filter.sort, view.filter.descending);
    COLUMNS
        .into_iter()
        .map(|(label, by)| match by {
            None => Header { label, link: None, aria_sort: None },
            Some(by) => {
                let reverse = by == sort && !descending;
                let dir = reverse.then(|| "desc".to_string());
                let link =
                    view.link("/queue", &[("sort", Some(by.as_str().into())), ("dir", dir), ("page", None)]);
                let aria_sort = (by == sort).then_some(if descending { "descending" } else { "ascending" });
                Header { label, link: Some(link), aria_sort }
            }
        })
        .collect()
}

pub(super) async fn page(
    State(state): State<AppState>,
    Extension(auth): Extension<Auth>,
    Query(query): Query<ViewQuery>,
    Query(flash): Query<FlashQuery>,
) -> Result<Html<String>, PageError> {
    let (flash, error) = flash.verified(&state, &auth);
    let view = query.view(now()).map_err(|e| PageError::BadRequest(e.to_string()))?;
    let page = view.page;
    let live = super::live::mark(&state).await?;
    let total = state.store.count_tasks(&view.filter).await?;
    let pages = (total + PER_PAGE - 1) / PER_PAGE;
    let filter = TaskFilter {
        limit: Some(PER_PAGE),
        offset: Some((page - 1).saturating_mul(PER_PAGE)),
        ..view.filter.clone()
    };
    // A page past the end reads nothing: the count already says there is nothing there.
    let tasks = if page > pages { Vec::new() } else { state.store.list_tasks(&filter).await? };
    let rows: Vec<Row> = tasks.iter().map(row).collect();
    let to_page = |p: i64| view.link("/queue", &[("page", Some(p.to_string()))]);
    let mut kept = view.given.clone();
    kept.push(("page", page.to_string()));
    // The export is of the view (its filters and order), not of the page shown: as many as the API gives.
    let export =
        |path| view.link(path, &[("page", None), ("limit", Some(crate::web::api::MAX_ROWS.to_string()))]);
    let narrowed = view.given.iter().any(|(name, _)| !matches!(*name, "sort" | "dir"));
    render(
        "queue.html",
        minijinja::context! {
            nav => "queue",
            live,
            csrf => state.keys.csrf(&auth),
            statuses => QueueStatus::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            status => view.get("status"),
            source => view.get("source"),
            repo => view.get("repo"),
            prio_min => view.get("prio_min"),
            prio_max => view.get("prio_max"),
            added_within => view.get("added_within"),
            older_than => view.get("older_than"),
            ages => AGES,
            q => view.get("q"),
            sort => view.get("sort"),
            dir => view.get("dir"),
            narrowed,
            headers => headers(&view),
            kept,
            // The view without its page, for the jump-to-page form.
            unpaged => view.given.clone(),
            csv_link => export("/api/v1/tasks.csv"),
            json_link => export("/api/v1/tasks"),
            page,
            pages,
            total,
            past_end => page > pages && total > 0,
            first => (page - 1) * PER_PAGE + 1,
            rows,
            first_link => (page > 1).then(|| to_page(1)),
            prev => (page > 1 && page <= pages + 1).then(|| to_page(page - 1)),
            next => (page < pages).then(|| to_page(page + 1)),
            last_link => (pages > 0 && page != pages).then(|| to_page(pages)),
            sources => state.config.sources.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            repos => state.config.repos.keys().cloned().collect::<Vec<_>>(),
            flash,
            error,
        },
    )
}

/// The ages the filters offer (any other, `3d` or `36h`, works typed into the URL).
const AGES: [&str; 5] = ["1d", "7d", "30d", "90d", "365d"];
