//! Write-back to Asana (issue 24, item 1-2) on SQLite and PostgreSQL, against the fake Asana's
//! `POST /tasks/{gid}/stories`: each message is posted once, ends with its marker, and is never
//! doubled — through a write Asana applied but answered too late, a 502 after the write, a runner that
//! died between recording and sending or between sending and recording — while a read-only token (403)
//! and a deleted task (404) are refused once, for a human, and never retried.

mod common;
#[path = "fake_asana/mod.rs"]
mod fake_asana;

use std::sync::Arc;
use std::time::Duration;

use common::TestDb;
use executor::config::Config;
use executor::domain::{WritebackEvent, WritebackStatus};
use executor::store::Store;
use executor::writeback::{Outbox, Posted, Tracker, marker_text};
use fake_asana::{FakeAsana, WriteFault, task};

on_both_databases!(
    a_message_is_posted_once_with_its_marker,
    a_write_answered_too_late_is_found_not_posted_again,
    a_write_answered_502_is_found_not_posted_again,
    a_read_only_token_is_refused_once_and_never_retried,
    a_deleted_task_is_refused_and_later_messages_still_go,
    a_crash_between_recording_and_sending_sends_once_after_restart,
    a_crash_after_the_tracker_took_it_is_recognised,
    a_tasks_messages_reach_it_in_order,
    only_the_configured_events_are_recorded,
    doctors_probe_tells_a_commenter_from_a_viewer_without_writing,
    a_skip_no_longer_true_is_withdrawn_not_sent,
    a_source_moves_its_task_sets_its_fields_and_completes_it_on_merge,
    a_failing_tracker_costs_one_attempt_per_pass,
);

const TASK: &str = "1207";

struct Setup {
    fake: FakeAsana,
    store: Store,
    outbox: Outbox,
    _db: TestDb,
}

fn config(fake: &FakeAsana, extra: &str) -> Config {
    Config::parse(&format!(
        "[[sources]]\nname = \"inbox\"\nkind = \"asana\"\nprojects = [\"1\"]\napi_url = \"{}\"\n\
         token_env = \"WB_ASANA_TOKEN\"\nwriteback_timeout = \"1s\"\n{extra}\n",
        fake.url
    ))
    .unwrap()
}

async fn setup(db: TestDb, token: &str, extra: &str) -> Setup {
    let fake = FakeAsana::start("good-token").await;
    fake.add_project_task("1", task(TASK, "Fix the login", "2026-11-01T10:00:00.000Z"));
    let store = db.open().await;
    let token = token.to_string();
    let env: executor::writeback::Env =
        Arc::new(move |name| (name == "WB_ASANA_TOKEN").then(|| token.clone()));
    let outbox = Outbox::new(Arc::new(config(&fake, extra)), store.clone(), None).with_env(env);
    Setup { fake, store, outbox, _db: db }
}

async fn record(s: &Setup, event: WritebackEvent, key: &str, text: &str) -> bool {
    s.outbox.record(TASK, Some("inbox"), None, event, key, text).await.unwrap()
}

fn posts(fake: &FakeAsana) -> usize {
    fake.requests().iter().filter(|r| r.method == "POST").count()
}

async fn a_message_is_posted_once_with_its_marker(db: TestDb) {
    let s = setup(db, "good-token", "").await;
    assert!(record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened http://pr/1").await);
    // The same key again (a step replayed after a crash) records nothing.
    assert!(!record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened http://pr/1").await);
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.delivered, 1);
    let rows = s.store.writebacks(Some(TASK)).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, WritebackStatus::Delivered);
    let comments = s.fake.comments(TASK);
    assert_eq!(comments, vec![format!("opened http://pr/1\n\n{}", marker_text(&rows[0].marker))]);
    assert_eq!(rows[0].remote_id.as_deref(), Some("900001"), "the story's gid is recorded");
    // Delivered: never sent again.
    let again = s.outbox.deliver_due().await.unwrap();
    assert_eq!((again.delivered, posts(&s.fake)), (0, 1));
    let post = s.fake.requests().into_iter().find(|r| r.method == "POST").unwrap();
    assert_eq!(post.path, format!("/tasks/{TASK}/stories"));
    assert_eq!(post.authorization.as_deref(), Some("Bearer good-token"));
}

async fn a_write_answered_too_late_is_found_not_posted_again(db: TestDb) {
    let s = setup(db, "good-token", "").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready for review").await;
    s.fake.fail_next_write(WriteFault::AppliedThenLate(Duration::from_secs(3)));
    let first = s.outbox.deliver_due().await.unwrap();
    assert_eq!((first.delivered, first.failed.len()), (0, 1), "the timeout is a passing failure");
    assert!(first.failed[0].contains("no answer in time"), "{:?}", first.failed);
    let row = &s.store.writebacks(Some(TASK)).await.unwrap()[0];
    assert_eq!((row.status, row.attempts), (WritebackStatus::Pending, 1));
    assert!(row.next_attempt_at > chrono::Utc::now() + chrono::TimeDelta::seconds(20), "backed off");
    // Not due yet: nothing is tried.
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 0);
    s.store.make_writebacks_due_for_tests().await.unwrap();
    let second = s.outbox.deliver_due().await.unwrap();
    assert_eq!(second.delivered, 1);
    assert_eq!(s.fake.comments(TASK).len(), 1, "Asana shows the message once");
    assert_eq!(posts(&s.fake), 1, "the retry looked first and found it");
    let row = &s.store.writebacks(Some(TASK)).await.unwrap()[0];
    assert_eq!(row.status, WritebackStatus::Delivered);
    assert_eq!(row.remote_id.as_deref(), Some("900001"));
}

