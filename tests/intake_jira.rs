//! The Jira source against the fake Jira: the issues a JQL query selects, paged by `nextPageToken`
//! (Cloud) or `startAt` (Data Center), incremental by `updated`; 429 with `Retry-After`, a 5xx and a
//! dropped connection waited out and retried, a lasting one failing the fetch; a wrong token told with
//! the fix and never shown; a bad JQL told in Jira's words; a bad issue refused alone. Then `executor
//! intake`'s own function stores them on SQLite and PostgreSQL as tasks `jira_{id}`, and reads no
//! comment back.

mod common;
#[path = "fake_jira/mod.rs"]
mod fake_jira;

use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use common::TestDb;
use executor::config::Config;
use executor::intake::run::intake;
use executor::intake::source::EnvLookup;
use executor::intake::source::jira::{FIELDS, JiraConfig, JiraSource, PAGE_SIZE};
use executor::jira::{JiraAuth, JiraError, JiraSite};
use executor::store::TaskFilter;
use fake_jira::{FakeJira, Fault, basic, issue};
use serde_json::json;

const TOKEN: &str = "ATATT3xFfGF0-jira-SECRET";
const EMAIL: &str = "bot@acme.com";

fn env() -> EnvLookup {
    Arc::new(|name| (name == "JIRA_API_TOKEN").then(|| TOKEN.to_string()))
}

async fn cloud() -> FakeJira {
    FakeJira::start(&basic(EMAIL, TOKEN)).await
}

fn source(fake: &FakeJira, jql: &str) -> JiraSource {
    let site = JiraSite {
        base_url: fake.url.clone(),
        auth: JiraAuth::Basic,
        email: EMAIL.into(),
        token_env: "JIRA_API_TOKEN".into(),
    };
    JiraSource::new(JiraConfig { name: "jira".into(), site, jql: jql.into() }, env()).unwrap()
}

fn ago(minutes: i64) -> DateTime<Utc> {
    // Whole seconds, as Jira's times (to the millisecond) read back equal.
    let now = Utc::now() - TimeDelta::minutes(minutes);
    DateTime::from_timestamp(now.timestamp(), 0).unwrap()
}

fn gids(fetched: &executor::intake::source::Fetched) -> Vec<String> {
    let mut gids: Vec<String> = fetched.tasks.iter().map(|t| t.gid.clone()).collect();
    gids.sort();
    gids
}

fn gid(n: u64) -> String {
    format!("jira_{}", 10_000 + n)
}

#[tokio::test]
async fn issues_are_paged_by_next_page_token_and_read_whole() {
    let fake = cloud().await;
    let total = u64::from(PAGE_SIZE) * 2 + 7;
    for n in 1..=total {
        fake.put_issue(issue(n, "APP", &format!("Issue {n}"), "To Do", ago(10_000 - n as i64)));
    }
    fake.put_issue(issue(999, "OPS", "another project", "To Do", ago(5)));
    let fetched = source(&fake, "project = APP order by created DESC").fetch(None).await.unwrap();
    assert_eq!(fetched.tasks.len() as u64, total, "every issue of APP once");
    assert!(fetched.refused.is_empty());
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "three pages");
    for r in &requests {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/rest/api/3/search/jql"));
        assert_eq!(r.body["jql"], "project = APP ORDER BY updated ASC", "the order is executor's");
        assert_eq!(r.body["maxResults"], json!(PAGE_SIZE));
        assert_eq!(r.body["fields"], json!(FIELDS));
        assert_eq!(r.authorization.as_deref(), Some(basic(EMAIL, TOKEN).as_str()), "email and API token");
    }
    assert_eq!(requests[0].body.get("nextPageToken"), None);
    let tokens: Vec<&str> = requests[1..].iter().map(|r| r.body["nextPageToken"].as_str().unwrap()).collect();
    assert!(tokens[0] != tokens[1], "each page asks with the token the one before gave: {tokens:?}");

    let task = fetched.tasks.iter().find(|t| t.gid == gid(5)).unwrap();
    assert_eq!((task.name.as_str(), task.notes.as_str()), ("Issue 5", "Description of Issue 5"));
    assert_eq!((task.section.as_deref(), task.completed), (Some("To Do"), Some(false)));
    assert_eq!(task.assignee.as_deref(), Some("Alex Doe"));
    assert_eq!(task.url, Some(format!("{}/browse/APP-5", fake.url)));
    assert_eq!(task.raw["key"], "APP-5");
    assert_eq!(task.raw["fields"]["priority"]["name"], "High", "Jira's own fields for raw.* paths");
    assert_eq!((&task.raw["labels"], &task.raw["priority"]), (&json!(["executor"]), &json!("High")));
    assert_eq!(task.raw["components"], json!(["Web"]));
    assert_eq!(fetched.cursor, fetched.tasks.iter().filter_map(|t| t.modified_at).max());
    assert_eq!(fetched.cursor, Some(ago(10_000 - total as i64)));
}

