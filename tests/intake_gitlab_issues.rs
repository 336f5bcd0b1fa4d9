//! The GitLab issues source against the fake GitLab: one project's issues filtered by labels,
//! assignee and milestone, paged by `updated_after` then `page` so that an edit during the fetch skips
//! nothing and a bulk edit of more than a page still moves on; 429 with `Retry-After`, a 5xx and a
//! dropped connection waited out and retried, a lasting one failing the fetch; a wrong token told with
//! the variable and scope and never shown; a bad issue refused alone. Then `executor intake`'s own
//! function stores them on SQLite and PostgreSQL as tasks `gl_{project_id}-{iid}`, incrementally, and
//! reads no note back.

mod common;
#[path = "fake_gitlab_issues/mod.rs"]
mod fake_gitlab_issues;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use common::TestDb;
use executor::config::Config;
use executor::gitlab::{GitLabClient, GitLabError};
use executor::intake::run::intake;
use executor::intake::source::EnvLookup;
use executor::intake::source::gitlab_issues::{
    GitLabIssuesConfig, GitLabIssuesError, GitLabIssuesSource, IssueState, PER_PAGE,
};
use executor::store::TaskFilter;
use fake_gitlab_issues::{FakeGitLab, Fault, PROJECT_ID, PROJECT_PATH, issue};
use serde_json::json;

const TOKEN: &str = "glpat-intake-SECRET-0123456789";

fn client(fake: &FakeGitLab, token: Option<&str>) -> Arc<GitLabClient> {
    let config = executor::config::GitLab { url: fake.url.clone(), ..Default::default() };
    let client = GitLabClient::new(&config, "GITLAB_TOKEN", token.map(str::to_string)).unwrap();
    Arc::new(client.with_backoff(Duration::from_millis(10)))
}

fn source(fake: &FakeGitLab, cfg: GitLabIssuesConfig) -> GitLabIssuesSource {
    GitLabIssuesSource::new(client(fake, Some(TOKEN)), cfg)
}

fn project() -> GitLabIssuesConfig {
    GitLabIssuesConfig { project: PROJECT_PATH.into(), ..GitLabIssuesConfig::default() }
}

/// `minutes` before a fixed instant with milliseconds (GitLab's precision).
fn ago(minutes: i64) -> DateTime<Utc> {
    let now = DateTime::parse_from_rfc3339("2026-11-30T12:00:00.123Z").unwrap().with_timezone(&Utc);
    now - TimeDelta::minutes(minutes)
}

fn gid(iid: u64) -> String {
    format!("gl_{PROJECT_ID}-{iid}")
}

fn gids(fetched: &executor::intake::source::Fetched) -> Vec<String> {
    let mut gids: Vec<String> = fetched.tasks.iter().map(|t| t.gid.clone()).collect();
    gids.sort();
    gids
}

fn param(r: &fake_gitlab_issues::Request, name: &str) -> Option<String> {
    r.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

#[tokio::test]
async fn issues_are_paged_by_updated_after_and_mapped() {
    let fake = FakeGitLab::start(TOKEN).await;
    let total = PER_PAGE as u64 * 2 + 50;
    for iid in 1..=total {
        fake.put_issue(issue(iid, &format!("Issue {iid}"), ago(10_000 - iid as i64)));
    }
    let fetched = source(&fake, project()).fetch(None).await.unwrap();
    assert_eq!(fetched.tasks.len() as u64, total, "every issue once");
    assert!(fetched.refused.is_empty(), "{:?}", fetched.refused);
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "three listings, each from the last change read");
    for r in &requests {
        assert_eq!(r.path, "/api/v4/projects/acme%2Fplatform%2Fapp/issues", "the path, url-encoded");
        assert_eq!(r.token.as_deref(), Some(TOKEN));
        assert_eq!(param(r, "page").as_deref(), Some("1"));
        assert_eq!(param(r, "state").as_deref(), Some("opened"));
    }
    assert_eq!(param(&requests[0], "updated_after"), None);
    let since = fake_gitlab_issues::gitlab_time(ago(10_000 - PER_PAGE as i64) - TimeDelta::seconds(1));
    assert_eq!(param(&requests[1], "updated_after"), Some(since), "milliseconds, less a second");

    let task = fetched.tasks.iter().find(|t| t.gid == gid(5)).unwrap();
    assert_eq!((task.name.as_str(), task.notes.as_str()), ("Issue 5", "Description of Issue 5"));
    assert_eq!((task.completed, task.assignee.as_deref()), (Some(false), Some("alex")));
    assert_eq!(task.url, Some(format!("https://gitlab.example.com/{PROJECT_PATH}/-/issues/5")));
    assert_eq!((&task.raw["labels"], &task.raw["milestone"]["title"]), (&json!(["executor"]), &json!("v1")));
    assert_eq!(fetched.cursor, Some(ago(10_000 - total as i64)));
}

