//! `GET /status`: counts by status and state, today's spend against the daily budget, each host's runners,
//! sources and the newest events.

use axum::extract::State;
use axum::response::Html;

use super::detail::event_lines;
use super::{PageError, ago, money, render};
use crate::domain::RunnerEnd;
use crate::store::{EventFilter, now, start_of_day};
use crate::web::AppState;

/// Events the feed shows.
const RECENT_EVENTS: i64 = 50;

pub(super) async fn page(State(state): State<AppState>) -> Result<Html<String>, PageError> {
    let store = &state.store;
    let now = now();
    let live = super::live::mark(&state).await?;
    let counts = store.status_counts().await?;
    let workers = store.live_worker_sessions().await?;
    let spent = store.spent_since(start_of_day(now)).await?;
    let budget = state.config.budget.per_day_usd;
    let runners = store.runner_statuses().await?;
    let cursors = store.source_cursors().await?;
    let mut events = store.events(&EventFilter { limit: Some(RECENT_EVENTS), ..Default::default() }).await?;
    events.reverse();
    let runners: Vec<_> = runners
        .iter()
        .map(|r| {
            let state = r.state();
            // A runner that stopped itself (idle, or asked to) is how cron runners end every time: only
            // one that died or was lost (or whose heartbeat lapsed) is trouble.
            let trouble = matches!(r.end_reason, Some(RunnerEnd::Died | RunnerEnd::Lost))
                || (r.ended_at.is_none() && !r.alive);
            let when = match r.ended_at {
                Some(t) => format!("{state} {}", ago(t, now)),
                None => format!("{state}, started {}", ago(r.started_at, now)),
            };
            minijinja::context! {
                host => r.host, id => r.id, pid => r.pid, version => r.version,
                state => when, trouble, ended => r.ended_at.is_some(),
                heartbeat => ago(r.heartbeat_at, now),
                leases => r.leases, workers => r.workers, max_workers => r.max_workers,
                ticks => r.ticks, errors => r.errors, last_error => r.last_error,
            }
        })
        .collect();
    // Every configured source, with how its last fetch went when it has run.
    let mut names: Vec<String> = state.config.sources.iter().map(|s| s.name.clone()).collect();
    for c in &cursors {
        if !names.contains(&c.source) {
            names.push(c.source.clone());
        }
    }
    let sources: Vec<_> = names
        .iter()
        .map(|name| {
            let c = cursors.iter().find(|c| &c.source == name);
            minijinja::context! {
                link => format!("/queue?source={}", super::encode(name)),
                name,
                fetched => c.and_then(|c| c.fetched_at).map(|t| ago(t, now)),
                error => c.and_then(|c| c.last_error.clone()),
            }
        })
        .collect();
    let workers: Vec<_> = workers
        .iter()
        .map(|w| {
            minijinja::context! {
                id => w.id, run_id => w.run_id, kind => w.kind.as_str(), since => ago(w.started_at, now),
            }
        })
        .collect();
    render(
        "status.html",
        minijinja::context! {
            nav => "status",
            live,
            queue => counts.queue,
            runs => counts.runs,
            workers,
            spent => money(spent, false),
            budget => money(budget, false),
            over_budget => budget > 0.0 && spent >= budget,
            percent => if budget > 0.0 { ((spent / budget) * 100.0).round().min(100.0) as i64 } else { 0 },
            runners,
            sources,
            events => event_lines(&events),
        },
    )
}
