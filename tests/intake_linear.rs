//! The Linear source against the fake Linear: the issues its filter selects (team, project, state,
//! labels, assignee), paged by cursor, incremental by `updatedAt`; a rate limit waited out; a wrong
//! key told with the fix and never shown; a bad issue refused alone. Then `executor intake`'s own
//! function stores them on SQLite and PostgreSQL as tasks `lin_{id}`, and reads no comment back.

mod common;
#[path = "fake_linear/mod.rs"]
mod fake_linear;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use common::TestDb;
use executor::config::Config;
use executor::intake::run::intake;
use executor::intake::source::EnvLookup;
use executor::intake::source::linear::{LinearConfig, LinearSource, PAGE_SIZE};
use executor::linear::LinearError;
use executor::store::TaskFilter;
use fake_linear::{FakeLinear, Fault, issue, uuid};
use serde_json::json;

const KEY: &str = "lin_api_0123456789abcdefSECRET";

fn env() -> EnvLookup {
    Arc::new(|name| (name == "LINEAR_API_KEY").then(|| KEY.to_string()))
}

fn source(fake: &FakeLinear, configure: impl FnOnce(&mut LinearConfig)) -> LinearSource {
    let mut config = LinearConfig {
        name: "linear".into(),
        api_url: fake.url.clone(),
        token_env: "LINEAR_API_KEY".into(),
        ..LinearConfig::default()
    };
    configure(&mut config);
    LinearSource::new(config, env()).unwrap()
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
}

fn gids(fetched: &executor::intake::source::Fetched) -> Vec<String> {
    let mut gids: Vec<String> = fetched.tasks.iter().map(|t| t.gid.clone()).collect();
    gids.sort();
    gids
}

fn gid(n: u64) -> String {
    format!("lin_{}", uuid(n))
}

#[tokio::test]
async fn issues_are_paged_by_cursor_and_read_whole() {
    let fake = FakeLinear::start(KEY).await;
    let total = u64::from(PAGE_SIZE) * 2 + 7;
    for n in 1..=total {
        let day = format!("2026-10-{:02}T{:02}:00:00.000Z", 1 + n % 28, n % 24);
        fake.put_issue(issue(n, "ENG", n as u32, &format!("Issue {n}"), "Todo", &day));
    }
    let fetched = source(&fake, |_| {}).fetch(None).await.unwrap();
    assert_eq!(fetched.tasks.len() as u64, total, "every issue once");
    assert!(fetched.refused.is_empty());
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "three pages");
    assert_eq!(requests[0].variables["after"], json!(null));
    // Each later page asks from the endCursor the answer before gave: an id, opaque to executor.
    let cursors: Vec<&str> = requests[1..].iter().map(|r| r.variables["after"].as_str().unwrap()).collect();
    assert!(cursors[0] != cursors[1] && cursors.iter().all(|c| !c.is_empty()), "{cursors:?}");
    for r in &requests {
        assert_eq!(r.fields, ["issues"]);
        assert_eq!(r.variables["first"], json!(PAGE_SIZE));
        assert_eq!(r.authorization.as_deref(), Some(KEY), "the key as is, no Bearer");
    }
    let task = fetched.tasks.iter().find(|t| t.gid == gid(5)).unwrap();
    assert_eq!(task.name, "Issue 5");
    assert_eq!(task.notes, "Description of Issue 5");
    assert_eq!(task.section.as_deref(), Some("Todo"));
    assert_eq!(task.assignee.as_deref(), Some("Alex Doe"));
    assert_eq!(task.url.as_deref(), Some("https://linear.app/acme/issue/ENG-5"));
    assert_eq!(task.completed, Some(false));
    assert_eq!(task.raw["identifier"], "ENG-5");
    assert_eq!(task.raw["labels"]["nodes"][0]["name"], "executor");
    let latest = fetched.tasks.iter().filter_map(|t| t.modified_at).max();
    assert_eq!(fetched.cursor, latest);
}

