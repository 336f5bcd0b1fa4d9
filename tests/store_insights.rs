//! The insights' aggregates on SQLite and PostgreSQL, over a small history made by the store's own
//! operations (so every event is the one the real code writes) and then moved to chosen days, with the
//! figures worked out by hand.

mod common;

use chrono::{DateTime, Utc};
use common::TestDb;
use executor::domain::{Actor, EndReason, QueueStatus, ReviewVerdict, RunState, TaskGid, WorkerKind};
use executor::store::{
    AnalysisEnd, DayCost, DayFlow, GITHUB_GRAPHQL, SessionStart, Store, WorkerEnd, WorkerEnds,
};

on_both_databases!(
    tasks_in_and_out_are_counted_per_utc_day,
    cost_is_summed_per_day_of_each_sessions_start,
    lead_times_run_from_the_tasks_approval,
    worker_ends_are_counted_by_kind_and_reason,
    finished_workers_that_changed_nothing_or_failed_a_review_say_so,
    github_usage_keeps_the_fewest_points_left_per_hour,
    runs_that_ended_are_their_merge_or_their_abandonment,
    a_revert_is_recorded_once_and_read_with_the_runs_source_labels_and_worker_kinds,
    expensive_failures_are_the_costly_runs_given_up_with_their_reason_as_stored,
);

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn day(s: &str) -> chrono::NaiveDate {
    s.parse().unwrap()
}

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).unwrap()
}

/// Runs `sql` with a time and an id bound, on the test database directly: the store has no operation
/// that rewrites history, and a test needs one to place events on chosen days.
async fn set_time(db: &TestDb, sql: &str, time: DateTime<Utc>, id: i64) {
    if db.url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
        sqlx::query(sql).bind(time).bind(id).execute(&pool).await.unwrap();
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        sqlx::query(sql).bind(time).bind(id).execute(&pool).await.unwrap();
        pool.close().await;
    }
}

/// Moves every event of task `g` whose kind and new state match to `time`.
async fn move_events(db: &TestDb, store: &Store, g: &str, kind: &str, to: Option<&str>, time: &str) {
    let filter = executor::store::EventFilter { task_gid: Some(gid(g)), ..Default::default() };
    let events = store.events(&filter).await.unwrap();
    let mut moved = 0;
    for e in events.iter().filter(|e| e.kind == kind && e.to_state.as_deref() == to) {
        set_time(db, "UPDATE executor_events SET at = $1 WHERE id = $2", at(time), e.id).await;
        moved += 1;
    }
    assert!(moved > 0, "no {kind} event to {to:?} for {g}");
}

async fn add(store: &Store, g: &str) {
    let t = executor::store::NewTask { description: Some(format!("task {g}")), ..Default::default() };
    store.upsert_task(&gid(g), &t, Actor::Cli).await.unwrap();
}

/// An approved task with its run moved on to `pr`.
async fn run_at_pr(store: &Store, g: &str) -> i64 {
    add(store, g).await;
    store.approve_task(&gid(g), true, Actor::Cli).await.unwrap();
    let run = store.create_run_for_task(&gid(g), Actor::Runner).await.unwrap().unwrap().id;
    store
        .set_run_state_if(run, RunState::Queued, RunState::InProgress, None, Actor::Runner, "w")
        .await
        .unwrap();
    store.set_run_state_if(run, RunState::InProgress, RunState::Pr, None, Actor::Runner, "pr").await.unwrap();
    run
}

