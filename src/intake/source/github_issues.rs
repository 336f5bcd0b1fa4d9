//! The GitHub Issues task source: the issues of one repository, optionally only those carrying every
//! one of some labels, read through the GitHub forge's client (its token sources, rate limits and
//! error messages).
//!
//! One `GET /repos/{owner}/{name}/issues?state=…&labels=…&sort=updated&direction=asc&per_page=100`
//! per page, with `since` for incremental fetches. The issues API lists pull requests too; those
//! (items with a `pull_request` key) are skipped.
//!
//! Paging is by `since` first and `page` second. Reading pages 1, 2, 3 of one listing sorted by
//! `updated_at` would skip an issue whenever one already read is edited during the fetch: the edited
//! one moves to the end and every later one moves up a place, so the first issue of the next page
//! slides onto a page already read — and, being older than the cursor, would not be seen again until
//! it changes. So after a full page the next request starts again at page 1 with `since` at the last
//! `updated_at` read less a second (GitHub's timestamps count seconds; the second of margin holds
//! whether `since` is inclusive or not), and the issues read twice are delivered once, at their
//! newest. Only a page whose issues all fall within that second (a bulk edit of more than a page)
//! moves on with `page`. At most [`MAX_REQUESTS`] pages are read per fetch; the rest, being later,
//! come at the next fetch from the cursor, and the cut is said in [`Fetched::refused`].
//!
//! The gid of an issue is `gh_{owner}.{name}-{number}`, lowercased (GitHub's names are
//! case-insensitive, so the configured spelling does not change it): e.g. `gh_octo.app-42`. It is a
//! valid [`TaskGid`], names the repository (two sources on two repositories never collide), cannot be
//! an Asana gid (those are digits), and reads back unambiguously — an owner has no '.', a number no
//! '-'. A repository name starting with '.' (`.github`) or holding ".." is refused: its gid would hold
//! "..", which no branch name may.
//!
//! Bodies are kept whole, like Asana's notes: the filters read all of them.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Method;
use serde_json::Value;

use super::{Fetched, SourceError, SourceTask, after_full_page, deliver_newest as deliver, kind};
use crate::domain::TaskGid;
use crate::github::GitHubClient;

/// Issues per page: GitHub's maximum.
pub const PER_PAGE: usize = 100;

/// Pages read per fetch at most (10,000 issues); the rest come at the next fetch.
pub const MAX_REQUESTS: usize = 100;

/// Everything but RFC 3986's unreserved characters is percent-encoded in a label name, so a label
/// with a space, '&', '#' or '+' reaches GitHub as itself.
const LABEL: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// Which issues to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IssueState {
    /// Open issues only.
    #[default]
    Open,
    /// Open and closed ones (closed ones are delivered as completed).
    All,
}

impl IssueState {
    /// GitHub's `state` parameter.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueState::Open => "open",
            IssueState::All => "all",
        }
    }
}

/// One source of kind GitHub Issues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitHubIssuesConfig {
    /// `owner/name`.
    pub repo: String,
    /// Only issues that carry every one of these labels (none: all issues).
    pub labels: Vec<String>,
    pub state: IssueState,
}

/// Fetches the issues a [`GitHubIssuesConfig`] names.
#[derive(Debug)]
pub struct GitHubIssuesSource {
    client: Arc<GitHubClient>,
    cfg: GitHubIssuesConfig,
}

/// The repository, checked: its parts go into the URL path and into gids.
struct Repo<'a> {
    owner: &'a str,
    name: &'a str,
}

impl GitHubIssuesSource {
    /// A source reading through `client` (one client may serve the forge and every source: its rate
    /// limits are shared, as GitHub counts them).
    pub fn new(client: Arc<GitHubClient>, cfg: GitHubIssuesConfig) -> Self {
        GitHubIssuesSource { client, cfg }
    }

    pub fn config(&self) -> &GitHubIssuesConfig {
        &self.cfg
    }