async fn a_write_answered_502_is_found_not_posted_again(db: TestDb) {
    let s = setup(db, "good-token", "").await;
    record(&s, WritebackEvent::Abandoned, "run:1:abandoned", "gave up").await;
    s.fake.fail_next_write(WriteFault::AppliedThenStatus(502));
    assert_eq!(s.outbox.deliver_due().await.unwrap().failed.len(), 1);
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments(TASK).len(), 1);
}

async fn a_read_only_token_is_refused_once_and_never_retried(db: TestDb) {
    let s = setup(db, "read-only", "").await;
    s.fake.add_read_only_token("read-only");
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    let told = &report.refused[0];
    assert_eq!(told.notice_key, "writeback_refused:inbox", "one notice per source and run");
    assert!(told.text.contains("403") && told.text.contains("may read but not comment"), "{}", told.text);
    assert!(!told.text.contains("read-only"), "the token never appears: {}", told.text);
    let row = &s.store.writebacks(Some(TASK)).await.unwrap()[0];
    assert_eq!(row.status, WritebackStatus::Refused);
    s.store.make_writebacks_due_for_tests().await.unwrap();
    let again = s.outbox.deliver_due().await.unwrap();
    assert!(again.refused.is_empty() && again.failed.is_empty());
    assert_eq!(posts(&s.fake), 1, "a refusal is not retried");
    assert!(s.fake.comments(TASK).is_empty());
}

async fn a_deleted_task_is_refused_and_later_messages_still_go(db: TestDb) {
    let s = setup(db, "good-token", "").await;
    s.fake.delete_task(TASK);
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    assert!(report.refused[0].text.contains("404") && report.refused[0].text.contains("deleted"));
    // Another task of the same source is not held back by it.
    s.fake.add_project_task("1", task("1300", "Other", "2026-11-01T10:00:00.000Z"));
    s.outbox
        .record("1300", Some("inbox"), None, WritebackEvent::PrOpened, "run:2:pr_opened", "x")
        .await
        .unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments("1300").len(), 1);
}

async fn a_crash_between_recording_and_sending_sends_once_after_restart(db: TestDb) {
    let s = setup(db, "good-token", "").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    // A runner began the attempt and died before calling Asana: the hold keeps others off meanwhile.
    let id = s.store.writebacks(Some(TASK)).await.unwrap()[0].id;
    let hold = chrono::Utc::now() + chrono::TimeDelta::seconds(120);
    assert!(s.store.begin_writeback_attempt(id, hold).await.unwrap().is_some());
    assert!(s.store.begin_writeback_attempt(id, hold).await.unwrap().is_none(), "held by the first");
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 0, "held: not sent by another");
    // The hold passes (a new runner, later): sent once.
    s.store.make_writebacks_due_for_tests().await.unwrap();
    let outbox = Outbox::new(Arc::new(config(&s.fake, "")), s.store.clone(), None)
        .with_env(Arc::new(|_| Some("good-token".to_string())));
    assert_eq!(outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments(TASK).len(), 1);
    let row = &s.store.writebacks(Some(TASK)).await.unwrap()[0];
    assert_eq!(row.attempts, 2);
}

async fn a_crash_after_the_tracker_took_it_is_recognised(db: TestDb) {
    let s = setup(db, "good-token", "").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    let id = s.store.writebacks(Some(TASK)).await.unwrap()[0].id;
    let hold = chrono::Utc::now() + chrono::TimeDelta::seconds(120);
    let begun = s.store.begin_writeback_attempt(id, hold).await.unwrap().unwrap();
    // The attempt reached Asana, and the runner died before recording it.
    let source = config(&s.fake, "").sources[0].clone();
    let tracker =
        Tracker::Asana(executor::writeback::AsanaTracker::new(&source, Some("good-token".into())).unwrap());
    let posted = tracker.post(&begun).await.unwrap();
    assert!(matches!(posted, Posted::Now(_)));
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments(TASK).len(), 1, "recognised by its marker, not posted twice");
    let row = &s.store.writebacks(Some(TASK)).await.unwrap()[0];
    assert_eq!(row.remote_id.as_deref(), Some(posted.remote_id()));
}

async fn a_tasks_messages_reach_it_in_order(db: TestDb) {
    let s = setup(db, "good-token", "").await;
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "first").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "second").await;
    s.fake.fail_next_write(WriteFault::Refused(503));
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!((report.delivered, report.failed.len()), (0, 1), "the second waits behind the first");
    assert!(s.fake.comments(TASK).is_empty());
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 2);
    let texts: Vec<String> =
        s.fake.comments(TASK).iter().map(|t| t.split("\n\n").next().unwrap_or("").to_string()).collect();
    assert_eq!(texts, ["first", "second"]);
}

