//! `executor reanalyze` over 1,000 skipped tasks (issue 9, Re-analysis): the report by source and by rule,
//! a dry run that writes nothing, a real run that sends back exactly the tasks that pass, and the order
//! that keeps re-analyzed tasks from starving new ones. On SQLite, and on PostgreSQL when
//! EXECUTOR_TEST_DATABASE_URL is set.

mod cli_support;
mod common;

use std::collections::BTreeSet;

use chrono::Duration;
use cli_support::{Sandbox, text};
use common::TestDb;
use executor::domain::{Actor, EndReason, QueueStatus, SkippedBy, TaskGid};
use executor::store::{AnalysisEnd, EventFilter, NewTask, Store, TaskFilter, Triage};
use serde_json::Value;

/// The current config has one filter; the tasks were skipped under older ones too.
const FILTERS: &str = "
[[filters]]
name = \"figma\"
why = \"a design task\"
when = { field = \"description\", contains = \"figma.com\" }
";

const TASKS: usize = 1000;

/// A sandbox whose database is `db` (SQLite in the sandbox's data directory, or a PostgreSQL schema).
fn sandbox(db: Option<&TestDb>) -> (Sandbox, String) {
    let sb = Sandbox::with_config(FILTERS);
    let url = match db {
        Some(db) => {
            let path = sb.path().join("executor.toml");
            let config = std::fs::read_to_string(&path).unwrap();
            let config = config.replacen("url = \"\"", &format!("url = {:?}", db.url), 1);
            std::fs::write(&path, config).unwrap();
            db.url.clone()
        }
        None => format!("sqlite://{}", sb.path().join("data").join("executor.db").display()),
    };
    (sb, url)
}

async fn open(url: &str) -> Store {
    let store = Store::open(url).await.unwrap();
    store.migrate().await.unwrap();
    store
}

fn gid(i: usize) -> TaskGid {
    TaskGid::parse(&format!("t{i:04}")).unwrap()
}

/// What task `i` is and what skipped it. By i % 4: 0 a Figma task skipped by `figma` (still skipped);
/// 1 skipped by `old_rule`, a filter since removed (passes); 2 skipped by triage (passes); 3 skipped by
/// a human, a Figma task when i % 8 == 3 (still skipped) and not otherwise (passes, but a plain
/// `reanalyze` leaves a human's skip alone). Even i come from `inbox`, odd from `reports`.
fn description(i: usize) -> String {
    match i % 8 {
        0 | 4 => format!("Redo the header, see figma.com/file/{i}"),
        3 => format!("An idea from figma.com/board/{i}"),
        _ => format!("Fix bug {i}"),
    }
}

fn passes(i: usize) -> bool {
    !i.is_multiple_of(4) && i % 8 != 3
}

/// Adds the tasks in one intake and skips each as its kind says, through the store's own operations.
async fn skipped_tasks(store: &Store) {
    let tasks: Vec<(TaskGid, NewTask)> = (0..TASKS)
        .map(|i| {
            let source = if i % 2 == 0 { "inbox" } else { "reports" };
            (
                gid(i),
                NewTask {
                    description: Some(description(i)),
                    source: Some(source.into()),
                    ..Default::default()
                },
            )
        })
        .collect();
    store.upsert_tasks(&tasks, Actor::Cli).await.unwrap();
    for i in (3..TASKS).step_by(4) {
        store.set_task_status(&gid(i), QueueStatus::Skip, Actor::Cli, Some("not now")).await.unwrap();
    }
    // The analyzer's path for the rest: claimed in order, then a filter's skip or a triage's.
    while let Some(task) = store.claim_for_analysis("seed", Duration::minutes(5), 3).await.unwrap() {
        let i: usize = task.task_gid.as_str()[1..].parse().unwrap();
        let written = match i % 4 {
            0 => store.record_filter_skip(&task.task_gid, "seed", "figma", "a design task").await,
            1 => store.record_filter_skip(&task.task_gid, "seed", "old_rule", "an old rule").await,
            _ => store.record_triage(&task.task_gid, "seed", &triage_skip()).await,
        };
        assert!(written.unwrap());
    }
}

fn triage_skip() -> Triage {
    Triage {
        status: QueueStatus::Skip,
        priority: 5,
        complexity: "high".into(),
        feasibility: "low".into(),
        summary: "not worth it".into(),
        acceptance_criteria: Vec::new(),
    }
}

fn counts(report: &Value, by: &str, key: &str) -> (u64, u64) {
    let c = &report[by][key];
    (c["would_pass"].as_u64().unwrap_or(0), c["still_skipped"].as_u64().unwrap_or(0))
}

async fn count(store: &Store, status: QueueStatus) -> i64 {
    store.count_tasks(&TaskFilter { status: Some(status), ..Default::default() }).await.unwrap()
}

async fn reanalyze_a_thousand_skipped_tasks(db: Option<TestDb>) {
    let (sb, url) = sandbox(db.as_ref());
    let store = open(&url).await;
    skipped_tasks(&store).await;
    // A new task arrives meanwhile: never touched by reanalyze.
    let new = NewTask { description: Some("figma.com/new".into()), ..Default::default() };
    store.upsert_task(&TaskGid::parse("new").unwrap(), &new, Actor::Cli).await.unwrap();
    // Human skips (i % 4 == 3) stand under a plain `reanalyze`.
    let expected: BTreeSet<String> =
        (0..TASKS).filter(|i| passes(*i) && i % 4 != 3).map(|i| gid(i).to_string()).collect();
    assert_eq!(expected.len(), 500);

    let dry = sb.json(&["reanalyze", "--dry-run"]);
    assert_eq!(dry["examined"], 750);
    assert_eq!(dry["human_skips_kept"], 250);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        (dry["totals"]["would_pass"].as_u64(), dry["totals"]["still_skipped"].as_u64()),
        (Some(500), Some(250))
    );
    assert_eq!(dry["totals"]["still_skipped_by"]["figma"], 250);
    assert_eq!(counts(&dry, "by_source", "inbox"), (250, 250));
    assert_eq!(counts(&dry, "by_source", "reports"), (250, 0));
    assert_eq!(counts(&dry, "by_rule", "figma"), (0, 250));
    assert_eq!(counts(&dry, "by_rule", "old_rule"), (250, 0));
    assert_eq!(counts(&dry, "by_rule", "triage"), (250, 0));
    assert_eq!(counts(&dry, "by_rule", "human"), (0, 0));
    assert_eq!(dry["sent_back"], 0);
    assert_eq!(count(&store, QueueStatus::Skip).await, 1000, "a dry run changes nothing");
    let human = sb.ok(&["reanalyze", "--dry-run"]);
    assert!(human.contains("dry run: 500 tasks would be sent back to pending"), "{human}");
    assert!(human.contains("250 tasks skipped by a human left as they are"), "{human}");
    assert!(human.contains("old_rule") && human.contains("STILL SKIPPED"), "{human}");
    let asked = sb.json(&["reanalyze", "--dry-run", "--rule", "human"]);
    assert_eq!((asked["examined"].as_u64(), asked["human_skips_kept"].as_u64()), (Some(250), Some(0)));
    assert_eq!(counts(&asked, "by_rule", "human"), (125, 125));

    // Narrowing, still dry.
    let by_rule = sb.json(&["reanalyze", "--dry-run", "--rule", "old_rule", "--rule", "human"]);
    assert_eq!(
        (by_rule["examined"].as_u64(), by_rule["totals"]["would_pass"].as_u64()),
        (Some(500), Some(375))
    );
    let by_source = sb.json(&["reanalyze", "--dry-run", "--source", "inbox"]);
    assert_eq!(
        (by_source["examined"].as_u64(), by_source["totals"]["would_pass"].as_u64()),
        (Some(500), Some(250))
    );
    let both = sb.json(&["reanalyze", "--dry-run", "--source", "reports", "--rule", "triage"]);
    assert_eq!(both["examined"], 0, "triage skips are all from inbox");
    let no_triage = sb.json(&["reanalyze", "--dry-run", "--no-triage"]);
    assert_eq!(no_triage["totals"]["would_pass"], 250);

    let started = chrono::Utc::now() - Duration::seconds(1);
    let done = sb.json(&["reanalyze"]);
    assert_eq!((done["sent_back"].as_u64(), done["dry_run"].as_bool()), (Some(500), Some(false)));
    let mut back = BTreeSet::new();
    store
        .for_each_task_page(QueueStatus::Pending, 500, |page| {
            for t in page {
                if t.task_gid.as_str() == "new" {
                    assert_eq!(t.analysis_round, 0);
                    continue;
                }
                assert_eq!((t.analysis_round, t.skip_rule.as_deref()), (1, None), "{}", t.task_gid);
                back.insert(t.task_gid.to_string());
            }
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(back, expected, "exactly the passing tasks went back");
    assert_eq!(count(&store, QueueStatus::Skip).await, 500);
    let events = store.events(&EventFilter { since: Some(started), ..Default::default() }).await.unwrap();
    let moved: Vec<_> = events
        .iter()
        .filter(|e| e.from_state.as_deref() == Some("skip") && e.to_state.as_deref() == Some("pending"))
        .collect();
    assert_eq!(moved.len(), 500, "one event each");
    assert!(
        moved.iter().all(|e| e.actor == "cli" && e.reason.as_deref().unwrap_or("").contains("reanalyze"))
    );
    let old_rule = moved.iter().find(|e| e.task_gid.as_deref() == Some("t0001")).unwrap();
    assert!(old_rule.reason.as_deref().unwrap().contains("old_rule"), "{old_rule:?}");

    let again = sb.json(&["reanalyze"]);
    assert_eq!((again["examined"].as_u64(), again["sent_back"].as_u64()), (Some(250), Some(0)));
    let human = sb.ok(&["reanalyze"]);
    assert!(human.contains("0 tasks sent back to pending"), "{human}");
    // Asked for, the human skips that pass go back too.
    let asked = sb.json(&["reanalyze", "--rule", "human"]);
    assert_eq!(asked["sent_back"], 125);
    assert_eq!(count(&store, QueueStatus::Skip).await, 375);
    store.close().await;
}

/// Issue 20, item 8: a task the agent triaged (for review) and a human then skipped is a human's skip,
/// not the triage's: a plain `reanalyze` leaves it skipped, `--rule triage` does not select it, and
/// `--rule human` does. The skip's rule is recorded with it, not read from the reason.
async fn a_human_skip_after_a_triage_survives_a_plain_reanalyze(db: Option<TestDb>) {
    let (sb, url) = sandbox(db.as_ref());
    let store = open(&url).await;
    let g = TaskGid::parse("dup1").unwrap();
    let new = NewTask {
        description: Some("Fix the login".into()),
        source: Some("inbox".into()),
        ..Default::default()
    };
    store.upsert_task(&g, &new, Actor::Cli).await.unwrap();
    let claimed = store.claim_for_analysis("a", Duration::minutes(5), 3).await.unwrap().unwrap();
    let review = Triage { status: QueueStatus::ForReview, ..triage_skip() };
    assert!(store.record_triage(&claimed.task_gid, "a", &review).await.unwrap());
    sb.ok(&["skip", "dup1", "--reason", "duplicate of dup0"]);
    let task = store.task(&g).await.unwrap();
    assert_eq!((task.status, task.skipped_by), (QueueStatus::Skip, Some(SkippedBy::Human)));

    let plain = sb.json(&["reanalyze"]);
    assert_eq!((plain["examined"].as_u64(), plain["sent_back"].as_u64()), (Some(0), Some(0)), "{plain}");
    assert_eq!(plain["human_skips_kept"], 1);
    assert_eq!(store.task(&g).await.unwrap().status, QueueStatus::Skip, "a human's skip stands");
    assert_eq!(sb.json(&["reanalyze", "--dry-run", "--rule", "triage"])["examined"], 0);
    let show = sb.ok(&["queue", "show", "dup1"]);
    assert!(show.contains("a human (see the history)"), "{show}");

    let asked = sb.json(&["reanalyze", "--rule", "human"]);
    assert_eq!((asked["examined"].as_u64(), asked["sent_back"].as_u64()), (Some(1), Some(1)), "{asked}");
    let back = store.task(&g).await.unwrap();
    assert_eq!((back.status, back.skipped_by), (QueueStatus::Pending, None));
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_human_skip_after_a_triage_survives_a_plain_reanalyze() {
    a_human_skip_after_a_triage_survives_a_plain_reanalyze(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn postgres_a_human_skip_after_a_triage_survives_a_plain_reanalyze() {
    if let Some(db) = common::postgres("a_human_skip_after_a_triage_survives_a_plain_reanalyze").await {
        a_human_skip_after_a_triage_survives_a_plain_reanalyze(Some(db)).await;
    }
}

/// The documented order: a re-analyzed task (round 1) is claimed after a new one (round 0), even when it
/// arrived first.
async fn new_tasks_are_analyzed_before_re_analyzed_ones(db: TestDb) {
    let store = db.open().await;
    let old = TaskGid::parse("old").unwrap();
    let fresh = TaskGid::parse("fresh").unwrap();
    store.upsert_task(&old, &NewTask::default(), Actor::Cli).await.unwrap();
    let claimed = store.claim_for_analysis("a", Duration::minutes(5), 3).await.unwrap().unwrap();
    assert!(store.record_filter_skip(&claimed.task_gid, "a", "figma", "").await.unwrap());
    assert_eq!(
        store.send_back_for_analysis(std::slice::from_ref(&old), Actor::Cli, "test").await.unwrap(),
        1
    );
    store.upsert_task(&fresh, &NewTask::default(), Actor::Cli).await.unwrap();
    let (old_task, fresh_task) = (store.task(&old).await.unwrap(), store.task(&fresh).await.unwrap());
    assert!(old_task.id < fresh_task.id && old_task.analysis_round == 1 && fresh_task.analysis_round == 0);
    let first = store.claim_for_analysis("a", Duration::minutes(5), 3).await.unwrap().unwrap();
    let second = store.claim_for_analysis("a", Duration::minutes(5), 3).await.unwrap().unwrap();
    assert_eq!((first.task_gid, second.task_gid), (fresh, old));
    store.close().await;
}

/// `--failed`: a pending task given up on is tried afresh; `status` counts it as given up before.
async fn given_up_analyses_are_tried_afresh(db: Option<TestDb>) {
    let (sb, url) = sandbox(db.as_ref());
    let store = open(&url).await;
    let g = TaskGid::parse("stuck").unwrap();
    store
        .upsert_task(&g, &NewTask { description: Some("d".into()), ..Default::default() }, Actor::Cli)
        .await
        .unwrap();
    for _ in 0..3 {
        let t = store.claim_for_analysis("a", Duration::minutes(5), 3).await.unwrap().unwrap();
        let past = chrono::Utc::now() - Duration::seconds(1);
        assert!(store.record_analysis_failure(&t.task_gid, "a", "the answer was prose", past).await.unwrap());
    }
    let status = sb.json(&["status"]);
    assert_eq!(status["pending"]["given_up"], 1, "{status}");
    assert!(sb.ok(&["status"]).contains("1 given up"));
    let show = sb.ok(&["queue", "show", "stuck"]);
    assert!(
        show.contains("3 failed attempts; given up on") && show.contains("the answer was prose"),
        "{show}"
    );
    let report = sb.json(&["reanalyze", "--failed"]);
    assert_eq!((report["looked_at"].as_str(), report["sent_back"].as_u64()), (Some("failed"), Some(1)));
    let t = store.task(&g).await.unwrap();
    assert_eq!((t.analysis_round, t.analysis_attempts, t.analysis_error), (1, 0, None));
    assert_eq!(sb.json(&["status"])["pending"]["claimable"], 1);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_reanalyze_a_thousand_skipped_tasks() {
    reanalyze_a_thousand_skipped_tasks(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn postgres_reanalyze_a_thousand_skipped_tasks() {
    if let Some(db) = common::postgres("reanalyze_a_thousand_skipped_tasks").await {
        reanalyze_a_thousand_skipped_tasks(Some(db)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_given_up_analyses_are_tried_afresh() {
    given_up_analyses_are_tried_afresh(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn postgres_given_up_analyses_are_tried_afresh() {
    if let Some(db) = common::postgres("given_up_analyses_are_tried_afresh").await {
        given_up_analyses_are_tried_afresh(Some(db)).await;
    }
}

on_both_databases!(new_tasks_are_analyzed_before_re_analyzed_ones);

#[test]
fn queue_show_and_list_say_which_filter_skipped_a_task() {
    let sb = Sandbox::with_config(FILTERS);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = format!("sqlite://{}", sb.path().join("data").join("executor.db").display());
    rt.block_on(async {
        let store = open(&url).await;
        let g = TaskGid::parse("f1").unwrap();
        store.upsert_task(&g, &NewTask::default(), Actor::Cli).await.unwrap();
        store.claim_for_analysis("a", Duration::minutes(5), 3).await.unwrap().unwrap();
        assert!(store.record_filter_skip(&g, "a", "not_macos", "not a macOS task").await.unwrap());
        // A task the agent triaged, with the session that did it; a source whose last fetch failed.
        let t = TaskGid::parse("t1").unwrap();
        store.upsert_task(&t, &NewTask::default(), Actor::Cli).await.unwrap();
        store.claim_for_analysis("a", Duration::minutes(5), 3).await.unwrap().unwrap();
        let session = store.begin_analysis_session(&t, "claude", "host").await.unwrap();
        store.set_analysis_process(session, 4242, None, "logs/t1/analyze_1.md").await.unwrap();
        let end = AnalysisEnd { reason: Some(EndReason::Finished), cost_usd: 0.0123, ..Default::default() };
        store.end_analysis_session(session, &end).await.unwrap();
        let triage = Triage {
            status: QueueStatus::ForReview,
            acceptance_criteria: vec!["The menu opens on click".into()],
            summary: "Small and clear.".into(),
            ..triage_skip()
        };
        assert!(store.record_triage(&t, "a", &triage).await.unwrap());
        store.set_source_failed("inbox", "HTTP 401: set ASANA_TOKEN").await.unwrap();
        store.close().await;
    });
    let show = sb.ok(&["queue", "show", "f1"]);
    assert!(show.contains("filter not_macos: not a macOS task"), "{show}");
    let json = sb.json(&["queue", "show", "f1"]);
    assert_eq!(json["task"]["skip_rule"], "not_macos");
    assert_eq!(json["analysis_sessions"], serde_json::json!([]));
    let show = sb.ok(&["queue", "show", "t1"]);
    for part in
        ["Small and clear.", "The menu opens on click", "claude", "finished", "$0.0123", "analyze_1.md"]
    {
        assert!(show.contains(part), "{part}: {show}");
    }
    assert_eq!(sb.json(&["queue", "show", "t1"])["analysis_sessions"][0]["agent"], "claude");
    let status = sb.ok(&["status"]);
    assert!(status.contains("source inbox: never fetched; last fetch failed"), "{status}");
    assert!(status.contains("HTTP 401: set ASANA_TOKEN"), "{status}");
    assert_eq!(sb.json(&["status"])["sources"][0]["source"], "inbox");
    let list = sb.ok(&["queue", "list"]);
    assert!(list.contains("skip (not_macos)"), "{list}");
    let out = sb.run(&["reanalyze", "--help"]);
    let help = text(&out.stdout);
    assert!(help.contains("after every new task") && help.contains("--dry-run"), "{help}");
}