    /// Every issue (not pull request) updated since `modified_since` (all of them when `None`), each
    /// once, oldest change first. A bad repo or label in the config, or a failed request (401, 404,
    /// rate limit, 5xx), fails the fetch; an issue that cannot be read is refused and the rest kept.
    pub async fn fetch(&self, modified_since: Option<DateTime<Utc>>) -> Result<Fetched, SourceError> {
        let repo = check_repo(&self.cfg.repo)?;
        let labels = label_parameter(&self.cfg.labels)?;
        let mut fetched = Fetched { cursor: modified_since, ..Fetched::default() };
        // Issue number → its index in `fetched.tasks`: an issue listed twice is delivered once.
        let mut delivered: HashMap<u64, usize> = HashMap::new();
        let mut since = modified_since;
        let mut page = 1;
        for request in 1..=MAX_REQUESTS {
            let path = self.path(&repo, labels.as_deref(), since, page);
            let answer = self
                .client
                .rest(Method::GET, &path, None)
                .await
                .map_err(|error| SourceError::GitHub { repo: self.cfg.repo.clone(), error })?;
            let Value::Array(items) = answer else {
                return Err(SourceError::GitHubMalformed {
                    repo: self.cfg.repo.clone(),
                    reason: format!("the issue listing is {}, not an array", kind(&answer)),
                });
            };
            let count = items.len();
            let mut last = None;
            for (index, item) in items.into_iter().enumerate() {
                last = updated_at(&item).or(last);
                if item.get("pull_request").is_some() {
                    continue;
                }
                match issue_task(&repo, item) {
                    Ok((number, task)) => deliver(&mut fetched, &mut delivered, number, task),
                    Err(why) => {
                        let place = format!("{} issues request {request} item {}", self.cfg.repo, index + 1);
                        fetched.refused.push((place, why));
                    }
                }
            }
            if count < PER_PAGE {
                return Ok(fetched);
            }
            (since, page) = after_full_page(last, since, page);
        }
        fetched.refused.push((
            format!("{} issues", self.cfg.repo),
            format!(
                "stopped after {MAX_REQUESTS} pages of {PER_PAGE}; the later issues come at the next fetch"
            ),
        ));
        Ok(fetched)
    }

    /// The listing's path and query, labels already encoded.
    fn path(&self, repo: &Repo, labels: Option<&str>, since: Option<DateTime<Utc>>, page: usize) -> String {
        let mut path =
            format!("/repos/{}/{}/issues?state={}", repo.owner, repo.name, self.cfg.state.as_str());
        if let Some(labels) = labels {
            path.push_str("&labels=");
            path.push_str(labels);
        }
        path.push_str(&format!("&sort=updated&direction=asc&per_page={PER_PAGE}&page={page}"));
        if let Some(since) = since {
            path.push_str("&since=");
            path.push_str(&since.to_rfc3339_opts(SecondsFormat::Secs, true));
        }
        path
    }
}

/// The gid of issue `number` of `owner/name` (see the module doc).
pub fn issue_gid(owner: &str, name: &str, number: u64) -> String {
    format!("gh_{owner}.{name}-{number}").to_ascii_lowercase()
}

/// `owner/name` with GitHub's characters: an owner of letters, digits, '-' and '_' (no '.'), a name
/// of letters, digits, '-', '_' and '.', not starting with '.' nor holding "..", short enough that any
/// issue's gid fits a [`TaskGid`].
fn check_repo(repo: &str) -> Result<Repo<'_>, SourceError> {
    let bad = |why: &str| SourceError::BadRepo { repo: repo.to_string(), why: why.to_string() };
    let Some((owner, name)) = repo.split_once('/') else {
        return Err(bad("it is not \"owner/name\""));
    };
    if owner.is_empty() || !owner.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')) {
        return Err(bad("the owner may hold only letters, digits, '-' and '_'"));
    }
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(bad("the name may hold only letters, digits, '-', '_' and '.'"));
    }
    if name.starts_with('.') || name.contains("..") {
        return Err(bad(
            "a name starting with '.' or holding \"..\" would give task ids no branch name may hold",
        ));
    }
    // The longest number GitHub could reach in practice (u32::MAX) must still fit.
    if TaskGid::parse(&issue_gid(owner, name, u64::from(u32::MAX))).is_err() {
        return Err(bad("it is too long for a task id (at most 128 characters with its issue number)"));
    }
    Ok(Repo { owner, name })
}

