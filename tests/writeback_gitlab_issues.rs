//! Write-back to GitLab issues on SQLite and PostgreSQL, against the fake GitLab: each message is one
//! note on the issue (the marker hidden in it); never doubled through a note GitLab applied but
//! answered with a 502, too late, or over a dropped connection, nor through a 429 or a 5xx, nor when
//! the runner died between GitLab taking it and recording it; a wrong token, a token that may not
//! write, and a deleted issue are refused once, for a human; an answerer's note answers a run's
//! question; a merge request on GitLab closes the issue; `doctor`'s probe reads the project and
//! writes nothing.

mod common;
#[path = "fake_gitlab_issues/mod.rs"]
mod fake_gitlab_issues;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use common::TestDb;
use executor::config::Config;
use executor::domain::{Actor, TaskGid, WritebackEvent, WritebackStatus};
use executor::store::{NewTask, Store};
use executor::writeback::{GitLabIssuesTracker, Outbox, Posted, Tracker, TrackerError};
use fake_gitlab_issues::{FakeGitLab, Fault, PROJECT_ID, PROJECT_PATH, WriteFault, issue};

on_both_databases!(
    each_message_is_one_note_with_its_marker_hidden,
    a_note_answered_502_is_found_not_posted_again,
    a_note_answered_too_late_or_cut_off_is_found_not_posted_again,
    rate_limits_and_server_errors_are_retried_later_in_order,
    a_runner_killed_between_the_note_and_its_record_is_recognised,
    a_wrong_token_is_refused_once_and_never_shown,
    a_token_that_may_not_write_is_refused_once_naming_the_scope,
    a_deleted_issue_is_refused_and_later_messages_still_go,
    a_note_by_an_answerer_answers_the_open_question,
);

const TOKEN: &str = "glpat-writeback-SECRET-0123";
const IID: u64 = 12;

fn task() -> String {
    format!("gl_{PROJECT_ID}-{IID}")
}

struct Setup {
    fake: FakeGitLab,
    store: Store,
    outbox: Outbox,
    run: i64,
    _db: TestDb,
}

fn config(fake: &FakeGitLab, extra: &str) -> Config {
    config_on(fake, "gitlab", extra)
}

/// The config with the repository's forge `forge`.
fn config_on(fake: &FakeGitLab, forge: &str, extra: &str) -> Config {
    Config::parse(&format!(
        "[gitlab]\nurl = \"{}\"\ntoken_env = [\"WB_GITLAB_TOKEN\"]\n\n\
         [repos.app]\npath = \"/src/app\"\nforge = \"{forge}\"\ngitlab = \"{PROJECT_PATH}\"\ngithub = \"octo/app\"\n\n\
         [[sources]]\nname = \"gl\"\nkind = \"gitlab_issues\"\ngitlab = \"{PROJECT_PATH}\"\n\
         writeback_timeout = \"1s\"\n{extra}\n",
        fake.url
    ))
    .unwrap()
}

fn env(token: &str) -> executor::writeback::Env {
    let token = token.to_string();
    Arc::new(move |name| (name == "WB_GITLAB_TOKEN").then(|| token.clone()))
}

async fn setup(db: TestDb, token: &str, extra: &str) -> Setup {
    let fake = FakeGitLab::start(TOKEN).await;
    fake.put_issue(issue(IID, "Fix the login", Utc::now()));
    let store = db.open().await;
    let gid = TaskGid::parse(&task()).unwrap();
    let new = NewTask {
        description: Some("Fix the login".into()),
        source: Some("gl".into()),
        ..Default::default()
    };
    store.upsert_task(&gid, &new, Actor::Cli).await.unwrap();
    store.approve_task(&gid, true, Actor::Cli).await.unwrap();
    let run = store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap().id;
    let outbox = Outbox::new(Arc::new(config(&fake, extra)), store.clone(), None).with_env(env(token));
    Setup { fake, store, outbox, run, _db: db }
}

async fn record(s: &Setup, event: WritebackEvent, key: &str, text: &str) -> bool {
    s.outbox.record(&task(), Some("gl"), Some(s.run), event, key, text).await.unwrap()
}

fn posts(fake: &FakeGitLab) -> usize {
    fake.count("POST", "/notes")
}

/// The first line of each note.
fn firsts(fake: &FakeGitLab) -> Vec<String> {
    fake.notes(IID).iter().map(|t| t.split("\n\n").next().unwrap_or("").to_string()).collect()
}

async fn each_message_is_one_note_with_its_marker_hidden(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    let opened = "executor opened a merge request for this task: https://gitlab.example.com/mr/7";
    assert!(record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", opened).await);
    assert!(!record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", opened).await, "once per key");
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    let row = &s.store.writebacks(Some(&task())).await.unwrap()[0];
    assert_eq!(row.status, WritebackStatus::Delivered);
    assert_eq!(s.fake.notes(IID), [format!("{opened}\n\n<!-- executor {} -->", row.marker)]);
    assert_eq!(s.fake.count("GET", "/notes"), 0, "the first attempt looks for nothing: it posts");
    let post = s.fake.requests().into_iter().find(|r| r.method == "POST").unwrap();
    assert_eq!(post.path, format!("/api/v4/projects/{PROJECT_ID}/issues/{IID}/notes"));
    assert_eq!(post.token.as_deref(), Some(TOKEN));
    assert_eq!(row.remote_id.as_deref(), Some("501"), "the note's id");

    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    record(&s, WritebackEvent::Abandoned, "run:2:abandoned", "gave up").await;
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 2);
    assert_eq!(firsts(&s.fake), [opened, "ready", "gave up"]);
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 0, "delivered: never sent again");
    assert_eq!(posts(&s.fake), 3);
}

