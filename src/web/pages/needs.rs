//! `GET /`: "Needs you", the dashboard's default view — everything that waits on a human, each with its
//! one-click action (`Store::needs_you`: a fixed number of statements, each list bounded). The queue
//! moved to `/queue`; an old link `/?status=…` is sent there with its filters, so shared links work.

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Serialize;

use super::{FlashQuery, PageError, ago, first_line, money, render, short, web_link};
use crate::config::Config;
use crate::domain::{BudgetCap, ChangeWords, Task, next_budget_day};
use crate::store::{Listed, NeedsYouLimits, PlanNeed, QuestionNeed, RunNeed, now, start_of_day};
use crate::web::AppState;
use crate::web::session::Auth;

/// Items each list shows; its total says how many more the queue or the board holds.
pub(super) const PER_LIST: i64 = 20;

/// Items a list shows at a time when it is shown whole (`/?all=LIST`), a page after another.
const ALL_PER_PAGE: i64 = 100;

/// The lists, by the id of their section: `/?all=ID` shows that one, all of it.
const LISTS: [&str; 10] = [
    "awaiting-go",
    "for-review",
    "analysis-given-up",
    "revisions",
    "plans-awaiting",
    "open-questions",
    "budget-stopped",
    "checks-overdue",
    "abandoned",
    "failed-sources",
];

/// `?all=LIST&start=N`: one list, whole, from its `N`-th item.
#[derive(serde::Deserialize)]
pub(super) struct AllQuery {
    all: Option<String>,
    start: Option<i64>,
}

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
    /// Done: its work is finished, so a revision of it cannot be accepted.
    done: bool,
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
        done: t.status == crate::domain::QueueStatus::Done,
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
    /// How the run's forge names its change ("PR #12", "MR !12").
    words: ChangeWords,
    cost: String,
    notice_id: Option<i64>,
    message: Option<String>,
    told: Option<String>,
    /// Which cap stopped it ("run", "day"): only the run's own is helped by Resume.
    budget_cap: Option<BudgetCap>,
}

fn run_item(need: &RunNeed, config: &Config) -> RunItem {
    let run = &need.run;
    let now = now();
    RunItem {
        id: run.id,
        task_gid: run.task_gid.to_string(),
        title: first_line(need.task_text.as_deref().unwrap_or(""), 90),
        state: run.state.as_str(),
        pr_url: web_link(run.pr_url.as_deref()),
        pr_number: run.pr_number,
        words: config.words_for(run.repo.as_deref()),
        cost: money(run.cost_usd, run.cost_estimated),
        notice_id: need.notice.as_ref().map(|n| n.id),
        // A budget stop has no notice of its own to read: the runner's last decision says which cap.
        message: need
            .notice
            .as_ref()
            .map(|n| short(&n.message, 600))
            .or_else(|| need.last_decision.as_deref().map(|d| short(d, 600))),
        told: need.notice.as_ref().map(|n| ago(n.created_at, now)),
        budget_cap: need.budget_cap,
    }
}

/// A list's part shown and its count, for a section: `items`, `total`.
fn section<T, U: Serialize>(list: &Listed<T>, item: impl Fn(&T) -> U) -> minijinja::Value {
    minijinja::context! { items => list.items.iter().map(item).collect::<Vec<_>>(), total => list.total }
}

/// A run that waits on a person's word (a plan, a question), with the words it waits on.
#[derive(Serialize)]
struct AskItem {
    id: i64,
    task_gid: String,
    title: String,
    state: &'static str,
    /// "plan revision 2", "the queued worker".
    what: String,
    text: String,
    at: String,
}

/// How much of a plan or a question an item shows (the run's page shows it all).
const ASK_EXCERPT: usize = 600;

fn plan_item(need: &PlanNeed) -> AskItem {
    AskItem {
        id: need.run.id,
        task_gid: need.run.task_gid.to_string(),
        title: first_line(need.task_text.as_deref().unwrap_or(""), 90),
        state: need.run.state.as_str(),
        what: format!("plan revision {}", need.revision),
        text: short(&need.plan_text, ASK_EXCERPT),
        at: ago(need.written_at, now()),
    }
}

fn question_item(need: &QuestionNeed) -> AskItem {
    AskItem {
        id: need.run.id,
        task_gid: need.run.task_gid.to_string(),
        title: first_line(need.task_text.as_deref().unwrap_or(""), 90),
        state: need.run.state.as_str(),
        what: format!("the {} worker", need.worker_kind),
        text: short(&need.question, ASK_EXCERPT),
        at: ago(need.asked_at, now()),
    }
}

