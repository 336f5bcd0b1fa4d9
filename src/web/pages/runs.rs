//! `GET /runs`: the board, one column per run state, from one query (`Store::runs_board`).

use axum::extract::State;
use axum::response::Html;
use serde::Serialize;

use super::detail::{PrSummary, pr_summary, trust_for};
use super::{PageError, ago, money, render, short, web_link};
use crate::domain::RunState;
use crate::forge::PrSnapshot;
use crate::store::{BoardRow, now};
use crate::web::AppState;

/// The newest runs the board shows.
pub(super) const BOARD_LIMIT: i64 = 2000;

#[derive(Serialize)]
struct Card {
    id: i64,
    task_gid: String,
    pr_url: Option<String>,
    pr_number: Option<i64>,
    pr: Option<PrSummary>,
    ci_attempts: i32,
    stuck: i32,
    cost: String,
    tokens: String,
    /// The live worker: session id, kind, since.
    worker: Option<(i64, &'static str, String)>,
    decision: Option<String>,
    decided: Option<String>,
    budget_stopped: bool,
}

#[derive(Serialize)]
struct Column {
    state: &'static str,
    cards: Vec<Card>,
}

fn card(state: &AppState, row: &BoardRow) -> Card {
    let now = now();
    let run = &row.run;
    let snapshot: Option<PrSnapshot> =
        row.last_snapshot.as_deref().and_then(|j| serde_json::from_str(j).ok());
    Card {
        id: run.id,
        task_gid: run.task_gid.to_string(),
        pr_url: web_link(run.pr_url.as_deref()),
        pr_number: run.pr_number,
        pr: snapshot.as_ref().map(|pr| pr_summary(pr, &trust_for(state, run.repo.as_deref()), run.state)),
        ci_attempts: run.ci_attempts,
        stuck: run.worker_stuck_count,
        cost: money(run.cost_usd, run.cost_estimated),
        tokens: format!("{} in / {} out", run.input_tokens, run.output_tokens),
        worker: row.live_worker.as_ref().map(|w| (w.session, w.kind.as_str(), ago(w.started_at, now))),
        // The runner's last word on an abandoned run ("… complete") is not what became of it.
        decision: row.last_decision.as_deref().map(|d| match run.state {
            RunState::Abandoned => format!("abandoned (the runner had last decided: {})", short(d, 160)),
            _ => short(d, 200),
        }),
        decided: row.last_decision_at.map(|t| ago(t, now)),
        budget_stopped: row.budget_stopped,
    }
}

pub(super) async fn board(State(state): State<AppState>) -> Result<Html<String>, PageError> {
    let live = super::live::mark(&state).await?;
    let rows = state.store.runs_board(BOARD_LIMIT).await?;
    let total = rows.len();
    let columns: Vec<Column> = RunState::ALL
        .iter()
        .map(|&s| Column {
            state: s.as_str(),
            cards: rows.iter().filter(|r| r.run.state == s).map(|r| card(&state, r)).collect(),
        })
        .collect();
    render("runs.html", minijinja::context! { nav => "runs", live, columns, total, limit => BOARD_LIMIT })
}
