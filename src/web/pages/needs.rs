//! `GET /`: "Needs you", the dashboard's default view — everything that waits on a human, each with its
//! one-click action (`Store::needs_you`: a fixed number of statements, each list bounded). The queue
//! moved to `/queue`; an old link `/?status=…` is sent there with its filters, so shared links work.

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Serialize;

use super::{FlashQuery, PageError, ago, first_line, money, render, short, web_link};
use crate::domain::Task;
use crate::store::{NeedsYouLimits, RunNeed, now};
use crate::web::AppState;
use crate::web::session::Auth;

/// Items each list shows; its total says how many more the queue or the board holds.
pub(super) const PER_LIST: i64 = 20;

/// The queue's own query parameters: a link to `/` with any of them is a queue link from before
/// "Needs you" became the default view.
const QUEUE_PARAMS: [&str; 4] = ["status", "source", "q", "page"];

#[derive(Serialize)]
struct TaskItem {
    gid: String,
    title: String,
    source: Option<String>,
    priority: Option<i32>,
    summary: Option<String>,
    /// The last analysis error (given-up analyses only).
    error: Option<String>,
    attempts: i64,
    revised: bool,
}

fn task_item(t: &Task) -> TaskItem {
    TaskItem {
        gid: t.task_gid.to_string(),
        title: first_line(t.description.as_deref().unwrap_or(""), 90),
        source: t.source.clone(),
        priority: t.priority,
        summary: t.analysis_summary.as_deref().map(|s| short(s, 160)),
        error: t.analysis_error.as_deref().map(|e| short(e, 300)),
        attempts: t.analysis_attempts,
        revised: t.revision_at.is_some(),
    }
}

#[derive(Serialize)]
struct RunItem {
    id: i64,
    task_gid: String,
    title: String,
    state: &'static str,
    pr_url: Option<String>,
    pr_number: Option<i64>,
    cost: String,
    notice_id: Option<i64>,
    message: Option<String>,
    told: Option<String>,
}

fn run_item(need: &RunNeed) -> RunItem {
    let run = &need.run;
    let now = now();
    RunItem {
        id: run.id,
        task_gid: run.task_gid.to_string(),
        title: first_line(need.task_text.as_deref().unwrap_or(""), 90),
        state: run.state.as_str(),
        pr_url: web_link(run.pr_url.as_deref()),
        pr_number: run.pr_number,
        cost: money(run.cost_usd, run.cost_estimated),
        notice_id: need.notice.as_ref().map(|n| n.id),
        // A budget stop has no notice of its own to read: the runner's last decision says which cap.
        message: need
            .notice
            .as_ref()
            .map(|n| short(&n.message, 600))
            .or_else(|| need.last_decision.as_deref().map(|d| short(d, 600))),
        told: need.notice.as_ref().map(|n| ago(n.created_at, now)),
    }
}

pub(super) async fn page(
    State(state): State<AppState>,
    Extension(auth): Extension<Auth>,
    RawQuery(raw): RawQuery,
    axum::extract::Query(flash): axum::extract::Query<FlashQuery>,
) -> Result<Response, PageError> {
    if let Some(query) = raw.as_deref().filter(|q| is_queue_link(q)) {
        return Ok(Redirect::permanent(&format!("/queue?{query}")).into_response());
    }
    let (flash, error) = flash.verified(&state, &auth);
    let limits =
        NeedsYouLimits { per_list: PER_LIST, max_analysis_attempts: state.config.analyzer.max_attempts };
    // The mark first: a change landing while the lists are read moves it, and the page fetches again.
    let live = super::live::mark(&state).await?;
    let needs = state.store.needs_you(limits).await?;
    let now = now();
    let budget_stopped: Vec<_> = needs.budget_stopped.iter().map(run_item).collect();
    let sources: Vec<_> = needs
        .failed_sources
        .iter()
        .map(|s| {
            minijinja::context! {
                name => s.source, error => short(&s.error, 600),
                failed => s.failed_at.map(|t| ago(t, now)), fetched => s.fetched_at.map(|t| ago(t, now)),
                link => format!("/queue?source={}", super::encode(&s.source)),
            }
        })
        .collect();
    let page: Html<String> = render(
        "needs.html",
        minijinja::context! {
            nav => "needs",
            live,
            csrf => state.keys.csrf(&auth),
            total => needs.total(),
            awaiting_go => needs.awaiting_go.items.iter().map(task_item).collect::<Vec<_>>(),
            awaiting_go_total => needs.awaiting_go.total,
            for_review => needs.for_review.items.iter().map(task_item).collect::<Vec<_>>(),
            for_review_total => needs.for_review.total,
            given_up => needs.analysis_given_up.items.iter().map(task_item).collect::<Vec<_>>(),
            given_up_total => needs.analysis_given_up.total,
            max_attempts => state.config.analyzer.max_attempts,
            budget_stopped,
            per_run_budget => money(state.config.budget.per_run_usd, false),
            checks_overdue => needs.checks_overdue.iter().map(run_item).collect::<Vec<_>>(),
            abandoned => needs.abandoned_unread.iter().map(run_item).collect::<Vec<_>>(),
            sources,
            per_list => PER_LIST,
            flash,
            error,
        },
    )?;
    Ok(page.into_response())
}

/// Whether a query string names one of the queue's filters (`status=…&page=2`), even empty.
fn is_queue_link(query: &str) -> bool {
    query.split('&').filter_map(|pair| pair.split('=').next()).any(|name| QUEUE_PARAMS.contains(&name))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_queues_filters_make_a_queue_link() {
        assert!(super::is_queue_link("status=awaiting_go"));
        assert!(super::is_queue_link("flash=x&page=2&sig=y"));
        assert!(super::is_queue_link("q="));
        assert!(!super::is_queue_link("flash=approved&sig=abc"));
        assert!(!super::is_queue_link(""));
    }
}
