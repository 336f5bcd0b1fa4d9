//! What can go wrong talking to Linear, read from its answers: Linear reports most errors in the
//! GraphQL body (`errors[].extensions.code`), often with HTTP 400 and sometimes with 200, rather than
//! in the status.

use serde_json::Value;

/// Why a Linear request failed. None of these carries the API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinearError {
    #[error(
        "the Linear API key variable {variable} is not set: create a personal API key in Linear \
         (Settings → Account → Security & access → Personal API keys) and export it as {variable}"
    )]
    MissingKey { variable: String },
    #[error("the Linear API key in {variable} has characters an HTTP header cannot carry")]
    BadKey { variable: String },
    #[error(
        "Linear refused the API key in {variable} ({message}): it is wrong, expired or revoked; create \
         a new personal API key in Linear (Settings → Account → Security & access) and export it as {variable}"
    )]
    Unauthenticated { variable: String, message: String },
    #[error("Linear forbade this to the API key in {variable}: {message}")]
    Forbidden { variable: String, message: String },
    #[error("Linear found no such {what}: {message}")]
    NotFound { what: String, message: String },
    #[error("Linear kept answering RATELIMITED after {retries} retries")]
    RateLimited { retries: u32 },
    #[error("Linear answered {status}: {message}")]
    Status { status: u16, message: String },
    #[error("could not reach Linear: {reason}")]
    Transport { reason: String, timed_out: bool },
    #[error("Linear's answer is not what its schema says: {reason}")]
    Malformed { reason: String },
    #[error("Linear answered with an error ({code}): {message}")]
    GraphQl { code: String, message: String },
    #[error("the Linear API URL {url:?} is not a valid URL")]
    BadApiUrl { url: String },
}

impl LinearError {
    /// A fault that may pass by itself (the network, Linear's side, a rate limit): worth trying later.
    pub fn is_passing(&self) -> bool {
        match self {
            LinearError::RateLimited { .. } | LinearError::Transport { .. } => true,
            LinearError::Status { status, .. } => *status >= 500 || *status == 429,
            LinearError::GraphQl { code, .. } => {
                matches!(code.as_str(), "INTERNAL_SERVER_ERROR" | "UNKNOWN" | "SERVICE_UNAVAILABLE")
            }
            _ => false,
        }
    }
}

/// One entry of `errors`: its code (`extensions.code`, else `UNKNOWN`) and its message (the
/// user-presentable one when there is one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphQlError {
    pub code: String,
    pub message: String,
}

/// The entries of a GraphQL answer's `errors`, if it has any.
pub fn errors_of(body: &Value) -> Vec<GraphQlError> {
    let Some(errors) = body.get("errors").and_then(Value::as_array) else { return Vec::new() };
    errors
        .iter()
        .map(|e| {
            let text = |pointer: &str| e.pointer(pointer).and_then(Value::as_str).map(str::to_string);
            GraphQlError {
                code: text("/extensions/code").unwrap_or_else(|| "UNKNOWN".into()),
                message: text("/extensions/userPresentableMessage")
                    .or_else(|| text("/message"))
                    .unwrap_or_else(|| "no message".into()),
            }
        })
        .collect()
}

/// The error that `errors` (non-empty) means, for a request with the key in `variable`.
pub fn classify(errors: &[GraphQlError], variable: &str) -> LinearError {
    let first = &errors[0];
    let message = errors.iter().map(|e| e.message.as_str()).collect::<Vec<_>>().join("; ");
    let variable = variable.to_string();
    if errors.iter().any(|e| e.code == "RATELIMITED") {
        return LinearError::RateLimited { retries: 0 };
    }
    match first.code.as_str() {
        "AUTHENTICATION_ERROR" => LinearError::Unauthenticated { variable, message },
        "FORBIDDEN" => LinearError::Forbidden { variable, message },
        _ => match not_found(&message) {
            Some(what) => LinearError::NotFound { what, message },
            None => LinearError::GraphQl { code: first.code.clone(), message },
        },
    }
}

/// What an "Entity not found: Issue" message says was not found (`Issue`), if it says so.
fn not_found(message: &str) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    let at = lower.find("entity not found")?;
    let rest = message[at + "entity not found".len()..].trim_start_matches([':', ' ']);
    let what: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
    Some(if what.is_empty() { "entity".into() } else { what })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codes_name_the_error() {
        let body = |code: &str, message: &str| {
            let error = json!({"message": message, "extensions": {"code": code}});
            json!({"errors": [error], "data": null})
        };
        let of = |b: Value| classify(&errors_of(&b), "LINEAR_API_KEY");
        assert_eq!(of(body("RATELIMITED", "Rate limit exceeded")), LinearError::RateLimited { retries: 0 });
        assert!(matches!(of(body("AUTHENTICATION_ERROR", "x")), LinearError::Unauthenticated { .. }));
        assert!(matches!(of(body("FORBIDDEN", "x")), LinearError::Forbidden { .. }));
        assert_eq!(
            of(body("INPUT_ERROR", "Entity not found: Issue - Could not find referenced Issue.")),
            LinearError::NotFound {
                what: "Issue".into(),
                message: "Entity not found: Issue - Could not find referenced Issue.".into()
            }
        );
        assert!(matches!(of(body("INVALID_INPUT", "bad")), LinearError::GraphQl { .. }));
        let unknown = json!({"errors": [{"message": "boom"}]});
        assert_eq!(errors_of(&unknown)[0].code, "UNKNOWN");
    }
}