pub(super) async fn page(
    State(state): State<AppState>,
    Extension(auth): Extension<Auth>,
    Extension(person): Extension<crate::web::person::Person>,
    RawQuery(raw): RawQuery,
    axum::extract::Query(flash): axum::extract::Query<FlashQuery>,
    axum::extract::Query(all): axum::extract::Query<AllQuery>,
) -> Result<Response, PageError> {
    if let Some(query) = raw.as_deref().filter(|q| is_queue_link(q)) {
        return Ok(Redirect::permanent(&format!("/queue?{query}")).into_response());
    }
    let (flash, error) = flash.verified(&state, &auth);
    // One list whole, a page at a time, or every list's first items: each counted whole either way.
    let only = all.all.as_deref().filter(|l| LISTS.contains(l));
    let (per_list, start) = match only {
        Some(_) => (ALL_PER_PAGE, all.start.unwrap_or(0).max(0)),
        None => (PER_LIST, 0),
    };
    let limits = NeedsYouLimits { per_list, max_analysis_attempts: state.config.analyzer.max_attempts };
    // The mark first: a change landing while the lists are read moves it, and the page fetches again.
    let live = super::live::mark(&state).await?;
    let needs = state.store.needs_you_from(limits, start).await?;
    let now = now();
    let sources = section(&needs.failed_sources, |s| {
        minijinja::context! {
            name => s.source, error => short(&s.error, 600),
            failed => s.failed_at.map(|t| ago(t, now)), fetched => s.fetched_at.map(|t| ago(t, now)),
            link => format!("/queue?source={}", super::encode(&s.source)),
        }
    });
    // The day's cap stops every run at once and lifts by itself: said once, with when and what helps.
    let day_cap = if needs.budget_day_stopped > 0 {
        let b = &state.config.budget;
        let turns = next_budget_day(now);
        Some(minijinja::context! {
            runs => needs.budget_day_stopped,
            spent => money(state.store.spent_since(start_of_day(now)).await?, false),
            cap => money(b.per_day_usd, false),
            key => BudgetCap::Day.key(),
            min_launch => money(b.min_launch_usd, false),
            turns => turns.format("%Y-%m-%d %H:%M UTC").to_string(),
            turns_in => ago(turns, now),
        })
    } else {
        None
    };
    let shown = only.map(|list| {
        let total = match list {
            "awaiting-go" => needs.awaiting_go.total,
            "for-review" => needs.for_review.total,
            "analysis-given-up" => needs.analysis_given_up.total,
            "revisions" => needs.revisions_pending.total,
            "plans-awaiting" => needs.plans_awaiting.total,
            "open-questions" => needs.open_questions.total,
            "budget-stopped" => needs.budget_stopped.total,
            "checks-overdue" => needs.checks_overdue.total,
            "abandoned" => needs.abandoned_unread.total,
            _ => needs.failed_sources.total,
        };
        minijinja::context! {
            list, total,
            from => start + 1,
            to => (start + per_list).min(total),
            previous => (start > 0).then(|| (start - per_list).max(0)),
            next => (start + per_list < total).then_some(start + per_list),
        }
    });
    let page: Html<String> = render(
        "needs.html",
        minijinja::context! {
            nav => "needs",
            live,
            since_looked => super::looked::since_looked(&state, &person).await?,
            csrf => state.keys.csrf(&auth),
            total => needs.total(),
            only,
            shown,
            awaiting_go => section(&needs.awaiting_go, task_item),
            for_review => section(&needs.for_review, task_item),
            given_up => section(&needs.analysis_given_up, task_item),
            max_attempts => state.config.analyzer.max_attempts,
            revisions => section(&needs.revisions_pending, task_item),
            budget_stopped => section(&needs.budget_stopped, |n| run_item(n, &state.config)),
            day_cap,
            per_run_budget => money(state.config.budget.per_run_usd, false),
            checks_overdue => section(&needs.checks_overdue, |n| run_item(n, &state.config)),
            abandoned => section(&needs.abandoned_unread, |n| run_item(n, &state.config)),
            sources,
            plans => section(&needs.plans_awaiting, plan_item),
            questions => section(&needs.open_questions, question_item),
            per_list,
            // Text about every run at once ("a comment on the pull request").
            words => state.config.words_everywhere(),
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
