//! The store conformance suite: every test runs on SQLite and on PostgreSQL.

mod common;

use chrono::Duration;
use common::TestDb;
use executor::domain::{Actor, QueueStatus, RunState, TaskGid};
use executor::domain::{CiTrigger, EndReason, ReviewVerdict, WorkerKind};
use executor::store::{
    Answer, EventFilter, KNOWN_VERSION, NewComment, NewTask, SessionStart, Store, StoreError, TaskFilter,
    Upserted, WorkerEnd,
};

on_both_databases!(
    migrations_apply_once_and_record_the_version,
    a_newer_database_is_refused_and_left_untouched,
    adding_a_known_gid_updates_it_without_losing_status_or_history,
    queue_status_changes_are_checked_and_recorded,
    a_run_is_created_only_for_an_approved_task_and_only_once,
    run_state_changes_are_checked_conditional_and_recorded,
    status_counts_and_listings_filter,
    a_run_has_at_most_one_live_worker_and_costs_add_up,
    local_pull_requests_comments_and_checks_round_trip,
    notices_are_recorded_once_per_key_and_the_runner_memory_round_trips,
    a_review_verdict_is_written_with_the_end_for_the_head_the_review_started_at,
    usage_is_recorded_as_it_comes_and_survives_an_end_that_reports_less,
    only_the_tasks_own_work_is_the_session_to_resume,
    an_abandoned_run_frees_its_lease,
    undelivered_notices_stay_in_the_outbox_until_delivered_or_given_up,
    what_executor_wrote_on_a_forge_is_remembered,
    a_workers_replies_are_an_outbox_once_per_offered_comment,
    a_forges_memory_is_kept_by_repo_and_key_across_stores,
);

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).unwrap()
}

fn task(desc: &str) -> NewTask {
    NewTask { source: Some("my_tasks_inbox".into()), description: Some(desc.into()), ..Default::default() }
}

async fn approved(store: &Store, g: &str) -> TaskGid {
    let g = gid(g);
    store.upsert_task(&g, &task("work"), Actor::Cli).await.unwrap();
    store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Analyzer, None).await.unwrap();
    store.set_task_status(&g, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
    g
}

async fn migrations_apply_once_and_record_the_version(db: TestDb) {
    let store = Store::open(&db.url).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), 0);
    assert!(matches!(store.check_schema().await, Err(StoreError::NeedsMigration { found: 0, .. })));
    let report = store.migrate().await.unwrap();
    assert_eq!((report.from, report.to), (0, KNOWN_VERSION));
    // Every migration, the newest last (the versions need not be contiguous: 0008 is another branch's).
    assert_eq!(report.applied.last(), Some(&KNOWN_VERSION));
    assert_eq!(report.applied, {
        let mut sorted = report.applied.clone();
        sorted.dedup();
        sorted
    });
    let again = store.migrate().await.unwrap();
    assert!(again.applied.is_empty());
    store.check_schema().await.unwrap();
}

async fn a_newer_database_is_refused_and_left_untouched(db: TestDb) {
    let store = db.open().await;
    let g = gid("1207");
    store.upsert_task(&g, &task("x"), Actor::Cli).await.unwrap();
    // Simulate a database written by a future executor.
    store.force_schema_version_for_tests(KNOWN_VERSION + 5).await.unwrap();
    let err = store.migrate().await.unwrap_err();
    assert!(matches!(err, StoreError::TooNew { .. }), "{err}");
    assert!(err.to_string().contains("upgrade executor"), "{err}");
    assert!(matches!(store.check_schema().await, Err(StoreError::TooNew { .. })));
    assert_eq!(store.schema_version().await.unwrap(), KNOWN_VERSION + 5);
    assert_eq!(store.task(&g).await.unwrap().description.as_deref(), Some("x"));
}

