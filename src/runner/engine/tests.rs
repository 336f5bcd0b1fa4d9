//! The pool under the race of issue 7 (item 2): a worker's end lands while the same tick starts the run's
//! next worker (fix_comments → pr_review has no back-off). Real SQLite, real supervisor tasks.

use tokio::sync::oneshot;

use super::Runner;
use crate::config::Config;
use crate::domain::{Actor, EndReason, QueueStatus, Run, TaskGid, WorkerKind};
use crate::runner::recording::Recording;
use crate::store::{NewTask, Store};
use crate::worker::WorkerError;

async fn runner_with_a_run(dir: &std::path::Path) -> (Runner, Store, Run) {
    let url = format!("sqlite://{}", dir.join("executor.db").display());
    let store = Store::open(&url).await.unwrap();
    store.migrate().await.unwrap();
    let gid = TaskGid::parse("p1").unwrap();
    let task = NewTask { description: Some("work".into()), ..Default::default() };
    store.upsert_task(&gid, &task, Actor::Cli).await.unwrap();
    store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Analyzer, None).await.unwrap();
    store.set_task_status(&gid, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
    let run = store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap();
    let config = Config::parse(&format!("[paths]\ndata_dir = \"{}\"\n", dir.display())).unwrap();
    (Runner::new(config, store.clone()).unwrap(), store, run)
}

#[tokio::test]
async fn the_end_of_a_runs_worker_never_removes_the_runs_next_worker_from_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let (mut runner, store, run) = runner_with_a_run(dir.path()).await;
    let host = runner.host.clone();
    let begin = |kind| {
        let (store, host) = (store.clone(), host.clone());
        async move {
            store
                .begin_worker_session(run.id, kind, "command", &host, &Default::default())
                .await
                .unwrap()
                .unwrap()
        }
    };
    let recording = |session: i64, kind| Recording {
        store: store.clone(),
        session,
        run_id: run.id,
        kind,
        holder: None,
        redactor: Default::default(),
    };

    // The fix_comments worker ends; its end is recorded and its message waits for the loop.
    let fix = begin(WorkerKind::FixComments).await;
    runner.spawn_supervised(recording(fix.id, WorkerKind::FixComments), |_tx, _stop| async {
        Err(WorkerError::NotOurProcess { pid: 0 })
    });
    let ended = runner.ended_rx.recv().await.unwrap();
    assert_eq!(ended, fix.id, "the ended channel names the worker session");

    // Before the loop reaps it, the same tick starts the review (no back-off after fix_comments).
    let review = begin(WorkerKind::PrReview).await;
    let (release, released) = oneshot::channel::<()>();

    runner.spawn_supervised(recording(review.id, WorkerKind::PrReview), move |_tx, _stop| async move {
        let _ = released.await;
        Err(WorkerError::NotOurProcess { pid: 0 })
    });
    runner.reap(ended);
    assert!(runner.pool.contains_key(&review.id), "the review is still supervised");
    assert_eq!(runner.pool.len(), 1, "and it counts against max_workers");

    // The next tick's reconcile must not take the live review over a second time.
    runner.reconcile().await.unwrap();
    let live = store.worker_session(review.id).await.unwrap();
    assert_eq!(live.ended_at, None, "the review was not taken for a dead runner's worker: {live:?}");
    assert_eq!(runner.pool.len(), 1, "one supervisor for the review");

    let _ = release.send(());
    let ended = runner.ended_rx.recv().await.unwrap();
    runner.reap(ended);
    assert!(runner.pool.is_empty());
    let sessions = store.worker_sessions(run.id).await.unwrap();
    assert!(sessions.iter().all(|s| s.end_reason == Some(EndReason::FailedToStart)), "{sessions:?}");
}