#[tokio::test]
async fn an_issue_edited_during_the_fetch_makes_none_skipped() {
    let fake = FakeGitLab::start(TOKEN).await;
    let total = PER_PAGE as u64 + 30;
    for iid in 1..=total {
        fake.put_issue(issue(iid, &format!("Issue {iid}"), ago(5_000 - iid as i64)));
    }
    // Issue 1, already read, moves to the end of the listing right after the first page: pages 1, 2 of
    // one listing would now skip the issue that slid onto page 1.
    fake.touch_after_listing(1, 1, ago(1));
    let fetched = source(&fake, project()).fetch(None).await.unwrap();
    assert_eq!(fetched.tasks.len() as u64, total, "{:?}", gids(&fetched));
    let first = fetched.tasks.iter().find(|t| t.gid == gid(1)).unwrap();
    assert_eq!(first.name, "edited", "delivered once, at its newest");
    assert_eq!(fetched.cursor, Some(ago(1)));
}

#[tokio::test]
async fn a_bulk_edit_of_more_than_a_page_within_a_second_moves_on_by_page() {
    let fake = FakeGitLab::start(TOKEN).await;
    let at = ago(30);
    for iid in 1..=PER_PAGE as u64 + 20 {
        fake.put_issue(issue(iid, "bulk", at));
    }
    let fetched = source(&fake, project()).fetch(None).await.unwrap();
    assert_eq!(fetched.tasks.len(), PER_PAGE + 20);
    let pages: Vec<Option<String>> = fake.requests().iter().map(|r| param(r, "page")).collect();
    assert_eq!(pages.last().cloned().flatten().as_deref(), Some("2"), "{pages:?}");
}

#[tokio::test]
async fn the_filters_are_gitlabs_own() {
    let fake = FakeGitLab::start(TOKEN).await;
    fake.put_issue(issue(1, "wanted", ago(10)));
    let mut other = issue(2, "another milestone", ago(9));
    other["milestone"] = json!({"title": "v2"});
    fake.put_issue(other);
    let mut unlabelled = issue(3, "no label", ago(8));
    unlabelled["labels"] = json!([]);
    fake.put_issue(unlabelled);
    let mut closed = issue(4, "closed", ago(7));
    closed["state"] = json!("closed");
    fake.put_issue(closed);
    let cfg = GitLabIssuesConfig {
        labels: vec!["executor".into()],
        assignee: Some("alex".into()),
        milestone: Some("v1".into()),
        ..project()
    };
    let fetched = source(&fake, cfg.clone()).fetch(None).await.unwrap();
    assert_eq!(gids(&fetched), [gid(1)]);
    let all = source(&fake, GitLabIssuesConfig { state: IssueState::All, ..cfg }).fetch(None).await.unwrap();
    assert_eq!(gids(&all), [gid(1), gid(4)]);
    assert_eq!(all.tasks.iter().find(|t| t.gid == gid(4)).unwrap().completed, Some(true));
    let mine = GitLabIssuesConfig { assignee: Some("me".into()), ..project() };
    assert!(source(&fake, mine).fetch(None).await.unwrap().tasks.is_empty(), "the bot is assigned none");
}

