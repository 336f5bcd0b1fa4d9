//! GitHub Issues: each message is a comment on the issue (`POST /repos/{owner}/{name}/issues/{n}/comments`,
//! answered `201 {"id": …}`), through the forge's client (one token, one rate limit). The message ends
//! with a hidden `<!-- executor wb-… -->`; a retry reads the issue's comments for it first. Linking the
//! pull request to the issue (`Closes #N`) is the forge's, in the pull request's body.

use std::sync::Arc;

use reqwest::Method;
use serde_json::{Value, json};

use super::message::hidden_marker;
use super::{Posted, TrackerError};
use crate::config::SourceConfig;
use crate::github::{GitHubClient, GitHubError};
use crate::store::Writeback;

/// Pages of comments read at most when looking for an earlier attempt's (100 each).
const MAX_COMMENT_PAGES: usize = 30;

/// Writes comments on the issues of one GitHub Issues source.
pub struct GitHubIssuesTracker {
    client: Arc<GitHubClient>,
    /// `owner/name`, as configured.
    repo: String,
}

/// The issue number of a task gid `gh_{owner}.{name}-{number}` of `repo` (the intake's gids), if it is one.
pub fn issue_number(repo: &str, task_gid: &str) -> Option<u64> {
    let (owner, name) = repo.split_once('/')?;
    let prefix = format!("gh_{owner}.{name}-").to_ascii_lowercase();
    let number = task_gid.strip_prefix(&prefix)?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse().ok()
}

impl GitHubIssuesTracker {
    pub fn new(
        client: Arc<GitHubClient>,
        source: &SourceConfig,
    ) -> Result<GitHubIssuesTracker, TrackerError> {
        let ok = source.github.split_once('/').is_some_and(|(o, n)| {
            let fine = |s: &str, dot: bool| {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (dot && b == b'.'))
            };
            fine(o, false) && fine(n, true) && !n.starts_with('.')
        });
        if !ok {
            return Err(TrackerError::Refused {
                why: format!("source {:?} names no repository as owner/name", source.name),
                fix: "set github = \"owner/name\" on the source".into(),
            });
        }
        Ok(GitHubIssuesTracker { client, repo: source.github.clone() })
    }

    /// Comments `w` on its issue, unless an earlier attempt did.
    pub async fn post(&self, w: &Writeback) -> Result<Posted, TrackerError> {
        let Some(number) = issue_number(&self.repo, &w.task_gid) else {
            return Err(TrackerError::Refused {
                why: format!("task {} is not an issue of {}", w.task_gid, self.repo),
                fix: "only tasks the GitHub Issues intake brought in can be written back".into(),
            });
        };
        let path = format!("/repos/{}/issues/{number}/comments", self.repo);
        if w.attempts > 1
            && let Some(id) = self.find(&path, &w.marker).await?
        {
            return Ok(Posted::Earlier(id));
        }
        let body = json!({"body": format!("{}\n\n{}", w.message, hidden_marker(&w.marker))});
        let answer =
            self.client.rest(Method::POST, &path, Some(&body)).await.map_err(|e| classify(&path, e))?;
        match answer.get("id").and_then(Value::as_u64) {
            Some(id) => Ok(Posted::Now(id.to_string())),
            None => Err(TrackerError::Passing(format!("GitHub's answer on {path} has no comment id"))),
        }
    }

    /// Whether the token reaches the repository's issues, without writing (`GET /repos/{owner}/{name}`).
    /// What a fine-grained token may write cannot be read without writing: that is said, not checked.
    pub async fn probe(&self) -> Result<String, TrackerError> {
        let path = format!("/repos/{}", self.repo);
        let answer = self.client.rest(Method::GET, &path, None).await.map_err(|e| classify(&path, e))?;
        if answer.get("has_issues").and_then(Value::as_bool) == Some(false) {
            return Err(TrackerError::Refused {
                why: format!("{} has issues turned off", self.repo),
                fix: "turn issues on in the repository's settings, or remove the source".into(),
            });
        }
        Ok(format!(
            "the token reaches {}'s issues (commenting needs Issues: read & write on a fine-grained token, \
             which only a write would show)",
            self.repo
        ))
    }

    /// The id of the issue comment that carries `marker`.
    async fn find(&self, path: &str, marker: &str) -> Result<Option<String>, TrackerError> {
        let needle = hidden_marker(marker);
        for page in 1..=MAX_COMMENT_PAGES {
            let listing = format!("{path}?per_page=100&page={page}");
            let answer =
                self.client.rest(Method::GET, &listing, None).await.map_err(|e| classify(path, e))?;
            let comments = answer.as_array().cloned().unwrap_or_default();
            for c in &comments {
                if c.get("body").and_then(Value::as_str).is_some_and(|b| b.contains(&needle))
                    && let Some(id) = c.get("id").and_then(Value::as_u64)
                {
                    return Ok(Some(id.to_string()));
                }
            }
            if comments.len() < 100 {
                return Ok(None);
            }
        }
        Ok(None)
    }
}

/// A refusal for good (the token's rights, the issue) or a passing fault.
fn classify(path: &str, e: GitHubError) -> TrackerError {
    let why = format!("GitHub on {path}: {e}");
    let fix = match &e {
        GitHubError::Auth(_) | GitHubError::Http { status: 401, .. } => {
            "the GitHub token is wrong or expired: see `executor doctor`".to_string()
        }
        GitHubError::Http { status: 403, .. } => {
            "the GitHub token may read but not write this repository's issues: \
             give it Issues read & write, or set writeback = [] on this source"
                .to_string()
        }
        GitHubError::NotFound(_) | GitHubError::Http { status: 404 | 410, .. } => {
            "the issue was deleted or is out of the token's reach; nothing more is sent about it".to_string()
        }
        GitHubError::Http { status: 422, .. } => {
            "GitHub refused the comment (a locked issue?); unlock it, or set writeback = [] on this source"
                .to_string()
        }
        _ => return TrackerError::Passing(why),
    };
    TrackerError::Refused { why, fix }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_numbers_come_only_from_this_repositorys_gids() {
        assert_eq!(issue_number("Octo/App", "gh_octo.app-42"), Some(42));
        assert_eq!(issue_number("octo/app", "gh_octo.other-42"), None);
        assert_eq!(issue_number("octo/app", "gh_octo.app-"), None);
        assert_eq!(issue_number("octo/app", "gh_octo.app-4x"), None);
        assert_eq!(issue_number("octo/app", "1207"), None);
    }
}
