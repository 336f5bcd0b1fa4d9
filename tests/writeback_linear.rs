//! Write-back to Linear (issue 24) on SQLite and PostgreSQL, against the fake Linear: each message is
//! one comment (with the id executor derives from its marker, and the marker in its text) and moves
//! the issue to the state the source names for the event; never doubled through a write Linear
//! applied but answered too late or with a 502, or a runner that died between recording and sending
//! or between sending and recording; a read-only key (FORBIDDEN), a wrong key and a deleted issue are
//! refused once, for a human, and never retried; `doctor`'s probe writes nothing.

mod common;
#[path = "fake_linear/mod.rs"]
mod fake_linear;

use std::sync::Arc;
use std::time::Duration;

use common::TestDb;
use executor::config::Config;
use executor::domain::{WritebackEvent, WritebackStatus};
use executor::store::Store;
use executor::writeback::{Outbox, Posted, Tracker, TrackerError, linear_comment_id, marker_text};
use fake_linear::{FakeLinear, Fault, WriteFault, issue, uuid};

on_both_databases!(
    a_message_is_one_comment_and_moves_the_issue,
    a_write_answered_too_late_is_found_not_posted_again,
    a_write_answered_502_is_found_not_posted_again,
    a_read_only_key_is_refused_once_and_never_retried,
    a_wrong_key_is_refused_once_and_never_shown,
    a_deleted_issue_is_refused_and_later_messages_still_go,
    a_crash_between_recording_and_sending_sends_once_after_restart,
    a_crash_after_linear_took_it_is_recognised,
    a_rate_limit_is_retried_later_in_order,
    a_state_the_team_lacks_is_told,
    doctors_probe_checks_teams_and_states_without_writing,
);

const KEY: &str = "lin_api_wb_0123456789SECRET";

fn issue_id() -> String {
    uuid(1)
}

fn task() -> String {
    format!("lin_{}", issue_id())
}

struct Setup {
    fake: FakeLinear,
    store: Store,
    outbox: Outbox,
    _db: TestDb,
}

fn config(fake: &FakeLinear, extra: &str) -> Config {
    Config::parse(&format!(
        "[[sources]]\nname = \"linear\"\nkind = \"linear\"\napi_url = \"{}\"\nteams = [\"ENG\"]\n\
         token_env = \"WB_LINEAR_KEY\"\nwriteback_timeout = \"1s\"\n{extra}\n",
        fake.url
    ))
    .unwrap()
}

const STATES: &str = "writeback = [\"pr_opened\", \"complete\", \"abandoned\", \"merged\"]\n\
                      writeback_states = { pr_opened = \"In Progress\", complete = \"In Review\", merged = \"Done\" }";

async fn setup(db: TestDb, key: &str, extra: &str) -> Setup {
    let fake = FakeLinear::start(KEY).await;
    fake.put_issue(issue(1, "ENG", 1, "Fix the login", "Todo", "2026-11-01T10:00:00.000Z"));
    let store = db.open().await;
    let key = key.to_string();
    let env: executor::writeback::Env = Arc::new(move |name| (name == "WB_LINEAR_KEY").then(|| key.clone()));
    let outbox = Outbox::new(Arc::new(config(&fake, extra)), store.clone(), None).with_env(env);
    Setup { fake, store, outbox, _db: db }
}

async fn record(s: &Setup, event: WritebackEvent, key: &str, text: &str) -> bool {
    s.outbox.record(&task(), Some("linear"), None, event, key, text).await.unwrap()
}

fn creates(fake: &FakeLinear) -> usize {
    fake.count("commentCreate")
}

async fn a_message_is_one_comment_and_moves_the_issue(db: TestDb) {
    let s = setup(db, KEY, STATES).await;
    assert!(record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened http://pr/1").await);
    assert!(
        !record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened http://pr/1").await,
        "once per key"
    );
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    let row = &s.store.writebacks(Some(&task())).await.unwrap()[0];
    assert_eq!(row.status, WritebackStatus::Delivered);
    assert_eq!(s.fake.comments(&issue_id()), [format!("opened http://pr/1\n\n{}", marker_text(&row.marker))]);
    assert_eq!(
        row.remote_id.as_deref(),
        Some(linear_comment_id(&row.marker).as_str()),
        "the id executor chose"
    );
    assert_eq!(s.fake.state_of(&issue_id()).as_deref(), Some("In Progress"));
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    record(&s, WritebackEvent::Abandoned, "run:2:abandoned", "gave up").await;
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 2);
    assert_eq!(
        s.fake.state_of(&issue_id()).as_deref(),
        Some("In Review"),
        "abandoned names no state: unmoved"
    );
    assert_eq!(s.fake.comments(&issue_id()).len(), 3);
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 0, "delivered: never sent again");
    assert_eq!(creates(&s.fake), 3);
    let create = s.fake.requests().into_iter().find(|r| r.fields == ["commentCreate"]).unwrap();
    assert_eq!(create.authorization.as_deref(), Some(KEY));
    assert_eq!(create.variables["issueId"], issue_id().as_str());
}