/// The `labels` parameter: each name percent-encoded, joined with ','. GitHub splits the parameter
/// on commas, so a label holding one cannot be asked for.
fn label_parameter(labels: &[String]) -> Result<Option<String>, SourceError> {
    let mut encoded = Vec::with_capacity(labels.len());
    for label in labels {
        let why = if label.trim().is_empty() {
            "it is empty"
        } else if label.contains(',') {
            "it holds a ',', and GitHub's label filter splits on commas"
        } else {
            encoded.push(utf8_percent_encode(label, LABEL).to_string());
            continue;
        };
        return Err(SourceError::BadLabel { label: label.clone(), why: why.into() });
    }
    Ok((!encoded.is_empty()).then(|| encoded.join(",")))
}

/// An item's `updated_at`, when readable.
fn updated_at(item: &Value) -> Option<DateTime<Utc>> {
    let text = item.get("updated_at")?.as_str()?;
    DateTime::parse_from_rfc3339(text).ok().map(|at| at.with_timezone(&Utc))
}

/// An issue as a task, with its number; refused, with the reason: not an object, no number, a field
/// of the wrong type, an `updated_at` that is not RFC 3339.
fn issue_task(repo: &Repo, mut raw: Value) -> Result<(u64, SourceTask), String> {
    let Some(object) = raw.as_object_mut() else {
        return Err(format!("not a JSON object but {}", kind(&raw)));
    };
    let number = match object.get("number") {
        Some(Value::Number(number)) => {
            number.as_u64().ok_or_else(|| format!("its number {number} is not a positive integer"))?
        }
        Some(other) => return Err(format!("its number is {}, not an integer", kind(other))),
        None => return Err("it has no number".into()),
    };
    let text = |field: &str| match raw.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!("issue #{number}: its {field} is {}, not a string", kind(other))),
    };
    let name = text("title")?.unwrap_or_default();
    let notes = text("body")?.unwrap_or_default();
    let completed = text("state")?.map(|state| state == "closed");
    let url = text("html_url")?;
    let modified_at = match text("updated_at")? {
        Some(at) => {
            Some(DateTime::parse_from_rfc3339(&at).map(|at| at.with_timezone(&Utc)).map_err(|_| {
                format!("issue #{number}: its updated_at {at:?} is not an RFC 3339 timestamp")
            })?)
        }
        None => None,
    };
    let assignee = match raw.get("assignee") {
        None | Some(Value::Null) => None,
        Some(Value::Object(person)) => match person.get("login") {
            Some(Value::String(login)) if !login.is_empty() => Some(login.clone()),
            _ => return Err(format!("issue #{number}: its assignee has no login")),
        },
        Some(other) => {
            return Err(format!("issue #{number}: its assignee is {}, not an object", kind(other)));
        }
    };
    let gid = issue_gid(repo.owner, repo.name, number);
    // check_repo made sure every number fits; checked again rather than trusted.
    TaskGid::parse(&gid).map_err(|e| format!("issue #{number}: {e}"))?;
    let task = SourceTask { gid, name, notes, completed, assignee, section: None, url, modified_at, raw };
    Ok((number, task))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn repo() -> Repo<'static> {
        Repo { owner: "Octo", name: "App.rs" }
    }

    #[test]
    fn gids_name_the_repository_and_are_task_gids() {
        let gid = issue_gid("Octo-Org", "my_app.rs", 42);
        assert_eq!(gid, "gh_octo-org.my_app.rs-42");
        assert!(TaskGid::parse(&gid).is_ok());
        assert_ne!(issue_gid("a", "b-1", 2), issue_gid("a", "b", 12));
    }

    #[test]
    fn repos_that_cannot_make_urls_or_gids_are_refused() {
        for bad in ["octo", "octo/", "/app", "oc.to/app", "octo/a/b", "octo/a b", "octo/.github", "octo/a..b"]
        {
            assert!(matches!(check_repo(bad), Err(SourceError::BadRepo { .. })), "{bad}");
        }
        let long = format!("{}/{}", "o".repeat(39), "a".repeat(100));
        assert!(matches!(check_repo(&long), Err(SourceError::BadRepo { .. })));
        assert!(check_repo("octo_emu/app.rs-2").is_ok());
    }

    #[test]
    fn labels_are_encoded_one_by_one_and_commas_refused() {
        let labels = vec!["good first issue".to_string(), "a&b+c#d".into(), "é".into(), "x-y_z.~".into()];
        assert_eq!(
            label_parameter(&labels).unwrap().as_deref(),
            Some("good%20first%20issue,a%26b%2Bc%23d,%C3%A9,x-y_z.~")
        );
        assert_eq!(label_parameter(&[]).unwrap(), None);
        for bad in ["a,b", " "] {
            let error = label_parameter(&[bad.to_string()]).unwrap_err();
            assert!(matches!(error, SourceError::BadLabel { .. }), "{error:?}");
        }
    }

    #[test]
    fn an_issue_is_mapped_and_a_null_body_is_empty() {
        let (number, task) = issue_task(
            &repo(),
            json!({
                "number": 7, "title": "Crash", "body": null, "state": "closed",
                "assignee": {"login": "alex"}, "html_url": "https://github.com/Octo/App.rs/issues/7",
                "updated_at": "2026-11-30T10:00:00Z", "labels": [{"name": "bug"}]
            }),
        )
        .unwrap();
        assert_eq!(number, 7);
        assert_eq!(task.gid, "gh_octo.app.rs-7");
        assert_eq!(task.name, "Crash");
        assert_eq!(task.notes, "");
        assert_eq!(task.completed, Some(true));
        assert_eq!(task.assignee.as_deref(), Some("alex"));
        assert_eq!(task.section, None);
        assert_eq!(task.url.as_deref(), Some("https://github.com/Octo/App.rs/issues/7"));
        assert_eq!(task.modified_at.unwrap().to_rfc3339(), "2026-11-30T10:00:00+00:00");
        assert_eq!(task.raw["labels"][0]["name"], "bug");
    }

    #[test]
    fn unreadable_issues_say_why() {
        let cases = [
            (json!("x"), "not a JSON object but a string"),
            (json!({"title": "t"}), "it has no number"),
            (json!({"number": "7"}), "its number is a string, not an integer"),
            (json!({"number": -1}), "its number -1 is not a positive integer"),
            (json!({"number": 1, "title": 5}), "issue #1: its title is a number, not a string"),
            (json!({"number": 1, "assignee": "alex"}), "issue #1: its assignee is a string, not an object"),
            (
                json!({"number": 1, "updated_at": "today"}),
                "issue #1: its updated_at \"today\" is not an RFC 3339 timestamp",
            ),
        ];
        for (raw, why) in cases {
            assert_eq!(issue_task(&repo(), raw.clone()).unwrap_err(), why, "{raw}");
        }
    }

    #[test]
    fn a_newer_copy_of_an_issue_replaces_the_older_and_an_older_one_is_dropped() {
        let task = |title: &str, at: &str| {
            let raw = json!({"number": 1, "title": title, "updated_at": at});
            issue_task(&repo(), raw).unwrap().1
        };
        let mut fetched = Fetched::default();
        let mut delivered = HashMap::new();
        deliver(&mut fetched, &mut delivered, 1, task("old", "2026-01-01T00:00:00Z"));
        deliver(&mut fetched, &mut delivered, 1, task("new", "2026-02-01T00:00:00Z"));
        deliver(&mut fetched, &mut delivered, 1, task("older", "2025-01-01T00:00:00Z"));
        assert_eq!(fetched.tasks.len(), 1);
        assert_eq!(fetched.tasks[0].name, "new");
        assert_eq!(fetched.cursor, fetched.tasks[0].modified_at);
    }
}
