//! Write-back to Linear through the real binary (issue 24): a Linear issue goes from intake to a
//! complete pull request on the local forge, and the issue shows exactly two comments, in order — the
//! pull request opened, then ready for review with its summary — and moves to "In Progress", then "In
//! Review", then "Done" on the merge, though the runner was killed (SIGKILL) while Linear held the
//! answer to the first comment it had already written. Intake again reads none of them back as task
//! text, and `doctor` asks Linear without writing.

use std::process::Stdio;
use std::time::{Duration, Instant};

use executor::domain::{RunState, TaskGid, WritebackEvent, WritebackStatus};
use executor::store::{RunFilter, Store};

mod common;
#[path = "fake_linear/mod.rs"]
mod fake_linear;
mod runner_support;
use fake_linear::{FakeLinear, WriteFault, issue, uuid};
use runner_support::Env;

const TOKEN: &str = "lin_api_fake_linear_key_0123456789";

fn gid() -> String {
    format!("lin_{}", uuid(1207))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linear_issue_hears_of_its_pull_request_and_completion_once_through_a_killed_runner() {
    drive(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
async fn the_same_on_postgresql() {
    let Some(db) = common::postgres("runner_writeback_linear_on_postgresql").await else { return };
    drive(Some(db.url.clone())).await;
}

/// Runs the binary to its end (off the runtime's threads: the fake Linear answers on them).
async fn run(env: &Env, args: &[&str]) -> std::process::Output {
    let mut cmd = env.command(args);
    cmd.env("WB_LINEAR_KEY", TOKEN).stdin(Stdio::null());
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
    let filter = RunFilter { task_gid: Some(TaskGid::parse(&gid()).unwrap()), ..Default::default() };
    store.list_runs(&filter).await.unwrap().first().map(|r| r.state)
}

async fn drive(database: Option<String>) {
    let fake = FakeLinear::start(TOKEN).await;
    fake.put_issue(issue(1207, "ENG", 7, "Add the feature file", "Todo", "2026-11-01T10:00:00.000Z"));
    let id = uuid(1207);
    let env = Env::new(&[]);
    if let Some(url) = &database {
        env.use_database(url);
    }
    env.append_config(&format!(
        "\n[[sources]]\nname = \"linear\"\nkind = \"linear\"\nteams = [\"ENG\"]\napi_url = \"{}\"\n\
         token_env = \"WB_LINEAR_KEY\"\nrepo = \"app\"\nwriteback_timeout = \"20s\"\n\
         writeback_states = {{ pr_opened = \"In Progress\", complete = \"In Review\" }}\n",
        fake.url
    ));
    run(&env, &["intake"]).await;
    run(&env, &["approve", "--skip-triage", &gid()]).await;
    let store = env.store().await;

    // Linear writes the first comment and holds its answer; the runner is killed while it waits.
    fake.fail_next_write(WriteFault::AppliedThenLate(Duration::from_secs(60)));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut runner = env.command(&["runner"]);
        runner.env("WB_LINEAR_KEY", TOKEN).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = runner.spawn().unwrap();
        let killed = loop {
            if !fake.comments(&id).is_empty() {
                // The write is in Linear; the runner waits for the answer: kill it there.
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
    let rows = store.writebacks(Some(&gid())).await.unwrap();
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
    if store.writebacks(Some(&gid())).await.unwrap().iter().any(|w| w.status == WritebackStatus::Pending) {
        run(&env, &["runner"]).await;
    }

    let rows = store.writebacks(Some(&gid())).await.unwrap();
    let events: Vec<(WritebackEvent, WritebackStatus)> = rows.iter().map(|w| (w.event, w.status)).collect();
    assert_eq!(
        events,
        [
            (WritebackEvent::PrOpened, WritebackStatus::Delivered),
            (WritebackEvent::Complete, WritebackStatus::Delivered)
        ]
    );
    assert_eq!(rows[0].attempts, 2, "the retry found the killed attempt's comment");
    assert_eq!(fake.count("commentCreate"), 2, "one create per message: the retry asked first");
    assert_eq!(fake.state_of(&id).as_deref(), Some("In Review"));
    let comments = fake.comments(&id);
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
    let out = run(&env, &["writeback", &gid()]).await;
    let listing = String::from_utf8_lossy(&out.stdout);
    let comment_id = executor::writeback::linear_comment_id(&rows[0].marker);
    assert!(listing.contains("pr_opened") && listing.contains(&comment_id), "{listing}");
    let mut edited = issue(1207, "ENG", 7, "Add the feature file", "In Review", "2026-11-02T10:00:00.000Z");
    edited["comments"] = serde_json::json!({"nodes": comments.iter().map(|c| serde_json::json!({"body": c})).collect::<Vec<_>>()});
    fake.put_issue(edited);
    run(&env, &["intake"]).await;
    let t = store.task(&TaskGid::parse(&gid()).unwrap()).await.unwrap();
    let text = format!("{:?} {:?} {:?}", t.description, t.notes, t.revision_notes);
    assert!(!text.contains("[executor wb-") && !text.contains("pull request"), "{text}");

    // `doctor` asks Linear about the key, its team and states, without writing.
    let writes = || fake.count("commentCreate") + fake.count("issueUpdate");
    let writes_before = writes();
    let mut doctor = env.command(&["doctor", "--json"]);
    doctor.env("WB_LINEAR_KEY", TOKEN).stdin(Stdio::null());
    let out = tokio::task::spawn_blocking(move || doctor.output().unwrap()).await.unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check =
        report["checks"].as_array().unwrap().iter().find(|c| c["name"] == "writeback linear").cloned();
    let check = check.unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(check["outcome"], "pass", "{check:#}");
    assert!(check["detail"].as_str().unwrap().contains("team ENG"), "{check:#}");
    assert_eq!(writes(), writes_before);

    // The source asks for the merge too, and to move the issue to Done then; a human merges.
    env.edit_config(
        "complete = \"In Review\" }",
        "complete = \"In Review\", merged = \"Done\" }\nwriteback = [\"pr_opened\", \"complete\", \"abandoned\", \"merged\"]",
    );
    let filter = RunFilter { task_gid: Some(TaskGid::parse(&gid()).unwrap()), ..Default::default() };
    let run_id = store.list_runs(&filter).await.unwrap()[0].id;
    let pr = store.local_pr_for_run(run_id).await.unwrap().unwrap();
    store.set_local_pr_state(pr.id, "merged", pr.draft).await.unwrap();
    run(&env, &["runner"]).await;
    run(&env, &["runner"]).await;
    let comments = fake.comments(&id);
    assert_eq!(comments.len(), 3, "{comments:#?}");
    assert!(comments[2].starts_with("The pull request was merged: "), "{}", comments[2]);
    assert_eq!(fake.state_of(&id).as_deref(), Some("Done"), "the issue moved to Done");
}
