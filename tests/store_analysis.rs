//! The analyzer's store operations, on SQLite and PostgreSQL: claims that exclude each other, results
//! written only while the task is still pending and still the writer's, failed analyses that back off
//! and then stop, the facts an intake refreshes, and the daily budget counting analyses.

mod common;

use std::collections::HashSet;

use chrono::{Duration, Utc};
use common::TestDb;
use executor::domain::{Actor, QueueStatus, TaskGid};
use executor::store::{AnalysisEnd, EventFilter, FilterSkip, NewTask, PendingPage, Store, Triage};

on_both_databases!(
    eight_analyzers_claim_fifty_tasks_each_exactly_once,
    a_result_is_written_only_while_the_task_is_pending_and_claimed_by_the_writer,
    a_filter_skip_records_its_rule_and_an_event,
    filter_skips_in_bulk_touch_only_pending_unclaimed_tasks,
    pages_for_the_filters_follow_the_analysis_order,
    failed_analyses_back_off_and_stop_after_max_attempts,
    an_expired_claim_can_be_taken_over,
    an_intake_refreshes_the_facts_without_touching_status,
    sent_back_tasks_come_after_new_ones,
    analyses_count_in_the_daily_budget,
    source_cursors_keep_the_cursor_through_a_failure,
);

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).unwrap()
}

async fn add(store: &Store, g: &str) -> TaskGid {
    let g = gid(g);
    let t = NewTask {
        source: Some("inbox".into()),
        description: Some(format!("task {g}")),
        ..Default::default()
    };
    store.upsert_task(&g, &t, Actor::Cli).await.unwrap();
    g
}

fn triage(status: QueueStatus) -> Triage {
    Triage {
        status,
        priority: 2,
        complexity: "low".into(),
        feasibility: "high".into(),
        summary: "clear".into(),
        acceptance_criteria: vec!["the button is blue".into()],
    }
}

const TTL: i64 = 600;

async fn eight_analyzers_claim_fifty_tasks_each_exactly_once(db: TestDb) {
    let store = db.open().await;
    for i in 0..50 {
        add(&store, &format!("c{i}")).await;
    }
    let mut handles = Vec::new();
    for a in 0..8 {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            let owner = format!("host:{a}");
            let mut mine = Vec::new();
            while let Some(t) = store.claim_for_analysis(&owner, Duration::seconds(TTL), 3).await.unwrap() {
                assert_eq!(t.claim_owner.as_deref(), Some(owner.as_str()));
                assert!(
                    store.record_triage(&t.task_gid, &owner, &triage(QueueStatus::AwaitingGo)).await.unwrap()
                );
                mine.push(t.task_gid.to_string());
            }
            mine
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    let distinct: HashSet<&String> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (50, 50), "every task triaged exactly once");
    assert_eq!(store.count_claimable(3).await.unwrap(), 0);
}

async fn a_result_is_written_only_while_the_task_is_pending_and_claimed_by_the_writer(db: TestDb) {
    let store = db.open().await;
    let g = add(&store, "r1").await;
    let t = store.claim_for_analysis("a", Duration::seconds(TTL), 3).await.unwrap().unwrap();
    assert_eq!(t.task_gid, g);
    assert!(store.claim_for_analysis("b", Duration::seconds(TTL), 3).await.unwrap().is_none(), "claimed");
    assert!(!store.record_triage(&g, "b", &triage(QueueStatus::Skip)).await.unwrap(), "not b's claim");
    // A human decides while the analysis runs: the analysis must not overwrite it.
    store.set_task_status(&g, QueueStatus::Skip, Actor::Cli, Some("not now")).await.unwrap();
    assert!(!store.record_triage(&g, "a", &triage(QueueStatus::AwaitingGo)).await.unwrap());
    let after = store.task(&g).await.unwrap();
    assert_eq!((after.status, after.analysis_summary), (QueueStatus::Skip, None));

    let g2 = add(&store, "r2").await;
    store.claim_for_analysis("a", Duration::seconds(TTL), 3).await.unwrap().unwrap();
    assert!(store.record_triage(&g2, "a", &triage(QueueStatus::ForReview)).await.unwrap());
    let t2 = store.task(&g2).await.unwrap();
    assert_eq!(t2.status, QueueStatus::ForReview);
    assert_eq!(t2.acceptance_criteria, vec!["the button is blue".to_string()]);
    assert_eq!((t2.priority, t2.claim_owner.as_deref()), (Some(2), None));
    assert!(t2.analyzed_at.is_some());
    let events =
        store.events(&EventFilter { task_gid: Some(g2.clone()), ..Default::default() }).await.unwrap();
    let last = events.last().unwrap();
    assert_eq!((last.from_state.as_deref(), last.to_state.as_deref()), (Some("pending"), Some("for_review")));
    assert!(store.record_triage(&g2, "a", &triage(QueueStatus::Approved)).await.is_err(), "illegal status");
}