async fn a_note_answered_502_is_found_not_posted_again(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready for review").await;
    s.fake.fail_next_write(WriteFault::AppliedThenStatus(502));
    let first = s.outbox.deliver_due().await.unwrap();
    assert_eq!((first.delivered, first.failed.len()), (0, 1), "a passing failure");
    assert!(first.failed[0].contains("may have been carried out"), "{:?}", first.failed);
    assert_eq!(s.fake.notes(IID).len(), 1, "GitLab applied it");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.notes(IID).len(), 1, "GitLab shows the message once");
    assert_eq!(posts(&s.fake), 1, "the retry looked for the marker and found it");
    assert_eq!(s.fake.count("GET", "/notes"), 1);
    let row = &s.store.writebacks(Some(&task())).await.unwrap()[0];
    assert_eq!((row.status, row.attempts), (WritebackStatus::Delivered, 2));
}

async fn a_note_answered_too_late_or_cut_off_is_found_not_posted_again(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    s.fake.fail_next_write(WriteFault::AppliedThenLate(Duration::from_secs(3)));
    let first = s.outbox.deliver_due().await.unwrap();
    assert!(first.failed[0].contains("no answer in time"), "{:?}", first.failed);
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 2);
    s.fake.fail_next_write(WriteFault::AppliedThenReset);
    record(&s, WritebackEvent::Abandoned, "run:1:abandoned", "gave up").await;
    assert_eq!(s.outbox.deliver_due().await.unwrap().failed.len(), 1, "a cut-off answer is not known");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(firsts(&s.fake), ["opened", "ready", "gave up"], "each once, in order");
    assert_eq!(posts(&s.fake), 3);
}

async fn rate_limits_and_server_errors_are_retried_later_in_order(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "first").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "second").await;
    // A 429 refused the write: it is sent again after Retry-After, within the same attempt.
    s.fake.fail_next(Fault::Status { status: 429, retry_after: Some(1) });
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 2);
    assert_eq!(firsts(&s.fake), ["first", "second"]);
    // A 503 on a post may have landed: a passing failure, looked for before the next attempt.
    assert!(record(&s, WritebackEvent::Abandoned, "run:1:abandoned", "third").await);
    s.fake.fail_next(Fault::Status { status: 503, retry_after: None });
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!((report.delivered, report.failed.len()), (0, 1), "{:?}", report.failed);
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(firsts(&s.fake), ["first", "second", "third"]);
}

async fn a_runner_killed_between_the_note_and_its_record_is_recognised(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    record(&s, WritebackEvent::Complete, "run:1:completed", "ready").await;
    let row = s.store.writebacks(Some(&task())).await.unwrap()[0].id;
    let hold = Utc::now() + chrono::TimeDelta::seconds(120);
    let begun = s.store.begin_writeback_attempt(row, hold).await.unwrap().unwrap();
    // The attempt reached GitLab, and the runner died before recording it.
    let tracker = s.outbox.tracker(&config(&s.fake, "").sources[0]).unwrap();
    assert!(matches!(tracker, Tracker::GitLabIssues(_)));
    let posted = tracker.post(&begun).await.unwrap();
    assert!(matches!(posted, Posted::Now(_)));
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.notes(IID).len(), 1, "recognised by its marker, not posted twice");
    let row = &s.store.writebacks(Some(&task())).await.unwrap()[0];
    assert_eq!(row.remote_id.as_deref(), Some(posted.remote_id()));
}

async fn a_wrong_token_is_refused_once_and_never_shown(db: TestDb) {
    let wrong = "glpat-revoked-0123456789";
    let s = setup(db, wrong, "").await;
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    let text = &report.refused[0].text;
    assert!(text.contains("WB_GITLAB_TOKEN") && text.contains("`api` scope"), "{text}");
    assert!(!text.contains(wrong), "the token never appears: {text}");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    assert!(s.outbox.deliver_due().await.unwrap().refused.is_empty(), "told once");
    assert_eq!(posts(&s.fake), 1);
}

async fn a_token_that_may_not_write_is_refused_once_naming_the_scope(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    s.fake.fail_next_write(WriteFault::Refused(403));
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    let text = &report.refused[0].text;
    assert!(text.contains("`api` scope") && text.contains("read_api") && text.contains("Reporter"), "{text}");
    s.store.make_writebacks_due_for_tests().await.unwrap();
    let again = s.outbox.deliver_due().await.unwrap();
    assert!(again.refused.is_empty() && again.failed.is_empty(), "not retried");
    assert!(s.fake.notes(IID).is_empty());
}

