//! Write-back to Linear through the real binary (issue 24): a Linear issue goes from intake to a
//! complete pull request on the local forge, and the issue shows exactly two comments, in order — the
//! pull request opened, then ready for review with its summary — and moves to "In Progress", then "In
//! Review", then "Done" on the merge, though the runner was killed (SIGKILL) while Linear held the
//! answer to the first comment it had already written. Intake again reads none of them back as task
//! text, and `doctor` asks Linear without writing.

use std::time::Duration;

use executor::domain::{TaskGid, WritebackEvent, WritebackStatus};

mod common;
#[path = "fake_linear/mod.rs"]
mod fake_linear;
mod runner_support;
mod writeback_support;
use fake_linear::{FakeLinear, WriteFault, issue, uuid};
use runner_support::Env;
use writeback_support::{
    Credential, assert_opened_then_ready_once, doctor_check, kill_the_runner_once_written,
    merge_the_pull_request, run, run_until_complete,
};

const TOKEN: &str = "lin_api_fake_linear_key_0123456789";
const LINEAR: Credential = Credential { var: "WB_LINEAR_KEY", value: TOKEN };

fn gid() -> String {
    format!("lin_{}", uuid(1207))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linear_issue_hears_of_its_pull_request_and_completion_once_through_a_killed_runner() {
    drive(Env::new(&[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn the_same_on_postgresql() {
    let Some(db) = common::postgres("runner_writeback_linear_on_postgresql").await else { return };
    let env = Env::new(&[]);
    env.use_database(&db.url);
    drive(env).await;
}

/// `env` is the binary's temporary home, on SQLite or pointed at another database.
async fn drive(env: Env) {
    let fake = FakeLinear::start(TOKEN).await;
    fake.put_issue(issue(1207, "ENG", 7, "Add the feature file", "Todo", "2026-11-01T10:00:00.000Z"));
    let id = uuid(1207);
    env.append_config(&format!(
        "\n[[sources]]\nname = \"linear\"\nkind = \"linear\"\nteams = [\"ENG\"]\napi_url = \"{}\"\n\
         token_env = \"WB_LINEAR_KEY\"\nrepo = \"app\"\nwriteback_timeout = \"20s\"\n\
         writeback_states = {{ pr_opened = \"In Progress\", complete = \"In Review\" }}\n",
        fake.url
    ));
    run(&env, LINEAR, &["intake"]).await;
    run(&env, LINEAR, &["approve", "--skip-triage", &gid()]).await;
    let store = env.store().await;

    // Linear writes the first comment and holds its answer; the runner is killed while it waits.
    fake.fail_next_write(WriteFault::AppliedThenLate(Duration::from_secs(60)));
    kill_the_runner_once_written(&env, LINEAR, &store, || !fake.comments(&id).is_empty()).await;
    let rows = store.writebacks(Some(&gid())).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].event, rows[0].status, rows[0].attempts),
        (WritebackEvent::PrOpened, WritebackStatus::Pending, 1)
    );

    // The killed attempt's hold passes (as two minutes would), and cron starts the runner again.
    store.make_writebacks_due_for_tests().await.unwrap();
    run_until_complete(&env, LINEAR, &store, &gid()).await;

    let comments = fake.comments(&id);
    let rows = assert_opened_then_ready_once(&env, LINEAR, &store, &gid(), &comments).await;
    assert_eq!(fake.count("commentCreate"), 2, "one create per message: the retry asked first");
    assert_eq!(fake.state_of(&id).as_deref(), Some("In Review"));

    // The listing shows them; intake again reads no comment back as task text.
    let out = run(&env, LINEAR, &["writeback", &gid()]).await;
    let listing = String::from_utf8_lossy(&out.stdout);
    let comment_id = executor::writeback::linear_comment_id(&rows[0].marker);
    assert!(listing.contains("pr_opened") && listing.contains(&comment_id), "{listing}");
    let mut edited = issue(1207, "ENG", 7, "Add the feature file", "In Review", "2026-11-02T10:00:00.000Z");
    edited["comments"] = serde_json::json!({"nodes": comments.iter().map(|c| serde_json::json!({"body": c})).collect::<Vec<_>>()});
    fake.put_issue(edited);
    run(&env, LINEAR, &["intake"]).await;
    let t = store.task(&TaskGid::parse(&gid()).unwrap()).await.unwrap();
    let text = format!("{:?} {:?} {:?}", t.description, t.notes, t.revision_notes);
    assert!(!text.contains("[executor wb-") && !text.contains("pull request"), "{text}");

    // `doctor` asks Linear about the key, its team and states, without writing.
    let writes = || fake.count("commentCreate") + fake.count("issueUpdate");
    let writes_before = writes();
    let check = doctor_check(&env, LINEAR, "writeback linear").await;
    assert_eq!(check["outcome"], "pass", "{check:#}");
    assert!(check["detail"].as_str().unwrap().contains("team ENG"), "{check:#}");
    assert_eq!(writes(), writes_before);

    // The source asks for the merge too, and to move the issue to Done then; a human merges.
    env.edit_config(
        "complete = \"In Review\" }",
        "complete = \"In Review\", merged = \"Done\" }\nwriteback = [\"pr_opened\", \"complete\", \"abandoned\", \"merged\"]",
    );
    merge_the_pull_request(&store, &gid()).await;
    run(&env, LINEAR, &["runner"]).await;
    run(&env, LINEAR, &["runner"]).await;
    let comments = fake.comments(&id);
    assert_eq!(comments.len(), 3, "{comments:#?}");
    assert!(comments[2].starts_with("The pull request was merged: "), "{}", comments[2]);
    assert_eq!(fake.state_of(&id).as_deref(), Some("Done"), "the issue moved to Done");
}
