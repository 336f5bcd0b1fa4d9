//! Tests of the fake GitLab itself, with reqwest as the client, for what the soak relies on: a write
//! carried out late or never answered, a request never answered, the notes the client posted, and the
//! pipelines pushes start (the default jobs, and pushes that start none).

#[path = "fake_gitlab/mod.rs"]
mod fake_gitlab;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fake_gitlab::{FakeGitLab, Fault};
use serde_json::json;

const PROJECT: &str = "group/app";
const NOTES: &str = "/api/v4/projects/group%2Fapp/merge_requests/1/notes";

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").args(args).current_dir(dir).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Posts a note with a client that gives up after 300 ms; whether an answer came.
async fn post_note(fake: &FakeGitLab, body: &str) -> bool {
    let client = reqwest::Client::builder().timeout(Duration::from_millis(300)).build().unwrap();
    let sent = client
        .post(format!("{}{NOTES}", fake.url))
        .header("private-token", fake.token())
        .json(&json!({ "body": body }))
        .send()
        .await;
    sent.is_ok()
}

#[tokio::test]
async fn a_write_lands_late_or_unanswered_and_a_hang_carries_nothing_out() {
    let fake = FakeGitLab::start().await;
    fake.add_project(PROJECT, None);
    fake.set_branch(PROJECT, "feature", "abc");
    fake.create_mr(PROJECT, "feature", "A change", "abc");
    fake.set_username("alex");

    fake.fail_next(Fault::Hang, 1);
    assert!(!post_note(&fake, "hung").await, "a hang is never answered");
    fake.fail_next(Fault::AppliedUnanswered, 1);
    assert!(!post_note(&fake, "unanswered").await, "never answered");
    fake.fail_next(Fault::AppliedLate(800), 1);
    assert!(!post_note(&fake, "late").await, "answered after the client gave up");
    let bodies = |fake: &FakeGitLab| fake.posted_notes().into_iter().map(|n| n.body).collect::<Vec<_>>();
    assert_eq!(bodies(&fake), ["unanswered"], "the late one is not there yet, the hung one never");
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(bodies(&fake), ["unanswered", "late"]);
    let notes = fake.mr(PROJECT, 1).notes();
    assert!(notes.iter().all(|n| n.author == "alex"), "posted as the token's user: {notes:?}");
    assert_eq!(fake.counts().faults.values().sum::<usize>(), 3);
}

#[tokio::test]
async fn pushes_start_the_default_pipeline_unless_told_to_skip() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, work) = (dir.path().join("remote.git"), dir.path().join("work"));
    git(dir.path(), &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()]);
    git(dir.path(), &["clone", "-q", bare.to_str().unwrap(), work.to_str().unwrap()]);
    let fake = FakeGitLab::start().await;
    fake.add_project(PROJECT, Some(bare));
    fake.set_default_pipeline(PROJECT, &[("ci", "PENDING")]);
    fake.skip_push_pipelines(PROJECT, 1);
    for branch in ["skipped", "started"] {
        git(&work, &["checkout", "-q", "-B", branch]);
        std::fs::write(work.join(branch), "x").unwrap();
        git(&work, &["add", "."]);
        git(&work, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", branch]);
        git(&work, &["push", "-q", "origin", branch]);
        // Any request makes the fake follow the pushes.
        let client = reqwest::Client::new();
        let created = client
            .post(format!("{}/api/v4/projects/group%2Fapp/merge_requests", fake.url))
            .header("private-token", fake.token())
            .json(&json!({ "source_branch": branch, "target_branch": "main", "title": branch }))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
    }
    let pipelines = fake.pipelines(PROJECT);
    let refs: Vec<&str> = pipelines.iter().map(|p| p.reference.as_str()).collect();
    assert_eq!(refs, ["started"], "the first push started none");
    assert_eq!((pipelines[0].jobs[0].name.as_str(), pipelines[0].jobs[0].status.as_str()), ("ci", "PENDING"));
    // A pipeline created through the API has the default jobs too.
    let client = reqwest::Client::new();
    let url = format!("{}/api/v4/projects/group%2Fapp/pipeline?ref=skipped", fake.url);
    let created = client.post(url).header("private-token", fake.token()).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let last = fake.pipelines(PROJECT).pop().unwrap();
    assert_eq!((last.reference.as_str(), last.jobs[0].name.as_str()), ("skipped", "ci"));
}