async fn a_write_answered_too_late_is_found_not_posted_again(db: TestDb) {
    let s = setup(db, KEY, STATES).await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready for review").await;
    s.fake.fail_next_write(WriteFault::AppliedThenLate(Duration::from_secs(3)));
    let first = s.outbox.deliver_due().await.unwrap();
    assert_eq!((first.delivered, first.failed.len()), (0, 1), "the timeout is a passing failure");
    assert!(first.failed[0].contains("no answer in time"), "{:?}", first.failed);
    let row = &s.store.writebacks(Some(&task())).await.unwrap()[0];
    assert_eq!((row.status, row.attempts), (WritebackStatus::Pending, 1));
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments(&issue_id()).len(), 1, "Linear shows the message once");
    assert_eq!(creates(&s.fake), 1, "the retry asked for the comment by its id and found it");
    assert_eq!(s.fake.count("comment"), 1);
    assert_eq!(s.fake.state_of(&issue_id()).as_deref(), Some("In Review"), "moved by the retry");
}

async fn a_write_answered_502_is_found_not_posted_again(db: TestDb) {
    let s = setup(db, KEY, "").await;
    record(&s, WritebackEvent::Abandoned, "run:1:abandoned", "gave up").await;
    s.fake.fail_next_write(WriteFault::AppliedThenStatus(502));
    assert_eq!(s.outbox.deliver_due().await.unwrap().failed.len(), 1);
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments(&issue_id()).len(), 1);
    assert_eq!(creates(&s.fake), 1);
}

async fn a_read_only_key_is_refused_once_and_never_retried(db: TestDb) {
    let s = setup(db, "read-only-key-0123456789", "").await;
    s.fake.add_read_only_key("read-only-key-0123456789");
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    let told = &report.refused[0];
    assert_eq!(told.notice_key, "writeback_refused:linear", "one notice per source and run");
    assert!(told.text.contains("forbade") && told.text.contains("write access"), "{}", told.text);
    assert_eq!(s.store.writebacks(Some(&task())).await.unwrap()[0].status, WritebackStatus::Refused);
    s.store.make_writebacks_due_for_tests().await.unwrap();
    let again = s.outbox.deliver_due().await.unwrap();
    assert!(again.refused.is_empty() && again.failed.is_empty());
    assert_eq!(creates(&s.fake), 1, "a refusal is not retried");
    assert!(s.fake.comments(&issue_id()).is_empty());
}

async fn a_wrong_key_is_refused_once_and_never_shown(db: TestDb) {
    let wrong = "lin_api_revoked_0123456789";
    let s = setup(db, wrong, "").await;
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    let text = &report.refused[0].text;
    assert!(text.contains("WB_LINEAR_KEY") && text.contains("new personal API key"), "{text}");
    assert!(!text.contains(wrong), "the key never appears: {text}");
    let row = &s.store.writebacks(Some(&task())).await.unwrap()[0];
    assert!(!row.last_error.as_deref().unwrap_or_default().contains(wrong));
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert!(s.outbox.deliver_due().await.unwrap().refused.is_empty(), "told once");
}

async fn a_deleted_issue_is_refused_and_later_messages_still_go(db: TestDb) {
    let s = setup(db, KEY, "").await;
    s.fake.delete_issue(&issue_id());
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    assert!(report.refused[0].text.contains("no such Issue") && report.refused[0].text.contains("deleted"));
    s.fake.put_issue(issue(2, "ENG", 2, "Other", "Todo", "2026-11-01T10:00:00.000Z"));
    let other = format!("lin_{}", uuid(2));
    s.outbox
        .record(&other, Some("linear"), None, WritebackEvent::PrOpened, "run:2:pr_opened", "x")
        .await
        .unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments(&uuid(2)).len(), 1);
}

