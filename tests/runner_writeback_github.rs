//! Write-back to a GitHub Issues source through the real binary (issue 24): an issue taken in by the
//! intake becomes a complete draft pull request whose body says `Closes #N`, and the issue gets exactly
//! two comments, in order — the pull request opened, then ready for review — though GitHub applied the
//! first and answered 502. A read-only token (403) is told to the human once, on the pull request,
//! and holds nothing back.

#[path = "fake_github/mod.rs"]
mod fake_github;

mod common;
mod github_support;

use std::time::{Duration, Instant};

use executor::domain::{RunState, WritebackEvent, WritebackStatus};
use executor::store::Store;

use fake_github::{Fault, PostedKind};
use github_support::{CiPlayer, GhEnv, REPO, deliver_what_is_left, run_of, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_hears_of_its_pull_request_once_through_a_502_after_the_write() {
    let env = GhEnv::new(&[], "").await;
    let number = env.fake.add_issue(REPO, "Add the feature file", Some("Please add it."), &[]);
    let gid = issues_source(&env, number).await;
    // GitHub applies the first comment on the issue, then its gateway answers 502.
    env.fake.fail_route("issue_comment_create", Fault::AppliedThen(502), 1);
    let store = env.store().await;
    drive_to_complete(&env, &store, &gid).await;
    deliver_what_is_left(&env, &store, &gid).await;

    let run = run_of(&store, &gid).await;
    let pr_number = run.pr_number.unwrap();
    let posted = env.fake.posted_comments();
    let opened = posted.iter().find(|p| p.kind == PostedKind::PullRequest).expect("a pull request");
    assert!(opened.body.ends_with(&format!("\n\nCloses #{number}")), "{}", opened.body);

    let rows = store.writebacks(Some(&gid)).await.unwrap();
    let events: Vec<_> = rows.iter().map(|w| (w.event, w.status)).collect();
    assert_eq!(
        events,
        [
            (WritebackEvent::PrOpened, WritebackStatus::Delivered),
            (WritebackEvent::Complete, WritebackStatus::Delivered)
        ]
    );
    assert_eq!(rows[0].attempts, 2, "the retry found the comment GitHub had applied");
    let comments = env.fake.issue_comments(REPO, number);
    assert_eq!(comments.len(), 2, "{comments:#?}");
    assert!(comments[0].starts_with("executor opened a pull request for this task: "), "{}", comments[0]);
    assert!(comments[0].contains(&format!("/pull/{pr_number}")), "{}", comments[0]);
    assert!(comments[0].ends_with(&format!("<!-- executor {} -->", rows[0].marker)));
    assert!(comments[1].starts_with("The pull request is ready for your review: "), "{}", comments[1]);
    assert!(comments[1].ends_with(&format!("<!-- executor {} -->", rows[1].marker)));

    // `doctor` asks GitHub whether the token reaches the issues, without writing.
    let before = env.fake.posted_comments().len();
    let out = env.exec(&["doctor", "--json"]).await;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check =
        report["checks"].as_array().unwrap().iter().find(|c| c["name"] == "writeback issues").cloned();
    let check = check.unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(check["outcome"], "pass", "{check:#}");
    assert!(check["detail"].as_str().unwrap().contains("reaches octo/app's issues"), "{check:#}");
    assert_eq!(env.fake.posted_comments().len(), before, "nothing written");

    // Intake again: the issue's comments are not task text.
    env.ok(&["intake"]).await;
    let task = store.task(&executor::domain::TaskGid::parse(&gid).unwrap()).await.unwrap();
    let text = format!("{:?} {:?} {:?}", task.description, task.notes, task.revision_notes);
    assert!(text.contains("Please add it."), "{text}");
    assert!(!text.contains("<!-- executor") && !text.contains("pull request"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_token_is_told_once_and_the_run_completes() {
    let env = GhEnv::new(&[], "").await;
    let number = env.fake.add_issue(REPO, "Add the feature file", Some("Please add it."), &[]);
    let gid = issues_source(&env, number).await;
    // Every comment on the issue is refused: the token may read issues, not write them.
    env.fake.fail_route("issue_comment_create", Fault::Status(403), 1);
    let store = env.store().await;
    drive_to_complete(&env, &store, &gid).await;
    deliver_what_is_left(&env, &store, &gid).await;

    let rows = store.writebacks(Some(&gid)).await.unwrap();
    assert_eq!(rows[0].status, WritebackStatus::Refused, "{rows:?}");
    assert!(rows[0].last_error.as_deref().unwrap_or("").contains("Issues read & write"), "{rows:?}");
    // A refusal is not retried; the later message went (the fault was one answer).
    assert_eq!(rows[1].status, WritebackStatus::Delivered);
    let run = run_of(&store, &gid).await;
    let told: Vec<_> = store
        .notices(Some(run.id))
        .await
        .unwrap()
        .into_iter()
        .filter(|n| n.notice_key.as_deref() == Some("writeback_refused:issues"))
        .collect();
    assert_eq!(told.len(), 1, "told once: {told:?}");
    assert!(told[0].message.starts_with("@alex ") && told[0].message.contains("403"), "{}", told[0].message);
    let on_pr = env.fake.posted_comments().into_iter().filter(|p| p.number == run.pr_number.unwrap());
    assert_eq!(on_pr.filter(|p| p.body.contains("could not tell source")).count(), 1);
}

/// Adds a GitHub Issues source for `octo/app`, takes issue `number` in and approves it; its gid.
async fn issues_source(env: &GhEnv, number: i64) -> String {
    let path = env.path().join("executor.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(
        "\n[[sources]]\nname = \"issues\"\nkind = \"github_issues\"\ngithub = \"octo/app\"\nrepo = \"app\"\n",
    );
    std::fs::write(&path, config).unwrap();
    env.ok(&["intake"]).await;
    let gid = format!("gh_octo.app-{number}");
    env.ok(&["approve", "--skip-triage", &gid]).await;
    gid
}

async fn drive_to_complete(env: &GhEnv, store: &Store, gid: &str) {
    let mut ci = CiPlayer::green();
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        let out = env.runner().await;
        assert!(out.status.success(), "the runner failed:\n{}", text(&out));
        let run = run_of(store, gid).await;
        if run.state == RunState::Complete {
            return;
        }
        assert_ne!(run.state, RunState::Abandoned, "{:?}", store.run_memory(run.id).await.unwrap());
        if let (Some(number), Some(branch)) = (run.pr_number, run.branch_name.clone()) {
            ci.play(env, number, &branch);
        }
        assert!(
            Instant::now() < deadline,
            "stuck in {}: {:?}",
            run.state,
            store.run_memory(run.id).await.unwrap()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
