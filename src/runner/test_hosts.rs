//! Hosts for the runner's own tests: a bare remote with one clone per host, a runner per host over its
//! own clone and data directory, and one SQLite database for all of them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::Config;
use crate::domain::{Actor, QueueStatus, Run, TaskGid};
use crate::runner::Runner;
use crate::store::{NewTask, Store};

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A bare remote with `main`, and one clone of it per host.
pub(crate) fn remote_and_clones(root: &Path, hosts: &[&str]) -> Vec<PathBuf> {
    let remote = root.join("remote.git");
    git(root, &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
    let seed = root.join("seed");
    git(root, &["clone", "-q", remote.to_str().unwrap(), seed.to_str().unwrap()]);
    git(&seed, &["commit", "-q", "--allow-empty", "-m", "base"]);
    git(&seed, &["push", "-q", "origin", "HEAD:refs/heads/main"]);
    hosts
        .iter()
        .map(|h| {
            let clone = root.join(h);
            git(root, &["clone", "-q", remote.to_str().unwrap(), clone.to_str().unwrap()]);
            clone
        })
        .collect()
}

/// A runner of `host` over its own clone and data directory, on `forge`.
pub(crate) fn host_runner(root: &Path, store: &Store, host: &str, forge: &str, max_workers: u32) -> Runner {
    host_runner_with(
        root,
        store,
        host,
        forge,
        max_workers,
        "agent = \"command\"\nsandbox = \"off\"\n[worker.command]\nargv = [\"true\"]",
    )
}

/// [`host_runner`] with its own `[worker]` table body (the agent and its settings).
pub(crate) fn host_runner_with(
    root: &Path,
    store: &Store,
    host: &str,
    forge: &str,
    max_workers: u32,
    worker: &str,
) -> Runner {
    let config = format!(
        r#"
[paths]
data_dir = "{data}"
[runner]
host_name = "{host}"
max_workers = {max_workers}
[worker]
{worker}
[github]
api_url = "http://127.0.0.1:9"
request_timeout = "1s"
[repos.app]
path = "{repo}"
forge = "{forge}"
github = "o/app"
remote = "origin"
base = "main"
"#,
        data = root.join(format!("data-{host}")).display(),
        repo = root.join(host).display(),
    );
    Runner::new(Config::parse(&config).unwrap(), store.clone()).unwrap()
}

pub(crate) async fn store_with_runs(root: &Path, n: usize) -> (Store, Vec<Run>) {
    let store = Store::open(&format!("sqlite://{}", root.join("executor.db").display())).await.unwrap();
    store.migrate().await.unwrap();
    let mut runs = Vec::new();
    for i in 1..=n {
        let gid = TaskGid::parse(&format!("p{i}")).unwrap();
        let task = NewTask { description: Some("work".into()), ..Default::default() };
        store.upsert_task(&gid, &task, Actor::Cli).await.unwrap();
        store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Analyzer, None).await.unwrap();
        store.set_task_status(&gid, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
        runs.push(store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap());
    }
    (store, runs)
}
