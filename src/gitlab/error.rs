//! What a GitLab call can fail with. No variant carries the token: GitLab's own messages are cut of
//! it before they are kept.

use chrono::{DateTime, Utc};

/// Why a GitLab request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitLabError {
    #[error(
        "no GitLab token: none of {variables} is set; create a personal, group or project access token \
         with the `api` scope (GitLab → Preferences → Access tokens) and export it as {first}",
        variables = variables.join(", "),
        first = variables.first().map_or("GITLAB_TOKEN", String::as_str)
    )]
    MissingToken { variables: Vec<String> },
    #[error("the GitLab token in {variable} has characters an HTTP header cannot carry")]
    BadToken { variable: String },
    #[error("[gitlab] url {url:?} is not an http(s) URL such as https://gitlab.com")]
    BadUrl { url: String },
    #[error(
        "GitLab refused the token in {variable} (401 on {path}): it is wrong, expired or revoked; create \
         one with the `api` scope and export it as {variable}"
    )]
    Unauthorized { variable: String, path: String },
    #[error("GitLab forbade {path} to the token in {variable} (403): {message}")]
    Forbidden { variable: String, path: String, message: String },
    #[error("GitLab found nothing at {path}: {message}")]
    NotFound { path: String, message: String },
    #[error("GitLab answered {status} on {path}: {message}")]
    Status { status: u16, path: String, message: String },
    #[error("GitLab kept answering {status} on {path} after {retries} retries")]
    GaveUp { path: String, status: u16, retries: u32 },
    #[error("could not reach GitLab for {path}: {reason}")]
    Transport { path: String, reason: String },
    /// A write sent whose answer never came back whole (a 5xx, a timeout, a connection gone): GitLab
    /// may have carried it out. Never retried blindly: the caller looks for it first.
    #[error("GitLab's answer to {method} {path} was lost ({reason}): it may have been carried out")]
    AnswerLost { method: String, path: String, reason: String },
    #[error("GitLab's answer on {path} is not what its API documents: {reason}")]
    Malformed { path: String, reason: String },
    #[error("GitLab's GraphQL answered with errors (the partial data is not used): {0}")]
    GraphQl(String),
    /// GitLab weighed the query before running it and refused it as too complex for the token's user.
    #[error("GitLab refused a GraphQL query as too complex: {0}")]
    TooComplex(String),
    #[error("GitLab rate limit: no request to GitLab until {until}")]
    RateLimited { until: DateTime<Utc> },
}

impl GitLabError {
    pub fn is_rate_limit(&self) -> bool {
        matches!(self, GitLabError::RateLimited { .. })
    }

    /// The token is missing, refused or lacks the right: nothing else will go through either.
    pub fn is_auth(&self) -> bool {
        matches!(
            self,
            GitLabError::MissingToken { .. }
                | GitLabError::BadToken { .. }
                | GitLabError::Unauthorized { .. }
                | GitLabError::Forbidden { .. }
        )
    }

    /// A write whose answer was lost: it may have landed.
    pub fn is_answer_lost(&self) -> bool {
        matches!(self, GitLabError::AnswerLost { .. })
    }

    /// Cuts `secret` out of every text GitLab (or the network) wrote into this error.
    pub(super) fn without(self, secret: &str) -> GitLabError {
        if secret.is_empty() {
            return self;
        }
        let cut = |text: String| text.replace(secret, "<redacted>");
        match self {
            GitLabError::Forbidden { variable, path, message } => {
                GitLabError::Forbidden { variable, path, message: cut(message) }
            }
            GitLabError::NotFound { path, message } => GitLabError::NotFound { path, message: cut(message) },
            GitLabError::Status { status, path, message } => {
                GitLabError::Status { status, path, message: cut(message) }
            }
            GitLabError::Transport { path, reason } => GitLabError::Transport { path, reason: cut(reason) },
            GitLabError::AnswerLost { method, path, reason } => {
                GitLabError::AnswerLost { method, path, reason: cut(reason) }
            }
            GitLabError::Malformed { path, reason } => GitLabError::Malformed { path, reason: cut(reason) },
            GitLabError::GraphQl(message) => GitLabError::GraphQl(cut(message)),
            GitLabError::TooComplex(message) => GitLabError::TooComplex(cut(message)),
            other => other,
        }
    }
}

/// GitLab's error text: `message` (a string, or an object of field → messages) or `error`; else the
/// start of a body that is not GitLab's JSON (a proxy's page).
pub(super) fn gitlab_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        match value.get("message").or_else(|| value.get("error")) {
            Some(serde_json::Value::String(s)) => return s.clone(),
            Some(other) => return other.to_string(),
            None => {}
        }
    }
    let text = body.trim();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None if text.is_empty() => "(no message)".into(),
        None => text.to_string(),
    }
}
