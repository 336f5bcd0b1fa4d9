//! Issue 33 item 9: `executor runner` (without `--once`) waits until nothing is left to do — and CI it
//! started is something left to do. It used to exit 0.3 s after starting an 8-second CI, so the
//! README's by-hand flow needed a second `runner` before anything acted on the result.

use executor::domain::{TaskGid, WorkerKind};
use executor::store::RunFilter;

mod runner_support;
use runner_support::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_runner_waits_for_the_ci_it_started_and_acts_on_its_result() {
    let env = Env::new(&[]);
    env.queue_approved("1207");
    // One invocation, as a person trying it by hand: the worker commits, the pull request opens, CI
    // (`sleep 2; test -f ci-fixed`) fails, a fix_ci worker fixes it, CI runs again.
    env.run(&["runner"]);

    let store = env.store().await;
    let gid = TaskGid::parse("1207").unwrap();
    let run =
        store.list_runs(&RunFilter { task_gid: Some(gid), ..Default::default() }).await.unwrap().remove(0);
    let pending = store.pending_local_checks(&executor::config::Config::default().host_name()).await.unwrap();
    assert!(pending.is_empty(), "the runner exited while its CI ran: {pending:?}");
    let sessions = store.worker_sessions(run.id).await.unwrap();
    assert!(
        sessions.iter().any(|s| s.kind == WorkerKind::FixCi),
        "nothing acted on the failed CI: {:?}",
        sessions.iter().map(|s| s.kind).collect::<Vec<_>>()
    );
}
