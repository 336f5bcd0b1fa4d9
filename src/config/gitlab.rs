//! `[gitlab]`: the GitLab API (gitlab.com or self-managed) for repositories with `forge = "gitlab"`.
//! The token is read from the environment, never from this file.

use serde::Deserialize;

use super::Duration;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GitLab {
    /// The instance's address: `https://gitlab.com`, or a self-managed one's. REST is under `/api/v4`,
    /// GraphQL at `/api/graphql`.
    pub url: String,
    /// Environment variables that may hold a token (personal, group or project access token with the
    /// `api` scope); the first one set wins.
    pub token_env: Vec<String>,
    /// Merge requests per GraphQL request (at most 100); a batch GitLab refuses as too complex is asked
    /// again in halves, and `doctor` weighs this size against the instance's limit.
    pub batch_size: u32,
    /// GitLab creates a pipeline a few seconds after a push: a head with no pipeline is given this long
    /// before CI is triggered.
    pub check_grace: Duration,
    /// How long one HTTP request may take.
    pub request_timeout: Duration,
    /// The environment variable holding the secret token GitLab sends with webhook deliveries
    /// (`X-Gitlab-Token`, on `POST /webhooks/gitlab`). Unset or empty: deliveries are refused.
    pub webhook_secret_env: String,
}

impl Default for GitLab {
    fn default() -> Self {
        GitLab {
            url: "https://gitlab.com".into(),
            token_env: vec!["GITLAB_TOKEN".into()],
            batch_size: 25,
            check_grace: Duration::secs(60),
            request_timeout: Duration::secs(30),
            webhook_secret_env: "EXECUTOR_GITLAB_WEBHOOK_SECRET".into(),
        }
    }
}

impl GitLab {
    /// The REST base, `URL/api/v4`.
    pub fn api_url(&self) -> String {
        format!("{}/api/v4", self.url.trim_end_matches('/'))
    }

    /// The GraphQL endpoint, `URL/api/graphql`.
    pub fn graphql_url(&self) -> String {
        format!("{}/api/graphql", self.url.trim_end_matches('/'))
    }
}

/// Whether `path` is a GitLab project's full path (`group/project`, `group/subgroup/project`): segments
/// of letters, digits, `-`, `_` and `.`, none of them `.` or `..`, and no `.git`/`.atom` ending.
pub fn valid_project_path(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').collect();
    segments.len() >= 2
        && segments.iter().all(|s| {
            !s.is_empty()
                && *s != "."
                && *s != ".."
                && !s.starts_with('-')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
        && !path.ends_with(".git")
        && !path.ends_with(".atom")
}

#[cfg(test)]
mod tests {
    #[test]
    fn project_paths() {
        use super::valid_project_path as ok;
        assert!(ok("group/project"));
        assert!(ok("group/sub.group/my-project_2"));
        assert!(!ok("project"));
        assert!(!ok("group//project"));
        assert!(!ok("group/../project"));
        assert!(!ok("group/project.git"));
        assert!(!ok("group/pro ject"));
        assert!(!ok("group/-project"));
    }
}
