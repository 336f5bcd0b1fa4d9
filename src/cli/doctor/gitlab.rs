//! The GitLab checks of `executor doctor`. When a repository has `forge = "gitlab"` or a GitLab issues
//! source writes back: whether GitLab takes the token with the `api` scope both write with (`GET
//! /api/v4/personal_access_tokens/self`, which a personal, group or project access token may ask of
//! itself), read only. When a repository has `forge = "gitlab"`: how GitLab weighs the merge-request
//! batch query at `[gitlab] batch_size` against its complexity limit (GitLab weighs a query before it
//! runs it, so iids that name nothing weigh as real ones). Whether a token is set at all is the `gitlab
//! token` check's.

use reqwest::Method;
use serde_json::{Value, json};

use super::{Check, Outcome, pass, problem};
use crate::config::Config;
use crate::gitlab::{GitLabClient, GitLabError};

const NAME: &str = "gitlab api scope";
const COMPLEXITY: &str = "gitlab query complexity";

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

pub(super) async fn complexity_check(config: &Config) -> Option<Check> {
    let project = config.repos.values().find(|r| r.forge == "gitlab")?.gitlab.clone();
    // A client that cannot be made, or a token not set or refused: the other checks say so.
    let client = GitLabClient::from_env(&config.gitlab).ok()?;
    let size = config.gitlab.batch_size.clamp(1, 100);
    let weigh = |count: u32| {
        let vars = json!({ "path": project, "iids": vec!["0"; count as usize], "count": count });
        client.graphql(crate::forge::gitlab::MERGE_REQUESTS, vars)
    };
    let lower = format!(
        "executor asks fewer at a time when GitLab refuses a batch; set [gitlab] batch_size below {size} to start there"
    );
    Some(match weigh(size).await {
        Ok(data) => {
            let read = |key: &str| data.pointer(&format!("/queryComplexity/{key}")).and_then(Value::as_u64);
            match (read("score"), read("limit")) {
                (Some(score), Some(limit)) if u128::from(score) * 5 > u128::from(limit) * 4 => problem(
                    Outcome::Warn,
                    COMPLEXITY,
                    format!("{size} merge requests in one query weigh {score} of GitLab's limit of {limit}"),
                    lower,
                ),
                (Some(score), Some(limit)) => pass(
                    COMPLEXITY,
                    format!("{size} merge requests in one query weigh {score} of GitLab's limit of {limit}"),
                ),
                _ => pass(COMPLEXITY, format!("GitLab takes {size} merge requests in one query")),
            }
        }
        Err(GitLabError::TooComplex(why)) => match weigh(1).await {
            Err(GitLabError::TooComplex(_)) => problem(
                Outcome::Fail,
                COMPLEXITY,
                format!(
                    "GitLab refuses executor's merge-request query as too complex even for one merge request: {why}"
                ),
                "report it to executor's maintainers with this instance's version (GitLab → Help)",
            ),
            _ => problem(
                Outcome::Warn,
                COMPLEXITY,
                format!("GitLab refuses {size} merge requests in one query as too complex: {why}"),
                lower,
            ),
        },
        Err(_) => return None,
    })
}
