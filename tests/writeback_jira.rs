//! Write-back to Jira on SQLite and PostgreSQL, against the fake Jira: each message is one comment (in
//! Atlassian Document Format, the marker in its text), the run's pull request one remote link, and
//! the issue takes the transition the source names for the event; never doubled through a comment
//! Jira applied but answered with a 502, too late, or over a dropped connection, nor through a 429 or
//! a 5xx; a transition the issue does not offer, a wrong token and a deleted issue are refused once,
//! for a human, and never retried; `doctor`'s probe asks `/myself` and writes nothing.

mod common;
#[path = "fake_jira/mod.rs"]
mod fake_jira;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use common::TestDb;
use executor::config::Config;
use executor::domain::{Actor, TaskGid, WritebackEvent, WritebackStatus};
use executor::store::{NewTask, Store};
use executor::writeback::{Outbox, Posted, Tracker, TrackerError, marker_text};
use fake_jira::{FakeJira, Fault, WriteFault, basic, issue};

on_both_databases!(
    a_message_is_one_comment_with_the_pull_request_linked_and_the_issue_moved,
    a_comment_answered_502_is_found_not_posted_again,
    a_comment_answered_too_late_or_cut_off_is_found_not_posted_again,
    rate_limits_and_server_errors_are_retried_later_in_order,
    a_crash_after_jira_took_it_is_recognised,
    a_transition_the_issue_does_not_offer_is_refused_once,
    a_wrong_token_is_refused_once_and_never_shown,
    a_token_that_may_not_comment_is_refused_once,
    a_deleted_issue_is_refused_and_later_messages_still_go,
    doctors_probe_asks_who_the_token_is_without_writing,
    a_comment_by_an_answerer_answers_the_open_question,
);

const TOKEN: &str = "ATATT3x-wb-jira-SECRET";
const EMAIL: &str = "bot@acme.com";
const PR: &str = "https://github.com/octo/app/pull/7";

fn id() -> String {
    "10001".into()
}

fn task() -> String {
    format!("jira_{}", id())
}

struct Setup {
    fake: FakeJira,
    store: Store,
    outbox: Outbox,
    /// The run whose pull request is [`PR`].
    run: i64,
    _db: TestDb,
}

fn config(fake: &FakeJira, extra: &str) -> Config {
    Config::parse(&format!(
        "[[sources]]\nname = \"jira\"\nkind = \"jira\"\nbase_url = \"{}\"\nemail = \"{EMAIL}\"\n\
         jql = \"project = APP\"\ntoken_env = \"WB_JIRA_TOKEN\"\nwriteback_timeout = \"1s\"\n{extra}\n",
        fake.url
    ))
    .unwrap()
}

const TRANSITIONS: &str = "writeback = [\"pr_opened\", \"complete\", \"abandoned\", \"merged\"]\n\
    writeback_transitions = { pr_opened = \"In Progress\", complete = \"Request Review\", merged = \"Done\" }";

async fn setup(db: TestDb, token: &str, extra: &str) -> Setup {
    let fake = FakeJira::start(&basic(EMAIL, TOKEN)).await;
    fake.put_issue(issue(1, "APP", "Fix the login", "To Do", Utc::now()));
    let store = db.open().await;
    let gid = TaskGid::parse(&task()).unwrap();
    let new = NewTask {
        description: Some("Fix the login".into()),
        source: Some("jira".into()),
        ..Default::default()
    };
    store.upsert_task(&gid, &new, Actor::Cli).await.unwrap();
    store.approve_task(&gid, true, Actor::Cli).await.unwrap();
    let run = store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap().id;
    store.set_run_pr(run, None, PR, 7).await.unwrap();
    let token = token.to_string();
    let env: executor::writeback::Env =
        Arc::new(move |name| (name == "WB_JIRA_TOKEN").then(|| token.clone()));
    let outbox = Outbox::new(Arc::new(config(&fake, extra)), store.clone(), None).with_env(env);
    Setup { fake, store, outbox, run, _db: db }
}

async fn record(s: &Setup, event: WritebackEvent, key: &str, text: &str) -> bool {
    s.outbox.record(&task(), Some("jira"), Some(s.run), event, key, text).await.unwrap()
}

fn posts(fake: &FakeJira) -> usize {
    fake.count("POST", "/comment")
}

