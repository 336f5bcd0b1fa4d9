//! What can go wrong talking to Jira, read from its answers: the status, and Jira's error body
//! (`{"errorMessages": ["…"], "errors": {"field": "…"}}`), which names a bad JQL's fault exactly.

use serde_json::Value;

/// Why a Jira request failed. None of these carries the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JiraError {
    #[error(
        "the Jira token variable {variable} is not set: {how} and export it as {variable}",
        how = how_to_get(*cloud)
    )]
    MissingToken { variable: String, cloud: bool },
    #[error(
        "a Jira Cloud source needs `email` (the Atlassian account the API token in {variable} belongs \
         to), or `auth = \"bearer\"` for a Data Center personal access token"
    )]
    MissingEmail { variable: String },
    #[error("the Jira token in {variable} has characters an HTTP header cannot carry")]
    BadToken { variable: String },
    #[error(
        "Jira refused the credentials (401 on {path}): the token in {variable} is wrong, expired or \
         revoked{email}; {how} and export it as {variable}",
        email = if *cloud { ", or `email` is not the account it belongs to" } else { "" },
        how = how_to_get(*cloud)
    )]
    Unauthorized { variable: String, path: String, cloud: bool },
    #[error("Jira forbade {path} to the token in {variable}: {message}")]
    Forbidden { variable: String, path: String, message: String },
    #[error("Jira found nothing at {path}: {message}")]
    NotFound { path: String, message: String },
    /// Jira refused the request itself; on a search, the JQL (its message says what is wrong).
    #[error("Jira refused {path} (400): {message}")]
    BadRequest { path: String, message: String },
    #[error("Jira kept answering {status} on {path} after {retries} retries")]
    GaveUp { path: String, status: u16, retries: u32 },
    #[error("Jira answered {status} on {path}: {message}")]
    Status { status: u16, path: String, message: String },
    #[error("could not reach Jira for {path}: {reason}")]
    Transport { path: String, reason: String },
    #[error("Jira's answer on {path} is not what its REST API documents: {reason}")]
    Malformed { path: String, reason: String },
    #[error("the Jira base_url {url:?} is not an http(s) URL such as https://yourco.atlassian.net")]
    BadBaseUrl { url: String },
}

/// Where a token comes from, for the messages.
fn how_to_get(cloud: bool) -> &'static str {
    if cloud {
        "create an API token at https://id.atlassian.com/manage-profile/security/api-tokens (Create API \
         token, as the account named by `email`)"
    } else {
        "create a personal access token in Jira (your avatar → Profile → Personal Access Tokens → Create \
         token)"
    }
}

impl JiraError {
    /// A fault that may pass by itself (the network, Jira's side, a rate limit): worth trying later.
    pub fn is_passing(&self) -> bool {
        match self {
            JiraError::GaveUp { .. } | JiraError::Transport { .. } | JiraError::Malformed { .. } => true,
            JiraError::Status { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}

/// Jira's error text: `errorMessages` and the `errors` object's values, joined; `None` when the body
/// is not Jira's error shape (a proxy's page).
pub fn jira_message(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let mut messages: Vec<String> = value
        .get("errorMessages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    if let Some(errors) = value.get("errors").and_then(Value::as_object) {
        messages.extend(errors.iter().filter_map(|(field, m)| m.as_str().map(|m| format!("{field}: {m}"))));
    }
    if messages.is_empty()
        && let Some(message) = value.get("message").and_then(Value::as_str)
    {
        messages.push(message.to_string());
    }
    (!messages.is_empty()).then(|| messages.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jiras_messages_are_joined() {
        let body = r#"{"errorMessages":["Field 'sprintt' does not exist"],"errors":{"jql":"bad"}}"#;
        assert_eq!(jira_message(body).as_deref(), Some("Field 'sprintt' does not exist; jql: bad"));
        assert_eq!(jira_message(r#"{"message":"Rate limited"}"#).as_deref(), Some("Rate limited"));
        assert_eq!(jira_message("<html>Bad Gateway</html>"), None);
    }

    #[test]
    fn the_fix_names_the_variable_and_where_tokens_are_made() {
        let cloud =
            JiraError::Unauthorized { variable: "JIRA_API_TOKEN".into(), path: "/x".into(), cloud: true };
        let text = cloud.to_string();
        assert!(text.contains("JIRA_API_TOKEN") && text.contains("id.atlassian.com"), "{text}");
        let dc = JiraError::MissingToken { variable: "JIRA_PAT".into(), cloud: false };
        assert!(dc.to_string().contains("Personal Access Tokens"), "{dc}");
    }
}