async fn a_deleted_issue_is_refused_and_later_messages_still_go(db: TestDb) {
    let s = setup(db, TOKEN, "").await;
    s.fake.delete_issue(IID);
    record(&s, WritebackEvent::PrOpened, "run:1:pr_opened", "opened").await;
    let report = s.outbox.deliver_due().await.unwrap();
    assert_eq!(report.refused.len(), 1);
    assert!(report.refused[0].text.contains("deleted"), "{}", report.refused[0].text);
    s.fake.put_issue(issue(13, "Other", Utc::now()));
    let other = format!("gl_{PROJECT_ID}-13");
    s.outbox
        .record(&other, Some("gl"), None, WritebackEvent::PrOpened, "run:2:pr_opened", "x")
        .await
        .unwrap();
    assert_eq!(s.outbox.deliver_due().await.unwrap().delivered, 1);
    assert_eq!(s.fake.notes(13).len(), 1);
}

/// The first note since the question was asked by one of the source's `answerers` (usernames) answers
/// it; a stranger's, an earlier one, a system note and executor's own message do not, nor anything
/// while no answerer is configured.
async fn a_note_by_an_answerer_answers_the_open_question(db: TestDb) {
    let s = setup(db, TOKEN, "answerers = [\"alice\"]").await;
    let asked = Utc::now() - chrono::Duration::minutes(30);
    let minutes = chrono::Duration::minutes;
    let task = s.store.task(&TaskGid::parse(&task()).unwrap()).await.unwrap();
    s.fake.note_by(IID, "alice", "Alice Liddell", "use en-US", asked - minutes(5), false);
    s.fake.note_by(IID, "mallory", "Alice Liddell", "use fr-FR", asked + minutes(1), false);
    s.fake.note_by(
        IID,
        "alice",
        "Alice Liddell",
        "a question <!-- executor wb-1 -->",
        asked + minutes(2),
        false,
    );
    s.fake.note_by(IID, "alice", "Alice Liddell", "changed the description", asked + minutes(2), true);
    assert_eq!(s.outbox.tracker_answer(&task, asked).await.unwrap(), None, "no answerer's note since");

    s.fake.note_by(IID, "alice", "Alice Liddell", "use en-GB", asked + minutes(3), false);
    let answer = s.outbox.tracker_answer(&task, asked).await.unwrap().expect("an answer");
    assert_eq!((answer.by.as_str(), answer.text.as_str()), ("Alice Liddell", "use en-GB"));

    let none = Outbox::new(Arc::new(config(&s.fake, "")), s.store.clone(), None).with_env(env(TOKEN));
    assert_eq!(none.tracker_answer(&task, asked).await.unwrap(), None, "no answerers: no answers");
}

#[tokio::test]
async fn a_merge_request_on_gitlab_closes_the_issue_and_one_on_github_does_not() {
    let fake = FakeGitLab::start(TOKEN).await;
    let db = common::sqlite();
    let store = db.open().await;
    let on_gitlab = Outbox::new(Arc::new(config(&fake, "repo = \"app\"")), store.clone(), None);
    let expected = format!("{PROJECT_PATH}#{IID}");
    assert_eq!(on_gitlab.closing_reference(Some("gl"), &task()), Some(expected));
    assert_eq!(on_gitlab.closing_reference(Some("gl"), "gh_octo.app-12"), None, "not a GitLab issue");
    let on_github = Outbox::new(Arc::new(config_on(&fake, "github", "")), store, None);
    assert_eq!(on_github.closing_reference(Some("gl"), &task()), None, "GitHub would read another issue");
}

#[tokio::test]
async fn doctors_probe_reads_the_project_and_writes_nothing() {
    let fake = FakeGitLab::start(TOKEN).await;
    let source = config(&fake, "").sources[0].clone();
    let gitlab = |token: &str| {
        let config = executor::config::GitLab {
            url: fake.url.clone(),
            token_env: vec!["WB_GITLAB_TOKEN".into()],
            ..Default::default()
        };
        Arc::new(executor::gitlab::GitLabClient::new(&config, "WB_GITLAB_TOKEN", Some(token.into())).unwrap())
    };
    let fine = GitLabIssuesTracker::new(gitlab(TOKEN), &source).unwrap().probe().await.unwrap();
    assert!(fine.contains(PROJECT_PATH) && fine.contains("`api` scope"), "{fine}");
    assert_eq!(fake.count("GET", "/api/v4/projects/acme%2Fplatform%2Fapp"), 1);
    let wrong = GitLabIssuesTracker::new(gitlab("nonsense"), &source).unwrap().probe().await.unwrap_err();
    assert!(
        matches!(&wrong, TrackerError::Refused { fix, .. } if fix.contains("WB_GITLAB_TOKEN")),
        "{wrong:?}"
    );
    fake.disable_issues();
    let off = GitLabIssuesTracker::new(gitlab(TOKEN), &source).unwrap().probe().await.unwrap_err();
    assert!(
        matches!(&off, TrackerError::Refused { why, .. } if why.contains("issues turned off")),
        "{off:?}"
    );
    assert!(fake.requests().iter().all(|r| r.method == "GET"), "nothing was written");
}
