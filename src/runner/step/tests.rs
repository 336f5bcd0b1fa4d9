//! How a session's end feeds the decision (issue 7, item 20 and the one reading of end reasons).

use chrono::Utc;

use super::{last_worker, outcome_of};
use crate::domain::{EndReason, WorkerKind};
use crate::runner::decision::WorkerOutcome;
use crate::store::WorkerSession;
use crate::store::test_session;

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

#[test]
fn a_worker_that_finished_without_moving_its_branch_made_no_progress() {
    for kind in [WorkerKind::Queued, WorkerKind::InProgress, WorkerKind::FixCi] {
        let s = [ended(1, kind, EndReason::Finished, Some("aaa"))];
        assert_eq!(last_worker(&s, Some("aaa")).unwrap().outcome, WorkerOutcome::Failed, "{kind}");
        assert_eq!(last_worker(&s, Some("bbb")).unwrap().outcome, WorkerOutcome::Ok, "{kind} committed");
    }
    // A review changes no code, and answering comments may need none: finishing at the head they
    // started at is their job.
    for kind in [WorkerKind::PrReview, WorkerKind::FixComments] {
        let s = [ended(1, kind, EndReason::Finished, Some("aaa"))];
        assert_eq!(last_worker(&s, Some("aaa")).unwrap().outcome, WorkerOutcome::Ok, "{kind}");
    }
    // Nothing known of where it started (an older session): the agent's word stands.
    let unknown = [ended(1, WorkerKind::Queued, EndReason::Finished, None)];
    assert_eq!(last_worker(&unknown, None).unwrap().outcome, WorkerOutcome::Ok);
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
