//! The store's reads for the dashboard, on SQLite and PostgreSQL: the runs board (one statement, each
//! run with its memory and its live worker) and the queue's text search.

mod common;

use common::TestDb;
use executor::domain::{Actor, QueueStatus, TaskGid, WorkerKind};
use executor::store::{NewTask, SessionStart, Store, TaskFilter, WorkerEnd};

on_both_databases!(
    the_board_has_every_run_newest_first_with_its_live_worker,
    the_search_matches_words_of_description_or_notes,
    approve_task_refuses_a_pending_task_unless_triage_is_skipped,
);

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).unwrap()
}

async fn approved_run(store: &Store, g: &str) -> i64 {
    let t = NewTask { description: Some(format!("task {g}")), ..Default::default() };
    store.upsert_task(&gid(g), &t, Actor::Cli).await.unwrap();
    store.approve_task(&gid(g), true, Actor::Cli).await.unwrap();
    store.create_run_for_task(&gid(g), Actor::Runner).await.unwrap().expect("a run").id
}

async fn the_board_has_every_run_newest_first_with_its_live_worker(db: TestDb) {
    let store = db.open().await;
    let a = approved_run(&store, "A").await;
    let b = approved_run(&store, "B").await;
    let c = approved_run(&store, "C").await;
    store.record_decision(b, None, "start a queued worker").await.unwrap();
    store.set_last_snapshot(b, None, "{}").await.unwrap();
    // B has a live worker; C's worker ended, so C has none.
    let live = store
        .begin_worker_session(b, WorkerKind::Queued, "claude", "h", &SessionStart::default())
        .await
        .unwrap()
        .unwrap();
    store.set_worker_process(live.id, None, 1, None, "/tmp/out", "/tmp/log.md").await.unwrap();
    let ended = store
        .begin_worker_session(c, WorkerKind::Queued, "claude", "h", &SessionStart::default())
        .await
        .unwrap()
        .unwrap();
    store
        .end_worker_session(ended.id, None, &WorkerEnd::new(executor::domain::EndReason::Finished))
        .await
        .unwrap();

    let board = store.runs_board(10).await.unwrap();
    assert_eq!(board.iter().map(|r| r.run.id).collect::<Vec<_>>(), [c, b, a]);
    let row_b = &board[1];
    assert_eq!(row_b.last_decision.as_deref(), Some("start a queued worker"));
    assert_eq!(row_b.last_snapshot.as_deref(), Some("{}"));
    let worker = row_b.live_worker.as_ref().expect("B's live worker");
    assert_eq!(
        (worker.session, worker.kind, worker.log_path.as_deref()),
        (live.id, WorkerKind::Queued, Some("/tmp/log.md"))
    );
    assert_eq!(worker.started_at, live.started_at);
    assert!(board[0].live_worker.is_none(), "an ended worker is not live");
    assert!(board[2].live_worker.is_none());
    assert_eq!(board[0].run, store.run(c).await.unwrap(), "the run's own columns, unchanged by the join");
    assert_eq!(store.runs_board(2).await.unwrap().len(), 2, "the limit holds");
}

async fn the_search_matches_words_of_description_or_notes(db: TestDb) {
    let store = db.open().await;
    let add = |g: &'static str, description: &'static str, notes: Option<&'static str>| {
        let store = store.clone();
        async move {
            let t = NewTask {
                description: Some(description.into()),
                notes: notes.map(String::from),
                ..Default::default()
            };
            store.upsert_task(&gid(g), &t, Actor::Cli).await.unwrap();
        }
    };
    add("T1", "Fix the Login page", None).await;
    add("T2", "Something else", Some("the login fails at 100%")).await;
    add("T3", "100 percent sure", None).await;
    add("T4", "a_b and a\\b", None).await;
    let found = |text: &str| {
        let store = store.clone();
        let f = TaskFilter { text: Some(text.into()), ..Default::default() };
        async move {
            let mut gids: Vec<String> =
                store.list_tasks(&f).await.unwrap().into_iter().map(|t| t.task_gid.to_string()).collect();
            gids.sort();
            assert_eq!(store.count_tasks(&f).await.unwrap(), gids.len() as i64);
            gids
        }
    };
    assert_eq!(found("login").await, ["T1", "T2"], "in the description or the notes, any case");
    assert_eq!(found("100%").await, ["T2", "T3"], "% separates words, it is no wildcard");
    assert_eq!(found("a_b").await, ["T4"]);
    assert_eq!(found("a\\b").await, ["T4"], "a backslash separates words too");
    assert!(found("x_y").await.is_empty(), "_ is not a wildcard");
    assert_eq!(found("").await.len(), 4, "an empty text filters nothing");
    let both =
        TaskFilter { text: Some("login".into()), status: Some(QueueStatus::Pending), ..Default::default() };
    assert_eq!(store.count_tasks(&both).await.unwrap(), 2);
}

async fn approve_task_refuses_a_pending_task_unless_triage_is_skipped(db: TestDb) {
    let store = db.open().await;
    let t = NewTask { description: Some("x".into()), ..Default::default() };
    store.upsert_task(&gid("P"), &t, Actor::Cli).await.unwrap();
    let err = store.approve_task(&gid("P"), false, Actor::Web).await.unwrap_err().to_string();
    assert!(err.contains("still pending"), "{err}");
    let done = store.approve_task(&gid("P"), true, Actor::Web).await.unwrap();
    assert_eq!((done.task.status, done.revision_approved), (QueueStatus::Approved, false));
}
