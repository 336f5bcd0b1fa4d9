//! Write-back to GitLab issues through the real binary: a GitLab issue goes from intake to a complete
//! pull request on the local forge, and the issue shows exactly two notes, in order — the pull request
//! opened, then ready for review — though the runner was killed (SIGKILL) while GitLab held the answer
//! to the first note it had already added. Intake again reads none of them back as task text, and
//! `doctor` reads the project with the token, without writing.

use std::time::Duration;

use chrono::Utc;
use executor::domain::{TaskGid, WritebackEvent, WritebackStatus};

mod common;
#[path = "fake_gitlab_issues/mod.rs"]
mod fake_gitlab_issues;
mod runner_support;
mod writeback_support;
use fake_gitlab_issues::{FakeGitLab, PROJECT_ID, PROJECT_PATH, WriteFault, issue};
use runner_support::Env;
use writeback_support::{Credential, doctor_check, kill_the_runner_once_written, run, run_until_complete};

const TOKEN: &str = "glpat-fake-gitlab-token-0123456789";
const GITLAB: Credential = Credential { var: "WB_GITLAB_TOKEN", value: TOKEN };
const IID: u64 = 1207;

fn gid() -> String {
    format!("gl_{PROJECT_ID}-{IID}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitlab_issue_hears_of_its_pull_request_and_completion_once_through_a_killed_runner() {
    drive(Env::new(&[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn the_same_on_postgresql() {
    let Some(db) = common::postgres("runner_writeback_gitlab_issues_on_postgresql").await else { return };
    let env = Env::new(&[]);
    env.use_database(&db.url);
    drive(env).await;
}

/// `env` is the binary's temporary home, on SQLite or pointed at another database.
async fn drive(env: Env) {
    let fake = FakeGitLab::start(TOKEN).await;
    fake.put_issue(issue(IID, "Add the feature file", Utc::now()));
    env.append_config(&format!(
        "\n[gitlab]\nurl = \"{}\"\ntoken_env = [\"WB_GITLAB_TOKEN\"]\n\n\
         [[sources]]\nname = \"gitlab\"\nkind = \"gitlab_issues\"\ngitlab = \"{PROJECT_PATH}\"\n\
         labels = [\"executor\"]\nrepo = \"app\"\nwriteback_timeout = \"20s\"\n",
        fake.url
    ));
    run(&env, GITLAB, &["intake"]).await;
    run(&env, GITLAB, &["approve", "--skip-triage", &gid()]).await;
    let store = env.store().await;

    // GitLab adds the first note and holds its answer; the runner is killed while it waits.
    fake.fail_next_write(WriteFault::AppliedThenLate(Duration::from_secs(60)));
    kill_the_runner_once_written(&env, GITLAB, &store, || !fake.notes(IID).is_empty()).await;
    let rows = store.writebacks(Some(&gid())).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].event, rows[0].status, rows[0].attempts),
        (WritebackEvent::PrOpened, WritebackStatus::Pending, 1)
    );

    // The killed attempt's hold passes (as two minutes would), and cron starts the runner again.
    store.make_writebacks_due_for_tests().await.unwrap();
    run_until_complete(&env, GITLAB, &store, &gid()).await;

    let rows = store.writebacks(Some(&gid())).await.unwrap();
    let events: Vec<_> = rows.iter().map(|w| (w.event, w.status)).collect();
    assert_eq!(
        events,
        [
            (WritebackEvent::PrOpened, WritebackStatus::Delivered),
            (WritebackEvent::Complete, WritebackStatus::Delivered)
        ]
    );
    assert_eq!(rows[0].attempts, 2, "the retry found the killed attempt's note");
    let notes = fake.notes(IID);
    assert_eq!(notes.len(), 2, "{notes:#?}");
    assert!(notes[0].starts_with("executor opened a pull request for this task: "), "{}", notes[0]);
    assert!(notes[1].starts_with("The pull request is ready for your review: "), "{}", notes[1]);
    for (note, row) in notes.iter().zip(&rows) {
        assert!(note.ends_with(&format!("<!-- executor {} -->", row.marker)), "{note}");
        assert!(!note.contains(TOKEN));
    }
    assert_eq!(fake.count("POST", "/notes"), 2, "one post per message: the retry looked first");

    // Intake again (the issue edited since) reads no note back as task text.
    let mut edited = issue(IID, "Add the feature file", Utc::now());
    edited["notes"] = serde_json::json!(notes);
    fake.put_issue(edited);
    run(&env, GITLAB, &["intake"]).await;
    let t = store.task(&TaskGid::parse(&gid()).unwrap()).await.unwrap();
    let text = format!("{:?} {:?} {:?}", t.description, t.notes, t.revision_notes);
    assert!(!text.contains("executor wb-") && !text.contains("pull request"), "{text}");

    // `doctor` reads the project with the token, without writing; a wrong token fails and says where
    // the token comes from.
    let writes = || fake.requests().iter().filter(|r| r.method != "GET").count();
    let writes_before = writes();
    let check = doctor_check(&env, GITLAB, "gitlab_issues gitlab").await;
    assert_eq!(check["outcome"], "pass", "{check:#}");
    assert_eq!(writes(), writes_before);
    let wrong = Credential { var: "WB_GITLAB_TOKEN", value: "glpat-revoked-000000000000" };
    let check = doctor_check(&env, wrong, "gitlab_issues gitlab").await;
    assert_eq!(check["outcome"], "fail", "{check:#}");
    assert!(check.to_string().contains("WB_GITLAB_TOKEN"), "{check:#}");
}
