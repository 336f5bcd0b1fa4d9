//! What the runner sees of GitHub and what it does about it: a new head's check grace and one CI
//! trigger per head, `UNKNOWN` and `CONFLICTING` mergeability, the ETag path that spares GraphQL when
//! nothing changed, the GraphQL reserve, a failed review posted as a GitHub review, and a trusted comment
//! stamped in its completion's second that brings a completed run back.

use std::time::{Duration, Instant};

use chrono::Timelike;

use executor::domain::{Run, RunState, WorkerKind};
use executor::store::{EventFilter, Store};

use super::faults::{past_check_grace, run_in_pr};
use crate::fake_github::PostedKind;
use crate::github_support::{CiPlayer, GhEnv, REPO, run_of, text};

/// Runs the runner (playing CI between runs) until `done` holds for the task's run; returns it.
pub async fn drive_until(env: &GhEnv, gid: &str, ci: &mut CiPlayer, done: impl Fn(&Run) -> bool) -> Run {
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = env.runner().await;
        assert!(out.status.success(), "{}", text(&out));
        let run = run_of(&store, gid).await;
        if done(&run) {
            return run;
        }
        assert_ne!(run.state, RunState::Abandoned, "{:?}", store.run_memory(run.id).await.unwrap());
        if let (Some(number), Some(branch)) = (run.pr_number, run.branch_name.as_deref()) {
            ci.play(env, number, branch);
        }
        assert!(Instant::now() < deadline, "stuck: {:?}", store.run_memory(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

async fn kinds(store: &Store, run: &Run) -> Vec<WorkerKind> {
    store.worker_sessions(run.id).await.unwrap().iter().map(|s| s.kind).collect()
}

async fn last_decision(store: &Store, run: &Run) -> String {
    store.run_memory(run.id).await.unwrap().last_decision.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diff_stat_github_reports_is_kept_with_the_pull_request() {
    let env = GhEnv::new(&[], "").await;
    let run = run_in_pr(&env, "1509").await;
    let store = env.store().await;
    env.fake.set_diff_stat(REPO, run.pr_number.unwrap(), 3, 120, 4);
    env.ok(&["runner"]).await;
    let memory = store.run_memory(run.id).await.unwrap();
    let pr: executor::forge::PrSnapshot =
        serde_json::from_str(memory.last_snapshot.as_deref().unwrap()).unwrap();
    assert_eq!(pr.diff, Some(executor::forge::DiffStat { files: 3, additions: 120, deletions: 4 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ci_is_triggered_once_per_head_after_its_grace_and_mergeability_gates_completion() {
    let env = GhEnv::new(&[], "").await;
    let run = run_in_pr(&env, "1501").await;
    let store = env.store().await;
    let number = run.pr_number.unwrap();
    let branch = run.branch_name.clone().unwrap();

    // A null rollup within the grace period: not yet.
    assert!(env.fake.dispatches().is_empty(), "{:?}", env.fake.dispatches());
    assert!(
        last_decision(&store, &run).await.contains("to register after a push"),
        "{}",
        last_decision(&store, &run).await
    );
    // After it: one dispatch for the head, and not another on the next runner while no check reported.
    past_check_grace().await;
    env.ok(&["runner"]).await;
    env.ok(&["runner"]).await;
    assert_eq!(env.fake.dispatches(), [("ci.yml".to_string(), branch.clone())]);
    assert!(last_decision(&store, &run).await.contains("no check has reported yet"));

    // CI is green, but GitHub is still computing mergeability: no review, no completion.
    let head = env.remote_head(&branch).unwrap();
    env.fake.add_check_run(REPO, number, &head, "ci", "COMPLETED", Some("SUCCESS"), None);
    env.fake.set_mergeable(REPO, number, "UNKNOWN", "UNKNOWN");
    env.ok(&["runner"]).await;
    env.ok(&["runner"]).await;
    let waiting = run_of(&store, "1501").await;
    assert_eq!(waiting.state, RunState::Pr);
    assert_eq!(kinds(&store, &run).await, [WorkerKind::Queued], "no worker while mergeability is unknown");
    assert!(
        last_decision(&store, &run).await.contains("still computing"),
        "{}",
        last_decision(&store, &run).await
    );

    // It turns out to conflict with its base: a fix_conflicts worker (the fake agent merges the base).
    env.fake.set_mergeable(REPO, number, "CONFLICTING", "DIRTY");
    env.fake.touch(REPO, number);
    let mut ci = CiPlayer::green();
    drive_until(&env, "1501", &mut ci, |_| true).await;
    assert_eq!(kinds(&store, &run).await, [WorkerKind::Queued, WorkerKind::FixConflicts]);
    assert!(env.fake.posted_comments().iter().all(|p| p.kind != PostedKind::IssueComment), "not complete");

    // Mergeable again: the review runs and the run completes.
    env.fake.set_mergeable(REPO, number, "MERGEABLE", "CLEAN");
    env.fake.touch(REPO, number);
    let done = drive_until(&env, "1501", &mut ci, |r| r.state == RunState::Complete).await;
    assert_eq!(kinds(&store, &done).await.last(), Some(&WorkerKind::PrReview));
    assert!(env.fake.dispatches().iter().all(|(w, r)| w == "ci.yml" && *r == branch));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_review_is_posted_as_a_github_review_and_its_findings_are_fixed() {
    let env = GhEnv::new(&[("FAKE_REVIEW", "fail")], "").await;
    env.queue_approved("1601").await;
    let store = env.store().await;
    let mut ci = CiPlayer::green();
    let run = drive_until(&env, "1601", &mut ci, |_| false_until_fixed(&env)).await;

    let posted = env.fake.posted_comments();
    let reviews: Vec<_> = posted.iter().filter(|p| p.kind == PostedKind::Review).collect();
    assert_eq!(reviews.len(), 1, "{posted:?}");
    assert!(reviews[0].body.contains("not there yet"), "{}", reviews[0].body);
    let lines: Vec<_> = posted.iter().filter(|p| p.kind == PostedKind::ReviewComment).collect();
    assert_eq!(lines.len(), 1, "{posted:?}");
    assert_eq!((lines[0].path.as_deref(), lines[0].line), (Some("feature.txt"), Some(1)));
    assert!(lines[0].body.contains("say more"));
    assert_eq!(lines[0].reply_to.as_deref(), Some(reviews[0].id.as_str()));
    // Recorded as executor's: posted from alex's account, they must not read as alex's comments.
    let recorded = store.agent_comments(&[run.id]).await.unwrap();
    assert!(recorded.contains_key(&reviews[0].id) && recorded.contains_key(&lines[0].id), "{recorded:?}");

    let sessions = store.worker_sessions(run.id).await.unwrap();
    let fix = sessions.iter().find(|s| s.kind == WorkerKind::FixComments).expect("fix_comments ran");
    let log = std::fs::read_to_string(fix.log_path.as_deref().unwrap()).unwrap();
    assert!(log.contains("say more"), "the finding is not in the fix_comments prompt:\n{log}");
    assert!(text(&env.ok(&["runs", "show", &run.id.to_string()]).await).contains("fix_comments"));
}

/// Whether a `fix_comments` worker has ended (the review's findings were worked on).
fn false_until_fixed(env: &GhEnv) -> bool {
    let logs = env.logs_dir();
    std::fs::read_dir(logs.join("1601"))
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("fix_comments")))
        .unwrap_or(false)
}

/// Issue 20, item 9: GitHub stamps comments in whole seconds, so a trusted comment posted just after the
/// run completed (at …:31.468) reads …:31, before the completion. It is new all the same: the completion
/// recorded the ids of the comments its observation saw, and this one is not among them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_comment_in_the_completion_second_sends_the_run_back_to_pr() {
    let env = GhEnv::new(&[], "").await;
    env.queue_approved("2001").await;
    let store = env.store().await;
    let mut ci = CiPlayer::green();
    let done = drive_until(&env, "2001", &mut ci, |r| r.state == RunState::Complete).await;
    let completed_at = done.completed_at.expect("a complete run has its completion time");
    let memory = store.run_memory(done.id).await.unwrap();
    assert!(memory.completion_comment_ids.is_some(), "the completion recorded what it saw: {memory:?}");

    let number = done.pr_number.unwrap();
    let asked = "One more thing: say what you changed.";
    // Created at the completion's very instant; the API says `…:SSZ`, a fraction of a second before it.
    env.fake.add_issue_comment_at(REPO, number, "alex", "MEMBER", asked, completed_at);
    env.ok(&["runner"]).await;

    let events = store.events(&EventFilter { run_id: Some(done.id), ..Default::default() }).await.unwrap();
    let reopened = events
        .iter()
        .find(|e| e.from_state.as_deref() == Some("complete") && e.to_state.as_deref() == Some("pr"));
    assert!(reopened.is_some(), "the comment was dropped: {}", last_decision(&store, &done).await);
    assert_eq!(kinds(&store, &done).await.last(), Some(&WorkerKind::FixComments));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_tick_makes_no_graphql_request() {
    let env = GhEnv::new(&[("FAKE_SLOW", "0")], "").await;
    env.queue_approved("1701").await;
    let mut ci = CiPlayer::green();
    drive_until(&env, "1701", &mut ci, |r| r.state == RunState::Complete).await;
    // GitHub's updated_at counts seconds: the last change (the completion notice) must be a second old
    // for a tick to trust that an unchanged list means an unchanged pull request.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // Another task's worker keeps the runner ticking (once a second) while the completed run's draft PR
    // stays as it is.
    env.set_agent_env("FAKE_SLOW", "5");
    env.queue_approved("1702").await;
    let before = env.fake.counts();
    let runner = env.runner();
    let watch = async {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = env.fake.counts();
            // The third conditional list: the second tick is over.
            if now.route("pulls_list") >= before.route("pulls_list") + 3 {
                return now;
            }
            assert!(Instant::now() < deadline, "the runner did not tick three times: {now:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let (out, during) = tokio::join!(runner, watch);
    assert!(out.status.success(), "{}", text(&out));
    // The runner starts with what the last one kept: its first tick asks again only a pull request the
    // last one saw within the second of its last change (see `after_the_second`), the others none.
    assert!(
        during.route("graphql:Batch") - before.route("graphql:Batch") <= 1,
        "at most the runner's first tick asks GraphQL: {before:?} → {during:?}"
    );
    // (The second tick's 304; the third's may not be answered yet.)
    assert!(during.not_modified > before.not_modified, "{before:?} → {during:?}");
    assert!(during.graphql - before.graphql <= 1, "no other GraphQL request either: {before:?} → {during:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_the_graphql_reserve_nothing_is_asked_and_nothing_done() {
    let env = GhEnv::new(&[], "").await;
    let run = run_in_pr(&env, "1801").await;
    let store = env.store().await;
    // The head's grace is over: a runner that could look would trigger CI now.
    past_check_grace().await;
    let reset = (chrono::Utc::now() + chrono::Duration::minutes(40)).with_nanosecond(0).unwrap();
    env.fake.set_rate_remaining(500); // the default reserve_points is 1000
    env.fake.set_rate_reset(reset);
    let before = env.fake.counts();
    let posted = env.fake.posted_comments();

    let out = env.runner().await;
    assert!(out.status.success(), "a wait on the rate limit is no error:\n{}", text(&out));
    let after = env.fake.counts();
    assert_eq!(after.graphql, before.graphql, "a GraphQL request below the reserve: {before:?} → {after:?}");
    assert_eq!(after.route("rate_limit"), before.route("rate_limit") + 1, "{after:?}");
    assert!(env.fake.dispatches().is_empty());
    assert_eq!(env.fake.posted_comments(), posted);
    assert_eq!(run_of(&store, "1801").await.state, RunState::Pr);
    assert_eq!(store.run_memory(run.id).await.unwrap().ci_triggered_sha, None);
    // Why, and until when, for the human.
    let reason = "500 GraphQL points left, at or below the 1000 kept for the agents";
    for shown in [
        text(&out),
        text(&env.ok(&["runs", "show", &run.id.to_string()]).await),
        text(&env.ok(&["status"]).await),
    ] {
        assert!(shown.contains(reason) && shown.contains(&reset.to_string()), "{shown}");
    }

    // The budget back, the same world is acted on.
    env.fake.set_rate_remaining(5000);
    env.ok(&["runner"]).await;
    assert_eq!(env.fake.dispatches().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merged_pr_completes_its_run_and_a_closed_one_abandons_it() {
    let env = GhEnv::new(&[], "").await;
    let merged = run_in_pr(&env, "1901").await;
    let closed = run_in_pr(&env, "1902").await;
    let store = env.store().await;
    // Neither is in the open pull requests list any more: the runner must still look at them.
    env.fake.merge(REPO, merged.pr_number.unwrap());
    env.fake.close(REPO, closed.pr_number.unwrap());
    env.ok(&["runner"]).await;

    assert_eq!(run_of(&store, "1901").await.state, RunState::Complete);
    assert_eq!(run_of(&store, "1902").await.state, RunState::Abandoned);
    for run in [&merged, &closed] {
        assert_eq!(kinds(&store, run).await, [WorkerKind::Queued], "no worker for a finished PR");
    }
    let told = store.notices(Some(closed.id)).await.unwrap();
    assert!(told.iter().any(|n| n.message.contains("closed without merging")), "{told:?}");
}
