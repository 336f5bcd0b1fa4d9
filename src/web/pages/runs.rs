//! `GET /runs[?state=STATE]`: the board, one card per run — its task's title, its pull request and CI,
//! its worker, its cost so far — in a column per run state, or only the runs of one state. The runs come
//! from one statement (`Store::runs_board_of`); the counts per state from one more.

use axum::extract::{Query, State};
use axum::response::Html;
use serde::{Deserialize, Serialize};

use super::pr_summary::{PrSummary, pr_summary, trust_for};
use super::{PageError, ago, first_line, money, render, short, span, web_link};
use crate::domain::{EndReason, RunState};
use crate::forge::PrSnapshot;
use crate::store::{BoardQuery, BoardRow, now};
use crate::web::AppState;

/// The newest runs the board shows.
pub(super) const BOARD_LIMIT: i64 = 2000;

/// The most characters of a task's title a card shows.
const TITLE_CHARS: usize = 90;

#[derive(Deserialize)]
pub(super) struct BoardParams {
    /// Only runs in this state (a stable URL: `/runs?state=pr`).
    state: Option<String>,
}

#[derive(Serialize)]
struct Card {
    id: i64,
    state: &'static str,
    task_gid: String,
    title: String,
    pr_url: Option<String>,
    pr_number: Option<i64>,
    pr: Option<PrSummary>,
    ci_attempts: i32,
    stuck: i32,
    workers: i64,
    cost: String,
    tokens: String,
    worker: Option<WorkerLine>,
    decision: Option<String>,
    decided: Option<String>,
    budget_stopped: bool,
}

/// The live worker (kind, for how long), or the last one and how it ended.
#[derive(Serialize)]
struct WorkerLine {
    session: i64,
    kind: &'static str,
    live: bool,
    /// "running for 12m", or "finished after 8m, 2h ago".
    how: String,
    has_log: bool,
    /// The last worker failed or got stuck (what counts against `runner.max_stuck`).
    bad: bool,
}

#[derive(Serialize)]
struct Column {
    state: &'static str,
    cards: Vec<Card>,
}

/// A link of the state filter: the state, how many runs it has, whether it is the one shown.
#[derive(Serialize)]
struct StateLink {
    state: &'static str,
    count: i64,
    current: bool,
}

fn worker_line(row: &BoardRow, now: chrono::DateTime<chrono::Utc>) -> Option<WorkerLine> {
    let w = row.last_worker.as_ref()?;
    let (how, bad) = match (w.ended_at, w.end_reason) {
        (None, _) => (format!("running for {}", span((now - w.started_at).num_seconds())), false),
        (Some(end), reason) => {
            let took = span((end - w.started_at).num_seconds());
            let word = reason.map_or("ended", EndReason::as_str);
            (
                format!("{word} after {took}, {}", ago(end, now)),
                reason.is_some_and(EndReason::counts_as_stuck),
            )
        }
    };
    Some(WorkerLine {
        session: w.session,
        kind: w.kind.as_str(),
        live: w.ended_at.is_none(),
        how,
        has_log: w.log_path.is_some(),
        bad,
    })
}

fn card(state: &AppState, row: &BoardRow) -> Card {
    let now = now();
    let run = &row.run;
    let snapshot: Option<PrSnapshot> =
        row.last_snapshot.as_deref().and_then(|j| serde_json::from_str(j).ok());
    // What the sessions spent, the live one's so far included; an imported run's cost came with it,
    // without sessions.
    let cost = row.workers.cost_usd.max(run.cost_usd);
    Card {
        id: run.id,
        state: run.state.as_str(),
        task_gid: run.task_gid.to_string(),
        title: first_line(row.task_text.as_deref().unwrap_or(""), TITLE_CHARS),
        pr_url: web_link(run.pr_url.as_deref()),
        pr_number: run.pr_number,
        pr: snapshot.as_ref().map(|pr| pr_summary(pr, &trust_for(state, run.repo.as_deref()), run.state)),
        ci_attempts: run.ci_attempts,
        stuck: run.worker_stuck_count,
        workers: row.workers.sessions,
        cost: money(cost, run.cost_estimated || row.workers.cost_estimated),
        tokens: format!(
            "{} in / {} out",
            row.workers.input_tokens.max(run.input_tokens),
            row.workers.output_tokens.max(run.output_tokens)
        ),
        worker: worker_line(row, now),
        // The runner's last word on an abandoned run ("… complete") is not what became of it.
        decision: row.last_decision.as_deref().map(|d| match run.state {
            RunState::Abandoned => format!("abandoned (the runner had last decided: {})", short(d, 160)),
            _ => short(d, 200),
        }),
        decided: row.last_decision_at.map(|t| ago(t, now)),
        budget_stopped: row.budget_stopped,
    }
}

pub(super) async fn board(
    State(state): State<AppState>,
    Query(params): Query<BoardParams>,
) -> Result<Html<String>, PageError> {
    let only: Option<RunState> = match params.state.as_deref() {
        None | Some("") => None,
        Some(s) => Some(s.parse().map_err(|e| PageError::BadRequest(format!("{e}")))?),
    };
    let live = super::live::mark(&state).await?;
    let rows = state.store.runs_board_of(BoardQuery { state: only, limit: BOARD_LIMIT }).await?;
    let counts = state.store.run_state_counts().await?;
    let count = |s: RunState| counts.iter().find(|(name, _)| name == s.as_str()).map_or(0, |(_, n)| *n);
    let links: Vec<StateLink> = RunState::ALL
        .iter()
        .map(|&s| StateLink { state: s.as_str(), count: count(s), current: only == Some(s) })
        .collect();
    let all: i64 = RunState::ALL.iter().map(|&s| count(s)).sum();
    let shown = rows.len();
    let columns: Vec<Column> = RunState::ALL
        .iter()
        .filter(|&&s| only.is_none_or(|o| o == s))
        .map(|&s| Column {
            state: s.as_str(),
            cards: rows.iter().filter(|r| r.run.state == s).map(|r| card(&state, r)).collect(),
        })
        .collect();
    render(
        "runs.html",
        minijinja::context! {
            nav => "runs", live, columns, links, all, shown, limit => BOARD_LIMIT,
            only => only.map(RunState::as_str),
        },
    )
}
