//! Nothing from a partial view: whatever goes wrong talking to GitHub, the runner does nothing for the
//! repository that tick (no state change, label, CI trigger or comment), exits non-zero, and says why in
//! `runs show` and `status`.

use std::time::{Duration, Instant};

use executor::domain::{Run, RunState};

use crate::fake_github::Fault;
use crate::github_support::{CiPlayer, GhEnv, REPO, run_of, text};
use crate::observing::drive_until;

/// Runs the runner until the task's run is in `pr` with its draft PR labelled; returns it.
pub async fn run_in_pr(env: &GhEnv, gid: &str) -> Run {
    env.queue_approved(gid).await;
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = env.runner().await;
        assert!(out.status.success(), "{}", text(&out));
        let run = run_of(&store, gid).await;
        if run.state == RunState::Pr
            && let Some(number) = run.pr_number
            && env.fake.pr(REPO, number).labels.contains(&"executor".to_string())
        {
            return run;
        }
        assert!(Instant::now() < deadline, "not in pr: {:?}", store.run_memory(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the check grace of the run's head is over (wall time passing, not an assertion).
pub async fn past_check_grace() {
    tokio::time::sleep(Duration::from_millis(1200)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_done_from_a_partial_or_failed_view() {
    let env = GhEnv::new(&[], "request_timeout = \"1s\"").await;
    let run = run_in_pr(&env, "1301").await;
    let store = env.store().await;
    let number = run.pr_number.unwrap();
    // The head has no check and its grace is over: a whole view would trigger CI now.
    past_check_grace().await;
    let before = (env.fake.pr(REPO, number), env.fake.dispatches(), env.fake.posted_comments());
    assert!(before.1.is_empty(), "{:?}", before.1);

    env.fake.set_retry_after(1);
    let cases: [(Fault, &str); 6] = [
        (Fault::Status(502), "HTTP 502"),
        (Fault::SecondaryLimit, "retry after 1 s (HTTP 403)"),
        (Fault::TooMany, "HTTP 429"),
        (Fault::PartialErrors, "answered with errors"),
        (Fault::Malformed, "not JSON"),
        (Fault::Hang, "request_timeout"),
    ];
    for (fault, reason) in cases {
        env.fake.fail_next(fault, 1);
        let out = env.runner().await;
        // A rate limit is GitHub saying "later", not a failure: the runner says so and exits 0, so that
        // a cron that mails on failure does not mail. Every other fault is an error.
        let throttled = matches!(fault, Fault::SecondaryLimit | Fault::TooMany);
        assert_eq!(out.status.success(), throttled, "{fault:?}: the exit status:\n{}", text(&out));
        assert_eq!(
            text(&out).contains("waited on GitHub's rate limit (not an error)"),
            throttled,
            "{fault:?}"
        );
        assert!(
            text(&out).contains(reason),
            "{fault:?}: the runner does not say {reason:?}:\n{}",
            text(&out)
        );

        let after = run_of(&store, "1301").await;
        assert_eq!(after.state, RunState::Pr, "{fault:?}");
        assert_eq!(after.ci_attempts, run.ci_attempts, "{fault:?}");
        assert!(store.worker_sessions(run.id).await.unwrap().len() == 1, "{fault:?}: a worker started");
        let memory = store.run_memory(run.id).await.unwrap();
        assert_eq!(memory.ci_triggered_sha, None, "{fault:?}");
        let pr = env.fake.pr(REPO, number);
        assert_eq!(
            (pr.labels.clone(), pr.draft, pr.state.clone()),
            (before.0.labels.clone(), true, before.0.state.clone())
        );
        assert_eq!(env.fake.dispatches(), before.1, "{fault:?}: CI triggered from a failed view");
        assert_eq!(env.fake.posted_comments(), before.2, "{fault:?}: something written from a failed view");

        let shown = text(&env.ok(&["runs", "show", &run.id.to_string()]).await);
        assert!(shown.contains("could not be observed") && shown.contains(reason), "{fault:?}:\n{shown}");
        let status = text(&env.ok(&["status"]).await);
        assert!(status.contains(reason), "{fault:?}: `status` does not say {reason:?}:\n{status}");
        if matches!(fault, Fault::SecondaryLimit | Fault::TooMany) {
            // The block is kept for every process on the token: the next runner would honour it too.
            tokio::time::sleep(Duration::from_millis(1100)).await;
        }
    }

    // The same world, seen whole, is acted on: the faults were what held the runner back.
    let out = env.runner().await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(env.fake.dispatches().len(), 1, "{:?}", env.fake.dispatches());
}

/// One pull request GitHub keeps answering with an error holds back its own run only: the other run of
/// the repository is decided for (its CI triggered), and after `check_timeout` the human is told which
/// pull request cannot be seen and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_failing_pull_request_waits_alone_and_the_human_is_told() {
    let env = GhEnv::new(&[], "").await;
    env.edit_config("[runner]\n", "[runner]\ncheck_timeout = \"3s\"\n");
    // No CI is triggered while the two are set up, however long that takes on a loaded machine.
    env.edit_config("check_grace = \"1s\"", "check_grace = \"1h\"");
    let bad = run_in_pr(&env, "1311").await;
    let good = run_in_pr(&env, "1312").await;
    let store = env.store().await;
    let bad_number = bad.pr_number.unwrap();
    env.fake.fail_pr(bad_number);
    env.edit_config("check_grace = \"1h\"", "check_grace = \"1s\"");
    past_check_grace().await;

    let out = env.runner().await;
    assert!(!out.status.success(), "a PR that cannot be seen is an error to report:\n{}", text(&out));
    // The old code did nothing for either run ("nothing decided from a partial view").
    let dispatched: Vec<String> = env.fake.dispatches().into_iter().map(|(_, r)| r).collect();
    assert_eq!(dispatched, [good.branch_name.clone().unwrap()], "only the whole view is acted on");
    let why = store.run_memory(bad.id).await.unwrap().last_decision.unwrap_or_default();
    assert!(
        why.contains(&format!("pull request #{bad_number} could not be observed")) && why.contains("timeout"),
        "{why}"
    );
    assert_eq!(store.run_memory(bad.id).await.unwrap().ci_triggered_sha, None);

    let told = |env: &GhEnv| {
        env.fake
            .posted_comments()
            .into_iter()
            .filter(|c| c.number == bad_number && c.body.contains("could not be observed for"))
            .count()
    };
    assert_eq!(told(&env), 0, "told before check_timeout");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let out = env.runner().await;
    env.runner().await;
    assert_eq!(told(&env), 1, "{:?}\n{}", env.fake.posted_comments(), text(&out));
}

/// A notice whose comment meets GitHub's rate limit waits like any other step: every runner exits 0, the
/// wait counts as no attempt against the notice's retries, and the notice is posted once, after the
/// limit (soak finding: such notices made cron's runner exit 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_that_meets_the_rate_limit_waits_and_is_posted_once_after() {
    let env = GhEnv::new(&[], "").await;
    env.fake.set_retry_after(1);
    env.fake.fail_route("issue_comment_create", Fault::SecondaryLimit, 1);
    env.queue_approved("1311").await;
    let mut ci = CiPlayer::green();
    let run = drive_until(&env, "1311", &mut ci, |r| r.state == RunState::Complete).await;
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let notice = loop {
        let told = store.notices(Some(run.id)).await.unwrap();
        if let Some(n) = told.iter().find(|n| n.kind == "completed" && n.delivered_at.is_some()) {
            break n.clone();
        }
        assert!(Instant::now() < deadline, "never delivered: {told:?}");
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let out = env.runner().await;
        assert!(out.status.success(), "a wait on the rate limit is no error:\n{}", text(&out));
    };
    assert_eq!(notice.attempts, 1, "the wait was counted as an attempt: {notice:?}");
    assert_eq!(env.fake.counts().route("issue_comment_create"), 2, "refused once, then posted");
    let marker = format!("<!-- executor notice {} -->", notice.id);
    let posted = env.fake.posted_comments().into_iter().filter(|c| c.body.ends_with(&marker)).count();
    assert_eq!(posted, 1);
}

/// A notice replies in the run's notice thread even when the pull request cannot be observed and its
/// last observation predates that thread (soak finding: a notice failed with "comment N is not on this
/// pull request", the run's thread being newer than anything the runner had seen of the pull request).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_replies_in_a_thread_newer_than_the_last_observation() {
    let env = GhEnv::new(&[], "").await;
    env.edit_config("[runner]\n", "[runner]\ncheck_timeout = \"3s\"\n");
    let run = run_in_pr(&env, "1313").await;
    let store = env.store().await;
    let number = run.pr_number.unwrap();
    // No check ever reports: after check_timeout the human is told, which starts the run's thread, and
    // from that comment on GitHub will not show the pull request. check_timeout later the human is
    // told so, in that thread.
    env.fake.fail_pr_once_commented(number);
    let deadline = Instant::now() + Duration::from_secs(30);
    let told = loop {
        let out = env.runner().await;
        let told: Vec<_> = env
            .fake
            .posted_comments()
            .into_iter()
            .filter(|c| c.number == number && c.body.contains("could not be observed for"))
            .collect();
        if !told.is_empty() {
            break told;
        }
        assert!(
            Instant::now() < deadline,
            "never told: {:?}\n{}",
            store.notices(Some(run.id)).await.unwrap(),
            text(&out)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(told.len(), 1, "{told:?}");
    let thread = store.run(run.id).await.unwrap().thread_id.expect("a thread");
    let recorded = store.agent_comments(&[run.id]).await.unwrap();
    assert_eq!(recorded.get(&told[0].id).cloned().flatten(), Some(thread), "not in the run's thread");
}

/// A run's first notice starts its notice thread even when its comment went through unanswered (a 502)
/// and the retry found it rather than posting it: later notices go into that thread, not a second one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_notice_found_after_its_answer_was_lost_starts_the_runs_thread() {
    let env = GhEnv::new(&[], "").await;
    env.fake.fail_route("issue_comment_create", Fault::AppliedThen(502), 1);
    env.queue_approved("1314").await;
    let store = env.store().await;
    let mut ci = CiPlayer::green();
    let deadline = Instant::now() + Duration::from_secs(90);
    let notice = loop {
        env.runner().await; // exits 1 on the lost answer
        let run = run_of(&store, "1314").await;
        let told = store.notices(Some(run.id)).await.unwrap();
        if let Some(n) = told.into_iter().find(|n| n.kind == "completed" && n.delivered_at.is_some()) {
            break n;
        }
        assert_ne!(run.state, RunState::Abandoned, "{:?}", store.run_memory(run.id).await.unwrap());
        if let (Some(number), Some(branch)) = (run.pr_number, run.branch_name.as_deref()) {
            ci.play(&env, number, branch);
        }
        assert!(Instant::now() < deadline, "never told: {:?}", store.run_memory(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(150)).await;
    };
    let run = run_of(&store, "1314").await;
    let marker = format!("<!-- executor notice {} -->", notice.id);
    let pr = env.fake.pr(REPO, run.pr_number.unwrap());
    let copies: Vec<_> = pr.comments.iter().filter(|c| c.body.ends_with(&marker)).collect();
    assert_eq!(copies.len(), 1, "found on retry, not posted again: {:?}", pr.comments);
    let first = copies[0];
    assert_eq!(run.thread_id.as_deref(), Some(first.id.as_str()), "the thread was never started");
}
