//! What only `executor import` writes, on SQLite and PostgreSQL: a v1 run created in its state with v1's
//! fields and times (the legal path recorded as events), and a task it just added dated as v1 dated it.

mod common;

use chrono::{DateTime, Utc};
use common::TestDb;
use executor::domain::{Actor, QueueStatus, RunState, TaskGid};
use executor::store::{EventFilter, ImportedRun, NewTask, RunFilter, Store};

on_both_databases!(
    an_imported_run_keeps_v1s_fields_and_times_and_records_its_path,
    only_a_task_the_import_added_takes_v1s_times,
    a_tasks_earlier_v1_runs_go_in_as_history_before_its_current_one,
);

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

async fn approved(store: &Store, g: &str) -> TaskGid {
    let gid = TaskGid::parse(g).unwrap();
    store
        .upsert_task(&gid, &NewTask { description: Some("d".into()), ..Default::default() }, Actor::Cli)
        .await
        .unwrap();
    for s in [QueueStatus::AwaitingGo, QueueStatus::Approved] {
        store.set_task_status(&gid, s, Actor::Cli, None).await.unwrap();
    }
    gid
}

fn v1_run(state: RunState) -> ImportedRun {
    ImportedRun {
        state,
        worktree_path: Some("/Users/alex/wt/1".into()),
        branch_name: Some("executor/1".into()),
        pr_url: Some("https://github.com/acme/browser/pull/9".into()),
        pr_number: Some(9),
        thread_id: None,
        ci_attempts: 2,
        worker_session_id: Some("sess".into()),
        worker_pid: Some(4242),
        worker_last_update: Some(t("2026-01-06T10:00:00.1234567Z")),
        worker_stuck_count: 1,
        started_at: Some(t("2026-01-05T10:00:00Z")),
        updated_at: Some(t("2026-01-06T10:00:00Z")),
        completed_at: Some(t("2026-01-07T10:00:00Z")),
    }
}

async fn an_imported_run_keeps_v1s_fields_and_times_and_records_its_path(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "i1").await;
    let run =
        store.create_imported_run(&g, &v1_run(RunState::Pr), Actor::Cli, "imported").await.unwrap().unwrap();
    assert_eq!(run.state, RunState::Pr);
    assert_eq!(
        (run.pr_number, run.worker_pid, run.ci_attempts, run.worker_stuck_count),
        (Some(9), Some(4242), 2, 1)
    );
    assert_eq!(run.branch_name.as_deref(), Some("executor/1"));
    assert_eq!((run.started_at, run.updated_at), (t("2026-01-05T10:00:00Z"), t("2026-01-06T10:00:00Z")));
    assert_eq!(run.completed_at, None, "only a finished run has a completion time");
    assert_eq!(run.worker_last_update, Some(t("2026-01-06T10:00:00.123456Z")), "microseconds");
    assert_eq!(store.task(&g).await.unwrap().executor_run_id, Some(run.id));
    let moves: Vec<String> = store
        .events(&EventFilter { run_id: Some(run.id), ..Default::default() })
        .await
        .unwrap()
        .iter()
        .map(|e| {
            format!("{}→{}", e.from_state.as_deref().unwrap_or("-"), e.to_state.as_deref().unwrap_or("-"))
        })
        .collect();
    assert_eq!(moves, ["-→queued", "queued→in_progress", "in_progress→pr"]);
    assert!(
        store.create_imported_run(&g, &v1_run(RunState::Pr), Actor::Cli, "again").await.unwrap().is_none()
    );

    let done = approved(&store, "i2").await;
    let run = store
        .create_imported_run(&done, &v1_run(RunState::Complete), Actor::Cli, "imported")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.completed_at, Some(t("2026-01-07T10:00:00Z")));
    assert_eq!(store.task(&done).await.unwrap().status, QueueStatus::Done, "a complete run's task is done");
}

async fn only_a_task_the_import_added_takes_v1s_times(db: TestDb) {
    let store = db.open().await;
    let old = approved(&store, "o1").await;
    let began = executor::store::now();
    let new = approved(&store, "n1").await;
    let (added, updated) = (t("2025-12-01T09:00:00Z"), t("2026-01-02T09:00:00Z"));
    assert!(store.date_imported_task(&new, began, Some(added), Some(updated)).await.unwrap());
    let task = store.task(&new).await.unwrap();
    assert_eq!((task.added_at, task.updated_at), (added, updated));
    assert!(!store.date_imported_task(&old, began, Some(added), Some(updated)).await.unwrap());
    assert!(store.task(&old).await.unwrap().added_at >= began - chrono::Duration::minutes(5));
}