async fn adding_a_known_gid_updates_it_without_losing_status_or_history(db: TestDb) {
    let store = db.open().await;
    let g = gid("1207");
    let (t, what) = store.upsert_task(&g, &task("first"), Actor::Cli).await.unwrap();
    assert_eq!((what, t.status), (Upserted::Added, QueueStatus::Pending));
    store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Analyzer, Some("feasible")).await.unwrap();

    let (t, what) = store
        .upsert_task(&g, &NewTask { description: Some("second".into()), ..Default::default() }, Actor::Cli)
        .await
        .unwrap();
    assert_eq!(what, Upserted::Updated);
    assert_eq!(t.status, QueueStatus::AwaitingGo, "status kept");
    assert_eq!(t.description.as_deref(), Some("second"));
    assert_eq!(t.source.as_deref(), Some("my_tasks_inbox"), "a field not given is kept");

    let (_, what) = store.upsert_task(&g, &task("second"), Actor::Cli).await.unwrap();
    assert_eq!(what, Upserted::Unchanged);

    let kinds: Vec<String> = store
        .events(&EventFilter { task_gid: Some(g), ..Default::default() })
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["task_added", "queue_status", "task_updated"]);
}

async fn queue_status_changes_are_checked_and_recorded(db: TestDb) {
    let store = db.open().await;
    let g = gid("A-1");
    store.upsert_task(&g, &task("t"), Actor::Cli).await.unwrap();
    let err = store.set_task_status(&g, QueueStatus::Approved, Actor::Cli, None).await.unwrap_err();
    assert!(err.to_string().contains("from pending it can go to: for_review, awaiting_go, skip"), "{err}");
    assert_eq!(store.task(&g).await.unwrap().status, QueueStatus::Pending, "nothing written");

    store.set_task_status(&g, QueueStatus::Skip, Actor::Analyzer, Some("figma link")).await.unwrap();
    store.set_task_status(&g, QueueStatus::Pending, Actor::Cli, Some("re-analyze")).await.unwrap();
    let events =
        store.events(&EventFilter { task_gid: Some(g.clone()), ..Default::default() }).await.unwrap();
    let moves: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "queue_status")
        .map(|e| (e.actor.as_str(), e.from_state.as_deref(), e.to_state.as_deref(), e.reason.as_deref()))
        .collect();
    assert_eq!(
        moves,
        [
            ("analyzer", Some("pending"), Some("skip"), Some("figma link")),
            ("cli", Some("skip"), Some("pending"), Some("re-analyze")),
        ]
    );
    let missing = store.set_task_status(&gid("nope"), QueueStatus::Skip, Actor::Cli, None).await.unwrap_err();
    assert_eq!(missing.to_string(), "no task with gid 'nope' (see `executor queue list`)");
}

async fn a_run_is_created_only_for_an_approved_task_and_only_once(db: TestDb) {
    let store = db.open().await;
    let pending = gid("p1");
    store.upsert_task(&pending, &task("t"), Actor::Cli).await.unwrap();
    assert!(store.create_run_for_task(&pending, Actor::Runner).await.unwrap().is_none());

    let g = approved(&store, "a1").await;
    assert_eq!(store.approved_tasks_without_run(10).await.unwrap(), std::slice::from_ref(&g));
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().expect("a run");
    assert_eq!((run.state, &run.task_gid), (RunState::Queued, &g));
    assert!(store.create_run_for_task(&g, Actor::Runner).await.unwrap().is_none());
    assert_eq!(store.task(&g).await.unwrap().executor_run_id, Some(run.id));
    assert!(store.approved_tasks_without_run(10).await.unwrap().is_empty());
}