async fn a_message_is_one_comment_with_the_pull_request_linked_and_the_issue_moved(db: TestDb) {
    let s = setup(db, TOKEN, TRANSITIONS).await;
    let opened = format!("executor opened a pull request for this task: {PR} (branch executor/x).");
    assert!(record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", &opened).await);
    assert!(!record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", &opened).await, "once per key");
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    let row = &s.store.writebacks(Some(&task())).await.unwrap()[0];
    assert_eq!(row.status, WritebackStatus::Delivered);
    assert_eq!(s.fake.comments(&id()), [format!("{opened}\n\n{}", marker_text(&row.marker))]);
    let body = &s.fake.comment_bodies(&id())[0];
    assert_eq!((&body["type"], &body["version"]), (&serde_json::json!("doc"), &serde_json::json!(1)), "ADF");
    let link = body["content"][0]["content"].as_array().unwrap().iter().find(|n| n["text"] == PR).unwrap();
    assert_eq!(link["marks"][0]["attrs"]["href"], PR, "the pull request's address is a link");
    let on_comments = s.fake.requests().iter().filter(|r| r.path.ends_with("/comment")).count();
    assert_eq!(on_comments, 1, "the first attempt looks for nothing: it posts");
    assert_eq!(s.fake.status_of(&id()).as_deref(), Some("In Progress"), "by the status's name");
    let links = s.fake.links(&id());
    assert_eq!(links.len(), 1);
    assert_eq!(links[0]["object"]["url"], PR);
    assert_eq!(links[0]["object"]["title"], "Pull request octo/app#7");

    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    record(&s, WritebackEvent::Abandoned, "run:2:abandoned", "gave up").await;
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 2);
    assert_eq!(s.fake.status_of(&id()).as_deref(), Some("In Review"), "by the transition's name");
    record(&s, WritebackEvent::Merged, "run:1:merged", &format!("The pull request was merged: {PR}")).await;
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.status_of(&id()).as_deref(), Some("Done"));
    let links = s.fake.links(&id());
    assert_eq!(links.len(), 1, "one link per globalId, updated: {links:?}");
    assert_eq!(links[0]["object"]["status"]["resolved"], true, "merged: resolved");
    assert_eq!(s.fake.comments(&id()).len(), 4);
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 0, "delivered: never sent again");
    assert_eq!(posts(&s.fake), 4);
    let post = s.fake.requests().into_iter().find(|r| r.method == "POST").unwrap();
    assert_eq!(post.authorization.as_deref(), Some(basic(EMAIL, TOKEN).as_str()));
    assert_eq!(post.path, format!("/rest/api/3/issue/{}/comment", id()));
}

async fn a_comment_answered_502_is_found_not_posted_again(db: TestDb) {
    let s = setup(db, TOKEN, TRANSITIONS).await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready for review").await;
    s.fake.fail_next_write(WriteFault::AppliedThenStatus(502));
    let first = s.outbox.deliver_due().await.unwrap();
    assert_eq!((first.delivered, first.failed.len()), (0, 1), "a passing failure");
    assert!(first.failed[0].contains("502"), "{:?}", first.failed);
    assert_eq!(s.fake.comments(&id()).len(), 1, "Jira applied it");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments(&id()).len(), 1, "Jira shows the message once");
    assert_eq!(posts(&s.fake), 1, "the retry looked for the marker and found it");
    assert_eq!(s.fake.count("GET", "/comment"), 1);
    let row = &s.store.writebacks(Some(&task())).await.unwrap()[0];
    assert_eq!((row.status, row.attempts), (WritebackStatus::Delivered, 2));
    assert_eq!(s.fake.status_of(&id()).as_deref(), Some("In Review"), "moved by the retry");
}

async fn a_comment_answered_too_late_or_cut_off_is_found_not_posted_again(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    s.fake.fail_next_write(WriteFault::AppliedThenLate(Duration::from_secs(3)));
    let first = s.outbox.deliver_due().await.unwrap();
    assert!(first.failed[0].contains("no answer in time"), "{:?}", first.failed);
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    s.store.make_writebacks_due_for_tests().await.unwrap();
    s.fake.fail_next(Fault::Reset);
    let second = s.outbox.deliver_due().await.unwrap();
    assert_eq!(second.failed.len(), 1, "the lookup's connection dropped: {second:?}");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 2);
    s.fake.fail_next_write(WriteFault::AppliedThenReset);
    record(&s, WritebackEvent::Abandoned, "run:1:abandoned", "gave up").await;
    assert_eq!(s.outbox.deliver_due().await.unwrap().failed.len(), 1, "a cut-off answer is not known");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    let firsts: Vec<String> =
        s.fake.comments(&id()).iter().map(|t| t.split("\n\n").next().unwrap_or("").to_string()).collect();
    assert_eq!(firsts, ["opened", "ready", "gave up"], "each once, in order");
    assert_eq!(posts(&s.fake), 3);
}

