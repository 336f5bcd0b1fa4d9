//! The stuck notice says the count as it stands after the worker's end (issue 35, item 11): the tick's
//! copy of the run was read before the end was counted, and said "Stuck attempts: 0 of 3".

use crate::config::Config;
use crate::domain::{Actor, EndReason, QueueStatus, TaskGid, WorkerKind};
use crate::runner::Runner;
use crate::store::{NewTask, Store, WorkerEnd};

#[tokio::test]
async fn the_first_stuck_notice_counts_the_worker_it_tells_of() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("executor.db").display());
    let store = Store::open(&url).await.unwrap();
    store.migrate().await.unwrap();
    let gid = TaskGid::parse("s1").unwrap();
    let task = NewTask { description: Some("work".into()), ..Default::default() };
    store.upsert_task(&gid, &task, Actor::Cli).await.unwrap();
    store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Analyzer, None).await.unwrap();
    store.set_task_status(&gid, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
    // The tick's copy of the run, read before its worker's end.
    let stale = store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap();
    let config = Config::parse(&format!("[paths]\ndata_dir = \"{}\"\n", dir.path().display())).unwrap();
    let runner = Runner::new(config, store.clone()).unwrap();

    let session = store
        .begin_worker_session(stale.id, WorkerKind::Queued, "command", &runner.host, &Default::default())
        .await
        .unwrap()
        .unwrap();
    let end = WorkerEnd {
        reason: EndReason::IdleTimeout,
        exit_code: None,
        num_turns: None,
        cost_usd: 0.0,
        input_tokens: 0,
        output_tokens: 0,
        result_json: None,
        result_error: None,
        verdict: None,
        cost_estimated: false,
    };
    assert!(store.end_worker_session(session.id, None, &end).await.unwrap());
    assert_eq!(stale.worker_stuck_count, 0, "the copy is stale");

    let sessions = store.worker_sessions(stale.id).await.unwrap();
    runner.tell_of_stuck_worker(&stale, &sessions, &[]).await.unwrap();
    let notices = store.notices(Some(stale.id)).await.unwrap();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].message.contains("Stuck attempts: 1 of 3"), "{}", notices[0].message);
}