/// A: added before the window, approved on the 10th, complete on the 11th (twice: it came back to
/// `pr` on a comment). B: added and skipped on the 10th. C: added and approved on the 11th, abandoned
/// on the 12th. D: added on the 12th, still pending. Returns the runs of A and C.
async fn history(db: &TestDb, store: &Store) -> (i64, i64) {
    let a = run_at_pr(store, "A").await;
    store.complete_run_if(a, RunState::Pr, None, Actor::Runner, "green", &[]).await.unwrap();
    store
        .set_run_state_if(a, RunState::Complete, RunState::Pr, None, Actor::Runner, "comment")
        .await
        .unwrap();
    store.complete_run_if(a, RunState::Pr, None, Actor::Runner, "green", &[]).await.unwrap();
    add(store, "B").await;
    store.set_task_status(&gid("B"), QueueStatus::Skip, Actor::Cli, Some("no")).await.unwrap();
    let c = run_at_pr(store, "C").await;
    store.abandon_run(c, Actor::Cli, "wrong approach").await.unwrap();
    add(store, "D").await;

    move_events(db, store, "A", "task_added", Some("pending"), "2026-11-09T12:00:00Z").await;
    move_events(db, store, "A", "queue_status", Some("approved"), "2026-11-10T09:00:00Z").await;
    set_time(db, "UPDATE executor_runs SET started_at = $1 WHERE id = $2", at("2026-11-10T09:30:00Z"), a)
        .await;
    move_events(db, store, "A", "run_state", Some("pr"), "2026-11-10T12:00:00Z").await;
    move_events(db, store, "A", "run_state", Some("complete"), "2026-11-11T09:00:00Z").await;
    set_time(db, "UPDATE executor_runs SET completed_at = $1 WHERE id = $2", at("2026-11-11T09:00:00Z"), a)
        .await;
    move_events(db, store, "B", "task_added", Some("pending"), "2026-11-10T08:00:00Z").await;
    move_events(db, store, "B", "queue_status", Some("skip"), "2026-11-10T23:59:59Z").await;
    move_events(db, store, "C", "task_added", Some("pending"), "2026-11-11T07:00:00Z").await;
    move_events(db, store, "C", "queue_status", Some("approved"), "2026-11-11T08:00:00Z").await;
    set_time(db, "UPDATE executor_runs SET started_at = $1 WHERE id = $2", at("2026-11-11T08:10:00Z"), c)
        .await;
    move_events(db, store, "C", "run_state", Some("pr"), "2026-11-11T09:00:00Z").await;
    move_events(db, store, "C", "run_state", Some("abandoned"), "2026-11-12T10:00:00Z").await;
    move_events(db, store, "D", "task_added", Some("pending"), "2026-11-12T00:00:00Z").await;
    // Everything else the operations wrote (queued, in_progress) happened on the 10th.
    for g in ["A", "C"] {
        move_events(db, store, g, "run_state", Some("in_progress"), "2026-11-10T10:00:00Z").await;
    }
    (a, c)
}

async fn tasks_in_and_out_are_counted_per_utc_day(db: TestDb) {
    let store = db.open().await;
    history(&db, &store).await;
    let flows = store.day_flows(at("2026-11-10T00:00:00Z")).await.unwrap();
    let f = |d: &str, intake, approved, skipped, completed, abandoned| DayFlow {
        day: day(d),
        intake,
        skipped,
        approved,
        completed,
        abandoned,
    };
    assert_eq!(
        flows,
        [
            // A's intake on the 9th is before the window; B's skip a second before midnight is the 10th's.
            f("2026-11-10", 1, 1, 1, 0, 0),
            // A completed twice that day: one pull request.
            f("2026-11-11", 1, 1, 0, 1, 0),
            f("2026-11-12", 1, 0, 0, 0, 1),
        ]
    );
    let later = store.day_flows(at("2026-11-12T00:00:00Z")).await.unwrap();
    assert_eq!(later, [f("2026-11-12", 1, 0, 0, 0, 1)], "the window starts where asked");
    store.close().await;
}

async fn cost_is_summed_per_day_of_each_sessions_start(db: TestDb) {
    let store = db.open().await;
    let (a, c) = history(&db, &store).await;
    let worker = |run: i64, cost: f64, started: &'static str| {
        let (store, db) = (store.clone(), &db);
        async move {
            let s = store
                .begin_worker_session(run, WorkerKind::Queued, "claude", "h", &SessionStart::default())
                .await
                .unwrap()
                .unwrap();
            let end = WorkerEnd { cost_usd: cost, ..WorkerEnd::new(EndReason::Finished) };
            store.end_worker_session(s.id, None, &end).await.unwrap();
            set_time(
                db,
                "UPDATE executor_worker_sessions SET started_at = $1 WHERE id = $2",
                at(started),
                s.id,
            )
            .await;
        }
    };
    worker(a, 1.25, "2026-11-10T10:00:00Z").await;
    worker(a, 0.75, "2026-11-10T23:00:00Z").await;
    worker(c, 2.0, "2026-11-11T09:00:00Z").await;
    worker(c, 100.0, "2026-11-01T09:00:00Z").await; // before the window
    let triage = store.begin_analysis_session(&gid("D"), "claude", "h").await.unwrap();
    let end = AnalysisEnd {
        reason: Some(EndReason::Finished),
        session_id: None,
        cost_usd: 0.5,
        input_tokens: 0,
        output_tokens: 0,
        result_error: None,
    };
    store.end_analysis_session(triage, &end).await.unwrap();
    let sql = "UPDATE executor_analysis_sessions SET started_at = $1 WHERE id = $2";
    set_time(&db, sql, at("2026-11-11T01:00:00Z"), triage).await;

    let costs = store.day_costs(at("2026-11-10T00:00:00Z")).await.unwrap();
    assert_eq!(
        costs,
        [
            DayCost { day: day("2026-11-10"), workers_usd: 2.0, triage_usd: 0.0 },
            DayCost { day: day("2026-11-11"), workers_usd: 2.0, triage_usd: 0.5 },
        ]
    );
    store.close().await;
}