async fn rate_limits_and_server_errors_are_retried_later_in_order(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "first").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "second").await;
    s.fake.fail_next(Fault::Status { status: 429, retry_after: Some(30) });
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!((report.delivered, report.failed.len()), (0, 1), "{:?}", report.failed);
    assert!(report.failed[0].contains("429"), "{:?}", report.failed);
    s.store.make_writebacks_due_for_tests().await.unwrap();
    s.fake.fail_next(Fault::Status { status: 503, retry_after: None });
    assert_eq!(s.outbox.deliver_due().await.unwrap().failed.len(), 1);
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 2);
    let firsts: Vec<String> =
        s.fake.comments(&id()).iter().map(|t| t.split("\n\n").next().unwrap_or("").to_string()).collect();
    assert_eq!(firsts, ["first", "second"]);
}

async fn a_crash_after_jira_took_it_is_recognised(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    let row = s.store.writebacks(Some(&task())).await.unwrap()[0].id;
    let hold = Utc::now() + chrono::TimeDelta::seconds(120);
    let begun = s.store.begin_writeback_attempt(row, hold).await.unwrap().unwrap();
    // The attempt reached Jira, and the runner died before recording it.
    let source = config(&s.fake, "").sources[0].clone();
    let tracker = Tracker::Jira(executor::writeback::JiraTracker::new(&source, Some(TOKEN.into())).unwrap());
    let posted = tracker.post(&begun).await.unwrap();
    assert!(matches!(posted, Posted::Now(_)));
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments(&id()).len(), 1, "recognised by its marker, not posted twice");
    let row = &s.store.writebacks(Some(&task())).await.unwrap()[0];
    assert_eq!(row.remote_id.as_deref(), Some(posted.remote_id()));
}

async fn a_transition_the_issue_does_not_offer_is_refused_once(db: TestDb) {
    let s = setup(db, TOKEN, "writeback_transitions = { complete = \"Deploy\" }").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    let text = &report.refused[0].text;
    assert!(text.contains("APP-1") && text.contains("no transition named \"Deploy\""), "{text}");
    assert!(text.contains("\"Start Progress\" (to In Progress)"), "the names it offers: {text}");
    assert_eq!(s.fake.comments(&id()).len(), 1, "the comment went before the transition failed");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    let again = s.outbox.deliver_due().await.unwrap();
    assert!(again.refused.is_empty() && again.failed.is_empty(), "not retried");
    assert_eq!(s.fake.status_of(&id()).as_deref(), Some("To Do"));
}

async fn a_wrong_token_is_refused_once_and_never_shown(db: TestDb) {
    let wrong = "ATATT3x-revoked-0123456789";
    let s = setup(db, wrong, "").await;
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    let text = &report.refused[0].text;
    assert!(text.contains("WB_JIRA_TOKEN") && text.contains("id.atlassian.com"), "{text}");
    assert!(!text.contains(wrong), "the token never appears: {text}");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert!(s.outbox.deliver_due().await.unwrap().refused.is_empty(), "told once");
    assert_eq!(posts(&s.fake), 1);
}

async fn a_token_that_may_not_comment_is_refused_once(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    s.fake.fail_next_write(WriteFault::Refused(403));
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    let text = &report.refused[0].text;
    assert!(text.contains("permission to comment") && text.contains("Add Comments"), "{text}");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    let again = s.outbox.deliver_due().await.unwrap();
    assert!(again.refused.is_empty() && again.failed.is_empty(), "not retried");
    assert!(s.fake.comments(&id()).is_empty());
}

async fn a_deleted_issue_is_refused_and_later_messages_still_go(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    s.fake.delete_issue(&id());
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    assert!(report.refused[0].text.contains("deleted"), "{}", report.refused[0].text);
    s.fake.put_issue(issue(2, "APP", "Other", "To Do", Utc::now()));
    s.outbox
        .record("jira_10002", Some("jira"), None, WritebackEvent::PrOpened, "run:2:pr_opened", "x")
        .await
        .unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.comments("10002").len(), 1);
}

async fn doctors_probe_asks_who_the_token_is_without_writing(db: TestDb) {
    let s = setup(db, TOKEN, TRANSITIONS).await;
    let source = config(&s.fake, TRANSITIONS).sources[0].clone();
    let fine = executor::writeback::probe(&source, Some(TOKEN.into()), None).await.unwrap();
    assert!(fine.contains("Executor Bot"), "{fine}");
    assert_eq!(s.fake.count("GET", "/rest/api/3/myself"), 1);
    let wrong = executor::writeback::probe(&source, Some("nonsense".into()), None).await.unwrap_err();
    assert!(
        matches!(&wrong, TrackerError::Refused { why, .. } if why.contains("WB_JIRA_TOKEN")),
        "{wrong:?}"
    );
    assert!(s.fake.requests().iter().all(|r| r.method == "GET"), "nothing was written");
}