async fn run_state_changes_are_checked_conditional_and_recorded(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "r1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    let id = run.id;

    let err = store
        .set_run_state_if(id, RunState::Queued, RunState::Pr, None, Actor::Runner, "x")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Illegal(_)), "{err}");
    let err = store
        .set_run_state_if(id, RunState::InProgress, RunState::Pr, None, Actor::Runner, "stale")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err}");
    assert!(err.to_string().contains("expected in_progress, found queued"), "{err}");

    assert!(store.claim_run(id, "host-a", std::time::Duration::from_secs(300)).await.unwrap());
    let err = store
        .set_run_state_if(id, RunState::Queued, RunState::InProgress, Some("host-b"), Actor::Runner, "x")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost(r) if r == id), "{err}");

    store
        .set_run_state_if(id, RunState::Queued, RunState::InProgress, Some("host-a"), Actor::Runner, "worker")
        .await
        .unwrap();
    store
        .set_run_state_if(id, RunState::InProgress, RunState::Pr, None, Actor::Runner, "pr opened")
        .await
        .unwrap();
    let done = store
        .set_run_state_if(id, RunState::Pr, RunState::Complete, None, Actor::Runner, "green")
        .await
        .unwrap();
    assert!(done.completed_at.is_some());
    assert_eq!(store.task(&g).await.unwrap().status, QueueStatus::Done);
    let back = store
        .set_run_state_if(id, RunState::Complete, RunState::Pr, None, Actor::Runner, "comment")
        .await
        .unwrap();
    assert!(back.completed_at.is_none());
    store
        .set_run_state_if(id, RunState::Pr, RunState::Complete, None, Actor::Runner, "green again")
        .await
        .unwrap();
    assert_eq!(store.task(&g).await.unwrap().status, QueueStatus::Done);

    let trail: Vec<_> = store
        .events(&EventFilter { run_id: Some(id), ..Default::default() })
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            format!("{}:{}->{}", e.kind, e.from_state.unwrap_or_default(), e.to_state.unwrap_or_default())
        })
        .collect();
    assert_eq!(
        trail,
        [
            "run_created:->queued",
            "run_state:queued->in_progress",
            "run_state:in_progress->pr",
            "run_state:pr->complete",
            "queue_status:approved->done",
            "run_state:complete->pr",
            "run_state:pr->complete",
        ]
    );
}