async fn lead_times_run_from_the_tasks_approval(db: TestDb) {
    let store = db.open().await;
    let (a, c) = history(&db, &store).await;
    let leads = store.run_leads(at("2026-11-10T00:00:00Z")).await.unwrap();
    assert_eq!(leads.len(), 2, "{leads:?}");
    assert_eq!(
        (leads[0].run_id, leads[0].approved_at, leads[0].pr_at, leads[0].completed_at),
        (a, at("2026-11-10T09:00:00Z"), Some(at("2026-11-10T12:00:00Z")), Some(at("2026-11-11T09:00:00Z")))
    );
    assert_eq!(
        (leads[1].run_id, leads[1].approved_at, leads[1].pr_at, leads[1].completed_at),
        (c, at("2026-11-11T08:00:00Z"), Some(at("2026-11-11T09:00:00Z")), None),
        "an abandoned run has a pull request time but no completion"
    );
    let later = store.run_leads(at("2026-11-12T00:00:00Z")).await.unwrap();
    assert!(later.is_empty(), "no run reached pr or complete on the 12th: {later:?}");
    store.close().await;
}

/// Issue 34 item 5: a run counts as landed by when its merge was first seen (kept, however often it is
/// recorded again), and an abandoned one by its abandonment; with the approval it is measured from.
async fn runs_that_ended_are_their_merge_or_their_abandonment(db: TestDb) {
    let store = db.open().await;
    let (a, c) = history(&db, &store).await;
    store.set_merged_at(a, None, at("2026-11-11T15:00:00Z")).await.unwrap();
    store.set_merged_at(a, None, at("2026-11-12T15:00:00Z")).await.unwrap();
    let ended = store.run_outcomes(at("2026-11-10T00:00:00Z")).await.unwrap();
    let seen: Vec<_> = ended.iter().map(|r| (r.run_id, r.merged_at, r.approved_at)).collect();
    assert_eq!(
        seen,
        [
            (a, Some(at("2026-11-11T15:00:00Z")), Some(at("2026-11-10T09:00:00Z"))),
            (c, None, Some(at("2026-11-11T08:00:00Z"))),
        ],
        "the first merge time is kept"
    );
    assert_eq!((ended[0].reviews, ended[0].ci_attempts, ended[0].agent.clone()), (0, 0, None));
    let later = store.run_outcomes(at("2026-11-12T12:00:00Z")).await.unwrap();
    assert!(later.is_empty(), "merged on the 11th, abandoned at 10:00 on the 12th: {later:?}");
    store.close().await;
}

async fn worker_ends_are_counted_by_kind_and_reason(db: TestDb) {
    let store = db.open().await;
    let (a, c) = history(&db, &store).await;
    let session = |run: i64, kind: WorkerKind, reason: Option<EndReason>| {
        let store = store.clone();
        async move {
            let s = store
                .begin_worker_session(run, kind, "claude", "h", &SessionStart::default())
                .await
                .unwrap()
                .unwrap();
            if let Some(r) = reason {
                store.end_worker_session(s.id, None, &WorkerEnd::new(r)).await.unwrap();
            }
        }
    };
    session(a, WorkerKind::Queued, Some(EndReason::Finished)).await;
    session(a, WorkerKind::FixCi, Some(EndReason::IdleTimeout)).await;
    session(a, WorkerKind::FixCi, Some(EndReason::Finished)).await;
    session(c, WorkerKind::Queued, Some(EndReason::Finished)).await;
    session(c, WorkerKind::Queued, None).await; // live: not counted
    let ends = store.worker_ends(at("2026-11-10T00:00:00Z")).await.unwrap();
    let e = |kind: &str, reason: &str, count| WorkerEnds {
        kind: kind.into(),
        end_reason: reason.into(),
        count,
        ..Default::default()
    };
    assert_eq!(
        ends,
        [e("fix_ci", "finished", 1), e("fix_ci", "idle_timeout", 1), e("queued", "finished", 2)]
    );
    let future = store.worker_ends(Utc::now() + chrono::Duration::days(1)).await.unwrap();
    assert!(future.is_empty(), "sessions started before the window are not counted");
    store.close().await;
}

