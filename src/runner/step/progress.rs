//! What the decision is told of a run's ended workers: how the last one ended, judged by the evidence
//! rather than by its word, how many of its job in a row did not get it done, and how many rounds of
//! comments were answered. Facts read from the database (sessions, the replies outbox) and the head.

use crate::domain::{EndClass, EndReason, WorkerKind};
use crate::runner::decision::{LastWorker, WorkerOutcome};
use crate::store::{OfferTally, WorkerSession};

/// The run's ended workers as the decision sees them: the last one, and the rounds of comments answered.
/// `head_now` is the head the work is judged by (the pull request's, else the branch's); `offers`, what
/// each `fix_comments` worker was given to answer and answered ([`crate::store::Store::offer_tallies`]).
/// `handed`: the sessions that handed a person a plan or a question (their job, done).
pub(super) fn progress(
    sessions: &[WorkerSession],
    head_now: Option<&str>,
    offers: &[OfferTally],
    handed: &[i64],
) -> (Option<LastWorker>, u32) {
    let judged = judge(sessions, head_now, offers, handed);
    let rounds = judged.iter().filter(|j| j.done).count();
    (last_worker(&judged), u32::try_from(rounds).unwrap_or(u32::MAX))
}

/// One ended worker, judged.
struct Judged<'a> {
    session: &'a WorkerSession,
    outcome: WorkerOutcome,
    /// A `fix_comments` worker that answered a new round of comments: it got its job done.
    done: bool,
}

/// Each ended worker, in order, with its outcome by the evidence. What a worker left is read at the
/// head the next worker started from (the last one: `head_now`).
fn judge<'a>(
    sessions: &'a [WorkerSession],
    head_now: Option<&str>,
    offers: &[OfferTally],
    handed: &[i64],
) -> Vec<Judged<'a>> {
    sessions
        .iter()
        .enumerate()
        .filter(|(_, s)| s.ended_at.is_some())
        .map(|(i, s)| {
            let head_after = sessions[i + 1..].iter().find_map(|next| next.start_sha.as_deref()).or(head_now);
            let moved = match (s.start_sha.as_deref(), head_after) {
                (Some(start), Some(after)) => Some(start != after),
                _ => None,
            };
            let tally = offers.iter().find(|t| t.session_id == s.id);
            // A plan written or a question asked is the job done, even with the branch untouched.
            if handed.contains(&s.id) && outcome_of(s) == WorkerOutcome::Ok {
                return Judged { session: s, outcome: WorkerOutcome::Ok, done: true };
            }
            let outcome = match outcome_of(s) {
                WorkerOutcome::Ok if changed_nothing(s.kind, moved, tally) => WorkerOutcome::NoProgress,
                other => other,
            };
            // Comments no earlier worker had answered, each answered on the pull request (or a commit
            // for them): a reviewer's new round, dealt with. Answered comments given again are a retry
            // (their answers never showed), bounded by the streak.
            let done = s.kind == WorkerKind::FixComments
                && outcome == WorkerOutcome::Ok
                && tally.is_some_and(|t| t.new > 0 && (t.answered == t.offered || moved == Some(true)));
            Judged { session: s, outcome, done }
        })
        .collect()
}

/// The last ended worker, and how many of the same job ran back to back without getting it done
/// (interrupted ones skipped): 0 when it got its job done.
fn last_worker(judged: &[Judged<'_>]) -> Option<LastWorker> {
    let last = judged.last()?;
    let job = |k: WorkerKind| {
        if k == WorkerKind::InProgress { WorkerKind::Queued } else { k }
    };
    let streak = judged
        .iter()
        .rev()
        .filter(|j| j.outcome != WorkerOutcome::Interrupted)
        .take_while(|j| job(j.session.kind) == job(last.session.kind) && !j.done)
        .count();
    Some(LastWorker {
        kind: last.session.kind,
        agent: last.session.agent.clone(),
        ended_at: last.session.ended_at.unwrap_or(last.session.started_at),
        outcome: last.outcome,
        streak: u32::try_from(streak).unwrap_or(u32::MAX),
    })
}

/// A worker that said it finished, yet the evidence shows it changed nothing: one whose job is to change
/// the branch left the head where it started (an agent whose commits were refused still reports
/// success); a `fix_comments` worker, which may rightly only answer, neither moved the head nor answered
/// any comment it was given. A review changes no code. Without a known head, the agent's word stands.
fn changed_nothing(kind: WorkerKind, moved: Option<bool>, tally: Option<&OfferTally>) -> bool {
    match kind {
        WorkerKind::Queued | WorkerKind::InProgress | WorkerKind::FixCi => moved == Some(false),
        WorkerKind::FixComments => moved == Some(false) && tally.is_none_or(|t| t.answered == 0),
        _ => false,
    }
}

/// The one reading of an end reason for the decision: [`EndReason::class`].
pub(super) fn outcome_of(s: &WorkerSession) -> WorkerOutcome {
    match s.end_reason.map(EndReason::class) {
        Some(EndClass::Ok) => WorkerOutcome::Ok,
        // Stopped by executor itself (shutdown, a budget cap that the next start checks anyway, a session
        // that could not be resumed): not the worker's fault, so no back-off and no stuck count.
        Some(EndClass::Interrupted) => WorkerOutcome::Interrupted,
        Some(EndClass::Stuck) => WorkerOutcome::Stuck,
        Some(EndClass::Failed) | None => WorkerOutcome::Failed,
    }
}