fn moves_of(events: &[executor::store::Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!("{}→{}", e.from_state.as_deref().unwrap_or("-"), e.to_state.as_deref().unwrap_or("-"))
        })
        .collect()
}

async fn a_tasks_earlier_v1_runs_go_in_as_history_before_its_current_one(db: TestDb) {
    let store = db.open().await;
    let g = approved(&store, "h1").await;
    let first = ImportedRun {
        branch_name: Some("executor/h1".into()),
        started_at: Some(t("2026-01-01T10:00:00Z")),
        updated_at: Some(t("2026-01-02T10:00:00Z")),
        completed_at: Some(t("2026-01-02T11:00:00Z")),
        ..v1_run(RunState::Complete)
    };
    let second = ImportedRun {
        branch_name: Some("executor/h1-2".into()),
        started_at: Some(t("2026-01-03T10:00:00Z")),
        updated_at: Some(t("2026-01-04T10:00:00Z")),
        completed_at: Some(t("2026-01-04T11:00:00Z")),
        ..v1_run(RunState::Abandoned)
    };
    let current = v1_run(RunState::Pr);
    let run = store
        .create_imported_runs(&g, &[first.clone(), second.clone()], &current, Actor::Cli, "imported")
        .await
        .unwrap()
        .expect("the current run");
    assert_eq!(run.state, RunState::Pr);
    let task = store.task(&g).await.unwrap();
    assert_eq!(task.executor_run_id, Some(run.id), "the current run is the task's");
    assert_eq!(task.status, QueueStatus::Approved, "an earlier complete run does not make the task done");

    // Newest first: the current run, then the history, each with v1's times and fields.
    let runs = store.list_runs(&RunFilter { task_gid: Some(g.clone()), ..Default::default() }).await.unwrap();
    let seen: Vec<(Option<&str>, RunState)> =
        runs.iter().map(|r| (r.branch_name.as_deref(), r.state)).collect();
    assert_eq!(
        seen,
        [
            (Some("executor/1"), RunState::Pr),
            (Some("executor/h1-2"), RunState::Abandoned),
            (Some("executor/h1"), RunState::Abandoned),
        ]
    );
    let (old1, old2) = (&runs[2], &runs[1]);
    assert!(old1.id < old2.id && old2.id < run.id, "created oldest first");
    assert_eq!(
        (old1.started_at, old1.updated_at, old1.completed_at),
        (t("2026-01-01T10:00:00Z"), t("2026-01-02T10:00:00Z"), Some(t("2026-01-02T11:00:00Z")))
    );
    assert_eq!(old2.completed_at, Some(t("2026-01-04T11:00:00Z")));
    assert_eq!((old1.pr_number, old1.worker_pid), (Some(9), Some(4242)), "v1's record");
    let events_of = |id: i64| {
        let store = &store;
        async move { store.events(&EventFilter { run_id: Some(id), ..Default::default() }).await.unwrap() }
    };
    // v1's states on the way, then superseded, as a run `queue retry` leaves behind.
    assert_eq!(
        moves_of(&events_of(old1.id).await),
        ["-→queued", "queued→in_progress", "in_progress→pr", "pr→complete", "complete→abandoned"]
    );
    assert_eq!(moves_of(&events_of(old2.id).await), ["-→queued", "queued→abandoned"]);

    // All or nothing, and only once: the task has its run now, so nothing more goes in.
    assert!(
        store
            .create_imported_runs(&g, std::slice::from_ref(&first), &current, Actor::Cli, "again")
            .await
            .unwrap()
            .is_none()
    );
    let pending = TaskGid::parse("h2").unwrap();
    store
        .upsert_task(&pending, &NewTask { description: Some("d".into()), ..Default::default() }, Actor::Cli)
        .await
        .unwrap();
    assert!(
        store.create_imported_runs(&pending, &[first], &current, Actor::Cli, "x").await.unwrap().is_none()
    );
    let all = store.list_runs(&RunFilter::default()).await.unwrap();
    assert_eq!(all.len(), 3, "no run added by a refused call, history included");
}
