//! A run's notices are delivered by the runner holding its lease, ended runs' included: two hosts
//! delivering the same notice at once each read the pull request before the other posted (soak finding).

use std::time::Duration;

use crate::domain::Actor;
use crate::runner::state::TickReport;
use crate::runner::test_hosts::{host_runner, remote_and_clones, store_with_runs};

#[tokio::test]
async fn only_the_lease_holder_delivers_an_abandoned_runs_notice() {
    let tmp = tempfile::tempdir().unwrap();
    remote_and_clones(tmp.path(), &["alpha", "beta"]);
    let (store, runs) = store_with_runs(tmp.path(), 1).await;
    let run = &runs[0];
    let mut alpha = host_runner(tmp.path(), &store, "alpha", "local", 2);
    let mut beta = host_runner(tmp.path(), &store, "beta", "local", 2);
    alpha.register().await.unwrap();
    beta.register().await.unwrap();
    store.abandon_run(run.id, Actor::Runner, "the pull request was closed").await.unwrap();
    // Abandoning frees the lease; the first runner to deliver the run's notices claims it.
    assert!(store.claim_run(run.id, &alpha.owner, Duration::from_secs(600)).await.unwrap());
    let id = store.add_notice(Some(run.id), None, "abandoned", None, "@alex closed").await.unwrap().unwrap();
    let attempts = |store: crate::store::Store| async move {
        let n = store.notices(Some(run.id)).await.unwrap().into_iter().find(|n| n.id == id).unwrap();
        (n.attempts, n.delivery)
    };

    // Beta does not hold the run: it leaves the notice to alpha, untouched.
    beta.send_outbox(&mut TickReport::default()).await.unwrap();
    assert_eq!(attempts(store.clone()).await, (0, None), "beta touched alpha's notice");
    // Alpha does (the run has no pull request and no webhook is set: it waits, said so).
    alpha.send_outbox(&mut TickReport::default()).await.unwrap();
    let (_, delivery) = attempts(store.clone()).await;
    assert!(delivery.is_some_and(|d| d.contains("nowhere to send it yet")), "alpha did not look at it");
}
