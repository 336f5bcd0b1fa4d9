//! The GitLab issues source's mapping, gids and query, without a server (the fake's tests are in
//! tests/intake_gitlab_issues.rs).

use serde_json::json;

use super::*;

fn source(cfg: GitLabIssuesConfig) -> GitLabIssuesSource {
    let client = GitLabClient::new(&crate::config::GitLab::default(), "GITLAB_TOKEN", None).unwrap();
    GitLabIssuesSource::new(Arc::new(client), cfg)
}

fn project() -> GitLabIssuesConfig {
    GitLabIssuesConfig { project: "acme/platform/app.rs".into(), ..GitLabIssuesConfig::default() }
}

#[test]
fn gids_are_the_project_id_and_iid_and_read_back() {
    let gid = issue_gid(278_964, 42);
    assert_eq!(gid, "gl_278964-42");
    assert!(TaskGid::parse(&gid).is_ok());
    assert!(TaskGid::parse(&issue_gid(u64::MAX, u64::MAX)).is_ok());
    assert_eq!(parse_gid(&gid), Some((278_964, 42)));
    for other in ["gl_1-", "gl_-2", "gl_1-2x", "gl_1.2-3", "gh_octo.app-4", "1207", "gl_1-2-3"] {
        assert_eq!(parse_gid(other), None, "{other}");
    }
}

#[test]
fn the_query_escapes_every_value_and_names_the_order() {
    let cfg = GitLabIssuesConfig {
        labels: vec!["good first issue".into(), "a&b+c#d".into(), "é".into()],
        assignee: Some("alex.doe".into()),
        milestone: Some("v1.0 & more".into()),
        state: IssueState::All,
        ..project()
    };
    let filters = source(cfg).filters().unwrap();
    assert_eq!(
        filters,
        "state=all&labels=good%20first%20issue%2Ca%26b%2Bc%23d%2C%C3%A9&assignee_username=alex.doe\
         &milestone=v1.0%20%26%20more"
    );
    let since = DateTime::parse_from_rfc3339("2026-11-30T10:00:00.5+01:00").unwrap().with_timezone(&Utc);
    assert_eq!(
        listing_path("acme/platform/app.rs", "state=opened", Some(since), 3),
        "/projects/acme%2Fplatform%2Fapp.rs/issues?state=opened&order_by=updated_at&sort=asc&per_page=100\
         &page=3&updated_after=2026-11-30T09%3A00%3A00.500Z"
    );
    let me = GitLabIssuesConfig { assignee: Some("me".into()), ..project() };
    assert_eq!(source(me).filters().unwrap(), "state=opened&scope=assigned_to_me");
}

#[test]
fn filters_gitlab_would_misread_are_refused() {
    for (cfg, key) in [
        (GitLabIssuesConfig { labels: vec!["a,b".into()], ..project() }, "label"),
        (GitLabIssuesConfig { labels: vec![" ".into()], ..project() }, "label"),
        (GitLabIssuesConfig { labels: vec!["None".into()], ..project() }, "label"),
        (GitLabIssuesConfig { labels: vec!["x".into(), "any".into()], ..project() }, "label"),
        (GitLabIssuesConfig { assignee: Some(String::new()), ..project() }, "assignee"),
        (GitLabIssuesConfig { milestone: Some(" ".into()), ..project() }, "milestone"),
    ] {
        let error = source(cfg.clone()).filters().unwrap_err();
        assert!(
            matches!(&error, GitLabIssuesError::BadFilter { key: k, .. } if *k == key),
            "{cfg:?}: {error}"
        );
    }
    for bad in ["app", "acme/../app", "acme/app.git", "acme//app"] {
        let cfg = GitLabIssuesConfig { project: bad.into(), ..project() };
        assert!(matches!(source(cfg).filters(), Err(GitLabIssuesError::BadProject { .. })), "{bad}");
    }
}

#[test]
fn an_issue_is_mapped_and_a_null_description_is_empty() {
    let task = issue_task(json!({
        "id": 9001, "iid": 7, "project_id": 278964, "title": "Crash", "description": null,
        "state": "closed", "assignees": [{"username": "alex"}, {"username": "sam"}],
        "assignee": {"username": "alex"}, "web_url": "https://gitlab.com/acme/app/-/issues/7",
        "updated_at": "2026-11-30T10:00:00.123Z", "labels": ["bug"], "milestone": {"title": "v1"}
    }))
    .unwrap();
    assert_eq!(task.gid, "gl_278964-7");
    assert_eq!((task.name.as_str(), task.notes.as_str()), ("Crash", ""));
    assert_eq!(task.completed, Some(true));
    assert_eq!(task.assignee.as_deref(), Some("alex"));
    assert_eq!(task.section, None);
    assert_eq!(task.url.as_deref(), Some("https://gitlab.com/acme/app/-/issues/7"));
    assert_eq!(task.modified_at.unwrap().to_rfc3339(), "2026-11-30T10:00:00.123+00:00");
    assert_eq!((&task.raw["labels"][0], &task.raw["milestone"]["title"]), (&json!("bug"), &json!("v1")));
    let open = issue_task(json!({"iid": 8, "project_id": 1, "state": "opened", "assignees": [],
        "description": "Steps\n\n```sh\nmake\n```"}))
    .unwrap();
    assert_eq!((open.completed, open.assignee), (Some(false), None));
    assert_eq!(open.notes, "Steps\n\n```sh\nmake\n```", "Markdown, whole");
    let old = issue_task(json!({"iid": 9, "project_id": 1, "assignee": {"username": "kim"}})).unwrap();
    assert_eq!(old.assignee.as_deref(), Some("kim"), "an instance without `assignees`");
}

#[test]
fn unreadable_issues_say_why() {
    let cases = [
        (json!("x"), "not a JSON object but a string"),
        (json!({"title": "t"}), "it has no iid"),
        (json!({"iid": "7"}), "its iid is a string, not an integer"),
        (json!({"iid": -1}), "its iid -1 is not a positive integer"),
        (json!({"iid": 1}), "issue #1: it has no project_id"),
        (json!({"iid": 1, "project_id": 2, "title": 5}), "issue #1: its title is a number, not a string"),
        (
            json!({"iid": 1, "project_id": 2, "assignees": "alex"}),
            "issue #1: its assignees are a string, not an array",
        ),
        (
            json!({"iid": 1, "project_id": 2, "assignees": [{"name": "Alex"}]}),
            "issue #1: its assignee has no username",
        ),
        (
            json!({"iid": 1, "project_id": 2, "updated_at": "today"}),
            "issue #1: its updated_at \"today\" is not an RFC 3339 timestamp",
        ),
    ];
    for (raw, why) in cases {
        assert_eq!(issue_task(raw.clone()).unwrap_err(), why, "{raw}");
    }
}