/// Issue 35, item 8: what a finished worker came to, from the stored facts the runner judges by — where
/// the next worker started (or the run's head after the last), and a review's verdict.
async fn finished_workers_that_changed_nothing_or_failed_a_review_say_so(db: TestDb) {
    let store = db.open().await;
    let run = run_at_pr(&store, "NP").await;
    let worker = |kind: WorkerKind, start: &str, verdict: Option<ReviewVerdict>| {
        let store = store.clone();
        let start = SessionStart { start_sha: Some(start.to_string()), ..Default::default() };
        async move {
            let s = store.begin_worker_session(run, kind, "claude", "h", &start).await.unwrap().unwrap();
            let end = WorkerEnd { verdict, ..WorkerEnd::new(EndReason::Finished) };
            store.end_worker_session(s.id, None, &end).await.unwrap();
        }
    };
    worker(WorkerKind::Queued, "h1", None).await; // the next started at h2: it committed
    worker(WorkerKind::FixCi, "h2", None).await; // the next started at h2 too: nothing
    worker(WorkerKind::PrReview, "h2", Some(ReviewVerdict::Fail)).await;
    worker(WorkerKind::FixCi, "h2", None).await; // the last, and the run's head is still h2
    store.set_run_head(run, None, "h2").await.unwrap();
    let ends = store.worker_ends(at("2026-11-10T00:00:00Z")).await.unwrap();
    let e = |kind: &str, verdict: Option<&str>, no_progress, count| WorkerEnds {
        kind: kind.into(),
        end_reason: "finished".into(),
        verdict: verdict.map(String::from),
        no_progress,
        count,
    };
    assert_eq!(
        ends,
        [e("fix_ci", None, true, 2), e("pr_review", Some("fail"), false, 1), e("queued", None, false, 1)]
    );
    store.close().await;
}

async fn github_usage_keeps_the_fewest_points_left_per_hour(db: TestDb) {
    let store = db.open().await;
    let eleven = at("2026-11-10T11:00:00Z");
    let noon = at("2026-11-10T12:00:00Z");
    store.record_github_usage(GITHUB_GRAPHQL, eleven, 4200, None).await.unwrap();
    store.record_github_usage(GITHUB_GRAPHQL, eleven, 3900, Some(5000)).await.unwrap();
    store.record_github_usage(GITHUB_GRAPHQL, eleven, 4100, None).await.unwrap(); // a later answer, more left
    store.record_github_usage(GITHUB_GRAPHQL, noon, 4990, Some(5000)).await.unwrap();
    store.record_github_usage("core", noon, 10, None).await.unwrap();
    let hours = store.github_usage(GITHUB_GRAPHQL, at("2026-11-10T10:30:00Z")).await.unwrap();
    let seen: Vec<_> = hours.iter().map(|h| (h.reset_at, h.lowest_remaining, h.hour_limit)).collect();
    assert_eq!(seen, [(eleven, 3900, Some(5000)), (noon, 4990, Some(5000))]);
    let recent = store.github_usage(GITHUB_GRAPHQL, eleven).await.unwrap();
    assert_eq!(recent.len(), 1, "a window that ended at `since` is over");
    store.close().await;
}

/// A worker of `kind` on `run` that ended having spent `cost`.
async fn worker(store: &Store, run: i64, kind: WorkerKind, cost: f64) {
    let s = store
        .begin_worker_session(run, kind, "claude", "h", &SessionStart::default())
        .await
        .unwrap()
        .unwrap();
    let end = WorkerEnd { cost_usd: cost, ..WorkerEnd::new(EndReason::Finished) };
    store.end_worker_session(s.id, None, &end).await.unwrap();
}

