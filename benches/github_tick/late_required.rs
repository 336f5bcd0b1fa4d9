//! Issue 34 item 1: a required check that registers only after every other check went green (a
//! `needs:`-gated job, a second workflow, an external status). N draft pull requests whose `ci` check
//! is green and whose runs sit in `pr`, reviewed green at their heads, waiting only for the required
//! `macOS UI Tests`, which has not registered yet. Four ticks: "1 all changed" (nothing cached yet),
//! "2 required missing" (nothing changed on GitHub: the late check still missing), "3 late check green"
//! (the late check reported green at every head, which does not change a pull request's `updated_at`)
//! and "4 after" (one tick later). Prints the points per pull request per tick and how many runs
//! completed: every one should complete on tick 3, and waiting for the late check should cost what
//! waiting for pending CI costs (`-- --pending 200`).

use std::time::{Duration, Instant};

use executor::config::{Config, Repo};
use executor::domain::{Actor, QueueStatus, RunState, TaskGid};
use executor::runner::Runner;
use executor::store::{NewTask, Store};

use crate::fake_github::FakeGitHub;
use crate::{LATENCY, NAME, OWNER, REPO, TOKEN_VAR, delta};

/// The check that registers late, as in the seed.
const LATE: &str = "macOS UI Tests";

pub async fn ticks(fake: FakeGitHub, n: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo_dir = dir.path().join("repo");
    std::fs::create_dir(&repo_dir).expect("repo dir");
    fake.add_repo(OWNER, NAME, None);
    let mut prs = Vec::with_capacity(n);
    for i in 0..n {
        let sha = format!("{:040x}", 0x1a7e_0000 + i);
        let number = fake.create_pr(REPO, &format!("executor/late{i}"), &format!("task {i}"), true, &sha);
        fake.add_check_run(REPO, number, &sha, "ci", "COMPLETED", Some("SUCCESS"), None);
        prs.push((number, sha));
    }

    let mut config = Config::default();
    config.paths.data_dir = dir.path().join("data").display().to_string();
    config.github.api_url = fake.api_url();
    config.github.graphql_url = fake.graphql_url();
    config.github.token_env = vec![TOKEN_VAR.to_string()];
    config.repos.insert(
        "app".into(),
        Repo {
            forge: "github".into(),
            github: REPO.into(),
            required_checks: vec!["ci".into(), LATE.into()],
            ..Repo::at(&repo_dir.display().to_string())
        },
    );
    Store::open(&config.database_url()).await.expect("open").migrate().await.expect("migrate");
    // A pool whose connections all start after the migrations (see the same step in `ticks`).
    let store = Store::open(&config.database_url()).await.expect("reopen");
    let mut runs = Vec::with_capacity(n);
    for (i, (number, sha)) in prs.iter().enumerate() {
        runs.push(reviewed_run(&store, i, *number, sha, &dir.path().join(format!("wt{i}"))).await);
    }
    fake.set_latency(LATENCY);
    let mut runner = Runner::new(config.clone(), store.clone()).expect("runner");
    // Observed after the second of their last change, as a runner's ticks are (see `ticks`).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for label in ["1 all changed", "2 required missing", "3 late check green", "4 after"] {
        if label.starts_with('3') {
            for (number, sha) in &prs {
                fake.add_check_run(REPO, *number, sha, LATE, "COMPLETED", Some("SUCCESS"), None);
            }
        }
        let before = fake.counts();
        let start = Instant::now();
        let report = runner.tick().await.expect("tick");
        let wall = start.elapsed();
        let spent = delta(&before, &fake.counts());
        assert!(report.failures.is_empty(), "tick failed: {:?}", report.failures);
        let mut complete = 0;
        for id in &runs {
            if store.run(*id).await.expect("run").state == RunState::Complete {
                complete += 1;
            }
        }
        println!(
            "{n:>5}  {label:<18} {:>5} {:>8} {:>8} {:>7.3}  {:>10} {:>10}  {:>9}  {complete} of {n} runs complete",
            spent.rest,
            spent.graphql,
            spent.graphql_points,
            spent.graphql_points as f64 / n as f64,
            spent.route("graphql:Batch"),
            spent.not_modified,
            format!("{} ms", wall.as_millis()),
        );
        // A completion's notice asks its pull request again before posting (one GraphQL point and one
        // listing each, see `post_on_forge`): the requests by route tell that apart from observing.
        let routes: Vec<String> = spent.by_route.iter().map(|(r, c)| format!("{r} {c}")).collect();
        println!("{:>5}  {:<18} by route: {}", "", "", routes.join(", "));
    }
    println!();
}

/// A run in `pr` for task `L{i}` with pull request `number`, its review passed at `sha`: all it waits
/// for is the late required check.
async fn reviewed_run(store: &Store, i: usize, number: i64, sha: &str, worktree: &std::path::Path) -> i64 {
    let gid = TaskGid::parse(&format!("L{i}")).expect("gid");
    let task = NewTask { description: Some(format!("task {i}")), ..Default::default() };
    store.upsert_task(&gid, &task, Actor::Cli).await.expect("add");
    store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Cli, None).await.expect("triage");
    store.set_task_status(&gid, QueueStatus::Approved, Actor::Cli, None).await.expect("approve");
    let run = store.create_run_for_task(&gid, Actor::Runner).await.expect("run").expect("new run");
    let branch = format!("executor/late{i}");
    store.set_run_workspace(run.id, None, &worktree.display().to_string(), &branch).await.expect("ws");
    for (from, to) in [(RunState::Queued, RunState::InProgress), (RunState::InProgress, RunState::Pr)] {
        store.set_run_state_if(run.id, from, to, None, Actor::Runner, "bench").await.expect("state");
    }
    let url = format!("https://github.com/{REPO}/pull/{number}");
    store.set_run_pr(run.id, None, &url, number).await.expect("pr");
    store.set_run_head(run.id, None, sha).await.expect("head");
    store.set_run_review(run.id, None, "pass", sha).await.expect("review");
    run.id
}