#[tokio::test]
async fn rate_limits_server_errors_and_resets_are_retried_and_a_lasting_fault_fails_the_fetch() {
    let fake = FakeGitLab::start(TOKEN).await;
    fake.put_issue(issue(1, "one", ago(5)));
    fake.fail_next(Fault::Status { status: 429, retry_after: Some(1) });
    fake.fail_next(Fault::Status { status: 503, retry_after: None });
    fake.fail_next(Fault::Reset);
    let fetched = source(&fake, project()).fetch(None).await.unwrap();
    assert_eq!(gids(&fetched), [gid(1)]);
    assert_eq!(fake.requests().len(), 4, "asked again after each fault");
    for _ in 0..4 {
        fake.fail_next(Fault::Status { status: 502, retry_after: Some(0) });
    }
    let error = source(&fake, project()).fetch(None).await.unwrap_err();
    assert!(
        matches!(&error, GitLabIssuesError::GitLab { error: GitLabError::GaveUp { status: 502, .. }, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_wrong_or_missing_token_is_told_with_the_variable_and_never_shown() {
    let fake = FakeGitLab::start("glpat-another").await;
    let error = source(&fake, project()).fetch(None).await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains("GITLAB_TOKEN") && text.contains("`api` scope"), "{text}");
    assert!(!text.contains(TOKEN) && !format!("{error:?}").contains(TOKEN), "{text}");
    let none = GitLabIssuesSource::new(client(&fake, None), project()).fetch(None).await.unwrap_err();
    assert!(none.to_string().contains("no GitLab token"), "{none}");
    assert_eq!(fake.requests().len(), 1, "no request without a token");
}

#[tokio::test]
async fn a_bad_issue_is_refused_alone() {
    let fake = FakeGitLab::start(TOKEN).await;
    fake.put_issue(issue(1, "good", ago(20)));
    let mut bad = issue(2, "bad", ago(10));
    bad["assignees"] = json!("alex");
    fake.put_issue(bad);
    let fetched = source(&fake, project()).fetch(None).await.unwrap();
    assert_eq!(gids(&fetched), [gid(1)]);
    assert_eq!(fetched.refused.len(), 1);
    let (place, why) = &fetched.refused[0];
    assert!(place.contains(PROJECT_PATH) && why.contains("issue #2"), "{place}: {why}");
}

on_both_databases!(intake_stores_gitlab_issues_incrementally_and_reads_no_note);

async fn intake_stores_gitlab_issues_incrementally_and_reads_no_note(db: TestDb) {
    let fake = FakeGitLab::start(TOKEN).await;
    fake.put_issue(issue(1, "Fix login", ago(30)));
    let config = Config::parse(&format!(
        "[gitlab]\nurl = \"{}\"\ntoken_env = [\"WB_GITLAB_TOKEN\"]\n\n\
         [[sources]]\nname = \"gl\"\nkind = \"gitlab_issues\"\ngitlab = \"{PROJECT_PATH}\"\nlabels = [\"executor\"]\n",
        fake.url
    ))
    .unwrap();
    let env: EnvLookup = Arc::new(|name| (name == "WB_GITLAB_TOKEN").then(|| TOKEN.to_string()));
    let store = db.open().await;
    let report = intake(&config, &store, None, false, env.clone(), None).await.unwrap();
    assert_eq!(report.sources[0].added, 1, "{:?}", report.sources[0]);
    let task = store.task(&executor::domain::TaskGid::parse(&gid(1)).unwrap()).await.unwrap();
    assert_eq!(task.source.as_deref(), Some("gl"));
    assert_eq!(task.description.as_deref(), Some("Fix login\n\nDescription of Fix login"));

    // executor notes on the issue (write-back) and the issue is edited; the next intake asks since the
    // cursor, stores the edit, and reads no note as task text.
    fake.note_by(1, fake_gitlab_issues::BOT, "Executor Bot", "opened <!-- executor wb-1 -->", ago(2), false);
    let mut edited = issue(1, "Fix login", ago(1));
    edited["description"] = json!("Now with steps");
    fake.put_issue(edited);
    let report = intake(&config, &store, None, false, env, None).await.unwrap();
    assert_eq!((report.sources[0].error.as_deref(), report.sources[0].updated), (None, 1));
    let last = fake.requests().last().cloned().unwrap();
    assert!(param(&last, "updated_after").is_some(), "incremental: {last:?}");
    assert!(fake.requests().iter().all(|r| !r.path.contains("/notes")), "notes are never read");
    let task = store.task(&executor::domain::TaskGid::parse(&gid(1)).unwrap()).await.unwrap();
    let text = format!("{:?} {:?}", task.description, task.revision_notes);
    assert!(text.contains("Now with steps") && !text.contains("executor wb-"), "{text}");
    assert_eq!(store.count_tasks(&TaskFilter::default()).await.unwrap(), 1);
}