#[tokio::test]
async fn only_issues_updated_since_the_cursor_come_back_with_an_overlap() {
    let fake = cloud().await;
    fake.put_issue(issue(1, "APP", "old", "To Do", ago(3 * 24 * 60)));
    fake.put_issue(issue(2, "APP", "new", "To Do", ago(10)));
    fake.put_issue(issue(3, "APP", "just before the cursor", "To Do", ago(62)));
    let fetched = source(&fake, "project = APP").fetch(Some(ago(60))).await.unwrap();
    assert_eq!(gids(&fetched), [gid(2), gid(3)], "the overlap brings back what the clocks may disagree on");
    assert_eq!(fetched.cursor, Some(ago(10)));
    let jql = fake.requests()[0].body["jql"].as_str().unwrap().to_string();
    assert!(
        jql.starts_with("(project = APP) AND updated >= \"-6"),
        "a relative date, not the user's zone: {jql}"
    );
    // Nothing newer: the cursor stays where it was.
    let later = ago(1);
    let again = source(&fake, "project = APP").fetch(Some(later)).await.unwrap();
    assert!(again.tasks.is_empty(), "{:?}", gids(&again));
    assert_eq!(again.cursor, Some(later));
}

#[tokio::test]
async fn rate_limits_server_errors_and_resets_are_retried_and_a_lasting_fault_fails_the_fetch() {
    let fake = cloud().await;
    fake.put_issue(issue(1, "APP", "one", "To Do", ago(5)));
    fake.fail_next(Fault::Status { status: 429, retry_after: Some(1) });
    fake.fail_next(Fault::Status { status: 503, retry_after: None });
    fake.fail_next(Fault::Reset);
    let fetched = source(&fake, "project = APP").fetch(None).await.unwrap();
    assert_eq!(gids(&fetched), [gid(1)]);
    assert_eq!(fake.requests().len(), 4, "asked again after each fault");
    for _ in 0..4 {
        fake.fail_next(Fault::Status { status: 502, retry_after: Some(0) });
    }
    let error = source(&fake, "project = APP").fetch(None).await.unwrap_err();
    assert_eq!(error, JiraError::GaveUp { path: "/rest/api/3/search/jql".into(), status: 502, retries: 3 });
    assert!(error.is_passing());
}

#[tokio::test]
async fn a_wrong_token_is_told_with_the_fix_and_never_shown() {
    let fake = FakeJira::start(&basic(EMAIL, "another-token")).await;
    let error = source(&fake, "project = APP").fetch(None).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, JiraError::Unauthorized { .. }), "{error:?}");
    assert!(text.contains("JIRA_API_TOKEN") && text.contains("id.atlassian.com"), "{text}");
    assert!(!text.contains(TOKEN) && !format!("{error:?}").contains(TOKEN), "{text}");
    let site = JiraSite {
        base_url: fake.url.clone(),
        auth: JiraAuth::Basic,
        email: EMAIL.into(),
        token_env: "JIRA_API_TOKEN".into(),
    };
    let no_token = JiraSource::new(
        JiraConfig { name: "j".into(), site, jql: "project = APP".into() },
        Arc::new(|_| None),
    )
    .unwrap();
    let missing = no_token.fetch(None).await.unwrap_err();
    assert!(matches!(missing, JiraError::MissingToken { .. }), "{missing:?}");
    assert!(missing.to_string().contains("Create API token"), "{missing}");
}

#[tokio::test]
async fn a_bad_jql_is_told_in_jiras_words() {
    let fake = cloud().await;
    let error = source(&fake, "project = APP AND sprintt = 4").fetch(None).await.unwrap_err();
    assert!(!error.is_passing());
    let text = error.to_string();
    assert!(text.contains("Field 'sprintt' does not exist"), "{text}");
    let config = Config::parse(&format!(
        "[[sources]]\nname = \"jira\"\nkind = \"jira\"\nbase_url = \"{}\"\nemail = \"{EMAIL}\"\n\
         jql = \"project = APP AND sprintt = 4\"\n",
        fake.url
    ))
    .unwrap();
    let db = common::sqlite();
    let store = db.open().await;
    let report = intake(&config, &store, None, false, env(), None).await.unwrap();
    let told = report.sources[0].error.clone().unwrap_or_default();
    assert!(told.contains("sprintt") && told.contains("correct `jql`"), "{told}");
}

