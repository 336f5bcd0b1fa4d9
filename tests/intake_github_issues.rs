//! The GitHub Issues task source against the fake GitHub: paging over more than a page (by `since`,
//! and by `page` within one second), the label filter, `since`, pull requests skipped, an issue edited
//! while the source pages, a 401 and a 404, a null body and a 1 MB body.

#[path = "fake_github/mod.rs"]
mod fake_github;

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use executor::github::{GitHubClient, GitHubError, TokenSources};
use executor::intake::source::github_issues::{
    GitHubIssuesConfig, GitHubIssuesSource, IssueState, MAX_REQUESTS, PER_PAGE,
};
use executor::intake::source::{Fetched, SourceError};
use fake_github::FakeGitHub;

const REPO: &str = "octo/app";
const TOKEN: &str = "ghp_test-token-0123456789abcdef";

async fn fake() -> FakeGitHub {
    let fake = FakeGitHub::start().await;
    fake.add_repo("octo", "app", None);
    fake.set_token(TOKEN);
    fake
}

fn client(fake: &FakeGitHub, sources: TokenSources) -> Arc<GitHubClient> {
    let config = executor::config::GitHub { api_url: fake.api_url(), ..Default::default() };
    Arc::new(GitHubClient::with_sources(&config, sources).unwrap())
}

fn source(fake: &FakeGitHub, configure: impl FnOnce(&mut GitHubIssuesConfig)) -> GitHubIssuesSource {
    let mut config = GitHubIssuesConfig { repo: REPO.into(), labels: Vec::new(), state: IssueState::Open };
    configure(&mut config);
    GitHubIssuesSource::new(client(fake, TokenSources::given(TOKEN)), config)
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
}

/// `count` open issues "Issue 1".. updated a minute apart from 2026-01-01, so their order is known.
fn add_issues(fake: &FakeGitHub, count: usize) -> Vec<i64> {
    let start = at("2026-01-01T00:00:00Z");
    (0..count)
        .map(|k| {
            let number = fake.add_issue(REPO, &format!("Issue {}", k + 1), Some("details"), &[]);
            let minutes = i64::try_from(k).unwrap();
            fake.edit_issue(REPO, number, |issue| issue.updated_at = start + TimeDelta::minutes(minutes));
            number
        })
        .collect()
}

fn gid(number: i64) -> String {
    format!("gh_octo.app-{number}")
}

fn gids(fetched: &Fetched) -> Vec<String> {
    fetched.tasks.iter().map(|task| task.gid.clone()).collect()
}

#[tokio::test]
async fn more_than_a_page_is_read_oldest_change_first_and_pull_requests_are_skipped() {
    let fake = fake().await;
    let numbers = add_issues(&fake, 230);
    let pr = fake.create_pr(REPO, "feature", "A pull request", false, "abc123");

    let fetched = source(&fake, |_| {}).fetch(None).await.unwrap();

    assert_eq!(gids(&fetched), numbers.iter().map(|n| gid(*n)).collect::<Vec<_>>());
    assert!(!gids(&fetched).contains(&gid(pr)), "the pull request is not a task");
    assert!(fetched.refused.is_empty(), "{:?}", fetched.refused);
    // From the start, then from the last change of each full page (less a second).
    assert_eq!(fake.counts().route("issues_list"), 3);
    assert_eq!(fetched.cursor, fetched.tasks.last().unwrap().modified_at);
    let first = &fetched.tasks[0];
    assert_eq!(first.name, "Issue 1");
    assert_eq!(first.notes, "details");
    assert_eq!(first.completed, Some(false));
    assert_eq!(first.assignee, None);
    assert_eq!(first.section, None);
    assert_eq!(first.url.as_deref(), Some(format!("{}/octo/app/issues/{}", fake.url, numbers[0]).as_str()));
    assert_eq!(first.modified_at, Some(at("2026-01-01T00:00:00Z")));
    assert_eq!(first.raw["number"], numbers[0]);
}

#[tokio::test]
async fn a_bulk_edit_of_more_than_a_page_within_one_second_is_read_by_page() {
    let fake = fake().await;
    let numbers = add_issues(&fake, 150);
    for number in &numbers {
        fake.edit_issue(REPO, *number, |issue| issue.updated_at = at("2026-03-01T12:00:00Z"));
    }

    let fetched = source(&fake, |_| {}).fetch(None).await.unwrap();

    let unique: HashSet<String> = gids(&fetched).into_iter().collect();
    assert_eq!(fetched.tasks.len(), 150);
    assert_eq!(unique.len(), 150);
    // Page 1; `since` moved to that second, page 1 again; it could not move on, so page 2.
    assert_eq!(fake.counts().route("issues_list"), 3);
}

#[tokio::test]
async fn an_issue_edited_while_the_source_pages_skips_no_other() {
    let fake = fake().await;
    let numbers = add_issues(&fake, 250);
    // Issue 1 (read on the first page) is edited: it moves to the end, and every later issue moves up
    // one place. Read by page number, issue 101 would slide onto page 1, already read, and be lost.
    fake.edit_issue_after_listing(1, REPO, numbers[0]);

    let fetched = source(&fake, |_| {}).fetch(None).await.unwrap();

    let got: HashSet<String> = gids(&fetched).into_iter().collect();
    let want: HashSet<String> = numbers.iter().map(|n| gid(*n)).collect();
    assert_eq!(got, want);
    assert_eq!(fetched.tasks.len(), 250, "each issue once");
    let edited = fake.issue(REPO, numbers[0]).updated_at;
    let first = fetched.tasks.iter().find(|task| task.gid == gid(numbers[0])).unwrap();
    assert_eq!(first.modified_at.map(|at| at.timestamp()), Some(edited.timestamp()), "its newest copy");
    assert_eq!(fetched.cursor, first.modified_at);
}

