//! What the forge keeps in the database between runner processes (cron starts one every few minutes):
//! the listing's ETag and the last snapshots (a fresh process on unchanged pull requests spends no
//! GraphQL point), and rate-limit blocks (a `retry-after` one process was told, the next honours).

use std::time::Duration;

use executor::domain::RunState;

use crate::fake_github::Fault;
use crate::github_support::{CiPlayer, GhEnv, text};
use crate::observing::drive_until;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_runner_on_unchanged_pull_requests_asks_no_graphql() {
    let env = GhEnv::new(&[], "").await;
    env.queue_approved("1901").await;
    let mut ci = CiPlayer::green();
    drive_until(&env, "1901", &mut ci, |r| r.state == RunState::Complete).await;
    // A second past the last change, so that an unchanged listing means an unchanged pull request.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    env.ok(&["runner"]).await; // the completion notice's change observed
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let before = env.fake.counts();
    let out = env.runner().await;
    assert!(out.status.success(), "{}", text(&out));
    let after = env.fake.counts();
    // The old code began cold: a full listing and a batch for every pull request.
    assert_eq!(after.graphql, before.graphql, "{before:?} → {after:?}");
    assert_eq!(after.not_modified, before.not_modified + 1, "the kept ETag: {before:?} → {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_one_runner_was_told_holds_the_next_one() {
    let env = GhEnv::new(&[], "").await;
    env.queue_approved("1902").await;
    let mut ci = CiPlayer::green();
    drive_until(&env, "1902", &mut ci, |r| r.state == RunState::Pr).await;
    env.fake.set_retry_after(60);
    env.fake.fail_next(Fault::SecondaryLimit, 1);
    let out = env.runner().await;
    assert!(!out.status.success(), "{}", text(&out));

    let before = env.fake.counts();
    let out = env.runner().await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("retry after 60 s"), "{}", text(&out));
    let after = env.fake.counts();
    // The old code forgot the block with its process and asked again at once.
    assert_eq!((after.rest, after.graphql), (before.rest, before.graphql), "{before:?} → {after:?}");
}
