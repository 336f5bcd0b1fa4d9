//! What a GitHub call can fail with, shared by the client and the App authentication beneath it.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::rate::Refusal;

/// What went wrong with a GitHub call. The messages say what happened and what to do, and never hold
/// the token.
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    #[error("GitHub authentication: {0}")]
    Auth(String),
    #[error("not found on GitHub: {0}")]
    NotFound(String),
    #[error("GitHub answered HTTP {status}: {message}")]
    Http { status: u16, message: String },
    #[error("cannot reach GitHub: {0}")]
    Transport(String),
    #[error("GitHub did not answer within [github] request_timeout")]
    Timeout,
    #[error("unexpected answer from GitHub: {0}")]
    Malformed(String),
    #[error("GitHub answered with errors (the partial data is not used): {0}")]
    Partial(String),
    #[error("GitHub rate limit: {why}; no request to GitHub until {until}")]
    RateLimited { until: DateTime<Utc>, why: String },
}

impl GitHubError {
    pub fn is_rate_limit(&self) -> bool {
        matches!(self, GitHubError::RateLimited { .. })
    }

    /// reqwest's errors carry the URL (never a header, so never the token) and the cause underneath.
    pub(crate) fn from_reqwest(e: reqwest::Error) -> GitHubError {
        if e.is_timeout() {
            return GitHubError::Timeout;
        }
        GitHubError::Transport(with_causes(&e))
    }
}

/// An error's message followed by the causes underneath it ("error sending request: connection
/// refused"): reqwest's own message alone rarely says what happened.
pub fn with_causes(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

impl From<Refusal> for GitHubError {
    fn from(r: Refusal) -> GitHubError {
        GitHubError::RateLimited { until: r.until, why: r.why }
    }
}

/// GitHub's `message` field of an error answer, or the start of a body that is not GitHub's JSON.
pub(crate) fn github_message(body: &str) -> String {
    if let Some(message) = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
    {
        return message;
    }
    let text = body.trim();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None if text.is_empty() => "(no message)".into(),
        None => text.to_string(),
    }
}
