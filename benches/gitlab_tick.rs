//! What a runner tick costs on GitLab, in requests per merge request: run with
//! `cargo bench --bench gitlab_tick [-- N...]` (default N = 10 100 500). Prints figures next to
//! GitHub's (benches/github_tick.rs: GraphQL points per pull request per tick); asserts nothing.
//!
//! Setup per N: the fake GitLab (`tests/fake_gitlab`) in this process; one project with N open draft
//! merge requests, each with a green `test` job at its head; a fresh SQLite store with N runs `complete`
//! with their merge request recorded, so a tick is pure observation. Ticks: "all changed" (nothing kept
//! yet), "nothing changed" (the `updated_after` listing is empty), "fresh process" (a new runner on the
//! same database, as cron starts one: it begins from what the last one kept), "few changed" (~1% got a
//! label). Then the same with every pipeline still running (`-- --pending N`, default 200), which is asked
//! every tick. GitLab charges no points per request: its limits count requests, and weigh each GraphQL
//! query's complexity against a limit before running it (`executor doctor` reads the real weight of a
//! batch from the instance; a refused batch is asked again in halves).

#[path = "../tests/fake_gitlab/mod.rs"]
mod fake_gitlab;
#[path = "bench_support/runs.rs"]
mod runs;

use std::time::{Duration, Instant};

use executor::config::{Config, Repo};
use executor::runner::Runner;
use executor::store::Store;
use fake_gitlab::{Counts, FakeGitLab};

const TOKEN_VAR: &str = "EXECUTOR_BENCH_GITLAB_TOKEN";
const PROJECT: &str = "group/app";
/// GitHub's figures (benches/github_tick.rs), printed alongside: ≤ 1 GraphQL request per 25 pull
/// requests, 0 points when nothing changed, ≤ 0.15 points per pull request per tick with CI pending.
const GITHUB: &str = "GitHub: <= 1 GraphQL request per 25 PRs; 0 points when nothing changed; <= 0.15 points/PR/tick with CI pending";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let pending: Option<usize> =
        args.iter().position(|a| a == "--pending").and_then(|i| args.get(i + 1)).and_then(|a| a.parse().ok());
    let mut sizes: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i == 0 || args[i - 1] != "--pending")
        .filter_map(|(_, a)| a.parse().ok())
        .collect();
    if sizes.is_empty() && pending.is_none() {
        sizes = vec![10, 100, 500];
    }
    let pending = pending.or((args.is_empty()).then_some(200));
    // SAFETY: `set_var` is unsound only while another thread may read the environment; this is the
    // first thing the process does, before the fake's thread or any runtime exists.
    unsafe { std::env::set_var(TOKEN_VAR, "glpat-fake-token") };
    let fake = FakeGitLab::start_in_background();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    println!("gitlab_tick: N open draft MRs (runs complete) on the fake GitLab; {GITHUB}\n");
    println!(
        "{:>5}  {:<18} {:>5} {:>8} {:>10} {:>10}  {:>9}",
        "N", "tick", "REST", "GraphQL", "GraphQL/MR", "requests/MR", "wall"
    );
    let runs = sizes.iter().map(|n| (*n, false)).chain(pending.map(|n| (n, true)));
    for (n, pending) in runs {
        if pending {
            println!("every pipeline still running:");
        }
        runtime.block_on(ticks(&fake, n, pending));
    }
}

async fn ticks(fake: &FakeGitLab, n: usize, pending: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo_dir = dir.path().join("repo");
    std::fs::create_dir(&repo_dir).expect("repo dir");
    let project = format!("{PROJECT}{n}{}", if pending { "p" } else { "" });
    fake.add_project(&project, None);
    let status = if pending { "RUNNING" } else { "SUCCESS" };
    let mut iids = Vec::with_capacity(n);
    for i in 0..n {
        let sha = format!("{:040x}", 0xbe_0000 + i);
        iids.push(fake.create_mr(&project, &format!("executor/b{i}"), &format!("Draft: task {i}"), &sha));
        fake.add_pipeline(&project, &sha, &[("test", status)]);
    }
    let mut config = Config::default();
    config.paths.data_dir = dir.path().join("data").display().to_string();
    config.gitlab = executor::config::GitLab { token_env: vec![TOKEN_VAR.into()], ..fake.config() };
    let repo = Repo {
        forge: "gitlab".into(),
        gitlab: project.clone(),
        required_checks: vec!["test".into()],
        ..Repo::at(&repo_dir.display().to_string())
    };
    config.repos.insert("app".into(), repo);
    Store::open(&config.database_url()).await.expect("open").migrate().await.expect("migrate");
    let store = Store::open(&config.database_url()).await.expect("reopen");
    for (i, iid) in iids.iter().enumerate() {
        let url = format!("{}/{project}/-/merge_requests/{iid}", fake.url);
        runs::complete_run(&store, i, *iid, &url, &dir.path().join(format!("wt{i}"))).await;
    }
    let mut runner = Runner::new(config.clone(), store.clone()).expect("runner");
    let touched = (n / 100).max(1);
    for label in ["1 all changed", "2 nothing changed", "3 fresh process", "4 few changed"] {
        if label.starts_with('3') {
            runner = Runner::new(config.clone(), store.clone()).expect("runner");
        }
        if label.starts_with('4') {
            for iid in iids.iter().step_by(n / touched).take(touched) {
                fake.edit_mr(&project, *iid, |m| m.labels.push("touched".into()));
            }
        }
        let before = fake.counts();
        let start = Instant::now();
        let report = runner.tick().await.expect("tick");
        let wall = start.elapsed();
        assert!(report.failures.is_empty(), "tick failed: {:?}", report.failures);
        let spent = delta(&before, &fake.counts());
        println!(
            "{n:>5}  {label:<18} {:>5} {:>8} {:>10.3} {:>10.3}  {:>9}",
            spent.rest,
            spent.graphql,
            spent.graphql as f64 / n as f64,
            (spent.rest + spent.graphql) as f64 / n as f64,
            format!("{} ms", wall.as_millis()),
        );
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
}

fn delta(before: &Counts, after: &Counts) -> Counts {
    Counts { rest: after.rest - before.rest, graphql: after.graphql - before.graphql, ..Counts::default() }
}
