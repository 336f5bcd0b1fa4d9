//! Write-back through the real binary (issue 24): an Asana task goes from intake to a complete pull
//! request on the local forge, and the Asana task shows exactly two comments, in order — the pull
//! request opened, then ready for review with its summary — though the runner was killed (SIGKILL)
//! while Asana held the answer to the first one it had already written. Intake again reads none of
//! them back as task text.

use std::time::Duration;

use executor::domain::{TaskGid, WritebackEvent, WritebackStatus};
use executor::store::RunFilter;

mod common;
#[path = "fake_asana/mod.rs"]
mod fake_asana;
mod runner_support;
mod writeback_support;
use fake_asana::{FakeAsana, WriteFault, task};
use runner_support::Env;
use writeback_support::{
    Credential, assert_opened_then_ready_once, command, doctor_check, kill_the_runner_once_written,
    merge_the_pull_request, run, run_until_complete,
};

const TOKEN: &str = "2/1234567890/fake-asana-token";
const ASANA: Credential = Credential { var: "WB_ASANA_TOKEN", value: TOKEN };
const GID: &str = "1207";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asana_task_hears_of_its_pull_request_and_completion_once_through_a_killed_runner() {
    drive(Env::new(&[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn the_same_on_postgresql() {
    let Some(db) = common::postgres("runner_writeback_on_postgresql").await else { return };
    let env = Env::new(&[]);
    env.use_database(&db.url);
    drive(env).await;
}

/// `env` is the binary's temporary home, on SQLite or pointed at another database.
async fn drive(env: Env) {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("1", task(GID, "Add the feature file", "2026-11-01T10:00:00.000Z"));
    env.append_config(&format!(
        "\n[[sources]]\nname = \"inbox\"\nkind = \"asana\"\nprojects = [\"1\"]\napi_url = \"{}\"\n\
         token_env = \"WB_ASANA_TOKEN\"\nrepo = \"app\"\nwriteback_timeout = \"20s\"\n",
        fake.url
    ));
    run(&env, ASANA, &["intake"]).await;
    run(&env, ASANA, &["approve", "--skip-triage", GID]).await;
    let store = env.store().await;

    // Asana writes the first comment and holds its answer; the runner is killed while it waits.
    fake.fail_next_write(WriteFault::AppliedThenLate(Duration::from_secs(60)));
    kill_the_runner_once_written(&env, ASANA, &store, || !fake.comments(GID).is_empty()).await;
    let rows = store.writebacks(Some(GID)).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].event, rows[0].status, rows[0].attempts),
        (WritebackEvent::PrOpened, WritebackStatus::Pending, 1)
    );

    // The killed attempt's hold passes (as two minutes would), and cron starts the runner again.
    store.make_writebacks_due_for_tests().await.unwrap();
    run_until_complete(&env, ASANA, &store, GID).await;

    let comments = fake.comments(GID);
    assert_opened_then_ready_once(&env, ASANA, &store, GID, &comments).await;

    // The listing shows them; intake again reads no comment back as task text.
    let out = run(&env, ASANA, &["writeback", GID]).await;
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("pr_opened") && listing.contains("delivered (9"), "{listing}");
    fake.set_project_task("1", task(GID, "Add the feature file", "2026-11-02T10:00:00.000Z"));
    run(&env, ASANA, &["intake"]).await;
    let t = store.task(&TaskGid::parse(GID).unwrap()).await.unwrap();
    let text = format!("{:?} {:?} {:?}", t.description, t.notes, t.revision_notes);
    assert!(!text.contains("[executor wb-") && !text.contains("pull request"), "{text}");

    // `doctor` asks Asana whether the token may comment, without writing.
    let posts_before = fake.requests().iter().filter(|r| r.method == "POST").count();
    let check = doctor_check(&env, ASANA, "writeback inbox").await;
    assert_eq!(check["outcome"], "pass", "{check:#}");
    assert!(check["detail"].as_str().unwrap().contains("may comment"), "{check:#}");
    assert_eq!(fake.requests().iter().filter(|r| r.method == "POST").count(), posts_before);

    // The source asks for the merge too, and to complete the task then; a human merges.
    env.edit_config(
        "writeback_timeout = \"20s\"",
        "writeback_timeout = \"20s\"\nwriteback = [\"pr_opened\", \"complete\", \"abandoned\", \"merged\"]\n\
         writeback_complete_on_merge = true",
    );
    merge_the_pull_request(&store, GID).await;
    run(&env, ASANA, &["runner"]).await;
    run(&env, ASANA, &["runner"]).await;
    let comments = fake.comments(GID);
    assert_eq!(comments.len(), 3, "{comments:#?}");
    assert!(comments[2].starts_with("The pull request was merged: "), "{}", comments[2]);
    assert!(fake.completed(GID), "the task is marked complete in Asana");
}

