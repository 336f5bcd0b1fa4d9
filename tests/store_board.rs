//! The store's reads for the dashboard, on SQLite and PostgreSQL: the runs board (one statement, each
//! run with its memory and its live worker) and the queue's text search.

mod common;

use common::TestDb;
use executor::domain::{Actor, EndReason, QueueStatus, RunState, TaskGid, WorkerKind};
use executor::store::{BoardQuery, NewTask, SessionStart, Store, TaskFilter, WorkerEnd, WorkerTotals};

on_both_databases!(
    the_board_has_every_run_newest_first_with_its_live_worker,
    the_board_sums_each_runs_sessions_and_names_its_last_worker,
    the_board_filters_by_state_and_holds_many_runs_in_one_statement,
    the_board_pages_leaves_ended_runs_out_and_searches_with_parameters,
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

/// Starts a worker session on `run` and, unless `live`, ends it as `reason` having spent `cost`.
async fn session(store: &Store, run: i64, kind: WorkerKind, cost: f64, end: Option<EndReason>) -> i64 {
    let s = store
        .begin_worker_session(run, kind, "claude", "h", &SessionStart::default())
        .await
        .unwrap()
        .unwrap();
    match end {
        Some(reason) => {
            let end =
                WorkerEnd { cost_usd: cost, input_tokens: 100, output_tokens: 10, ..WorkerEnd::new(reason) };
            assert!(store.end_worker_session(s.id, None, &end).await.unwrap());
        }
        None => store.set_worker_usage(s.id, None, Some(cost), 100, 10, false).await.unwrap(),
    }
    s.id
}

async fn the_board_sums_each_runs_sessions_and_names_its_last_worker(db: TestDb) {
    let store = db.open().await;
    let working = approved_run(&store, "W").await;
    let stuck = approved_run(&store, "S").await;
    let fresh = approved_run(&store, "F").await;
    // W: two ended workers and a live one with spend so far; S: one that went silent.
    session(&store, working, WorkerKind::Queued, 1.25, Some(EndReason::Finished)).await;
    session(&store, working, WorkerKind::FixCi, 0.5, Some(EndReason::Failed)).await;
    let live = session(&store, working, WorkerKind::FixCi, 0.25, None).await;
    let silent = session(&store, stuck, WorkerKind::Queued, 2.0, Some(EndReason::IdleTimeout)).await;

    let board = store.runs_board(10).await.unwrap();
    let row = |id: i64| board.iter().find(|r| r.run.id == id).expect("on the board");
    let w = row(working);
    assert_eq!(
        w.workers,
        WorkerTotals {
            sessions: 3,
            cost_usd: 2.0,
            cost_estimated: false,
            input_tokens: 300,
            output_tokens: 30
        },
        "every session summed, the live one's spend so far included"
    );
    assert_eq!(w.run.cost_usd, 1.75, "the run itself sums only the ended ones");
    let last = w.last_worker.as_ref().expect("W's last worker");
    assert_eq!(
        (last.session, last.kind, last.ended_at, last.end_reason),
        (live, WorkerKind::FixCi, None, None)
    );
    assert_eq!(w.live_worker.as_ref().map(|l| l.session), Some(live));
    assert_eq!(w.task_text.as_deref(), Some("task W"));

    let s = row(stuck);
    assert!(s.live_worker.is_none());
    let last = s.last_worker.as_ref().expect("S's last worker");
    assert_eq!((last.session, last.end_reason), (silent, Some(EndReason::IdleTimeout)));
    assert!(last.ended_at.is_some_and(|end| end >= last.started_at));
    assert_eq!((s.workers.sessions, s.workers.cost_usd), (1, 2.0));

    let f = row(fresh);
    assert_eq!((f.workers.clone(), f.last_worker.is_none()), (WorkerTotals::default(), true));
}

async fn the_board_filters_by_state_and_holds_many_runs_in_one_statement(db: TestDb) {
    let store = db.open().await;
    let tasks: Vec<(TaskGid, NewTask)> = (0..300)
        .map(|i| {
            (
                gid(&format!("M-{i}")),
                NewTask { description: Some(format!("Title {i}\nbody")), ..Default::default() },
            )
        })
        .collect();
    store.upsert_tasks(&tasks, Actor::Cli).await.unwrap();
    let mut ids = Vec::new();
    for (g, _) in &tasks {
        store.approve_task(g, true, Actor::Cli).await.unwrap();
        ids.push(store.create_run_for_task(g, Actor::Runner).await.unwrap().expect("a run").id);
    }
    // Every third run is in progress with two ended workers of 0.5 each.
    for id in ids.iter().step_by(3) {
        store
            .set_run_state_if(*id, RunState::Queued, RunState::InProgress, None, Actor::Runner, "t")
            .await
            .unwrap();
        session(&store, *id, WorkerKind::Queued, 0.5, Some(EndReason::Crashed)).await;
        session(&store, *id, WorkerKind::InProgress, 0.5, Some(EndReason::Finished)).await;
    }
    let all =
        store.runs_board_of(BoardQuery { state: None, limit: 1000, ..Default::default() }).await.unwrap();
    assert_eq!(all.len(), 300);
    for row in &all {
        let i: usize = row.run.task_gid.as_str()["M-".len()..].parse().unwrap();
        assert_eq!(
            row.task_text.as_deref(),
            Some(format!("Title {i}\nbody").as_str()),
            "its own task's text"
        );
        let expected = if i.is_multiple_of(3) { (2, 1.0, Some(EndReason::Finished)) } else { (0, 0.0, None) };
        assert_eq!(
            (row.workers.sessions, row.workers.cost_usd, row.last_worker.as_ref().and_then(|w| w.end_reason)),
            expected,
            "run {}",
            row.run.id
        );
    }
    let working = store
        .runs_board_of(BoardQuery { state: Some(RunState::InProgress), limit: 1000, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(working.len(), 100);
    assert!(working.iter().all(|r| r.run.state == RunState::InProgress && r.workers.sessions == 2));
    assert!(working.windows(2).all(|w| w[0].run.id > w[1].run.id), "newest first");
    let newest = store
        .runs_board_of(BoardQuery { state: Some(RunState::Queued), limit: 5, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(newest.len(), 5, "the limit holds within a state");
    assert!(newest.iter().all(|r| r.run.state == RunState::Queued));
    assert!(
        store
            .runs_board_of(BoardQuery { state: Some(RunState::Pr), limit: 10, ..Default::default() })
            .await
            .unwrap()
            .is_empty()
    );
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

/// Issue 35, item 9: a page of the board (limit, offset, and the count of all it would show), the ended
/// runs left out when folded, and a search over the task's gid and text, the branch and the pull
/// request's URL, any case; the person's text is a value, never SQL (quotes, `%` and `_` find
/// themselves).
async fn the_board_pages_leaves_ended_runs_out_and_searches_with_parameters(db: TestDb) {
    let store = db.open().await;
    let mut ids = Vec::new();
    for i in 0..25 {
        let g = format!("P-{i}");
        let text = if i == 5 { "Crash when the name is O'Brien".to_string() } else { format!("task {g}") };
        store
            .upsert_task(&gid(&g), &NewTask { description: Some(text), ..Default::default() }, Actor::Cli)
            .await
            .unwrap();
        store.approve_task(&gid(&g), true, Actor::Cli).await.unwrap();
        ids.push(store.create_run_for_task(&gid(&g), Actor::Runner).await.unwrap().expect("a run").id);
    }
    store.set_run_workspace(ids[3], None, "/w/3", "executor/fix-Login_100%").await.unwrap();
    store.set_run_pr(ids[4], None, "https://github.com/o/r/pull/4242", 4242).await.unwrap();
    store.abandon_run(ids[0], Actor::Cli, "no longer wanted").await.unwrap();

    let page = |offset, unended| BoardQuery { limit: 10, offset, unended, ..Default::default() };
    let first = store.runs_board_of(page(0, false)).await.unwrap();
    let third = store.runs_board_of(page(20, false)).await.unwrap();
    assert_eq!((first.len(), third.len()), (10, 5));
    assert_eq!(first[0].run.id, ids[24], "newest first");
    assert_eq!(third.last().unwrap().run.id, ids[0]);
    assert_eq!(store.count_board(&page(20, false)).await.unwrap(), 25, "the count ignores the page");
    let unended = store.runs_board_of(page(20, true)).await.unwrap();
    assert!(unended.iter().all(|r| r.run.id != ids[0]), "the abandoned run is folded away");
    assert_eq!(store.count_board(&page(0, true)).await.unwrap(), 24);

    let find = |text: &str| BoardQuery { limit: 50, search: Some(text.into()), ..Default::default() };
    let found = |rows: Vec<executor::store::BoardRow>| rows.iter().map(|r| r.run.id).collect::<Vec<_>>();
    assert_eq!(found(store.runs_board_of(find("p-7")).await.unwrap()), [ids[7]], "a gid, any case");
    assert_eq!(found(store.runs_board_of(find("login_100%")).await.unwrap()), [ids[3]], "a branch");
    assert_eq!(found(store.runs_board_of(find("pull/4242")).await.unwrap()), [ids[4]], "a PR URL");
    assert_eq!(found(store.runs_board_of(find("o'brien")).await.unwrap()), [ids[5]], "the task's text");
    assert_eq!(store.count_board(&find("task p-1")).await.unwrap(), 11, "P-1 and P-10…P-19");
    for nothing in ["%%", "_x", "'; DROP TABLE executor_runs; --", "zzz"] {
        assert!(store.runs_board_of(find(nothing)).await.unwrap().is_empty(), "{nothing:?}");
    }
    let abandoned = BoardQuery { state: Some(RunState::Abandoned), ..find("task p-0") };
    assert_eq!(found(store.runs_board_of(abandoned.clone()).await.unwrap()), [ids[0]]);
    assert_eq!(store.count_board(&abandoned).await.unwrap(), 1);
}
