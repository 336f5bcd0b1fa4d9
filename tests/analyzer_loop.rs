//! `executor analyzer` end to end through the real binary, the `pipeline.sh` fake agent answering the
//! analyzer's schema (steered by `FAKE_ANALYZER=…` in a task's text), real git and SQLite; and two
//! analyzers at once on one PostgreSQL.

mod common;
mod runner_support;

use std::process::Stdio;

use executor::domain::{QueueStatus, TaskGid};
use executor::store::EventFilter;
use runner_support::Env;

const FIGMA_FILTER: &str = r#"
[[filters]]
name = "figma_link"
why = "links a Figma design"
[filters.when]
field = "text"
matches = 'figma\.com/(file|design)/'
"#;

fn add(env: &Env, gid: &str, description: &str) {
    env.run(&["queue", "add", "--gid", gid, "--source", "inbox", "--description", description]);
}

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_go_first_then_the_agent_triages_every_pending_task() {
    let env = Env::new(&[]);
    env.append_config(FIGMA_FILTER);
    add(&env, "A-1", "Fix the crash when saving\n\nSteps: open, save.");
    add(&env, "A-2", "New onboarding screens\n\nDesign: https://www.figma.com/design/abc/onboarding");
    add(&env, "A-3", "Rewrite everything in Haskell FAKE_ANALYZER=skip");
    add(&env, "A-4", "Pick a new logo FAKE_ANALYZER=for_review");
    let out = env.run(&["analyzer"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("A-2: skip — filter figma_link: links a Figma design"), "{stdout}");
    assert!(stdout.contains("analyzer idle: 3 triaged, 1 skipped by filters, 0 failed"), "{stdout}");

    let store = env.store().await;
    let status = |t: &executor::domain::Task| (t.status, t.skip_rule.clone());
    let a1 = store.task(&gid("A-1")).await.unwrap();
    assert_eq!(status(&a1), (QueueStatus::AwaitingGo, None));
    assert!(a1.priority.is_some_and(|p| (1..=5).contains(&p)));
    assert!(!a1.acceptance_criteria.is_empty(), "the triage's criteria are kept for the review");
    let a2 = store.task(&gid("A-2")).await.unwrap();
    assert_eq!(status(&a2), (QueueStatus::Skip, Some("figma_link".into())));
    assert!(
        store.analysis_sessions(&gid("A-2")).await.unwrap().is_empty(),
        "no model call for a filtered task"
    );
    assert_eq!(store.task(&gid("A-3")).await.unwrap().status, QueueStatus::Skip);
    assert_eq!(store.task(&gid("A-4")).await.unwrap().status, QueueStatus::ForReview);
    let sessions = store.analysis_sessions(&gid("A-1")).await.unwrap();
    assert_eq!(sessions.len(), 1);
    let log = sessions[0].log_path.clone().expect("a work log");
    assert!(std::path::Path::new(&log).exists(), "{log}");

    let shown = String::from_utf8_lossy(&env.run(&["queue", "show", "A-2"]).stdout).to_string();
    assert!(shown.contains("figma_link"), "queue show names the rule: {shown}");
    // Nothing pending: a second pass finds nothing to do.
    let again = env.run(&["analyzer"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 triaged, 0 skipped by filters"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_is_never_the_schema_leaves_the_task_pending_with_the_error() {
    let env = Env::new(&[]);
    add(&env, "B-1", "Answer in prose FAKE_ANALYZER=prose");
    add(&env, "B-2", "Answer badly once FAKE_ANALYZER=fail_once");
    let out = env.command(&["analyzer"]).stdin(Stdio::null()).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "a failed analysis is an error cron sees: {stdout}{stderr}");
    assert!(stdout.contains("B-1: analysis failed (attempt 1;"), "{stdout}");
    assert!(stderr.contains("1 analysis(es) failed"), "{stderr}");

    let store = env.store().await;
    let b1 = store.task(&gid("B-1")).await.unwrap();
    assert_eq!((b1.status, b1.analysis_attempts), (QueueStatus::Pending, 1));
    assert!(b1.analysis_error.as_deref().is_some_and(|e| e.contains("schema")), "{:?}", b1.analysis_error);
    assert_eq!(
        store.analysis_sessions(&gid("B-1")).await.unwrap().len(),
        2,
        "one retry with the error shown"
    );
    let b2 = store.task(&gid("B-2")).await.unwrap();
    assert_eq!(b2.status, QueueStatus::AwaitingGo, "the retry's answer was used");
    let shown = String::from_utf8_lossy(&env.run(&["queue", "show", "B-1"]).stdout).to_string();
    assert!(shown.contains("schema"), "queue show says why: {shown}");
    // Backing off (analyzer.retry_backoff): the next pass leaves it alone and succeeds.
    let next = env.run(&["analyzer"]);
    assert!(String::from_utf8_lossy(&next.stdout).contains("0 triaged"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_daily_budget_stops_the_pass_and_says_so() {
    let env = Env::new(&[]);
    env.append_config("\n[budget]\nper_day_usd = 0.0\n");
    add(&env, "C-1", "Fix the crash");
    let out = env.command(&["analyzer"]).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Issue 33 item 14: only time or a human ends it, so it is no error for cron (it used to exit 1 on
    // every start until the next day).
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("the analyzer waits"), "{stderr}");
    assert!(stderr.contains("budget"), "{stderr}");
    let store = env.store().await;
    let c1 = store.task(&gid("C-1")).await.unwrap();
    assert_eq!((c1.status, c1.analysis_attempts, c1.claim_owner), (QueueStatus::Pending, 0, None));
}

/// Issue 33 item 11: an agent that cannot start is the setup's fault, not the task's: the pass stops at
/// once, naming it, and no task pays an attempt or a back-off for it (it used to cost each task an
/// attempt and an hour, and `requeue` then called the task given up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_cannot_start_costs_no_task_an_attempt() {
    let env = Env::new(&[]);
    add(&env, "E-1", "Fix the crash");
    add(&env, "E-2", "Fix the other crash");
    // Every agent's private files go under <data>/workers: with a file in its place, no agent can start.
    std::fs::write(env.path().join("data/workers"), "in the way\n").unwrap();
    let out = env.command(&["analyzer"]).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a setup that cannot work is an error cron sees: {stderr}");
    assert!(stderr.contains("could not start"), "{stderr}");
    let store = env.store().await;
    for g in ["E-1", "E-2"] {
        let t = store.task(&gid(g)).await.unwrap();
        assert_eq!((t.status, t.analysis_attempts, t.claim_owner), (QueueStatus::Pending, 0, None), "{g}");
        assert_eq!(t.analysis_error, None, "{g}");
    }
    let tried: usize = [
        store.analysis_sessions(&gid("E-1")).await.unwrap().len(),
        store.analysis_sessions(&gid("E-2")).await.unwrap().len(),
    ]
    .iter()
    .sum();
    assert_eq!(tried, 1, "the pass stops at the first task that shows the agent cannot start");
}

/// Filters cost nothing: a spent budget stops the model, never them. The task a filter names is skipped
/// even though an older one, waiting for the model, stands before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_daily_budget_still_lets_the_filters_skip() {
    let env = Env::new(&[]);
    env.append_config(FIGMA_FILTER);
    env.append_config("\n[budget]\nper_day_usd = 0.0\n");
    add(&env, "D-1", "Fix the crash");
    add(&env, "D-2", "New screens\n\nDesign: https://www.figma.com/design/abc/onboarding");
    let out = env.command(&["analyzer"]).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("budget"), "{stderr}");
    let store = env.store().await;
    assert_eq!(store.task(&gid("D-1")).await.unwrap().status, QueueStatus::Pending);
    let d2 = store.task(&gid("D-2")).await.unwrap();
    assert_eq!((d2.status, d2.skip_rule.as_deref()), (QueueStatus::Skip, Some("figma_link")));
}

/// Two analyzers (each its own data directory, so its own lock) on one PostgreSQL: every task is
/// triaged exactly once — one analysis session and one pending → … event each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn two_analyzers_on_postgres_triage_each_task_once() {
    let Some(db) = common::postgres("two_analyzers_on_postgres_triage_each_task_once").await else { return };
    let (one, two) = (Env::new(&[]), Env::new(&[]));
    for env in [&one, &two] {
        env.use_database(&db.url);
        env.append_config("\n[analyzer]\nconcurrency = 2\n");
    }
    let store = db.open().await;
    for i in 0..12 {
        add(&one, &format!("P-{i}"), &format!("Fix bug number {i}"));
    }
    let children: Vec<_> = [&one, &two]
        .iter()
        .map(|env| env.command(&["analyzer"]).stdin(Stdio::null()).stdout(Stdio::piped()).spawn().unwrap())
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    for i in 0..12 {
        let g = gid(&format!("P-{i}"));
        assert_eq!(store.task(&g).await.unwrap().status, QueueStatus::AwaitingGo);
        assert_eq!(store.analysis_sessions(&g).await.unwrap().len(), 1, "{g} analyzed once");
        let events =
            store.events(&EventFilter { task_gid: Some(g.clone()), ..Default::default() }).await.unwrap();
        let triages = events.iter().filter(|e| e.from_state.as_deref() == Some("pending")).count();
        assert_eq!(triages, 1, "{g}: {events:?}");
    }
}