#[tokio::test]
async fn data_center_pages_by_start_at_with_a_bearer_token() {
    let fake = FakeJira::start("Bearer dc-pat-SECRET").await;
    for n in 1..=u64::from(PAGE_SIZE) + 3 {
        let mut dc = issue(n, "APP", &format!("Issue {n}"), "To Do", ago(500 - n as i64));
        dc["fields"]["description"] = json!("h2. Steps\nwiki text");
        fake.put_issue(dc);
    }
    let site = JiraSite {
        base_url: format!("{}/", fake.url),
        auth: JiraAuth::Bearer,
        email: String::new(),
        token_env: "JIRA_PAT".into(),
    };
    let env: EnvLookup = Arc::new(|name| (name == "JIRA_PAT").then(|| "dc-pat-SECRET".to_string()));
    let dc =
        JiraSource::new(JiraConfig { name: "dc".into(), site, jql: "project = APP".into() }, env).unwrap();
    let fetched = dc.fetch(None).await.unwrap();
    assert_eq!(fetched.tasks.len() as u32, PAGE_SIZE + 3);
    let starts: Vec<_> =
        fake.requests().iter().map(|r| (r.path.clone(), r.body["startAt"].clone())).collect();
    assert_eq!(
        starts,
        [("/rest/api/2/search".to_string(), json!(0)), ("/rest/api/2/search".to_string(), json!(PAGE_SIZE))]
    );
    assert_eq!(fetched.tasks[0].notes, "h2. Steps\nwiki text", "Data Center's text as it is");
}

#[tokio::test]
async fn a_bad_issue_is_refused_alone() {
    let fake = cloud().await;
    fake.put_issue(issue(1, "APP", "good", "Done", ago(20)));
    let mut bad = issue(2, "APP", "bad", "To Do", ago(10));
    bad["fields"]["updated"] = json!("last tuesday");
    fake.put_issue(bad);
    let fetched = source(&fake, "project = APP").fetch(None).await.unwrap();
    assert_eq!(gids(&fetched), [gid(1)]);
    assert_eq!(fetched.tasks[0].completed, Some(true), "a status of category done");
    assert_eq!(fetched.refused.len(), 1);
    assert!(fetched.refused[0].1.contains("updated"), "{:?}", fetched.refused);
}

on_both_databases!(intake_stores_jira_issues_and_reads_no_comment);

async fn intake_stores_jira_issues_and_reads_no_comment(db: TestDb) {
    let fake = cloud().await;
    fake.put_issue(issue(1, "APP", "Fix login", "To Do", ago(30)));
    let config = Config::parse(&format!(
        "[[sources]]\nname = \"jira\"\nkind = \"jira\"\nbase_url = \"{}\"\nemail = \"{EMAIL}\"\n\
         jql = \"project = APP AND status = 'To Do'\"\n",
        fake.url
    ))
    .unwrap();
    assert_eq!(config.sources[0].token_env, "JIRA_API_TOKEN", "the default variable");
    let store = db.open().await;
    let report = intake(&config, &store, None, false, env(), None).await.unwrap();
    assert_eq!(report.sources[0].added, 1, "{:?}", report.sources[0]);
    let gid = executor::domain::TaskGid::parse(&gid(1)).unwrap();
    let task = store.task(&gid).await.unwrap();
    assert_eq!(task.source.as_deref(), Some("jira"));
    assert!(
        task.description.as_deref().is_some_and(|d| d.starts_with("Fix login")),
        "{:?}",
        task.description
    );
    let notes_before = task.notes.clone();

    // executor comments on the issue (write-back) and the issue is edited; the next intake asks since
    // the cursor, stores the edit, and reads no comment as task text.
    let mut edited = issue(1, "APP", "Fix login", "To Do", ago(1));
    edited["fields"]["comment"] =
        json!({"comments": [{"body": "executor opened a pull request [executor wb-1]"}]});
    fake.put_issue(edited);
    let report = intake(&config, &store, None, false, env(), None).await.unwrap();
    assert_eq!(report.sources[0].error, None);
    let last = fake.requests().last().cloned().unwrap();
    assert!(last.body["jql"].as_str().unwrap().contains("updated >= \"-"), "{:?}", last.body);
    let task = store.task(&gid).await.unwrap();
    assert_eq!(task.notes, notes_before);
    assert!(!task.notes.as_deref().unwrap_or_default().contains("executor opened"));
    assert_eq!(store.count_tasks(&TaskFilter::default()).await.unwrap(), 1);
}
