//! How a session's end feeds the decision (issue 7, item 20 and the one reading of end reasons), and
//! a reviewer's stream of comments (issue 37, item 4).

use chrono::Utc;

use super::progress::{outcome_of, progress};
use crate::domain::{EndReason, WorkerKind};
use crate::runner::decision::{LastWorker, WorkerOutcome};
use crate::store::{OfferTally, WorkerSession, test_session};

fn ended(id: i64, kind: WorkerKind, reason: EndReason, start_sha: Option<&str>) -> WorkerSession {
    WorkerSession {
        pid: Some(10),
        ended_at: Some(Utc::now()),
        end_reason: Some(reason),
        exit_code: Some(0),
        start_sha: start_sha.map(String::from),
        ..test_session(id, kind)
    }
}

fn last_worker(sessions: &[WorkerSession], head_now: Option<&str>, offers: &[OfferTally]) -> LastWorker {
    progress(sessions, head_now, offers, &[]).0.unwrap()
}

fn tally(session_id: i64, offered: i64, new: i64, answered: i64) -> OfferTally {
    OfferTally { session_id, offered, new, answered }
}

#[test]
fn a_worker_that_finished_without_moving_its_branch_made_no_progress() {
    for kind in [WorkerKind::Queued, WorkerKind::InProgress, WorkerKind::FixCi] {
        let s = [ended(1, kind, EndReason::Finished, Some("aaa"))];
        assert_eq!(last_worker(&s, Some("aaa"), &[]).outcome, WorkerOutcome::NoProgress, "{kind}");
        assert_eq!(last_worker(&s, Some("bbb"), &[]).outcome, WorkerOutcome::Ok, "{kind} committed");
    }
    // A review changes no code: finishing at the head it started at is its job.
    let s = [ended(1, WorkerKind::PrReview, EndReason::Finished, Some("aaa"))];
    assert_eq!(last_worker(&s, Some("aaa"), &[]).outcome, WorkerOutcome::Ok);
    // Answering comments may need no commit: its answers on the pull request are its evidence.
    let s = [ended(1, WorkerKind::FixComments, EndReason::Finished, Some("aaa"))];
    assert_eq!(last_worker(&s, Some("aaa"), &[tally(1, 2, 2, 1)]).outcome, WorkerOutcome::Ok);
    assert_eq!(last_worker(&s, Some("aaa"), &[tally(1, 2, 2, 0)]).outcome, WorkerOutcome::NoProgress);
    assert_eq!(last_worker(&s, Some("aaa"), &[]).outcome, WorkerOutcome::NoProgress, "findings, no fix");
    assert_eq!(last_worker(&s, Some("bbb"), &[]).outcome, WorkerOutcome::Ok, "findings fixed");
    // Nothing known of where it started (an older session): the agent's word stands.
    let unknown = [ended(1, WorkerKind::Queued, EndReason::Finished, None)];
    assert_eq!(last_worker(&unknown, None, &[]).outcome, WorkerOutcome::Ok);
}

/// The soak's case: each fix_comments worker answered the new comment it was given, and a new one came.
/// Rounds answered are progress, never a streak; a worker that did not get its round done is.
#[test]
fn rounds_of_comments_answered_are_progress_and_only_workers_that_fail_them_make_a_streak() {
    let heads = ["h1", "h2", "h3"];
    let rounds: Vec<WorkerSession> = (0..3)
        .map(|i| ended(i + 1, WorkerKind::FixComments, EndReason::Finished, Some(heads[i as usize])))
        .collect();
    // Each answered its one new comment (and committed for it).
    let answered = [tally(1, 1, 1, 1), tally(2, 1, 1, 1), tally(3, 1, 1, 1)];
    let (last, done) = progress(&rounds, Some("h4"), &answered, &[]);
    assert_eq!((last.unwrap().streak, done), (0, 3));
    // Only answered, no commit: the same.
    let (last, done) = progress(&rounds, Some("h3"), &answered, &[]);
    let last = last.unwrap();
    assert_eq!((last.outcome, last.streak, done), (WorkerOutcome::Ok, 0, 3));

    // The same answered comment given again and again (its answers never showed): retries.
    let again = [tally(1, 1, 1, 1), tally(2, 1, 0, 1), tally(3, 1, 0, 1)];
    let (last, done) = progress(&rounds, Some("h4"), &again, &[]);
    assert_eq!((last.unwrap().streak, done), (2, 1));
    // A new comment left unanswered, at the head it started from: no progress.
    let unanswered = [tally(1, 1, 1, 1), tally(2, 1, 1, 1), tally(3, 2, 1, 0)];
    let (last, done) = progress(&rounds, Some("h3"), &unanswered, &[]);
    let last = last.unwrap();
    assert_eq!((last.outcome, last.streak, done), (WorkerOutcome::NoProgress, 1, 2));
    // Half a round answered and no commit: not done, though not nothing.
    let half = [tally(1, 1, 1, 1), tally(2, 1, 1, 1), tally(3, 2, 2, 1)];
    let last = last_worker(&rounds, Some("h3"), &half);
    assert_eq!((last.outcome, last.streak), (WorkerOutcome::Ok, 1));
    // Failed or stuck workers make the streak as before, and an interrupted one is skipped.
    let mut failing = rounds.clone();
    failing[1].end_reason = Some(EndReason::Failed);
    failing[2].end_reason = Some(EndReason::IdleTimeout);
    let last = last_worker(&failing, Some("h4"), &answered);
    assert_eq!((last.outcome, last.streak), (WorkerOutcome::Stuck, 2));
    failing.push(ended(4, WorkerKind::FixComments, EndReason::ResumeFailed, Some("h4")));
    let last = last_worker(&failing, Some("h4"), &answered);
    assert_eq!((last.outcome, last.streak), (WorkerOutcome::Interrupted, 2));
}

#[test]
fn other_jobs_count_each_worker_of_a_streak_as_before() {
    let s: Vec<WorkerSession> = (1..=3)
        .map(|i| ended(i, WorkerKind::FixCi, EndReason::Finished, Some(["a", "b", "c"][i as usize - 1])))
        .collect();
    let last = last_worker(&s, Some("d"), &[]);
    assert_eq!((last.outcome, last.streak), (WorkerOutcome::Ok, 3));
    let s = [
        ended(1, WorkerKind::Queued, EndReason::Failed, Some("a")),
        ended(2, WorkerKind::InProgress, EndReason::Finished, Some("a")),
    ];
    let last = last_worker(&s, Some("a"), &[]);
    assert_eq!((last.outcome, last.streak), (WorkerOutcome::NoProgress, 2));
}

#[test]
fn end_reasons_mean_what_their_class_says() {
    let of = |r| outcome_of(&ended(1, WorkerKind::Queued, r, None));
    assert_eq!(of(EndReason::Finished), WorkerOutcome::Ok);
    assert_eq!(of(EndReason::IdleTimeout), WorkerOutcome::Stuck);
    assert_eq!(of(EndReason::OutputLimit), WorkerOutcome::Stuck);
    assert_eq!(of(EndReason::FailedToStart), WorkerOutcome::Failed);
    assert_eq!(of(EndReason::ResumeFailed), WorkerOutcome::Interrupted, "retried at once, afresh");
    assert_eq!(of(EndReason::BudgetExceeded), WorkerOutcome::Interrupted);
    for r in EndReason::ALL {
        let stuck_or_failed = matches!(of(*r), WorkerOutcome::Stuck | WorkerOutcome::Failed);
        assert_eq!(stuck_or_failed, r.counts_as_stuck(), "{r}: one definition of stuck");
    }
}
