//! What the dashboard asks of the store, on SQLite and on PostgreSQL: the text search of the queue, the
//! shared approval, and the aggregates behind `/metrics`.

mod common;

use common::TestDb;
use executor::domain::{Actor, EndReason, QueueStatus, TaskGid, WorkerKind};
use executor::store::{NewTask, StoreError, TaskFilter, WorkerEnd};

on_both_databases!(
    the_search_matches_words_of_description_or_notes_ignoring_case,
    approval_is_one_path_with_its_refusals,
    worker_durations_sum_the_ended_sessions_by_kind,
);

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).unwrap()
}

fn task(description: &str, notes: Option<&str>) -> NewTask {
    NewTask { description: Some(description.into()), notes: notes.map(Into::into), ..Default::default() }
}

async fn the_search_matches_words_of_description_or_notes_ignoring_case(db: TestDb) {
    let store = db.open().await;
    store.upsert_task(&gid("a"), &task("Fix the Login page", None), Actor::Cli).await.unwrap();
    store.upsert_task(&gid("b"), &task("other", Some("see login.rs")), Actor::Cli).await.unwrap();
    store.upsert_task(&gid("c"), &task("50% faster_build", None), Actor::Cli).await.unwrap();
    store.upsert_task(&gid("d"), &task("50 faster builds", Some("a\\b")), Actor::Cli).await.unwrap();
    let find = |text: &str| TaskFilter { text: Some(text.into()), ..Default::default() };
    let gids = |tasks: Vec<executor::domain::Task>| -> Vec<String> {
        tasks.iter().map(|t| t.task_gid.to_string()).collect()
    };
    assert_eq!(gids(store.list_tasks(&find("LOGIN")).await.unwrap()), ["a", "b"]);
    assert_eq!(store.count_tasks(&find("login")).await.unwrap(), 2);
    // Words, not characters: `%` and `_` separate words, and each word may start one ("build").
    assert_eq!(gids(store.list_tasks(&find("50%")).await.unwrap()), ["c", "d"]);
    assert_eq!(gids(store.list_tasks(&find("faster_build")).await.unwrap()), ["c", "d"]);
    assert!(store.list_tasks(&find("r_b")).await.unwrap().is_empty(), "no word starts with r");
    assert_eq!(gids(store.list_tasks(&find("a\\b")).await.unwrap()), ["d"]);
    assert_eq!(store.count_tasks(&find("nowhere")).await.unwrap(), 0);
    let both = TaskFilter { status: Some(QueueStatus::Skip), ..find("login") };
    assert_eq!(store.count_tasks(&both).await.unwrap(), 0);
}

async fn approval_is_one_path_with_its_refusals(db: TestDb) {
    let store = db.open().await;
    let g = gid("p");
    store.upsert_task(&g, &task("pending", None), Actor::Cli).await.unwrap();
    let refused = store.approve_task(&g, false, Actor::Web).await.unwrap_err();
    assert!(matches!(&refused, StoreError::Refused(why) if why.contains("pending")), "{refused}");
    let done = store.approve_task(&g, true, Actor::Web).await.unwrap();
    assert_eq!((done.task.status, done.revision_approved), (QueueStatus::Approved, false));
    assert!(matches!(store.approve_task(&g, false, Actor::Web).await, Err(StoreError::Illegal(_))));
    // New text for an approved task is a revision; approving again accepts it.
    store.upsert_task(&g, &task("pending, revised", None), Actor::Cli).await.unwrap();
    let done = store.approve_task(&g, false, Actor::Web).await.unwrap();
    assert!(done.revision_approved);
    assert_eq!(done.task.description.as_deref(), Some("pending, revised"));
    assert!(matches!(
        store.approve_task(&gid("nope"), false, Actor::Web).await,
        Err(StoreError::UnknownTask(_))
    ));
}

async fn worker_durations_sum_the_ended_sessions_by_kind(db: TestDb) {
    let store = db.open().await;
    assert!(store.worker_durations().await.unwrap().is_empty());
    assert_eq!(store.live_worker_count().await.unwrap(), 0);
    let mut runs = Vec::new();
    for name in ["r1", "r2", "r3"] {
        store.upsert_task(&gid(name), &task(name, None), Actor::Cli).await.unwrap();
        store.approve_task(&gid(name), true, Actor::Cli).await.unwrap();
        runs.push(store.create_run_for_task(&gid(name), Actor::Runner).await.unwrap().unwrap().id);
    }
    for (run, kind) in
        [(runs[0], WorkerKind::Queued), (runs[1], WorkerKind::Queued), (runs[2], WorkerKind::FixCi)]
    {
        let s =
            store.begin_worker_session(run, kind, "claude", "h", &Default::default()).await.unwrap().unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        store.end_worker_session(s.id, None, &WorkerEnd::new(EndReason::Finished)).await.unwrap();
    }
    store
        .begin_worker_session(runs[0], WorkerKind::InProgress, "claude", "h", &Default::default())
        .await
        .unwrap();
    assert_eq!(store.live_worker_count().await.unwrap(), 1);
    let d = store.worker_durations().await.unwrap();
    let kinds: Vec<(&str, i64)> = d.iter().map(|d| (d.kind.as_str(), d.count)).collect();
    assert_eq!(kinds, [("fix_ci", 1), ("queued", 2)]);
    assert!(d[1].seconds >= 0.04 && d[1].seconds < 60.0, "{d:?}");
}