async fn a_filter_skip_records_its_rule_and_an_event(db: TestDb) {
    let store = db.open().await;
    let g = add(&store, "f1").await;
    store.claim_for_analysis("a", Duration::seconds(TTL), 3).await.unwrap().unwrap();
    assert!(store.record_filter_skip(&g, "a", "figma_link", "links a Figma design").await.unwrap());
    let t = store.task(&g).await.unwrap();
    assert_eq!(
        (t.status, t.skip_rule.as_deref(), t.skip_why.as_deref()),
        (QueueStatus::Skip, Some("figma_link"), Some("links a Figma design"))
    );
    let events =
        store.events(&EventFilter { task_gid: Some(g.clone()), ..Default::default() }).await.unwrap();
    assert!(events.iter().any(|e| e.reason.as_deref() == Some("filter figma_link: links a Figma design")));
}

fn skip(g: &TaskGid) -> FilterSkip {
    FilterSkip { task_gid: g.clone(), rule: "figma_link".into(), why: "links a Figma design".into() }
}

async fn filter_skips_in_bulk_touch_only_pending_unclaimed_tasks(db: TestDb) {
    let store = db.open().await;
    let free = add(&store, "b1").await;
    let claimed = add(&store, "b2").await;
    let decided = add(&store, "b3").await;
    let expired = add(&store, "b4").await;
    let last = add(&store, "b5").await;
    // b1 was claimed and let go; b2 is another analyzer's (live); b3 a human decided; b4's claim expired.
    store.set_task_status(&decided, QueueStatus::ForReview, Actor::Cli, Some("a human")).await.unwrap();
    let claim = |owner: &'static str, secs: i64| {
        let store = store.clone();
        async move { store.claim_for_analysis(owner, Duration::seconds(secs), 3).await.unwrap().unwrap().task_gid }
    };
    assert_eq!(claim("tmp", TTL).await, free);
    assert_eq!(claim("busy", TTL).await, claimed);
    assert_eq!(claim("dead", -1).await, expired);
    store.release_claim(&free, "tmp").await.unwrap();

    let all = [&free, &claimed, &decided, &expired, &last].map(skip);
    let moved = store.record_filter_skips(&all).await.unwrap();
    assert_eq!(moved, vec![free.clone(), expired.clone(), last.clone()]);
    for g in [&free, &expired, &last] {
        let t = store.task(g).await.unwrap();
        assert_eq!(
            (t.status, t.skip_rule.as_deref(), t.skip_why.as_deref(), t.claim_owner.as_deref()),
            (QueueStatus::Skip, Some("figma_link"), Some("links a Figma design"), None)
        );
        assert!(t.analyzed_at.is_some());
        assert_eq!(t.skipped_by, Some(executor::domain::SkippedBy::Filter), "who skipped it, recorded");
        let events =
            store.events(&EventFilter { task_gid: Some(g.clone()), ..Default::default() }).await.unwrap();
        let skips: Vec<_> = events.iter().filter(|e| e.to_state.as_deref() == Some("skip")).collect();
        assert_eq!(skips.len(), 1, "one event per skipped task");
        assert_eq!(skips[0].reason.as_deref(), Some("filter figma_link: links a Figma design"));
        assert_eq!(skips[0].from_state.as_deref(), Some("pending"));
    }
    let b2 = store.task(&claimed).await.unwrap();
    assert_eq!((b2.status, b2.claim_owner.as_deref()), (QueueStatus::Pending, Some("busy")));
    assert_eq!(store.task(&decided).await.unwrap().status, QueueStatus::ForReview);
    // Written once: a second pass moves nothing and records nothing.
    assert!(store.record_filter_skips(&all).await.unwrap().is_empty());
}

