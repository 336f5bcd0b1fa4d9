//! A review posted once, whatever GitHub answers (issue 21, item 2): GitHub applies the review and its
//! gateway answers 502, or it answers GraphQL errors next to the applied mutation. The retry finds the
//! review by its marker, records its ids as executor's (the fake posts from alex's account, a trusted
//! author's) and never posts it again, so no worker is sent to executor's own review.

use std::time::{Duration, Instant};

use executor::domain::{Run, RunState, WorkerKind};

use crate::fake_github::{Fault, PostedKind};
use crate::github_support::{CiPlayer, GhEnv, run_of, text};

/// Runs the runner (playing CI between runs; a run may fail on the injected fault) until `done` holds.
async fn drive_until(env: &GhEnv, gid: &str, done: impl Fn(&Run) -> bool) -> Run {
    let store = env.store().await;
    let mut ci = CiPlayer::green();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = env.runner().await;
        let run = run_of(&store, gid).await;
        if done(&run) {
            return run;
        }
        assert_ne!(run.state, RunState::Abandoned, "{}", text(&out));
        if let (Some(number), Some(branch)) = (run.pr_number, run.branch_name.as_deref()) {
            ci.play(env, number, branch);
        }
        assert!(Instant::now() < deadline, "stuck: {:?}", store.run_memory(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_answered_502_after_github_applied_it_is_recorded_not_posted_again() {
    let env = GhEnv::new(&[], "").await;
    env.fake.fail_route("graphql:AddReview", Fault::AppliedThen(502), 1);
    env.queue_approved("2101").await;
    let run = drive_until(&env, "2101", |r| r.state == RunState::Complete).await;

    let posted = env.fake.posted_comments();
    let reviews: Vec<_> = posted.iter().filter(|p| p.kind == PostedKind::Review).collect();
    assert_eq!(reviews.len(), 1, "the review was posted again: {posted:#?}");
    assert_eq!(env.fake.counts().route("graphql:AddReview"), 1);
    let store = env.store().await;
    let recorded = store.agent_comments(&[run.id]).await.unwrap();
    assert!(recorded.contains_key(&reviews[0].id), "the review is executor's: {recorded:?}");
    let kinds: Vec<WorkerKind> =
        store.worker_sessions(run.id).await.unwrap().iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [WorkerKind::Queued, WorkerKind::PrReview], "a worker acted on executor's review");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_with_line_comments_answered_with_errors_after_it_applied_is_posted_once() {
    let env = GhEnv::new(&[("FAKE_REVIEW", "fail")], "").await;
    env.fake.fail_route("graphql:AddReview", Fault::PartialErrors, 1);
    env.queue_approved("2102").await;
    let fixed = || {
        let logs = env.logs_dir().join("2102");
        std::fs::read_dir(logs)
            .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("fix_comments")))
            .unwrap_or(false)
    };
    let run = drive_until(&env, "2102", |_| fixed()).await;
    let store = env.store().await;

    let posted = env.fake.posted_comments();
    let reviews: Vec<_> = posted.iter().filter(|p| p.kind == PostedKind::Review).collect();
    assert_eq!(reviews.len(), 1, "the review was posted again (or whole): {posted:#?}");
    let lines: Vec<_> = posted.iter().filter(|p| p.kind == PostedKind::ReviewComment).collect();
    assert_eq!(lines.len(), 1, "{posted:#?}");
    let recorded = store.agent_comments(&[run.id]).await.unwrap();
    assert!(recorded.contains_key(&reviews[0].id) && recorded.contains_key(&lines[0].id), "{recorded:?}");
}
