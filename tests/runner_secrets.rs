//! An agent that echoes a secret it came across (here a `worker.pass_env` value) into its review: the
//! review posted on the pull request, the notices, the events, the stored result and the work logs carry
//! `[REDACTED]`, and no file under the data directory holds the secret.

mod runner_support;

use std::path::Path;
use std::time::{Duration, Instant};

use executor::domain::TaskGid;
use executor::store::{EventFilter, RunFilter};
use runner_support::Env;

const SECRET: &str = "ghp_PlantedSecretValue0123456789abcdef";

fn files_holding(dir: &Path, needle: &[u8], found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_holding(&path, needle, found);
        } else if let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            found.push(path.display().to_string());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_an_agent_echoes_is_posted_and_stored_nowhere() {
    let env = Env::new(&["FAKE_REVIEW", "FAKE_ECHO"]);
    env.queue_approved("s1");
    let store = env.store().await;
    let gid = TaskGid::parse("s1").unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let run = loop {
        let out =
            env.command(&["runner"]).env("FAKE_REVIEW", "fail").env("FAKE_ECHO", SECRET).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let run = store
            .list_runs(&RunFilter { task_gid: Some(gid.clone()), ..Default::default() })
            .await
            .unwrap()
            .remove(0);
        if run.review_verdict.is_some() && !store.notices(Some(run.id)).await.unwrap().is_empty() {
            break run;
        }
        assert!(Instant::now() < deadline, "no review: {:?}", store.worker_sessions(run.id).await.unwrap());
        tokio::time::sleep(Duration::from_millis(300)).await;
    };

    let pr = store.local_pr_for_run(run.id).await.unwrap().expect("a pull request");
    let comments = store.local_comments(pr.id).await.unwrap();
    let findings: Vec<&str> = comments.iter().filter(|c| c.by_agent).map(|c| c.body.as_str()).collect();
    assert!(findings.iter().any(|b| b.contains("say more (the log printed [REDACTED])")), "{findings:?}");
    assert!(comments.iter().all(|c| !c.body.contains(SECRET)), "{comments:?}");
    for session in store.worker_sessions(run.id).await.unwrap() {
        let result = session.result_json.unwrap_or_default();
        assert!(!result.contains(SECRET), "the stored result of {:?}: {result}", session.kind);
    }
    for notice in store.notices(Some(run.id)).await.unwrap() {
        assert!(!notice.message.contains(SECRET), "{}", notice.message);
    }
    let events = store.events(&EventFilter { run_id: Some(run.id), ..Default::default() }).await.unwrap();
    assert!(events.iter().all(|e| !e.reason.clone().unwrap_or_default().contains(SECRET)), "{events:?}");

    // Nothing executor wrote holds it: database, work logs, prompts, worker files, CI.
    let mut found = Vec::new();
    files_holding(&env.path().join("data"), SECRET.as_bytes(), &mut found);
    assert!(found.is_empty(), "files holding the secret: {found:?}");
}