#[tokio::test]
async fn the_filter_selects_team_project_state_labels_and_assignee() {
    let fake = FakeLinear::start(KEY).await;
    let t = "2026-11-01T10:00:00.000Z";
    fake.put_issue(issue(1, "ENG", 1, "wanted", "Todo", t));
    fake.put_issue(issue(2, "OPS", 2, "other team", "Todo", t));
    fake.put_issue(issue(3, "ENG", 3, "done", "Done", t));
    let mut unlabelled = issue(4, "ENG", 4, "no label", "Todo", t);
    unlabelled["labels"] = json!({"nodes": []});
    fake.put_issue(unlabelled);
    let mut someone_else = issue(5, "ENG", 5, "not mine", "Todo", t);
    someone_else["assignee"] = json!({"name": "Sam", "email": "sam@example.com", "isMe": false});
    fake.put_issue(someone_else);
    let mut other_project = issue(6, "ENG", 6, "other project", "Todo", t);
    other_project["project"] = json!({"name": "Web"});
    fake.put_issue(other_project);

    let all = source(&fake, |_| {}).fetch(None).await.unwrap();
    assert_eq!(gids(&all).len(), 5, "every team, every open state: all but the done one");
    let narrow = source(&fake, |c| {
        c.teams = vec!["ENG".into()];
        c.projects = vec!["Mobile".into()];
        c.labels = vec!["executor".into()];
        c.assignee = Some("me".into());
    })
    .fetch(None)
    .await
    .unwrap();
    assert_eq!(gids(&narrow), [gid(1)]);
    let done = source(&fake, |c| c.states = vec!["Done".into()]).fetch(None).await.unwrap();
    assert_eq!(gids(&done), [gid(3)], "a named state replaces the open-states default");
    let sams = source(&fake, |c| c.assignee = Some("SAM@example.com".into())).fetch(None).await.unwrap();
    assert_eq!(gids(&sams), [gid(5)]);
}

#[tokio::test]
async fn only_issues_updated_since_the_cursor_come_back() {
    let fake = FakeLinear::start(KEY).await;
    fake.put_issue(issue(1, "ENG", 1, "old", "Todo", "2026-10-01T00:00:00.000Z"));
    fake.put_issue(issue(2, "ENG", 2, "new", "Todo", "2026-11-02T00:00:00.000Z"));
    let since = at("2026-11-01T00:00:00Z");
    let fetched = source(&fake, |_| {}).fetch(Some(since)).await.unwrap();
    assert_eq!(gids(&fetched), [gid(2)]);
    assert_eq!(fetched.cursor, Some(at("2026-11-02T00:00:00Z")));
    let sent = &fake.requests()[0].variables["filter"]["and"];
    assert!(
        sent.as_array().unwrap().contains(&json!({"updatedAt": {"gte": "2026-11-01T00:00:00.000Z"}})),
        "{sent}"
    );
    // Nothing newer: the cursor stays where it was.
    let again = source(&fake, |_| {}).fetch(Some(at("2026-12-01T00:00:00Z"))).await.unwrap();
    assert!(again.tasks.is_empty());
    assert_eq!(again.cursor, Some(at("2026-12-01T00:00:00Z")));
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_and_a_lasting_one_fails_the_fetch() {
    let fake = FakeLinear::start(KEY).await;
    fake.put_issue(issue(1, "ENG", 1, "one", "Todo", "2026-11-01T00:00:00.000Z"));
    fake.fail_next(Fault::RateLimited(Duration::from_millis(1200)));
    let fetched = source(&fake, |_| {}).fetch(None).await.unwrap();
    assert_eq!(gids(&fetched), [gid(1)]);
    assert_eq!(fake.requests().len(), 2, "asked again after the window");
    for _ in 0..4 {
        fake.fail_next(Fault::RateLimited(Duration::from_millis(10)));
    }
    let error = source(&fake, |_| {}).fetch(None).await.unwrap_err();
    assert_eq!(error, LinearError::RateLimited { retries: 3 });
    assert!(error.is_passing());
}

#[tokio::test]
async fn a_wrong_key_is_told_with_the_fix_and_never_shown() {
    let fake = FakeLinear::start("another-key").await;
    let error = source(&fake, |_| {}).fetch(None).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, LinearError::Unauthenticated { .. }), "{error:?}");
    assert!(text.contains("LINEAR_API_KEY") && text.contains("personal API key"), "{text}");
    assert!(!text.contains(KEY) && !format!("{error:?}").contains(KEY), "the key never appears: {text}");
    let no_key = LinearSource::new(
        LinearConfig {
            api_url: fake.url.clone(),
            token_env: "LINEAR_API_KEY".into(),
            ..LinearConfig::default()
        },
        Arc::new(|_| None),
    )
    .unwrap();
    assert!(matches!(no_key.fetch(None).await, Err(LinearError::MissingKey { .. })));
    // A proxy's 502 is a passing fault.
    let fake = FakeLinear::start(KEY).await;
    fake.fail_next(Fault::Status(502));
    let error = source(&fake, |_| {}).fetch(None).await.unwrap_err();
    assert!(error.is_passing(), "{error:?}");
}