#[tokio::test]
async fn a_data_center_comment_is_wiki_text_found_by_its_marker_before_a_retry() {
    let fake = FakeJira::start("Bearer dc-pat-SECRET").await;
    fake.put_issue(issue(1, "APP", "Fix the login", "To Do", Utc::now()));
    let config = Config::parse(&format!(
        "[[sources]]\nname = \"dc\"\nkind = \"jira\"\nbase_url = \"{}\"\nauth = \"bearer\"\n\
         jql = \"project = APP\"\ntoken_env = \"JIRA_PAT\"\n\
         writeback_transitions = {{ pr_opened = \"In Progress\" }}\n",
        fake.url
    ))
    .unwrap();
    let tracker =
        executor::writeback::JiraTracker::new(&config.sources[0], Some("dc-pat-SECRET".into())).unwrap();
    let now = Utc::now();
    let mut w = executor::store::Writeback {
        id: 1,
        task_gid: task(),
        run_id: None,
        source: "dc".into(),
        event: WritebackEvent::PrOpened,
        event_key: "run:1:pr_opened".into(),
        message: "opened".into(),
        marker: "wb-00112233aabbccdd".into(),
        status: WritebackStatus::Pending,
        created_at: now,
        next_attempt_at: now,
        attempts: 1,
        last_error: None,
        remote_id: None,
        settled_at: None,
    };
    let posted = tracker.post(&w, Some(PR)).await.unwrap();
    assert!(matches!(posted, Posted::Now(_)));
    let bodies = fake.comment_bodies(&id());
    assert_eq!(bodies, [serde_json::json!("opened\n\n[executor wb-00112233aabbccdd]")], "a string on v2");
    assert!(fake.requests().iter().all(|r| r.path.starts_with("/rest/api/2/")), "REST API v2");
    w.attempts = 2;
    let again = tracker.post(&w, Some(PR)).await.unwrap();
    assert_eq!(again, Posted::Earlier(posted.remote_id().to_string()));
    assert_eq!((posts(&fake), fake.links(&id()).len()), (1, 1), "found, not posted again; one link");
    assert_eq!(fake.status_of(&id()).as_deref(), Some("In Progress"));
}

/// Issue 34's answers from the tracker, on Jira: the first comment since the question was asked by one
/// of the source's `answerers` (account ids) answers it; a stranger's, an earlier one and executor's own
/// message do not, nor anything while no answerer is configured.
async fn a_comment_by_an_answerer_answers_the_open_question(db: TestDb) {
    let s = setup(db, TOKEN, "answerers = [\"acc-alice\"]").await;
    let asked = Utc::now() - chrono::Duration::minutes(30);
    let doc = |text: &str| {
        serde_json::json!({"type": "doc", "version": 1, "content": [
            {"type": "paragraph", "content": [{"type": "text", "text": text}]}]})
    };
    let alice = serde_json::json!({"accountId": "acc-alice", "displayName": "Alice Liddell"});
    let mallory = serde_json::json!({"accountId": "acc-mallory", "displayName": "Alice Liddell"});
    let task = s.store.task(&TaskGid::parse(&task()).unwrap()).await.unwrap();
    s.fake.comment_by(&id(), alice.clone(), doc("use en-US"), asked - chrono::Duration::minutes(5));
    s.fake.comment_by(&id(), mallory, doc("use fr-FR"), asked + chrono::Duration::minutes(1));
    let ours = format!("a question for you\n\n{}", marker_text("wb-1"));
    s.fake.comment_by(&id(), alice.clone(), doc(&ours), asked + chrono::Duration::minutes(2));
    assert_eq!(s.outbox.tracker_answer(&task, asked).await.unwrap(), None, "no answerer's comment since");

    s.fake.comment_by(&id(), alice, doc("use en-GB"), asked + chrono::Duration::minutes(3));
    let answer = s.outbox.tracker_answer(&task, asked).await.unwrap().expect("an answer");
    assert_eq!((answer.by.as_str(), answer.text.as_str()), ("Alice Liddell", "use en-GB"));

    let none = Outbox::new(Arc::new(config(&s.fake, "")), s.store.clone(), None)
        .with_env(Arc::new(|_| Some(TOKEN.to_string())));
    assert_eq!(none.tracker_answer(&task, asked).await.unwrap(), None, "no answerers: no answers");
}
