//! Write-back through the real binary (issue 24): an Asana task goes from intake to a complete pull
//! request on the local forge, and the Asana task shows exactly two comments, in order — the pull
//! request opened, then ready for review with its summary — though the runner was killed (SIGKILL)
//! while Asana held the answer to the first one it had already written. Intake again reads none of
//! them back as task text.

use std::process::Stdio;
use std::time::{Duration, Instant};

use executor::domain::{RunState, TaskGid, WritebackEvent, WritebackStatus};
use executor::store::{RunFilter, Store};

mod common;
#[path = "fake_asana/mod.rs"]
mod fake_asana;
mod runner_support;
use fake_asana::{FakeAsana, WriteFault, task};
use runner_support::Env;

const TOKEN: &str = "2/1234567890/fake-asana-token";
const GID: &str = "1207";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asana_task_hears_of_its_pull_request_and_completion_once_through_a_killed_runner() {
    drive(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn the_same_on_postgresql() {
    let Some(db) = common::postgres("runner_writeback_on_postgresql").await else { return };
    drive(Some(db.url.clone())).await;
}

/// Runs the binary to its end (off the runtime's threads: the fake Asana answers on them).
async fn run(env: &Env, args: &[&str]) -> std::process::Output {
    let mut cmd = env.command(args);
    cmd.env("WB_ASANA_TOKEN", TOKEN).stdin(Stdio::null());
    let args = args.join(" ");
    tokio::task::spawn_blocking(move || {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{args}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    })
    .await
    .unwrap()
}

async fn state(store: &Store) -> Option<RunState> {
    let filter = RunFilter { task_gid: Some(TaskGid::parse(GID).unwrap()), ..Default::default() };
    store.list_runs(&filter).await.unwrap().first().map(|r| r.state)
}

async fn drive(database: Option<String>) {
    let fake = FakeAsana::start(TOKEN).await;
    fake.add_project_task("1", task(GID, "Add the feature file", "2026-11-01T10:00:00.000Z"));
    let env = Env::new(&[]);
    if let Some(url) = &database {
        env.use_database(url);
    }
    env.append_config(&format!(
        "\n[[sources]]\nname = \"inbox\"\nkind = \"asana\"\nprojects = [\"1\"]\napi_url = \"{}\"\n\
         token_env = \"WB_ASANA_TOKEN\"\nrepo = \"app\"\nwriteback_timeout = \"20s\"\n",
        fake.url
    ));
    run(&env, &["intake"]).await;
    run(&env, &["approve", "--skip-triage", GID]).await;
    let store = env.store().await;

    // Asana writes the first comment and holds its answer; the runner is killed while it waits.
    fake.fail_next_write(WriteFault::AppliedThenLate(Duration::from_secs(60)));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut runner = env.command(&["runner"]);
        runner.env("WB_ASANA_TOKEN", TOKEN).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = runner.spawn().unwrap();
        let killed = loop {
            if !fake.comments(GID).is_empty() {
                // The write is in Asana; the runner waits for the answer: kill it there.
                child.kill().unwrap();
                child.wait().unwrap();
                break true;
            }
            if child.try_wait().unwrap().is_some() {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        if killed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no write-back began: {:?}",
            store.writebacks(None).await.unwrap()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rows = store.writebacks(Some(GID)).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].event, rows[0].status, rows[0].attempts),
        (WritebackEvent::PrOpened, WritebackStatus::Pending, 1)
    );

    // The killed attempt's hold passes (as two minutes would), and cron starts the runner again.
    store.make_writebacks_due_for_tests().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    while state(&store).await != Some(RunState::Complete) {
        assert!(Instant::now() < deadline, "never complete: {:?}", state(&store).await);
        run(&env, &["runner"]).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // The completion's message is delivered on the tick after it was recorded, if not in its own.
    if store.writebacks(Some(GID)).await.unwrap().iter().any(|w| w.status == WritebackStatus::Pending) {
        run(&env, &["runner"]).await;
    }

    let rows = store.writebacks(Some(GID)).await.unwrap();
    let events: Vec<(WritebackEvent, WritebackStatus)> = rows.iter().map(|w| (w.event, w.status)).collect();
    assert_eq!(
        events,
        [
            (WritebackEvent::PrOpened, WritebackStatus::Delivered),
            (WritebackEvent::Complete, WritebackStatus::Delivered)
        ]
    );
    assert_eq!(rows[0].attempts, 2, "the retry found the killed attempt's comment");
    let comments = fake.comments(GID);
    assert_eq!(comments.len(), 2, "{comments:#?}");
    assert!(comments[0].starts_with("executor opened a pull request for this task: "), "{}", comments[0]);
    assert!(comments[0].contains(&format!("[executor {}]", rows[0].marker)));
    assert!(comments[1].starts_with("The pull request is ready for your review: "), "{}", comments[1]);
    assert!(comments[1].contains(&format!("[executor {}]", rows[1].marker)));
    assert!(!comments.iter().any(|c| c.contains("@alex")), "the forge's @mention is not the tracker's");
    assert!(!comments.iter().any(|c| c.contains(TOKEN)));

    let out = run(&env, &["status"]).await;
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(status.contains("write-back:     2 delivered (executor writeback)"), "{status}");

    // The listing shows them; intake again reads no comment back as task text.
    let out = run(&env, &["writeback", GID]).await;
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("pr_opened") && listing.contains("delivered (9"), "{listing}");
    fake.set_project_task("1", task(GID, "Add the feature file", "2026-11-02T10:00:00.000Z"));
    run(&env, &["intake"]).await;
    let t = store.task(&TaskGid::parse(GID).unwrap()).await.unwrap();
    let text = format!("{:?} {:?} {:?}", t.description, t.notes, t.revision_notes);
    assert!(!text.contains("[executor wb-") && !text.contains("pull request"), "{text}");

    // `doctor` asks Asana whether the token may comment, without writing.
    let posts_before = fake.requests().iter().filter(|r| r.method == "POST").count();
    let mut doctor = env.command(&["doctor", "--json"]);
    doctor.env("WB_ASANA_TOKEN", TOKEN).stdin(Stdio::null());
    let out = tokio::task::spawn_blocking(move || doctor.output().unwrap()).await.unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = report["checks"].as_array().unwrap().iter().find(|c| c["name"] == "writeback inbox").cloned();
    let check = check.unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(check["outcome"], "pass", "{check:#}");
    assert!(check["detail"].as_str().unwrap().contains("may comment"), "{check:#}");
    assert_eq!(fake.requests().iter().filter(|r| r.method == "POST").count(), posts_before);

    // The source asks for the merge too, and to complete the task then; a human merges.
    env.edit_config(
        "writeback_timeout = \"20s\"",
        "writeback_timeout = \"20s\"\nwriteback = [\"pr_opened\", \"complete\", \"abandoned\", \"merged\"]\n\
         writeback_complete_on_merge = true",
    );
    let filter = RunFilter { task_gid: Some(TaskGid::parse(GID).unwrap()), ..Default::default() };
    let run_id = store.list_runs(&filter).await.unwrap()[0].id;
    let pr = store.local_pr_for_run(run_id).await.unwrap().unwrap();
    store.set_local_pr_state(pr.id, "merged", pr.draft).await.unwrap();
    run(&env, &["runner"]).await;
    run(&env, &["runner"]).await;
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
    run(&env, &["analyzer"]).await;
    let store = env.store().await;
    let gid = TaskGid::parse(GID).unwrap();
    let status = |t: executor::domain::Task| t.status.as_str().to_string();
    assert_eq!(status(store.task(&TaskGid::parse("1300").unwrap()).await.unwrap()), "skip");
    run(&env, &["approve", GID]).await;
    run(&env, &["skip", "1400", "--reason", "duplicate of 1207"]).await;
    // A skip that cannot land (the task is skipped already) records nothing more.
    let again =
        env.command(&["skip", "1400", "--reason", "again"]).env("WB_ASANA_TOKEN", TOKEN).output().unwrap();
    assert!(!again.status.success());
    // One runner: the run is created (the approval recorded first), and it goes as far as it can.
    run(&env, &["runner"]).await;
    let filter = RunFilter { task_gid: Some(gid.clone()), ..Default::default() };
    let run_id = store.list_runs(&filter).await.unwrap()[0].id.to_string();
    run(&env, &["runs", "abandon", &run_id, "--reason", "not needed any more"]).await;
    run(&env, &["runner"]).await;

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
