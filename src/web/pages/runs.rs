//! `GET /runs[?state=STATE][&q=TEXT][&page=N][&ended=show]`: the board, one card per run — its task's
//! title, its pull request and CI, its worker, its cost so far — in a column per run state, or only the
//! runs of one state; a page of [`PAGE_SIZE`] runs at a time, newest first, the ended ones folded into a
//! count unless asked for, and a search over task gid, task text, branch and pull request URL. A page's
//! runs come from one statement (`Store::runs_board_of`); how many there are, and the counts per state,
//! from a few more.

use axum::extract::{Query, State};
use axum::response::Html;
use serde::{Deserialize, Serialize};

use super::pr_summary::{PrSummary, pr_summary, trust_for};
use super::{PageError, ago, first_line, money, render, short, span, web_link};
use crate::domain::{ChangeWords, EndReason, RunState};
use crate::forge::PrSnapshot;
use crate::store::{BoardQuery, BoardRow, ENDED_STATES, now};
use crate::web::AppState;

/// The runs one page of the board shows: 1,000 runs were a 926 KiB page, two seconds to lay out.
pub(super) const PAGE_SIZE: i64 = 100;

/// The longest search the board takes; a longer one is refused, not cut.
const MAX_SEARCH_CHARS: usize = 200;

/// The most characters of a task's title a card shows.
const TITLE_CHARS: usize = 90;

#[derive(Deserialize)]
pub(super) struct BoardParams {
    /// Only runs in this state (a stable URL: `/runs?state=pr`).
    state: Option<String>,
    /// Only runs whose task gid, task text, branch or pull request URL holds this.
    q: Option<String>,
    /// The page, from 1.
    page: Option<String>,
    /// `show`: the ended runs are on the board too, not folded.
    ended: Option<String>,
}

#[derive(Serialize)]
struct Card {
    id: i64,
    state: &'static str,
    task_gid: String,
    title: String,
    pr_url: Option<String>,
    pr_number: Option<i64>,
    /// How the run's forge names its change ("PR #12", "MR !12").
    words: ChangeWords,
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
        words: state.config.words_for(run.repo.as_deref()),
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

/// An ended state's folded column: how many runs it has (that match the search) and where they are.
#[derive(Serialize)]
struct Folded {
    state: &'static str,
    count: i64,
    link: String,
}

/// `/runs` with `pairs` (the empty ones left out) as its query string.
fn board_link(pairs: &[(&str, Option<&str>)]) -> String {
    let query: Vec<String> = pairs
        .iter()
        .filter_map(|(name, value)| {
            value.filter(|v| !v.is_empty()).map(|v| format!("{name}={}", super::encode(v)))
        })
        .collect();
    if query.is_empty() { "/runs".to_string() } else { format!("/runs?{}", query.join("&")) }
}

pub(super) async fn board(
    State(state): State<AppState>,
    Query(params): Query<BoardParams>,
) -> Result<Html<String>, PageError> {
    let only: Option<RunState> = match params.state.as_deref() {
        None | Some("") => None,
        Some(s) => Some(s.parse().map_err(|e| PageError::BadRequest(format!("{e}")))?),
    };
    let search = params.q.as_deref().map(str::trim).filter(|q| !q.is_empty()).map(str::to_string);
    if search.as_ref().is_some_and(|q| q.chars().count() > MAX_SEARCH_CHARS) {
        return Err(PageError::BadRequest(format!("a search is at most {MAX_SEARCH_CHARS} characters")));
    }
    let page: i64 = match params.page.as_deref() {
        None | Some("") => 1,
        Some(p) => p
            .parse()
            .ok()
            .filter(|p| *p >= 1)
            .ok_or_else(|| PageError::BadRequest(format!("page {p:?} is not a page number (1, 2, …)")))?,
    };
    let show_ended = params.ended.as_deref() == Some("show");
    // Ended runs are folded away from the board of every state unless asked for; a board of one state
    // shows what it was asked for.
    let fold = only.is_none() && !show_ended;
    let query = BoardQuery {
        state: only,
        limit: PAGE_SIZE,
        offset: (page - 1).saturating_mul(PAGE_SIZE),
        unended: fold,
        search: search.clone(),
    };
    let live = super::live::mark(&state).await?;
    let total = state.store.count_board(&query).await?;
    let rows = state.store.runs_board_of(query).await?;
    let counts = state.store.run_state_counts().await?;
    let count = |s: RunState| counts.iter().find(|(name, _)| name == s.as_str()).map_or(0, |(_, n)| *n);
    let q = search.as_deref();
    let links: Vec<StateLink> = RunState::ALL
        .iter()
        .map(|&s| StateLink { state: s.as_str(), count: count(s), current: only == Some(s) })
        .collect();
    let all: i64 = RunState::ALL.iter().map(|&s| count(s)).sum();
    let mut folded = Vec::new();
    if fold {
        for s in ENDED_STATES {
            let n = match q {
                None => count(s),
                Some(_) => {
                    let of = BoardQuery { state: Some(s), search: search.clone(), ..Default::default() };
                    state.store.count_board(&of).await?
                }
            };
            folded.push(Folded {
                state: s.as_str(),
                count: n,
                link: board_link(&[("state", Some(s.as_str())), ("q", q)]),
            });
        }
    }
    let columns: Vec<Column> = RunState::ALL
        .iter()
        .filter(|&&s| only.is_none_or(|o| o == s) && !(fold && ENDED_STATES.contains(&s)))
        .map(|&s| Column {
            state: s.as_str(),
            cards: rows.iter().filter(|r| r.run.state == s).map(|r| card(&state, r)).collect(),
        })
        .collect();
    let pages = (total + PAGE_SIZE - 1) / PAGE_SIZE;
    let ended = if show_ended { Some("show") } else { None };
    let to_page = |p: i64| {
        let p = p.to_string();
        board_link(&[
            ("state", only.map(RunState::as_str)),
            ("q", q),
            ("ended", ended),
            ("page", Some(p.as_str())),
        ])
    };
    render(
        "runs.html",
        minijinja::context! {
            nav => "runs", live, columns, links, all, folded,
            shown => rows.len(), total, page, pages,
            first => (page - 1) * PAGE_SIZE + 1,
            prev => (page > 1).then(|| to_page(page - 1)),
            next => (page < pages).then(|| to_page(page + 1)),
            q, show_ended,
            unfold => board_link(&[("q", q), ("ended", Some("show"))]),
            refold => board_link(&[("q", q)]),
            only => only.map(RunState::as_str),
            words => state.config.words_everywhere(),
        },
    )
}
