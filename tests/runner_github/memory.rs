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
    settled_runner(&env).await; // the completion notice's change observed
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
    // A rate limit is a wait, not an error: each runner says so and exits 0.
    let out = env.runner().await;
    assert!(out.status.success(), "{}", text(&out));

    let before = env.fake.counts();
    let out = env.runner().await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("waited on GitHub's rate limit (not an error)"), "{}", text(&out));
    assert!(text(&out).contains("retry after 60 s"), "{}", text(&out));
    let after = env.fake.counts();
    // The old code forgot the block with its process and asked again at once.
    assert_eq!((after.rest, after.graphql), (before.rest, before.graphql), "{before:?} → {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merged_pull_request_is_let_go_in_memory_and_in_the_database() {
    // The soak's long-lived runners grew ~0.1 MB a run: the forge kept the last observation of every
    // pull request it ever watched, in memory and in the database, and read them all back at each start.
    let env = GhEnv::new(&[], "").await;
    env.queue_approved("1903").await;
    let mut ci = CiPlayer::green();
    let run = drive_until(&env, "1903", &mut ci, |r| r.state == RunState::Complete).await;
    let number = run.pr_number.expect("a pull request");
    let store = env.store().await;
    let key = format!("pr:{number}");
    let kept = |memory: Vec<(String, String)>| memory.into_iter().any(|(k, _)| k == key);
    assert!(kept(store.forge_memory("app").await.unwrap()), "observed and kept while it is watched");

    env.fake.merge(crate::github_support::REPO, number);
    // One runner sees it merged (the run settles), the next no longer watches it and lets it go.
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let out = env.runner().await;
        assert!(out.status.success(), "{}", text(&out));
    }
    assert!(!kept(store.forge_memory("app").await.unwrap()), "a merged pull request is forgotten");
    let before = env.fake.counts();
    let out = env.runner().await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(env.fake.counts().graphql, before.graphql, "and never asked about again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_kept_by_a_process_that_watched_other_pull_requests_hides_no_change() {
    // Every process on a repository shares what the forge keeps: the listing's ETag and each pull
    // request's last observation. A process that watches only some pull requests (another host's
    // runner; here `executor comment` for run B) must not keep a listing that announced a change it did
    // not observe: the next process, told "nothing changed", would decide from the stale observation
    // (soak finding: a review posted twice, decided from a snapshot taken before the first post).
    let env = GhEnv::new(&[], "").await;
    let mut ci = CiPlayer::green();
    env.queue_approved("1904").await;
    let a = drive_until(&env, "1904", &mut ci, |r| r.state == RunState::Complete).await;
    env.queue_approved("1905").await;
    let b = drive_until(&env, "1905", &mut ci, |r| r.state == RunState::Complete).await;
    settled_runner(&env).await; // every change so far observed and kept
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let number = a.pr_number.expect("a pull request");
    env.fake.add_issue_comment(
        crate::github_support::REPO,
        number,
        "alex",
        "MEMBER",
        "One more case, please.",
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // A process that observes run B's pull request alone lists the pull requests (A's change announced)
    // and keeps what it saw. (Its reply is refused: the comment it answers does not exist.)
    let b_id = b.id.to_string();
    let _ =
        env.exec(&["comment", &b_id, "--as-agent", "--reply-to", "IC_none", "[ACKNOWLEDGED: noted]"]).await;

    let out = env.runner().await;
    assert!(out.status.success(), "{}", text(&out));
    let store = env.store().await;
    let a = crate::github_support::run_of(&store, "1904").await;
    assert_eq!(a.state, RunState::Pr, "the human's comment on the completed pull request was not seen");
}

/// Waits out the second of the last change and runs the runner, so that what it keeps was asked after
/// that second (an observation within it is asked again anyway).
async fn settled_runner(env: &GhEnv) {
    tokio::time::sleep(Duration::from_millis(1100)).await;
    env.ok(&["runner"]).await;
}

/// Takes task `gid` to a completed run, then lets the runner observe and keep every change of it (its
/// completion notice included) after that change's second.
async fn completed_and_settled(env: &GhEnv, gid: &str) -> executor::domain::Run {
    env.queue_approved(gid).await;
    let mut ci = CiPlayer::green();
    let run = drive_until(env, gid, &mut ci, |r| r.state == RunState::Complete).await;
    settled_runner(env).await;
    settled_runner(env).await;
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observation_kept_after_a_newer_listing_is_not_trusted_on_a_304() {
    // Two processes keep what they saw: one lists (its page and ETag kept), the other keeps an
    // observation it took before that listing, late. A third, told "nothing changed" (304), must not
    // decide from that older observation (soak finding 13: a notice posted twice).
    let env = GhEnv::new(&[], "").await;
    let run = completed_and_settled(&env, "1906").await;
    let number = run.pr_number.expect("a pull request");
    let store = env.store().await;
    let key = format!("pr:{number}");
    let older = store.forge_memory_entry("app", &key).await.unwrap().expect("kept while watched");

    env.fake.touch(crate::github_support::REPO, number);
    settled_runner(&env).await; // listed, asked again, kept with the listing
    assert_ne!(store.forge_memory_entry("app", &key).await.unwrap().as_ref(), Some(&older));
    store.remember_in_forge_memory("app", &[(key, older)]).await.unwrap(); // the late keeper

    let before = env.fake.counts();
    env.ok(&["runner"]).await;
    let after = env.fake.counts();
    assert_eq!(after.not_modified, before.not_modified + 1, "nothing changed since the kept listing");
    // The old code took the older observation for current: no question asked.
    assert_eq!(after.graphql, before.graphql + 1, "{before:?} → {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_posted_by_a_runner_that_died_is_found_whatever_was_kept() {
    // A runner posted the notice's comment and died before recording it. The next one looks for the
    // notice's marker on the pull request before posting: asked of GitHub, not taken from what is kept,
    // which a racing process may have left with a listing newer than the post and an observation older
    // than it (soak finding 13: a completion notice posted twice on PostgreSQL).
    let env = GhEnv::new(&[], "").await;
    let run = completed_and_settled(&env, "1907").await;
    let number = run.pr_number.expect("a pull request");
    let store = env.store().await;
    let id = store
        .add_notice(Some(run.id), None, "stuck", Some("soak-13"), "Look at this, please.")
        .await
        .unwrap()
        .expect("a new notice");
    let marker = format!("<!-- executor notice {id} -->");
    let body = format!("Look at this, please.\n\n{marker}");
    env.fake.add_issue_comment(crate::github_support::REPO, number, "alex", "OWNER", &body);

    // What a racing process leaves: the listing that followed the post kept, the observation from
    // before it still there.
    let path = "/repos/octo/app/pulls?state=all&sort=updated&direction=desc&per_page=100";
    let listed = reqwest::Client::new()
        .get(format!("{}{path}", env.fake.api_url()))
        .bearer_auth(crate::github_support::TOKEN)
        .header("user-agent", "executor-tests")
        .send()
        .await
        .unwrap();
    let etag = listed.headers()["etag"].to_str().unwrap().to_string();
    store.remember_in_forge_memory("app", &[("etag:pulls".to_string(), etag)]).await.unwrap();

    let out = env.runner().await;
    assert!(out.status.success(), "{}", text(&out));
    let pr = env.fake.pr(crate::github_support::REPO, number);
    let copies = pr.comments.iter().filter(|c| c.body.ends_with(&marker)).count();
    assert_eq!(copies, 1, "posted again:\n{}", text(&out));
    let notice = store.notices(Some(run.id)).await.unwrap().into_iter().find(|n| n.id == id).unwrap();
    assert!(notice.delivered_at.is_some(), "{notice:?}");
}