async fn status_counts_and_listings_filter(db: TestDb) {
    let store = db.open().await;
    approved(&store, "s1").await;
    let g2 = gid("s2");
    store
        .upsert_task(&g2, &NewTask { source: Some("user_reports".into()), ..Default::default() }, Actor::Cli)
        .await
        .unwrap();
    let counts = store.status_counts().await.unwrap();
    assert_eq!(counts.queue, [("approved".to_string(), 1), ("pending".to_string(), 1)]);
    let pending = store
        .list_tasks(&TaskFilter { status: Some(QueueStatus::Pending), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].task_gid, g2);
    let by_source = store
        .list_tasks(&TaskFilter { source: Some("user_reports".into()), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(by_source.len(), 1);
}

async fn a_run_has_at_most_one_live_worker_and_costs_add_up(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "w1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    let s1 = store
        .begin_worker_session(run.id, WorkerKind::Queued, "claude", "host", &Default::default())
        .await
        .unwrap()
        .unwrap();
    assert!(
        store
            .begin_worker_session(run.id, WorkerKind::Queued, "claude", "host", &Default::default())
            .await
            .unwrap()
            .is_none(),
        "a second live worker for the same run is refused by the database"
    );
    store.set_worker_process(s1.id, None, 4242, Some(99), "/tmp/out", "/tmp/log.md").await.unwrap();
    store.set_worker_agent_session(s1.id, None, "sess-1").await.unwrap();
    let r = store.run(run.id).await.unwrap();
    assert_eq!((r.worker_pid, r.worker_session_id.as_deref()), (Some(4242), Some("sess-1")));
    assert_eq!(store.live_worker_sessions().await.unwrap().len(), 1);

    let end = WorkerEnd {
        cost_usd: 0.5,
        input_tokens: 10,
        output_tokens: 5,
        ..WorkerEnd::new(EndReason::IdleTimeout)
    };
    assert!(store.end_worker_session(s1.id, None, &end).await.unwrap());
    assert!(!store.end_worker_session(s1.id, None, &end).await.unwrap(), "closing twice changes nothing");
    let s2 = store
        .begin_worker_session(run.id, WorkerKind::InProgress, "claude", "host", &Default::default())
        .await
        .unwrap()
        .unwrap();
    let end2 = WorkerEnd {
        cost_usd: 0.25,
        input_tokens: 1,
        output_tokens: 1,
        ..WorkerEnd::new(EndReason::Interrupted)
    };
    store.end_worker_session(s2.id, None, &end2).await.unwrap();
    let r = store.run(run.id).await.unwrap();
    assert_eq!(r.worker_pid, None);
    assert_eq!(r.worker_stuck_count, 1);
    assert!((r.cost_usd - 0.75).abs() < 1e-9);
    assert_eq!((r.input_tokens, r.output_tokens), (11, 6));
    let spent = store.spent_since(chrono::Utc::now() - Duration::days(1)).await.unwrap();
    assert!((spent - 0.75).abs() < 1e-9);
    assert!(store.live_worker_sessions().await.unwrap().is_empty());
}

async fn local_pull_requests_comments_and_checks_round_trip(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "f1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    let pr = store.open_local_pr(run.id, None, "executor/f1-x", "main").await.unwrap();
    assert_eq!(
        store.open_local_pr(run.id, None, "executor/f1-x", "main").await.unwrap().id,
        pr.id,
        "idempotent"
    );
    assert!(pr.draft);
    store.set_local_pr_labels(pr.id, &["executor".into()]).await.unwrap();
    let c = store
        .add_local_comment(
            pr.id,
            &NewComment { author: "alex", body: "rename it", line: Some(3), ..Default::default() },
        )
        .await
        .unwrap();
    store
        .add_local_comment(
            pr.id,
            &NewComment {
                author: "agent",
                body: "[ACKNOWLEDGED: renamed]",
                in_reply_to: Some(c),
                by_agent: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let comments = store.local_comments(pr.id).await.unwrap();
    assert_eq!(comments.len(), 2);
    assert_eq!((comments[1].in_reply_to, comments[1].by_agent), (Some(c), true));
    let check = store.start_local_check(pr.id, "abc", "ci", "/tmp/ci", "h1").await.unwrap();
    assert_eq!(store.pending_local_checks("h1").await.unwrap().len(), 1);
    assert!(
        store.pending_local_checks("h2").await.unwrap().is_empty(),
        "another host's CI is not polled here"
    );
    assert!(store.finish_local_check(check, "failure", "boom").await.unwrap());
    assert!(!store.finish_local_check(check, "success", "").await.unwrap(), "finished once");
    let checks = store.local_checks(pr.id).await.unwrap();
    assert_eq!((checks[0].status.as_str(), checks[0].output_tail.as_deref()), ("failure", Some("boom")));
    assert_eq!(store.local_pr_for_run(run.id).await.unwrap().unwrap().labels, ["executor"]);
}

async fn notices_are_recorded_once_per_key_and_the_runner_memory_round_trips(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "n1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    let first = store
        .add_notice(Some(run.id), Some("n1"), "completed", Some("completed:abc"), "@alex done")
        .await
        .unwrap();
    assert!(first.is_some());
    let again = store
        .add_notice(Some(run.id), Some("n1"), "completed", Some("completed:abc"), "@alex done")
        .await
        .unwrap();
    assert!(again.is_none(), "a key is told once");
    store.mark_notice_delivered(first.unwrap(), "local pull request comment 1").await.unwrap();
    assert_eq!(store.notice_keys(run.id).await.unwrap(), ["completed:abc"]);
    let notices = store.notices(Some(run.id)).await.unwrap();
    assert_eq!(notices[0].delivery.as_deref(), Some("local pull request comment 1"));

    store.record_decision(run.id, None, "CI is running").await.unwrap();
    store.set_ci_triggered(run.id, None, "abc", CiTrigger::NothingToRerun).await.unwrap();
    store.set_last_snapshot(run.id, None, "{}").await.unwrap();
    store.set_budget_stop(run.id, None, Some(executor::domain::BudgetCap::Run)).await.unwrap();
    let memory = store.run_memory(run.id).await.unwrap();
    assert_eq!(memory.last_decision.as_deref(), Some("CI is running"));
    assert_eq!(memory.ci_triggered_sha.as_deref(), Some("abc"));
    assert_eq!(memory.ci_trigger, Some(CiTrigger::NothingToRerun), "what the trigger did, as recorded");
    assert!(memory.budget_stopped && memory.last_decision_at.is_some());
    store.set_run_review(run.id, None, "pass", "abc").await.unwrap();
    store.set_ci_attempts(run.id, None, 2).await.unwrap();
    let r = store.run(run.id).await.unwrap();
    assert_eq!(
        (r.review_verdict.map(|v| v.as_str()), r.review_sha.as_deref(), r.ci_attempts),
        (Some("pass"), Some("abc"), 2)
    );
    let resumed = store.resume_run_budget(run.id, Actor::Cli).await.unwrap();
    assert!(!resumed.budget_stopped);
    // Issue 35, item 6: which cap is stored as such, and a stop by the day's cap is refused a resume
    // (which would say it worked and change nothing).
    store.set_budget_stop(run.id, None, Some(executor::domain::BudgetCap::Day)).await.unwrap();
    let memory = store.run_memory(run.id).await.unwrap();
    assert_eq!((memory.budget_stopped, memory.budget_cap), (true, Some(executor::domain::BudgetCap::Day)));
    let refused = store.resume_run_budget(run.id, Actor::Cli).await.unwrap_err().to_string();
    assert!(refused.contains("daily cap (budget.per_day_usd)"), "{refused}");
    assert!(store.run_memory(run.id).await.unwrap().budget_stopped, "still stopped: {refused}");
    store.set_budget_stop(run.id, None, None).await.unwrap();
    assert_eq!(store.run_memory(run.id).await.unwrap().budget_cap, None);
}

async fn a_review_verdict_is_written_with_the_end_for_the_head_the_review_started_at(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "v1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    store.set_run_head(run.id, None, "old").await.unwrap();
    let start = SessionStart { start_sha: Some("old".into()), resumed_session: None };
    let s = store
        .begin_worker_session(run.id, WorkerKind::PrReview, "command", "h", &start)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.start_sha.as_deref(), Some("old"));
    // Someone pushes while the review runs: the run's head moves on.
    store.set_run_head(run.id, None, "new").await.unwrap();
    let end = WorkerEnd { verdict: Some(ReviewVerdict::Pass), ..WorkerEnd::new(EndReason::Finished) };
    store.end_worker_session(s.id, None, &end).await.unwrap();
    let r = store.run(run.id).await.unwrap();
    assert_eq!((r.review_verdict, r.review_sha.as_deref()), (Some(ReviewVerdict::Pass), Some("old")));
    assert_eq!(r.head_sha.as_deref(), Some("new"), "the pass is not for the new head");
    let s = store.worker_session(s.id).await.unwrap();
    assert_eq!((s.verdict, s.end_reason), (Some(ReviewVerdict::Pass), Some(EndReason::Finished)));
}

async fn usage_is_recorded_as_it_comes_and_survives_an_end_that_reports_less(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "u1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    let s = store
        .begin_worker_session(run.id, WorkerKind::Queued, "claude", "h", &Default::default())
        .await
        .unwrap()
        .unwrap();
    store.set_worker_usage(s.id, None, Some(0.25), 1000, 200, true).await.unwrap();
    store.set_worker_usage(s.id, None, None, 1500, 300, false).await.unwrap();
    let spent = store.spent_since(chrono::Utc::now() - Duration::days(1)).await.unwrap();
    assert!((spent - 0.25).abs() < 1e-9, "the daily budget sees a live worker's spend: {spent}");
    let live = store.worker_session(s.id).await.unwrap();
    assert_eq!((live.input_tokens, live.output_tokens, live.cost_estimated), (1500, 300, true));
    // Killed before its final report: the end says $0, the spend recorded so far stands.
    store.end_worker_session(s.id, None, &WorkerEnd::new(EndReason::HardTimeout)).await.unwrap();
    let r = store.run(run.id).await.unwrap();
    assert!((r.cost_usd - 0.25).abs() < 1e-9, "{}", r.cost_usd);
    assert_eq!((r.input_tokens, r.output_tokens, r.worker_stuck_count), (1500, 300, 1));
    assert!(store.run(run.id).await.unwrap().cost_estimated);
    let ended = store.worker_session(s.id).await.unwrap();
    assert!(ended.cost_estimated && (ended.cost_usd - 0.25).abs() < 1e-9);
    // Usage arriving after the end (a late update) changes nothing.
    store.set_worker_usage(s.id, None, Some(9.0), 1, 1, false).await.unwrap();
    assert!((store.worker_session(s.id).await.unwrap().cost_usd - 0.25).abs() < 1e-9);

    // The agent's own final total replaces a higher running estimate: the estimate was only a guess.
    let s = store
        .begin_worker_session(run.id, WorkerKind::InProgress, "claude", "h", &Default::default())
        .await
        .unwrap()
        .unwrap();
    store.set_worker_usage(s.id, None, Some(0.40), 4000, 800, true).await.unwrap();
    let end = WorkerEnd {
        cost_usd: 0.30,
        input_tokens: 3900,
        output_tokens: 790,
        ..WorkerEnd::new(EndReason::Finished)
    };
    store.end_worker_session(s.id, None, &end).await.unwrap();
    let ended = store.worker_session(s.id).await.unwrap();
    assert!(!ended.cost_estimated && (ended.cost_usd - 0.30).abs() < 1e-9, "{ended:?}");
    assert_eq!((ended.input_tokens, ended.output_tokens), (3900, 790));
    let r = store.run(run.id).await.unwrap();
    assert!((r.cost_usd - 0.55).abs() < 1e-9, "{}", r.cost_usd);
}

async fn only_the_tasks_own_work_is_the_session_to_resume(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "r1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    let work = store
        .begin_worker_session(run.id, WorkerKind::Queued, "claude", "h", &Default::default())
        .await
        .unwrap()
        .unwrap();
    store.set_worker_agent_session(work.id, None, "work-1").await.unwrap();
    store.end_worker_session(work.id, None, &WorkerEnd::new(EndReason::Interrupted)).await.unwrap();
    let start = SessionStart { start_sha: None, resumed_session: Some("work-1".into()) };
    let review = store
        .begin_worker_session(run.id, WorkerKind::PrReview, "claude", "h", &start)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(review.resumed_session.as_deref(), Some("work-1"));
    store.set_worker_agent_session(review.id, None, "review-1").await.unwrap();
    let r = store.run(run.id).await.unwrap();
    assert_eq!(r.worker_session_id.as_deref(), Some("work-1"), "a review's thread is not the run's session");
    assert_eq!(store.worker_session(review.id).await.unwrap().session_id.as_deref(), Some("review-1"));
}

async fn an_abandoned_run_frees_its_lease(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "l1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    assert!(store.claim_run(run.id, "host:1", std::time::Duration::from_secs(300)).await.unwrap());
    let r = store
        .set_run_state_if(
            run.id,
            RunState::Queued,
            RunState::Abandoned,
            Some("host:1"),
            Actor::Runner,
            "gave up",
        )
        .await
        .unwrap();
    assert_eq!((r.lease_owner, r.lease_expires_at), (None, None));
}

async fn undelivered_notices_stay_in_the_outbox_until_delivered_or_given_up(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "o1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    let a = store.add_notice(Some(run.id), Some("o1"), "needs_human", Some("a"), "A").await.unwrap().unwrap();
    let b = store.add_notice(Some(run.id), Some("o1"), "needs_human", Some("b"), "B").await.unwrap().unwrap();
    let ids = |v: Vec<executor::store::Notice>| v.iter().map(|n| n.id).collect::<Vec<_>>();
    assert_eq!(ids(store.unsent_notices(2).await.unwrap()), [a, b], "recorded, not yet sent");
    store.mark_notice_failed(a, "local pull request comment 3", "webhook: failed (refused)").await.unwrap();
    store.mark_notice_delivered(b, "webhook: sent (HTTP 200)").await.unwrap();
    let unsent = store.unsent_notices(2).await.unwrap();
    assert_eq!(ids(unsent.clone()), [a]);
    assert_eq!((unsent[0].attempts, unsent[0].last_error.as_deref()), (1, Some("webhook: failed (refused)")));
    store.mark_notice_failed(a, "", "webhook: failed again").await.unwrap();
    assert!(store.unsent_notices(2).await.unwrap().is_empty(), "given up after 2 attempts");
    assert_eq!(ids(store.undelivered_notices().await.unwrap()), [a], "still visible");
    assert_eq!(store.notice_keys(run.id).await.unwrap(), ["a", "b"], "each key once, sent or not");
}

async fn what_executor_wrote_on_a_forge_is_remembered(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "f1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    let other =
        store.create_run_for_task(&approved(&store, "f2").await, Actor::Runner).await.unwrap().unwrap();
    // Comment ids executor posted: an agent's reply with what it answers, a notice; twice is harmless.
    store.record_agent_comment(run.id, "IC_reply", Some("PRRC_parent")).await.unwrap();
    store.record_agent_comment(run.id, "IC_notice", None).await.unwrap();
    store.record_agent_comment(run.id, "IC_notice", None).await.unwrap();
    store.record_agent_comment(other.id, "IC_elsewhere", None).await.unwrap();
    let mine = store.agent_comments(&[run.id]).await.unwrap();
    assert_eq!(mine.len(), 2);
    assert_eq!(mine["IC_reply"].as_deref(), Some("PRRC_parent"));
    assert_eq!(mine["IC_notice"], None);
    assert_eq!(store.agent_comments(&[run.id, other.id]).await.unwrap().len(), 3);

    // When the branch was last pushed.
    assert_eq!(store.run_memory(run.id).await.unwrap().pushed_at, None);
    let at = executor::store::now();
    store.set_pushed_at(run.id, None, at).await.unwrap();
    assert_eq!(store.run_memory(run.id).await.unwrap().pushed_at, Some(at));

    // A review is posted once: the session remembers it.
    let start = SessionStart { start_sha: Some("h".into()), resumed_session: None };
    let s = store
        .begin_worker_session(run.id, WorkerKind::PrReview, "command", "h", &start)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.review_posted_at, None);
    store.set_review_posted(s.id).await.unwrap();
    assert!(store.worker_session(s.id).await.unwrap().review_posted_at.is_some());
}

/// What a forge remembers (ETags, snapshots, rate-limit blocks) is opaque text by (repo, key), replaced
/// by key, forgotten by key, and seen by another process's store (a cron-started runner, `executor
/// comment`).
async fn a_forges_memory_is_kept_by_repo_and_key_across_stores(db: TestDb) {
    let store = db.open().await;
    assert!(store.forge_memory("app").await.unwrap().is_empty());
    let entry = |k: &str, v: &str| (k.to_string(), v.to_string());
    store
        .remember_in_forge_memory("app", &[entry("etag", "W/\"1\""), entry("pr:7", "{\"n\":7}")])
        .await
        .unwrap();
    store.remember_in_forge_memory("other", &[entry("etag", "W/\"9\"")]).await.unwrap();
    store.remember_in_forge_memory("app", &[entry("etag", "W/\"2\"")]).await.unwrap();
    store.remember_in_forge_memory("app", &[]).await.unwrap();

    let another = db.open().await;
    assert_eq!(
        another.forge_memory("app").await.unwrap(),
        vec![entry("etag", "W/\"2\""), entry("pr:7", "{\"n\":7}")]
    );
    assert_eq!(another.forge_memory_entry("other", "etag").await.unwrap().as_deref(), Some("W/\"9\""));
    assert_eq!(another.forge_memory_entry("app", "missing").await.unwrap(), None);
    another.forget_in_forge_memory("app", &["pr:7".to_string(), "never".to_string()]).await.unwrap();
    assert_eq!(store.forge_memory("app").await.unwrap(), vec![entry("etag", "W/\"2\"")]);
}

/// Another process upgrading the database while a runner's pool holds prepared statements (a column
/// added under them) must not break the runner's reads: rows are read by named columns, never `*`.
#[tokio::test]
async fn a_column_added_under_a_live_pool_breaks_no_read() {
    use sqlx::Connection;
    let db = common::sqlite();
    let store = db.open().await;
    let g = approved(&store, "w1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    let start = SessionStart { start_sha: None, resumed_session: None };
    store.begin_worker_session(run.id, WorkerKind::Queued, "command", "h", &start).await.unwrap().unwrap();
    // Every read prepares (and caches) its statement at today's width.
    for _ in 0..3 {
        store.run(run.id).await.unwrap();
        store.active_runs().await.unwrap();
        store.worker_sessions(run.id).await.unwrap();
        store.task(&g).await.unwrap();
    }
    let mut other = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
    for table in ["executor_runs", "executor_worker_sessions", "executor_queue"] {
        sqlx::raw_sql(&format!("ALTER TABLE {table} ADD COLUMN added_by_a_newer_executor TEXT"))
            .execute(&mut other)
            .await
            .unwrap();
    }
    other.close().await.unwrap();
    for _ in 0..3 {
        assert_eq!(store.run(run.id).await.unwrap().id, run.id);
        assert_eq!(store.active_runs().await.unwrap().len(), 1);
        assert_eq!(store.worker_sessions(run.id).await.unwrap().len(), 1);
        assert_eq!(store.task(&g).await.unwrap().task_gid, g);
    }
}

/// The replies outbox: only offered comments may be answered, once each (the same answer again changes
/// nothing), an answer waits until it is posted (a failed attempt counts, up to the bound; a wait on
/// the rate limit does not), and the live worker's offer is where `executor comment --as-agent` lands.
async fn a_workers_replies_are_an_outbox_once_per_offered_comment(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "r1").await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    let start = SessionStart::default();
    let s =
        store.begin_worker_session(run.id, WorkerKind::FixComments, "command", "h", &start).await.unwrap();
    let s = s.unwrap();
    let offered = vec!["PRRC_1".to_string(), "IC_2".to_string()];
    store.offer_comments(run.id, s.id, &offered).await.unwrap();
    store.offer_comments(run.id, s.id, &offered).await.unwrap();
    assert_eq!(store.offered_comments(s.id).await.unwrap(), offered);
    assert_eq!(store.live_offer(run.id, "PRRC_1").await.unwrap().unwrap().session_id, s.id);
    assert!(store.live_offer(run.id, "PRRC_9").await.unwrap().is_none());

    assert_eq!(store.answer_comment(s.id, "PRRC_1", "[ACKNOWLEDGED: a]").await.unwrap(), Answer::Recorded);
    assert_eq!(store.answer_comment(s.id, "PRRC_1", "[ACKNOWLEDGED: a]").await.unwrap(), Answer::Unchanged);
    assert_eq!(store.answer_comment(s.id, "PRRC_1", "other").await.unwrap(), Answer::AlreadyAnswered);
    assert_eq!(store.answer_comment(s.id, "PRRC_9", "x").await.unwrap(), Answer::NotOffered);
    let pending = store.replies_to_post(run.id, 2).await.unwrap();
    assert_eq!(pending.len(), 1, "only answered comments wait: {pending:?}");
    assert_eq!(pending[0].body.as_deref(), Some("[ACKNOWLEDGED: a]"));
    store.mark_reply_failed(pending[0].id, "GitHub: 502").await.unwrap();
    assert_eq!(store.replies_to_post(run.id, 2).await.unwrap()[0].last_error.as_deref(), Some("GitHub: 502"));
    // A wait on GitHub's rate limit is said, and counts no attempt.
    store.mark_reply_waiting(pending[0].id, "GitHub: rate limit").await.unwrap();
    let waiting = store.replies_to_post(run.id, 2).await.unwrap();
    assert_eq!((waiting[0].attempts, waiting[0].last_error.as_deref()), (1, Some("GitHub: rate limit")));
    store.mark_reply_failed(pending[0].id, "GitHub: 502").await.unwrap();
    assert!(store.replies_to_post(run.id, 2).await.unwrap().is_empty(), "given up after the bound");
    assert!(store.replies_to_post(run.id, 5).await.unwrap().len() == 1);
    assert!(store.mark_reply_posted(pending[0].id, "PRRC_10").await.unwrap());
    assert!(!store.mark_reply_posted(pending[0].id, "PRRC_11").await.unwrap(), "posted once");
    assert!(store.replies_to_post(run.id, 5).await.unwrap().is_empty());
    let rows = store.agent_replies(run.id).await.unwrap();
    assert_eq!(rows[0].posted_comment_id.as_deref(), Some("PRRC_10"));
    assert_eq!(rows[1].body, None);

    // Once the worker ended, its offers are no live worker's.
    store.end_worker_session(s.id, None, &WorkerEnd::new(EndReason::Finished)).await.unwrap();
    assert!(store.live_offer(run.id, "IC_2").await.unwrap().is_none());
}