/// The events a source opts into: the triage's skip (with its reason), a human's approval, and a
/// human's `executor runs abandon` (with what to do), each told once and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_hears_of_a_skip_an_approval_and_a_humans_abandonment_when_it_asks() {
    let fake = FakeAsana::start(TOKEN).await;
    let mut skipped = task("1300", "Redo the logo", "2026-11-01T10:00:00.000Z");
    skipped["notes"] = "FAKE_ANALYZER=skip".into();
    fake.add_project_task("1", skipped);
    fake.add_project_task("1", task(GID, "Add the feature file", "2026-11-01T10:00:00.000Z"));
    fake.add_project_task("1", task("1400", "Same as 1207", "2026-11-01T10:00:00.000Z"));
    let env = Env::new(&[]);
    env.append_config(&format!(
        "\n[[sources]]\nname = \"inbox\"\nkind = \"asana\"\nprojects = [\"1\"]\napi_url = \"{}\"\n\
         token_env = \"WB_ASANA_TOKEN\"\nrepo = \"app\"\nwriteback = [\"skipped\", \"approved\", \"abandoned\"]\n",
        fake.url
    ));
    run(&env, ASANA, &["analyzer"]).await;
    let store = env.store().await;
    let gid = TaskGid::parse(GID).unwrap();
    let status = |t: executor::domain::Task| t.status.as_str().to_string();
    assert_eq!(status(store.task(&TaskGid::parse("1300").unwrap()).await.unwrap()), "skip");
    run(&env, ASANA, &["approve", GID]).await;
    run(&env, ASANA, &["skip", "1400", "--reason", "duplicate of 1207"]).await;
    // A skip that cannot land (the task is skipped already) records nothing more.
    let again = command(&env, ASANA, &["skip", "1400", "--reason", "again"]).output().unwrap();
    assert!(!again.status.success());
    // One runner: the run is created (the approval recorded first), and it goes as far as it can.
    run(&env, ASANA, &["runner"]).await;
    let filter = RunFilter { task_gid: Some(gid.clone()), ..Default::default() };
    let run_id = store.list_runs(&filter).await.unwrap()[0].id.to_string();
    run(&env, ASANA, &["runs", "abandon", &run_id, "--reason", "not needed any more"]).await;
    run(&env, ASANA, &["runner"]).await;

    let skip = fake.comments("1300");
    assert_eq!(skip.len(), 1, "{skip:#?}");
    assert!(skip[0].starts_with("executor will not work on this task: "), "{}", skip[0]);
    let comments = fake.comments(GID);
    assert_eq!(comments.len(), 2, "{comments:#?}");
    assert!(comments[0].starts_with("This task was approved in executor"), "{}", comments[0]);
    assert!(
        comments[1].starts_with("executor gave up on this task: abandoned by a human: not needed any more")
    );
    assert!(comments[1].contains(&format!("`executor queue retry {GID}`")), "{}", comments[1]);
    let by_human = fake.comments("1400");
    assert_eq!(by_human.len(), 1, "{by_human:#?}");
    assert!(
        by_human[0].starts_with("executor will not work on this task: a human decided: duplicate of 1207")
    );
    let events: Vec<WritebackEvent> = store.writebacks(None).await.unwrap().iter().map(|w| w.event).collect();
    assert_eq!(
        events,
        [
            WritebackEvent::Skipped,
            WritebackEvent::Skipped,
            WritebackEvent::Approved,
            WritebackEvent::Abandoned
        ]
    );
}
