//! `ci_trigger = "rerun"` on a head GitHub never ran a workflow for: no error every tick, a fallback
//! (a dispatch when a workflow is named, else a wait) and the human told after `runner.check_timeout`,
//! with the trigger that triggered nothing named as the likely cause.

use crate::fake_github::PostedKind;
use crate::faults::{past_check_grace, run_in_pr};
use crate::github_support::{GhEnv, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerun_with_no_workflow_run_waits_and_tells_the_human_after_check_timeout() {
    let env = GhEnv::new(&[], "").await;
    env.edit_config("ci_trigger = \"workflow:ci.yml\"", "ci_trigger = \"rerun\"");
    env.edit_config("[runner]\n", "[runner]\ncheck_timeout = \"3s\"\n");
    let run = run_in_pr(&env, "1801").await;
    let number = run.pr_number.unwrap();
    past_check_grace().await;
    // The old code failed here, and on every tick after: "no workflow run exists at … to re-run".
    for _ in 0..2 {
        let out = env.runner().await;
        assert!(out.status.success(), "the runner failed:\n{}", text(&out));
    }
    assert!(env.fake.reruns().is_empty() && env.fake.dispatches().is_empty());
    // The wait says nothing was triggered (it once said "CI was triggered at …").
    let store = env.store().await;
    let waiting = store.run_memory(run.id).await.unwrap().last_decision.unwrap_or_default();
    assert!(
        waiting.contains("executor triggered no CI: ci_trigger = \"rerun\" found no workflow run"),
        "{waiting}"
    );
    let told = |env: &GhEnv| {
        env.fake
            .posted_comments()
            .into_iter()
            .filter(|c| c.kind == PostedKind::IssueComment && c.number == number)
            .filter(|c| c.body.contains("for checks that have not finished"))
            .count()
    };
    assert_eq!(told(&env), 0, "told before check_timeout");
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    for _ in 0..2 {
        let out = env.runner().await;
        assert!(out.status.success(), "the runner failed:\n{}", text(&out));
    }
    assert_eq!(told(&env), 1, "{:?}", env.fake.posted_comments());
    // The notice names the trigger that triggered nothing as the likely cause.
    let notice =
        env.fake.posted_comments().into_iter().find(|c| c.body.contains("for checks that have not finished"));
    let notice = notice.map(|c| c.body).unwrap_or_default();
    assert!(notice.contains("The likely cause: executor triggered no CI at this head"), "{notice}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerun_with_a_named_workflow_dispatches_it_when_the_head_has_no_run() {
    let env = GhEnv::new(&[], "").await;
    env.edit_config("ci_trigger = \"workflow:ci.yml\"", "ci_trigger = \"rerun:ci.yml\"");
    let run = run_in_pr(&env, "1802").await;
    past_check_grace().await;
    let out = env.runner().await;
    assert!(out.status.success(), "the runner failed:\n{}", text(&out));
    assert_eq!(env.fake.dispatches(), [("ci.yml".to_string(), run.branch_name.clone().unwrap())]);
    assert!(env.fake.reruns().is_empty());
}