async fn only_the_configured_events_are_recorded(db: TestDb) {
    let s = setup(db, "good-token", "writeback = [\"complete\"]").await;
    assert!(!record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await);
    assert!(record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await);
    // A task of no configured source (a file source, a source since removed) records nothing.
    let none =
        s.outbox.record(TASK, Some("elsewhere"), None, WritebackEvent::Complete, "k", "t").await.unwrap();
    assert!(!none);
    assert_eq!(s.store.writebacks(None).await.unwrap().len(), 1);
}

async fn doctors_probe_tells_a_commenter_from_a_viewer_without_writing(db: TestDb) {
    let s = setup(db, "good-token", "").await;
    s.fake.add_read_only_token("read-only");
    let source = config(&s.fake, "").sources[0].clone();
    let fine = executor::writeback::probe(&source, Some("good-token".into()), None).await.unwrap();
    assert!(fine.contains("may comment"), "{fine}");
    let viewer = executor::writeback::probe(&source, Some("read-only".into()), None).await.unwrap_err();
    assert!(
        matches!(&viewer, executor::writeback::TrackerError::Refused { why, .. } if why.contains("may only view")),
        "{viewer:?}"
    );
    let wrong = executor::writeback::probe(&source, Some("nonsense".into()), None).await.unwrap_err();
    assert!(
        matches!(&wrong, executor::writeback::TrackerError::Refused { why, .. } if why.contains("401")),
        "{wrong:?}"
    );
    assert_eq!(posts(&s.fake), 0, "nothing was written");
}

async fn a_skip_no_longer_true_is_withdrawn_not_sent(db: TestDb) {
    use executor::domain::{Actor, TaskGid};
    let s = setup(db, "good-token", "writeback = [\"skipped\"]").await;
    let gid = TaskGid::parse(TASK).unwrap();
    let new = executor::store::NewTask { description: Some("Fix the login".into()), ..Default::default() };
    s.store.upsert_task(&gid, &new, Actor::Cli).await.unwrap();
    // Recorded before the triage's skip was written, which never landed (the task is still pending).
    assert!(record(&s, WritebackEvent::Skipped, "skipped:a", "will not work on it").await);
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!((report.delivered, report.refused.len()), (0, 0));
    let row = &s.store.writebacks(Some(TASK)).await.unwrap()[0];
    assert_eq!(row.status, WritebackStatus::Withdrawn);
    assert_eq!(posts(&s.fake), 0);
}

async fn a_source_moves_its_task_sets_its_fields_and_completes_it_on_merge(db: TestDb) {
    let extra = "writeback = [\"pr_opened\", \"merged\"]\nwriteback_sections = { pr_opened = \"55\" }\n\
                 writeback_complete_on_merge = true\n\
                 writeback_custom_fields = { pr_opened = { \"9\" = \"In review\" }, merged = { \"9\" = \"Shipped\" } }";
    let s = setup(db, "good-token", extra).await;
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    record(&s, WritebackEvent::Merged, "run:1:merged", "merged").await;
    // The section move fails once after the comment went in: the retry finds the comment, moves again.
    s.fake.fail_next(fake_asana::Fault::Status(503));
    let first = s.outbox.deliver_due().await.unwrap();
    assert_eq!((first.delivered, first.failed.len()), (0, 1), "{:?}", first.failed);
    assert!(first.failed[0].contains("/sections/55/addTask"), "{:?}", first.failed);
    assert!(s.fake.section_tasks("55").is_empty());
    assert_eq!(s.fake.custom_field(TASK, "9").as_deref(), Some("macOS"), "untouched until the retry");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 2);
    assert_eq!(s.fake.section_tasks("55"), [TASK]);
    assert!(s.fake.completed(TASK));
    assert_eq!(
        s.fake.custom_field(TASK, "9").as_deref(),
        Some("Shipped"),
        "set at each event, the last wins"
    );
    assert_eq!(s.fake.comments(TASK).len(), 2);
}

async fn a_failing_tracker_costs_one_attempt_per_pass(db: TestDb) {
    let s = setup(db, "good-token", "").await;
    s.fake.add_project_task("1", task("1300", "Other", "2026-11-01T10:00:00.000Z"));
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "first task").await;
    s.outbox
        .record("1300", Some("inbox"), None, WritebackEvent::PrOpened, "run:2:pr_opened", "x")
        .await
        .unwrap();
    s.fake.fail_next_write(WriteFault::Refused(503));
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!((report.delivered, report.failed.len()), (0, 1), "the other task waits for the next pass");
    assert_eq!(posts(&s.fake), 1);
    let attempts: Vec<i64> = s.store.writebacks(None).await.unwrap().iter().map(|w| w.attempts).collect();
    assert_eq!(attempts, [1, 0], "the second was not tried, so not counted");
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1, "the other task's goes next pass");
}
