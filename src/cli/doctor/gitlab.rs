//! The GitLab write check of `executor doctor`, when a repository has `forge = "gitlab"` or a GitLab
//! issues source writes back: whether GitLab takes the token with the `api` scope both write with (`GET /api/v4/personal_access_tokens/
//! self`, which a personal, group or project access token may ask of itself), read only. Whether a token
//! is set at all is the `gitlab token` check's.

use reqwest::Method;
use serde_json::Value;

use super::{Check, Outcome, pass, problem};
use crate::config::Config;
use crate::gitlab::{GitLabClient, GitLabError};

const NAME: &str = "gitlab api scope";

pub(super) async fn gitlab_check(config: &Config) -> Option<Check> {
    let writes_notes =
        config.sources.iter().any(|s| s.kind == "gitlab_issues" && !s.writeback_events().is_empty());
    if !config.repos.values().any(|r| r.forge == "gitlab") && !writes_notes {
        return None;
    }
    let make = "create an access token with the `api` scope (GitLab → Preferences → Access tokens, or the \
                project's Settings → Access tokens)";
    let client = match GitLabClient::from_env(&config.gitlab) {
        Ok(client) => client,
        Err(e) => {
            return Some(problem(
                Outcome::Fail,
                NAME,
                e.to_string(),
                "set [gitlab] url to the instance's address",
            ));
        }
    };
    let variable = client.token_variable().to_string();
    Some(match client.rest(Method::GET, "/personal_access_tokens/self", None).await {
        Ok(token) => {
            let scopes: Vec<&str> = token
                .get("scopes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if scopes.contains(&"api") {
                pass(NAME, format!("{variable} is accepted by {} with the `api` scope", config.gitlab.url))
            } else {
                problem(
                    Outcome::Fail,
                    NAME,
                    format!(
                        "the token in {variable} has the scopes {scopes:?}, not `api`: executor cannot write merge requests or notes"
                    ),
                    format!("{make} and export it as {variable}"),
                )
            }
        }
        // The `gitlab token` check says so, with the fix.
        Err(GitLabError::MissingToken { .. }) => return None,
        Err(
            e @ (GitLabError::Unauthorized { .. }
            | GitLabError::Forbidden { .. }
            | GitLabError::BadToken { .. }),
        ) => problem(Outcome::Fail, NAME, e.to_string(), format!("{make} and export it as {variable}")),
        Err(e) => problem(
            Outcome::Warn,
            NAME,
            format!("could not ask GitLab: {e}"),
            "check [gitlab] url; run `executor doctor` again if it persists",
        ),
    })
}
