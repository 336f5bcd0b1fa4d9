//! Write-back to Jira through the real binary: a Jira issue goes from intake to a complete pull
//! request on the local forge, and the issue shows exactly two comments, in order — the pull request
//! opened, then ready for review with its summary — with the pull request linked once, and moves to
//! "In Progress", then "In Review", though the runner was killed (SIGKILL) while Jira held the answer
//! to the first comment it had already written. Intake again reads none of them back as task text,
//! and `doctor` asks Jira who the token is and whether the query is valid, without writing.

use std::time::Duration;

use chrono::Utc;
use executor::domain::{TaskGid, WritebackEvent, WritebackStatus};

mod common;
#[path = "fake_jira/mod.rs"]
mod fake_jira;
mod runner_support;
mod writeback_support;
use fake_jira::{FakeJira, WriteFault, basic, issue};
use runner_support::Env;
use writeback_support::{
    Credential, assert_opened_then_ready_once, doctor_check, kill_the_runner_once_written, run,
    run_until_complete,
};

const TOKEN: &str = "ATATT3x-fake-jira-token-0123456789";
const EMAIL: &str = "bot@acme.com";
const JIRA: Credential = Credential { var: "WB_JIRA_TOKEN", value: TOKEN };
const ID: &str = "11207";

fn gid() -> String {
    format!("jira_{ID}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jira_issue_hears_of_its_pull_request_and_completion_once_through_a_killed_runner() {
    drive(Env::new(&[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn the_same_on_postgresql() {
    let Some(db) = common::postgres("runner_writeback_jira_on_postgresql").await else { return };
    let env = Env::new(&[]);
    env.use_database(&db.url);
    drive(env).await;
}

/// `env` is the binary's temporary home, on SQLite or pointed at another database.
async fn drive(env: Env) {
    let fake = FakeJira::start(&basic(EMAIL, TOKEN)).await;
    fake.put_issue(issue(1207, "APP", "Add the feature file", "To Do", Utc::now()));
    env.append_config(&format!(
        "\n[[sources]]\nname = \"jira\"\nkind = \"jira\"\nbase_url = \"{}\"\nemail = \"{EMAIL}\"\n\
         jql = \"project = APP AND status = 'To Do'\"\ntoken_env = \"WB_JIRA_TOKEN\"\nrepo = \"app\"\n\
         writeback_timeout = \"20s\"\n\
         writeback_transitions = {{ pr_opened = \"In Progress\", complete = \"Request Review\" }}\n",
        fake.url
    ));
    run(&env, JIRA, &["intake"]).await;
    run(&env, JIRA, &["approve", "--skip-triage", &gid()]).await;
    let store = env.store().await;

    // Jira writes the first comment and holds its answer; the runner is killed while it waits.
    fake.fail_next_write(WriteFault::AppliedThenLate(Duration::from_secs(60)));
    kill_the_runner_once_written(&env, JIRA, &store, || !fake.comments(ID).is_empty()).await;
    let rows = store.writebacks(Some(&gid())).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].event, rows[0].status, rows[0].attempts),
        (WritebackEvent::PrOpened, WritebackStatus::Pending, 1)
    );

    // The killed attempt's hold passes (as two minutes would), and cron starts the runner again.
    store.make_writebacks_due_for_tests().await.unwrap();
    run_until_complete(&env, JIRA, &store, &gid()).await;

    let comments = fake.comments(ID);
    assert_opened_then_ready_once(&env, JIRA, &store, &gid(), &comments).await;
    assert_eq!(fake.count("POST", "/comment"), 2, "one post per message: the retry looked first");
    assert_eq!(fake.status_of(ID).as_deref(), Some("In Review"));
    let links = fake.links(ID);
    assert_eq!(links.len(), 1, "the pull request linked once: {links:?}");
    let run_pr = store.list_runs(&Default::default()).await.unwrap()[0].pr_url.clone();
    assert_eq!(links[0]["object"]["url"].as_str(), run_pr.as_deref());

    // Intake again (the issue edited since) reads no comment back as task text.
    let mut edited = issue(1207, "APP", "Add the feature file", "To Do", Utc::now());
    edited["fields"]["comment"] = serde_json::json!({"comments": comments});
    fake.put_issue(edited);
    run(&env, JIRA, &["intake"]).await;
    let t = store.task(&TaskGid::parse(&gid()).unwrap()).await.unwrap();
    let text = format!("{:?} {:?} {:?}", t.description, t.notes, t.revision_notes);
    assert!(!text.contains("[executor wb-") && !text.contains("pull request"), "{text}");

    // `doctor` asks Jira who the token is and whether the query is valid, without writing.
    let writes =
        || fake.requests().iter().filter(|r| r.method == "POST" && !r.path.contains("/search")).count();
    let writes_before = writes();
    let check = doctor_check(&env, JIRA, "jira jira").await;
    assert_eq!(check["outcome"], "pass", "{check:#}");
    assert!(check["detail"].as_str().unwrap().contains("as Executor Bot"), "{check:#}");
    let check = doctor_check(&env, JIRA, "writeback jira").await;
    assert_eq!(check["outcome"], "pass", "{check:#}");
    assert_eq!(writes(), writes_before);
    let wrong = Credential { var: "WB_JIRA_TOKEN", value: "revoked" };
    let check = doctor_check(&env, wrong, "jira jira").await;
    assert_eq!(check["outcome"], "fail", "{check:#}");
    let told = check.to_string();
    assert!(told.contains("WB_JIRA_TOKEN") && told.contains("id.atlassian.com"), "{check:#}");
}