async fn pages_for_the_filters_follow_the_analysis_order(db: TestDb) {
    let store = db.open().await;
    let old = add(&store, "p0").await;
    store.set_task_status(&old, QueueStatus::Skip, Actor::Cli, Some("no")).await.unwrap();
    let mut new = Vec::new();
    for i in 1..=5 {
        new.push(add(&store, &format!("p{i}")).await);
    }
    store.send_back_for_analysis(std::slice::from_ref(&old), Actor::Cli, "again").await.unwrap();
    store.claim_for_analysis("busy", Duration::seconds(TTL), 3).await.unwrap().unwrap();
    let mut seen = Vec::new();
    let mut from = PendingPage::default();
    loop {
        let (page, next) = store.claimable_page(from, 2, 3).await.unwrap();
        if page.is_empty() {
            break;
        }
        seen.extend(page.into_iter().map(|t| t.task_gid));
        from = next;
    }
    // p1 is claimed; new tasks before the re-analyzed one; each task once.
    let mut want: Vec<TaskGid> = new[1..].to_vec();
    want.push(old);
    assert_eq!(seen, want);
}

async fn failed_analyses_back_off_and_stop_after_max_attempts(db: TestDb) {
    let store = db.open().await;
    let g = add(&store, "e1").await;
    for attempt in 1..=2 {
        let t = store.claim_for_analysis("a", Duration::seconds(TTL), 2).await.unwrap().unwrap();
        assert_eq!(t.analysis_attempts, attempt - 1);
        // Backing off until a time already past: claimable again at once.
        let retry = Utc::now() - Duration::seconds(1);
        assert!(store.record_analysis_failure(&g, "a", "prose, not JSON", retry).await.unwrap());
    }
    let t = store.task(&g).await.unwrap();
    assert_eq!((t.status, t.analysis_attempts), (QueueStatus::Pending, 2));
    assert_eq!(t.analysis_error.as_deref(), Some("prose, not JSON"));
    assert!(store.claim_for_analysis("a", Duration::seconds(TTL), 2).await.unwrap().is_none(), "given up");
    // A back-off in the future holds a task even under the attempt limit.
    let g2 = add(&store, "e2").await;
    store.claim_for_analysis("a", Duration::seconds(TTL), 2).await.unwrap().unwrap();
    store.record_analysis_failure(&g2, "a", "agent crashed", Utc::now() + Duration::hours(1)).await.unwrap();
    assert!(store.claim_for_analysis("a", Duration::seconds(TTL), 2).await.unwrap().is_none(), "backing off");
    // Sent back by a human: tried afresh.
    assert_eq!(
        store.send_back_for_analysis(std::slice::from_ref(&g), Actor::Cli, "try again").await.unwrap(),
        1
    );
    let t = store.claim_for_analysis("a", Duration::seconds(TTL), 2).await.unwrap().unwrap();
    assert_eq!((t.task_gid, t.analysis_attempts, t.analysis_error), (g, 0, None));
}

async fn an_expired_claim_can_be_taken_over(db: TestDb) {
    let store = db.open().await;
    let g = add(&store, "x1").await;
    store.claim_for_analysis("dead", Duration::seconds(-1), 3).await.unwrap().unwrap();
    let t = store.claim_for_analysis("alive", Duration::seconds(TTL), 3).await.unwrap().unwrap();
    assert_eq!((t.task_gid.clone(), t.claim_owner.as_deref()), (g.clone(), Some("alive")));
    assert!(!store.record_triage(&g, "dead", &triage(QueueStatus::Skip)).await.unwrap(), "lost its claim");
    assert!(store.record_triage(&g, "alive", &triage(QueueStatus::Skip)).await.unwrap());
}