/// Issue 34 item 5: a revert is recorded once and only on a merged run; the runs still to look at page
/// by id; the insights read a run's revert with its task's source and labels and its worker kinds.
async fn a_revert_is_recorded_once_and_read_with_the_runs_source_labels_and_worker_kinds(db: TestDb) {
    let store = db.open().await;
    let (a, c) = history(&db, &store).await;
    let raw = serde_json::json!({"labels": [{"name": "small"}, {"name": "bug"}], "number": 4});
    let task = executor::store::NewTask {
        description: Some("task E".into()),
        source: Some("issues".into()),
        raw: Some(raw),
        ..Default::default()
    };
    store.upsert_task(&gid("E"), &task, Actor::Cli).await.unwrap();
    store.approve_task(&gid("E"), true, Actor::Cli).await.unwrap();
    let e = store.create_run_for_task(&gid("E"), Actor::Runner).await.unwrap().unwrap().id;
    worker(&store, e, WorkerKind::Queued, 1.0).await;
    worker(&store, e, WorkerKind::FixCi, 0.5).await;
    worker(&store, e, WorkerKind::FixCi, 0.5).await;
    store.set_merged_at(a, None, at("2026-11-11T15:00:00Z")).await.unwrap();
    store.set_merged_at(e, None, Utc::now()).await.unwrap();

    let since = at("2026-11-10T00:00:00Z");
    let ids = |runs: Vec<executor::store::MergedRun>| runs.iter().map(|r| r.run_id).collect::<Vec<_>>();
    assert_eq!(ids(store.merged_runs_not_reverted(since, 0, 10).await.unwrap()), [a, e]);
    assert_eq!(ids(store.merged_runs_not_reverted(since, 0, 1).await.unwrap()), [a], "a page");
    assert_eq!(ids(store.merged_runs_not_reverted(since, a, 1).await.unwrap()), [e], "the next page");
    assert!(!store.set_reverted(c, "abc1234").await.unwrap(), "an abandoned run was never merged");
    assert!(store.set_reverted(e, "abc1234").await.unwrap());
    assert!(!store.set_reverted(e, "def5678").await.unwrap(), "the first finding is kept");
    assert_eq!(ids(store.merged_runs_not_reverted(since, 0, 10).await.unwrap()), [a]);

    let outcomes = store.run_outcomes(since).await.unwrap();
    let of = |run: i64| outcomes.iter().find(|o| o.run_id == run).unwrap();
    let (oe, oa) = (of(e), of(a));
    assert!(oe.reverted_at.is_some() && oa.reverted_at.is_none());
    assert_eq!(oe.source.as_deref(), Some("issues"));
    assert_eq!(oe.labels, ["bug", "small"]);
    assert_eq!(oe.kinds, ["fix_ci", "queued"], "each kind once");
    assert_eq!(oe.cost_usd, 2.0);
    assert_eq!((oa.source.as_deref(), oa.labels.len(), oa.kinds.len()), (None, 0, 0));
    store.close().await;
}

/// Issue 34 item 5: the runs given up in the window above the threshold, costliest first, with the
/// abandonment's reason and the last decision exactly as recorded.
async fn expensive_failures_are_the_costly_runs_given_up_with_their_reason_as_stored(db: TestDb) {
    let store = db.open().await;
    let (a, c) = history(&db, &store).await;
    worker(&store, a, WorkerKind::Queued, 9.0).await; // complete, however costly: no failure
    worker(&store, c, WorkerKind::Queued, 7.5).await;
    store.record_decision(c, None, "CI failed: waiting for a human").await.unwrap();
    let since = at("2026-11-10T00:00:00Z");
    let failures = store.expensive_failures(since, 5.0, 10).await.unwrap();
    let seen: Vec<_> = failures
        .iter()
        .map(|f| (f.run_id, f.cost_usd, f.reason.as_deref(), f.last_decision.as_deref(), f.abandoned_at))
        .collect();
    assert_eq!(
        seen,
        [(
            c,
            7.5,
            Some("abandoned by a human: wrong approach"),
            Some("CI failed: waiting for a human"),
            Some(at("2026-11-12T10:00:00Z"))
        )]
    );
    assert_eq!((failures[0].task_gid.as_str(), failures[0].task.as_deref()), ("C", Some("task C")));
    assert!(store.expensive_failures(since, 7.5, 10).await.unwrap().is_empty(), "more than the threshold");
    let later = store.expensive_failures(at("2026-11-13T00:00:00Z"), 5.0, 10).await.unwrap();
    assert!(later.is_empty(), "abandoned before the window");
    store.close().await;
}
