//! The Jira checks of `executor doctor`: for each Jira source, whether Jira takes its credentials
//! (`GET /rest/api/3/myself`, `/rest/api/2/myself` on Data Center) and its query (a search asking for one
//! issue), each read only.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::{Check, Outcome, pass, problem};
use crate::config::{Config, SourceConfig};
use crate::jira::{JiraAuth, JiraClient, JiraError, JiraSite};

/// How long each question may take.
const TIMEOUT: Duration = Duration::from_secs(20);

pub(super) async fn jira_checks(config: &Config) -> Vec<Check> {
    let mut out = Vec::new();
    for s in config.sources.iter().filter(|s| s.kind == "jira") {
        let label = format!("jira {}", s.name);
        out.push(match ask(s).await {
            Ok(detail) => pass(&label, detail),
            Err(e) if e.is_passing() => problem(
                Outcome::Warn,
                &label,
                format!("could not ask Jira: {e}"),
                "run `executor doctor` again; check base_url if it persists",
            ),
            Err(e) => problem(Outcome::Fail, &label, e.to_string(), fix(s, &e)),
        });
    }
    out
}

/// Who the credentials are, then whether the query is Jira's.
async fn ask(s: &SourceConfig) -> Result<String, JiraError> {
    let site = JiraSite {
        base_url: s.base_url.clone(),
        auth: JiraAuth::parse(&s.auth).unwrap_or_default(),
        email: s.email.clone(),
        token_env: s.token_env.clone(),
    };
    let client = JiraClient::new(site, std::env::var(&s.token_env).ok(), TIMEOUT)?;
    let me = client.send(Method::GET, &client.api("myself"), &[], None, 0).await?;
    let who = ["displayName", "emailAddress", "name"]
        .iter()
        .find_map(|k| me.get(*k).and_then(Value::as_str).filter(|v| !v.is_empty()))
        .unwrap_or("the token's user")
        .to_string();
    let cloud = client.site().auth.is_cloud();
    let search = client.api(if cloud { "search/jql" } else { "search" });
    let body = json!({"jql": s.jql, "fields": ["updated"], "maxResults": 1});
    client.send(Method::POST, &search, &[], Some(&body), 0).await?;
    Ok(format!("signed in to {} as {who}; the jql is valid", client.site().base_url))
}

fn fix(s: &SourceConfig, e: &JiraError) -> String {
    match e {
        JiraError::BadRequest { .. } => {
            format!("correct `jql` of source {:?} (try it in Jira's issue search)", s.name)
        }
        JiraError::NotFound { .. } | JiraError::BadBaseUrl { .. } => {
            format!(
                "check base_url of source {:?}: the site's address, e.g. https://yourco.atlassian.net",
                s.name
            )
        }
        JiraError::Forbidden { .. } => {
            "use a token of an account that may browse the source's projects".into()
        }
        // The error's own text names the variable and how to make a token.
        _ => format!("see above; then `executor doctor` again (source {:?})", s.name),
    }
}