async fn an_intake_refreshes_the_facts_without_touching_status(db: TestDb) {
    let store = db.open().await;
    let g = gid("i1");
    let mut t = NewTask {
        source: Some("asana".into()),
        description: Some("Fix the macOS menu".into()),
        url: Some("https://app.asana.com/0/1/2".into()),
        completed: Some(false),
        assignee: Some("alex".into()),
        modified_at: Some(Utc::now()),
        raw: Some(
            serde_json::json!({"gid": "2", "custom_fields": [{"name": "Platform", "display_value": "macOS"}]}),
        ),
        ..Default::default()
    };
    store.upsert_task(&g, &t, Actor::Analyzer).await.unwrap();
    store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Analyzer, None).await.unwrap();
    t.completed = Some(true);
    t.assignee = None; // the source no longer has one: a raw object says all it knows
    t.raw = Some(serde_json::json!({"gid": "2", "completed": true}));
    let (after, _) = store.upsert_task(&g, &t, Actor::Analyzer).await.unwrap();
    assert_eq!(after.status, QueueStatus::AwaitingGo);
    assert_eq!((after.completed, after.assignee.as_deref()), (Some(true), None));
    assert_eq!(after.raw_json.as_deref(), Some(r#"{"completed":true,"gid":"2"}"#));
    // `queue add` without facts keeps those the source gave.
    let plain = NewTask { description: Some("Fix the macOS menu".into()), ..Default::default() };
    let (kept, _) = store.upsert_task(&g, &plain, Actor::Cli).await.unwrap();
    assert_eq!((kept.completed, kept.url.as_deref()), (Some(true), Some("https://app.asana.com/0/1/2")));
}

async fn sent_back_tasks_come_after_new_ones(db: TestDb) {
    let store = db.open().await;
    let old = add(&store, "s1").await;
    store.claim_for_analysis("a", Duration::seconds(TTL), 3).await.unwrap().unwrap();
    store.record_filter_skip(&old, "a", "not_macos", "").await.unwrap();
    assert_eq!(
        store.send_back_for_analysis(std::slice::from_ref(&old), Actor::Cli, "reanalyze").await.unwrap(),
        1
    );
    assert_eq!(
        store.send_back_for_analysis(std::slice::from_ref(&old), Actor::Cli, "again").await.unwrap(),
        0,
        "pending"
    );
    let new = add(&store, "s2").await;
    let first = store.claim_for_analysis("a", Duration::seconds(TTL), 3).await.unwrap().unwrap();
    let second = store.claim_for_analysis("a", Duration::seconds(TTL), 3).await.unwrap().unwrap();
    assert_eq!((first.task_gid, second.task_gid), (new, old.clone()));
    assert_eq!((second.analysis_round, second.skip_rule), (1, None));
}

async fn analyses_count_in_the_daily_budget(db: TestDb) {
    let store = db.open().await;
    let g = add(&store, "b1").await;
    let before = store.spent_since(Utc::now() - Duration::hours(1)).await.unwrap();
    let s = store.begin_analysis_session(&g, "claude", "h").await.unwrap();
    store.set_analysis_process(s, 4242, Some(17), "/logs/b1/analyzer.md").await.unwrap();
    assert_eq!(store.open_analysis_sessions("h").await.unwrap().len(), 1);
    // Spend reported while it runs counts at once (another analysis, or the runner, sees it).
    store.record_analysis_usage(s, Some(0.10), 40, 5).await.unwrap();
    let running = store.spent_since(Utc::now() - Duration::hours(1)).await.unwrap();
    assert!((running - before - 0.10).abs() < 1e-9, "spent {running} while running");
    let end = AnalysisEnd { cost_usd: 0.25, input_tokens: 100, ..Default::default() };
    store.end_analysis_session(s, &end).await.unwrap();
    store.end_analysis_session(s, &AnalysisEnd { cost_usd: 9.0, ..Default::default() }).await.unwrap();
    let after = store.spent_since(Utc::now() - Duration::hours(1)).await.unwrap();
    assert!((after - before - 0.25).abs() < 1e-9, "spent {after} after {before}");
    assert!(store.open_analysis_sessions("h").await.unwrap().is_empty());
    let sessions = store.analysis_sessions(&g).await.unwrap();
    assert_eq!((sessions.len(), sessions[0].pid, sessions[0].input_tokens), (1, Some(4242), 100));
}

async fn source_cursors_keep_the_cursor_through_a_failure(db: TestDb) {
    let store = db.open().await;
    assert_eq!(store.source_cursor("inbox").await.unwrap(), None);
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-01T10:00:00Z").unwrap().with_timezone(&Utc);
    store.set_source_fetched("inbox", Some(at)).await.unwrap();
    store.set_source_failed("inbox", "401: ASANA_TOKEN rejected").await.unwrap();
    let c = store.source_cursors().await.unwrap();
    assert_eq!(
        (c.len(), c[0].cursor, c[0].last_error.as_deref()),
        (1, Some(at), Some("401: ASANA_TOKEN rejected"))
    );
    store.set_source_fetched("inbox", None).await.unwrap();
    let c = store.source_cursors().await.unwrap();
    assert_eq!(
        (c[0].cursor, c[0].last_error.as_deref()),
        (Some(at), None),
        "no new cursor keeps the old one"
    );
}
