//! `GET /runs/{id}`: one run read at a glance — its task's title, its pull request as last observed
//! (checks at the head, the unresolved trusted comments, the diff stat), the latest review's findings,
//! every worker with its time, cost and log, and its history; and what the run waits for from a person:
//! its plan (approve it, or send it back with what should change) and its workers' questions (answer the
//! open one), and a comment to its pull request, which its next worker acts on. A fixed number of
//! statements.

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::Html;

use super::detail::event_lines;
use super::pr_summary::{pr_summary, trust_for};
use super::{FlashQuery, PageError, ago, first_line, money, render, short, span, web_link};
use crate::domain::{PlanStatus, RunState, SHOWN_TEXT_BYTES, shown};
use crate::forge::{PrSnapshot, latest_review};
use crate::store::{EventFilter, RunPlan, RunQuestion, WorkerSession, now};
use crate::web::AppState;
use crate::web::session::Auth;

/// The most characters of a comment or a finding the page shows.
const EXCERPT: usize = 300;

fn checks(pr: &PrSnapshot) -> Vec<minijinja::Value> {
    pr.checks_at_head()
        .into_iter()
        .map(|c| {
            minijinja::context! {
                name => c.name, status => c.status.as_str(), url => web_link(c.url.as_deref()),
                failing => c.status.is_failing() || c.status.is_error(),
                summary => c.summary.as_deref().map(|s| first_line(s, 160)),
            }
        })
        .collect()
}

/// The comments the runner counts as unresolved and trusted (the forge's own rule), each linked to the
/// pull request they are on (a comment's own address is not observed).
fn unresolved(pr: &PrSnapshot, trust: &crate::config::Trust) -> Vec<minijinja::Value> {
    let now = now();
    pr.unresolved_trusted_comments(trust)
        .into_iter()
        .map(|c| {
            minijinja::context! {
                author => c.author, body => short(&c.body, EXCERPT), at => ago(c.created_at, now),
                place => c.path.as_ref().map(|p| match c.line {
                    Some(line) => format!("{p}:{line}"),
                    None => p.clone(),
                }),
                url => web_link(Some(pr.url.as_str())),
            }
        })
        .collect()
}

fn worker_rows(sessions: &[WorkerSession]) -> Vec<minijinja::Value> {
    let now = now();
    sessions
        .iter()
        .map(|w| {
            minijinja::context! {
                id => w.id, kind => w.kind.as_str(), agent => w.agent,
                started => ago(w.started_at, now),
                started_at => w.started_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                duration => match w.ended_at {
                    Some(t) => span((t - w.started_at).num_seconds()),
                    None => format!("{} so far", span((now - w.started_at).num_seconds())),
                },
                end => match (&w.ended_at, &w.end_reason) {
                    (Some(t), Some(r)) => format!("{r} {}", ago(*t, now)),
                    (Some(t), None) => format!("ended {}", ago(*t, now)),
                    _ => "running".to_string(),
                },
                bad => w.end_reason.is_some_and(|r| r.counts_as_stuck()),
                cost => money(w.cost_usd, w.cost_estimated),
                tokens => format!("{} in / {} out", w.input_tokens, w.output_tokens),
                error => w.result_error.as_deref().map(|e| short(e, EXCERPT)), has_log => w.log_path.is_some(),
            }
        })
        .collect()
}