async fn a_crash_between_recording_and_sending_sends_once_after_restart(db: TestDb) {
    let s = setup(db, KEY, "").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    let id = s.store.writebacks(Some(&task())).await.unwrap()[0].id;
    let hold = chrono::Utc::now() + chrono::TimeDelta::seconds(120);
    assert!(s.store.begin_writeback_attempt(id, hold).await.unwrap().is_some());
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 0, "held: not sent by another");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    let env: executor::writeback::Env = Arc::new(|_| Some(KEY.to_string()));
    let outbox = Outbox::new(Arc::new(config(&s.fake, "")), s.store.clone(), None).with_env(env);
    assert_eq!(outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments(&issue_id()).len(), 1);
    assert_eq!(s.store.writebacks(Some(&task())).await.unwrap()[0].attempts, 2);
}

async fn a_crash_after_linear_took_it_is_recognised(db: TestDb) {
    let s = setup(db, KEY, "").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    let id = s.store.writebacks(Some(&task())).await.unwrap()[0].id;
    let hold = chrono::Utc::now() + chrono::TimeDelta::seconds(120);
    let begun = s.store.begin_writeback_attempt(id, hold).await.unwrap().unwrap();
    // The attempt reached Linear, and the runner died before recording it.
    let source = config(&s.fake, "").sources[0].clone();
    let tracker =
        Tracker::Linear(executor::writeback::LinearTracker::new(&source, Some(KEY.into())).unwrap());
    let posted = tracker.post(&begun).await.unwrap();
    assert!(matches!(posted, Posted::Now(_)));
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments(&issue_id()).len(), 1, "recognised by its id, not posted twice");
    let row = &s.store.writebacks(Some(&task())).await.unwrap()[0];
    assert_eq!(row.remote_id.as_deref(), Some(posted.remote_id()));
}

async fn a_rate_limit_is_retried_later_in_order(db: TestDb) {
    let s = setup(db, KEY, "").await;
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "first").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "second").await;
    s.fake.fail_next(Fault::RateLimited(Duration::from_secs(30)));
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!((report.delivered, report.failed.len()), (0, 1), "{:?}", report.failed);
    assert!(report.failed[0].contains("RATELIMITED"), "{:?}", report.failed);
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 2);
    let firsts: Vec<String> = s
        .fake
        .comments(&issue_id())
        .iter()
        .map(|t| t.split("\n\n").next().unwrap_or("").to_string())
        .collect();
    assert_eq!(firsts, ["first", "second"]);
}

async fn a_state_the_team_lacks_is_told(db: TestDb) {
    let extra = "writeback_states = { complete = \"Shipped\" }";
    let s = setup(db, KEY, extra).await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    assert!(
        report.refused[0].text.contains("no workflow state named \"Shipped\""),
        "{}",
        report.refused[0].text
    );
    assert_eq!(s.fake.comments(&issue_id()).len(), 1, "the comment went before the move failed");
}

async fn doctors_probe_checks_teams_and_states_without_writing(db: TestDb) {
    let s = setup(db, KEY, STATES).await;
    let source = config(&s.fake, STATES).sources[0].clone();
    let fine = executor::writeback::probe(&source, Some(KEY.into()), None).await.unwrap();
    assert!(fine.contains("Alex Doe") && fine.contains("team ENG"), "{fine}");
    let wrong = executor::writeback::probe(&source, Some("nonsense".into()), None).await.unwrap_err();
    assert!(
        matches!(&wrong, TrackerError::Refused { why, .. } if why.contains("refused the API key")),
        "{wrong:?}"
    );
    let lacking = config(&s.fake, "writeback_states = { complete = \"Shipped\" }").sources[0].clone();
    let error = executor::writeback::probe(&lacking, Some(KEY.into()), None).await.unwrap_err();
    assert!(matches!(&error, TrackerError::Refused { why, .. } if why.contains("Shipped")), "{error:?}");
    let mut elsewhere = source.clone();
    elsewhere.teams = vec!["OPS".into()];
    let error = executor::writeback::probe(&elsewhere, Some(KEY.into()), None).await.unwrap_err();
    assert!(matches!(&error, TrackerError::Refused { why, .. } if why.contains("OPS")), "{error:?}");
    assert_eq!(creates(&s.fake) + s.fake.count("issueUpdate"), 0, "nothing was written");
}