#[tokio::test]
async fn a_bad_issue_is_refused_alone() {
    let fake = FakeLinear::start(KEY).await;
    fake.put_issue(issue(1, "ENG", 1, "good", "Todo", "2026-11-01T00:00:00.000Z"));
    let mut bad = issue(2, "ENG", 2, "bad", "Todo", "2026-11-02T00:00:00.000Z");
    bad["updatedAt"] = json!("last tuesday");
    fake.put_issue(bad);
    let fetched = source(&fake, |_| {}).fetch(None).await.unwrap();
    assert_eq!(gids(&fetched), [gid(1)]);
    assert_eq!(fetched.refused.len(), 1);
    assert!(fetched.refused[0].1.contains("updatedAt"), "{:?}", fetched.refused);
}

on_both_databases!(intake_stores_linear_issues_and_reads_no_comment);

async fn intake_stores_linear_issues_and_reads_no_comment(db: TestDb) {
    let fake = FakeLinear::start(KEY).await;
    fake.put_issue(issue(1, "ENG", 1, "Fix login", "Todo", "2026-11-01T00:00:00.000Z"));
    let config = Config::parse(&format!(
        "[[sources]]\nname = \"linear\"\nkind = \"linear\"\napi_url = \"{}\"\nteams = [\"ENG\"]\n",
        fake.url
    ))
    .unwrap();
    assert_eq!(config.sources[0].token_env, "LINEAR_API_KEY", "the default variable");
    let store = db.open().await;
    let report = intake(&config, &store, None, false, env(), None).await.unwrap();
    assert_eq!(report.sources[0].added, 1, "{:?}", report.sources[0]);
    let task = store.task(&executor::domain::TaskGid::parse(&gid(1)).unwrap()).await.unwrap();
    assert_eq!(task.source.as_deref(), Some("linear"));
    assert!(
        task.description.as_deref().is_some_and(|d| d.starts_with("Fix login")),
        "{:?}",
        task.description
    );
    let notes_before = task.notes.clone();
    // executor comments on the issue (write-back); the next intake reads no comment as task text.
    let mut commented = issue(1, "ENG", 1, "Fix login", "Todo", "2026-11-03T00:00:00.000Z");
    commented["comments"] = json!({"nodes": [{"body": "executor opened a pull request [executor wb-1]"}]});
    fake.put_issue(commented);
    let report = intake(&config, &store, None, false, env(), None).await.unwrap();
    assert_eq!(report.sources[0].error, None);
    let task = store.task(&executor::domain::TaskGid::parse(&gid(1)).unwrap()).await.unwrap();
    assert_eq!(task.notes, notes_before);
    assert!(!task.notes.as_deref().unwrap_or_default().contains("executor opened"));
    assert_eq!(store.count_tasks(&TaskFilter::default()).await.unwrap(), 1);
}