/// The newest review: its verdict, the head it reviewed, its summary and findings.
fn review(sessions: &[WorkerSession]) -> Option<minijinja::Value> {
    let (session, result) = latest_review(sessions)?;
    let findings: Vec<_> = result
        .as_ref()
        .map(|r| {
            r.findings
                .iter()
                .map(|f| {
                    minijinja::context! {
                        place => f.path.as_ref().map(|p| match f.line {
                            Some(line) => format!("{p}:{line}"),
                            None => p.clone(),
                        }),
                        body => short(&f.body, EXCERPT),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Some(minijinja::context! {
        session => session.id,
        verdict => session.verdict.map(|v| v.as_str()),
        head => session.start_sha.as_deref().map(|s| s.chars().take(10).collect::<String>()),
        at => session.ended_at.map(|t| ago(t, now())),
        posted => session.review_posted_at.is_some(),
        summary => result.as_ref().map(|r| short(&r.summary, 1000)),
        findings,
    })
}

/// Who made a person's decision and when: "web, 5m ago", "alice (cli), 2h ago".
fn decided(
    actor: Option<&str>,
    by: Option<&str>,
    at: Option<chrono::DateTime<chrono::Utc>>,
) -> Option<String> {
    let who = match (by, actor) {
        (Some(by), Some(actor)) => format!("{by} ({actor})"),
        (Some(who), None) | (None, Some(who)) => who.to_string(),
        (None, None) => return at.map(|t| ago(t, now())),
    };
    Some(match at {
        Some(t) => format!("{who}, {}", ago(t, now())),
        None => who,
    })
}

/// A plan revision as the page shows it: its whole body (bounded), as text — agent-written Markdown is
/// never markup.
fn plan_row(p: &RunPlan) -> minijinja::Value {
    minijinja::context! {
        revision => p.revision,
        status => p.status.as_str(),
        awaiting => p.status == PlanStatus::AwaitingApproval,
        body => shown(&p.body, SHOWN_TEXT_BYTES).into_owned(),
        written => ago(p.created_at, now()),
        written_at => p.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
        decided => decided(p.decided_actor.as_deref(), p.decided_by.as_deref(), p.decided_at),
        feedback => p.feedback.as_deref().map(|f| shown(f, SHOWN_TEXT_BYTES).into_owned()),
    }
}

/// The questions, oldest first; only the newest open one (the one an answer answers) takes the form.
fn question_rows(questions: &[RunQuestion]) -> Vec<minijinja::Value> {
    let open = questions.iter().rev().find(|q| q.answered_at.is_none()).map(|q| q.id);
    questions
        .iter()
        .map(|q| {
            minijinja::context! {
                id => q.id,
                kind => q.worker_kind.as_str(),
                question => shown(&q.question, SHOWN_TEXT_BYTES).into_owned(),
                asked => ago(q.asked_at, now()),
                asked_at => q.asked_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                answer => q.answer.as_deref().map(|a| shown(a, SHOWN_TEXT_BYTES).into_owned()),
                answered => q.answered_at.is_some().then(|| {
                    decided(q.answered_via.map(|v| v.as_str()), q.answered_by.as_deref(), q.answered_at)
                }).flatten(),
                open => Some(q.id) == open,
            }
        })
        .collect()
}

pub(super) async fn page(
    State(state): State<AppState>,
    Extension(auth): Extension<Auth>,
    Path(id): Path<String>,
    Query(flash): Query<FlashQuery>,
) -> Result<Html<String>, PageError> {
    let (flash, error) = flash.verified(&state, &auth);
    let id: i64 = id.parse().map_err(|_| PageError::NotFound(format!("no run with id {id:?}")))?;
    let live = super::live::mark(&state).await?;
    let run = state.store.run(id).await?;
    let task = state.store.find_task(&run.task_gid).await?;
    let memory = state.store.run_memory(id).await?;
    let sessions = state.store.worker_sessions(id).await?;
    let events = state.store.events(&EventFilter { run_id: Some(id), ..Default::default() }).await?;
    let plans = state.store.plans(id).await?;
    let questions = state.store.questions(id).await?;
    let snapshot: Option<PrSnapshot> =
        memory.last_snapshot.as_deref().and_then(|j| serde_json::from_str(j).ok());
    let trust = trust_for(&state, run.repo.as_deref());
    let now = now();
    // The sessions' spend, the live one's so far included (an imported run's came without sessions).
    let spent: f64 = sessions.iter().map(|w| w.cost_usd).sum();
    let estimated = run.cost_estimated || sessions.iter().any(|w| w.cost_estimated);
    render(
        "run.html",
        minijinja::context! {
            nav => "runs",
            live,
            csrf => state.keys.csrf(&auth),
            flash,
            error,
            title => task.as_ref().map(|t| first_line(t.description.as_deref().unwrap_or(""), 200)),
            // `executor runs resume` and `runs abandon`, and `queue retry` for an abandoned run.
            // Only for the run's own cap: a fresh allowance does nothing against the day's.
            can_resume => memory.budget_cap == Some(crate::domain::BudgetCap::Run)
                && !matches!(run.state, RunState::Abandoned | RunState::Complete),
            day_turns => crate::domain::next_budget_day(now).format("%Y-%m-%d %H:%M UTC").to_string(),
            can_abandon => run.state.next().contains(&RunState::Abandoned),
            // The states whose pull request the runner watches for trusted comments.
            can_comment => run.pr_number.is_some() && matches!(run.state, RunState::Pr | RunState::Complete),
            max_comment => crate::web::comments::MAX_COMMENT,
            pr_url => web_link(run.pr_url.as_deref()),
            // "pull request" / "merge request": the run's repository's forge names its change.
            words => state.config.words_for(run.repo.as_deref()),
            cost => money(spent.max(run.cost_usd), estimated),
            tokens => format!(
                "{} in / {} out",
                sessions.iter().map(|w| w.input_tokens).sum::<i64>().max(run.input_tokens),
                sessions.iter().map(|w| w.output_tokens).sum::<i64>().max(run.output_tokens)
            ),
            started => ago(run.started_at, now),
            completed => run.completed_at.map(|t| ago(t, now)),
            decided => memory.last_decision_at.map(|t| ago(t, now)),
            memory,
            pr => snapshot.as_ref().map(|pr| pr_summary(pr, &trust, run.state)),
            abandoned => run.state == RunState::Abandoned,
            checks => snapshot.as_ref().map(checks).unwrap_or_default(),
            unresolved => snapshot.as_ref().map(|pr| unresolved(pr, &trust)).unwrap_or_default(),
            review => review(&sessions),
            // The newest revision is the one that counts; the earlier ones, newest first, folded.
            plan => plans.last().map(plan_row),
            earlier_plans => plans.iter().rev().skip(1).map(plan_row).collect::<Vec<_>>(),
            question_open => questions.iter().any(|q| q.answered_at.is_none()),
            questions => question_rows(&questions),
            run,
            sessions => worker_rows(&sessions),
            events => event_lines(&events),
        },
    )
}