#[tokio::test]
async fn only_issues_with_every_label_are_read_and_names_with_spaces_reach_github() {
    let fake = fake().await;
    let both = fake.add_issue(REPO, "Both", None, &["bug", "good first issue"]);
    fake.add_issue(REPO, "Bug only", None, &["bug"]);
    fake.add_issue(REPO, "Other only", None, &["good first issue"]);
    fake.add_issue(REPO, "None", None, &[]);
    fake.create_pr(REPO, "feature", "A pull request", false, "abc123");

    let fetched = source(&fake, |c| c.labels = vec!["bug".into(), "Good First Issue".into()])
        .fetch(None)
        .await
        .unwrap();

    assert_eq!(gids(&fetched), [gid(both)]);
    assert_eq!(fetched.tasks[0].raw["labels"][1]["name"], "good first issue");
}

#[tokio::test]
async fn a_label_with_a_comma_is_refused_before_any_request() {
    let fake = fake().await;
    let error = source(&fake, |c| c.labels = vec!["a,b".into()]).fetch(None).await.unwrap_err();
    assert!(matches!(error, SourceError::BadLabel { .. }), "{error:?}");
    assert!(error.to_string().contains("splits on commas"), "{error}");
    assert_eq!(fake.counts().rest, 0);
}

#[tokio::test]
async fn since_reads_only_later_changes_and_closed_issues_need_state_all() {
    let fake = fake().await;
    let numbers = add_issues(&fake, 3); // 00:00, 00:01, 00:02
    fake.edit_issue(REPO, numbers[2], |issue| issue.state = "closed".into());

    let since = at("2026-01-01T00:01:00Z");
    let open = source(&fake, |_| {}).fetch(Some(since)).await.unwrap();
    assert_eq!(gids(&open), [gid(numbers[1])]);
    assert_eq!(open.cursor, Some(since));

    let all = source(&fake, |c| c.state = IssueState::All).fetch(Some(since)).await.unwrap();
    assert_eq!(gids(&all), [gid(numbers[1]), gid(numbers[2])]);
    assert_eq!(all.tasks[1].completed, Some(true));
    assert_eq!(all.cursor, Some(at("2026-01-01T00:02:00Z")));

    let later = source(&fake, |_| {}).fetch(Some(at("2026-06-01T00:00:00Z"))).await.unwrap();
    assert!(later.tasks.is_empty());
    assert_eq!(later.cursor, Some(at("2026-06-01T00:00:00Z")), "the cursor stays where it was");
}

#[tokio::test]
async fn a_401_names_the_token_variable_and_gh_auth_login_and_never_the_token() {
    let fake = fake().await;
    let wrong = "ghp_wrong-token-value-42";
    let sources = TokenSources {
        given: None,
        env_names: vec!["GH_TOKEN".into()],
        env: Arc::new(move |name| (name == "GH_TOKEN").then(|| wrong.to_string())),
        gh_program: None,
        gh_hostname: String::new(),
        app: None,
    };
    let config = GitHubIssuesConfig { repo: REPO.into(), labels: Vec::new(), state: IssueState::Open };
    let error = GitHubIssuesSource::new(client(&fake, sources), config).fetch(None).await.unwrap_err();

    assert!(matches!(error, SourceError::GitHub { error: GitHubError::Auth(_), .. }), "{error:?}");
    let message = error.to_string();
    for part in ["octo/app", "the environment variable GH_TOKEN", "401", "gh auth login"] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert!(!message.contains(wrong), "{message}");
}

#[tokio::test]
async fn an_unknown_repository_is_a_not_found_error() {
    let fake = fake().await;
    let error = source(&fake, |c| c.repo = "octo/nowhere".into()).fetch(None).await.unwrap_err();
    assert!(matches!(error, SourceError::GitHub { error: GitHubError::NotFound(_), .. }), "{error:?}");
    assert!(error.to_string().contains("octo/nowhere"), "{error}");
}

#[tokio::test]
async fn a_null_body_is_empty_notes_and_a_1_mb_body_is_capped_in_raw_too() {
    let fake = fake().await;
    let empty = fake.add_issue(REPO, "No description", None, &[]);
    let huge = fake.add_issue(REPO, "Logs pasted", Some(&"log line ✓\n".repeat(100_000)), &[]);

    let fetched = source(&fake, |_| {}).fetch(None).await.unwrap();

    let task = |number| fetched.tasks.iter().find(|task| task.gid == gid(number)).unwrap();
    assert_eq!(task(empty).notes, "");
    assert!(task(empty).raw["body"].is_null());
    let whole = task(huge);
    assert_eq!(whole.notes, "log line ✓\n".repeat(100_000), "kept whole for the filters");
    assert_eq!(whole.raw["body"].as_str(), Some(whole.notes.as_str()));
}

#[tokio::test]
async fn a_fetch_stops_after_its_page_cap_says_so_and_the_next_one_goes_on_from_the_cursor() {
    let fake = fake().await;
    let count = MAX_REQUESTS * (PER_PAGE - 1) + 10;
    add_issues(&fake, count);

    let first = source(&fake, |_| {}).fetch(None).await.unwrap();
    assert_eq!(fake.counts().route("issues_list"), MAX_REQUESTS);
    assert_eq!(first.refused.len(), 1);
    assert!(first.refused[0].1.contains("stopped after 100 pages"), "{:?}", first.refused);

    let second = source(&fake, |_| {}).fetch(first.cursor).await.unwrap();
    assert!(second.refused.is_empty());
    let all: HashSet<String> = gids(&first).into_iter().chain(gids(&second)).collect();
    assert_eq!(all.len(), count);
}
