//! The CLI names a run's change in its repository's forge's words: `runs show`, `runs list` and `queue
//! show` say "merge request", `!N`, `mr` for a GitLab run and "pull request", `#N`, `pr` for a GitHub
//! run, as before.

mod cli_support;

use chrono::Utc;
use cli_support::Sandbox;
use executor::domain::{Actor, TaskGid};
use executor::forge::{Mergeable, PrSnapshot, PrState};
use executor::store::Store;

const REPOS: &str = "\n[repos.lab]\npath = \"/tmp/lab\"\nforge = \"gitlab\"\ngitlab = \"group/lab\"\n\
                     [repos.hub]\npath = \"/tmp/hub\"\nforge = \"github\"\ngithub = \"octo/hub\"\n";

/// Task `gid` of repository `repo` approved, its run given change `number` at `url`, as last observed.
async fn run_with_change(sb: &Sandbox, store: &Store, gid: &str, repo: &str, number: i64, url: &str) -> i64 {
    sb.ok(&["queue", "add", "--gid", gid, "--repo", repo, "--description", "work"]);
    sb.ok(&["approve", "--skip-triage", gid]);
    let run = store.create_run_for_task(&TaskGid::parse(gid).unwrap(), Actor::Runner).await.unwrap().unwrap();
    store.set_run_pr(run.id, None, url, number).await.unwrap();
    let seen = PrSnapshot {
        number,
        url: url.into(),
        state: PrState::Open,
        draft: true,
        head_sha: "abc1234def".into(),
        labels: vec![],
        mergeable: Mergeable::Mergeable,
        checks: vec![],
        comments: vec![],
        observed_at: Utc::now(),
        diff: None,
    };
    store.set_last_snapshot(run.id, None, &serde_json::to_string(&seen).unwrap()).await.unwrap();
    run.id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_show_and_list_say_merge_request_for_gitlab_and_pull_request_for_github() {
    let sb = Sandbox::with_config(REPOS);
    let store =
        Store::open(&format!("sqlite://{}", sb.path().join("data/executor.db").display())).await.unwrap();
    let mr_url = "https://gitlab.test/group/lab/-/merge_requests/12";
    let pr_url = "https://github.test/octo/hub/pull/34";
    let lab = run_with_change(&sb, &store, "L-1", "lab", 12, mr_url).await;
    let hub = run_with_change(&sb, &store, "H-1", "hub", 34, pr_url).await;

    let shown = sb.ok(&["runs", "show", &lab.to_string()]);
    assert!(shown.contains(&format!("\nmerge request:      {mr_url}\n")), "{shown}");
    assert!(shown.contains(&format!("\nmerge request !12 {mr_url} — open (draft), head ")), "{shown}");
    assert!(!shown.contains("pull request") && !shown.contains("#12"), "GitHub's words: {shown}");

    let shown = sb.ok(&["runs", "show", &hub.to_string()]);
    assert!(shown.contains(&format!("\npull request:       {pr_url}\n")), "{shown}");
    assert!(shown.contains(&format!("\npull request #34 {pr_url} — open (draft), head ")), "{shown}");
    assert!(!shown.contains("merge request"), "{shown}");

    let listed = sb.ok(&["runs", "list"]);
    let row =
        |gid: &str| listed.lines().find(|l| l.contains(gid)).unwrap_or_else(|| panic!("{gid}: {listed}"));
    assert!(row("L-1").contains(" !12 "), "{listed}");
    assert!(row("H-1").contains(" #34 "), "{listed}");

    let task = sb.ok(&["queue", "show", "L-1"]);
    assert!(task.contains(&format!(" mr {mr_url} ")), "{task}");
    let task = sb.ok(&["queue", "show", "H-1"]);
    assert!(task.contains(&format!(" pr {pr_url} ")), "{task}");
}
